// Bad input and failures surface as the official driver's typed errors, never a crash or a hang.
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { inspect } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MongoClient as OfficialClient } from 'mongodb'
import {
  ErrorCode,
  MongoClient,
  MongoCursorExhaustedError,
  MongoCursorInUseError,
  MongoError,
  MongoInvalidArgumentError,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoParseError,
  MongoServerError,
  MongoServerSelectionError,
  type Collection,
} from 'rumongo'
// @ts-expect-error: a plain ESM script without types
import { freePort } from '../scripts/devdb.mjs'
import { startWireServer } from './setup/wire_server.js'
import { uniqueDbName, uri } from './setup/helpers.js'

let client: MongoClient
let collection: Collection
const dbName = uniqueDbName('errors')

beforeAll(async () => {
  const official = await OfficialClient.connect(uri)
  await official
    .db(dbName)
    .collection('items')
    .insertMany([{ a: 1 }, { a: 2 }, { a: 3 }])
  await official.close()
  client = await MongoClient.connect(uri)
  collection = client.db(dbName).collection('items')
})

afterAll(async () => {
  const official = await OfficialClient.connect(uri)
  await official.db(dbName).dropDatabase()
  await official.close()
  await client.close()
})

/** Asserts `run` fails with `type` and a message matching `message`. */
async function expectFailure(run: () => unknown, type: new (...args: any[]) => Error, message: RegExp) {
  let caught: unknown
  try {
    await run()
  } catch (error) {
    caught = error
  }
  expect(caught).toBeInstanceOf(type)
  expect(caught).toBeInstanceOf(MongoError)
  expect((caught as Error).message).toMatch(message)
  return caught as Error & { code?: unknown }
}

describe('invalid arguments', () => {
  const cases: [string, () => unknown, RegExp][] = [
    ['a number filter', () => collection.find(5 as never), /Query filter must be a plain object or ObjectId/],
    ['a string filter', () => collection.find('a' as never), /Query filter/],
    ['an array filter', () => collection.find([{ a: 1 }] as never), /Query filter/],
    ['a null countDocuments filter', () => collection.countDocuments(null as never), /Query filter/],
    ['non-object options', () => collection.find({}, 5 as never), /find options must be an object/],
    ['a string limit', () => collection.find({}, { limit: 'x' as never }), /"limit" must be an integer/],
    ['a fractional skip', () => collection.find({}).skip(1.5), /"skip" must be an integer/],
    [
      'a bad sort direction',
      () => collection.find({}, { sort: { a: 'up' as never } }),
      /Invalid sort direction: "up"/,
    ],
    ['a bad hint', () => collection.find({}, { hint: 5 as never }), /"hint" must be an index name/],
    [
      'a bad read preference',
      () => collection.find({}, { readPreference: 'fastest' as never }),
      /readPreference/,
    ],
    [
      'a session',
      () => collection.find({}, { session: {} } as never),
      /find option "session" must be a ClientSession of rumongo's client.startSession\(\), got an object/,
    ],
    [
      'a non-boolean BSON option',
      () => collection.find({}, { promoteLongs: 'yes' as never }),
      /"promoteLongs" must be a boolean/,
    ],
    [
      'a $out stage',
      () => collection.aggregate([{ $match: {} }, { $out: 'copy' }]),
      /read pipelines only.*\$out/,
    ],
    ['a $merge stage', () => collection.aggregate([{ $merge: { into: 'copy' } }]), /\$merge/],
    [
      'a non-array pipeline',
      () => collection.aggregate({ $match: {} } as never),
      /pipeline must be an array/,
    ],
    ['a non-object stage', () => collection.aggregate(['$match'] as never), /stage must be an object/],
    ['a non-string distinct key', () => collection.distinct(5 as never), /distinct key must be a string/],
    ['an empty collection name', () => client.db(dbName).collection(''), /collection name/],
    ['an invalid database name', () => client.db('a.b'), /invalid database name/],
    [
      'an unsupported client option',
      () => new MongoClient(uri, { autoEncryption: {} } as never),
      /client option "autoEncryption": rumongo does not implement client-side field level encryption/,
    ],
  ]
  it.each(cases)('rejects %s with MongoInvalidArgumentError', async (_, run, message) => {
    const error = await expectFailure(run, MongoInvalidArgumentError, message)
    expect(error.code).toBe(ErrorCode.InvalidArgument)
  })

  it('rejects a negative batchSize and skip in the native layer with the same error type', async () => {
    await expectFailure(
      () => collection.find({}, { batchSize: -1 }).toArray(),
      MongoInvalidArgumentError,
      /batchSize/,
    )
    await expectFailure(() => collection.countDocuments({}, { skip: -1 }), MongoInvalidArgumentError, /skip/)
  })

  it('refuses to change options once the cursor started', async () => {
    const cursor = collection.find({})
    await cursor.toArray()
    const error = await expectFailure(() => cursor.limit(1), MongoCursorInUseError, /already initialized/)
    expect(error.code).toBe(ErrorCode.CursorInUse)
  })
})

describe('connection string user info', () => {
  /** The error `new MongoClient(uri)` throws (or `undefined`), for both drivers. */
  function constructionError(construct: () => unknown): Error | undefined {
    try {
      construct()
      return undefined
    } catch (error) {
      return error as Error
    }
  }

  it.each([
    // A `?`, `@`, `/`, `:` or `#` in a password is a user mistake whose error must not quote it.
    ['mongodb://alice:hunter2?x@db.example.com/app', 'hunter2'],
    ['mongodb://alice:27017?MySecretPart@127.0.0.1:1/', 'MySecretPart'],
    ['mongodb://alice:27017?authSource=S3cret@127.0.0.1:1/', 'S3cret'],
    ['mongodb://alice:pass/Hidden42@db.example.com/', 'Hidden42'],
    ['mongodb://alice:pass:Hidden42@db.example.com/', 'Hidden42'],
    ['mongodb://alice:pass#Hidden42@db.example.com/', 'Hidden42'],
    ['mongodb://alice:pass[Hidden42@db.example.com/', 'Hidden42'],
    ['mongodb+srv://alice:hunter2?x@cluster.example.com/', 'hunter2'],
    ['mongodb://alice:pa@ss@db.example.com/', 'ss@db'],
    ['mongodb://alice:pa%zzss@db.example.com/', 'pa%zzss'],
    ['mongodb://a#b:secretword@db.example.com/', 'secretword'],
    ['mongodb://@db.example.com/', undefined],
    ['mongodb://:secretword@db.example.com/', 'secretword'],
    ['mongodb://db.example.com/path@elsewhere', undefined],
    ['mongodb://alice:secretword@', 'secretword'],
  ])('refuses %s as the official driver does, without quoting the password', (url, secret) => {
    const official = constructionError(() => new OfficialClient(url))
    const error = constructionError(() => new MongoClient(url))
    expect(official).toBeDefined()
    expect(error).toBeInstanceOf(MongoParseError)
    expect(error!.name).toBe(official!.name)
    expect(error!.message).toBe(official!.message)
    if (secret) expect(inspect(error, { depth: 10 })).not.toContain(secret)
  })

  it.each([
    'mongodb://alice:p%40ss%3Fword@db.example.com/app',
    'mongodb://alice:@db.example.com/',
    'mongodb://alice@db.example.com/',
    'mongodb://alice:pa,ss$w!rd@db1.example.com,db2.example.com/',
  ])('accepts %s as the official driver does', (url) => {
    expect(constructionError(() => new OfficialClient(url))).toBeUndefined()
    expect(constructionError(() => new MongoClient(url))).toBeUndefined()
  })
})

describe('server and connection errors', () => {
  it('propagates server errors with code and codeName', async () => {
    const error = (await expectFailure(
      () => collection.find({ $foo: 1 }).toArray(),
      MongoServerError,
      /unknown top level operator/,
    )) as MongoServerError
    expect(error.code).toBe(2)
    expect(error.codeName).toBe('BadValue')
    const official = await OfficialClient.connect(uri)
    const reference = await official
      .db(dbName)
      .collection('items')
      .find({ $foo: 1 })
      .toArray()
      .catch((e: Error) => e)
    await official.close()
    expect(error.message).toBe((reference as Error).message)
  })

  it('gives errors from the native layer no transport value as their cause', async () => {
    const official = await OfficialClient.connect(uri)
    try {
      const failures: [Promise<unknown>, Promise<unknown>][] = [
        [
          collection.find({ $foo: 1 }).toArray(),
          official.db(dbName).collection('items').find({ $foo: 1 }).toArray(),
        ],
        [
          collection.aggregate([{ $nope: 1 }]).toArray(),
          official
            .db(dbName)
            .collection('items')
            .aggregate([{ $nope: 1 }])
            .toArray(),
        ],
        [
          collection.countDocuments({ $foo: 1 }),
          official.db(dbName).collection('items').countDocuments({ $foo: 1 }),
        ],
      ]
      // Every failure is caught as it is made: awaited one by one, a later one may reject first.
      const settled = failures.map(([ours, theirs]) =>
        Promise.all([ours.catch((e: Error) => e), theirs.catch((e: Error) => e)]),
      )
      for (const outcome of settled) {
        const [error, reference] = await outcome
        expect(error).toBeInstanceOf(MongoServerError)
        expect((error as Error).cause).toBe((reference as Error).cause)
        const shown = inspect(error, { depth: 10 })
        expect(shown).not.toContain('rumongo-error')
        expect(shown).not.toContain('GenericFailure')
      }
    } finally {
      await official.close()
    }
    const parse = await MongoClient.connect('mongodb://127.0.0.1:1/?maxPoolSize=many').catch((e: Error) => e)
    expect(parse).toBeInstanceOf(MongoParseError)
    expect((parse as Error).cause).toBeUndefined()
  })

  it('fails with MongoNotConnectedError after close for new operations; open cursors are closed, as the official driver closes them', async () => {
    const closing = await MongoClient.connect(uri)
    const items = closing.db(dbName).collection('items')
    const open = items.find({}, { batchSize: 1 })
    expect(await open.next()).not.toBeNull()
    await closing.close()
    await expectFailure(() => items.find({}).toArray(), MongoNotConnectedError, /must be connected/)
    await expectFailure(() => items.countDocuments({}), MongoNotConnectedError, /must be connected/)
    // Its client closed it (see client_close_cursor.test.ts): nothing more, as the official cursor.
    expect(await open.toArray()).toEqual([])
    await expectFailure(() => open.next(), MongoCursorExhaustedError, /Cursor is exhausted/)
    await closing.close() // idempotent
    await closing.connect() // and reconnectable, as in the official driver
    expect(await items.countDocuments({})).toBe(3)
    await closing.close()
  })

  it('fails within serverSelectionTimeoutMS when no server listens', async () => {
    const port = await freePort()
    const started = Date.now()
    await expectFailure(
      () => MongoClient.connect(`mongodb://127.0.0.1:${port}/?serverSelectionTimeoutMS=500`),
      MongoServerSelectionError,
      /.+/,
    )
    expect(Date.now() - started).toBeLessThan(5_000)
  })

  /** What `connect()` rejects with, for both drivers, on the same connection string. */
  async function connectFailures(url: string): Promise<[any, any]> {
    return Promise.all([
      MongoClient.connect(url).catch((error: unknown) => error),
      OfficialClient.connect(url).catch((error: unknown) => error),
    ])
  }

  it.each([
    ['a refused port', async () => `127.0.0.1:${await freePort()}`],
    ['an unknown host', async () => 'nonexistent.invalid:27017'],
  ])('%s fails as in the official driver: message, cause, reason', async (_case, address) => {
    const host = await address()
    const [ours, theirs] = await connectFailures(`mongodb://${host}/?serverSelectionTimeoutMS=1000`)
    expect(ours).toBeInstanceOf(MongoServerSelectionError)
    expect(ours.name).toBe(theirs.name)
    expect(ours.message).toBe(theirs.message) // connect ECONNREFUSED 127.0.0.1:1
    expect(ours.code).toBe(theirs.code)
    expect(ours.errorLabels).toEqual(theirs.errorLabels)
    // cause: the server's MongoNetworkError, itself caused by Node.js's error for the failure.
    expect(ours.cause).toBeInstanceOf(MongoNetworkError)
    expect(ours.cause.name).toBe(theirs.cause.name)
    expect(ours.cause.message).toBe(theirs.cause.message)
    for (const key of ['message', 'code', 'errno', 'syscall', 'address', 'port', 'hostname']) {
      expect(ours.cause.cause[key], key).toEqual(theirs.cause.cause[key])
    }
    // reason: each server, with its type and error.
    expect(ours.reason.type).toBe(theirs.reason.type)
    expect([...ours.reason.servers.keys()]).toEqual([...theirs.reason.servers.keys()])
    const server = ours.reason.servers.get(host)
    expect(server.type).toBe(theirs.reason.servers.get(host).type)
    expect(server.error).toBe(ours.cause)
    expect(inspect(ours, { depth: 10 })).not.toMatch(/os error|Kind:|Topology: \{/)
  })

  it('reports every server of a failed selection in reason', async () => {
    const hosts = [`127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`]
    const [ours] = await connectFailures(`mongodb://${hosts.join(',')}/?serverSelectionTimeoutMS=500`)
    expect(ours).toBeInstanceOf(MongoServerSelectionError)
    expect([...ours.reason.servers.keys()].sort()).toEqual([...hosts].sort())
    for (const host of hosts) {
      expect(ours.reason.servers.get(host).error.message).toBe(`connect ECONNREFUSED ${host}`)
    }
    expect(hosts.map((host) => `connect ECONNREFUSED ${host}`)).toContain(ours.message)
  })

  it("an SRV lookup that finds nothing is node:dns's plain Error, as the official driver's", async () => {
    const [ours, theirs] = await connectFailures(
      'mongodb+srv://nonexistent.invalid/?serverSelectionTimeoutMS=500',
    )
    expect(theirs.message).toBe('querySrv ENOTFOUND _mongodb._tcp.nonexistent.invalid')
    expect(theirs.name).toBe('Error')
    expect(ours).not.toBeInstanceOf(MongoError)
    expect(ours.name).toBe(theirs.name)
    expect(ours.message).toBe(theirs.message)
    expect(ours.code).toBe(theirs.code)
  })

  it('rejects malformed connection strings with MongoParseError', async () => {
    await expectFailure(() => new MongoClient('http://localhost:27017'), MongoParseError, /Invalid scheme/)
    await expectFailure(() => new MongoClient(42 as never), MongoParseError, /must be a string/)
    await expectFailure(() => MongoClient.connect('mongodb://127.0.0.1:99999999/'), MongoParseError, /.+/)
    await expectFailure(
      () => MongoClient.connect('mongodb://127.0.0.1/?serverSelectionTimeoutMS=soon'),
      MongoParseError,
      /.+/,
    )
  })

  it('never shows credentials in errors or inspect output', async () => {
    const port = await freePort()
    const secret = 'Sup3rS3cretPassw0rd'
    const withCredentials = new MongoClient(
      `mongodb://alice:${secret}@127.0.0.1:${port}/?serverSelectionTimeoutMS=300`,
    )
    expect(inspect(withCredentials, { depth: 10, showHidden: true })).not.toContain(secret)
    const error = await expectFailure(() => withCredentials.connect(), MongoServerSelectionError, /.+/)
    expect(inspect(error, { depth: 10 })).not.toContain(secret)
    const badOption = await expectFailure(
      () => MongoClient.connect(`mongodb://alice:${secret}@127.0.0.1:${port}/?maxPoolSize=many`),
      MongoParseError,
      /.+/,
    )
    expect(inspect(badOption, { depth: 10 })).not.toContain(secret)
    const viaOptions = new MongoClient(`mongodb://127.0.0.1:${port}/?serverSelectionTimeoutMS=300`, {
      auth: { username: 'bob', password: secret },
    })
    expect(inspect(await viaOptions.connect().catch((e: Error) => e), { depth: 10 })).not.toContain(secret)
  })

  it("leaves other clients' messages and stacks alone, whatever a client's password", async () => {
    // Short passwords that are substrings of the server's message and of the stack's file paths.
    const others = ['e', 'mongo', 'o', 'rumongo', 'redacted'].map(
      (password) => new MongoClient(`mongodb://app:${password}@127.0.0.1:1/`),
    )
    const error = (await expectFailure(
      () => collection.find({ $foo: 1 }).toArray(),
      MongoServerError,
      /unknown top level operator/,
    )) as MongoServerError
    const official = await OfficialClient.connect(uri)
    const reference = await official
      .db(dbName)
      .collection('items')
      .find({ $foo: 1 })
      .toArray()
      .catch((e: Error) => e)
    await official.close()
    expect(error.message).toBe((reference as Error).message)
    expect(error.stack).toContain(error.message)
    expect(error.stack).not.toContain('<redacted>')
    expect(others).toHaveLength(5)
  })

  it('keeps no password once its client is gone, so nothing grows with the number of clients', () => {
    const script = fileURLToPath(new URL('./fixtures/retained_password.mjs', import.meta.url))
    const entry = fileURLToPath(new URL('../dist/index.mjs', import.meta.url))
    const retained = execFileSync(process.execPath, [script, entry, 'tpKterceSdenia7eR'], {
      encoding: 'utf8',
    })
    expect(retained).toBe('false')
  })

  it('redacts the password of a connection string quoted in a native error message', async () => {
    // FerretDB repeats an unknown stage's name: here, a connection string with credentials.
    const error = await expectFailure(
      () => collection.aggregate([{ ['$mongodb://alice:Qu0tedS3cret@db.example.com/']: 1 }]).toArray(),
      MongoServerError,
      /mongodb:\/\/alice:<redacted>@db\.example\.com/,
    )
    expect(inspect(error, { depth: 10 })).not.toContain('Qu0tedS3cret')
  })

  it('sends the password to the server only in the authentication, never in an error', async () => {
    // A fake server records the PLAIN conversation, then refuses the login as a server does.
    const server = await startWireServer({
      answer: () => ({
        ok: 0,
        code: 18,
        codeName: 'AuthenticationFailed',
        errmsg: 'Authentication failed.',
      }),
    })
    try {
      const secret = 'L0ng?S3cret/with:every@char%'
      const query = 'authMechanism=PLAIN&authSource=%24external&serverSelectionTimeoutMS=2000'
      const viaUri = `mongodb://alice:${encodeURIComponent(secret)}@${server.address}/?${query}`
      const viaAuth = [
        `mongodb://${server.address}/?${query}`,
        { auth: { username: 'alice', password: secret } },
      ]
      for (const [url, options] of [[viaUri, {}], viaAuth] as const) {
        server.commands.length = 0
        const error = (await expectFailure(
          () => MongoClient.connect(url, options),
          MongoServerError,
          /Authentication failed/,
        )) as MongoServerError
        expect(error.code).toBe(18)
        const shown = inspect(error, { depth: 10, showHidden: true })
        expect(shown).not.toContain(secret)
        expect(shown).not.toContain(encodeURIComponent(secret))
        const saslStart = server.commands.find((command) => 'saslStart' in command)
        expect(Buffer.from(saslStart!.payload.buffer).toString()).toBe(`\0alice\0${secret}`)
        // The server's refusal, as the official driver reports it.
        const official = (await OfficialClient.connect(url, options).catch(
          (e: Error) => e,
        )) as MongoServerError
        expect(error.message).toBe(official.message)
        expect(error.codeName).toBe(official.codeName)
        expect(error.code).toBe(official.code)
        expect(JSON.stringify(error.errorResponse)).not.toContain(secret)
      }
    } finally {
      await server.stop()
    }
  })
})
