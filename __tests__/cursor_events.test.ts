// The official driver's cursors are EventEmitters that emit 'close' once a run is cleaned up:
// closed, failed, exhausted (the reply with cursor id 0 arrives, before the read that asked for it
// resolves) or closed by their client; `rewind()` arms it again. They also say `closed` as soon as
// the last document of that last batch is taken. rumongo's cursors were not emitters (only the
// Mongoose plugin added the event) and said `closed` at the next read only. Each scenario runs
// step by step with both drivers on the embedded server, logging the events, the reads' outcomes
// and the cursor's state at each step, in order.
import { EventEmitter, once } from 'node:events'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { MongoClient as OfficialClient, type Document } from 'mongodb'
import { AbstractCursor, MongoClient } from 'rumongo'
import { connectBoth, expectIdentical, uniqueDbName, uri, type Drivers } from './setup/helpers.js'
import type { AnyCursor } from './setup/any_cursor.js'

const dbName = uniqueDbName('cursor_events')
let drivers: Drivers

beforeAll(async () => {
  drivers = await connectBoth()
  const documents = Array.from({ length: 10 }, (_, i) => ({ _id: i }))
  await drivers.official.db(dbName).collection('items').insertMany(documents)
})

afterAll(async () => {
  await drivers.official.db(dbName).dropDatabase()
  await drivers.close()
})

type AnyClient = MongoClient | OfficialClient

function items(client: AnyClient) {
  return (client as OfficialClient).db(dbName).collection('items')
}

const find = (batchSize: number) => (client: AnyClient) =>
  items(client).find({}, { batchSize, sort: { _id: 1 } }) as unknown as AnyCursor

/** What a test can see of a cursor between steps. */
function state(cursor: AnyCursor) {
  const id = cursor.id === undefined ? 'no id' : cursor.id.isZero() ? 'id 0' : 'id open'
  return [cursor.closed ? 'closed' : 'open', cursor.killed ? 'killed' : '-', id, cursor.bufferedCount()]
}

/** Runs `step` and logs its outcome and the state after it (events land in the log meanwhile). */
async function step(log: unknown[], cursor: AnyCursor, name: string, run: () => unknown) {
  let outcome: unknown
  try {
    const value = await run()
    outcome = Array.isArray(value)
      ? value.map((document: Document) => document._id)
      : ((value as Document | null)?._id ?? value)
  } catch (error) {
    outcome = `${(error as Error).name}: ${(error as Error).message}`
  }
  log.push([name, outcome, ...state(cursor)])
}

type Scenario = (client: AnyClient, log: unknown[], listen: (cursor: AnyCursor) => AnyCursor) => Promise<void>

const scenarios: Record<string, Scenario> = {
  'next() to the end, batches of 4': async (client, log, listen) => {
    const cursor = listen(find(4)(client))
    for (let i = 0; i < 12; i++) await step(log, cursor, 'next', () => cursor.next())
    await step(log, cursor, 'close', () => cursor.close())
  },
  'the whole result in the first batch': async (client, log, listen) => {
    const cursor = listen(find(20)(client))
    await step(log, cursor, 'next', () => cursor.next())
    await step(log, cursor, 'readBufferedDocuments', () => cursor.readBufferedDocuments())
    await step(log, cursor, 'next', () => cursor.next())
  },
  'readBufferedDocuments() takes the last batch': async (client, log, listen) => {
    const cursor = listen(find(4)(client))
    for (let i = 0; i < 3; i++) {
      await step(log, cursor, 'hasNext', () => cursor.hasNext())
      await step(log, cursor, 'readBufferedDocuments(3)', () => cursor.readBufferedDocuments(3))
      await step(log, cursor, 'readBufferedDocuments', () => cursor.readBufferedDocuments())
    }
    await step(log, cursor, 'hasNext', () => cursor.hasNext())
    await step(log, cursor, 'next', () => cursor.next())
  },
  'tryNext() to the end': async (client, log, listen) => {
    const cursor = listen(find(3)(client))
    for (let i = 0; i < 11; i++) await step(log, cursor, 'tryNext', () => cursor.tryNext())
  },
  'toArray()': async (client, log, listen) => {
    const cursor = listen(find(4)(client))
    await step(log, cursor, 'toArray', () => cursor.toArray())
    await step(log, cursor, 'close', () => cursor.close())
  },
  'an empty result': async (client, log, listen) => {
    const cursor = listen(items(client).find({ _id: -1 }) as unknown as AnyCursor)
    await step(log, cursor, 'next', () => cursor.next())
  },
  'close() mid-way, twice': async (client, log, listen) => {
    const cursor = listen(find(4)(client))
    await step(log, cursor, 'next', () => cursor.next())
    await step(log, cursor, 'close', () => cursor.close())
    await step(log, cursor, 'close', () => cursor.close())
    await step(log, cursor, 'next', () => cursor.next())
  },
  'close() with the last batch buffered': async (client, log, listen) => {
    const cursor = listen(find(20)(client))
    await step(log, cursor, 'next', () => cursor.next())
    await step(log, cursor, 'close', () => cursor.close())
    await step(log, cursor, 'readBufferedDocuments(2)', () => cursor.readBufferedDocuments(2))
    await step(log, cursor, 'toArray', () => cursor.toArray())
    await step(log, cursor, 'hasNext', () => cursor.hasNext())
    await step(log, cursor, 'readBufferedDocuments', () => cursor.readBufferedDocuments())
    await step(log, cursor, 'next', () => cursor.next())
  },
  'close() mid-way, then what was buffered': async (client, log, listen) => {
    const cursor = listen(find(4)(client))
    await step(log, cursor, 'next', () => cursor.next())
    await step(log, cursor, 'close', () => cursor.close())
    await step(log, cursor, 'hasNext', () => cursor.hasNext())
    await step(log, cursor, 'toArray', () => cursor.toArray())
    await step(log, cursor, 'readBufferedDocuments', () => cursor.readBufferedDocuments())
    await step(log, cursor, 'tryNext', () => cursor.tryNext())
  },
  'close() before any read': async (client, log, listen) => {
    const cursor = listen(find(4)(client))
    await step(log, cursor, 'close', () => cursor.close())
    await step(log, cursor, 'close', () => cursor.close())
  },
  'the find fails': async (client, log, listen) => {
    const cursor = listen(items(client).find({ $bogus: 1 }) as unknown as AnyCursor)
    await step(log, cursor, 'next', () =>
      cursor.next().then(
        () => 'resolved',
        () => 'rejected',
      ),
    )
    await step(log, cursor, 'close', () => cursor.close())
  },
  'a map() transform throws': async (client, log, listen) => {
    const cursor = listen(
      find(4)(client).map(() => {
        throw new Error('bad transform')
      }),
    )
    await step(log, cursor, 'next', () => cursor.next())
  },
  'client.close() mid-way': async (client, log, listen) => {
    const cursor = listen(find(4)(client))
    await step(log, cursor, 'next', () => cursor.next())
    await step(log, cursor, 'client.close', () => client.close())
    await step(log, cursor, 'next', () => cursor.next())
  },
  'client.close() after the last batch arrived': async (client, log, listen) => {
    const cursor = listen(find(6)(client))
    for (let i = 0; i < 7; i++) await step(log, cursor, 'next', () => cursor.next())
    await step(log, cursor, 'client.close', () => client.close())
    await step(log, cursor, 'next', () => cursor.next())
  },
  'rewind() at the end and mid-way': async (client, log, listen) => {
    const cursor = listen(find(20)(client))
    await step(log, cursor, 'toArray', () => cursor.toArray())
    await step(log, cursor, 'rewind', () => cursor.rewind())
    await step(log, cursor, 'next', () => cursor.next())
    await step(log, cursor, 'toArray', () => cursor.toArray())
    const paged = listen(find(4)(client))
    await step(log, paged, 'next', () => paged.next())
    await step(log, paged, 'rewind', () => paged.rewind())
    await step(log, paged, 'toArray', () => paged.toArray())
  },
  'for await with break, and to the end': async (client, log, listen) => {
    const cursor = listen(find(4)(client))
    for await (const document of cursor) {
      log.push(['document', document._id, ...state(cursor)])
      if (document._id === 5) break
    }
    log.push(['loop left', ...state(cursor)])
    const whole = listen(find(4)(client))
    for await (const document of whole) log.push(['document', document._id, ...state(whole)])
    log.push(['loop ended', ...state(whole)])
  },
  'aggregate() to the end': async (client, log, listen) => {
    const cursor = listen(
      items(client).aggregate([{ $sort: { _id: 1 } }], { batchSize: 4 }) as unknown as AnyCursor,
    )
    for (let i = 0; i < 11; i++) await step(log, cursor, 'next', () => cursor.next())
  },
}

it("every cursor emits 'close', and says closed, where and when the official one does", async () => {
  const logs: Record<string, unknown[]> = {}
  for (const driver of ['official', 'rumongo'] as const) {
    for (const [name, scenario] of Object.entries(scenarios)) {
      const client = driver === 'official' ? new OfficialClient(uri) : new MongoClient(uri)
      const log: unknown[] = []
      let cursors = 0
      const listen = (cursor: AnyCursor) => {
        const label = `cursor ${cursors++}`
        cursor.on('close', () => log.push(['close event', label, ...state(cursor)]))
        return cursor
      }
      try {
        await scenario(client, log, listen)
      } finally {
        await client.close()
      }
      logs[`${driver} ${name}`] = log
    }
  }
  for (const name of Object.keys(scenarios)) {
    expectIdentical(logs[`rumongo ${name}`], logs[`official ${name}`])
  }
  // The points this is about: 'close' before the read that took the last batch resolves, and
  // `closed` as soon as its last document is taken.
  expect(logs['rumongo next() to the end, batches of 4']!.slice(7, 11)).toEqual([
    ['next', 7, 'open', '-', 'id open', 0],
    ['close event', 'cursor 0', 'open', '-', 'id 0', 2],
    ['next', 8, 'open', '-', 'id 0', 1],
    ['next', 9, 'closed', '-', 'id 0', 0],
  ])
})

it('a cursor is an EventEmitter with the official cursor’s methods, and none made until a listener comes', async () => {
  const official = drivers.official.db(dbName).collection('items').find()
  const cursor = drivers.rumongo.db(dbName).collection('items').find()
  expect(official).toBeInstanceOf(EventEmitter)
  expect(cursor).toBeInstanceOf(EventEmitter)
  expect(AbstractCursor.CLOSE).toBe('close')
  for (const method of Object.getOwnPropertyNames(EventEmitter.prototype)) {
    if (typeof (official as any)[method] !== 'function') continue
    expect([method, typeof (cursor as any)[method]]).toEqual([method, 'function'])
  }
  // No listener table until the first call of an emitter method (the per-cursor cost stays what
  // it was); that call adds the official cursor's own listeners first.
  expect(Object.keys(cursor)).toEqual([])
  expect(cursor.listenerCount('close')).toBe(official.listenerCount('close'))
  // Chaining methods return the cursor; once() from node:events works.
  const listener = () => {}
  expect(cursor.on('close', listener)).toBe(cursor)
  expect(cursor.off('close', listener)).toBe(cursor)
  const closed = once(cursor, 'close')
  expect(await cursor.next()).toMatchObject({ _id: expect.any(Number) })
  await cursor.close()
  await closed
  await official.close()
})

// The official cursor listens to its own 'error' (a no-op, so that an 'error' emitted on it is not
// thrown) and, until its 'close', to 'close' (which takes it out of its client's active cursors).
// rumongo's had no listener: `cursor.emit('error', error)` threw the error (in an application's
// or a library's 'error' forwarding, an uncaught exception), and listenerCount()/eventNames() said
// nothing was listening.
it("a cursor has the official cursor's own listeners: an 'error' emitted on it is not thrown", async () => {
  const logs: Record<string, unknown[]> = {}
  for (const driver of ['official', 'rumongo'] as const) {
    const client = drivers[driver] as AnyClient
    const log: unknown[] = []
    const listening = (name: string, cursor: AnyCursor) =>
      log.push([
        name,
        cursor.eventNames(),
        cursor.listenerCount('error'),
        cursor.listenerCount('close'),
        cursor.listeners('close').length,
      ])
    const emitted = (name: string, cursor: AnyCursor) => {
      try {
        log.push([name, cursor.emit('error', new Error('emitted by the application'))])
      } catch (error) {
        log.push([name, 'threw', (error as Error).message])
      }
    }
    const cursor = find(4)(client)
    emitted('emit error first', cursor)
    listening('fresh', cursor)
    await cursor.next()
    listening('read', cursor)
    await cursor.close()
    listening('closed', cursor)
    cursor.rewind()
    listening('rewound', cursor)
    await cursor.toArray()
    listening('read to the end', cursor)
    // Never listened to until after its close: no 'close' listener left, as the official one's.
    const closedFirst = find(4)(client)
    await closedFirst.close()
    listening('closed, then asked', closedFirst)
    emitted('emit error once closed', closedFirst)
    // The application's own 'error' listeners run beside it; without any, an 'error' throws.
    const listened = find(4)(client)
    const heard: string[] = []
    listened.on('error', (error) => heard.push(error.message))
    emitted('emit error, listened to', listened)
    log.push(['heard', heard])
    listened.removeAllListeners('error')
    listening('error listeners removed', listened)
    emitted('emit error, none left', listened)
    await listened.close()
    logs[driver] = log
  }
  expectIdentical(logs.rumongo, logs.official)
  expect(logs.rumongo![0]).toEqual(['emit error first', true])
  expect(logs.rumongo![1]).toEqual(['fresh', ['error', 'close'], 1, 1, 1])
})
