// The errors a new user meets first, side by side with the official driver: a wrong connection
// string or option value, a certificate file that is not there, a Node.js that is too old. Each
// is the official driver's class and message (where the official driver has one), with a `code`.
// (A server that is down or unknown, and a failed login: errors.test.ts, auth_scram.test.ts.)
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { MongoClient as OfficialClient } from 'mongodb'
import { MongoClient, type Collection, type MongoClientOptions } from 'rumongo'
import { afterAll, describe, expect, it } from 'vitest'
import { uri } from './setup/helpers.js'
import { GO, requireTool, RUST } from '../scripts/lib/prerequisites.mjs'

const root = resolve(import.meta.dirname, '..')
const scratch = mkdtempSync(join(tmpdir(), 'rumongo-first-errors-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

interface Outcome {
  name: string
  message: string
  code?: unknown
}

/** What `run` throws (or rejects with), or 'ok'. */
async function outcome(run: () => unknown): Promise<Outcome | 'ok'> {
  try {
    const result = await run()
    if (result instanceof MongoClient || result instanceof OfficialClient) await result.close()
    return 'ok'
  } catch (error) {
    const { name, message, code } = error as Outcome
    return { name, message, code }
  }
}

/** A port nothing listens on: these clients fail before they would connect. */
const NOBODY = 'mongodb://127.0.0.1:1'

describe('a wrong connection string or option value fails as in the official driver', () => {
  it.each<[string, string, object?]>([
    ['an SRV name with a port', 'mongodb+srv://cluster0.example.com:27017'],
    ['two SRV names', 'mongodb+srv://a.example.com,b.example.com'],
    ['tls not a boolean', `${NOBODY}/?tls=yes`],
    ['ssl not a boolean', `${NOBODY}/?ssl=1`],
    ['retryReads not a boolean', `${NOBODY}/?retryReads=no`],
    ['directConnection not a boolean', `${NOBODY}/?directConnection=TRUE`],
    ['maxPoolSize not a number', `${NOBODY}/?maxPoolSize=ten`],
    ['maxPoolSize not a number, in the options', NOBODY, { maxPoolSize: 'ten' }],
    ['a negative connectTimeoutMS', `${NOBODY}/?connectTimeoutMS=-5`],
    ['a negative serverSelectionTimeoutMS, in the options', NOBODY, { serverSelectionTimeoutMS: -1 }],
    ['zlibCompressionLevel not a number', `${NOBODY}/?zlibCompressionLevel=max`],
    ['maxConnecting 0', `${NOBODY}/?maxConnecting=0`],
    ['a misspelt authMechanism', 'mongodb://ada:secret@127.0.0.1:1/?authMechanism=SCRAM-SHA256'],
    [
      'a misspelt authMechanism, in the options',
      'mongodb://ada:secret@127.0.0.1:1',
      { authMechanism: 'SCRAM' + '256' },
    ],
  ])('%s', async (_case, url, options) => {
    const theirs = await outcome(() => new OfficialClient(url, options))
    const ours = await outcome(() => new MongoClient(url, options as MongoClientOptions))
    expect(theirs).not.toBe('ok')
    expect(ours).not.toBe('ok')
    expect((ours as Outcome).name).toBe((theirs as Outcome).name)
    expect((ours as Outcome).message).toBe((theirs as Outcome).message)
    expect((ours as Outcome).code).toMatch(/^ERR_/)
    expect((ours as Outcome).message).not.toContain('secret')
  })

  it.each([
    ['an authMechanism in lower case', `mongodb://ada:secret@127.0.0.1:1/?authMechanism=scram-sha-256`],
    ['an integer with a unit, read by parseInt', `${NOBODY}/?connectTimeoutMS=1000ms`],
  ])('accepts what the official driver accepts: %s', async (_case, url) => {
    expect(await outcome(() => new OfficialClient(url))).toBe('ok')
    expect(await outcome(() => new MongoClient(url))).toBe('ok')
  })
})

describe('an option rumongo refuses says why and what to do', () => {
  it('a client option', async () => {
    const refused = await outcome(() => new MongoClient(NOBODY, { proxyHost: 'proxy.example.com' }))
    expect(refused).toEqual({
      name: 'MongoInvalidArgumentError',
      message:
        'rumongo does not support the client option "proxyHost": rumongo does not connect through a ' +
        'SOCKS5 proxy. Leave it out, or connect with the official driver where you need it',
      code: 'ERR_INVALID_ARGUMENT',
    })
  })

  it.each<[string, (orders: Collection) => unknown, string]>([
    [
      'find({ signal })',
      (orders) => orders.find({}, { signal: new AbortController().signal }).toArray(),
      'rumongo does not support the find option "signal": bound the read with timeoutMS instead (or close() its cursor)',
    ],
    [
      'countDocuments({ explain })',
      (orders) => orders.countDocuments({}, { explain: true } as never),
      'rumongo does not support the countDocuments option "explain": run the explain command with ' +
        'db.command({ explain: ... }), or this read with the official driver',
    ],
  ])('an operation option: %s', async (_case, read, message) => {
    const client = new MongoClient(uri)
    try {
      const refused = await outcome(() => read(client.db('first_hour').collection('orders')))
      expect(refused).toEqual({ name: 'MongoInvalidArgumentError', message, code: 'ERR_INVALID_ARGUMENT' })
    } finally {
      await client.close()
    }
  })
})

describe('a certificate file that is not there', () => {
  it.each(['tlsCAFile', 'tlsCertificateKeyFile'])(
    "%s: connect() fails with node:fs's error, as in the official driver",
    async (option) => {
      const missing = join(scratch, `missing-${option}.pem`)
      const url = `${NOBODY}/?tls=true&${option}=${encodeURIComponent(missing)}&serverSelectionTimeoutMS=2000`
      const theirs = await outcome(() => OfficialClient.connect(url))
      const ours = await outcome(() => MongoClient.connect(url))
      expect(theirs).toEqual({
        name: 'Error',
        message: `ENOENT: no such file or directory, open '${missing}'`,
        code: 'ENOENT',
      })
      expect(ours).toEqual(theirs)
    },
  )
})

describe('a Node.js older than package.json engines', () => {
  it.each([
    ['require', (entry: string) => `require(${JSON.stringify(join(entry, 'index.js'))})`, 'commonjs'],
    ['import', (entry: string) => `await import(${JSON.stringify(join(entry, 'index.mjs'))})`, 'module'],
  ])('%s says which version rumongo needs and what to do', (_form, load, inputType) => {
    const preload = join(scratch, 'old-node.cjs')
    writeFileSync(
      preload,
      `Object.defineProperty(process, 'version', { value: 'v20.18.3' })
Object.defineProperty(process.versions, 'node', { value: '20.18.3' })
`,
    )
    // (Node 20 reports a CommonJS module's error under import() a second time, uncaught: the
    // script prints the caught one first and exits.)
    const script = `try { ${load(join(root, 'dist'))}; console.log('{}') } catch (e) {
  console.log(JSON.stringify({ name: e.name, code: e.code, message: e.message }))
  process.exit(0)
}`
    const child = spawnSync(
      process.execPath,
      ['--require', preload, `--input-type=${inputType}`, '-e', script],
      {
        encoding: 'utf8',
      },
    )
    const error = JSON.parse(child.stdout.trim().split('\n')[0]!)
    expect(error.code).toBe('RUMONGO_NODE_TOO_OLD')
    expect(error.message).toBe(
      'rumongo needs Node.js 20.19.0 or newer; this is Node.js v20.18.3. Upgrade Node.js ' +
        '(https://nodejs.org, or `nvm install 22`), then reinstall your dependencies.',
    )
  })
})

describe('a tool the README asks for that is not installed', () => {
  /** A PATH with node on it and nothing else. */
  function bareNodePath(): string {
    const bin = join(scratch, 'bare-bin')
    mkdirSync(bin, { recursive: true })
    symlinkSync(process.execPath, join(bin, 'node'))
    return bin
  }

  it('npm run build without Rust says so, and where to get it (was: "Internal Error: cargo metadata failed to run")', () => {
    const child = spawnSync(process.execPath, [join(root, 'scripts', 'build.mjs')], {
      encoding: 'utf8',
      env: { ...process.env, PATH: bareNodePath() },
    })
    expect(child.status).toBe(1)
    expect(child.stderr).toBe(
      'build: This needs Rust (cargo), to build the native addon, but `cargo` is not on PATH: install ' +
        'it from https://rustup.rs, open a new shell, and run the command again.\n',
    )
  })

  it('the dev server without Go says so, and where to get it (was: "spawnSync go ENOENT")', () => {
    const path = process.env.PATH
    process.env.PATH = join(scratch, 'empty-bin')
    try {
      expect(() => requireTool(GO)).toThrow(
        expect.objectContaining({
          code: 'RUMONGO_MISSING_TOOL',
          message:
            'This needs Go, to build the embedded dev server (devdb/), but `go` is not on PATH: install ' +
            'it from https://go.dev/dl, or set MONGODB_URI to a MongoDB server of yours, open a new ' +
            'shell, and run the command again.',
        }),
      )
    } finally {
      process.env.PATH = path
    }
    expect(() => requireTool(RUST)).not.toThrow()
  })
})
