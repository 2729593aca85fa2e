// The benchmark replay server (bench/replay/): both drivers connect to it unmodified and read exactly
// the generated documents, with mongod's cursor rules.
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  BSON,
  Double,
  Int32,
  Long,
  MongoClient as OfficialClient,
  ObjectId,
  type CommandStartedEvent,
  type Document,
} from 'mongodb'
import { Model, MongoClient } from 'rumongo'
// @ts-expect-error: a plain ESM script without types
import { startReplay } from '../scripts/replay.mjs'
import { expectIdentical } from './setup/helpers.js'

interface Replay {
  uri: string
  port: number
  stop(): Promise<void>
}

/** Documents per generated collection: small enough to read to the end, several pools long. */
const DOCS = 30_000
/** Distinct documents per dataset (bench/replay/src/generate.rs): document i repeats i % POOL_SIZE. */
const POOL_SIZE = 4200
const MAX_BATCH_BYTES = 16 * 1024 * 1024

let server: Replay
let official: OfficialClient
let rumongo: MongoClient
const started: CommandStartedEvent[] = []

beforeAll(async () => {
  server = await startReplay({ docs: DOCS })
  official = await OfficialClient.connect(server.uri, { monitorCommands: true })
  official.on('commandStarted', (event) => started.push(event))
  rumongo = await MongoClient.connect(server.uri)
}, 600_000) // the first run builds the server

afterAll(async () => {
  await Promise.all([official?.close(), rumongo?.close()])
  await server?.stop()
})

const bench = () => official.db('bench')
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)
const names = (prefix: string, count: number) =>
  range(1, count).map((i) => `${prefix}${String(i).padStart(2, '0')}`)
/** The `_id` of document `index`: 65000000, then the index as 16 hex digits. */
const idFor = (index: number) => `65000000${index.toString(16).padStart(16, '0')}`
const chars = (text: string) => [...text].length
const keys = (value: unknown) => Object.keys(value as object).join(',')

/** The names of the commands the official driver sent while `run` ran. */
async function commandsDuring(run: () => Promise<unknown>): Promise<string[]> {
  started.length = 0
  await run()
  return started.map((event) => event.commandName)
}

/** The problems of `docs` as the documents `first..` of a dataset, checked by `check`; [] if none. */
function problems(
  docs: Document[],
  first: number,
  check: (doc: Document, index: number) => string | undefined,
) {
  const found: string[] = []
  docs.forEach((doc, i) => {
    const head =
      doc._id instanceof ObjectId && doc._id.toHexString() === idFor(first + i) && doc.n === first + i
        ? undefined
        : `_id/n ${String(doc._id)}/${doc.n}`
    const problem = head ?? check(doc, first + i)
    if (problem && found.length < 5) found.push(`doc ${first + i}: ${problem}`)
  })
  return found
}

const WIDE45_FIELDS = ['_id', 'n', ...names('s', 14), ...names('i', 15), ...names('d', 14)].join(',')

function checkWide45(doc: Document, index: number): string | undefined {
  if (keys(doc) !== WIDE45_FIELDS) return `fields ${keys(doc)}`
  for (const field of names('s', 14)) {
    const value = doc[field]
    if (typeof value !== 'string' || chars(value) < 8 || chars(value) > 40) return `${field} ${value}`
    // Every 7th document has a 2- or 3-byte UTF-8 character in s03, the rest are ASCII.
    if (/[^\x00-\x7f]/.test(value) !== (field === 's03' && index % 7 === 0)) return `${field} ${value}`
  }
  for (const field of names('i', 15)) if (!Number.isInteger(doc[field])) return `${field} ${doc[field]}`
  for (const field of names('d', 14)) {
    if (typeof doc[field] !== 'number' || Number.isInteger(doc[field])) return `${field} ${doc[field]}`
  }
  return undefined
}

const TWEET_FIELDS = '_id,n,id_str,text,created_at,lang,retweet_count,favorite_count,user,entities,geo'

function checkTweet(doc: Document): string | undefined {
  if (keys(doc) !== TWEET_FIELDS) return `fields ${keys(doc)}`
  if (typeof doc.id_str !== 'string' || !/^\d+$/.test(doc.id_str)) return `id_str ${doc.id_str}`
  if (chars(doc.text) < 60 || chars(doc.text) > 140) return `text ${doc.text}`
  if (!(doc.created_at instanceof Date) || typeof doc.lang !== 'string') return 'created_at/lang'
  if (!Number.isInteger(doc.retweet_count) || !Number.isInteger(doc.favorite_count)) return 'counts'
  const { user, entities } = doc
  if (keys(user) !== 'id,name,screen_name,followers_count,verified,location') return `user ${keys(user)}`
  // Above 2^53, so the official driver returns a Long.
  if (!(user.id instanceof Long) || user.id.lessThan(Long.fromNumber(2 ** 53))) return `user.id ${user.id}`
  if (typeof user.name !== 'string' || typeof user.screen_name !== 'string') return 'user names'
  if (!Number.isInteger(user.followers_count) || typeof user.verified !== 'boolean') return 'user numbers'
  if (user.location !== null && typeof user.location !== 'string') return `user.location ${user.location}`
  if (keys(entities) !== 'hashtags,urls,user_mentions') return `entities ${keys(entities)}`
  const { hashtags, urls, user_mentions: mentions } = entities
  if (hashtags.length > 3 || urls.length > 2 || mentions.length > 2) return 'entity counts'
  for (const tag of hashtags) {
    if (keys(tag) !== 'text,indices' || tag.indices.length !== 2) return `hashtag ${keys(tag)}`
    if (!tag.indices.every(Number.isInteger)) return `hashtag indices ${tag.indices}`
  }
  for (const url of urls) if (keys(url) !== 'url,expanded_url') return `url ${keys(url)}`
  for (const mention of mentions) {
    // An Int64 below 2^53: the official driver returns a number.
    if (keys(mention) !== 'screen_name,id' || !Number.isInteger(mention.id)) return `mention ${keys(mention)}`
  }
  return doc.geo === null ? undefined : `geo ${doc.geo}`
}

function checkOrder(doc: Document, index: number): string | undefined {
  if (keys(doc) !== '_id,n,status,region,total,at,customer') return `fields ${keys(doc)}`
  if (doc.status !== ['paid', 'pending', 'refunded'][index % 3]) return `status ${doc.status}`
  if (doc.region !== ['eu', 'us', 'apac', 'latam'][index % 4]) return `region ${doc.region}`
  if (typeof doc.total !== 'number' || Number.isInteger(doc.total)) return `total ${doc.total}`
  if (!(doc.at instanceof Date)) return `at ${doc.at}`
  const { customer } = doc
  if (keys(customer) !== 'name,tier' || typeof customer.name !== 'string') return `customer ${keys(customer)}`
  return [1, 2, 3, 4].includes(customer.tier) ? undefined : `tier ${customer.tier}`
}

const CHECKS = { wide45: checkWide45, tweets: checkTweet, orders: checkOrder }
const DATASETS = Object.keys(CHECKS) as (keyof typeof CHECKS)[]

/** `doc` without the two per-index fields, to compare documents one pool apart. */
const pooled = (doc: Document) => ({ ...doc, _id: null, n: null })

describe('generated datasets through the official driver', () => {
  for (const name of DATASETS) {
    it(`${name}: 1000 documents as specified`, async () => {
      const docs = await bench().collection(name).find({}, { limit: 1000 }).toArray()
      expect(docs).toHaveLength(1000)
      expect(problems(docs, 0, CHECKS[name])).toEqual([])
    })
  }

  it('wide45: 25,000 documents over 24 getMores, deterministic, repeating every pool', async () => {
    const read = () => bench().collection('wide45').find({}, { limit: 25_000, batchSize: 1000 }).toArray()
    let docs: Document[] = []
    const commands = await commandsDuring(async () => (docs = await read()))
    expect(commands).toEqual(['find', ...Array(24).fill('getMore')])
    expect(docs).toHaveLength(25_000)
    expect(problems(docs, 0, checkWide45)).toEqual([])
    expectIdentical(await read(), docs)
    for (const i of [0, 1, 7, 4199, 12_345]) expectIdentical(pooled(docs[i + POOL_SIZE]!), pooled(docs[i]!))
    expect(docs[1]!.s01).not.toBe(docs[0]!.s01)
  })

  it('tweets and orders: 25,000 documents each, as specified', async () => {
    for (const name of ['tweets', 'orders'] as const) {
      const docs = await bench().collection(name).find({}, { limit: 25_000, batchSize: 1000 }).toArray()
      expect(docs).toHaveLength(25_000)
      expect(problems(docs, 0, CHECKS[name])).toEqual([])
    }
  })

  it('the whole collection, ending with cursor id 0', async () => {
    const docs = await bench().collection('orders').find().toArray()
    expect(docs).toHaveLength(DOCS)
    expect(problems(docs, 0, checkOrder)).toEqual([])
  })
})

describe('parity of rumongo with the official driver', () => {
  for (const name of DATASETS) {
    it(`${name}: the same documents`, async () => {
      const expected = await bench().collection(name).find({}, { limit: 1000 }).toArray()
      const actual = await rumongo.db('bench').collection(name).find({}, { limit: 1000 })
      expectIdentical(actual, expected)
    })
  }

  it('the same documents across getMores and with a projection', async () => {
    const options = { skip: 3000, limit: 6000, batchSize: 1000 }
    const expected = await bench().collection('tweets').find({}, options).toArray()
    expectIdentical(await rumongo.db('bench').collection('tweets').find({}, options), expected)
    expect(expected[0]!.n).toBe(3000)
    const projected = { ...options, projection: { user: 1, n: 1, _id: 0 } }
    expectIdentical(
      await rumongo.db('bench').collection('tweets').find({}, projected),
      await bench().collection('tweets').find({}, projected).toArray(),
    )
  })

  it('the same counts', async () => {
    expect(await rumongo.db('bench').collection('wide45').estimatedDocumentCount()).toBe(DOCS)
    expect(await bench().collection('wide45').estimatedDocumentCount()).toBe(DOCS)
  })
})

describe('cursor options', () => {
  const wide45 = () => bench().collection('wide45')
  const ns = (docs: Document[]) => docs.map((doc) => doc.n)

  it('limit and skip', async () => {
    expect(ns(await wide45().find({}, { limit: 5 }).toArray())).toEqual([0, 1, 2, 3, 4])
    expect(ns(await wide45().find({}, { skip: 100, limit: 3 }).toArray())).toEqual([100, 101, 102])
    expect(
      ns(
        await wide45()
          .find({}, { skip: DOCS - 3 })
          .toArray(),
      ),
    ).toEqual([DOCS - 3, DOCS - 2, DOCS - 1])
    expect(
      await wide45()
        .find({}, { skip: DOCS + 5 })
        .toArray(),
    ).toEqual([])
    expect(
      ns(
        await wide45()
          .find({}, { sort: { _id: 1 }, limit: 2 })
          .toArray(),
      ),
    ).toEqual([0, 1])
  })

  it('a negative limit or singleBatch: one batch, cursor closed', async () => {
    let docs: Document[] = []
    expect(
      await commandsDuring(async () => (docs = await wide45().find({}, { limit: -50 }).toArray())),
    ).toEqual(['find'])
    expect(ns(docs)).toEqual(range(0, 49))
    // One batch is at most the default 101 documents, as mongod does.
    const reply = await bench().command({ find: 'orders', limit: 150, singleBatch: true })
    expect(reply.cursor.firstBatch).toHaveLength(101)
    expect(reply.cursor.id).toBe(0)
    expect(reply.cursor.ns).toBe('bench.orders')
  })

  it('batchSize: default 101, 0 for an empty first batch, on getMore too', async () => {
    const first = await bench().command({ find: 'orders' })
    expect(first.cursor.firstBatch).toHaveLength(101)
    expect(first.cursor.id).not.toBe(0)
    const empty = await bench().command({ find: 'orders', batchSize: 0, skip: 10 })
    expect(empty.cursor.firstBatch).toEqual([])
    const id = Long.fromValue(empty.cursor.id)
    expect(id.isZero()).toBe(false)
    const next = await bench().command({ getMore: id, collection: 'orders', batchSize: 7 })
    expect(ns(next.cursor.nextBatch)).toEqual(range(10, 16))
    expect(Long.fromValue(next.cursor.id).equals(id)).toBe(true)
    const killed = await bench().command({
      killCursors: 'orders',
      cursors: [id, Long.fromValue(first.cursor.id), Long.fromNumber(987_654_321)],
    })
    expect(killed.cursorsKilled.map(Number)).toEqual([id.toNumber(), Number(first.cursor.id)])
    expect(killed.cursorsNotFound.map(Number)).toEqual([987_654_321])
  })

  it('a getMore without batchSize fills 16 MiB of documents, then the next one goes on', async () => {
    const first = await bench().command({ find: 'wide45', batchSize: 1 })
    const id = Long.fromValue(first.cursor.id)
    const batch: Document[] = (await bench().command({ getMore: id, collection: 'wide45' })).cursor.nextBatch
    const sizes = batch.map((doc) => BSON.calculateObjectSize(doc))
    const bytes = sizes.reduce((sum, size) => sum + size, 0)
    expect(batch.length).toBeLessThan(DOCS - 1)
    expect(bytes).toBeLessThanOrEqual(MAX_BATCH_BYTES)
    // Full: the batch spans every pooled document, so the next one is no larger than the largest.
    expect(bytes + Math.max(...sizes)).toBeGreaterThan(MAX_BATCH_BYTES)
    expect(ns(batch)).toEqual(range(1, batch.length))
    const rest = await bench().command({ getMore: id, collection: 'wide45' })
    expect(rest.cursor.nextBatch[0].n).toBe(batch.length + 1)
    expect(rest.cursor.nextBatch.at(-1).n).toBe(DOCS - 1)
    expect(rest.cursor.id).toBe(0)
  })

  it('projection: included top-level fields, in document order, and _id: 0', async () => {
    const [full] = await wide45().find({}, { skip: 9000, limit: 1 }).toArray()
    const [some] = await wide45()
      .find({}, { skip: 9000, limit: 1, projection: { i01: 1, s01: 1 } })
      .toArray()
    expect(some).toEqual({ _id: full!._id, s01: full!.s01, i01: full!.i01 })
    expect(keys(some)).toBe('_id,s01,i01')
    const [noId] = await wide45()
      .find({}, { skip: 9000, limit: 1, projection: { n: 1, d14: 1, _id: 0 } })
      .toArray()
    expect(noId).toEqual({ n: 9000, d14: full!.d14 })
    const [allButId] = await wide45()
      .find({}, { skip: 9000, limit: 1, projection: { _id: 0 } })
      .toArray()
    expect(allButId).toEqual({ ...full, _id: undefined })
    expect(keys(allButId)).toBe(WIDE45_FIELDS.replace('_id,', ''))
    const docs = await wide45()
      .find({}, { limit: 9000, projection: { n: 1 } })
      .toArray()
    expect(problems(docs, 0, (doc) => (keys(doc) === '_id,n' ? undefined : keys(doc)))).toEqual([])
  })

  it('aggregate: $match {}, $skip, $limit, $project', async () => {
    const pipeline = [{ $match: {} }, { $skip: 10 }, { $limit: 5 }, { $project: { n: 1, _id: 0 } }]
    expect(await bench().collection('orders').aggregate(pipeline).toArray()).toEqual(
      range(10, 14).map((n) => ({ n })),
    )
    const limitThenSkip = [{ $limit: 3 }, { $skip: 1 }]
    expect(ns(await bench().collection('orders').aggregate(limitThenSkip).toArray())).toEqual([1, 2])
    const all = await bench().collection('orders').aggregate([], { batchSize: 5000 }).toArray()
    expect(all).toHaveLength(DOCS)
    expect(problems(all, 0, checkOrder)).toEqual([])
  })

  it('listCollections and estimatedDocumentCount', async () => {
    const collections = await bench().listCollections().toArray()
    expect(collections.map((collection) => collection.name)).toEqual(['orders', 'tweets', 'wide45'])
    expect(collections[0]).toMatchObject({ type: 'collection', idIndex: { key: { _id: 1 }, name: '_id_' } })
    expect(await bench().listCollections({ name: 'tweets' }, { nameOnly: true }).toArray()).toEqual([
      { name: 'tweets', type: 'collection' },
    ])
    for (const name of DATASETS) expect(await bench().collection(name).estimatedDocumentCount()).toBe(DOCS)
    expect(await bench().collection('missing').estimatedDocumentCount()).toBe(0)
    expect(await bench().collection('missing').find().toArray()).toEqual([])
    expect(await official.db('other').listCollections().toArray()).toEqual([])
  })

  it('killCursors: a cursor closed early is gone', async () => {
    const cursor = wide45().find({}, { batchSize: 10 })
    expect((await cursor.next())!.n).toBe(0)
    const id = cursor.id!
    expect(id.isZero()).toBe(false)
    expect(await commandsDuring(() => cursor.close())).toEqual(['killCursors'])
    await expect(bench().command({ getMore: id, collection: 'wide45' })).rejects.toMatchObject({
      code: 43,
      codeName: 'CursorNotFound',
    })
  })
})

// The answers the small-reads benchmark needs (bench/small.mjs), exact as mongod gives them: the
// official driver's results are checked against the documents' definition, rumongo's against the
// official driver's.
describe('small reads: _id equality, countDocuments, distinct', () => {
  const orders = () => bench().collection('orders')
  const rumongoOrders = () => rumongo.db('bench').collection('orders')
  const objectId = (index: number) => new ObjectId(idFor(index))
  /** A generated-looking _id past the collection's end, and an ObjectId of another shape. */
  const missing = [
    objectId(DOCS),
    objectId(2 ** 40),
    new ObjectId('65000001' + '0'.repeat(16)),
    new ObjectId(),
  ]

  it('findOne({ _id }): the document with that _id, on every dataset; null when none has it', async () => {
    for (const [name, check] of [
      ['orders', checkOrder],
      ['wide45', checkWide45],
      ['tweets', checkTweet],
    ] as const) {
      for (const index of [0, 1, 4199, 4200, 12_345, DOCS - 1]) {
        const found = await bench()
          .collection(name)
          .findOne({ _id: objectId(index) })
        expect(problems([found!], index, check)).toEqual([])
        // The same bytes as the document read in _id order.
        const [inOrder] = await bench().collection(name).find({}, { skip: index, limit: 1 }).toArray()
        expectIdentical(found, inOrder)
        expectIdentical(
          await rumongo
            .db('bench')
            .collection(name)
            .findOne({ _id: objectId(index) }),
          found,
        )
      }
    }
    for (const id of missing) {
      expect(await orders().findOne({ _id: id })).toBeNull()
      expect(await rumongoOrders().findOne({ _id: id })).toBeNull()
    }
    expect(
      await bench()
        .collection('absent')
        .findOne({ _id: objectId(3) }),
    ).toBeNull()
  })

  it('find({ _id }): an empty first batch with cursor id 0 when nothing matches', async () => {
    const reply = await bench().command({ find: 'orders', filter: { _id: objectId(DOCS + 7) } })
    expect(reply.cursor.firstBatch).toEqual([])
    expect(reply.cursor.id).toBe(0)
    const one = await bench().command({ find: 'orders', filter: { _id: objectId(77) } })
    expect(one.cursor.firstBatch.map((doc: Document) => doc.n)).toEqual([77])
    expect(one.cursor.id).toBe(0)
  })

  it('find({ _id }) with projection, skip, limit, batchSize and singleBatch applied as for {}', async () => {
    const id = objectId(9001)
    const projection = { region: 1, total: 1 }
    const [full] = await orders().find({ _id: id }).toArray()
    const projected = await orders().find({ _id: id }, { projection }).toArray()
    expect(projected).toEqual([{ _id: id, region: full!.region, total: full!.total }])
    expect(keys(projected[0])).toBe('_id,region,total')
    expect(
      await orders()
        .find({ _id: id }, { projection: { _id: 0, n: 1 } })
        .toArray(),
    ).toEqual([{ n: 9001 }])
    expect(await orders().find({ _id: id }, { skip: 1 }).toArray()).toEqual([])
    expect(
      await orders()
        .find({ _id: id }, { limit: 5, sort: { _id: 1 } })
        .toArray(),
    ).toEqual([full])
    const empty = await bench().command({ find: 'orders', filter: { _id: id }, batchSize: 0 })
    expect(empty.cursor.firstBatch).toEqual([])
    const next = await bench().command({ getMore: Long.fromValue(empty.cursor.id), collection: 'orders' })
    expect(next.cursor.nextBatch).toEqual([full])
    expect(next.cursor.id).toBe(0)
    const single = await bench().command({ find: 'orders', filter: { _id: id }, singleBatch: true, limit: 1 })
    expect(single.cursor.firstBatch).toEqual([full])
    expect(single.cursor.id).toBe(0)
    const options = { projection, skip: 0, limit: 3 }
    expectIdentical(await rumongoOrders().find({ _id: id }, options), projected)
  })

  it('find({ _id: { $in } }) of consecutive documents (what populate sends): those documents in _id order', async () => {
    const ids = [12, 10, 11, 12, 13].map(objectId)
    // ObjectIds that are no generated _id match nothing, wherever they stand in the list.
    const otherIds = missing.slice(2)
    const inIds = (list: ObjectId[], options = {}) =>
      orders()
        .find({ _id: { $in: list } }, options)
        .toArray()
    const found = await inIds([...ids, ...otherIds])
    expect(found.map((doc) => doc.n)).toEqual([10, 11, 12, 13])
    expect(found[0]).toEqual(await orders().findOne({ _id: objectId(10) }))
    const many = Array.from({ length: 300 }, (_, k) => objectId(1000 + k)).reverse()
    const served = await inIds(many, { skip: 5, limit: 200 })
    expect(served.map((doc) => doc.n)).toEqual(Array.from({ length: 200 }, (_, k) => 1005 + k))
    expectIdentical(
      await rumongoOrders()
        .find({ _id: { $in: many } })
        .toArray(),
      await inIds(many),
    )
    expect(await inIds(otherIds)).toEqual([])
    expect(await inIds([objectId(DOCS)])).toEqual([])
    expect(await inIds([])).toEqual([])
    // Not consecutive, not ObjectIds, or another operator beside $in: refused, never approximated.
    const badValue = { code: 2, codeName: 'BadValue' }
    const refused = [
      { $in: [objectId(1), objectId(3)] },
      // Not consecutive either: the filter is read before the collection's size is known.
      { $in: [objectId(DOCS - 1), objectId(DOCS + 1)] },
      { $in: [objectId(1), 'x'] },
      { $in: [objectId(1)], $nin: [] },
      { $nin: [objectId(1)] },
    ]
    for (const condition of refused) {
      await expect(orders().find({ _id: condition }).toArray()).rejects.toMatchObject(badValue)
    }
  })

  it('rumongo Model.findById: the same document as the official findOne', async () => {
    const Order = Model.define(rumongoOrders(), ['_id', 'n', 'status', 'region', 'total', 'at', 'customer'])
    for (const index of [0, 4321, DOCS - 1]) {
      expectIdentical(await Order.findById(objectId(index)), await orders().findOne({ _id: objectId(index) }))
    }
    expect(await Order.findById(objectId(DOCS))).toBeNull()
  })

  it('countDocuments: the $group count, with $skip and $limit; no document when the count is 0', async () => {
    const cases = [
      [{}, {}, DOCS],
      [{}, { skip: 100 }, DOCS - 100],
      [{}, { limit: 50 }, 50],
      [{}, { skip: DOCS - 20, limit: 50 }, 20],
      [{}, { skip: DOCS + 1 }, 0],
      [{ _id: objectId(5) }, {}, 1],
      [{ _id: objectId(5) }, { skip: 1 }, 0],
      [{ _id: objectId(DOCS) }, {}, 0],
    ] as const
    for (const [filter, options, count] of cases) {
      expect(await orders().countDocuments(filter, options)).toBe(count)
      expect(await rumongoOrders().countDocuments(filter, options)).toBe(count)
    }
    const pipeline = (...stages: Document[]) => [
      { $match: {} },
      ...stages,
      { $group: { _id: 1, n: { $sum: 1 } } },
    ]
    expectIdentical(await orders().aggregate(pipeline()).toArray(), [{ _id: 1, n: DOCS }])
    expectIdentical(
      await orders()
        .aggregate(pipeline({ $limit: 3 }, { $skip: 1 }))
        .toArray(),
      [{ _id: 1, n: 2 }],
    )
    expect(
      await orders()
        .aggregate(pipeline({ $skip: DOCS }))
        .toArray(),
    ).toEqual([])
    expect(await bench().collection('absent').aggregate(pipeline()).toArray()).toEqual([])
    // The sum has the type of the summed constant (an int32 one widens to int64 past 2^31), and _id
    // is the constant given, as in mongod.
    const typed = async (id: unknown, one: unknown) =>
      await orders()
        .aggregate([{ $group: { _id: id, total: { $sum: one } } }], { promoteValues: false })
        .toArray()
    expectIdentical(await typed(1, 1), [{ _id: new Int32(1), total: new Int32(DOCS) }])
    expectIdentical(await typed(null, Long.fromNumber(1)), [{ _id: null, total: Long.fromNumber(DOCS) }])
    expectIdentical(await typed(new Double(2), new Double(1)), [
      { _id: new Double(2), total: new Double(DOCS) },
    ])
    // The counted document can wait for a getMore like any other.
    const empty = await bench().command({
      aggregate: 'orders',
      pipeline: pipeline(),
      cursor: { batchSize: 0 },
    })
    expect(empty.cursor.firstBatch).toEqual([])
    const next = await bench().command({ getMore: Long.fromValue(empty.cursor.id), collection: 'orders' })
    expect(next.cursor.nextBatch).toEqual([{ _id: 1, n: DOCS }])
  })

  it('distinct on orders: status and region, sorted as mongod sorts them', async () => {
    expect(await orders().distinct('region')).toEqual(['apac', 'eu', 'latam', 'us'])
    expect(await orders().distinct('status')).toEqual(['paid', 'pending', 'refunded'])
    // Document 5: region us (5 % 4 = 1), status refunded (5 % 3 = 2).
    expect(await orders().distinct('region', { _id: objectId(5) })).toEqual(['us'])
    expect(await orders().distinct('status', { _id: objectId(5) })).toEqual(['refunded'])
    expect(await orders().distinct('status', { _id: objectId(DOCS) })).toEqual([])
    expect(await bench().collection('absent').distinct('region')).toEqual([])
    for (const [key, filter] of [
      ['region', {}],
      ['status', {}],
      ['region', { _id: objectId(6) }],
    ] as const) {
      expectIdentical(await rumongoOrders().distinct(key, filter), await orders().distinct(key, filter))
    }
  })

  it('a replay server of 3 documents: distinct holds only the values present', async () => {
    const small = await startReplay({ docs: 3 })
    const client = await OfficialClient.connect(small.uri)
    try {
      const collection = client.db('bench').collection('orders')
      expect(await collection.distinct('region')).toEqual(['apac', 'eu', 'us'])
      expect(await collection.countDocuments()).toBe(3)
      expect(await collection.findOne({ _id: objectId(3) })).toBeNull()
    } finally {
      await client.close()
      await small.stop()
    }
  })
})

describe('errors', () => {
  it('an unknown command: CommandNotFound (59)', async () => {
    await expect(bench().command({ frobnicate: 1 })).rejects.toMatchObject({
      code: 59,
      codeName: 'CommandNotFound',
    })
  })

  it('what the server cannot answer exactly: BadValue (2)', async () => {
    const badValue = { code: 2, codeName: 'BadValue' }
    const wide45 = bench().collection('wide45')
    await expect(wide45.find({ n: 5 }).toArray()).rejects.toMatchObject(badValue)
    await expect(wide45.find({}, { sort: { n: -1 } }).toArray()).rejects.toMatchObject(badValue)
    await expect(wide45.find({}, { projection: { s01: 0 } }).toArray()).rejects.toMatchObject(badValue)
    await expect(wide45.find({}, { projection: { 'user.id': 1 } }).toArray()).rejects.toMatchObject(badValue)
    await expect(wide45.find({}, { projection: { n: { $add: [1, 2] } } }).toArray()).rejects.toMatchObject(
      badValue,
    )
    await expect(wide45.aggregate([{ $sort: { n: 1 } }]).toArray()).rejects.toMatchObject(badValue)
    await expect(wide45.countDocuments({ n: 5 })).rejects.toMatchObject(badValue)
    await expect(wide45.find({ _id: idFor(5) }).toArray()).rejects.toMatchObject(badValue)
    await expect(wide45.find({ _id: new ObjectId(idFor(5)), n: 5 }).toArray()).rejects.toMatchObject(badValue)
    await expect(wide45.find({ _id: { $gt: new ObjectId(idFor(5)) } }).toArray()).rejects.toMatchObject(
      badValue,
    )
    await expect(wide45.distinct('s01')).rejects.toMatchObject(badValue)
    await expect(bench().collection('orders').distinct('total')).rejects.toMatchObject(badValue)
    await expect(
      bench()
        .collection('orders')
        .distinct('region', {}, { collation: { locale: 'fr' } }),
    ).rejects.toMatchObject(badValue)
    const group = (stage: Document) => wide45.aggregate([{ $group: stage }]).toArray()
    await expect(group({ _id: '$n', n: { $sum: 1 } })).rejects.toMatchObject(badValue)
    await expect(group({ _id: 1, n: { $sum: 2 } })).rejects.toMatchObject(badValue)
    await expect(group({ _id: 1, n: { $sum: '$n' } })).rejects.toMatchObject(badValue)
    await expect(group({ _id: 1, n: { $avg: 1 } })).rejects.toMatchObject(badValue)
    await expect(
      wide45.aggregate([{ $group: { _id: 1, n: { $sum: 1 } } }, { $limit: 1 }]).toArray(),
    ).rejects.toMatchObject(badValue)
    await expect(rumongo.db('bench').collection('wide45').find({ n: 5 }).toArray()).rejects.toMatchObject(
      badValue,
    )
  })
})

describe('wire protocol details the drivers do not exercise on reads', () => {
  const OP_REPLY = 1
  const OP_QUERY = 2004
  const OP_MSG = 2013

  interface Reply {
    responseTo: number
    opCode: number
    body: Document
  }

  /** A bare connection: writes messages, reads replies in order. */
  async function bareConnection() {
    const socket = connect(server.port, '127.0.0.1')
    await once(socket, 'connect')
    // Received chunks, joined once a whole message is in (a 16 MiB reply comes in hundreds).
    const chunks: Buffer[] = []
    let bytes = 0
    const waiting: ((reply: Reply) => void)[] = []
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk)
      bytes += chunk.length
      for (;;) {
        if (bytes < 4) return
        if (chunks[0]!.length < 4) chunks.splice(0, chunks.length, Buffer.concat(chunks))
        const length = chunks[0]!.readInt32LE(0)
        if (bytes < length) return
        const received = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
        const message = received.subarray(0, length)
        chunks.length = 0
        bytes = received.length - length
        if (bytes > 0) chunks.push(received.subarray(length))
        const opCode = message.readInt32LE(12)
        // OP_MSG: flagBits and a kind 0 section precede the body; OP_REPLY: 20 bytes of fields.
        // Read when asked for: a test may not need a 16 MiB reply's documents.
        const parse = () => BSON.deserialize(message.subarray(opCode === OP_MSG ? 21 : 36))
        waiting.shift()!({
          responseTo: message.readInt32LE(8),
          opCode,
          get body() {
            return parse()
          },
        })
      }
    })
    return {
      write(requestId: number, opCode: number, ...parts: Buffer[]) {
        const header = Buffer.alloc(16)
        header.writeInt32LE(16 + parts.reduce((sum, part) => sum + part.length, 0), 0)
        header.writeInt32LE(requestId, 4)
        header.writeInt32LE(opCode, 12)
        socket.write(Buffer.concat([header, ...parts]))
      },
      reply: () => new Promise<Reply>((resolve) => waiting.push(resolve)),
      close: () => socket.destroy(),
    }
  }

  const int32 = (value: number) => Buffer.from(new Int32Array([value]).buffer)
  const body = (document: Document) => Buffer.concat([Buffer.from([0]), BSON.serialize(document)])
  const sequence = (name: string, documents: Document[]) => {
    const content = Buffer.concat([Buffer.from(`${name}\0`), ...documents.map((doc) => BSON.serialize(doc))])
    return Buffer.concat([Buffer.from([1]), int32(4 + content.length), content])
  }

  it('OP_MSG with a checksum, a document sequence, and moreToCome', async () => {
    const connection = await bareConnection()
    try {
      const checksummed = connection.reply()
      connection.write(1, OP_MSG, int32(1), body({ ping: 1, $db: 'admin' }), int32(0))
      expect(await checksummed).toMatchObject({ responseTo: 1, opCode: OP_MSG, body: { ok: 1 } })
      // A sequence reaches the command as an array field, which find refuses.
      const folded = connection.reply()
      connection.write(
        2,
        OP_MSG,
        int32(0),
        body({ find: 'orders', $db: 'bench' }),
        sequence('documents', [{}]),
      )
      expect((await folded).body).toMatchObject({
        ok: 0,
        code: 2,
        errmsg: "find: unsupported option 'documents'",
      })
      // moreToCome: no reply to request 3, so the next reply answers request 4.
      const next = connection.reply()
      connection.write(3, OP_MSG, int32(2), body({ ping: 1, $db: 'admin' }))
      connection.write(4, OP_MSG, int32(0), body({ ping: 1, $db: 'admin' }))
      expect((await next).responseTo).toBe(4)
    } finally {
      connection.close()
    }
  })

  it('killCursors while a getMore reads the cursor: killed, as mongod, and gone once the getMore ends', async () => {
    // A client that closes a cursor while its getMore is in flight (a pipe whose destination went
    // away) sends killCursors on another connection. The replay server takes a cursor out of its
    // table while a getMore writes the batch (16 MiB here): it answered cursorsNotFound and put the
    // cursor back after, open for good. Two bare connections send both in the same turn; the kill
    // landed inside the writing of the batch by the 45th and the 52nd attempt in two runs before the fix.
    const [reading, killing] = [await bareConnection(), await bareConnection()]
    const command = async (connection: typeof reading, document: Document) => {
      const reply = connection.reply()
      connection.write(1, OP_MSG, int32(0), body({ ...document, $db: 'bench' }))
      return (await reply).body
    }
    const openCursors = async () =>
      (await command(killing, { serverStatus: 1 })).metrics.cursor.open.total as number
    try {
      const before = await openCursors()
      for (let attempt = 0; attempt < 80; attempt++) {
        const { cursor } = await command(reading, { find: 'wide45', batchSize: 1 })
        const id = Long.fromNumber(cursor.id) // the reply's id, promoted to a number
        const getMore = command(reading, { getMore: id, collection: 'wide45' })
        const killed = await command(killing, { killCursors: 'wide45', cursors: [id] })
        await getMore
        expect(killed.cursorsKilled).toEqual([cursor.id])
        expect(await openCursors()).toBe(before)
      }
    } finally {
      reading.close()
      killing.close()
    }
  })

  it('OP_QUERY: the legacy handshake only, answered with OP_REPLY', async () => {
    const connection = await bareConnection()
    const query = (namespace: string, document: Document) =>
      Buffer.concat([int32(0), Buffer.from(`${namespace}\0`), int32(0), int32(-1), BSON.serialize(document)])
    try {
      const handshake = connection.reply()
      connection.write(7, OP_QUERY, query('admin.$cmd', { isMaster: 1, helloOk: true }))
      expect(await handshake).toMatchObject({
        responseTo: 7,
        opCode: OP_REPLY,
        body: { ismaster: true, helloOk: true, maxWireVersion: 21, ok: 1 },
      })
      const refused = connection.reply()
      connection.write(8, OP_QUERY, query('bench.$cmd', { find: 'orders' }))
      expect((await refused).body).toMatchObject({ ok: 0, code: 352 })
    } finally {
      connection.close()
    }
  })
})

describe('--load', () => {
  it('serves the bytes of a file of BSON documents as they are', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rumongo-replay-'))
    const documents = [
      BSON.serialize({ _id: 1, text: 'first', nested: { list: [1, 2.5, 'three'] } }),
      BSON.serialize({
        _id: new ObjectId('0123456789abcdef01234567'),
        when: new Date(0),
        big: Long.MAX_VALUE,
      }),
    ]
    const path = join(dir, 'raw.bson')
    writeFileSync(path, Buffer.concat(documents))
    const loaded: Replay = await startReplay({ docs: 10, load: { raw: path } })
    const client = await OfficialClient.connect(loaded.uri)
    try {
      const collection = client.db('bench').collection('raw')
      expect(await collection.find().toArray()).toEqual(documents.map((bytes) => BSON.deserialize(bytes)))
      const raw = await collection.find({}, { raw: true, batchSize: 1 }).toArray()
      expect(raw.map((bytes) => Buffer.from(bytes as unknown as Uint8Array))).toEqual(
        documents.map(Buffer.from),
      )
      expect(await collection.estimatedDocumentCount()).toBe(2)
      expect(await client.db('bench').collection('wide45').estimatedDocumentCount()).toBe(10)
      await expect(collection.find({}, { projection: { text: 1 } }).toArray()).rejects.toMatchObject({
        code: 2,
      })
      // Its documents are not known by index: _id equality and distinct stay refused.
      const id = new ObjectId('0123456789abcdef01234567')
      await expect(collection.findOne({ _id: id })).rejects.toMatchObject({ code: 2 })
      await expect(collection.countDocuments({ _id: id })).rejects.toMatchObject({ code: 2 })
      await expect(collection.distinct('text')).rejects.toMatchObject({ code: 2 })
      expect(await collection.countDocuments()).toBe(2)
    } finally {
      await client.close()
      await loaded.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('--replica-set', () => {
  it('answers hello as the members of replica set rs; both drivers read through it', async () => {
    const members: Replay = await startReplay({ docs: 100, replicaSet: 3 })
    try {
      const hosts = /^mongodb:\/\/([^/]+)\/\?replicaSet=rs$/.exec(members.uri)![1]!.split(',')
      expect(hosts).toHaveLength(3)
      const uri = `${members.uri}&readPreference=nearest&localThresholdMS=10000`
      const officialSet = await OfficialClient.connect(uri)
      try {
        const hellos = await Promise.all(
          hosts.map(async (host) => {
            const direct = await OfficialClient.connect(`mongodb://${host}/?directConnection=true`)
            try {
              return await direct.db('admin').command({ hello: 1 })
            } finally {
              await direct.close()
            }
          }),
        )
        hellos.forEach((hello, index) =>
          expect(hello).toMatchObject({
            isWritablePrimary: index === 0,
            secondary: index !== 0,
            setName: 'rs',
            hosts,
            primary: hosts[0],
            me: hosts[index],
          }),
        )
        const types = () =>
          [...officialSet.topology!.description.servers.values()].map((server) => server.type)
        await expect.poll(() => types().sort()).toEqual(['RSPrimary', 'RSSecondary', 'RSSecondary'])
        const read = await officialSet.db('bench').collection('orders').findOne({}, { skip: 99 })
        expect(read).toMatchObject({ n: 99 })
      } finally {
        await officialSet.close()
      }
      const client = await MongoClient.connect(uri)
      try {
        const last = await client.db('bench').collection('orders').findOne({}, { skip: 99 })
        expect(last).toMatchObject({ n: 99 })
      } finally {
        await client.close()
      }
    } finally {
      await members.stop()
    }
  }, 60_000)
})

describe('change streams (--replica-set)', () => {
  /** The first `count` events of a watch() of `name`, and the commands the client sent. */
  async function watchEvents(client: OfficialClient | MongoClient, name: string, count: number) {
    const stream = client.db('bench').collection(name).watch([], { batchSize: 10, maxAwaitTimeMS: 50 })
    const events: Document[] = []
    try {
      for await (const change of stream) {
        events.push(change)
        if (events.length === count) break
      }
    } finally {
      await stream.close()
    }
    return events
  }

  it('serves each document as an insert event, in mongod 7.0 shape, to both drivers alike', async () => {
    const members: Replay = await startReplay({ docs: 25, replicaSet: 1 })
    const officialSet = await OfficialClient.connect(members.uri, { monitorCommands: true })
    const replies: Document[] = []
    officialSet.on('commandSucceeded', (event) => {
      if (['aggregate', 'getMore'].includes(event.commandName)) replies.push(event.reply as Document)
    })
    const rumongoSet = await MongoClient.connect(members.uri)
    try {
      const theirs = await watchEvents(officialSet, 'orders', 25)
      const ours = await watchEvents(rumongoSet, 'orders', 25)
      expectIdentical(ours, theirs)
      const documents = await officialSet.db('bench').collection('orders').find().toArray()
      expect(theirs.map((change) => change.fullDocument)).toEqual(documents)
      const [first] = theirs
      expect(Object.keys(first!)).toEqual([
        '_id',
        'operationType',
        'clusterTime',
        'wallTime',
        'fullDocument',
        'ns',
        'documentKey',
      ])
      expect(first).toMatchObject({
        operationType: 'insert',
        ns: { db: 'bench', coll: 'orders' },
        documentKey: { _id: documents[0]!._id },
      })
      // Each event's token holds its cluster time and document key; times increase by one.
      const times = theirs.map((change) => (change.clusterTime as { low: number }).low)
      expect(times).toEqual(range(2, 26))
      expect(theirs[24]!._id._data).toContain(idFor(24).toUpperCase())
      // Replies: an empty first batch, then 10, 10, 5 events, each with the batch's token (the
      // last event's), the cursor open throughout.
      const cursors = replies.map((reply) => reply.cursor)
      expect(cursors.map((cursor) => (cursor.firstBatch ?? cursor.nextBatch).length)).toEqual([0, 10, 10, 5])
      expect(cursors[3].postBatchResumeToken).toEqual(theirs[24]!._id)
      expect(cursors.every((cursor) => cursor.id.toString() !== '0')).toBe(true)
      expect(replies.every((reply) => reply.operationTime !== undefined)).toBe(true)
    } finally {
      await officialSet.close()
      await rumongoSet.close()
      await members.stop()
    }
  })

  it('past the last event, a getMore waits maxTimeMS and returns an empty batch with a high-water mark', async () => {
    const members: Replay = await startReplay({ docs: 3, replicaSet: 1 })
    const client = await MongoClient.connect(members.uri)
    try {
      const stream = client.db('bench').collection('wide45').watch([], { maxAwaitTimeMS: 200 })
      for (let i = 0; i < 3; i++) expect((await stream.next()).fullDocument.n).toBe(i)
      const token = stream.resumeToken as { _data: string }
      const started = Date.now()
      expect(await stream.tryNext()).toBeNull()
      expect(Date.now() - started).toBeGreaterThanOrEqual(150)
      const mark = stream.resumeToken as { _data: string }
      expect(mark._data).not.toEqual(token._data)
      expect(mark._data.slice(0, 18)).toBe(token._data.slice(0, 18))
      await stream.close()
    } finally {
      await client.close()
      await members.stop()
    }
  })

  it('a standalone refuses $changeStream as mongod does; what is not scripted is BadValue', async () => {
    const standalone = await official
      .db('bench')
      .command({ ping: 1 })
      .then(() => official)
    const refused = await standalone
      .db('bench')
      .command({ aggregate: 'orders', pipeline: [{ $changeStream: {} }], cursor: {} })
      .catch((error) => error)
    expect(refused).toMatchObject({
      code: 40573,
      codeName: 'Location40573',
      message: 'The $changeStream stage is only supported on replica sets',
    })
    const members: Replay = await startReplay({ docs: 3, replicaSet: 1 })
    const client = await OfficialClient.connect(members.uri)
    try {
      for (const pipeline of [
        [{ $changeStream: { resumeAfter: { _data: '00' } } }],
        [{ $changeStream: { showExpandedEvents: true } }],
        [{ $changeStream: {} }, { $match: {} }],
      ]) {
        const error = await client
          .db('bench')
          .command({ aggregate: 'orders', pipeline, cursor: {} })
          .catch((failure) => failure)
        expect(error).toMatchObject({ code: 2, codeName: 'BadValue' })
      }
    } finally {
      await client.close()
      await members.stop()
    }
  })
})
