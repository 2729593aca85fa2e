// client.close() while a find or aggregate cursor holds documents buffered: the official driver
// closes its active cursors first, so every later read throws MongoCursorExhaustedError (hasNext()
// false) and nothing buffered is returned. rumongo kept returning the buffered documents, and
// hasNext() said true. Side by side on the embedded server.
import { afterAll, beforeAll, expect, it } from 'vitest'
import { setTimeout as sleep } from 'node:timers/promises'
import { Long, MongoClient as OfficialClient, type Document } from 'mongodb'
import { MongoClient, MongoCursorExhaustedError } from 'rumongo'
import { connectBoth, expectIdentical, uniqueDbName, uri, type Drivers } from './setup/helpers.js'
import { startWireServer } from './setup/wire_server.js'
import type { AnyCursor } from './setup/any_cursor.js'

const dbName = uniqueDbName('client_close_cursor')
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

const outcome = (promise: Promise<unknown>) =>
  promise.then(
    (value) => ['resolved', value],
    (error: unknown) => {
      const { name, message } = error as Error
      return ['rejected', name, message]
    },
  )

async function iterated(documents: AsyncIterable<Document>) {
  const seen: unknown[] = []
  try {
    for await (const document of documents) seen.push(document._id)
    return ['ended', seen]
  } catch (error) {
    const { name, message } = error as Error
    return ['rejected', seen, name, message]
  }
}

const reads: Record<string, (cursor: AnyCursor) => Promise<unknown>> = {
  next: (cursor) => outcome(cursor.next()),
  tryNext: (cursor) => outcome(cursor.tryNext()),
  hasNext: (cursor) => outcome(cursor.hasNext()),
  'for await': (cursor) => iterated(cursor),
  toArray: (cursor) => outcome(cursor.toArray()),
  readBufferedDocuments: async (cursor) => cursor.readBufferedDocuments(),
  stream: (cursor) => iterated(cursor.stream()),
}

const opens: Record<string, (client: MongoClient | OfficialClient) => AnyCursor> = {
  find: (client) =>
    (client as OfficialClient)
      .db(dbName)
      .collection('items')
      .find({}, { batchSize: 4, sort: { _id: 1 } }) as never,
  // The whole result in the first batch: no server cursor, nothing for the client's close(). With
  // readBufferedDocuments(), taking the last batch says `closed` at once, as the official cursor.
  'find in one batch': (client) =>
    (client as OfficialClient)
      .db(dbName)
      .collection('items')
      .find({}, { batchSize: 20, sort: { _id: 1 } }) as never,
  aggregate: (client) =>
    (client as OfficialClient)
      .db(dbName)
      .collection('items')
      .aggregate([{ $sort: { _id: 1 } }], { batchSize: 4 }) as never,
}

it("client.close() with documents buffered: every read then as the official driver's (its active cursors closed)", async () => {
  const logs: Record<string, unknown[]> = {}
  for (const driver of ['official', 'rumongo'] as const) {
    for (const [kind, open] of Object.entries(opens)) {
      for (const [read, first] of Object.entries(reads)) {
        const client = driver === 'official' ? new OfficialClient(uri) : new MongoClient(uri)
        try {
          const cursor = open(client)
          const state = () => [cursor.closed, cursor.killed, cursor.bufferedCount()]
          const log: unknown[] = [(await cursor.next())?._id, state()]
          await client.close()
          log.push('client closed', state())
          log.push(await first(cursor), state())
          // Then every read, as after the cursor's own close().
          for (const then of ['next', 'tryNext', 'hasNext', 'toArray'])
            log.push(then, await reads[then]!(cursor), state())
          logs[`${driver} ${kind} ${read}`] = log
        } finally {
          await client.close()
        }
      }
    }
  }
  for (const kind of Object.keys(opens)) {
    for (const read of Object.keys(reads)) {
      if (!logs[`official ${kind} ${read}`]) continue
      expectIdentical(logs[`rumongo ${kind} ${read}`], logs[`official ${kind} ${read}`])
    }
  }
  // Nothing buffered returned: the 3 left of the first batch are dropped.
  expect(logs['rumongo find next']!.slice(0, 5)).toEqual([
    0,
    [false, false, 3],
    'client closed',
    expect.anything(),
    ['rejected', 'MongoCursorExhaustedError', 'Cursor is exhausted'],
  ])
  // The official error has no code; rumongo's errors all have one.
  const client = new MongoClient(uri)
  const cursor = client.db(dbName).collection('items').find({}, { batchSize: 4 })
  await cursor.next()
  await client.close()
  const exhausted = await cursor.tryNext().catch((error: unknown) => error)
  expect(exhausted).toBeInstanceOf(MongoCursorExhaustedError)
  expect(exhausted).toMatchObject({ code: 'ERR_CURSOR_EXHAUSTED' })
})

// client.close() while the find is in flight, its reply held by the server until the close was
// called: the official client fails its checked-out connections first, so the first read rejects
// with MongoClientClosedError whatever the server answers then, and the cursor is closed ('close',
// nothing buffered, nothing killed). rumongo's native close interrupts the find the same way.
// (A later read: the official one says null, rumongo's rejects, as after any failed read.)
it('client.close() during the first find: the read rejects with MongoClientClosedError, as the official driver’s, whatever the server then answers', async () => {
  const logs: Record<string, unknown[]> = {}
  for (const driver of ['official', 'rumongo'] as const) {
    let answerFind: (() => void) | undefined
    const server = await startWireServer({
      answer(command) {
        if (command.find === undefined) return { ok: 1 }
        const ns = `${command.$db}.${command.find}`
        const reply = { cursor: { id: Long.fromNumber(77), ns, firstBatch: [{ _id: 1 }, { _id: 2 }] }, ok: 1 }
        return new Promise((resolve) => (answerFind = () => resolve(reply)))
      },
    })
    const client = driver === 'official' ? new OfficialClient(server.uri) : new MongoClient(server.uri)
    const log: unknown[] = []
    try {
      await client.connect()
      const cursor = (client as OfficialClient)
        .db('app')
        .collection('items')
        .find({}) as unknown as AnyCursor & {
        on(event: 'close', listener: () => void): unknown
      }
      cursor.on('close', () => log.push('close event'))
      const read = outcome(cursor.next())
      await expect.poll(() => answerFind !== undefined, { timeout: 10_000 }).toBe(true)
      const closing = client.close()
      await sleep(50)
      answerFind!()
      log.push(await read, await outcome(closing))
      log.push([cursor.closed, cursor.killed, cursor.bufferedCount()], ['killed', server.killed])
      logs[driver] = log
    } finally {
      await client.close()
      await server.stop()
    }
  }
  expectIdentical(logs.rumongo, logs.official)
  expect(logs.rumongo).toEqual([
    'close event',
    ['rejected', 'MongoClientClosedError', 'Operation interrupted because client was closed'],
    ['resolved', undefined],
    [true, false, 0],
    ['killed', []],
  ])
})

// A second close() while the first is under way resolved at once (it had nothing left to close),
// before the first one's killCursors reached the server: fault_sweep then found the cursor still
// open (the kill came 4-26 ms later, 200 of 200 times). The official driver's waits for the first.
it('a second close() resolves once the first has killed the open cursor, as the official driver', async () => {
  const server = await startWireServer({ documents: Array.from({ length: 10 }, (_, n) => ({ _id: n })) })
  try {
    const killedWhenSecondResolved: Record<string, boolean> = {}
    for (const [driver, Client] of [
      ['official', OfficialClient],
      ['rumongo', MongoClient],
    ] as const) {
      const client = new Client(server.uri)
      const cursor = client.db('db').collection('items').find({}, { batchSize: 2 })
      await cursor.next()
      const killedBefore = server.killed.length
      const first = client.close()
      await client.close()
      killedWhenSecondResolved[driver] = server.killed.length > killedBefore
      await first
    }
    expect(killedWhenSecondResolved).toEqual({ official: true, rumongo: true })
  } finally {
    await server.stop()
  }
})
