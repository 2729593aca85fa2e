'use strict'
// Loads rumongo's native addon (copied to dist/native.cjs by scripts/build.mjs, in place of the
// loader napi-rs would generate, whose error on a missing binary blames npm's optional
// dependencies even where rumongo has no binary at all). It looks for, in order:
//   1. dist/rumongo.<triple>.node, the addon `npm run build` just built from source;
//   2. the `rumongo-<triple>` package, the prebuilt addon npm installs as an optional dependency
//      of rumongo (only the one whose os/cpu/libc match this machine).
// Each failure says which of the three cases it is: no binary for this platform, the platform's
// package not installed, or a binary that does not load here.
const { existsSync } = require('node:fs')
const { join } = require('node:path')
const { currentTriple, platforms } = require('./platforms.cjs')

const buildFromSource =
  'To build it from source (needs Rust, https://rustup.rs): git clone ' +
  'https://github.com/rumongo/rumongo && cd rumongo && npm install && npm run build && npm pack, ' +
  'then npm install ./rumongo-<version>.tgz in your project.'

function nativeError(code, message, cause) {
  const error = new Error(message, cause === undefined ? undefined : { cause })
  error.name = 'RumongoNativeError'
  error.code = code
  return error
}

/**
 * Refuses a Node.js older than package.json's `engines.node` (`>=X.Y.Z`): npm only warns about it
 * (EBADENGINE), and an older Node would otherwise fail later on a missing API, with no word of
 * the version.
 */
function checkNodeVersion() {
  const wanted = /^>=\s*(\d+)\.(\d+)\.(\d+)$/.exec(require('../package.json').engines?.node ?? '')
  if (!wanted) return
  const have = process.versions.node.split('.').map(Number)
  for (let part = 0; part < 3; part++) {
    const need = Number(wanted[part + 1])
    if (have[part] > need) return
    if (have[part] < need) {
      throw nativeError(
        'RUMONGO_NODE_TOO_OLD',
        `rumongo needs Node.js ${wanted[1]}.${wanted[2]}.${wanted[3]} or newer; this is Node.js ` +
          `${process.version}. Upgrade Node.js (https://nodejs.org, or \`nvm install 22\`), then ` +
          'reinstall your dependencies.',
      )
    }
  }
}

function load() {
  checkNodeVersion()
  const triple = currentTriple()
  const supported = platforms.map((p) => `${p.triple} (${p.runtime})`).join(', ')
  const local = join(__dirname, `rumongo.${triple}.node`)
  if (existsSync(local)) return requireAddon(local, triple)
  if (!platforms.some((p) => p.triple === triple)) {
    throw nativeError(
      'RUMONGO_UNSUPPORTED_PLATFORM',
      `rumongo has no prebuilt native addon for this platform (${triple}, Node ${process.version}). ` +
        `Supported platforms: ${supported}. ${buildFromSource}`,
    )
  }
  let resolved
  try {
    resolved = require.resolve(`rumongo-${triple}`)
  } catch (cause) {
    throw nativeError(
      'RUMONGO_NATIVE_PACKAGE_MISSING',
      `rumongo's native addon for ${triple} comes in the package rumongo-${triple}, which is not ` +
        `installed: it is an optional dependency of rumongo, skipped by --omit=optional, ` +
        `--no-optional or a lockfile made on another platform. Install it with ` +
        `\`npm install rumongo-${triple}@${require('../package.json').version}\`. ${buildFromSource}`,
      cause,
    )
  }
  return requireAddon(resolved, triple)
}

function requireAddon(file, triple) {
  try {
    return require(file)
  } catch (cause) {
    const entry = platforms.find((p) => p.triple === triple)
    throw nativeError(
      'RUMONGO_NATIVE_LOAD_FAILED',
      `rumongo's native addon ${file} did not load on ${triple}` +
        (entry ? ` (it needs ${entry.runtime})` : '') +
        `: ${cause && cause.message}. ${buildFromSource}`,
      cause,
    )
  }
}

module.exports = load()
