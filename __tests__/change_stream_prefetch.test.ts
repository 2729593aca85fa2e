// watch() with `prefetch: 1` (rumongo's own option: the next getMore goes out while the reply in
// hand is read) against the official driver's watch() without it, on a fake replica-set primary
// serving the same scripted change stream: the events, `bufferedCount()`, the resume token and
// `resumeTokenChanged` as each event is returned, the resume after a getMore read ahead failed,
// and close() with one in flight. Each test also checks that the getMore did go out ahead.
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { type Document } from 'bson'
import { MongoClient as OfficialClient } from 'mongodb'
import { MongoClient, MongoInvalidArgumentError } from 'rumongo'
import { CLOSE_CONNECTION } from './setup/wire_server.js'
import {
  eventToken,
  insertEvent,
  startChangeStreamServer,
  type AnyChangeStream as AnyStream,
  type ChangeStreamScript,
  type ChangeStreamServer,
} from './setup/change_stream_server.js'
import { expectIdentical } from './setup/helpers.js'

type Driver = 'official' | 'rumongo'
function inserted(n: number): Document {
  return insertEvent(n, { db: 'test', coll: 'items' }, (_id) => ({
    _id,
    n,
    name: `item ${n}`,
    tags: ['a', n],
    text: 'x'.repeat(100),
  }))
}

/** Waits (up to a bound far above any round trip) until the server received `count` getMores. */
async function getMoresReceived(server: ChangeStreamServer, count: number): Promise<boolean> {
  for (let waited = 0; waited < 5_000; waited += 10) {
    if (server.received('getMore').length >= count) return true
    await sleep(10)
  }
  return false
}

interface Seen<T> {
  result: T
  /** `resumeTokenChanged` and `close` as the stream emitted them. */
  emitted: unknown[][]
  /** The `$changeStream` stage of each aggregate (the first, then each resume's). */
  stages: Document[]
  server: ChangeStreamServer
}

/**
 * Runs `scenario` on a stream of each driver, each on a server of its own with the same script:
 * the official driver's watch() as it is, rumongo's with `prefetch: 1`.
 */
async function both<T>(
  script: ChangeStreamScript,
  scenario: (stream: AnyStream, server: ChangeStreamServer, driver: Driver) => Promise<T>,
): Promise<Record<Driver, Seen<T>>> {
  const seen = async (driver: Driver): Promise<Seen<T>> => {
    const server = await startChangeStreamServer(script)
    const client =
      driver === 'official'
        ? new OfficialClient(server.uri, { heartbeatFrequencyMS: 60_000 })
        : new MongoClient(server.uri)
    try {
      const options = driver === 'rumongo' ? { prefetch: 1 } : {}
      const stream = (client as MongoClient)
        .db('test')
        .collection('items')
        .watch([], options) as unknown as AnyStream
      const emitted: unknown[][] = []
      for (const event of ['resumeTokenChanged', 'close']) {
        stream.on(event, (...args: unknown[]) => emitted.push([event, ...args]))
      }
      const result = await scenario(stream, server, driver)
      await stream.close()
      const stages = server.received('aggregate').map((command) => command.pipeline[0].$changeStream)
      return { result, emitted, stages, server }
    } finally {
      await client.close()
      await server.stop()
    }
  }
  return { official: await seen('official'), rumongo: await seen('rumongo') }
}

/** Reads `count` events, noting after each its `_id`, `bufferedCount()` and the resume token. */
async function readNoting(stream: AnyStream, count: number): Promise<unknown[]> {
  const read: unknown[] = []
  for (let n = 0; n < count; n++) {
    const event = await stream.next()
    read.push([event._id, event.fullDocument?.n, stream.bufferedCount(), stream.resumeToken])
  }
  return read
}

describe('watch() with prefetch: 1', () => {
  it('sends the next getMore while a batch is read; events, bufferedCount, resume token and resumeTokenChanged move as without it', async () => {
    const events = Array.from({ length: 9 }, (_, n) => inserted(n))
    const seen = await both({ events, batchSize: 3 }, async (stream, server, driver) => {
      const first = await readNoting(stream, 1)
      // The aggregate's first batch is empty; the first getMore brought events 0-2. With
      // prefetch, the second getMore is on its way before event 1 is read.
      const ahead = driver === 'rumongo' ? await getMoresReceived(server, 2) : false
      return { ahead, read: [...first, ...(await readNoting(stream, 8))] }
    })
    expect(seen.rumongo.result.ahead).toBe(true)
    expectIdentical(seen.rumongo.result.read, seen.official.result.read)
    expectIdentical(seen.rumongo.emitted, seen.official.emitted)
    // `prefetch` is not sent: the stage is the official driver's.
    expect(seen.rumongo.stages).toEqual(seen.official.stages)
    expect(seen.rumongo.stages).toEqual([{}])
    // One getMore ahead at most: the reader is at event 8 (the third getMore's last), the fourth
    // getMore may be out, no fifth.
    expect(seen.rumongo.server.received('getMore').length).toBeLessThanOrEqual(4)
  })

  it('a getMore read ahead that fails resumes from the last event returned, losing and repeating none', async () => {
    // The second getMore (read ahead while events 0-2 are read) drops the connection: the stream
    // resumes once the reader gets past event 2, from the batch's token, as the official
    // driver's does when its second getMore fails.
    const events = Array.from({ length: 9 }, (_, n) => inserted(n))
    const script: ChangeStreamScript = {
      events,
      batchSize: 3,
      fault: (name, count) => (name === 'getMore' && count === 2 ? CLOSE_CONNECTION : undefined),
    }
    const seen = await both(script, async (stream, server, driver) => {
      const first = await readNoting(stream, 1)
      const ahead = driver === 'rumongo' ? await getMoresReceived(server, 2) : false
      return { ahead, read: [...first, ...(await readNoting(stream, 8))] }
    })
    expect(seen.rumongo.result.ahead).toBe(true)
    expectIdentical(seen.rumongo.result.read, seen.official.result.read)
    expectIdentical(seen.rumongo.emitted, seen.official.emitted)
    expect(seen.rumongo.stages).toEqual(seen.official.stages)
    expect(seen.rumongo.stages).toEqual([{}, { resumeAfter: { _data: 'pb3' } }])
    const ids = (seen.rumongo.result.read as unknown[][]).map(([id]) => id)
    expect(ids).toEqual(events.slice(0, 9).map((_, n) => eventToken(n)))
  })

  it('replies handed over in parts, with a getMore read ahead: the same reads and resume as without it', async () => {
    // Over 128 KiB each: a reply's parts are asked for before the getMore read ahead, which the
    // native cursor then serves after them; the third getMore fails and the stream resumes from
    // the second reply's token.
    const events = Array.from({ length: 1900 }, (_, n) => inserted(n))
    const script: ChangeStreamScript = {
      events,
      batchSize: 600,
      firstBatchSize: 600,
      fault: (name, count) => (name === 'getMore' && count === 2 ? CLOSE_CONNECTION : undefined),
    }
    const seen = await both(script, async (stream, server, driver) => {
      const first = await readNoting(stream, 1)
      // The first getMore goes out while the aggregate's first reply (600 events) is read.
      const ahead = driver === 'rumongo' ? await getMoresReceived(server, 1) : false
      const read = [...first, ...(await readNoting(stream, 1799))]
      if (driver === 'rumongo') {
        // The resumed cursor's getMore read ahead, then time for any other to arrive (none may).
        await getMoresReceived(server, 3)
        await sleep(200)
      }
      return { ahead, read, getMores: server.received('getMore').length }
    })
    expect(seen.rumongo.result.ahead).toBe(true)
    // One getMore ahead at most: the two of the first cursor, and the one the resumed cursor sent
    // while its first reply (events 1200-1799) was read.
    expect(seen.rumongo.result.getMores).toBe(3)
    expect(seen.official.result.getMores).toBe(2)
    expectIdentical(seen.rumongo.result.read, seen.official.result.read)
    expectIdentical(seen.rumongo.emitted, seen.official.emitted)
    expect(seen.rumongo.stages).toEqual([{}, { resumeAfter: { _data: 'pb1200' } }])
    expect(seen.rumongo.stages).toEqual(seen.official.stages)
  })

  it('close() with a getMore read ahead in flight kills the cursor at once and returns none of its events', async () => {
    // The second getMore never gets an answer until the test ends.
    let answer = (_: unknown) => {}
    const unanswered = new Promise((resolve) => (answer = resolve))
    const events = Array.from({ length: 9 }, (_, n) => inserted(n))
    const script: ChangeStreamScript = {
      events,
      batchSize: 3,
      fault: (name, count) =>
        name === 'getMore' && count === 2 ? unanswered.then(() => CLOSE_CONNECTION) : undefined,
    }
    try {
      const seen = await both(script, async (stream, server, driver) => {
        const read = await readNoting(stream, 2)
        const ahead = driver === 'rumongo' ? await getMoresReceived(server, 2) : false
        const started = Date.now()
        await stream.close()
        const closeMs = Date.now() - started
        const after = await stream.next().then(
          () => 'resolved',
          (error: Error) => error.constructor.name,
        )
        return { ahead, read, closed: stream.closed, after, closeMs, killed: server.killed.map(String) }
      })
      const { ahead, closeMs, ...rumongo } = seen.rumongo.result
      const { closeMs: _, ahead: __, ...official } = seen.official.result
      expect(ahead).toBe(true)
      // Not waiting for the getMore, which never ends (the bound: the kill's own wait is 2 s).
      expect(closeMs).toBeLessThan(4_000)
      expectIdentical(rumongo, official)
      expect(rumongo.killed).toEqual(['7001'])
      expectIdentical(seen.rumongo.emitted, seen.official.emitted)
    } finally {
      answer(undefined)
    }
  })

  it('accepts 0 or 1 only, and keeps it out of the stream options', async () => {
    const client = new MongoClient('mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=100')
    const collection = client.db('test').collection('items')
    for (const prefetch of [2, -1, 0.5, '1', null]) {
      expect(() => collection.watch([], { prefetch: prefetch as number })).toThrow(MongoInvalidArgumentError)
    }
    expect(() => collection.watch([], { prefetch: 2 })).toThrow(
      'prefetch of a change stream must be 0 or 1, got a number (2)',
    )
    const stream = collection.watch([], { prefetch: 0 })
    expect(stream.options).toEqual({})
    await stream.close()
    await client.close()
  })
})
