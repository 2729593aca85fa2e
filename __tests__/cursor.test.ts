// findCursor: streaming reads with bounded read-ahead, batch-at-a-time reads, Node streams, and
// server cursors killed however a read ends (break, close, error, garbage collection).
import { execFile } from 'node:child_process'
import { createRequire } from 'node:module'
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Long, MongoClient as OfficialClient, type Document } from 'mongodb'
import {
  type AbstractCursor,
  BSON,
  type FindCursorOptions,
  isLazyDocument,
  MongoClient,
  MongoCursorExhaustedError,
  MongoInvalidArgumentError,
  MongoServerError,
} from 'rumongo'
// @ts-expect-error: a plain ESM script without types
import { startReplay } from '../scripts/replay.mjs'
import {
  connectBoth,
  expectIdentical,
  serverCursorAlive,
  settled,
  uniqueDbName,
  uri,
  type Drivers,
} from './setup/helpers.js'

// The native cursor under the TypeScript one, and the error translation.
const require = createRequire(import.meta.url)
const { NativeClient, BatchOutput } = require('../dist/native.cjs')
const { callNative } = require('../dist/errors.js')

const DOCS = 3000
const dbName = uniqueDbName('cursor')
let drivers: Drivers

beforeAll(async () => {
  drivers = await connectBoth()
  const documents = Array.from({ length: DOCS }, (_, n) => ({
    n,
    label: `doc ${n}`,
    tags: ['a', 'b'].slice(0, n % 3),
    at: new Date(1_700_000_000_000 + n),
  }))
  await drivers.official.db(dbName).collection('items').insertMany(documents)
})

afterAll(async () => {
  await drivers?.official.db(dbName).dropDatabase()
  await drivers?.close()
})

const ours = () => drivers.rumongo.db(dbName).collection('items')
const theirs = () => drivers.official.db(dbName).collection('items')

/** Whether the server cursor `id` on the items collection is still open. */
const cursorAlive = (id: Long) => serverCursorAlive(drivers.official.db(dbName), 'items', id)

describe('findCursor on the real server', () => {
  const options = { sort: { n: 1 }, batchSize: 97 } as const

  it.each([0, 1, 4])(
    'yields every document in order over many getMores, as the official driver (prefetch %i)',
    async (prefetch) => {
      const documents: Document[] = []
      // Several reads in flight: the native cursor serves them in call order.
      for await (const document of ours().findCursor({}, { ...options, prefetch })) documents.push(document)
      expect(documents).toHaveLength(DOCS)
      expectIdentical(documents, await theirs().find({}, options).toArray())
    },
  )

  it('its for-await iterator serves calls in order, even concurrent ones across batches', async () => {
    const iterator = ours().findCursor({}, options)[Symbol.asyncIterator]()
    // Ten calls before the first batch arrived, then 100 across the end of the first batch (97).
    const first = await Promise.all(Array.from({ length: 10 }, () => iterator.next()))
    const second = await Promise.all(Array.from({ length: 100 }, () => iterator.next()))
    expect([...first, ...second].map((result) => result.value?.n)).toEqual(
      Array.from({ length: 110 }, (_, n) => n),
    )
    expect(await iterator.return()).toEqual({ value: undefined, done: true })
    expect(await iterator.next()).toEqual({ value: undefined, done: true })
  })

  it('a map() transform that throws ends the for-await with its error and closes the cursor', async () => {
    const cursor = ours()
      .findCursor({}, options)
      .map((document) => {
        if (document.n === 5) throw new Error('no 5')
        return document.n as number
      })
    const seen: number[] = []
    await expect(
      (async () => {
        for await (const n of cursor) seen.push(n)
      })(),
    ).rejects.toThrow('no 5')
    expect(seen).toEqual([0, 1, 2, 3, 4])
    // Closed, but `closed` only once nothing is left buffered, as the official cursor's.
    expect([cursor.killed, cursor.closed, cursor.bufferedCount() > 0]).toEqual([true, false, true])
  })

  it('nextBatch() hands over one server batch at a time, then null', async () => {
    const cursor = ours().findCursor({ n: { $lt: 500 } }, options)
    const sizes: number[] = []
    const documents: Document[] = []
    for (let batch = await cursor.nextBatch(); batch !== null; batch = await cursor.nextBatch()) {
      sizes.push(batch.length)
      documents.push(...batch)
    }
    expect(sizes).toEqual([97, 97, 97, 97, 97, 15])
    expectIdentical(
      documents,
      await theirs()
        .find({ n: { $lt: 500 } }, options)
        .toArray(),
    )
    expect(await cursor.nextBatch()).toBeNull()
  })

  it('nextBatch() first returns what next() left of the current batch', async () => {
    const cursor = ours().findCursor({}, { ...options, limit: 150 })
    expect((await cursor.next())?.n).toBe(0)
    expect((await cursor.nextBatch())?.map((document) => document.n)).toEqual(
      Array.from({ length: 96 }, (_, i) => i + 1),
    )
    expect((await cursor.nextBatch())?.length).toBe(53)
    expect(await cursor.nextBatch()).toBeNull()
  })

  it('without a batchSize, batches hold ~512 KiB once the same find has seen its documents', async () => {
    const official = drivers.official.db(dbName).collection('large')
    // 20,040 bytes of BSON each: _id (17), n (7), text (20,011), framing (5).
    await official.insertMany(Array.from({ length: 100 }, (_, n) => ({ n, text: 'x'.repeat(20_000) })))
    const batchSizes = async (options: FindCursorOptions) => {
      const all = { ...options, sort: { n: 1 } } as const
      const cursor = drivers.rumongo.db(dbName).collection('large').findCursor({}, all)
      const [sizes, documents]: [number[], Document[]] = [[], []]
      for (let batch = await cursor.nextBatch(); batch !== null; batch = await cursor.nextBatch()) {
        sizes.push(batch.length)
        documents.push(...batch)
      }
      expectIdentical(documents, await official.find({}, all).toArray())
      return sizes
    }
    // The first query of a namespace and projection: 2,000 documents per batch.
    expect(await batchSizes({})).toEqual([100])
    // Then floor(512 KiB / 20,040 bytes) = 26 documents per batch.
    expect(await batchSizes({})).toEqual([26, 26, 26, 22])
    // Another projection has its own size, and a caller's batchSize wins.
    expect(await batchSizes({ projection: { n: 1 } })).toEqual([100])
    expect(await batchSizes({ batchSize: 40 })).toEqual([40, 40, 20])
  })

  it('a closed cursor reads as the official one in every iteration form', async () => {
    const forms: [string, (cursor: AbstractCursor<Document>) => Promise<unknown>][] = [
      [
        'for await',
        async (cursor) => {
          const documents = []
          for await (const document of cursor) documents.push(document)
          return documents
        },
      ],
      ['next', (cursor) => cursor.next()],
      ['hasNext', (cursor) => cursor.hasNext()],
      ['tryNext', (cursor) => cursor.tryNext()],
      ['toArray', (cursor) => cursor.toArray()],
      [
        'forEach',
        async (cursor) => {
          const documents: Document[] = []
          await cursor.forEach((document) => void documents.push(document))
          return documents
        },
      ],
      ['stream', (cursor) => cursor.stream().toArray()],
    ]
    // Closed before any read, with the server cursor open (killed by close()), after the end.
    const states: [string, (cursor: AbstractCursor<Document>) => Promise<unknown>][] = [
      ['unread', async () => {}],
      ['open on the server', (cursor) => cursor.next()],
      ['exhausted', (cursor) => cursor.toArray()],
    ]
    const outcome = (read: Promise<unknown>) =>
      read.then(
        (value) => ({ value }),
        (error: Error) => ({ error: error.constructor.name, message: error.message }),
      )
    const few = { n: { $lt: 12 } }
    const seen: Record<string, { official: unknown; rumongo: unknown }> = {}
    for (const [form, read] of forms) {
      for (const [state, reach] of states) {
        const both = {
          official: theirs().find(few, { batchSize: 5 }),
          rumongo: ours().find(few, { batchSize: 5 }),
        }
        const result = { official: undefined as unknown, rumongo: undefined as unknown }
        for (const driver of ['official', 'rumongo'] as const) {
          const cursor = both[driver] as unknown as AbstractCursor<Document>
          await reach(cursor)
          await cursor.close()
          result[driver] = await outcome(read(cursor))
        }
        seen[`${form}, ${state}`] = result
      }
    }
    for (const [name, { official, rumongo }] of Object.entries(seen)) expect(rumongo, name).toEqual(official)
    // The official driver's rule, which the comparison covers: reads end quietly, but next() and
    // tryNext() of a cursor killed by close() reject.
    expect(seen['for await, open on the server']!.official).toEqual({ value: [] })
    expect(seen['next, open on the server']!.official).toEqual({
      error: 'MongoCursorExhaustedError',
      message: 'Cursor is exhausted',
    })
  })

  it('a cursor closed while it opens, then rewound, reads its results once', async () => {
    const filter = { n: { $lt: 150 } }
    const cursor = ours().findCursor(filter, options)
    const reading = cursor.next()
    await cursor.close()
    expect(await reading).toBeNull()
    await cursor.rewind()
    expectIdentical(await cursor.toArray(), await theirs().find(filter, options).toArray())
  })

  it('rewind() not awaited: the next read runs the query again, as with the official driver', async () => {
    // The official rewind() returns nothing: its callers (Mongoose's QueryCursor) read at once.
    const filter = { n: { $lt: 300 } }
    const reads = async (cursor: any) => {
      const first = [await cursor.next(), await cursor.next()]
      cursor.rewind()
      const next = await cursor.next()
      cursor.rewind()
      const more = await cursor.hasNext()
      cursor.rewind()
      const all = await cursor.toArray()
      cursor.rewind()
      const iterated = []
      for await (const document of cursor) iterated.push(document)
      await cursor.close()
      return { first, next, more, all, iterated }
    }
    expectIdentical(await reads(ours().find(filter, options)), await reads(theirs().find(filter, options)))
  })

  it('addCursorFlag: the official checks and errors; noCursorTimeout is sent, partial taken, exhaust refused', async () => {
    const filter = { n: { $lt: 200 } }
    const outcome = (set: () => unknown) => {
      try {
        set()
        return 'ok'
      } catch (error: any) {
        return `${error.constructor.name}: ${error.message}`
      }
    }
    for (const [flag, value] of [
      ['bogus', true],
      ['noCursorTimeout', 'yes'],
      ['partial', 1],
      ['noCursorTimeout', true],
      ['partial', false],
      ['tailable', false],
    ] as const) {
      expect(
        outcome(() =>
          ours()
            .find(filter)
            .addCursorFlag(flag as any, value as any),
        ),
      ).toBe(
        outcome(() =>
          theirs()
            .find(filter)
            .addCursorFlag(flag as any, value as any),
        ),
      )
    }
    const started = async (cursor: any) => {
      await cursor.next()
      return outcome(() => cursor.addCursorFlag('noCursorTimeout', true))
    }
    expect(await started(ours().find(filter))).toBe(await started(theirs().find(filter)))
    // The find sends noCursorTimeout (the embedded server refuses it, to both drivers alike);
    // partial is a legacy OP_QUERY flag neither driver sends.
    const sent = (cursor: any, flag: string) =>
      cursor
        .addCursorFlag(flag, true)
        .toArray()
        .then(
          (documents: unknown[]) => documents,
          (error: Error) => `${error.constructor.name}: ${error.message}`,
        )
    for (const flag of ['noCursorTimeout', 'partial']) {
      expect(await sent(ours().find(filter, options), flag)).toEqual(
        await sent(theirs().find(filter, options), flag),
      )
    }
    // An aggregate takes the flags and, as in the official driver, does not send them.
    const both = (cursor: any) =>
      cursor.addCursorFlag('noCursorTimeout', true).addCursorFlag('partial', true).toArray()
    expectIdentical(
      await both(ours().aggregate([{ $match: filter }, { $sort: { n: 1 } }])),
      await both(theirs().aggregate([{ $match: filter }, { $sort: { n: 1 } }])),
    )
    expect(() => ours().find(filter).addCursorFlag('exhaust', true)).toThrow(
      new MongoInvalidArgumentError('rumongo does not support the cursor flag "exhaust"'),
    )
  })

  it('a projection holding a BigInt reads as with the official driver', async () => {
    const query = {
      sort: { n: 1 },
      limit: 5,
      projection: { n: 1, tags: { $elemMatch: { $eq: 2n } } },
    } as const
    const outcome = (read: Promise<Document[]>) =>
      read.then(
        (documents) => ({ documents }),
        (error: { name: string; code?: number }) => ({ error: [error.name, error.code] }),
      )
    const [mine, official] = await Promise.all([
      outcome(ours().findCursor({}, query).toArray()),
      outcome(theirs().find({}, query).toArray()),
    ])
    expect(mine).toEqual(official)
  })

  it('a native find resolves to its first batch, and to a cursor only while the server has more', async () => {
    const options = BSON.serialize({ sort: { n: 1 }, batchSize: 97 })
    const client = await NativeClient.connect(uri)
    // The n of a raw batch's first and last documents (BSON back to back).
    const firstNumbers = (batch: { count: number; documents: Buffer }) => {
      const numbers: number[] = []
      for (let at = 0, length = 0; at < batch.documents.length; at += length) {
        length = batch.documents.readInt32LE(at)
        numbers.push(BSON.deserialize(batch.documents.subarray(at, at + length)).n)
      }
      expect(numbers).toHaveLength(batch.count)
      return [numbers[0], numbers.at(-1)]
    }
    try {
      const items = client.collection(dbName, 'items')
      const { firstBatch, cursor } = await items.find(BSON.serialize({}), options, BatchOutput.Raw)
      expect(firstNumbers(firstBatch)).toEqual([0, 96])
      expect(firstBatch.hasMore).toBe(true)
      expect(firstNumbers(await cursor.nextBatch())).toEqual([97, 193])
      await cursor.close()
      // One batch holds the whole result: no cursor to read on or to close.
      const limited = BSON.serialize({ sort: { n: 1 }, limit: 5 })
      const whole = await items.find(BSON.serialize({}), limited, BatchOutput.Raw)
      expect(firstNumbers(whole.firstBatch)).toEqual([0, 4])
      expect(whole.firstBatch.hasMore).toBe(false)
      expect(whole.cursor).toBeUndefined()
    } finally {
      await client.close()
    }
  })

  it('a large first reply comes in parts, in order, and nextBatch() still hands it over whole', async () => {
    const all = { sort: { n: 1 }, batchSize: DOCS } as const
    const expected = await theirs().find({}, all).toArray()
    // The native cursor: the one server reply (all documents, ~200 KiB) as several parts, in order.
    const client = await NativeClient.connect(uri)
    try {
      const { firstBatch, cursor: native } = await client
        .collection(dbName, 'items')
        .find(BSON.serialize({}), BSON.serialize(all), BatchOutput.Raw)
      const parts: { count: number; partsLeft: number; first?: number }[] = []
      for (let batch = firstBatch; batch !== null; batch = await native.nextBatch()) {
        // The first document's n (a server may end with an empty getMore reply).
        const first = batch.count > 0 ? batch.documents.subarray(0, batch.documents.readInt32LE(0)) : null
        parts.push({
          count: batch.count,
          partsLeft: batch.replyPartsLeft,
          first: first && BSON.deserialize(first).n,
        })
      }
      const firstReplyParts = parts[0].partsLeft + 1
      expect(firstReplyParts).toBeGreaterThan(1)
      expect(parts.slice(0, firstReplyParts).map((part) => part.partsLeft)).toEqual(
        Array.from({ length: firstReplyParts }, (_, index) => firstReplyParts - 1 - index),
      )
      expect(parts.slice(firstReplyParts).every((part) => part.partsLeft === 0)).toBe(true)
      expect(parts.reduce((sum, part) => sum + part.count, 0)).toBe(DOCS)
      let first = 0
      for (const part of parts.filter((part) => part.count > 0)) {
        expect(part.first).toBe(first)
        first += part.count
      }
    } finally {
      await client.close()
    }
    expectIdentical(await ours().find({}, all), expected)
    const cursor = ours().findCursor({}, all)
    expectIdentical(await cursor.nextBatch(), expected)
    expect(await cursor.nextBatch()).toBeNull()
    expect(cursor.closed).toBe(true)
  })

  it('{ lazy: true } yields lazy documents equal to the official ones', async () => {
    const lazy: Document[] = []
    for await (const document of ours().findCursor({ n: { $lt: 300 } }, { ...options, lazy: true })) {
      expect(isLazyDocument(document)).toBe(true)
      lazy.push(document.toObject())
    }
    expectIdentical(
      lazy,
      await theirs()
        .find({ n: { $lt: 300 } }, options)
        .toArray(),
    )
  })

  it('map() and stream() work as on the official cursor', async () => {
    const seen: number[] = []
    await pipeline(
      ours()
        .findCursor({ n: { $lt: 400 } }, options)
        .map((document) => document.n)
        .stream(),
      new Writable({
        objectMode: true,
        write(n: number, _encoding, done) {
          seen.push(n)
          setImmediate(done) // a consumer slower than the cursor
        },
      }),
    )
    expect(seen).toEqual(Array.from({ length: 400 }, (_, i) => i))
  })

  it('leaving a for-await early kills the server cursor; an open one stays alive', async () => {
    const kept = ours().findCursor({}, options)
    await kept.next()
    expect(kept.id).toBeInstanceOf(Long)
    expect(await cursorAlive(kept.id!)).toBe(true)
    await kept.close()
    expect(await settled(() => cursorAlive(kept.id!), false)).toBe(false)

    const cursor = ours().findCursor({}, options)
    let read = 0
    const id = await (async () => {
      for await (const _ of cursor) if (++read === 10) return cursor.id!
    })()
    // Closed, but `closed` only once nothing is left buffered, as the official cursor's.
    expect([cursor.killed, cursor.closed, cursor.bufferedCount() > 0]).toEqual([true, false, true])
    expect(await settled(() => cursorAlive(id!), false)).toBe(false)
  })

  it('a failure mid-stream rejects the iteration and emits error on the stream', async () => {
    const cursor = ours().findCursor({}, { ...options, prefetch: 0 })
    await cursor.next()
    await drivers.official.db(dbName).command({ killCursors: 'items', cursors: [cursor.id!] })
    const iterated = (async () => {
      for await (const _ of cursor);
    })()
    await expect(iterated).rejects.toBeInstanceOf(MongoServerError)
    await expect(iterated).rejects.toMatchObject({ code: 43 })

    const streamed = ours().findCursor({}, { ...options, prefetch: 0 })
    await streamed.next()
    await drivers.official.db(dbName).command({ killCursors: 'items', cursors: [streamed.id!] })
    const stream = streamed.stream()
    const error = await new Promise((resolve) => stream.on('error', resolve).resume())
    expect(error).toBeInstanceOf(MongoServerError)
  })

  it('after a failed read, every later read rejects: never null or a short array passed off as the end', async () => {
    // The official driver, for reference: next() throws MongoCursorExhaustedError, but hasNext()
    // says false and toArray() resolves to [] (and next() after a failed find resolves to null).
    const reference = theirs().find({}, { batchSize: 97 })
    await reference.next()
    await drivers.official.db(dbName).command({ killCursors: 'items', cursors: [reference.id!] })
    await expect(reference.toArray()).rejects.toMatchObject({ code: 43 })
    await expect(reference.next()).rejects.toThrow(/exhausted/)
    expect(await reference.toArray()).toEqual([])

    // A getMore the server fails (its cursor was killed), and a find it fails.
    const killed = ours().findCursor({}, { ...options, prefetch: 0 })
    await killed.next()
    await drivers.official.db(dbName).command({ killCursors: 'items', cursors: [killed.id!] })
    await expect(killed.toArray()).rejects.toMatchObject({ code: 43 })
    const failedFind = ours().find({ $bogus: 1 })
    await expect(failedFind.next()).rejects.toBeInstanceOf(MongoServerError)
    for (const failed of [killed, failedFind]) {
      expect(failed.closed).toBe(true)
      const reads: [string, () => Promise<unknown>][] = [
        ['next', () => failed.next()],
        ['tryNext', () => failed.tryNext()],
        ['hasNext', () => failed.hasNext()],
        ['nextBatch', () => failed.nextBatch()],
        ['toArray', () => failed.toArray()],
        [
          'for await',
          async () => {
            for await (const _ of failed);
          },
        ],
        ['forEach', () => failed.forEach(() => {})],
        [
          'stream',
          () => pipeline(failed.stream(), new Writable({ objectMode: true, write: (_, __, done) => done() })),
        ],
      ]
      for (const [name, read] of reads) {
        const error = await read().then(
          (value) => new Error(`${name} resolved to ${JSON.stringify(value)}`),
          (error: unknown) => error,
        )
        expect(error, name).toBeInstanceOf(MongoCursorExhaustedError)
        expect(error, name).toMatchObject({ code: 'ERR_CURSOR_EXHAUSTED', message: /an earlier read failed/ })
        expect((error as Error).cause, name).toBeInstanceOf(MongoServerError)
      }
      // close() does not turn the failure into an empty result; rewind() runs the query again.
      await failed.close()
      await expect(failed.toArray()).rejects.toBeInstanceOf(MongoCursorExhaustedError)
    }
    await killed.rewind()
    expect(await killed.toArray()).toHaveLength(DOCS)
  })

  it('a native cursor whose read failed keeps failing instead of reporting the end', async () => {
    const client = await NativeClient.connect(uri)
    try {
      const collection = client.collection(dbName, 'items')
      const { firstBatch: first, cursor: native } = await collection.find(
        BSON.serialize({}),
        BSON.serialize({ batchSize: 5 }),
        BatchOutput.Raw,
      )
      const id = Long.fromBigInt(first.cursorId)
      await drivers.official.db(dbName).command({ killCursors: 'items', cursors: [id] })
      await expect(callNative(() => native.nextBatch())).rejects.toBeInstanceOf(MongoServerError)
      await expect(callNative(() => native.nextBatch())).rejects.toBeInstanceOf(MongoCursorExhaustedError)
      await native.close()
      await expect(callNative(() => native.nextBatch())).rejects.toBeInstanceOf(MongoCursorExhaustedError)
    } finally {
      await client.close()
    }
  })

  it('rejects bad cursor options with a typed error', () => {
    expect(() => ours().findCursor({}, { prefetch: -1 })).toThrow(MongoInvalidArgumentError)
    expect(() => ours().findCursor({}, { prefetch: 1.5 })).toThrow(/non-negative integer/)
    expect(() => ours().findCursor({}, { lazy: 'yes' as never })).toThrow(MongoInvalidArgumentError)
    expect(() => ours().findCursor({}).prefetch(-2)).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT' }),
    )
  })

  it('kills the server cursor of a cursor garbage-collected without close()', async () => {
    const script = `
      const { MongoClient } = require('rumongo')
      const { MongoClient: Official } = require('mongodb')
      const uri = process.env.MONGODB_URI
      ;(async () => {
        const client = await MongoClient.connect(uri)
        const official = await Official.connect(uri)
        let cursor = client.db(process.env.DB).collection('items').findCursor({}, { batchSize: 5 })
        await cursor.next()
        await new Promise((resolve) => setTimeout(resolve, 100)) // let the read-ahead settle
        const id = cursor.id
        cursor = null
        for (let i = 0; i < 5; i++) {
          global.gc()
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        await new Promise((resolve) => setTimeout(resolve, 300)) // the killCursors round trip
        const alive = await official.db(process.env.DB).command({ getMore: id, collection: 'items' })
          .then(() => 'alive', (error) => error.codeName)
        console.log(alive)
        await Promise.all([client.close(), official.close()])
      })()`
    const root = fileURLToPath(new URL('..', import.meta.url))
    const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', '-e', script], {
      cwd: root,
      env: { ...process.env, MONGODB_URI: uri, DB: dbName },
      timeout: 30_000,
    })
    expect(stdout.trim()).toBe('CursorNotFound')
  })
})

describe('one-batch results (the small-read path)', () => {
  // Counts calls into the native cursor: each one is a round trip through the tokio runtime and
  // back to the JS thread, which is most of a small read's cost on these machines.
  async function nativeCursorCalls(read: () => Promise<unknown>): Promise<Record<string, number>> {
    const { NativeCursor } = require('../dist/native.cjs')
    const counts: Record<string, number> = {}
    const originals = new Map<string, (...args: unknown[]) => unknown>()
    for (const name of ['nextBatch', 'close']) {
      const original = NativeCursor.prototype[name]
      originals.set(name, original)
      NativeCursor.prototype[name] = function (this: unknown, ...args: unknown[]) {
        counts[name] = (counts[name] ?? 0) + 1
        return original.apply(this, args)
      }
    }
    try {
      await read()
    } finally {
      for (const [name, original] of originals) NativeCursor.prototype[name] = original
    }
    return counts
  }

  it('findOne and a find that fits one batch make no native call after the find', async () => {
    const collection = ours()
    const official = theirs()
    let one: unknown
    expect(await nativeCursorCalls(async () => (one = await collection.findOne({ n: 7 })))).toEqual({})
    expect(one).toMatchObject({ n: 7 })
    expectIdentical(one, await official.findOne({ n: 7 }))
    let page: unknown
    const find = () => collection.find({}, { sort: { n: 1 }, limit: 20 }).toArray()
    expect(await nativeCursorCalls(async () => (page = await find()))).toEqual({})
    expect(page).toHaveLength(20)
    expectIdentical(page, await official.find({}, { sort: { n: 1 }, limit: 20 }).toArray())
    // A cursor closed while the server still has more batches is still killed.
    const open = collection.find({}, { batchSize: 10 })
    const calls = await nativeCursorCalls(async () => {
      expect(await open.next()).not.toBeNull()
      await open.close()
    })
    expect(calls).toMatchObject({ close: 1 })
  })
})

describe('findCursor read-ahead (replay server, which counts getMores and open cursors)', () => {
  interface Replay {
    uri: string
    stop(): Promise<void>
  }
  let server: Replay
  let client: MongoClient
  let official: OfficialClient

  beforeAll(async () => {
    server = await startReplay({ docs: 20_000 })
    client = await MongoClient.connect(server.uri)
    official = await OfficialClient.connect(server.uri)
  }, 600_000)

  afterAll(async () => {
    await Promise.all([client?.close(), official?.close()])
    await server?.stop()
  })

  const status = async () => {
    const { metrics } = await official.db('admin').command({ serverStatus: 1 })
    return { getMores: Number(metrics.commands.getMore.total), open: Number(metrics.cursor.open.total) }
  }
  const wide = () => client.db('bench').collection('wide45')

  // With 1,000 documents (~840 KiB) the first reply comes in parts, which are fetched already: the
  // getMores ahead still number `prefetch` (they used to wait until the parts were read).
  it.each([
    [0, 100],
    [1, 100],
    [3, 100],
    [1, 1000],
    [3, 1000],
  ])(
    'with prefetch %i, fetches only that many batches ahead of a stalled reader (batches of %i)',
    async (prefetch, batchSize) => {
      const before = await status()
      const cursor = wide().findCursor({}, { batchSize, prefetch })
      const stream = cursor.stream()
      const first = await new Promise((resolve) => stream.once('data', resolve))
      stream.pause()
      expect(first).toMatchObject({ n: 0 })
      await sleep(300) // a stalled consumer: nothing more may be fetched
      expect((await status()).getMores - before.getMores).toBe(prefetch)
      let count = 1
      stream.on('data', () => count++).resume()
      await new Promise((resolve) => stream.on('end', resolve))
      expect(count).toBe(20_000)
      const after = await status()
      expect(after.getMores - before.getMores).toBe(20_000 / batchSize - 1) // the first batch came with find
      expect(await settled(async () => (await status()).open, before.open)).toBe(before.open)
    },
  )

  it('toArray() keeps 2,000-document batches where a stream of the same find gets ~512 KiB ones', async () => {
    const getMoresOf = async (read: () => Promise<unknown>) => {
      const before = await status()
      await read()
      return (await status()).getMores - before.getMores
    }
    const query = { limit: 10_000 } as const
    const collect = () => wide().find({}, query).toArray()
    const stream = async () => {
      for await (const document of wide().findCursor({}, query)) expect(document).toHaveProperty('n')
    }
    // The first run learns the document size (~840 bytes).
    expect(await getMoresOf(collect)).toBe(4)
    // ~620 documents per batch: ~16 batches.
    const streamed = await getMoresOf(stream)
    expect(streamed).toBeGreaterThanOrEqual(12)
    expect(streamed).toBeLessThanOrEqual(20)
    expect(await getMoresOf(collect)).toBe(4)
    // A rewound cursor read as a stream streams.
    const cursor = wide().find({}, query)
    expect(await getMoresOf(() => cursor.toArray())).toBe(4)
    await cursor.rewind()
    const rewound = await getMoresOf(async () => {
      for await (const document of cursor) expect(document).toHaveProperty('n')
    })
    expect(rewound).toBe(streamed)
  })

  it('closing the client kills its open cursors on the server', async () => {
    const before = await status()
    const other = await MongoClient.connect(server.uri)
    const cursors = [0, 1, 2].map(() =>
      other.db('bench').collection('wide45').findCursor({}, { batchSize: 50, prefetch: 1 }),
    )
    for (const cursor of cursors) await cursor.next()
    expect((await status()).open - before.open).toBe(3)
    await other.close()
    expect(await settled(async () => (await status()).open, before.open)).toBe(before.open)
  })

  it('an early break leaves no open cursor on the server', async () => {
    const before = await status()
    let read = 0
    for await (const _ of wide().findCursor({}, { batchSize: 50, prefetch: 2 })) if (++read === 120) break
    expect(await settled(async () => (await status()).open, before.open)).toBe(before.open)
  })
})

describe('findCursor memory with a slow consumer', () => {
  it('streams 1,000,000 documents (~740 MB of BSON) in a bounded heap and RSS', async () => {
    const server = await startReplay({ docs: 1_000_000 })
    try {
      // A Writable that takes one document per turn of the event loop: the stream must wait for it.
      const script = `
        const { Writable } = require('node:stream')
        const { pipeline } = require('node:stream/promises')
        const { MongoClient } = require('rumongo')
        ;(async () => {
          const client = await MongoClient.connect(process.env.REPLAY_URI)
          let count = 0
          const slow = new Writable({
            objectMode: true,
            highWaterMark: 16,
            write(document, _encoding, done) {
              count++
              setImmediate(done)
            },
          })
          await pipeline(client.db('bench').collection('wide45').findCursor({}).stream(), slow)
          await client.close()
          console.log(JSON.stringify({ count, maxRssMB: process.resourceUsage().maxRSS / 1024 }))
        })()`
      const root = fileURLToPath(new URL('..', import.meta.url))
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['--max-old-space-size=256', '-e', script],
        {
          cwd: root,
          env: { ...process.env, REPLAY_URI: server.uri },
          timeout: 120_000,
        },
      )
      const { count, maxRssMB } = JSON.parse(stdout)
      expect(count).toBe(1_000_000)
      // Holding it all would take the BSON alone (~740 MB) and crash the 256 MB heap; measured
      // ~150 MB on Node 20 and ~285 MB on Node 24, whose heap grows further before collecting.
      expect(maxRssMB).toBeLessThan(400)
    } finally {
      await server.stop()
    }
  }, 180_000)
})
