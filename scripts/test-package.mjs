// `npm run test:package`: installs the tarballs `npm run package` left in packages/ (the main
// package and each Linux platform package found there) into a fresh project per platform, with no
// cargo or go on PATH, then queries the embedded server from CommonJS and ESM and compares the
// results with the official driver's on the same data; TypeScript (`tsc --strict --noEmit`) is
// checked once. readelf checks each addon's CPU, the libraries it needs and its glibc symbol
// versions (none newer than the 2.17 baseline; none at all on musl). Each platform runs on the Node binaries scripts/package-runtimes.mjs provides:
// this machine's Node 20 and the registry's 22 and 24 for linux-x64-gnu, musl builds of Node 22 and
// 24 under musl's loader for linux-x64-musl, and arm64 Nodes under qemu-user for the arm64 packages.
// `-- --from-dist` is for a host package that `npm run package -- --from-dist` filled with the
// addon built for this machine's glibc: its glibc symbols are not held to the 2.17 baseline.
// `-- --triples linux-x64-gnu,...` checks only those; `-- --node <path>` (repeatable, one
// platform) replaces the Node binaries, as the release workflow's runners do with their own Node.
// Also checks that npm refuses to install rumongo on a platform with no binary (npm itself run with
// process.platform faked).
import { execFileSync, spawnSync } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { MongoClient } from 'mongodb'
import { startDevdb } from './devdb.mjs'
import { runtimeFor } from './package-runtimes.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const { version } = require('../package.json')
const { currentTriple, platforms } = require('./platforms.cjs')
const started = Date.now()
const { values } = parseArgs({
  options: {
    node: { type: 'string', multiple: true },
    triples: { type: 'string' },
    'from-dist': { type: 'boolean' },
  },
})

const hostTriple = currentTriple()
const tarball = (name) => join(root, 'packages', `${name}-${version}.tgz`)
const mainTarball = tarball('rumongo')
// An x64 glibc Linux machine checks every Linux platform package found in packages/ (running the
// others through musl's loader and qemu-user); any other machine, or one given --node, its own.
const checksAll = hostTriple === 'linux-x64-gnu' && !values.node
const triples =
  values.triples?.split(',') ??
  (checksAll
    ? platforms
        .filter((p) => p.os === 'linux' && existsSync(tarball(`rumongo-${p.triple}`)))
        .map((p) => p.triple)
    : [hostTriple])
if (values.node && triples.length !== 1) {
  throw new Error(`test:package: --node needs one platform (--triples), not ${triples.join(', ')}`)
}
for (const file of [mainTarball, ...triples.map((triple) => tarball(`rumongo-${triple}`))]) {
  if (!existsSync(file)) throw new Error(`test:package: ${file} is missing: run \`npm run package\` first`)
}

const work = mkdtempSync(join(tmpdir(), 'rumongo-package-'))
const server = await startDevdb()
try {
  // A PATH without cargo, rustc or go: the install must not build anything.
  const hasTool = (dir) => ['cargo', 'rustc', 'go'].some((tool) => existsSync(join(dir, tool)))
  const path = (process.env.PATH ?? '').split(delimiter).filter((dir) => dir && !hasTool(dir))
  const env = {
    ...process.env,
    PATH: path.join(delimiter),
    npm_config_fund: 'false',
    npm_config_audit: 'false',
  }
  // `wrap`: the command prefix a musl platform's steps run under (scripts/package-runtimes.mjs).
  const sh = (command, args, options = {}, wrap = []) =>
    execFileSync(wrap[0] ?? command, [...wrap.slice(1), ...(wrap.length ? [command] : []), ...args], {
      cwd: work,
      env,
      encoding: 'utf8',
      ...options,
    })
  for (const tool of ['cargo', 'rustc', 'go']) {
    const found = spawnSync('sh', ['-c', `command -v ${tool}`], { env, encoding: 'utf8' })
    if (found.status === 0) throw new Error(`test:package: ${tool} is on the PATH: ${found.stdout.trim()}`)
  }

  // The data, written with the official driver; what rumongo must read back.
  const docs = Array.from({ length: 50 }, (_, i) => ({ _id: i, region: ['eu', 'us'][i % 2], n: i * 1.5 }))
  const official = new MongoClient(server.uri)
  const collection = official.db('package_check').collection('orders')
  await collection.deleteMany({})
  await collection.insertMany(docs)
  const expected = JSON.stringify({
    found: await collection.find({ region: 'eu' }).sort({ _id: 1 }).toArray(),
    count: await collection.countDocuments({ region: 'us' }),
  })
  await official.close()

  const npmCli = join(
    dirname(realpathSync(execFileSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim())),
    'npm-cli.js',
  )
  const newProject = (name) => {
    const project = join(work, name)
    mkdirSync(project)
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', private: true }))
    return project
  }

  // npm on a platform rumongo has no binary for refuses the install (package.json os/cpu).
  const fakePlatform = join(work, 'freebsd.cjs')
  writeFileSync(fakePlatform, "Object.defineProperty(process, 'platform', { value: 'freebsd' })")
  const refused = spawnSync(process.execPath, ['--require', fakePlatform, npmCli, 'install', mainTarball], {
    cwd: newProject('freebsd'),
    env,
    encoding: 'utf8',
  })
  if (refused.status === 0 || !refused.stderr.includes('EBADPLATFORM')) {
    throw new Error(`test:package: npm installed rumongo on freebsd: ${refused.stderr}`)
  }
  console.log('test:package: npm refuses to install rumongo on freebsd (EBADPLATFORM)')

  const query = `
  const client = new MongoClient(process.env.URI)
  const orders = client.db('package_check').collection('orders')
  const found = await orders.find({ region: 'eu' }).sort({ _id: 1 }).toArray()
  const count = await orders.countDocuments({ region: 'us' })
  await client.close()
  console.log(JSON.stringify({ found, count }))
`
  let typesChecked = false
  for (const triple of triples) {
    const { nodes, wrap } = values.node ? { nodes: values.node, wrap: [] } : runtimeFor(triple, hostTriple)
    const cpu = triple.split('-')[1]
    const project = newProject(triple)
    // Another CPU's package: npm (whose --cpu flag only filters optional dependencies) is told
    // that CPU by faking process.arch, as a machine of that CPU would report it. The libc npm
    // checks the package's `libc` field against is the one `wrap` shows it.
    const fakeArch = join(work, `arch-${cpu}.cjs`)
    writeFileSync(fakeArch, `Object.defineProperty(process, 'arch', { value: ${JSON.stringify(cpu)} })`)
    sh(
      process.execPath,
      [
        ...['--require', fakeArch, npmCli, 'install', mainTarball, tarball(`rumongo-${triple}`)],
        ...(typesChecked ? [] : ['@types/node@22', 'typescript@6']),
      ],
      { cwd: project, stdio: 'inherit' },
      wrap,
    )
    if (process.platform === 'linux') {
      checkElf(triple, join(project, 'node_modules', `rumongo-${triple}`, `rumongo.${triple}.node`))
    }
    const installed = readFileSync(join(project, 'node_modules', 'rumongo', 'package.json'), 'utf8')
    if (!installed.includes(`"rumongo-${triple}"`))
      throw new Error('test:package: optionalDependencies missing')
    // The lockfile that install left must satisfy `npm ci` (CI and Docker builds use it) whenever
    // every platform package the main package names is here to install (a `--from-dist` pack names
    // only this machine's; a release's names all seven, of which only the registry has them all).
    const named = Object.keys(JSON.parse(installed).optionalDependencies ?? {})
    if (named.every((name) => existsSync(tarball(name)))) {
      rmSync(join(project, 'node_modules'), { recursive: true, force: true })
      sh(process.execPath, ['--require', fakeArch, npmCli, 'ci'], { cwd: project, stdio: 'inherit' }, wrap)
      console.log(`test:package: ${triple}: npm ci accepts the lockfile the install left`)
    }
    writeFileSync(
      join(project, 'cjs.cjs'),
      `const { MongoClient } = require('rumongo')\n;(async () => {${query}})()`,
    )
    writeFileSync(join(project, 'esm.mjs'), `import { MongoClient } from 'rumongo'\n${query}`)
    // The types are the same on every platform: checked in the first project.
    if (!typesChecked) {
      checkTypes(project)
      typesChecked = true
    }
    for (const node of nodes) {
      const nodeVersion = sh(node, ['--version']).trim()
      for (const entry of ['cjs.cjs', 'esm.mjs']) {
        const output = sh(node, [entry], { cwd: project, env: { ...env, URI: server.uri } }, wrap).trim()
        if (output !== expected) {
          throw new Error(
            `test:package: ${triple}: ${entry} on Node ${nodeVersion} read ${output}, expected ${expected}`,
          )
        }
      }
      // The addon that answered is the platform package's, and its libc is the platform's.
      const loaded = sh(
        node,
        [
          '-e',
          `require('rumongo'); console.log(JSON.stringify({ addon: Object.keys(require.cache).find((f) => f.endsWith('.node')), glibc: process.report.getReport().header.glibcVersionRuntime ?? null }))`,
        ],
        { cwd: project },
        wrap,
      )
      const { addon, glibc } = JSON.parse(loaded)
      if (!addon?.endsWith(join('node_modules', `rumongo-${triple}`, `rumongo.${triple}.node`))) {
        throw new Error(`test:package: ${triple} on Node ${nodeVersion} loaded ${addon}`)
      }
      if ((glibc === null) !== triple.endsWith('-musl') && process.platform === 'linux') {
        throw new Error(`test:package: ${triple} ran on a Node whose glibc is ${glibc}`)
      }
      console.log(
        `test:package: ${triple}: CJS and ESM on Node ${nodeVersion} (${glibc ? `glibc ${glibc}` : 'no glibc'}): same documents as the official driver`,
      )
    }
  }

  // Every source map in the package points at a file the package ships.
  const installedDir = join(work, triples[0], 'node_modules', 'rumongo')
  const maps = readdirSync(join(installedDir, 'dist'), { recursive: true }).filter((f) => f.endsWith('.map'))
  for (const map of maps) {
    const file = join(installedDir, 'dist', map)
    for (const source of JSON.parse(readFileSync(file, 'utf8')).sources) {
      if (!existsSync(join(dirname(file), source)))
        throw new Error(`test:package: ${map} points at a missing ${source}`)
    }
  }
  console.log(`test:package: the ${maps.length} source maps point at shipped sources`)
  const skipped = platforms.filter((p) => !triples.includes(p.triple)).map((p) => p.triple)
  console.log(
    `test:package: passed in ${Math.round((Date.now() - started) / 1000)} s: ${triples.join(', ')}` +
      (skipped.length ? ` (not checked here: ${skipped.join(', ')})` : ''),
  )

  // What the addon asks of the machine that loads it (readelf reads any CPU's ELF): its CPU, the
  // shared libraries it needs and, for glibc, no symbol version newer than the 2.17 baseline; a
  // musl build names no glibc library or symbol version.
  function checkElf(triple, file) {
    const elf = execFileSync('readelf', ['--file-header', '--dynamic', '--version-info', '--wide', file], {
      encoding: 'utf8',
    })
    const [, cpu, libc] = triple.split('-')
    const machine = /Machine:\s+(.+)/.exec(elf)?.[1].trim()
    const needed = [...elf.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map(([, lib]) => lib)
    const glibcVersions = [...new Set([...elf.matchAll(/GLIBC_(\d+)\.(\d+)/g)].map(([v]) => v))]
    const newest = glibcVersions
      .map((v) => v.slice(6).split('.').map(Number))
      .sort(([a, b], [c, d]) => c - a || d - b)[0]
    const allowed =
      libc === 'musl'
        ? /^(libc\.so|libc\.musl-\w+\.so\.1)$/
        : /^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libgcc_s\.so\.1|ld-linux-[\w-]+\.so\.\d)$/
    const problems = [
      machine !== { x64: 'Advanced Micro Devices X86-64', arm64: 'AArch64' }[cpu] && `machine ${machine}`,
      needed.length === 0 && 'no libc needed',
      ...needed.filter((lib) => !allowed.test(lib)).map((lib) => `needs ${lib}`),
      libc === 'musl' && glibcVersions.length > 0 && `glibc symbol versions ${glibcVersions.join(', ')}`,
      libc === 'gnu' &&
        !values['from-dist'] &&
        newest &&
        (newest[0] > 2 || newest[1] > 17) &&
        `needs GLIBC_${newest.join('.')}, newer than the 2.17 baseline`,
    ].filter(Boolean)
    if (problems.length > 0) throw new Error(`test:package: ${file}: ${problems.join('; ')}`)
    console.log(
      `test:package: ${triple}: ${machine}, needs ${needed.join(' ')}` +
        (libc === 'gnu' ? `, newest symbol GLIBC_${newest.join('.')}` : ', no glibc symbol'),
    )
  }

  function checkTypes(project) {
    writeFileSync(
      join(project, 'typed.mts'),
      `import { MongoClient } from 'rumongo'
interface Order { _id: number; region: string; n: number }
const client = new MongoClient(process.env.URI ?? 'mongodb://localhost')
const found: Order[] = await client.db('package_check').collection<Order>('orders').find({ region: 'eu' }).toArray()
const count: number = await client.db('package_check').collection<Order>('orders').countDocuments()
console.log(found.length, count)
await client.close()
`,
    )
    writeFileSync(
      join(project, 'tsconfig.json'),
      // skipLibCheck off (TypeScript's default): every .d.ts of the package is checked, in a project
      // without the optional apache-arrow, as a user's strict project reads them.
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: 'nodenext',
          target: 'es2022',
          types: ['node'],
          skipLibCheck: false,
        },
      }),
    )
    sh(join(project, 'node_modules', '.bin', 'tsc'), ['-p', '.', '--noEmit'], {
      cwd: project,
      stdio: 'inherit',
    })
    console.log('test:package: tsc --strict --noEmit passed')
  }
} finally {
  await server.stop()
  rmSync(work, { recursive: true, force: true })
}
