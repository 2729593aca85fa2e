// watch() on a collection, a database and a client, side by side with the official driver on a
// fake replica-set primary serving the same scripted change stream (issue #35): the commands on
// the wire ($changeStream stage and options, getMore maxTimeMS and batchSize, the resume
// aggregates, killCursors), the events (values and types), resumeTokenChanged and close, which
// errors resume and from where (dropped connection, ResumableChangeStreamError label, token,
// postBatchResumeToken, operation time), and no hang at exit.
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { Decimal128, Long, ObjectId, Timestamp, type Document } from 'bson'
import { MongoClient as OfficialClient } from 'mongodb'
import { MongoClient, MongoCursorExhaustedError } from 'rumongo'
import { CLOSE_CONNECTION, replyMessage, type WireReply } from './setup/wire_server.js'
import {
  eventToken,
  insertEvent,
  startChangeStreamServer,
  type AnyChangeStream as AnyStream,
  type ChangeStreamScript,
  type ChangeStreamServer,
} from './setup/change_stream_server.js'
import { expectIdentical } from './setup/helpers.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const run = promisify(execFile)

type AnyClient = MongoClient | OfficialClient
/** What both drivers' change streams offer that the tests use. */
/** An insert event with values of several BSON types. */
function itemInserted(n: number): Document {
  return insertEvent(n, { db: 'test', coll: 'items' }, (_id) => ({
    _id,
    n,
    name: `item ${n}`,
    price: Decimal128.fromString(`${n}.25`),
    big: Long.fromNumber(2 ** 40 + n),
    tags: ['a', `t${n % 3}`],
    nested: { ok: n % 2 === 0, at: new Date(1_600_000_000_000 + n) },
  }))
}

function updateEvent(n: number): Document {
  const id = new ObjectId(n.toString(16).padStart(24, '0'))
  return {
    operationType: 'update',
    clusterTime: new Timestamp({ t: 1_700_000_000, i: n + 1 }),
    ns: { db: 'test', coll: 'items' },
    documentKey: { _id: id },
    updateDescription: { updatedFields: { n: n * 2 }, removedFields: ['tags'], truncatedArrays: [] },
    fullDocumentBeforeChange: { _id: id, n },
  }
}

const EVENTS = Array.from({ length: 12 }, (_, n) => (n % 4 === 3 ? updateEvent(n) : itemInserted(n)))

/** A command as compared across drivers: Int64 and Int32 alike (not visible to users). */
function normalized(value: unknown): unknown {
  if (value instanceof Timestamp) return `Timestamp(${value.t},${value.i})`
  if (Long.isLong(value)) return Number(value)
  if (Array.isArray(value)) return value.map(normalized)
  if (value && typeof value === 'object' && value.constructor === Object) {
    return Object.fromEntries(Object.entries(value).map(([key, field]) => [key, normalized(field)]))
  }
  return value
}

/** The change-stream commands a driver sent, with the fields the spec fixes. */
function wire(server: ChangeStreamServer): Document[] {
  return server.streamCommands().map((command) => {
    const name = Object.keys(command)[0]
    const picked: Document =
      name === 'aggregate'
        ? {
            aggregate: command.aggregate,
            $db: command.$db,
            pipeline: command.pipeline,
            cursor: command.cursor,
            maxTimeMS: command.maxTimeMS,
          }
        : name === 'getMore'
          ? {
              getMore: command.getMore,
              collection: command.collection,
              batchSize: command.batchSize,
              maxTimeMS: command.maxTimeMS,
            }
          : { killCursors: command.killCursors, cursors: command.cursors }
    return normalized(picked) as Document
  })
}

/** What a scenario saw: its result, the events the stream emitted, and the wire. */
interface Seen<T> {
  result: T
  emitted: unknown[][]
  wire: Document[]
  killed: string[]
}

/** Runs `scenario` with each driver on a server of its own with the same script. */
async function both<T>(
  script: ChangeStreamScript,
  open: (client: AnyClient) => AnyStream,
  scenario: (stream: AnyStream) => Promise<T>,
): Promise<{ official: Seen<T>; rumongo: Seen<T> }> {
  const seen = async (driver: 'official' | 'rumongo'): Promise<Seen<T>> => {
    const server = await startChangeStreamServer(script)
    const client =
      driver === 'official'
        ? new OfficialClient(server.uri, { heartbeatFrequencyMS: 60_000 })
        : new MongoClient(server.uri)
    try {
      const stream = open(client)
      const emitted: unknown[][] = []
      for (const event of ['resumeTokenChanged', 'close', 'end', 'init', 'more', 'response']) {
        stream.on(event, (...args: unknown[]) => emitted.push([event, ...args]))
      }
      const result = await scenario(stream)
      await stream.close()
      // After the client closed: a kill rumongo sends in the background has arrived.
      await client.close()
      return { result, emitted, wire: wire(server), killed: server.killed.map(String) }
    } finally {
      await client.close()
      await server.stop()
    }
  }
  return { official: await seen('official'), rumongo: await seen('rumongo') }
}

function items(client: AnyClient) {
  return (client as OfficialClient).db('test').collection('items')
}

function watchItems(pipeline: Document[] = [], options: Document = {}) {
  return (client: AnyClient) => items(client).watch(pipeline, options) as unknown as AnyStream
}

async function nextN(stream: AnyStream, count: number): Promise<Document[]> {
  const events: Document[] = []
  for (let i = 0; i < count; i++) events.push(await stream.next())
  return events
}

/** The error a driver threw, as a user sees it. */
function failure(error: unknown): Document {
  const { name, code, message } = error as { name: string; code: unknown; message: string }
  return { name, code, message, labels: (error as { errorLabels?: string[] }).errorLabels ?? [] }
}

/**
 * Both drivers kill a cursor that failed; the official driver before it resumes, rumongo in the
 * background (the crate kills a dropped cursor), so killCursors is compared apart from the order.
 */
function expectSame<T>(seen: { official: Seen<T>; rumongo: Seen<T> }) {
  expectIdentical(seen.rumongo.result, seen.official.result)
  const withoutKills = (wire: Document[]) => wire.filter((command) => !('killCursors' in command))
  expect(withoutKills(seen.rumongo.wire)).toEqual(withoutKills(seen.official.wire))
  expect([...seen.rumongo.killed].sort()).toEqual([...seen.official.killed].sort())
  expectIdentical(seen.rumongo.emitted, seen.official.emitted)
}

describe('watch() against the official driver on a fake replica-set primary', () => {
  it('sends the $changeStream stage with its options and returns the same events', async () => {
    const options = {
      fullDocument: 'updateLookup',
      fullDocumentBeforeChange: 'whenAvailable',
      showExpandedEvents: true,
      batchSize: 3,
      maxAwaitTimeMS: 250,
      comment: 'cs',
    }
    const seen = await both(
      { events: EVENTS, batchSize: 5 },
      watchItems([{ $match: { operationType: { $in: ['insert', 'update'] } } }], options),
      (stream) => nextN(stream, 8),
    )
    expectSame(seen)
    expect(seen.rumongo.result.map((event) => event._id)).toEqual(
      EVENTS.slice(0, 8).map((_, n) => eventToken(n)),
    )
    const [aggregate, getMore] = seen.rumongo.wire
    expect(aggregate!.pipeline[0].$changeStream).toEqual({
      fullDocument: 'updateLookup',
      fullDocumentBeforeChange: 'whenAvailable',
      showExpandedEvents: true,
    })
    expect(getMore).toMatchObject({ collection: 'items', batchSize: 3, maxTimeMS: 250 })
  })

  it('watches a database and the whole deployment, and decodes with the BSON options, as the official driver', async () => {
    for (const open of [
      (client: AnyClient) => (client as OfficialClient).db('test').watch() as unknown as AnyStream,
      (client: AnyClient) =>
        (client as OfficialClient).watch([], { fullDocument: 'required' }) as unknown as AnyStream,
      watchItems([], { useBigInt64: true }),
      watchItems([], { promoteValues: false }),
    ]) {
      const seen = await both({ events: EVENTS, batchSize: 4 }, open, (stream) => nextN(stream, 5))
      expectSame(seen)
    }
  })

  it('tryNext() answers null after one empty getMore and hasNext() waits for an event', async () => {
    const seen = await both(
      { events: EVENTS.slice(0, 2), batchSize: 2 },
      watchItems([], { maxAwaitTimeMS: 30 }),
      async (stream) => [
        await stream.tryNext(),
        await stream.hasNext(),
        await stream.tryNext(),
        await stream.tryNext(),
        await stream.tryNext(),
        stream.resumeToken,
      ],
    )
    expectSame(seen)
    // The first tryNext() runs the aggregate and, its batch being empty, a getMore at once.
    expect(seen.rumongo.result[0]).toMatchObject({ _id: eventToken(0) })
    expect(seen.rumongo.result[3]).toBeNull()
    expect(seen.rumongo.result[4]).toBeNull()
  })

  it('resumes after a dropped connection from the batch token, losing and repeating no event', async () => {
    const seen = await both(
      {
        events: EVENTS,
        batchSize: 3,
        fault: (name, count) =>
          name === 'getMore' && (count === 2 || count === 4) ? CLOSE_CONNECTION : undefined,
      },
      watchItems(),
      (stream) => nextN(stream, 10),
    )
    expectSame(seen)
    expect(seen.rumongo.result.map((event) => event.fullDocument?.n ?? event.documentKey._id)).toHaveLength(
      10,
    )
    expect(seen.rumongo.result.map((event) => event._id)).toEqual(
      EVENTS.slice(0, 10).map((_, n) => eventToken(n)),
    )
    const aggregates = seen.rumongo.wire.filter((command) => 'aggregate' in command)
    expect(aggregates.map((command) => command.pipeline[0].$changeStream)).toEqual([
      {},
      { resumeAfter: { _data: 'pb3' } },
      { resumeAfter: { _data: 'pb6' } },
    ])
  })

  it("resumes from startAtOperationTime before any event, then from the last event's _id (no postBatchResumeToken)", async () => {
    const seen = await both(
      {
        events: EVENTS,
        batchSize: 4,
        postBatchResumeToken: false,
        fault: (name, count) =>
          name === 'getMore' && (count === 1 || count === 3)
            ? {
                ok: 0,
                errmsg: 'stepping down',
                code: 189,
                codeName: 'PrimarySteppedDown',
                errorLabels: ['ResumableChangeStreamError'],
              }
            : undefined,
      },
      watchItems([], { startAtOperationTime: new Timestamp({ t: 1_700_000_000, i: 2 }) }),
      async (stream) => {
        const first = await stream.next()
        const second = await stream.next()
        return [first, second, ...(await nextN(stream, 6))]
      },
    )
    expectSame(seen)
    const stages = seen.rumongo.wire
      .filter((command) => 'aggregate' in command)
      .map((command) => command.pipeline[0].$changeStream)
    expect(stages).toEqual([
      { startAtOperationTime: 'Timestamp(1700000000,2)' },
      { startAtOperationTime: 'Timestamp(1700000000,2)' },
      { resumeAfter: eventToken(5) },
    ])
  })

  it('resumes after CursorNotFound without the label (the spec names it resumable)', async () => {
    const seen = await both(
      {
        events: EVENTS,
        batchSize: 3,
        fault: (name, count) =>
          name === 'getMore' && count === 2
            ? { ok: 0, errmsg: 'cursor id 7001 not found', code: 43, codeName: 'CursorNotFound' }
            : undefined,
      },
      watchItems(),
      (stream) => nextN(stream, 6),
    )
    // The same events, resume and emitted events; the official driver also sends killCursors for
    // the cursor the server just said it does not have, rumongo (the crate) does not.
    expectSame({ ...seen, rumongo: { ...seen.rumongo, killed: seen.official.killed } })
    expect(seen.official.killed).toEqual(['7001', '7002'])
    expect(seen.rumongo.killed).toEqual(['7002'])
    expect(seen.rumongo.wire.filter((command) => 'aggregate' in command)).toHaveLength(2)
  })

  it('resumes with startAfter until an event came, then with resumeAfter', async () => {
    const seen = await both(
      {
        events: EVENTS,
        batchSize: 2,
        postBatchResumeToken: false,
        fault: (name, count) =>
          name === 'getMore' && (count === 1 || count === 3) ? CLOSE_CONNECTION : undefined,
      },
      watchItems([], { startAfter: eventToken(1) }),
      (stream) => nextN(stream, 4),
    )
    expectSame(seen)
    const stages = seen.rumongo.wire
      .filter((command) => 'aggregate' in command)
      .map((command) => command.pipeline[0].$changeStream)
    expect(stages).toEqual([
      { startAfter: eventToken(1) },
      { startAfter: eventToken(1) },
      { resumeAfter: eventToken(3) },
    ])
  })

  it('empty batches move the resume token to their postBatchResumeToken', async () => {
    const seen = await both(
      { events: EVENTS.slice(0, 2), batchSize: 2 },
      watchItems([], { maxAwaitTimeMS: 20 }),
      async (stream) => {
        const events = await nextN(stream, 2)
        await stream.tryNext()
        await stream.tryNext()
        return [...events, stream.resumeToken]
      },
    )
    expectSame(seen)
    expect(seen.rumongo.result[2]).toEqual({ _data: 'pb2.3' })
  })

  it.each([
    ['a server error without the label', { ok: 0, errmsg: 'bad', code: 6, codeName: 'HostUnreachable' }],
    [
      'a non-resumable server error',
      { ok: 0, errmsg: 'fatal', code: 280, codeName: 'ChangeStreamFatalError' },
    ],
  ])('does not resume after %s: the same error, the stream closed', async (_, reply) => {
    const seen = await both(
      {
        events: EVENTS,
        batchSize: 2,
        fault: (name, count) => (name === 'getMore' && count === 2 ? reply : undefined),
      },
      watchItems(),
      async (stream) => {
        const events = await nextN(stream, 2)
        const error = await stream.next().then(
          () => undefined,
          (error: unknown) => failure(error),
        )
        const after = await stream.next().then(
          () => undefined,
          (error: unknown) => failure(error),
        )
        return [events, error, after, stream.closed]
      },
    )
    expectSame(seen)
    expect(seen.rumongo.result[3]).toBe(true)
  })

  it('an aggregate that fails does not resume (nothing was opened)', async () => {
    const seen = await both(
      {
        events: EVENTS,
        batchSize: 2,
        fault: (name) =>
          name === 'aggregate'
            ? ({
                ok: 0,
                errmsg: 'no',
                code: 136,
                codeName: 'CappedPositionLost',
                errorLabels: ['ResumableChangeStreamError'],
              } as WireReply)
            : undefined,
      },
      watchItems(),
      (stream) => stream.next().then(() => undefined, failure),
    )
    expectSame(seen)
  })

  it("emits 'change' events in emitter mode, resuming as the iterator does", async () => {
    const seen = await both(
      {
        events: EVENTS,
        batchSize: 3,
        fault: (name, count) => (name === 'getMore' && count === 2 ? CLOSE_CONNECTION : undefined),
      },
      watchItems(),
      (stream) =>
        new Promise<Document[]>((resolve) => {
          const changes: Document[] = []
          stream.on('change', (change: Document) => {
            changes.push(change)
            if (changes.length === 9) resolve(changes)
          })
        }),
    )
    expect(seen.rumongo.result).toHaveLength(9)
    expectIdentical(seen.rumongo.result, seen.official.result)
    expect(seen.rumongo.wire.filter((command) => 'aggregate' in command)).toEqual(
      seen.official.wire.filter((command) => 'aggregate' in command),
    )
  })

  it('reads a first reply prepared in parts, resuming from its postBatchResumeToken', async () => {
    // Over 128 KiB: rumongo hands the first reply over in parts; the token is the reply's.
    const events = Array.from({ length: 700 }, (_, n) => itemInserted(n))
    const seen = await both(
      {
        events,
        batchSize: 100,
        firstBatchSize: 600,
        fault: (name, count) => (name === 'getMore' && count === 1 ? CLOSE_CONNECTION : undefined),
      },
      watchItems(),
      async (stream) => (await nextN(stream, 700)).map((event) => event._id),
    )
    expectSame(seen)
    const stages = seen.rumongo.wire
      .filter((command) => 'aggregate' in command)
      .map((command) => command.pipeline[0].$changeStream)
    expect(stages).toEqual([{}, { resumeAfter: { _data: 'pb600' } }])
  })

  it("counts and resumes by the whole reply when getMore replies are handed over in parts, as the official driver's", async () => {
    // Over 128 KiB each: rumongo hands the first reply and each getMore's over in parts (JS
    // decodes the first events while the rest is encoded). bufferedCount() is still the whole
    // reply's, the token moves to postBatchResumeToken only after the reply's last event, and a
    // resume after the next getMore failed starts there.
    const events = Array.from({ length: 1300 }, (_, n) => itemInserted(n))
    const seen = await both(
      {
        events,
        batchSize: 600,
        firstBatchSize: 600,
        fault: (name, count) => (name === 'getMore' && count === 2 ? CLOSE_CONNECTION : undefined),
      },
      watchItems(),
      async (stream) => {
        const read: unknown[] = [stream.bufferedCount()]
        for (let n = 0; n < events.length; n++) {
          const event = await stream.next()
          read.push([event._id, stream.bufferedCount(), stream.resumeToken])
        }
        return read
      },
    )
    expectSame(seen)
    const read = seen.rumongo.result as [unknown, number, unknown][]
    expect(read[1]).toEqual([eventToken(0), 599, eventToken(0)])
    expect(read[601]).toEqual([eventToken(600), 599, eventToken(600)])
    expect(read[1199]).toEqual([eventToken(1198), 1, eventToken(1198)])
    expect(read[1200]).toEqual([eventToken(1199), 0, { _data: 'pb1200' }])
    const stages = seen.rumongo.wire
      .filter((command) => 'aggregate' in command)
      .map((command) => command.pipeline[0].$changeStream)
    expect(stages).toEqual([{}, { resumeAfter: { _data: 'pb1200' } }])
  })

  it('close() in the middle of a reply handed over in parts sends no other command and kills the cursor, as the official driver', async () => {
    // The next part is asked for as soon as a part comes: it is fetched already, so closing with
    // it pending sends nothing but killCursors, and close() does not wait for it.
    const events = Array.from({ length: 1300 }, (_, n) => itemInserted(n))
    const seen = await both({ events, batchSize: 600, firstBatchSize: 600 }, watchItems(), async (stream) => {
      const ids = (await nextN(stream, 650)).map((event) => event._id)
      await stream.close()
      return [
        ids,
        stream.closed,
        await stream.next().then(
          () => 'resolved',
          (error: unknown) => failure(error),
        ),
      ]
    })
    expectSame(seen)
    expect(seen.rumongo.wire.map((command) => Object.keys(command)[0])).toEqual([
      'aggregate',
      'getMore',
      'killCursors',
    ])
  })

  it.each([
    ['invalid UTF-8', (reply: Buffer, at: number) => (reply[at] = 0xff)],
    // The type byte of the `name` field: 0x02 'name\0' int32 'item 400\0'.
    ['an unknown BSON type', (reply: Buffer, at: number) => (reply[at - 10] = 0x77)],
  ])(
    'a getMore reply handed over in parts with %s in an event of a later part: the events before it, then its error, as the official driver',
    async (_, corrupt) => {
      // The official driver decodes each event as it is read: every event before the bad one, then
      // its BSONError. rumongo decoded the part holding the bad event (which Rust could not tape)
      // at once: only the events of the parts before it came (about 100 of the 400), then the error.
      const events = Array.from({ length: 605 }, (_, n) => itemInserted(n))
      const BAD = 405
      const reply = (requestId: number) => {
        const nextBatch = events.slice(5).map((event, n) => ({ _id: eventToken(n + 5), ...event }))
        const document = {
          cursor: {
            nextBatch,
            postBatchResumeToken: { _data: 'pb605' },
            id: Long.fromNumber(7001),
            ns: 'test.items',
          },
          operationTime: new Timestamp({ t: 1_700_000_000, i: 0 }),
          ok: 1,
        }
        const bytes = replyMessage(requestId, 2013, document)
        corrupt(bytes, bytes.indexOf(`item ${BAD}\0`))
        return bytes
      }
      const seen = await both(
        {
          events,
          batchSize: 600,
          firstBatchSize: 5,
          fault: (name, count) =>
            name === 'getMore' && count === 1
              ? { bytes: (requestId: number) => reply(requestId) }
              : undefined,
        },
        watchItems(),
        async (stream) => {
          const read: unknown[] = []
          for (;;) {
            try {
              const event = await stream.next()
              read.push([event.fullDocument.n, stream.bufferedCount()])
            } catch (error) {
              read.push(failure(error), stream.closed)
              return read
            }
          }
        },
      )
      expectSame(seen)
      const read = seen.rumongo.result
      expect(read.length).toBe(BAD + 2)
      expect(read[BAD - 1]).toEqual([BAD - 1, 600 - (BAD - 5)])
      expect(read[BAD]).toMatchObject({ name: 'BSONError' })
    },
  )

  it('ends after an invalidate event as the official driver (the server closed the cursor)', async () => {
    const script = {
      events: [
        ...EVENTS.slice(0, 3),
        { operationType: 'invalidate', clusterTime: new Timestamp({ t: 1, i: 9 }) },
      ],
      batchSize: 2,
    }
    const seen = await both(script, watchItems(), async (stream) => {
      const events = await nextN(stream, 4)
      // A MongoRuntimeError: rumongo's carry a code of their own (ErrorCode.Runtime), the official's none.
      const ended = (error: unknown) => ({ ...failure(error), code: undefined })
      const after = [await stream.next().then(() => 'no error', ended), stream.closed]
      const again = await stream.next().then(() => 'no error', failure)
      return [events, after, again, stream.resumeToken]
    })
    expectSame(seen)
    expect(seen.rumongo.result[0]![3].operationType).toBe('invalidate')
  })

  it("client.close() ends a stream as the official driver's: a getMore in flight fails with MongoClientClosedError", async () => {
    const outcome = (promise: Promise<unknown>) =>
      promise.then(
        (value) => ['resolved', value],
        (error: unknown) => ['rejected', failure(error)],
      )
    const logs: Record<string, unknown[]> = {}
    for (const driver of ['official', 'rumongo'] as const) {
      for (const mode of ['iterator', 'emitter'] as const) {
        // A getMore without events waits 5 s: the client closes while one is in flight.
        const server = await startChangeStreamServer({
          events: EVENTS.slice(0, 1),
          batchSize: 1,
          emptyWaitMS: 5_000,
        })
        const client = driver === 'official' ? new OfficialClient(server.uri) : new MongoClient(server.uri)
        try {
          const stream = watchItems([], { maxAwaitTimeMS: 5_000 })(client)
          const log: unknown[] = []
          for (const event of ['close', 'end', 'error'])
            stream.on(event, (error) => log.push([event, error?.name]))
          if (mode === 'iterator') {
            log.push((await stream.next()).operationType)
            const pending = outcome(stream.next())
            await sleep(200)
            await client.close()
            log.push(
              await pending,
              stream.closed,
              await outcome(stream.next()),
              await outcome(stream.hasNext()),
            )
          } else {
            await new Promise<void>((resolve) =>
              stream.on('change', (change: Document) => {
                log.push(change.operationType)
                resolve()
              }),
            )
            await sleep(200)
            await client.close()
            // Long enough for an error event to come.
            await sleep(300)
            log.push(stream.closed)
          }
          logs[`${driver} ${mode}`] = log
        } finally {
          await client.close()
          await server.stop()
        }
      }
    }
    expectIdentical(logs['rumongo iterator'], logs['official iterator'])
    expectIdentical(logs['rumongo emitter'], logs['official emitter'])
    expect(logs['rumongo emitter']).toEqual([
      'insert',
      ['close', undefined],
      ['error', 'MongoClientClosedError'],
      true,
    ])
  })

  it("client.close() with events buffered: every read then fails as the official driver's (its active cursors closed), 'close' at once", async () => {
    const outcome = (promise: Promise<unknown>) =>
      promise.then(
        (value) => ['resolved', (value as Document | null)?.documentKey ?? value],
        (error: unknown) => {
          const { name, message } = error as Error
          return ['rejected', name, message]
        },
      )
    const reads = {
      next: (stream: AnyStream) => outcome(stream.next()),
      tryNext: (stream: AnyStream) => outcome(stream.tryNext()),
      hasNext: (stream: AnyStream) => outcome(stream.hasNext()),
      'for await': async (stream: AnyStream) => {
        const seen: unknown[] = []
        try {
          for await (const change of stream as AnyStream & AsyncIterable<Document>)
            seen.push(change.documentKey)
          return ['ended', seen]
        } catch (error) {
          const { name, message } = error as Error
          return ['rejected', seen, name, message]
        }
      },
    }
    const logs: Record<string, unknown[]> = {}
    for (const driver of ['official', 'rumongo'] as const) {
      for (const [read, first] of Object.entries(reads)) {
        // The getMore brings 4 events: one is read, 3 stay buffered when the client closes.
        const server = await startChangeStreamServer({ events: EVENTS, batchSize: 4 })
        const client = driver === 'official' ? new OfficialClient(server.uri) : new MongoClient(server.uri)
        try {
          const stream = watchItems([], { maxAwaitTimeMS: 50 })(client)
          const log: unknown[] = []
          for (const event of ['close', 'end', 'error', 'resumeTokenChanged'])
            stream.on(event, (argument) => log.push([event, argument?.name ?? argument]))
          log.push((await stream.next()).documentKey, stream.bufferedCount())
          await client.close()
          log.push('client closed', stream.closed, stream.bufferedCount())
          log.push(await first(stream), stream.closed)
          // Then as after the stream's own close().
          log.push(await outcome(stream.next()), await outcome(stream.hasNext()), stream.closed)
          logs[`${driver} ${read}`] = [...log, wire(server), server.killed.map(String)]
        } finally {
          await client.close()
          await server.stop()
        }
      }
    }
    for (const read of Object.keys(reads)) {
      expectIdentical(logs[`rumongo ${read}`], logs[`official ${read}`])
    }
    const next = logs['rumongo next']!
    const closed = next.indexOf('client closed')
    // 'close' as the client closes; the stream not closed yet, its 3 events buffered, not returned.
    expect(next.slice(closed - 1, closed + 4)).toEqual([
      ['close', undefined],
      'client closed',
      false,
      3,
      ['rejected', 'MongoCursorExhaustedError', 'Cursor is exhausted'],
    ])
    // The official error has no code; rumongo's errors all have one.
    const exhausted = await (async () => {
      const server = await startChangeStreamServer({ events: EVENTS, batchSize: 4 })
      const client = new MongoClient(server.uri)
      try {
        const stream = watchItems()(client)
        await stream.next()
        await client.close()
        return await stream.tryNext().catch((error: unknown) => error)
      } finally {
        await server.stop()
      }
    })()
    expect(exhausted).toBeInstanceOf(MongoCursorExhaustedError)
    expect(exhausted).toMatchObject({ code: 'ERR_CURSOR_EXHAUSTED' })
  })

  it('close() kills the server cursor, and a process with an open stream exits', async () => {
    const seen = await both({ events: EVENTS, batchSize: 2 }, watchItems(), async (stream) => {
      const events = await nextN(stream, 3)
      await stream.close()
      return [events, stream.closed, await stream.next().then(() => 'no error', failure)]
    })
    expectSame(seen)
    expect(seen.rumongo.killed).toEqual(['7001'])

    const server = await startChangeStreamServer({
      events: EVENTS.slice(0, 1),
      batchSize: 1,
      emptyWaitMS: 5_000,
    })
    try {
      const script = `
        const { MongoClient } = require('rumongo')
        const client = new MongoClient(process.argv[1])
        const stream = client.db('test').collection('items').watch([], { maxAwaitTimeMS: 5000 })
        stream.next().then(async (event) => {
          stream.next().catch(() => {})
          await client.close()
          console.log(event.operationType)
        })`
      const { stdout } = await run(process.execPath, ['-e', script, server.uri], {
        cwd: root,
        timeout: 20_000,
      })
      expect(stdout.trim()).toBe('insert')
    } finally {
      await server.stop()
    }
  })

  it('for await: the same events; an event without _id ends the loop with the official error, stream closed', async () => {
    const events = [...EVENTS.slice(0, 5), { ...EVENTS[5]!, _id: null }, ...EVENTS.slice(6, 8)]
    const read = async (make: (uri: string) => AnyClient) => {
      const server = await startChangeStreamServer({ events, batchSize: 4 })
      const client = make(server.uri)
      try {
        await client.connect()
        const stream = client.db('test').collection('items').watch([], { maxAwaitTimeMS: 50 }) as AnyStream &
          AsyncIterable<Document>
        const seen: Document[] = []
        let failure: unknown = 'no error'
        try {
          for await (const change of stream) seen.push(change)
        } catch (error) {
          const { name, message } = error as Error
          failure = { name, message }
        }
        return { seen, failure, closed: stream.closed }
      } finally {
        await client.close()
        await server.stop()
      }
    }
    const theirs = await read((uri) => new OfficialClient(uri))
    const ours = await read((uri) => new MongoClient(uri))
    expect(theirs.seen).toHaveLength(5)
    expectIdentical(ours.seen, theirs.seen)
    expect(theirs.failure).toMatchObject({ name: 'MongoChangeStreamError' })
    expect(ours.failure).toEqual(theirs.failure)
    expect(ours.closed).toBe(theirs.closed)
  })

  // In emitter mode the official stream emits 'error' from its cursor stream's 'error' handler: with
  // no 'error' listener, EventEmitter throws it there, an uncaught exception (the process dies unless
  // it handles 'uncaughtException'), after its cursor closed. rumongo emitted it inside its async
  // emitter loop: an unhandled rejection instead (only a warning with --unhandled-rejections=warn),
  // and when a 'change' listener threw, the stream stayed open.
  it("emitter mode without an 'error' listener: the error reaches the process as an uncaught exception after the stream closed, as the official driver's", async () => {
    const faults: Record<string, Pick<ChangeStreamScript, 'fault' | 'emptyWaitMS'>> = {
      'the server fails a getMore': {
        fault: (name, count) =>
          name === 'getMore' && count === 2
            ? { ok: 0, code: 2, codeName: 'BadValue', errmsg: 'not resumable' }
            : undefined,
      },
      "a 'change' listener throws": {},
      'client.close() during a getMore': { emptyWaitMS: 5_000 },
    }
    const logs: Record<string, unknown[]> = {}
    for (const driver of ['official', 'rumongo'] as const) {
      for (const [name, fault] of Object.entries(faults)) {
        const server = await startChangeStreamServer({ events: EVENTS.slice(0, 2), batchSize: 1, ...fault })
        const client = driver === 'official' ? new OfficialClient(server.uri) : new MongoClient(server.uri)
        const log: unknown[] = []
        // Vitest's own handlers report these as failures: set aside while the stream fails.
        const vitestHandlers = {
          uncaughtException: process.listeners('uncaughtException'),
          unhandledRejection: process.listeners('unhandledRejection'),
        }
        for (const event of ['uncaughtException', 'unhandledRejection'] as const) {
          process.removeAllListeners(event)
          process.on(event, (error: unknown) => log.push([event, (error as Error).message]))
        }
        try {
          const stream = watchItems([], { maxAwaitTimeMS: 5_000 })(client)
          stream.on('close', () => log.push('close event'))
          stream.on('change', (change: Document) => {
            log.push(['change', change.operationType])
            if (name === "a 'change' listener throws") throw new Error('listener failed')
          })
          if (name === 'client.close() during a getMore') {
            await expect.poll(() => log.length, { timeout: 10_000 }).toBe(2)
            await sleep(200)
            await client.close()
          }
          await expect
            .poll(() => log.some((entry) => Array.isArray(entry) && entry[0] !== 'change'), {
              timeout: 10_000,
            })
            .toBe(true)
          // Long enough for a second error or event to come.
          await sleep(300)
          log.push(['closed', stream.closed])
          await stream.close()
          await client.close()
          log.push(['killed', server.killed.length])
        } finally {
          for (const [event, handlers] of Object.entries(vitestHandlers)) {
            process.removeAllListeners(event)
            for (const handler of handlers) process.on(event as 'uncaughtException', handler as () => void)
          }
          await client.close()
          await server.stop()
        }
        logs[`${driver} ${name}`] = log
      }
    }
    for (const name of Object.keys(faults)) {
      // The native client's close() kills the cursor the official client leaves to the server.
      if (name === 'client.close() during a getMore') logs[`rumongo ${name}`]!.pop()
      if (name === 'client.close() during a getMore') logs[`official ${name}`]!.pop()
      expectIdentical([name, logs[`rumongo ${name}`]], [name, logs[`official ${name}`]])
    }
    expect(logs["rumongo a 'change' listener throws"]).toEqual([
      ['change', 'insert'],
      'close event',
      ['uncaughtException', 'listener failed'],
      ['closed', true],
      ['killed', 1],
    ])
  })
})
