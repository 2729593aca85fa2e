// Bad input and failures surface as the official driver's typed errors, never a crash or a hang.
import { inspect } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MongoClient as OfficialClient } from 'mongodb'
import {
  ErrorCode,
  MongoClient,
  MongoCursorInUseError,
  MongoError,
  MongoInvalidArgumentError,
  MongoNotConnectedError,
  MongoParseError,
  MongoServerError,
  MongoServerSelectionError,
  type Collection,
} from 'rumongo'
// @ts-expect-error: a plain ESM script without types
import { freePort } from '../scripts/devdb.mjs'
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
      /does not support the find option "session"/,
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

  it('fails with MongoNotConnectedError after close, for new operations and open cursors', async () => {
    const closing = await MongoClient.connect(uri)
    const items = closing.db(dbName).collection('items')
    const open = items.find({}, { batchSize: 1 })
    expect(await open.next()).not.toBeNull()
    await closing.close()
    await expectFailure(() => items.find({}).toArray(), MongoNotConnectedError, /must be connected/)
    await expectFailure(() => items.countDocuments({}), MongoNotConnectedError, /must be connected/)
    await expectFailure(() => open.toArray(), MongoNotConnectedError, /must be connected/)
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

  it("redacts every one of a client's passwords from the errors of later operations", async () => {
    // A password in the connection string and another in `auth` (which wins): FerretDB accepts any
    // PLAIN login, and repeats an unknown pipeline stage's name in its error.
    const uriSecret = 'Ur1S3cretPassw0rd'
    const authSecret = 'Auth0pt1onS3cret'
    const url = new URL(uri)
    url.username = 'alice'
    url.password = uriSecret
    url.searchParams.set('authMechanism', 'PLAIN')
    url.searchParams.set('authSource', '$external')
    const withSecrets = await MongoClient.connect(url.href, {
      auth: { username: 'alice', password: authSecret },
    })
    try {
      const items = withSecrets.db(dbName).collection('items')
      expect(await items.countDocuments({})).toBe(3)
      for (const secret of [uriSecret, authSecret]) {
        const error = await expectFailure(
          () => items.aggregate([{ [`$${secret}`]: 1 }]).toArray(),
          MongoServerError,
          /<redacted>/,
        )
        expect(inspect(error, { depth: 10 })).not.toContain(secret)
        expect(JSON.stringify((error as MongoServerError).errorResponse)).not.toContain(secret)
      }
      const shown = inspect(withSecrets, { depth: 10, showHidden: true })
      expect(shown).not.toContain(uriSecret)
      expect(shown).not.toContain(authSecret)
    } finally {
      await withSecrets.close()
    }
  })
})
