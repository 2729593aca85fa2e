// Parity with the official driver on identical data: same values, same types, same order.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  Decimal128,
  Long,
  MongoClient as OfficialClient,
  ObjectId,
  type Collection as OfficialCollection,
  type Document,
} from 'mongodb'
import { MongoClient, type Collection } from 'rumongo'
import {
  BSON_OPTION_CASES,
  connectBoth,
  expectIdentical,
  firstDifference,
  uniqueDbName,
  uri,
  type Drivers,
} from './setup/helpers.js'
import { objectIdFor, orderDocuments, typedDocuments } from './setup/data.js'

const ORDER_COUNT = 10_500

let drivers: Drivers
let dbName: string
const official = (name: string): OfficialCollection => drivers.official.db(dbName).collection(name)
const rumongo = (name: string): Collection => drivers.rumongo.db(dbName).collection(name)

beforeAll(async () => {
  drivers = await connectBoth()
  dbName = uniqueDbName('parity')
  await official('typed').insertMany(typedDocuments())
  const orders = orderDocuments(ORDER_COUNT)
  for (let start = 0; start < orders.length; start += 2000) {
    await official('orders').insertMany(orders.slice(start, start + 2000))
  }
})

afterAll(async () => {
  await drivers.official.db(dbName).dropDatabase()
  await drivers.close()
})

/**
 * Asserts both drivers have the same outcome: identical results, or errors of the same class
 * with the same server code when the server refuses the query.
 */
async function expectSameOutcome<T>(run: (client: 'official' | 'rumongo') => Promise<T>): Promise<T> {
  const expected = await run('official').catch((error: Error) => error)
  const actual = await run('rumongo').catch((error: Error) => error)
  if (expected instanceof Error) {
    expect(actual).toBeInstanceOf(Error)
    expect((actual as Error).name).toBe(expected.name)
    if (typeof (expected as { code?: unknown }).code === 'number') {
      expect((actual as { code?: unknown }).code).toBe((expected as { code?: unknown }).code)
    }
  } else {
    expectIdentical(actual, expected)
  }
  return actual as T
}

/** Runs the same find through both drivers and asserts the same outcome. */
function expectSameFind(collection: string, filter: Document, options: Document = {}): Promise<Document[]> {
  return expectSameOutcome((client) =>
    client === 'official'
      ? official(collection).find(filter, options).toArray()
      : rumongo(collection).find(filter, options).toArray(),
  )
}

describe('the comparison helper itself', () => {
  it('sees type, key order and value differences', () => {
    expect(firstDifference({ a: 1 }, { a: 1 })).toBeUndefined()
    expect(firstDifference({ a: 1 }, { a: Long.fromNumber(1) })).toMatch(/type/)
    expect(firstDifference({ a: 1, b: 2 }, { b: 2, a: 1 })).toMatch(/keys/)
    expect(firstDifference({ a: { b: [1, 2] } }, { a: { b: [1, 3] } })).toMatch(/\$\.a\.b\.1/)
    expect(firstDifference(new ObjectId(), new ObjectId())).toMatch(/ObjectId/)
    expect(firstDifference(new Date(1), new Date(2))).toMatch(/date/)
  })
})

describe('find parity', () => {
  it('returns every stored BSON type exactly as the official driver does', async () => {
    const docs = await expectSameFind('typed', {}, { sort: { _id: 1 } })
    expect(docs).toHaveLength(24)
    const [first] = docs
    expect(first!._id).toBeInstanceOf(ObjectId)
    expect(first!.bigLong).toBeInstanceOf(Long)
    expect(typeof first!.smallLong).toBe('number')
    expect(first!.date).toBeInstanceOf(Date)
  })

  it('returns documents in natural order without a sort', async () => {
    await expectSameFind('typed', {})
  })

  it('handles an empty collection and a filter with no match', async () => {
    expect(await expectSameFind('does_not_exist', {})).toEqual([])
    expect(await expectSameFind('typed', { index: -1 })).toEqual([])
  })

  it.each([
    ['include', { name: 1, region: 1 }],
    ['exclude', { nested: 0, items: 0, mixed: 0 }],
    ['nested include', { 'nested.inner.level': 1, 'items.sku': 1 }],
    ['without _id', { _id: 0, index: 1 }],
    ['$slice', { tags: { $slice: 1 }, index: 1 }],
  ])('applies a projection (%s)', async (_, projection) => {
    await expectSameFind('typed', {}, { projection, sort: { index: 1 } })
  })

  it.each([
    ['ascending', { index: 1 }],
    ['descending', { index: -1 }],
    ['compound', { region: 1, index: -1 }],
    ['on a date', { date: -1 }],
    ['string form', 'index'],
    [
      'pair form',
      [
        ['region', 'desc'],
        ['index', 'asc'],
      ],
    ],
  ])('sorts (%s)', async (_, sort) => {
    await expectSameFind('typed', {}, { sort })
  })

  it('applies limit, skip, negative limit and a small batchSize', async () => {
    await expectSameFind('orders', {}, { sort: { n: 1 }, limit: 7 })
    await expectSameFind('orders', {}, { sort: { n: 1 }, skip: 10_490 })
    await expectSameFind('orders', {}, { sort: { n: 1 }, skip: 5, limit: 3 })
    expect(await expectSameFind('orders', {}, { sort: { n: 1 }, limit: -5 })).toHaveLength(5)
    await expectSameFind('orders', { region: 'eu' }, { sort: { n: 1 }, batchSize: 7, limit: 100 })
  })

  it('reads 10k+ documents over many getMores', async () => {
    const docs = await expectSameFind('orders', {}, { batchSize: 500 })
    expect(docs).toHaveLength(ORDER_COUNT)
  })

  it.each([
    ['$gt/$lt', { index: { $gt: 3, $lt: 12 } }],
    ['$in', { region: { $in: ['eu', 'apac'] } }],
    ['$nin', { region: { $nin: ['eu'] } }],
    ['$and', { $and: [{ flag: true }, { index: { $gte: 10 } }] }],
    ['$or', { $or: [{ region: 'us' }, { index: 0 }] }],
    ['$exists', { optional: { $exists: true } }],
    ['$regex', { name: { $regex: '^item 1' } }],
    ['RegExp value', { name: /^ITEM 2/i }],
    ['$elemMatch', { items: { $elemMatch: { sku: 'sku-3' } } }],
    ['ObjectId', { _id: objectIdFor(5) }],
    ['Date', { date: { $gte: new Date(Date.UTC(2024, 5, 1)) } }],
    ['Long', { bigLong: Long.fromString('9007199254740999') }],
    ['nested field', { 'nested.inner.level': 2, 'items.qty': { $gte: 3 } }],
    ['array contains', { tags: 'green' }],
  ])('filters with %s', async (_, filter) => {
    await expectSameFind('typed', filter, { sort: { index: 1 } })
  })

  it('treats a Decimal128 filter value the same way (result or error)', async () => {
    await expectSameFind('typed', { price: Decimal128.fromString('9.99') })
    // and the connection pool recovers if the server dropped the connection over it
    await expectSameFind('typed', { index: 1 })
  })

  it('accepts an ObjectId as the whole filter', async () => {
    const id = objectIdFor(3)
    expectIdentical(await rumongo('typed').find(id).toArray(), await official('typed').find(id).toArray())
  })
})

describe('find options', () => {
  it.each([
    ['hint by keys', { hint: { _id: 1 } }],
    ['hint by name', { hint: '_id_' }],
    ['maxTimeMS', { maxTimeMS: 5000 }],
    ['collation', { collation: { locale: 'en', strength: 2 } }],
    ['comment', { comment: 'parity' }],
    ['comment document', { comment: { request: 42 } }],
    ['let', { let: { threshold: 10 }, filter: { $expr: { $gt: ['$index', '$$threshold'] } } }],
    ['allowDiskUse', { allowDiskUse: true }],
    ['min/max with hint', { hint: { _id: 1 }, min: { _id: objectIdFor(3) }, max: { _id: objectIdFor(9) } }],
    ['returnKey', { returnKey: true, hint: { _id: 1 } }],
    ['showRecordId', { showRecordId: true }],
    ['readPreference mode', { readPreference: 'primaryPreferred' }],
    ['readConcern', { readConcern: { level: 'local' } }],
    ['noCursorTimeout', { noCursorTimeout: true }],
    ['singleBatch', { singleBatch: true, batchSize: 5 }],
    ['allowPartialResults', { allowPartialResults: true }],
  ])('honours %s like the official driver', async (_, { filter = {}, ...options }: Document) => {
    await expectSameFind('typed', filter, { ...options, sort: { _id: 1 } })
  })

  it('returns one batch for singleBatch without a limit', async () => {
    const docs = await expectSameFind('orders', {}, { singleBatch: true, batchSize: 25 })
    expect(docs).toHaveLength(25)
  })
})

describe('BSON options', () => {
  it.each([...BSON_OPTION_CASES, ['raw: true', { raw: true }]])(
    'honours %s per operation',
    async (_, options) => {
      await expectSameFind('typed', {}, { ...options, sort: { _id: 1 } })
    },
  )

  it('inherits BSON options from the client, db and collection', async () => {
    const client = new MongoClient(uri, { useBigInt64: true })
    const reference = new OfficialClient(uri, { useBigInt64: true })
    const levels: [string, Document | undefined, Document | undefined][] = [
      ['client', undefined, undefined],
      ['db', { promoteLongs: false, useBigInt64: false }, undefined],
      ['collection', { useBigInt64: false }, { promoteValues: false }],
    ]
    try {
      for (const [, dbOptions, collectionOptions] of levels) {
        const docs = await expectSameOutcome((driver) =>
          (driver === 'official' ? reference : client)
            .db(dbName, dbOptions)
            .collection('typed', collectionOptions)
            .find({}, { sort: { _id: 1 } })
            .toArray(),
        )
        expect(docs).toHaveLength(24)
      }
      expect(typeof (await client.db(dbName).collection('typed').findOne({}))!.bigLong).toBe('bigint')
    } finally {
      await Promise.all([client.close(), reference.close()])
    }
  })
})

describe('cursor forms', () => {
  it('is thenable, chainable and iterable like the official cursor', async () => {
    const expected = await official('orders').find({ status: 'paid' }).sort({ n: -1 }).limit(50).toArray()
    expectIdentical(
      await rumongo('orders').find({ status: 'paid' }, { sort: { n: -1 }, limit: 50 }),
      expected,
    )
    expectIdentical(
      await rumongo('orders').find({ status: 'paid' }).sort({ n: -1 }).limit(50).toArray(),
      expected,
    )
    const iterated: Document[] = []
    for await (const doc of rumongo('orders').find({ status: 'paid' }).sort('n', -1).limit(50).batchSize(9)) {
      iterated.push(doc)
    }
    expectIdentical(iterated, expected)
  })

  it('supports skip, project and map like the official cursor', async () => {
    const build = <
      C extends { sort(s: Document): C; skip(n: number): C; limit(n: number): C; project(p: Document): C },
    >(
      cursor: C,
    ) => cursor.sort({ n: 1 }).skip(20).limit(30).project({ total: 1, region: 1 })
    const expected = await build(official('orders').find({}))
      .map((doc) => ({ ...doc, twice: doc.total * 2 }))
      .toArray()
    const actual = await build(rumongo('orders').find({}))
      .map((doc) => ({ ...doc, twice: doc.total * 2 }))
      .toArray()
    expectIdentical(actual, expected)
  })

  it('reads with next/hasNext/tryNext and reports exhaustion the same way', async () => {
    const options = { sort: { n: 1 }, limit: 3, batchSize: 2 }
    const ours = rumongo('orders').find({}, options)
    const theirs = official('orders').find({}, options)
    for (let step = 0; step < 4; step++) {
      expect(await ours.hasNext()).toBe(await theirs.hasNext())
      expectIdentical(await ours.next(), await theirs.next())
    }
    expectIdentical(await ours.tryNext(), await theirs.tryNext())
    expect(ours.closed).toBe(true)
  })

  it('closes early on break and can be closed explicitly', async () => {
    // Closed and killed, 5 documents left buffered: `closed` only once they are taken, as the
    // official cursor's.
    const states = []
    for (const cursor of [
      rumongo('orders').find({}, { batchSize: 10 }),
      official('orders').find({}, { batchSize: 10 }),
    ]) {
      let seen = 0
      for await (const _ of cursor) if (++seen === 15) break
      states.push([seen, cursor.closed, cursor.killed, cursor.bufferedCount()])
    }
    expect(states).toEqual([
      [15, false, true, 5],
      [15, false, true, 5],
    ])
    const explicit = rumongo('orders').find({}, { batchSize: 10 })
    await explicit.next()
    await explicit.close()
    await expect(explicit.next()).rejects.toMatchObject({ name: 'MongoCursorExhaustedError' })
    expect(await explicit.toArray()).toEqual([])
  })

  it('streams documents through a Node Readable', async () => {
    const streamed: Document[] = []
    for await (const doc of rumongo('orders')
      .find({ region: 'us' }, { sort: { n: 1 }, limit: 40 })
      .stream()) {
      streamed.push(doc)
    }
    expectIdentical(
      streamed,
      await official('orders')
        .find({ region: 'us' }, { sort: { n: 1 }, limit: 40 })
        .toArray(),
    )
  })
})

describe('findOne, counts, distinct, aggregate', () => {
  it('findOne matches, including no match and an ObjectId filter', async () => {
    for (const filter of [{ index: 7 }, { index: -1 }, objectIdFor(9), {}]) {
      expectIdentical(
        await rumongo('typed').findOne(filter as Document),
        await official('typed').findOne(filter as Document),
      )
    }
    expectIdentical(
      await rumongo('typed').findOne({}, { projection: { name: 1 }, sort: { index: -1 } }),
      await official('typed').findOne({}, { projection: { name: 1 }, sort: { index: -1 } }),
    )
  })

  it('counts like the official driver', async () => {
    expect(await rumongo('orders').countDocuments({ status: 'paid' })).toBe(
      await official('orders').countDocuments({ status: 'paid' }),
    )
    expect(await rumongo('orders').countDocuments({}, { skip: 10, limit: 100 })).toBe(100)
    expect(await rumongo('orders').estimatedDocumentCount()).toBe(
      await official('orders').estimatedDocumentCount(),
    )
    expect(await rumongo('does_not_exist').countDocuments()).toBe(0)
  })

  it('returns distinct values with their types', async () => {
    for (const [key, filter] of [
      ['region', {}],
      ['region', { flag: true }],
      ['int32', {}],
      ['bigLong', {}],
      ['date', { index: { $lt: 4 } }],
    ] as const) {
      const expected = await official('typed').distinct(key, filter)
      const actual = await rumongo('typed').distinct(key, filter)
      expectIdentical(actual, expected)
    }
  })

  it('runs read pipelines with the same results', async () => {
    const pipelines: Document[][] = [
      [
        { $match: { status: 'paid' } },
        { $group: { _id: '$region', n: { $sum: 1 }, total: { $sum: '$total' } } },
        { $sort: { _id: 1 } },
      ],
      [
        { $match: { n: { $lt: 2000 } } },
        { $sort: { n: -1 } },
        { $skip: 3 },
        { $limit: 1500 },
        { $project: { n: 1, at: 1 } },
      ],
      [{ $sort: { n: 1 } }],
    ]
    for (const pipeline of pipelines) {
      expectIdentical(
        await rumongo('orders').aggregate(pipeline, { batchSize: 300 }),
        await official('orders').aggregate(pipeline, { batchSize: 300 }).toArray(),
      )
    }
    const chained = await rumongo('orders')
      .aggregate()
      .match({ region: 'eu' })
      .sort({ n: 1 })
      .limit(5)
      .project({ n: 1 })
    expectIdentical(
      chained,
      await official('orders')
        .aggregate()
        .match({ region: 'eu' })
        .sort({ n: 1 })
        .limit(5)
        .project({ n: 1 })
        .toArray(),
    )
  })
})
