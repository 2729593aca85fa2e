// No stall, no silent loss, no hang: reads that time out in bursts leave the pool usable, and every
// read after a failed one fails instead of skipping documents.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BSON, MongoClient as OfficialClient, type Document } from 'mongodb'
import {
  MongoClient,
  MongoCursorExhaustedError,
  MongoOperationTimeoutError,
  shadow,
  type AbstractCursor,
} from 'rumongo'
import { uniqueDbName, uri } from './setup/helpers.js'
import { serveDocuments, type ServedReplay } from './setup/replay.js'

const dbName = uniqueDbName('reliability')
let official: OfficialClient

beforeAll(async () => {
  official = await OfficialClient.connect(uri)
  await official
    .db(dbName)
    .collection('items')
    .insertMany(Array.from({ length: 40 }, (_, n) => ({ n, label: `item ${n}` })))
})

afterAll(async () => {
  await official?.db(dbName).dropDatabase()
  await official?.close()
})

describe('a burst of timed-out reads', () => {
  // The crate's pool served one queued checkout per pool event (or 500 ms tick), and the checkout
  // requests of reads that gave up stayed queued: the next read waited 8-31 s.
  it.each([1, 2])('leaves the pool usable at once (maxPoolSize: %i)', async (maxPoolSize) => {
    const client = await MongoClient.connect(uri, { maxPoolSize })
    try {
      const items = client.db(dbName).collection('items')
      const burst = await Promise.allSettled(
        Array.from({ length: 100 }, (_, n) => items.findOne({}, { timeoutMS: 1 + (n % 3) })),
      )
      const failures = burst.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []))
      expect(failures.length).toBeGreaterThan(0)
      for (const failure of failures) expect(failure).toBeInstanceOf(MongoOperationTimeoutError)
      const started = Date.now()
      await expect(items.findOne({ n: 7 }, { timeoutMS: 2000 })).resolves.toMatchObject({ n: 7 })
      expect(Date.now() - started).toBeLessThan(2000)
    } finally {
      await client.close()
    }
  })

  it('of cursor reads (getMores) leaves the pool usable at once', async () => {
    const client = await MongoClient.connect(uri, { maxPoolSize: 1 })
    try {
      const items = client.db(dbName).collection('items')
      const burst = await Promise.allSettled(
        Array.from({ length: 50 }, (_, n) =>
          items.find({}, { batchSize: 3, timeoutMS: 2 + (n % 5), timeoutMode: 'iteration' }).toArray(),
        ),
      )
      expect(burst.some((result) => result.status === 'rejected')).toBe(true)
      const started = Date.now()
      const all = await items.find({}, { batchSize: 3, timeoutMS: 2000 }).toArray()
      expect(all).toHaveLength(40)
      expect(Date.now() - started).toBeLessThan(2000)
    } finally {
      await client.close()
    }
  })
})

describe('a batch that fails to decode in JS', () => {
  // Documents 0-9 in batches of 2; document 5 holds invalid UTF-8. The failure used to leave the
  // cursor open: the next read went on at document 6, so document 4 was lost without a word.
  const BAD = 5
  let server: ServedReplay
  let client: MongoClient
  let reference: OfficialClient

  beforeAll(async () => {
    const documents = Array.from({ length: 10 }, (_, n) => {
      const bytes = Buffer.from(BSON.serialize({ n, s: 'abc' }))
      if (n === BAD) bytes[bytes.indexOf('abc') + 1] = 0xff
      return bytes
    })
    server = await serveDocuments({ utf8: documents })
    client = await MongoClient.connect(server.uri)
    reference = await OfficialClient.connect(server.uri)
  }, 600_000)

  afterAll(async () => {
    await Promise.all([client?.close(), reference?.close()])
    await server?.stop()
  })

  const items = () => client.db('bench').collection('utf8')
  const openCursors = async () => {
    const { metrics } = await reference.db('admin').command({ serverStatus: 1 })
    return Number(metrics.cursor.open.total)
  }
  /** js-bson's error for the bad document, as the official driver throws it. */
  const officialError = async () => {
    const cursor = reference.db('bench').collection('utf8').find({}, { batchSize: 2 })
    try {
      for (;;) await cursor.next()
    } catch (error) {
      return error as Error
    } finally {
      await cursor.close()
    }
  }

  /** After the failure: every read rejects, and the server cursor is gone. */
  async function expectFailedForGood(cursor: AbstractCursor<unknown>) {
    await expect(cursor.next()).rejects.toBeInstanceOf(MongoCursorExhaustedError)
    await expect(cursor.hasNext()).rejects.toBeInstanceOf(MongoCursorExhaustedError)
    await expect(cursor.toArray()).rejects.toBeInstanceOf(MongoCursorExhaustedError)
    await expect(cursor.nextBatch()).rejects.toBeInstanceOf(MongoCursorExhaustedError)
    await expect(cursor.next()).rejects.toThrow('an earlier read failed')
    await cursor.close()
    await expect.poll(openCursors, { timeout: 5000 }).toBe(0)
  }

  it.each([
    ['find', () => items().find({}, { batchSize: 2 })],
    ['findCursor', () => items().findCursor({}, { batchSize: 2 })],
    ['aggregate', () => items().aggregate([], { batchSize: 2 })],
  ])('%s: next() fails at the bad batch, then every read rejects', async (_, open) => {
    const expected = await officialError()
    const cursor = open() as AbstractCursor<Document>
    const read: number[] = []
    let failure: unknown
    try {
      for (;;) {
        const document = await cursor.next()
        if (document === null) break
        read.push(document.n)
      }
    } catch (error) {
      failure = error
    }
    expect(failure).toBeInstanceOf(Error)
    expect((failure as Error).constructor).toBe(expected!.constructor)
    expect((failure as Error).message).toBe(expected!.message)
    // The documents before the failed batch, none after it.
    expect(read).toEqual([0, 1, 2, 3])
    await expectFailedForGood(cursor)
  })

  it('toArray() and for await reject instead of returning the documents around the bad one', async () => {
    await expect(items().find({}, { batchSize: 2 }).toArray()).rejects.toThrow('Invalid UTF-8')
    const seen: number[] = []
    const iterate = async () => {
      for await (const document of items().find({}, { batchSize: 2 })) seen.push(document.n)
    }
    await expect(iterate()).rejects.toThrow('Invalid UTF-8')
    expect(seen).toEqual([0, 1, 2, 3])
    await expect.poll(openCursors, { timeout: 5000 }).toBe(0)
  })

  it('in the first batch too', async () => {
    const cursor = items().find({}, { batchSize: 8 })
    await expect(cursor.next()).rejects.toThrow('Invalid UTF-8')
    await expectFailedForGood(cursor)
  })

  it('a shadowed find fails on the served side and does not carry on', async () => {
    const shadowed = shadow(reference.db('bench').collection('utf8'), items(), {
      sampleRate: 0,
      serve: 'rumongo',
    })
    const cursor = shadowed.find({}, { batchSize: 2 })
    await expect(cursor.toArray()).rejects.toThrow('Invalid UTF-8')
    await expect.poll(openCursors, { timeout: 5000 }).toBe(0)
  })

  it('a map() transform that throws fails the cursor (the official driver then says null: the end)', async () => {
    const cursor = client
      .db('bench')
      .collection('utf8')
      .find({}, { batchSize: 2, limit: 4 })
      .map((document) => {
        if (document.n === 1) throw new TypeError('transform failed')
        return document.n
      })
    await expect(cursor.next()).resolves.toBe(0)
    await expect(cursor.next()).rejects.toThrow('transform failed')
    await expectFailedForGood(cursor)
  })
})
