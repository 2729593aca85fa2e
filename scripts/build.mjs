// Builds the addon (cargo through napi-rs), compiles ts/ to dist/ and writes the ESM entry.
// Usage: node scripts/build.mjs [--debug] [--test-hooks]. Every step is incremental, so a no-op
// build is quick. `--test-hooks` adds the native functions only tests and benchmarks call (cargo
// feature `test-hooks`, src/test_hooks.rs): `npm test`, `npm run bench` and `build:debug` pass it,
// `npm run build` (what is published) does not.
import { execFileSync } from 'node:child_process'
import {
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { requireTool, RUST } from './lib/prerequisites.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
try {
  requireTool(RUST)
} catch (error) {
  console.error(`build: ${error.message}`)
  process.exit(1)
}
const bin = (name) => join(root, 'node_modules', '.bin', name)
const run = (command, args) => execFileSync(command, args, { cwd: root, stdio: 'inherit' })

const release = !process.argv.includes('--debug')
const testHooks = process.argv.includes('--test-hooks')
// napi writes the addon into a staging folder, then it is renamed into dist/: a process that has
// the previous addon loaded (a running test or benchmark) keeps its file instead of seeing it
// overwritten in place, which would crash it.
const staging = join(root, 'target', 'napi-staging')
rmSync(staging, { recursive: true, force: true })
mkdirSync(join(root, 'dist'), { recursive: true })
run(bin('napi'), [
  'build',
  '--platform',
  ...(release ? ['--release'] : []),
  // The test build has a target folder of its own: cargo names a cdylib's output without a hash, so
  // the builds with and without the feature overwrote each other's librumongo.so, and every switch
  // between `npm test` and `npm run build` (demo, soak, package) recompiled the addon (4-5 minutes
  // of LTO on 2 cores) although nothing had changed.
  ...(testHooks ? ['--features', 'test-hooks', '--target-dir', join(root, 'target', 'test-hooks')] : []),
  '--output-dir',
  staging,
  // The loader is ours (scripts/native-loader.cjs): napi's would blame npm for a missing binary.
  '--no-js',
  // napi resolves --dts against the output folder.
  '--dts',
  relative(staging, join(root, 'ts', 'native.d.cts')),
])
for (const file of readdirSync(staging).filter((name) => name.endsWith('.node'))) {
  renameSync(join(staging, file), join(root, 'dist', file))
}
copyFileSync(join(root, 'scripts', 'native-loader.cjs'), join(root, 'dist', 'native.cjs'))
copyFileSync(join(root, 'scripts', 'platforms.cjs'), join(root, 'dist', 'platforms.cjs'))
run(bin('tsc'), ['-p', 'tsconfig.json'])
optionalTypeImports(join(root, 'dist'))
// dist/*.d.ts import the addon's types from './native.cjs'.
copyFileSync(join(root, 'ts', 'native.d.cts'), join(root, 'dist', 'native.d.cts'))

// ESM entry: re-export the CommonJS build so both module systems share one copy of every class
// (and of bson), which keeps `instanceof` working across them.
const names = Object.keys(createRequire(import.meta.url)(join(root, 'dist', 'index.js'))).filter(
  (name) => name !== 'default' && name !== '__esModule',
)
writeFileSync(
  join(root, 'dist', 'index.mjs'),
  `import cjs from './index.js'\nexport const { ${names.join(', ')} } = cjs\nexport default cjs\n`,
)

/**
 * The declarations name the optional peer dependency apache-arrow's types (a Table, a RecordBatch).
 * A strict project without it (`skipLibCheck: false`, TypeScript's default) would fail on rumongo's
 * own .d.ts with "Cannot find module 'apache-arrow'": each such import is marked `@ts-ignore`, so
 * without the package those types read as `any`, and with it they are apache-arrow's.
 */
function optionalTypeImports(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.d.ts')) continue
    const file = join(entry.parentPath, entry.name)
    const text = readFileSync(file, 'utf8')
    const marked = text.replace(
      /^(import type .* from 'apache-arrow';?)$/gm,
      '// @ts-ignore: apache-arrow is an optional peer dependency (its types are `any` without it)\n$1',
    )
    if (marked !== text) writeFileSync(file, marked)
  }
}
