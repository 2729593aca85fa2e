// Shadow mode: served results, exact comparison with the other driver off the caller's path, counters.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Collection as OfficialCollection } from 'mongodb'
import {
  Binary,
  Decimal128,
  Double,
  firstDifference,
  Int32,
  Long,
  Model,
  ObjectId,
  shadow,
  UUID,
  MongoInvalidArgumentError,
  type Collection,
  type Document,
  type ShadowableCollection,
  type ShadowErrorReport,
  type ShadowMismatchReport,
  type ShadowOptions,
} from 'rumongo'
import { connectBoth, expectIdentical, uniqueDbName, type Drivers } from './setup/helpers.js'
import { orderDocuments, typedDocuments } from './setup/data.js'

const ORDER_COUNT = 1_500

let drivers: Drivers
let dbName: string
const official = (name: string): OfficialCollection => drivers.official.db(dbName).collection(name)
const rumongo = (name: string): Collection => drivers.rumongo.db(dbName).collection(name)

beforeAll(async () => {
  drivers = await connectBoth()
  dbName = uniqueDbName('shadow')
  await official('orders').insertMany(orderDocuments(ORDER_COUNT))
  await official('typed').insertMany(typedDocuments())
})

afterAll(async () => {
  await drivers.official.db(dbName).dropDatabase()
  await drivers.close()
})

interface DoubleOptions {
  /** Changes a result before the shadow sees it. */
  alter?: (result: any) => any
  delayMs?: number
  fail?: boolean
}

/** A collection delegating to `inner`, counting its reads and how many run at once. */
interface CollectionDouble extends ShadowableCollection {
  calls: number
  active: number
  maxActive: number
}

function double(inner: ShadowableCollection, options: DoubleOptions = {}): CollectionDouble {
  const state = { calls: 0, active: 0, maxActive: 0 }
  async function around<T>(read: () => Promise<T>): Promise<T> {
    state.calls++
    state.active++
    state.maxActive = Math.max(state.maxActive, state.active)
    try {
      if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs))
      if (options.fail) throw new Error('shadow side down')
      const result = await read()
      return options.alter ? options.alter(result) : result
    } finally {
      state.active--
    }
  }
  // Cursor methods are bound to the real cursor (its fields are private); toArray goes through `around`.
  const wrapCursor = (cursor: any) =>
    new Proxy(cursor, {
      get(target, property) {
        if (property === 'toArray') return () => around(() => target.toArray())
        const value = Reflect.get(target, property, target)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
  return Object.assign(state, {
    find: (filter: Document, findOptions?: Document) => wrapCursor(inner.find(filter, findOptions)),
    aggregate: (pipeline: Document[], aggregateOptions?: Document) =>
      wrapCursor(inner.aggregate(pipeline, aggregateOptions)),
    findOne: (filter: Document, findOptions?: Document) => around(() => inner.findOne(filter, findOptions)),
    countDocuments: (filter?: Document, countOptions?: Document) =>
      around(() => inner.countDocuments(filter, countOptions)),
    estimatedDocumentCount: (countOptions?: Document) =>
      around(() => inner.estimatedDocumentCount(countOptions)),
    distinct: (key: string, filter?: Document, distinctOptions?: Document) =>
      around(() => inner.distinct(key, filter, distinctOptions)),
  })
}

/** The official collection typed for `shadow` (the official driver's own types are wider). */
const officialSide = (name: string): ShadowableCollection => official(name)

describe('firstDifference', () => {
  it('finds nothing between identical results, BSON types included', () => {
    expect(firstDifference(typedDocuments(), typedDocuments())).toBeUndefined()
    expect(firstDifference(orderDocuments(50), orderDocuments(50))).toBeUndefined()
  })

  it('compares types: class, BSON type and typeof', () => {
    const id = new ObjectId()
    expect(firstDifference({ id }, { id: id.toHexString() })).toMatchObject({
      path: '$.id',
      reason: 'type',
      a: id,
      b: id.toHexString(),
    })
    expect(firstDifference([1], [Long.fromNumber(1)])).toMatchObject({ path: '$[0]', reason: 'type' })
    expect(firstDifference(new Int32(1), new Double(1))?.reason).toBe('type')
    expect(firstDifference(1, 1n)?.reason).toBe('type')
    expect(firstDifference(null, undefined)?.reason).toBe('type')
    expect(firstDifference({}, Object.create(null))?.reason).toBe('type')
  })

  it('compares BSON values', () => {
    expect(
      firstDifference(new ObjectId('6500000000000000000000a1'), new ObjectId('6500000000000000000000a1')),
    ).toBeUndefined()
    expect(firstDifference(new ObjectId(), new ObjectId())?.reason).toBe('value')
    expect(firstDifference(Long.fromNumber(5), Long.fromNumber(5))).toBeUndefined()
    expect(firstDifference(Long.fromNumber(5), Long.fromNumber(5, true))?.reason).toBe('value')
    expect(firstDifference(Decimal128.fromString('1.0'), Decimal128.fromString('1.0'))).toBeUndefined()
    expect(firstDifference(Decimal128.fromString('1.0'), Decimal128.fromString('1.00'))?.reason).toBe('value')
    expect(firstDifference(new Double(-0), new Double(0))?.reason).toBe('value')
  })

  it('compares Binary bytes, subtype and class', () => {
    const bytes = Buffer.from([1, 2, 3])
    expect(firstDifference(new Binary(bytes), new Binary(Buffer.from([1, 2, 3])))).toBeUndefined()
    expect(firstDifference(new Binary(bytes), new Binary(Buffer.from([1, 2, 4])))?.reason).toBe('value')
    expect(firstDifference(new Binary(bytes), new Binary(bytes, Binary.SUBTYPE_MD5))?.reason).toBe('value')
    const uuid = new UUID()
    expect(firstDifference(uuid, new Binary(uuid.buffer, Binary.SUBTYPE_UUID))).toMatchObject({
      reason: 'type',
    })
    expect(firstDifference(Buffer.from([1]), new Uint8Array([1]))?.reason).toBe('type')
    expect(firstDifference(Buffer.from([1]), Buffer.from([2]))?.reason).toBe('value')
  })

  it('compares Dates by time, NaN as equal to itself, -0 as different from 0', () => {
    expect(firstDifference(new Date(5), new Date(5))).toBeUndefined()
    expect(firstDifference({ at: new Date(5) }, { at: new Date(6) })).toMatchObject({
      path: '$.at',
      reason: 'value',
    })
    expect(firstDifference(new Date(NaN), new Date(NaN))).toBeUndefined()
    expect(firstDifference(NaN, NaN)).toBeUndefined()
    expect(firstDifference({ x: -0 }, { x: 0 })).toMatchObject({ path: '$.x', reason: 'value', a: -0, b: 0 })
  })

  it('compares key order unless ignoreKeyOrder', () => {
    const a = { _id: 1, customer: { name: 'x', tier: 2 } }
    const b = { _id: 1, customer: { tier: 2, name: 'x' } }
    expect(firstDifference(a, b)).toEqual({
      path: '$.customer',
      reason: 'keyOrder',
      a: ['name', 'tier'],
      b: ['tier', 'name'],
    })
    expect(firstDifference(a, b, { ignoreKeyOrder: true })).toBeUndefined()
    expect(firstDifference(a, { ...b, customer: { tier: 3, name: 'x' } }, { ignoreKeyOrder: true })).toEqual({
      path: '$.customer.tier',
      reason: 'value',
      a: 2,
      b: 3,
    })
  })

  it('reports missing keys, nested array paths and lengths', () => {
    expect(firstDifference({ a: 1, b: 2 }, { a: 1 })).toEqual({
      path: '$.b',
      reason: 'missing',
      a: 2,
      b: undefined,
    })
    expect(
      firstDifference(
        [
          [1, 2],
          [3, [4, 5]],
        ],
        [
          [1, 2],
          [3, [4, 6]],
        ],
      ),
    ).toMatchObject({
      path: '$[1][1][1]',
      a: 5,
      b: 6,
    })
    expect(firstDifference([1, 2], [1, 2, 3])).toEqual({ path: '$[2]', reason: 'length', a: undefined, b: 3 })
    expect(firstDifference({ 'a b': [{ c: 1 }] }, { 'a b': [{ c: 2 }] })?.path).toBe('$["a b"][0].c')
  })
})

describe('shadow mode on a real server', () => {
  it.each(['official', 'rumongo'] as const)(
    'agrees with the official driver on every sampled read, serving %s',
    async (serve) => {
      const orders = shadow(officialSide('orders'), rumongo('orders'), {
        sampleRate: 1,
        serve,
        maxConcurrentComparisons: 100,
      })
      const typed = shadow(officialSide('typed'), rumongo('typed'), { sampleRate: 1, serve })
      const reads: [string, () => Promise<unknown>, () => Promise<unknown>][] = [
        [
          'find toArray',
          () => orders.find({ status: 'paid' }).toArray(),
          () => official('orders').find({ status: 'paid' }).toArray(),
        ],
        [
          'await find',
          async () => await orders.find({ region: 'eu' }),
          () => official('orders').find({ region: 'eu' }).toArray(),
        ],
        [
          'builders',
          () =>
            orders
              .find({ total: { $gt: 100 } })
              .sort({ total: -1, n: 1 })
              .skip(5)
              .limit(40)
              .project({ customer: 1, total: 1 })
              .batchSize(7)
              .toArray(),
          () =>
            official('orders')
              .find({ total: { $gt: 100 } })
              .sort({ total: -1, n: 1 })
              .skip(5)
              .limit(40)
              .project({ customer: 1, total: 1 })
              .batchSize(7)
              .toArray(),
        ],
        [
          'for await',
          async () => {
            const documents: Document[] = []
            for await (const document of orders.find({ n: { $lt: 300 } }, { batchSize: 50 }))
              documents.push(document)
            return documents
          },
          () =>
            official('orders')
              .find({ n: { $lt: 300 } })
              .toArray(),
        ],
        ['findOne', () => orders.findOne({ n: 77 }), () => official('orders').findOne({ n: 77 })],
        [
          'aggregate',
          () =>
            orders
              .aggregate([{ $group: { _id: '$region', total: { $sum: '$total' } } }])
              .sort({ _id: 1 })
              .toArray(),
          () =>
            official('orders')
              .aggregate([{ $group: { _id: '$region', total: { $sum: '$total' } } }, { $sort: { _id: 1 } }])
              .toArray(),
        ],
        [
          'countDocuments',
          () => orders.countDocuments({ status: 'pending' }),
          () => official('orders').countDocuments({ status: 'pending' }),
        ],
        [
          'estimatedDocumentCount',
          () => orders.estimatedDocumentCount(),
          () => official('orders').estimatedDocumentCount(),
        ],
        [
          'distinct',
          () => orders.distinct('customer.tier'),
          () => official('orders').distinct('customer.tier'),
        ],
        ['every BSON type', () => typed.find().toArray(), () => official('typed').find().toArray()],
      ]
      for (const [name, read, expected] of reads) {
        const result = await read()
        try {
          expectIdentical(result, await expected())
        } catch (error) {
          throw new Error(`${name}: ${(error as Error).message}`)
        }
      }
      await Promise.all([orders.flush(), typed.flush()])
      const stats = orders.stats()
      expect(stats).toMatchObject({
        compared: reads.length - 1,
        mismatches: 0,
        skipped: 0,
        incomplete: 0,
        inFlight: 0,
      })
      expect(stats.errors).toEqual({ official: 0, rumongo: 0, callbacks: 0 })
      expect(typed.stats()).toMatchObject({ compared: 1, mismatches: 0 })
      for (const latency of [stats.rumongoMs, stats.officialMs]) {
        expect(latency.samples).toBe(reads.length - 1)
        expect(latency.p50).toBeGreaterThan(0)
        expect(latency.p95).toBeGreaterThanOrEqual(latency.p50!)
      }
    },
  )

  it('returns the served side’s result and runs the other side only after it', async () => {
    const alter = (documents: Document[]) => documents.map((document) => ({ ...document, total: -1 }))
    for (const serve of ['official', 'rumongo'] as const) {
      const altered = double(rumongo('orders'), { alter })
      const orders = shadow(officialSide('orders'), altered, { sampleRate: 1, serve })
      const documents = await orders.find({ n: { $lt: 3 } }, { sort: { n: 1 } })
      expect(documents.map((document) => document.total)).toEqual(
        serve === 'rumongo' ? [-1, -1, -1] : orderDocuments(3).map((order) => order.total),
      )
      // Served rumongo: the double's toArray ran; served official: the comparison has not started yet.
      expect(altered.calls).toBe(serve === 'rumongo' ? 1 : 0)
      await orders.flush()
      expect(altered.calls).toBe(1)
      expect(orders.stats()).toMatchObject({ compared: 1, mismatches: 1 })
    }
  })

  it('reports a mismatch with its path and both values', async () => {
    const reports: ShadowMismatchReport[] = []
    const alter = (documents: Document[]) =>
      documents.map((document, index) =>
        index === 3 ? { ...document, customer: { ...document.customer, name: 'someone else' } } : document,
      )
    const orders = shadow(officialSide('orders'), double(rumongo('orders'), { alter }), {
      sampleRate: 1,
      serve: 'official',
      onMismatch: (report) => void reports.push(report),
    })
    await orders
      .find({ status: 'paid' }, { sort: { n: 1 } })
      .limit(10)
      .toArray()
    await orders.flush()
    expect(reports).toEqual([
      {
        operation: 'find',
        served: 'official',
        filter: { status: 'paid' },
        options: { sort: { n: 1 } },
        cursor: [['limit', 10]],
        path: '$[3].customer.name',
        reason: 'value',
        official: 'customer 9',
        rumongo: 'someone else',
      },
    ])
    expect(orders.stats()).toMatchObject({ compared: 1, mismatches: 1 })
  })

  it('redacts values from reports with redact: true', async () => {
    const reports: ShadowMismatchReport[] = []
    const alter = (documents: Document[]) =>
      documents.map((document, index) =>
        index === 1 ? { ...document, total: Long.fromNumber(7) } : document,
      )
    const orders = shadow(officialSide('orders'), double(rumongo('orders'), { alter }), {
      sampleRate: 1,
      redact: true,
      onMismatch: (report) => void reports.push(report),
    })
    await orders.find({ status: 'paid', n: { $lt: 30 } }).toArray()
    await orders.flush()
    expect(reports).toHaveLength(1)
    expect(reports[0]).toMatchObject({
      path: '$[1].total',
      reason: 'type',
      official: 'number',
      rumongo: 'Long',
      filter: { status: 'string', n: { $lt: 'number' } },
    })
    const logged = JSON.stringify(reports[0])
    expect(logged).not.toContain('paid')
    expect(logged).not.toContain('30')
  })

  it('caps concurrent comparisons and counts the skipped ones', async () => {
    const slow = double(officialSide('orders'), { delayMs: 200 })
    const orders = shadow(slow, rumongo('orders'), {
      sampleRate: 1,
      serve: 'rumongo',
      maxConcurrentComparisons: 2,
    })
    const results = await Promise.all(Array.from({ length: 20 }, (_, n) => orders.findOne({ n })))
    expect(results.map((document) => document?.n)).toEqual(Array.from({ length: 20 }, (_, n) => n))
    expect(orders.stats().inFlight).toBeLessThanOrEqual(2)
    await orders.flush()
    const stats = orders.stats()
    expect(stats.skipped).toBeGreaterThan(0)
    expect(stats.compared + stats.skipped).toBe(20)
    expect(stats.inFlight).toBe(0)
    expect(slow.maxActive).toBeLessThanOrEqual(2)
    expect(slow.calls).toBe(stats.compared)
  })

  it('keeps errors of the shadow side from the caller and counts them', async () => {
    const errors: ShadowErrorReport[] = []
    const orders = shadow(double(officialSide('orders'), { fail: true }), rumongo('orders'), {
      sampleRate: 1,
      serve: 'rumongo',
      onError: (report) => void errors.push(report),
      onMismatch: () => {
        throw new Error('never called')
      },
    })
    expect(await orders.countDocuments({ status: 'paid' })).toBe(ORDER_COUNT / 3)
    expect(await orders.find({ n: 1 }).toArray()).toHaveLength(1)
    await orders.flush()
    expect(orders.stats()).toMatchObject({ compared: 0, errors: { official: 2, rumongo: 0, callbacks: 0 } })
    expect(errors.map((report) => [report.side, report.operation, (report.error as Error).message])).toEqual([
      ['official', 'countDocuments', 'shadow side down'],
      ['official', 'find', 'shadow side down'],
    ])
  })

  it('propagates an error of the served side and does not run the other side', async () => {
    const other = double(rumongo('orders'))
    const orders = shadow(double(officialSide('orders'), { fail: true }), other, { sampleRate: 1 })
    await expect(orders.countDocuments()).rejects.toThrow('shadow side down')
    await expect(orders.find().toArray()).rejects.toThrow('shadow side down')
    await orders.flush()
    expect(other.calls).toBe(0)
    expect(orders.stats()).toMatchObject({ compared: 0, errors: { official: 0, rumongo: 0 } })
  })

  it('reports results that cannot be compared (firstDifference throws) as a mismatch', async () => {
    // No server sends a cyclic document; a side that hands one out makes the comparison throw.
    const cyclic = () => {
      const document: Document = { n: 1 }
      document.self = document
      return document
    }
    const reports: ShadowMismatchReport[] = []
    const orders = shadow(
      double(officialSide('orders'), { alter: cyclic }),
      double(rumongo('orders'), { alter: cyclic }),
      { sampleRate: 1, onMismatch: (report) => void reports.push(report) },
    )
    expect((await orders.findOne({ n: 1 }))!.n).toBe(1)
    await orders.flush()
    expect(orders.stats()).toMatchObject({ compared: 1, mismatches: 1, errors: { callbacks: 0 } })
    expect(reports).toHaveLength(1)
    expect(reports[0]).toMatchObject({ operation: 'findOne', path: '$', reason: 'uncomparable' })
    expect(reports[0]!.error).toBeInstanceOf(MongoInvalidArgumentError)
    expect((reports[0]!.error as Error).message).toBe(
      'firstDifference: the values are nested too deeply (or cyclic)',
    )
  })

  it('swallows and counts errors of the callbacks', async () => {
    const alter = () => 0
    const orders = shadow(officialSide('orders'), double(rumongo('orders'), { alter }), {
      sampleRate: 1,
      onMismatch: () => {
        throw new Error('logger down')
      },
    })
    expect(await orders.countDocuments({ n: 1 })).toBe(1)
    const rejecting = shadow(officialSide('orders'), double(rumongo('orders'), { alter }), {
      sampleRate: 1,
      onMismatch: () => Promise.reject(new Error('logger down')),
    })
    expect(await rejecting.countDocuments({ n: 1 })).toBe(1)
    await Promise.all([orders.flush(), rejecting.flush()])
    expect(orders.stats()).toMatchObject({ mismatches: 1, errors: { callbacks: 1 } })
    expect(rejecting.stats()).toMatchObject({ mismatches: 1, errors: { callbacks: 1 } })
  })

  it('never runs the other side with sampleRate 0', async () => {
    const other = double(rumongo('orders'))
    const orders = shadow(officialSide('orders'), other, { sampleRate: 0 })
    for (let n = 0; n < 20; n++) {
      await orders.find({ n }).toArray()
      await orders.findOne({ n })
      await orders.countDocuments({ n })
    }
    await orders.flush()
    expect(other.calls).toBe(0)
    expect(orders.stats()).toMatchObject({ compared: 0, skipped: 0, incomplete: 0 })
    expect(orders.stats().officialMs.samples).toBe(60)
    expect(orders.stats().rumongoMs.samples).toBe(0)
  })

  it('compares key order unless ignoreKeyOrder', async () => {
    const reverseKeys = (documents: Document[]) =>
      documents.map((document) => Object.fromEntries(Object.entries(document).reverse()))
    const run = async (options: ShadowOptions) => {
      const reports: ShadowMismatchReport[] = []
      const orders = shadow(officialSide('orders'), double(rumongo('orders'), { alter: reverseKeys }), {
        sampleRate: 1,
        ...options,
        onMismatch: (report) => void reports.push(report),
      })
      await orders.find({ n: { $lt: 5 } }).toArray()
      await orders.flush()
      return { stats: orders.stats(), reports }
    }
    const strict = await run({})
    expect(strict.stats).toMatchObject({ compared: 1, mismatches: 1 })
    expect(strict.reports[0]).toMatchObject({ path: '$[0]', reason: 'keyOrder' })
    expect(strict.reports[0]!.official).toEqual(['_id', 'n', 'status', 'region', 'total', 'at', 'customer'])
    const relaxed = await run({ ignoreKeyOrder: true })
    expect(relaxed.stats).toMatchObject({ compared: 1, mismatches: 0 })
  })

  it('compares a partly read cursor only when its limit was reached, else counts it incomplete', async () => {
    const orders = shadow(officialSide('orders'), rumongo('orders'), { sampleRate: 1, serve: 'rumongo' })
    for await (const document of orders.find({}, { batchSize: 10 })) if (document.n === 3) break
    await orders.flush()
    expect(orders.stats()).toMatchObject({ compared: 0, incomplete: 1 })
    const cursor = orders.find({ status: 'refunded' }).sort({ n: 1 }).limit(2)
    expect((await cursor.next())?.n).toBe(2)
    expect((await cursor.next())?.n).toBe(5)
    await cursor.close()
    const all = orders.find({ n: { $lt: 3 } })
    while (await all.hasNext()) await all.next()
    await orders.flush()
    expect(orders.stats()).toMatchObject({ compared: 2, mismatches: 0, incomplete: 1 })
  })

  it('works under Model.define through asCollection()', async () => {
    const orders = shadow(officialSide('orders'), rumongo('orders'), { sampleRate: 1, serve: 'rumongo' })
    const fields = { status: 1, total: 1, 'customer.name': 1 } as const
    const Shadowed = Model.define(orders.asCollection(), fields)
    const Plain = Model.define(rumongo('orders'), fields)
    const id = (await Plain.findOne({ n: 42 }))!._id
    const reads: [(model: Model) => PromiseLike<unknown>][] = [
      [(model) => model.find({ status: 'paid' }).sort('-total').limit(15).select('total')],
      [(model) => model.findOne({ n: 10 })],
      [(model) => model.findById(id)],
      [(model) => model.countDocuments({ status: 'refunded' })],
      [(model) => model.distinct('status')],
      [(model) => model.exists({ n: 5 })],
      [
        async (model) => {
          const documents: Document[] = []
          for await (const document of model.find({ n: { $lt: 20 } }).cursor()) documents.push(document)
          return documents
        },
      ],
    ]
    for (const [read] of reads) expectIdentical(await read(Shadowed), await read(Plain))
    await orders.flush()
    expect(orders.stats()).toMatchObject({ compared: reads.length, mismatches: 0, incomplete: 0 })
  })

  it('rejects invalid options', () => {
    const make = (options: object) => () => shadow(officialSide('orders'), rumongo('orders'), options)
    expect(make({ sampleRate: 2 })).toThrow(MongoInvalidArgumentError)
    expect(make({ sampleRate: '1' })).toThrow(MongoInvalidArgumentError)
    expect(make({ serve: 'both' })).toThrow(MongoInvalidArgumentError)
    expect(make({ maxConcurrentComparisons: 0 })).toThrow(MongoInvalidArgumentError)
    expect(() => shadow({} as ShadowableCollection, rumongo('orders'))).toThrow(MongoInvalidArgumentError)
  })
})
