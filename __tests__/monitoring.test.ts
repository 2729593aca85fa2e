// Monitoring events: command, connection-pool and server events against the official driver's for
// the same calls; nothing crosses from the native client without a listener; a throwing listener;
// WorkerPool workers' events stay in the workers.
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Long, MongoClient as OfficialClient, type Document } from 'mongodb'
import {
  CommandFailedEvent,
  CommandStartedEvent,
  CommandSucceededEvent,
  MongoClient,
  MongoNetworkTimeoutError,
  MongoOperationTimeoutError,
  MongoParseError,
  MongoServerError,
  WorkerPool,
} from 'rumongo'
import { firstDifference, uniqueDbName, uri } from './setup/helpers.js'
import { startWireServer, type WireServer } from './setup/wire_server.js'

const DOCUMENT_COUNT = 5
let dbName: string
let seed: OfficialClient

beforeAll(async () => {
  dbName = uniqueDbName('monitoring')
  seed = await OfficialClient.connect(uri)
  await seed
    .db(dbName)
    .collection('items')
    .insertMany(
      Array.from({ length: DOCUMENT_COUNT }, (_, i) => ({ _id: i, i, tag: i % 2 ? 'odd' : 'even' })),
    )
})

afterAll(async () => {
  await seed.db(dbName).dropDatabase()
  await seed.close()
})

type AnyClient = OfficialClient | MongoClient
type CommandEvent = CommandStartedEvent | CommandSucceededEvent | CommandFailedEvent
const COMMAND_EVENTS = ['commandStarted', 'commandSucceeded', 'commandFailed'] as const

/** The events `names` that `client` emits from now on. */
function record<T = CommandEvent>(client: AnyClient, names: readonly string[]): T[] {
  const events: T[] = []
  for (const name of names) (client as OfficialClient).on(name, (event: T) => events.push(event))
  return events
}

/** Waits until `condition` holds (at most 5 s). */
async function until(condition: () => boolean) {
  for (const deadline = Date.now() + 5_000; !condition() && Date.now() < deadline;) await settle()
}

/** Removes the command listeners. */
function stop(client: AnyClient) {
  for (const name of COMMAND_EVENTS) (client as OfficialClient).removeAllListeners(name)
}

/** Lets events already queued by the native client reach JS. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 50))

/**
 * The reads of the issue, each a separate round of commands, on either driver. Batch sizes are
 * given where a cursor is read to its end: without one, rumongo sizes `toArray()` batches itself
 * (2,000 documents, MIGRATION.md) where the official driver sends none.
 */
const READS: [string, (client: AnyClient) => Promise<unknown>][] = [
  [
    'find + getMore',
    (c) =>
      coll(c)
        .find({ i: { $gte: 0 } }, { batchSize: 2 })
        .toArray(),
  ],
  [
    'find + killCursors',
    async (c) => {
      const cursor = unprefetched(coll(c).find({}, { batchSize: 2, sort: { i: 1 } }))
      await cursor.next()
      await cursor.close()
    },
  ],
  ['findOne', (c) => coll(c).findOne({ tag: 'odd' }, { projection: { i: 1 } })],
  [
    'aggregate',
    (c) =>
      coll(c)
        .aggregate([{ $match: { i: { $lt: 4 } } }], { batchSize: 3 })
        .toArray(),
  ],
  ['countDocuments', (c) => coll(c).countDocuments({ tag: 'even' })],
  ['distinct', (c) => coll(c).distinct('tag', { i: { $gt: 0 } })],
  ['estimatedDocumentCount', (c) => coll(c).estimatedDocumentCount()],
  [
    'failing aggregate',
    (c) =>
      coll(c)
        .aggregate([{ $nonexistentStage: 1 }], { batchSize: 1 })
        .toArray()
        .catch((error: unknown) => error),
  ],
]

/**
 * The cursor without rumongo's read-ahead: by default rumongo sends the next getMores while the
 * caller reads (`prefetch`, docs/streaming.md), where the official driver sends one when its buffer is empty.
 */
function unprefetched<T extends object>(cursor: T): T {
  if ('prefetch' in cursor) (cursor.prefetch as (count: number) => unknown)(0)
  return cursor
}

function captureError(run: () => unknown): Error {
  try {
    run()
  } catch (error) {
    return error as Error
  }
  throw new Error('expected an error')
}

function coll(client: AnyClient) {
  return (client as OfficialClient).db(dbName).collection('items')
}

/**
 * Command fields that legitimately differ between the drivers, left out of the comparison:
 * - `lsid`: each driver's own implicit session id;
 * - `$clusterTime`, `$readPreference`: gossip and routing fields each driver adds according to
 *   the topology it sees (the embedded server sends none, listed for real deployments);
 * - the values of cursor ids (`getMore`, `killCursors.cursors`, replies' `cursor.id` and
 *   `cursorsKilled`): each driver has its own cursor, so they are compared as references to the
 *   reply that opened the cursor, with their type.
 */
const IGNORED_COMMAND_FIELDS = ['lsid', '$clusterTime', '$readPreference']

/** A command event reduced to what must be equal between the drivers, key order aside. */
function comparable(event: CommandEvent, cursorIds: Map<string, unknown>): Document {
  const base = {
    type: event.constructor.name,
    commandName: event.commandName,
    databaseName: event.databaseName,
  }
  if (event.name === 'commandStarted') {
    const command: Document = {}
    for (const key of Object.keys(event.command).sort()) {
      if (!IGNORED_COMMAND_FIELDS.includes(key)) command[key] = event.command[key]
    }
    if ('getMore' in command) command.getMore = cursorRef(command.getMore, cursorIds)
    if ('cursors' in command) command.cursors = command.cursors.map((id: unknown) => cursorRef(id, cursorIds))
    return { ...base, command }
  }
  if (event.name === 'commandSucceeded') {
    const reply = { ...event.reply }
    if (reply.cursor) {
      const { id, ...cursor } = reply.cursor
      if (id !== 0) cursorIds.set(String(id), `cursor #${cursorIds.size}`)
      // The id's value differs between the drivers' cursors; its type and zero-ness do not.
      reply.cursor = { ...cursor, id: id === 0 ? 0 : `${typeof id} ${cursorIds.get(String(id))}` }
    }
    if (reply.cursorsKilled)
      reply.cursorsKilled = reply.cursorsKilled.map((id: unknown) => cursorRef(id, cursorIds))
    return { ...base, reply }
  }
  const failure = event.failure as MongoServerError
  return { ...base, failure: [failure.constructor.name, failure.message, failure.code, failure.codeName] }
}

function cursorRef(id: unknown, cursorIds: Map<string, unknown>): string {
  const kind = id instanceof Long ? 'Long' : typeof id
  return `${kind} ${cursorIds.get(String(id)) ?? 'unknown cursor'}`
}

describe('command monitoring', () => {
  let official: OfficialClient
  let rumongo: MongoClient

  beforeAll(async () => {
    official = await OfficialClient.connect(uri, { monitorCommands: true })
    rumongo = await MongoClient.connect(uri, { monitorCommands: true })
  })

  afterAll(async () => {
    await Promise.all([official.close(), rumongo.close()])
  })

  it.each(READS)('%s: the same command events as the official driver', async (_name, read) => {
    const expected = record(official, COMMAND_EVENTS)
    const actual = record(rumongo, COMMAND_EVENTS)
    const [officialResult, rumongoResult] = [await read(official), await read(rumongo)]
    // rumongo's close() does not wait for the killCursors (the Rust driver sends it on its own).
    await until(() => actual.length >= expected.length)
    stop(official)
    stop(rumongo)

    expect(actual.length).toBeGreaterThan(0)
    const officialIds = new Map<string, unknown>()
    const rumongoIds = new Map<string, unknown>()
    expect(actual.map((event) => comparable(event, rumongoIds))).toEqual(
      expected.map((event) => comparable(event, officialIds)),
    )
    // Each command's end pairs with its start by requestId, in the same order.
    for (let i = 0; i < actual.length; i += 2) {
      expect(actual[i]).toBeInstanceOf(CommandStartedEvent)
      expect(actual[i + 1]!.requestId).toBe(actual[i]!.requestId)
    }
    expect(new Set(actual.map((event) => event.requestId)).size).toBe(actual.length / 2)
    // The event objects carry the official fields, with the same types.
    for (const [index, event] of actual.entries()) {
      const reference = expected[index]!
      expect(Object.keys(event).sort()).toEqual(Object.keys(reference).sort())
      expect(typeof event.duration).toBe(typeof (reference as CommandSucceededEvent).duration)
      expect(event.address).toBe(reference.address)
      expect(typeof event.connectionId).toBe(typeof reference.connectionId)
      expect(typeof event.serverConnectionId).toBe(typeof reference.serverConnectionId)
    }
    if (officialResult instanceof Error) {
      expect(rumongoResult).toBeInstanceOf(MongoServerError)
      expect((actual.at(-1) as CommandFailedEvent).failure).toBeInstanceOf(MongoServerError)
    }
  })

  it('commandStarted holds the cursor id the reply gave, as a Long (getMore, killCursors)', async () => {
    const events = record(rumongo, COMMAND_EVENTS)
    const cursor = unprefetched(coll(rumongo).find({}, { batchSize: 2 }))
    await cursor.next()
    await cursor.next()
    await cursor.next()
    await cursor.close()
    await until(() => events.length >= 6)
    stop(rumongo)
    const [, found, getMore, , kill] = events as [
      never,
      CommandSucceededEvent,
      CommandStartedEvent,
      never,
      CommandStartedEvent,
    ]
    expect(getMore.command.getMore).toBeInstanceOf(Long)
    expect(String(getMore.command.getMore)).toBe(String(found.reply.cursor.id))
    expect(kill.command.cursors.map(String)).toEqual([String(found.reply.cursor.id)])
  })

  it("commandSucceeded's reply is decoded when first read, and reads as the official event's", async () => {
    const read = (c: AnyClient) =>
      coll(c)
        .find({}, { sort: { _id: 1 }, batchSize: 10 })
        .toArray()
    const expected = record<CommandSucceededEvent>(official, ['commandSucceeded'])
    const actual = record<CommandSucceededEvent>(rumongo, ['commandSucceeded'])
    await read(official)
    await read(rumongo)
    await until(() => actual.length >= 1)
    stop(official)
    stop(rumongo)
    const [event, reference] = [actual[0]!, expected[0]!]
    // Not decoded yet: an accessor stands where the official event has its data property.
    expect(Object.keys(event)).toEqual(Object.keys(reference))
    expect(typeof Object.getOwnPropertyDescriptor(event, 'reply')!.get).toBe('function')
    // Every way a listener reads the event sees the official reply (cursor ids are 0: exhausted).
    // (`serverConnectionId` is a bigint on both events: JSON needs a replacer for it.)
    const json = (value: object) =>
      JSON.parse(JSON.stringify(value, (_key, field) => (typeof field === 'bigint' ? String(field) : field)))
    expect(json(event).reply).toEqual(json(reference).reply)
    expect({ ...event }.reply).toEqual({ ...reference }.reply)
    expect(event.reply.cursor.firstBatch).toEqual(reference.reply.cursor.firstBatch)
    expect(event.reply.cursor.firstBatch).toHaveLength(DOCUMENT_COUNT)
    // Decoded once, then a plain data property as on the official event; writable as there.
    expect(event.reply).toBe(event.reply)
    expect(Object.getOwnPropertyDescriptor(event, 'reply')).toEqual(
      Object.getOwnPropertyDescriptor(reference, 'reply'),
    )
    expect(Object.keys(event)).toEqual(Object.keys(reference))
    event.reply = { replaced: true }
    expect(event.reply).toEqual({ replaced: true })
  })

  it('a listener that throws fails the read with its error, as in the official driver', async () => {
    // The official driver emits inside the command: its read rejects with the listener's error
    // and the command ends there. rumongo's events come on the event loop, tagged with the call
    // that ran the command (listener_errors.test.ts has every kind of throw).
    const boom = new Error('listener failure')
    rumongo.once('commandStarted', () => {
      throw boom
    })
    const seen = record(rumongo, ['commandSucceeded'])
    try {
      await expect(coll(rumongo).findOne({ i: 3 })).rejects.toBe(boom)
      await settle()
      expect(seen).toEqual([])
      await expect(coll(rumongo).findOne({ i: 3 })).resolves.toEqual({ _id: 3, i: 3, tag: 'odd' })
    } finally {
      stop(rumongo)
    }
  })

  it('monitorCommands takes what the official driver takes, with its error', () => {
    for (const value of [true, false, 'true', 'false']) {
      expect(() => new MongoClient(uri, { monitorCommands: value as boolean })).not.toThrow()
    }
    for (const value of ['yes', 1]) {
      const official = captureError(() => new OfficialClient(uri, { monitorCommands: value as boolean }))
      const ours = captureError(() => new MongoClient(uri, { monitorCommands: value as boolean }))
      expect(ours).toBeInstanceOf(MongoParseError)
      expect([ours.constructor.name, ours.message]).toEqual([official.constructor.name, official.message])
    }
  })

  it('without monitorCommands, command listeners get nothing (as the official driver)', async () => {
    const plain = new MongoClient(uri)
    const officialPlain = new OfficialClient(uri)
    try {
      const events = record(plain, COMMAND_EVENTS)
      const officialEvents = record(officialPlain, COMMAND_EVENTS)
      await coll(plain).findOne({})
      await coll(officialPlain).findOne({})
      await settle()
      expect(events).toEqual([])
      expect(officialEvents).toEqual([])
      expect(plain.monitor.crossings).toBe(0)
    } finally {
      await Promise.all([plain.close(), officialPlain.close()])
    }
  })
})

describe('a command its time limit drops', () => {
  /** Runs `test` against a server that never answers find. Stopping it twice is harmless. */
  async function withSilentServer(test: (server: WireServer) => Promise<void>) {
    const server = await startWireServer({ answer: (command) => ('find' in command ? null : { ok: 1 }) })
    try {
      await test(server)
    } finally {
      await server.stop()
    }
  }

  /** The command events of a findOne that the server does not answer, and its error. */
  async function droppedFind(client: AnyClient) {
    const events = record(client, COMMAND_EVENTS)
    const error = (await coll(client)
      .findOne({})
      .catch((caught: unknown) => caught)) as Error
    await settle()
    stop(client)
    return { events, error }
  }

  /** Each command started, then failed with the same requestId. */
  function expectPairedFailures(events: CommandEvent[]) {
    expect(events.length).toBeGreaterThan(0)
    for (let i = 0; i < events.length; i += 2) {
      // By class name: the official driver's events are its own classes.
      expect(events[i]!.constructor.name).toBe('CommandStartedEvent')
      expect(events[i + 1]!.constructor.name).toBe('CommandFailedEvent')
      expect(events[i + 1]!.requestId).toBe(events[i]!.requestId)
    }
  }

  it("socketTimeoutMS: commandFailed with the read's error, as the official driver", async () => {
    await withSilentServer(async (server) => {
      const official = await OfficialClient.connect(server.uri, {
        monitorCommands: true,
        socketTimeoutMS: 300,
      })
      const rumongo = await MongoClient.connect(server.uri, { monitorCommands: true, socketTimeoutMS: 300 })
      try {
        const expected = await droppedFind(official)
        const actual = await droppedFind(rumongo)
        expect(actual.error).toBeInstanceOf(MongoNetworkTimeoutError)
        expect(actual.error.constructor.name).toBe(expected.error.constructor.name)
        // Both retry the read once (retryReads): two pairs each.
        expectPairedFailures(expected.events as CommandEvent[])
        expectPairedFailures(actual.events)
        expect(actual.events).toHaveLength(expected.events.length)
        const failed = actual.events.at(-1) as CommandFailedEvent
        const reference = expected.events.at(-1) as unknown as CommandFailedEvent
        expect([failed.commandName, failed.databaseName]).toEqual([
          reference.commandName,
          reference.databaseName,
        ])
        expect(failed.failure.constructor.name).toBe(reference.failure.constructor.name)
        expect(failed.failure.message).toBe(actual.error.message)
        expect(failed.duration).toBeGreaterThanOrEqual(250)
        expect(Object.keys(failed).sort()).toEqual(Object.keys(reference).sort())
      } finally {
        await server.stop()
        await Promise.all([official.close(), rumongo.close()])
      }
    })
  })

  it('timeoutMS: commandFailed with the MongoOperationTimeoutError the read rejects with', async () => {
    await withSilentServer(async (server) => {
      // (The official driver 7 ignores timeoutMS: its read waits for the server.)
      const rumongo = await MongoClient.connect(server.uri, { monitorCommands: true, timeoutMS: 300 })
      try {
        const { events, error } = await droppedFind(rumongo)
        expect(error).toBeInstanceOf(MongoOperationTimeoutError)
        expectPairedFailures(events)
        const failed = events.at(-1) as CommandFailedEvent
        expect(failed.failure).toBeInstanceOf(MongoOperationTimeoutError)
        expect(failed.failure.message).toBe(error.message)
      } finally {
        await server.stop()
        await rumongo.close()
      }
    })
  })

  it('a reply after the limit is not reported as a success', async () => {
    const slow = await startWireServer({ documents: [{ _id: 1 }], delayMS: 700 })
    const rumongo = await MongoClient.connect(slow.uri, { monitorCommands: true, socketTimeoutMS: 300 })
    try {
      const events = record(rumongo, COMMAND_EVENTS)
      await expect(coll(rumongo).findOne({})).rejects.toBeInstanceOf(MongoNetworkTimeoutError)
      // Each attempt (the read is retried once: retryReads) goes on detached until the server
      // answers (700 ms): both replies were received.
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      stop(rumongo)
      expect(events.map((event) => event.constructor.name)).toEqual([
        'CommandStartedEvent',
        'CommandFailedEvent',
        'CommandStartedEvent',
        'CommandFailedEvent',
      ])
    } finally {
      await rumongo.close()
      await slow.stop()
    }
  })

  it("its OpenTelemetry span ends with the error, as the official driver's", async () => {
    await withSilentServer(async (server) => {
      const script = new URL('./fixtures/otel_timeout_spans.mjs', import.meta.url)
      const { stdout } = await promisify(execFile)(process.execPath, [fileURLToPath(script), server.uri], {
        timeout: 60_000,
      })
      type Spans = { error: string; spans: { name: string; status: { code: number; message?: string } }[] }
      const { official, rumongo } = JSON.parse(stdout) as Record<string, Spans>
      expect(rumongo!.error).toBe(official!.error)
      expect(official!.spans.length).toBeGreaterThan(0)
      // One span per command sent: both drivers send the find twice (retryReads).
      expect(rumongo!.spans.map((span) => [span.name, span.status.code])).toEqual(
        official!.spans.map((span) => [span.name, 2]),
      )
      expect(official!.spans.every((span) => span.status.code === 2)).toBe(true)
      for (const span of rumongo!.spans) expect(span.status.message).toMatch(/socketTimeoutMS/)
    })
  })
})

describe('no listener, no crossing', () => {
  it('no event crosses from the native client unless a listener for it exists', async () => {
    const client = new MongoClient(uri, { monitorCommands: true })
    try {
      for (const [, read] of READS) await read(client)
      await settle()
      expect(client.monitor.crossings).toBe(0)

      // One listener: only its events cross.
      const checkedIn = record(client, ['connectionCheckedIn'])
      await coll(client).findOne({})
      await settle()
      // (A killCursors sent after an earlier close may still check a connection in.)
      expect(checkedIn.length).toBeGreaterThanOrEqual(1)
      expect(client.monitor.crossings).toBe(checkedIn.length)

      // Removed again: nothing crosses.
      client.removeAllListeners('connectionCheckedIn')
      const crossed = client.monitor.crossings
      await coll(client).findOne({})
      await settle()
      expect(client.monitor.crossings).toBe(crossed)
    } finally {
      await client.close()
    }
  })
})

describe('connection pool and server events', () => {
  const POOL_EVENTS = [
    'connectionPoolCreated',
    'connectionPoolReady',
    'connectionPoolCleared',
    'connectionPoolClosed',
    'connectionCreated',
    'connectionReady',
    'connectionClosed',
    'connectionCheckOutStarted',
    'connectionCheckOutFailed',
    'connectionCheckedOut',
    'connectionCheckedIn',
  ]
  const TOPOLOGY_EVENTS = ['topologyOpening', 'serverOpening', 'topologyClosed', 'serverClosed']
  type Named = { name: string; connectionId?: unknown; reason?: string; address?: string }

  async function lifecycle(client: AnyClient) {
    const events = record<Named>(client, [...POOL_EVENTS, ...TOPOLOGY_EVENTS])
    await client.connect()
    await settle()
    const connected = events.splice(0)
    await coll(client).findOne({ i: 1 })
    await settle()
    const checkout = events.splice(0)
    await client.close()
    await settle()
    return { connected, checkout, closed: events.splice(0) }
  }

  it('connect, checkout and close emit the official events and shapes', async () => {
    const official = await lifecycle(new OfficialClient(uri))
    const rumongo = await lifecycle(new MongoClient(uri))
    const names = (events: Named[]) => events.map((event) => event.name)

    // rumongo's connect() checks the server with a ping (official: only with credentials), so
    // it also checks a connection out and in; the official driver opens its pool lazily.
    expect(names(rumongo.connected)).toEqual(
      expect.arrayContaining([
        'topologyOpening',
        'serverOpening',
        'connectionPoolCreated',
        'connectionCreated',
      ]),
    )
    expect(names(official.connected)).toEqual(
      expect.arrayContaining(['topologyOpening', 'serverOpening', 'connectionPoolCreated']),
    )
    expect(names(rumongo.checkout)).toEqual(names(official.checkout))
    expect(names(rumongo.checkout)).toEqual([
      'connectionCheckOutStarted',
      'connectionCheckedOut',
      'connectionCheckedIn',
    ])
    const [, out, back] = rumongo.checkout
    expect(back!.connectionId).toBe(out!.connectionId)
    expect(typeof out!.connectionId).toBe('number')
    expect(new Set(names(rumongo.closed))).toEqual(new Set(names(official.closed)))
    expect(rumongo.closed.find((event) => event.name === 'connectionClosed')!.reason).toBe('poolClosed')
    // Same fields, same types, for every event both drivers emitted.
    for (const event of [...rumongo.connected, ...rumongo.checkout, ...rumongo.closed]) {
      const reference = [...official.connected, ...official.checkout, ...official.closed].find(
        (candidate) => candidate.name === event.name,
      )
      if (!reference) continue
      const keys = Object.keys(reference).filter((key) => key !== 'options')
      expect(
        Object.keys(event)
          .filter((key) => key !== 'options')
          .sort(),
        event.name,
      ).toEqual(keys.sort())
      for (const key of keys) {
        const difference = firstDifference(
          typeName((event as Document)[key]),
          typeName((reference as Document)[key]),
        )
        expect(difference, `${event.name}.${key}`).toBeUndefined()
      }
      if (event.address !== undefined) expect(event.address).toBe(reference.address)
    }
  })

  function typeName(value: unknown): string {
    return value === null ? 'null' : typeof value === 'object' ? value.constructor.name : typeof value
  }

  it('a listener added after connecting receives the pool events', async () => {
    const client = await MongoClient.connect(uri)
    try {
      const events = record<Named>(client, ['connectionCheckOutStarted', 'connectionCheckedOut'])
      await coll(client).estimatedDocumentCount()
      await settle()
      expect(events.map((event) => event.name)).toEqual(['connectionCheckOutStarted', 'connectionCheckedOut'])
    } finally {
      await client.close()
    }
  })
})

describe('WorkerPool', () => {
  it("the workers' command events stay in the workers", async () => {
    const client = await MongoClient.connect(uri, { monitorCommands: true })
    const pool = await WorkerPool.create({ uri, size: 1, clientOptions: { monitorCommands: true } })
    try {
      const events = record(client, COMMAND_EVENTS)
      const count = await pool.reduce(dbName, 'items', {}, {}, (n: number) => n + 1, 0)
      expect(count).toBe(DOCUMENT_COUNT)
      await coll(client).findOne({})
      await settle()
      // Only the main client's own findOne.
      expect(events.map((event) => event.commandName)).toEqual(['find', 'find'])
      expect(client.monitor.crossings).toBe(2)
    } finally {
      await pool.close()
      await client.close()
    }
  })
})

describe('OpenTelemetry', () => {
  interface FinishedSpan {
    name: string
    kind: number
    attributes: Record<string, unknown>
    status: { code: number; message?: string }
    parent: string | null
    sameTrace: boolean
    withinParent: boolean
  }

  /**
   * A span as both drivers must make it. `db.query.text` is compared as parsed JSON with sorted
   * keys: its keys follow each driver's command, and the Rust driver orders a command's fields
   * differently (same fields, same "?" placeholders).
   */
  function comparableSpan({ withinParent: _, ...span }: FinishedSpan) {
    const { 'db.query.text': text, ...attributes } = span.attributes
    return { ...span, attributes: { ...attributes, statement: sortKeys(JSON.parse(text as string)) } }
  }

  function sortKeys(value: unknown): unknown {
    if (Array.isArray(value)) return value.map(sortKeys)
    if (typeof value !== 'object' || value === null) return value
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, sortKeys((value as Document)[key])]),
    )
  }

  it('every read makes the spans @opentelemetry/instrumentation-mongodb makes for the official driver', async () => {
    const script = new URL('./fixtures/otel_spans.mjs', import.meta.url)
    const { stdout } = await promisify(execFile)(process.execPath, [fileURLToPath(script), uri, dbName], {
      timeout: 60_000,
    })
    const { official, rumongo, untraced } = JSON.parse(stdout) as Record<string, FinishedSpan[]>
    expect(official!.length).toBeGreaterThan(8)
    expect(rumongo!.map(comparableSpan)).toEqual(official!.map(comparableSpan))
    expect(rumongo!.every((span) => span.sameTrace)).toBe(true)
    // Each span lies within its parent's time, except killCursors: rumongo's cursor.close()
    // returns once the cursor is dropped, and the Rust driver kills it from a task of its own.
    expect(rumongo!.filter((span) => !span.withinParent && !span.name.startsWith('killCursors'))).toEqual([])
    // The failing aggregate: an error status with the server's message.
    expect(rumongo!.filter((span) => span.status.code === 2).map((span) => span.name)).toEqual([
      'aggregate $cmd',
    ])
    // tracing: false: none.
    expect(untraced).toEqual([])
  })
})

describe('structured log (command component)', () => {
  type Log = Record<string, unknown>

  /** A log record reduced to what must be equal between the drivers. */
  function comparableLog(log: Log) {
    const kinds: Log = {}
    for (const key of ['t', 'requestId', 'driverConnectionId', 'serverConnectionId', 'durationMS']) {
      if (key in log) kinds[key] = typeName(log[key])
    }
    const documents: Log = {}
    for (const key of ['command', 'reply']) {
      if (typeof log[key] !== 'string') continue
      const document = JSON.parse(log[key] as string) as Document
      // Each driver's own session id; cursor ids differ between the drivers' cursors.
      delete document.lsid
      if (document.cursor?.id !== undefined) document.cursor.id = document.cursor.id === 0 ? 0 : 'id'
      documents[key] = sortKeys(document)
    }
    const rest = Object.fromEntries(
      Object.entries(log).filter(([key]) => !(key in kinds) && !(key in documents)),
    )
    return { keys: Object.keys(log).sort(), ...rest, kinds, documents }
  }

  function typeName(value: unknown): string {
    return value === null ? 'null' : typeof value === 'object' ? value.constructor.name : typeof value
  }

  function sortKeys(value: unknown): unknown {
    if (Array.isArray(value)) return value.map(sortKeys)
    if (typeof value !== 'object' || value === null) return value
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, sortKeys((value as Document)[key])]),
    )
  }

  /** The reads' logs: close() ends the sessions (endSessions), which is not a read. */
  const reads = (logs: Log[]) => logs.filter((log) => log.commandName !== 'endSessions')

  async function logsOf(client: AnyClient, logs: Log[]) {
    await client.connect()
    // rumongo's connect() pings; its log lines arrive after connect() resolves.
    await settle()
    logs.length = 0
    const items = coll(client)
    await items.find({ i: { $gte: 1 } }, { batchSize: 10, sort: { i: 1 } }).toArray()
    await items.findOne({ tag: 'odd' })
    await items
      .aggregate([{ $nonexistentStage: 1 }], { batchSize: 1 })
      .toArray()
      .catch(() => null)
    await settle()
    await client.close()
    return logs.splice(0)
  }

  it('MONGODB_LOG_COMMAND=debug: the official messages and fields, to mongodbLogPath', async () => {
    const officialLogs: Log[] = []
    const rumongoLogs: Log[] = []
    const previous = process.env.MONGODB_LOG_COMMAND
    process.env.MONGODB_LOG_COMMAND = 'debug'
    let official: OfficialClient
    let rumongo: MongoClient
    try {
      official = new OfficialClient(uri, { mongodbLogPath: { write: (log) => void officialLogs.push(log) } })
      rumongo = new MongoClient(uri, { mongodbLogPath: { write: (log) => void rumongoLogs.push(log) } })
    } finally {
      if (previous === undefined) delete process.env.MONGODB_LOG_COMMAND
      else process.env.MONGODB_LOG_COMMAND = previous
    }
    const expected = await logsOf(official, officialLogs)
    const actual = await logsOf(rumongo, rumongoLogs)
    expect(reads(expected).length).toBe(6)
    expect(reads(actual).map(comparableLog)).toEqual(reads(expected).map(comparableLog))
  })

  it('mongodbLogComponentSeverities turns it off and on; info is not enough', async () => {
    for (const [severities, count] of [
      [{ command: 'info' }, 0],
      [{ default: 'debug', command: 'off' }, 0],
      [{ default: 'trace' }, 6],
    ] as const) {
      const logs: Log[] = []
      const client = new MongoClient(uri, {
        mongodbLogComponentSeverities: severities,
        mongodbLogPath: { write: (log) => void logs.push(log) },
      })
      // The log does not turn command events on: that is monitorCommands' (as in the official driver).
      const events = record(client, COMMAND_EVENTS)
      expect(reads(await logsOf(client, logs))).toHaveLength(count)
      expect(events).toEqual([])
      // Off: nothing crosses at all (on, the connect's ping and close's endSessions cross too).
      if (count === 0) expect(client.monitor.crossings).toBe(0)
    }
  })
})
