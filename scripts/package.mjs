// `npm run package`: the npm tarballs a release publishes, in packages/ (gitignored):
// rumongo-<version>.tgz, the main package, whose optionalDependencies name every platform
// package (only this machine's with `--from-dist`), and rumongo-<triple>-<version>.tgz for each platform this machine can build: on
// Linux every Linux target (cross-built with cargo-zigbuild), on macOS both macOS targets, on
// Windows win32-x64-msvc. `-- --only main,linux-x64-gnu,...` packs only the named ones (`main` is
// the main package): the release workflow's build jobs pack their platforms, and one job packs the
// main package, which is the same on every platform. A run replaces only the tarballs it packs.
// `-- --skip-build` packs the dist/ already built instead of running `npm run build` first.
// `-- --from-dist` fills this machine's own platform package with the addon `npm run build` put in
// dist/ instead of a cross build: it needs this machine's libc (not the 2.17 baseline), so it is
// no release artifact, but it is one native build instead of a cross build per target, which
// makes it cheap enough for .ci/run to check the packaging with.
//
// Cross builds need zig and cargo-zigbuild on PATH (`pip install ziglang cargo-zigbuild`) and the
// rustup targets (added here when missing). They use their own target folder, target/package/, so
// they never invalidate the incremental build `npm run build` keeps in target/.
import { execFileSync } from 'node:child_process'
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const { currentTriple, platforms } = require('./platforms.cjs')
const out = join(root, 'packages')
const targetDir = join(root, 'target', 'package')
const run = (command, args, options = {}) =>
  // npm is npm.cmd on Windows, which only a shell runs.
  execFileSync(command, args, {
    cwd: root,
    stdio: 'inherit',
    shell: process.platform === 'win32',
    ...options,
  })

const { values } = parseArgs({
  options: { only: { type: 'string' }, 'skip-build': { type: 'boolean' }, 'from-dist': { type: 'boolean' } },
})
const wanted = values.only?.split(',')
const unknown = wanted?.filter((name) => name !== 'main' && !platforms.some((p) => p.triple === name))
if (unknown?.length) {
  console.error(
    `package: no platform ${unknown.join(', ')} (main or one of ${platforms.map((p) => p.triple).join(', ')})`,
  )
  process.exit(1)
}
const packMain = !wanted || wanted.includes('main')
// Linux hosts cross-build every Linux target with zig; macOS and Windows hosts build their own
// platform's targets with cargo (as the release workflow's matrix does).
const buildable = platforms.filter((p) => p.os === process.platform && (!wanted || wanted.includes(p.triple)))
const notHere = wanted?.filter((name) => name !== 'main' && !buildable.some((p) => p.triple === name))
if (notHere?.length) {
  console.error(`package: ${notHere.join(', ')} cannot be built on ${process.platform}`)
  process.exit(1)
}
const zig = process.platform === 'linux'
const hostTriple = currentTriple()
const fromDist = (platform) => values['from-dist'] && platform.triple === hostTriple
if (values['from-dist'] && !buildable.some(fromDist)) {
  console.error(`package: --from-dist packs this machine's platform, ${hostTriple}: add it to --only`)
  process.exit(1)
}
const libraryFile = { linux: 'librumongo.so', darwin: 'librumongo.dylib', win32: 'rumongo.dll' }[
  process.platform
]
const onPath = (command) => {
  try {
    execFileSync(command, ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}
if (zig && buildable.some((p) => !fromDist(p)) && !onPath('cargo-zigbuild')) {
  console.error('package: cargo-zigbuild is not on PATH: pip install ziglang cargo-zigbuild')
  process.exit(1)
}

// The TypeScript layer and dist/ (the host addon it holds is not shipped in the main package),
// built into an empty dist/: `npm run build` leaves the output of a source file since removed.
if ((packMain || values['from-dist']) && !values['skip-build']) {
  rmSync(join(root, 'dist'), { recursive: true, force: true })
  run('npm', ['run', 'build'])
}

const installed = execFileSync('rustup', ['target', 'list', '--installed'], { encoding: 'utf8' })
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
mkdirSync(out, { recursive: true })
for (const platform of buildable) {
  const dir = join(root, 'npm', platform.triple)
  const addon = join(dir, `rumongo.${platform.triple}.node`)
  if (fromDist(platform)) copyFileSync(join(root, 'dist', `rumongo.${platform.triple}.node`), addon)
  else crossBuild(platform, addon)
  copyFileSync(join(root, 'LICENSE'), join(dir, 'LICENSE'))
  const platformPkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
  if (platformPkg.version !== pkg.version) {
    throw new Error(
      `npm/${platform.triple}/package.json has version ${platformPkg.version}, not ${pkg.version}`,
    )
  }
  rmSync(join(out, `rumongo-${platform.triple}-${pkg.version}.tgz`), { force: true })
  run('npm', ['pack', '--pack-destination', out], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] })
}

function crossBuild(platform, addon) {
  const rustTarget = platform.rust.replace(/\.\d+\.\d+$/, '')
  if (!installed.split('\n').includes(rustTarget)) run('rustup', ['target', 'add', rustTarget])
  const started = Date.now()
  run('cargo', [zig ? 'zigbuild' : 'build', '--release', '--lib', '--target', platform.rust], {
    env: {
      ...process.env,
      CARGO_TARGET_DIR: targetDir,
      // A musl cdylib must link libc dynamically to share the one Node itself uses.
      ...(platform.libc === 'musl'
        ? {
            [`CARGO_TARGET_${rustTarget.toUpperCase().replaceAll('-', '_')}_RUSTFLAGS`]:
              '-C target-feature=-crt-static',
          }
        : {}),
    },
  })
  console.error(`package: built ${platform.triple} in ${Math.round((Date.now() - started) / 1000)} s`)
  copyFileSync(join(targetDir, rustTarget, 'release', libraryFile), addon)
}
if (!packMain) {
  console.log(`package: ${out}`)
  process.exit(0)
}

// The main package, staged so that its package.json can list the platform packages (as
// `napi prepublish` does) and its dist/ leaves out the addon built for this machine's own glibc.
const stage = join(out, '.stage')
rmSync(stage, { recursive: true, force: true })
mkdirSync(stage)
for (const entry of [
  'dist',
  'ts',
  'README.md',
  'docs',
  'LICENSE',
  'MIGRATION.md',
  'BENCHMARKS.md',
  'CHANGELOG.md',
]) {
  cpSync(join(root, entry), join(stage, entry), {
    recursive: true,
    filter: (source) => !source.endsWith('.node'),
  })
}
// A release's main package names every platform package (each on the registry beside it). A local
// `--from-dist` pack names only this machine's, the one tarball installed with it: a name npm cannot
// find is left out of the user's lockfile, and `npm ci` then refuses that lockfile ("Missing:
// rumongo-darwin-arm64@ from lock file").
const named = values['from-dist'] ? platforms.filter((p) => p.triple === hostTriple) : platforms
pkg.optionalDependencies = Object.fromEntries(named.map((p) => [`rumongo-${p.triple}`, pkg.version]))
delete pkg.devDependencies
delete pkg.scripts
writeFileSync(join(stage, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`)
const mainTarball = join(out, `rumongo-${pkg.version}.tgz`)
rmSync(mainTarball, { force: true })
run('npm', ['pack', '--pack-destination', out], { cwd: stage, stdio: ['ignore', 'ignore', 'inherit'] })
rmSync(stage, { recursive: true })
if (!existsSync(mainTarball)) throw new Error('package: the main tarball is missing')
console.log(`package: ${out}`)
