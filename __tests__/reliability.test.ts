// No stall, no silent loss, no hang: reads that time out in bursts leave the pool usable, and every
// read after a failed one fails instead of skipping documents.
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EJSON } from 'bson'
import { BSON, Long, MongoClient as OfficialClient, type Document } from 'mongodb'
import {
  MongoClient,
  MongoCursorExhaustedError,
  MongoInvalidArgumentError,
  MongoOperationTimeoutError,
  MongoParseError,
  MongoServerError,
  shadow,
  type AbstractCursor,
} from 'rumongo'
import { uniqueDbName, uri } from './setup/helpers.js'
import { startWireServer } from './setup/wire_server.js'
import { serveDocuments, type ServedReplay } from './setup/replay.js'
// @ts-expect-error: a plain ESM script without types
import { startReplay } from '../scripts/replay.mjs'

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

describe('options js-bson refuses (useBigInt64 without promoteLongs): its error on every path', () => {
  // The tape decoder never called js-bson, which checks them: rumongo returned documents.
  const refused = { useBigInt64: true, promoteLongs: false }
  it.each([
    ['find().next()', (c: any) => c.find({}, { ...refused, batchSize: 5 }).next()],
    ['findOne', (c: any) => c.findOne({}, refused)],
    ['aggregate().toArray()', (c: any) => c.aggregate([], refused).toArray()],
  ])('%s', async (_, read) => {
    const client = await MongoClient.connect(uri)
    try {
      const expected = await read(official.db(dbName).collection('items')).catch((error: unknown) => error)
      expect(expected).toBeInstanceOf(Error)
      const error = await read(client.db(dbName).collection('items')).catch((error: unknown) => error)
      expect((error as Error).name).toBe((expected as Error).name)
      expect((error as Error).message).toBe((expected as Error).message)
      await expect.poll(() => client.openCursorCount()).toBe(0)
    } finally {
      await client.close()
    }
  })
})

describe('a batch that fails to decode in JS', () => {
  // Documents 0-9 in batches of 2; document 5 holds invalid UTF-8. A failure of the whole batch
  // lost document 4 without a word; the read of 5 fails now, the cursor staying open as the
  // official one (the next read takes 6: cursor_failures.test compares each step).
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
  /** What the official driver reads before the bad document, and js-bson's error for it. */
  const officialRead = async (batchSize: number) => {
    const cursor = reference.db('bench').collection('utf8').find({}, { batchSize })
    const read: number[] = []
    try {
      for (;;) read.push((await cursor.next())!.n)
    } catch (error) {
      return { read, error: error as Error }
    } finally {
      await cursor.close()
    }
  }

  /**
   * After the failure, as the official cursor's: still open, the next read takes the document after
   * the bad one; close() leaves no server cursor.
   */
  async function expectReadsOn(cursor: AbstractCursor<Document>) {
    expect(cursor.closed).toBe(false)
    await expect(cursor.next()).resolves.toMatchObject({ n: BAD + 1 })
    await cursor.close()
    await expect.poll(openCursors, { timeout: 5000 }).toBe(0)
  }

  it.each([
    ['find', () => items().find({}, { batchSize: 2 })],
    ['findCursor', () => items().findCursor({}, { batchSize: 2 })],
    ['aggregate', () => items().aggregate([], { batchSize: 2 })],
  ])(
    '%s: next() returns the documents before the bad one, fails at it, then reads on past it',
    async (_, open) => {
      const { read: officialDocuments, error: expected } = await officialRead(2)
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
      // The documents before the bad one (its batch's too, as the official driver), none after it.
      expect(read).toEqual([0, 1, 2, 3, 4])
      expect(read).toEqual(officialDocuments)
      await expectReadsOn(cursor)
    },
  )

  it('toArray() and for await reject instead of returning the documents around the bad one', async () => {
    await expect(items().find({}, { batchSize: 2 }).toArray()).rejects.toThrow('Invalid UTF-8')
    const seen: number[] = []
    const iterate = async () => {
      for await (const document of items().find({}, { batchSize: 2 })) seen.push(document.n)
    }
    await expect(iterate()).rejects.toThrow('Invalid UTF-8')
    expect(seen).toEqual([0, 1, 2, 3, 4])
    await expect.poll(openCursors, { timeout: 5000 }).toBe(0)
  })

  it('in the first batch too, and with the bad document first in its batch', async () => {
    for (const batchSize of [8, 5]) {
      const { read: officialDocuments } = await officialRead(batchSize)
      const cursor = items().find({}, { batchSize })
      const read: number[] = []
      await expect(
        (async () => {
          for (;;) read.push((await cursor.next())!.n)
        })(),
      ).rejects.toThrow('Invalid UTF-8')
      expect(read).toEqual([0, 1, 2, 3, 4])
      expect(read).toEqual(officialDocuments)
      await expectReadsOn(cursor)
    }
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

  it('a map() transform that throws closes the cursor, its server cursor killed, as the official one', async () => {
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
    expect(cursor.killed).toBe(true)
    await expect(cursor.next()).rejects.toBeInstanceOf(MongoCursorExhaustedError)
    await expect(cursor.hasNext()).resolves.toBe(false)
    await expect(cursor.toArray()).resolves.toEqual([])
    await expect.poll(openCursors, { timeout: 5000 }).toBe(0)
  })
})

describe('pipeJson settles on every exit and kills its server cursor', () => {
  // Replay server: 5,000 generated documents per collection, open server cursors counted.
  let server: { uri: string; stop(): Promise<void> }
  let client: MongoClient
  let reference: OfficialClient

  beforeAll(async () => {
    server = await startReplay({ docs: 5000 })
    client = await MongoClient.connect(server.uri)
    reference = await OfficialClient.connect(server.uri)
  }, 600_000)

  afterAll(async () => {
    await Promise.all([client?.close(), reference?.close()])
    await server?.stop()
  })

  const wide = () => client.db('bench').collection('wide45')
  const openCursors = async () => {
    const { metrics } = await reference.db('admin').command({ serverStatus: 1 })
    return Number(metrics.cursor.open.total)
  }
  const noCursorLeft = () => expect.poll(openCursors, { timeout: 5000 }).toBe(0)
  /** A Writable that accepts `accepted` chunks, then never calls back: a reader that stopped. */
  const stalled = (accepted = 1, objectMode = false) =>
    new Writable({
      objectMode,
      highWaterMark: objectMode ? 16 : 1024,
      write(_chunk, _encoding, done) {
        if (accepted-- > 0) done()
      },
    })
  const sink = () => new Writable({ write: (_chunk, _encoding, done) => setImmediate(done) })

  it('a query the server refuses rejects before any byte: an HTTP handler can still answer 400', async () => {
    const http = createServer((_request, response) => {
      items()
        .pipeJson({ n: { $nope: 1 } }, {}, response)
        .catch((error: Error) => {
          expect(response.headersSent).toBe(false)
          response.statusCode = 400
          response.end(error.message)
        })
    })
    function items() {
      return client.db('bench').collection('wide45')
    }
    http.listen(0, '127.0.0.1')
    await once(http, 'listening')
    try {
      const response = await fetch(`http://127.0.0.1:${(http.address() as AddressInfo).port}/`)
      expect(response.status).toBe(400)
      expect(await response.text()).toMatch(/filter/)
    } finally {
      http.closeAllConnections()
      await new Promise((resolve) => http.close(resolve))
    }
  })

  it('a destination ended by other code mid-stream: rejects, cursor killed', async () => {
    let writes = 0
    const destination: Writable = new Writable({
      write(_chunk, _encoding, done) {
        if (++writes === 2) destination.end()
        setImmediate(done)
      },
    })
    await expect(wide().pipeJson({}, { batchSize: 100 }, destination)).rejects.toThrow()
    await noCursorLeft()
  })

  it('a destination that errors or closes mid-stream: rejects, cursor killed', async () => {
    for (const end of [
      (destination: Writable) => destination.destroy(new Error('disk full')),
      (destination: Writable) => destination.destroy(),
    ]) {
      const destination = stalled(3)
      const piped = wide().pipeJson({}, { batchSize: 100 }, destination)
      await sleep(100)
      end(destination)
      await expect(piped).rejects.toThrow(/disk full|Premature close/)
      await noCursorLeft()
    }
  })

  it('a destination already ended: rejects at once, no server cursor opened', async () => {
    const destination = sink()
    destination.end()
    await expect(wide().pipeJson({}, { batchSize: 100 }, destination)).rejects.toThrow(
      MongoInvalidArgumentError,
    )
    expect(await openCursors()).toBe(0)
  })

  it('timeoutMS bounds the whole call, a reader that stopped included', async () => {
    const started = Date.now()
    const destination = stalled()
    await expect(wide().pipeJson({}, { batchSize: 100, timeoutMS: 300 }, destination)).rejects.toThrow(
      MongoOperationTimeoutError,
    )
    expect(Date.now() - started).toBeLessThan(2000)
    expect(destination.destroyed).toBe(true)
    await noCursorLeft()
  })

  it("the client's timeoutMS bounds it too; timeoutMS: 0 on the call lifts it", async () => {
    const limited = await MongoClient.connect(server.uri, { timeoutMS: 300 })
    try {
      const items = limited.db('bench').collection('wide45')
      const started = Date.now()
      await expect(items.pipeJson({}, { batchSize: 100 }, stalled())).rejects.toThrow(
        MongoOperationTimeoutError,
      )
      expect(Date.now() - started).toBeLessThan(2000)
      const result = await items.pipeJson({}, { batchSize: 1000, timeoutMS: 0 }, sink())
      expect(result.count).toBe(5000)
    } finally {
      await limited.close()
    }
    await noCursorLeft()
  })

  it('two pipeJson into one destination: the second rejects at once, the first completes', async () => {
    let received = ''
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        received += chunk.toString()
        setImmediate(done)
      },
    })
    const first = wide().pipeJson({}, { batchSize: 500, projection: { _id: 1 } }, destination)
    const second = wide().pipeJson({}, { batchSize: 500 }, destination)
    await expect(second).rejects.toThrow(MongoInvalidArgumentError)
    await expect(first).resolves.toMatchObject({ count: 5000 })
    expect(JSON.parse(received)).toHaveLength(5000)
    await noCursorLeft()
  })

  it('stream(): destroyed mid-read, or piped into a destination that fails, kills the cursor', async () => {
    const stream = wide().find({}, { batchSize: 100 }).stream()
    await once(stream, 'data')
    stream.destroy()
    await noCursorLeft()
    const failing = new Writable({
      objectMode: true,
      write: (_chunk, _encoding, done) => done(new Error('sink failed')),
    })
    await expect(pipeline(wide().find({}, { batchSize: 100 }).stream(), failing)).rejects.toThrow(
      'sink failed',
    )
    await noCursorLeft()
    const stalledReader = stalled(1, true)
    const piping = pipeline(wide().find({}, { batchSize: 100 }).stream(), stalledReader)
    await sleep(100)
    stalledReader.destroy()
    await expect(piping).rejects.toThrow('Premature close')
    await noCursorLeft()
  })
})

describe('a broken server or proxy (fake wire server)', () => {
  /** A find cursor that never ends on its own: each batch holds `batchSize` documents (at most 4). */
  function endlessCursor() {
    let next = 0
    const batch = (size: unknown) =>
      Array.from({ length: Math.min(4, Number(size ?? 4)) }, () => ({ n: next++ }))
    return (command: Document) => {
      if (command.find !== undefined) {
        next = 0
        return {
          cursor: { id: Long.fromNumber(42), ns: 'db.items', firstBatch: batch(command.batchSize) },
          ok: 1,
        }
      }
      if (command.getMore !== undefined) {
        return {
          cursor: { id: Long.fromNumber(42), ns: 'db.items', nextBatch: batch(command.batchSize) },
          ok: 1,
        }
      }
      return { ok: 0, errmsg: `unexpected ${Object.keys(command)[0]}`, code: 59 }
    }
  }

  it.each([
    ['find().toArray()', (items: any) => items.find({}, { limit: 10, batchSize: 4 }).toArray()],
    ['limit() builder, batches of 3', (items: any) => items.find({}).limit(10).batchSize(3).toArray()],
    ['findLazy', (items: any) => items.findLazy({}, { limit: 10, batchSize: 4 })],
  ])('a limit is enforced on the client, the cursor killed, as the official driver (%s)', async (_, read) => {
    const server = await startWireServer({ answer: endlessCursor() })
    const [official, ours] = await Promise.all([
      OfficialClient.connect(server.uri),
      MongoClient.connect(server.uri),
    ])
    try {
      const expected = await official
        .db('db')
        .collection('items')
        .find({}, { limit: 10, batchSize: 4 })
        .toArray()
      expect(expected).toHaveLength(10)
      server.killed.length = 0
      const documents = await read(ours.db('db').collection('items'))
      expect(documents.map((document: Document) => document.n)).toEqual(
        expected.map((document) => document.n),
      )
      await expect.poll(() => server.killed).toEqual([42n])
    } finally {
      await Promise.all([official.close(), ours.close()])
      await server.stop()
    }
  })

  it('findJson with a limit stops at it too', async () => {
    const server = await startWireServer({ answer: endlessCursor() })
    const client = await MongoClient.connect(server.uri)
    try {
      const json = await client.db('db').collection('items').findJson({}, { limit: 10, batchSize: 4 })
      expect(JSON.parse(json.toString())).toHaveLength(10)
    } finally {
      await client.close()
      await server.stop()
    }
  })

  /** A reply header whose messageLength is `length`. */
  const header = (length: number) => ({
    bytes: (requestId: number) => {
      const bytes = Buffer.alloc(16)
      bytes.writeInt32LE(length, 0)
      bytes.writeInt32LE(1, 4)
      bytes.writeInt32LE(requestId, 8)
      bytes.writeInt32LE(2013, 12)
      return bytes
    },
  })

  it.each([-5, 0, 8])(
    'a messageLength of %i is a protocol fault (MongoParseError, as the official driver for a negative one), not the caller’s',
    async (length) => {
      let faulty = true
      const server = await startWireServer({
        answer: (command) => {
          if (command.find === undefined) return { ok: 0, errmsg: 'unexpected', code: 59 }
          if (faulty) return header(length)
          return { cursor: { id: Long.ZERO, ns: 'db.items', firstBatch: [{ n: 1 }] }, ok: 1 }
        },
      })
      const client = await MongoClient.connect(server.uri, { retryReads: false })
      try {
        const error = await client
          .db('db')
          .collection('items')
          .findOne({})
          .catch((error: unknown) => error)
        expect(error).toBeInstanceOf(MongoParseError)
        expect(error).not.toBeInstanceOf(MongoInvalidArgumentError)
        if (length < 0) {
          // In the official driver's words too (malformed_replies.test has the other lengths).
          const official = await OfficialClient.connect(server.uri, { retryReads: false })
          const reference = await official
            .db('db')
            .collection('items')
            .findOne({})
            .catch((error: unknown) => error)
          await official.close()
          expect((reference as Error).name).toBe('MongoParseError')
          expect((error as Error).message).toBe((reference as Error).message)
        } else {
          expect((error as Error).message).toMatch(/invalid message from the server/)
        }
        // The connection that read the broken header is not used again.
        faulty = false
        await expect(client.db('db').collection('items').findOne({})).resolves.toEqual({ n: 1 })
      } finally {
        await client.close()
        await server.stop()
      }
    },
  )

  it('{ ok: 0 } without a code is a MongoServerError, as in the official driver', async () => {
    const server = await startWireServer({ answer: () => ({ ok: 0, errmsg: 'refused without a code' }) })
    const [official, ours] = await Promise.all([
      OfficialClient.connect(server.uri),
      MongoClient.connect(server.uri),
    ])
    try {
      const expected = await official
        .db('db')
        .collection('items')
        .findOne({})
        .catch((error: unknown) => error)
      expect((expected as Error).name).toBe('MongoServerError')
      expect((expected as { code?: unknown }).code).toBeUndefined()
      const error = await ours
        .db('db')
        .collection('items')
        .findOne({})
        .catch((error: unknown) => error)
      expect(error).toBeInstanceOf(MongoServerError)
      expect((error as Error).name).toBe('MongoServerError')
      expect((error as { code?: unknown }).code).toBeUndefined()
    } finally {
      await Promise.all([official.close(), ours.close()])
      await server.stop()
    }
  })
})

describe('JSON of vector binaries (subtype 9): js-bson’s result or js-bson’s error', () => {
  /** BSON of `{ v: Binary(data, 9) }`, built by hand: js-bson refuses to serialize an invalid vector. */
  function vectorDocument(data: number[]): Buffer {
    const body = Buffer.concat([
      Buffer.from([0x05, 0x76, 0]),
      Buffer.from(Int32Array.of(data.length).buffer),
      Buffer.from([9, ...data, 0]),
    ])
    return Buffer.concat([Buffer.from(Int32Array.of(body.length + 4).buffer), body])
  }
  const VECTORS: Record<string, number[]> = {
    float32NotMultipleOf4: [0x27, 0, 1, 2, 3, 4, 5],
    packedBitEmptyWithPadding: [0x10, 3],
    packedBitPaddingOver7: [0x10, 9, 0xff],
    int8WithPadding: [0x03, 1, 7],
    float32Valid: [0x27, 0, 0, 0, 0x80, 0x3f],
    packedBitValid: [0x10, 2, 0xfc],
    int8Valid: [0x03, 0, 1, 0xff],
  }
  let server: ServedReplay
  let client: MongoClient
  let reference: OfficialClient

  beforeAll(async () => {
    server = await serveDocuments(
      Object.fromEntries(Object.entries(VECTORS).map(([name, data]) => [name, [vectorDocument(data)]])),
    )
    client = await MongoClient.connect(server.uri)
    reference = await OfficialClient.connect(server.uri)
  }, 600_000)

  afterAll(async () => {
    await Promise.all([client?.close(), reference?.close()])
    await server?.stop()
  })

  it.each(Object.keys(VECTORS))('%s', async (name) => {
    const documents = await reference.db('bench').collection(name).find({}).toArray()
    const expected: Record<string, () => string> = {
      relaxed: () => EJSON.stringify(documents, { relaxed: true }),
      plain: () => JSON.stringify(documents),
    }
    for (const format of ['relaxed', 'plain'] as const) {
      let text: string | undefined
      let error: Error | undefined
      try {
        text = expected[format]!()
      } catch (thrown) {
        error = thrown as Error
      }
      const ours = client.db('bench').collection(name).findJson({}, { format })
      if (error) await expect(ours, format).rejects.toThrow(error.message)
      else expect((await ours).toString(), format).toBe(text)
    }
  })
})
