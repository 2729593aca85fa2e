// Health checks and introspection every service runs: db.command, db.admin(), listCollections,
// listIndexes, stats, explain, db.aggregate, count. Same results as the official driver on the
// embedded server; write commands refused with a clear error.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MongoClient as OfficialClient, type Db as OfficialDb } from 'mongodb'
import {
  ExplainVerbosity,
  ListCollectionsCursor,
  ListIndexesCursor,
  MongoClient,
  MongoInvalidArgumentError,
  MongoServerError,
  type Db,
} from 'rumongo'
import { expectIdentical, uniqueDbName, uri } from './setup/helpers.js'

const dbName = uniqueDbName('commands')
let official: OfficialClient
let rumongo: MongoClient
let officialDb: OfficialDb
let db: Db

beforeAll(async () => {
  official = await OfficialClient.connect(uri)
  rumongo = await MongoClient.connect(uri)
  officialDb = official.db(dbName)
  db = rumongo.db(dbName)
  await officialDb
    .collection('items')
    .insertMany(Array.from({ length: 30 }, (_, i) => ({ n: i, tag: i % 3 })))
  await officialDb.collection('items').createIndex({ n: 1 })
  await officialDb.collection('items').createIndex({ tag: 1, n: -1 }, { name: 'by_tag' })
  await officialDb.collection('other').insertOne({ a: 1 })
})

afterAll(async () => {
  await officialDb?.dropDatabase()
  await Promise.all([official?.close(), rumongo?.close()])
})

/** Both results, or both errors' class, message and code. */
async function both<T>(run: (db: OfficialDb | Db, driver: 'official' | 'rumongo') => Promise<T>) {
  const settle = (promise: Promise<T>) =>
    promise.then(
      (value) => ({ value }),
      (error) => ({ error: error.name, message: error.message, code: error.code }),
    )
  const expected = await settle(run(officialDb, 'official'))
  const actual = await settle(run(db, 'rumongo'))
  return { expected, actual }
}

async function expectParity<T>(run: (db: OfficialDb | Db) => Promise<T>) {
  const { expected, actual } = await both(run)
  expectIdentical(actual, expected)
  return actual
}

describe('db.command and db.admin()', () => {
  it.each([
    ['ping', { ping: 1 }],
    ['dbStats', { dbStats: 1 }],
    ['count', { count: 'items', query: { tag: 1 } }],
    ['distinct', { distinct: 'items', key: 'tag' }],
    ['listCollections nameOnly', { listCollections: 1, nameOnly: true, filter: { name: 'items' } }],
    ['an unknown command (server error)', { noSuchCommand: 1 }],
  ])('runs %s like the official driver', async (name, command) => {
    if (name.startsWith('an unknown')) {
      // Not a read the allow-list knows: refused before the server sees it.
      await expect(db.command(command)).rejects.toThrow(MongoInvalidArgumentError)
      return
    }
    await expectParity((target) => target.command(command))
  })

  it('decodes the reply with the BSON options given to the command', async () => {
    await expectParity((target) => target.command({ count: 'items' }, { promoteValues: false }))
  })

  it('reports a server error with the official class, code and errorResponse', async () => {
    const { expected, actual } = await both((target) =>
      target.command({ listCollections: 1, filter: 5 }).catch((error) => {
        throw Object.assign(new Error(error.message), {
          name: `${error.name}:${error.codeName}:${JSON.stringify(error.errorResponse)}`,
          code: error.code,
        })
      }),
    )
    expect(actual).toEqual(expected)
    expect(actual).toHaveProperty('code', 14)
    await expect(db.command({ listCollections: 1, filter: 5 })).rejects.toBeInstanceOf(MongoServerError)
  })

  it.each([
    ['insert', { insert: 'items', documents: [{ n: 99 }] }],
    ['update', { update: 'items', updates: [{ q: {}, u: { $set: { x: 1 } } }] }],
    ['delete', { delete: 'items', deletes: [{ q: {}, limit: 0 }] }],
    ['findAndModify', { findAndModify: 'items', query: {}, remove: true }],
    ['drop', { drop: 'items' }],
    ['dropDatabase', { dropDatabase: 1 }],
    ['create', { create: 'created' }],
    ['createIndexes', { createIndexes: 'items', indexes: [{ key: { x: 1 }, name: 'x_1' }] }],
    ['an aggregate with $out', { aggregate: 'items', pipeline: [{ $out: 'copy' }], cursor: {} }],
    ['an explain of a delete', { explain: { delete: 'items', deletes: [{ q: {}, limit: 0 }] } }],
  ])('refuses the write command %s, naming the official driver, and writes nothing', async (_, command) => {
    const error = await db.command(command).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(MongoInvalidArgumentError)
    expect((error as Error).message).toMatch(
      /rumongo runs read-only commands: .* run it with the official driver/,
    )
    expect(await officialDb.collection('items').countDocuments()).toBe(30)
    expect(
      (await officialDb.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).sort(),
    ).toEqual(['items', 'other'])
  })

  it.each(['ping', 'buildInfo', 'serverStatus', 'listDatabases'] as const)(
    'admin().%s answers like the official driver',
    async (method) => {
      const run = (target: OfficialDb | Db) =>
        (target.admin() as any)[method]() as Promise<Record<string, unknown>>
      const { expected, actual } = await both(run)
      if (method === 'ping') {
        expectIdentical(actual, expected)
      } else if (method === 'buildInfo') {
        // FerretDB lists its features in map order, which changes from call to call.
        for (const result of [actual, expected] as any[]) delete result.value.ferretdbFeatures
        expectIdentical(actual, expected)
      } else if (method === 'listDatabases') {
        const names = (result: any) => result.value.databases.map((d: { name: string }) => d.name)
        expect(names(actual)).toContain(dbName)
        expect(names(actual)).toEqual(names(expected))
      } else {
        // serverStatus holds clocks and counters: the same fields, not the same values.
        expect(Object.keys((actual as any).value)).toEqual(Object.keys((expected as any).value))
      }
    },
  )
})

describe('listCollections, collections, stats', () => {
  it.each([
    ['no filter', {}, {}],
    ['a filter', { name: 'items' }, {}],
    ['nameOnly', {}, { nameOnly: true }],
    ['a batchSize of 1', {}, { batchSize: 1 }],
  ])('listCollections with %s returns what the official driver returns', async (_, filter, options) => {
    const sorted = (list: any[]) => list.sort((a, b) => a.name.localeCompare(b.name))
    await expectParity(async (target) => sorted(await target.listCollections(filter, options).toArray()))
  })

  it('is a cursor: next, for await, map, close', async () => {
    const cursor = db.listCollections({}, { nameOnly: true })
    expect(cursor).toBeInstanceOf(ListCollectionsCursor)
    const first = await cursor.next()
    expect(first).toHaveProperty('name')
    await cursor.close()
    const names: string[] = []
    for await (const { name } of db.listCollections({}, { nameOnly: true })) names.push(name)
    expect(names.sort()).toEqual(['items', 'other'])
    const mapped = await db
      .listCollections({ name: 'other' })
      .map((c) => c.name)
      .toArray()
    expect(mapped).toEqual(['other'])
  })

  it('collections() returns collection handles that read', async () => {
    const collections = await db.collections()
    expect(collections.map((c) => c.collectionName).sort()).toEqual(
      (await officialDb.collections()).map((c) => c.collectionName).sort(),
    )
    const items = collections.find((c) => c.collectionName === 'items')!
    expect(await items.countDocuments()).toBe(30)
  })

  it('stats() returns what the official driver returns', async () => {
    await expectParity((target) => target.stats())
    await expectParity((target) => target.stats({ scale: 1024 }))
  })
})

describe('more introspection', () => {
  it.each([
    ['collection.options()', (target: OfficialDb | Db) => (target.collection('items') as any).options()],
    ['collection.isCapped()', (target: OfficialDb | Db) => (target.collection('items') as any).isCapped()],
    [
      'options() of a missing collection',
      (target: OfficialDb | Db) => (target.collection('nope') as any).options(),
    ],
    [
      'db.runCursorCommand(listIndexes)',
      (target: OfficialDb | Db) => target.runCursorCommand({ listIndexes: 'items', cursor: {} }).toArray(),
    ],
    [
      'db.runCursorCommand(find) with a batchSize',
      (target: OfficialDb | Db) =>
        target
          .runCursorCommand(
            { find: 'items', filter: { tag: 0 }, sort: { n: 1 }, batchSize: 2 },
            { batchSize: 3 },
          )
          .toArray(),
    ],
    [
      'aggregate().batchSize(2).maxTimeMS(5000)',
      (target: OfficialDb | Db) =>
        (target.collection('items') as any)
          .aggregate([{ $sort: { n: 1 } }])
          .batchSize(2)
          .maxTimeMS(5000)
          .toArray(),
    ],
    [
      'db.namespace and secondaryOk',
      async (target: OfficialDb | Db) => [target.namespace, target.secondaryOk],
    ],
  ])('%s answers like the official driver', async (_, run) => {
    await expectParity(run)
  })

  it('runCursorCommand refuses a write command', () => {
    expect(() => db.runCursorCommand({ delete: 'items', deletes: [] })).toThrow(MongoInvalidArgumentError)
  })
})

describe('indexes', () => {
  const items = (target: OfficialDb | Db) => target.collection('items') as any

  it('listIndexes is a cursor with the official results', async () => {
    expect(db.collection('items').listIndexes()).toBeInstanceOf(ListIndexesCursor)
    await expectParity((target) => items(target).listIndexes().toArray())
    await expectParity((target) => items(target).listIndexes({ batchSize: 1 }).toArray())
  })

  it.each([
    ['indexes()', (target: OfficialDb | Db) => items(target).indexes()],
    ['indexes({ full: false })', (target: OfficialDb | Db) => items(target).indexes({ full: false })],
    ['indexInformation()', (target: OfficialDb | Db) => items(target).indexInformation()],
    [
      'indexInformation({ full: true })',
      (target: OfficialDb | Db) => items(target).indexInformation({ full: true }),
    ],
    ['db.indexInformation()', (target: OfficialDb | Db) => target.indexInformation('items')],
    ['indexExists(one)', (target: OfficialDb | Db) => items(target).indexExists('by_tag')],
    ['indexExists(some missing)', (target: OfficialDb | Db) => items(target).indexExists(['n_1', 'nope'])],
    ['indexExists(all)', (target: OfficialDb | Db) => items(target).indexExists(['n_1', 'by_tag', '_id_'])],
    [
      'listIndexes of a missing collection',
      (target: OfficialDb | Db) => target.collection('missing').listIndexes().toArray(),
    ],
  ])('%s answers like the official driver', async (_, run) => {
    await expectParity(run)
  })
})

describe('explain, db.aggregate, count', () => {
  const items = (target: OfficialDb | Db) => target.collection('items') as any

  it.each([
    ['no verbosity', undefined],
    ['true', true],
    ['false', false],
    ['queryPlanner', ExplainVerbosity.queryPlanner],
    ['executionStats', ExplainVerbosity.executionStats],
    ['{ verbosity }', { verbosity: 'queryPlanner' }],
  ])('find().explain(%s) returns the official explain', async (_, verbosity) => {
    await expectParity((target) =>
      items(target)
        .find({ tag: 1 }, { sort: { n: -1 }, limit: -5, projection: { n: 1 } })
        .explain(verbosity),
    )
  })

  it.each([
    ['find', (target: OfficialDb | Db) => items(target).find({ tag: 1 }, { explain: true }).toArray()],
    ['findOne', (target: OfficialDb | Db) => items(target).findOne({ tag: 1 }, { explain: 'queryPlanner' })],
    [
      'aggregate',
      (target: OfficialDb | Db) =>
        items(target)
          .aggregate([{ $match: { tag: 1 } }], { explain: { verbosity: 'queryPlanner' } })
          .toArray(),
    ],
  ])('the explain option makes %s yield the official explain', async (_, run) => {
    const result = await expectParity(run)
    expect(JSON.stringify(result)).toContain('queryPlanner')
  })

  it('refuses the explain option on JSON output', async () => {
    await expect(db.collection('items').findJson({}, { explain: true })).rejects.toThrow(
      /explain does not apply to JSON output/,
    )
  })

  it('aggregate().explain() returns the official explain', async () => {
    await expectParity((target) =>
      items(target)
        .aggregate([{ $match: { tag: 2 } }, { $group: { _id: '$tag', total: { $sum: '$n' } } }])
        .explain('queryPlanner'),
    )
  })

  it('db.aggregate() runs a database-level read pipeline like the official driver', async () => {
    await expectParity((target) => target.aggregate([{ $documents: [{ a: 1 }] }]).toArray())
  })

  it.each([
    ['no filter', {}, {}],
    ['a filter', { tag: 1 }, {}],
    ['skip and limit', { tag: { $gte: 1 } }, { skip: 2, limit: 5 }],
  ])('the deprecated count() with %s counts like the official driver', async (_, filter, options) => {
    await expectParity((target) => items(target).count(filter, options))
  })
})
