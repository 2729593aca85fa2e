// A cursor's reads after it failed, or after it was closed before its first read, step by step
// beside the official driver (its cursor, its client), logging each read's outcome, the cursor's
// state (closed, killed, id, bufferedCount), its 'close' events and the server cursors left open:
// - client.close() of a cursor never read: the official cursor is in its client's active cursors
//   from its creation, so it is closed ('close'; reads say null, toArray() []). rumongo's joined
//   them at its first read: no 'close', and that read threw MongoNotConnectedError.
// - rewind() of a cursor closed before its first read: the official rewind() does nothing (never
//   initialized), the cursor stays closed. rumongo's ran the query again.
// - a map() transform that throws: the official cursor closes (killCursors, 'close' before the
//   read rejects); a later read throws MongoCursorExhaustedError if the server cursor was killed,
//   else reads what is buffered. rumongo's failed for good ('an earlier read failed').
// - a document that does not decode: the official next() throws its BSONError and the cursor stays
//   open (no 'close', no killCursors), what follows it buffered and read by the next read;
//   toArray() and for await close it. rumongo's failed for good and killed its server cursor.
// - map(): the official readBufferedDocuments() does not apply it (rumongo's did); a cursor closed
//   before its first read still takes it (rumongo's threw MongoCursorInUseError); a transform that
//   returns null throws MongoAPIError and closes the cursor (rumongo's next() said null, as at the
//   end of the results, and toArray() kept the nulls).
import { afterAll, beforeAll, expect, it } from 'vitest'
import { BSON, MongoClient as OfficialClient, type Document } from 'mongodb'
import { MongoClient } from 'rumongo'
import { connectBoth, expectIdentical, uniqueDbName, uri, type Drivers } from './setup/helpers.js'
import { serveDocuments, type ServedReplay } from './setup/replay.js'
import type { AnyCursor } from './setup/any_cursor.js'

const dbName = uniqueDbName('cursor_failures')
let drivers: Drivers
/** Documents 0-9; document 5 holds invalid UTF-8. */
let served: ServedReplay
const BAD = 5

beforeAll(async () => {
  drivers = await connectBoth()
  await drivers.official
    .db(dbName)
    .collection('items')
    .insertMany(Array.from({ length: 10 }, (_, n) => ({ _id: n, n })))
  served = await serveDocuments({
    utf8: Array.from({ length: 10 }, (_, n) => {
      const bytes = Buffer.from(BSON.serialize({ _id: n, n, s: 'abc' }))
      if (n === BAD) bytes[bytes.indexOf('abc') + 1] = 0xff
      return bytes
    }),
  })
}, 600_000)

afterAll(async () => {
  await drivers?.official.db(dbName).dropDatabase()
  await drivers?.close()
  await served?.stop()
})

type AnyClient = MongoClient | OfficialClient

const find = (client: AnyClient, collection: string, batchSize: number) =>
  (client as OfficialClient)
    .db(collection === 'utf8' ? 'bench' : dbName)
    .collection(collection)
    .find({}, { batchSize, sort: { _id: 1 } }) as unknown as AnyCursor

/** Fails on document 1 (`_id`), returns the others' `_id`. */
const throwsOnOne = (document: Document) => {
  if (document._id === 1) throw new TypeError('transform failed')
  return document
}

/** A mapped document: told apart from the document itself (`ids` keeps it whole). */
const tagged = (document: Document) => ({ mapped: document._id })

function state(cursor: AnyCursor) {
  const id = cursor.id === undefined ? 'no id' : cursor.id.isZero() ? 'id 0' : 'id open'
  return [cursor.closed ? 'closed' : 'open', cursor.killed ? 'killed' : '-', id, cursor.bufferedCount()]
}

const ids = (value: unknown): unknown =>
  Array.isArray(value) ? value.map(ids) : ((value as Document | null)?._id ?? value)

type Step = (name: string, run: () => unknown) => Promise<void>
type Scenario = (client: AnyClient, cursor: (open: AnyCursor) => AnyCursor, step: Step) => Promise<void>

/** The server cursors open on the served (decode) server, read with a client of its own. */
async function openOnServed(): Promise<number> {
  const admin = new OfficialClient(served.uri)
  try {
    const { metrics } = await admin.db('admin').command({ serverStatus: 1 })
    return Number(metrics.cursor.open.total)
  } finally {
    await admin.close()
  }
}

const scenarios: Record<string, Scenario> = {
  'client.close() before any read, then toArray()': async (client, cursor, step) => {
    const items = cursor(find(client, 'items', 4))
    await step('client.close', () => client.close())
    await step('toArray', () => items.toArray())
    await step('next', () => items.next())
    await step('hasNext', () => items.hasNext())
  },
  'client.close() before any read, then next()': async (client, cursor, step) => {
    const items = cursor(find(client, 'items', 4))
    await step('client.close', () => client.close())
    await step('next', () => items.next())
    await step('tryNext', () => items.tryNext())
    await step('for await', async () => {
      for await (const document of items) return document
      return 'no document'
    })
  },
  'close() before any read, then rewind()': async (client, cursor, step) => {
    const items = cursor(find(client, 'items', 4))
    await step('close', () => items.close())
    await step('rewind', () => items.rewind())
    await step('next', () => items.next())
    await step('toArray', () => items.toArray())
    await step('rewind', () => items.rewind())
    await step('hasNext', () => items.hasNext())
  },
  'client.close() before any read, then rewind()': async (client, cursor, step) => {
    const items = cursor(find(client, 'items', 4))
    await step('client.close', () => client.close())
    await step('rewind', () => items.rewind())
    await step('next', () => items.next())
  },
  'a map() transform throws, the server cursor open': async (client, cursor, step) => {
    const items = cursor(find(client, 'items', 4).map(throwsOnOne))
    await step('next', () => items.next())
    await step('next', () => items.next())
    await step('next', () => items.next())
    await step('hasNext', () => items.hasNext())
    await step('toArray', () => items.toArray())
    await step('readBufferedDocuments', () => items.readBufferedDocuments())
    await step('close', () => items.close())
  },
  'a map() transform throws in the last batch': async (client, cursor, step) => {
    const items = cursor(find(client, 'items', 20).map(throwsOnOne))
    await step('next', () => items.next())
    await step('next', () => items.next())
    await step('next', () => items.next())
    await step('readBufferedDocuments(2)', () => items.readBufferedDocuments(2))
    await step('toArray', () => items.toArray())
    await step('next', () => items.next())
  },
  'a map() transform throws in toArray()': async (client, cursor, step) => {
    const items = cursor(find(client, 'items', 4).map(throwsOnOne))
    await step('toArray', () => items.toArray())
    await step('next', () => items.next())
    await step('toArray', () => items.toArray())
  },
  'a map() transform throws in for await': async (client, cursor, step) => {
    const items = cursor(find(client, 'items', 4).map(throwsOnOne))
    const seen: unknown[] = []
    await step('for await', async () => {
      for await (const document of items) seen.push(ids(document))
    })
    await step('seen', () => seen)
    await step('next', () => items.next())
  },
  // The official readBufferedDocuments() returns the documents as the server sent them: the
  // transform applies to next(), tryNext(), toArray() and for await only. rumongo's mapped them.
  'readBufferedDocuments() does not apply map()': async (client, cursor, step) => {
    const items = cursor(find(client, 'items', 4).map(tagged))
    await step('hasNext', () => items.hasNext())
    await step('readBufferedDocuments(2)', () => items.readBufferedDocuments(2))
    await step('next', () => items.next())
    await step('readBufferedDocuments', () => items.readBufferedDocuments())
    await step('next', () => items.next())
    await step('toArray', () => items.toArray())
  },
  // The official cursor closed before its first read is not initialized: map() and the options
  // can still be set (its reads say null). rumongo's threw MongoCursorInUseError.
  'map() after close() before any read': async (client, cursor, step) => {
    const items = cursor(find(client, 'items', 4))
    await step('close', () => items.close())
    await step('map', () => (items.map(tagged), 'chained'))
    await step('next', () => items.next())
    await step('toArray', () => items.toArray())
    await step('map after a read', () => (items.map(tagged), 'chained'))
  },
  'map() after client.close() before any read': async (client, cursor, step) => {
    const items = cursor(find(client, 'items', 4))
    await step('client.close', () => client.close())
    await step('map', () => (items.map(tagged), 'chained'))
    await step('next', () => items.next())
  },
  'map() after a read and close()': async (client, cursor, step) => {
    const items = cursor(find(client, 'items', 4))
    await step('next', () => items.next())
    await step('close', () => items.close())
    await step('map', () => (items.map(tagged), 'chained'))
  },
  // A transform that returns null: the official cursor throws MongoAPIError (null is how reads say
  // "no more") and closes itself. rumongo's next() returned null, toArray() kept the nulls.
  'a map() transform returns null': async (client, cursor, step) => {
    const items = cursor(find(client, 'items', 4).map(() => null))
    await step('next', () => items.next())
    await step('next', () => items.next())
    await step('readBufferedDocuments', () => items.readBufferedDocuments())
  },
  'a map() transform returns null in toArray()': async (client, cursor, step) => {
    const items = cursor(find(client, 'items', 4).map((document) => (document._id === 2 ? null : document)))
    await step('toArray', () => items.toArray())
    await step('next', () => items.next())
  },
  'a map() transform returns other falsy values': async (client, cursor, step) => {
    const items = cursor(find(client, 'items', 4).map((document) => (document._id % 2 ? 0 : '')))
    await step('next', () => items.next())
    await step('toArray', () => items.toArray())
  },
}

/** On the served documents, 5 does not decode. */
const decodeScenarios: Record<string, Scenario> = {
  // Batches of 1: the server cursor is still open at document 5 though rumongo fetched 2 ahead.
  'next() past a document that does not decode, batches of 1': async (client, cursor, step) => {
    const items = cursor(find(client, 'utf8', 1))
    for (let i = 0; i < 6; i++) await step('next', () => items.next())
    await step('server cursors open', openOnServed)
    for (let i = 0; i < 6; i++) await step('next', () => items.next())
  },
  'next() past it in the first batch (8)': async (client, cursor, step) => {
    const items = cursor(find(client, 'utf8', 8))
    for (let i = 0; i < 6; i++) await step('next', () => items.next())
    await step('hasNext', () => items.hasNext())
    await step('toArray', () => items.toArray())
  },
  'readBufferedDocuments() over it (batches of 4)': async (client, cursor, step) => {
    const items = cursor(find(client, 'utf8', 4))
    for (let i = 0; i < 5; i++) await step('next', () => items.next())
    await step('readBufferedDocuments', () => items.readBufferedDocuments())
    await step('readBufferedDocuments', () => items.readBufferedDocuments())
    await step('next', () => items.next())
    await step('close', () => items.close())
  },
  'toArray() meets it (batches of 2)': async (client, cursor, step) => {
    const items = cursor(find(client, 'utf8', 2))
    await step('toArray', () => items.toArray())
    await step('server cursors open', openOnServed)
    await step('next', () => items.next())
  },
  'for await meets it (batches of 4)': async (client, cursor, step) => {
    const items = cursor(find(client, 'utf8', 4))
    const seen: unknown[] = []
    await step('for await', async () => {
      for await (const document of items) seen.push(ids(document))
    })
    await step('seen', () => seen)
    await step('server cursors open', openOnServed)
    await step('next', () => items.next())
  },
}

async function run(driver: 'official' | 'rumongo', serverUri: string, scenario: Scenario) {
  const client = driver === 'official' ? new OfficialClient(serverUri) : new MongoClient(serverUri)
  const log: unknown[] = []
  let cursors = 0
  let current: AnyCursor | undefined
  const cursor = (open: AnyCursor) => {
    const label = `cursor ${cursors++}`
    open.on('close', () => log.push(['close event', label, ...state(open)]))
    current = open
    return open
  }
  const step: Step = async (name, read) => {
    let outcome: unknown
    try {
      outcome = ids(await read())
    } catch (error) {
      outcome = `${(error as Error).name}: ${(error as Error).message}`
    }
    log.push([name, outcome, ...state(current!)])
  }
  try {
    await scenario(client, cursor, step)
  } finally {
    await client.close()
  }
  return log
}

it.each(Object.entries(scenarios))('%s: as the official cursor', async (name, scenario) => {
  const expected = await run('official', uri, scenario)
  const actual = await run('rumongo', uri, scenario)
  expectIdentical([name, actual], [name, expected])
})

it.each(Object.entries(decodeScenarios))('%s: as the official cursor', async (name, scenario) => {
  const expected = await run('official', served.uri, scenario)
  await expect.poll(openOnServed, { timeout: 5000 }).toBe(0)
  const actual = await run('rumongo', served.uri, scenario)
  await expect.poll(openOnServed, { timeout: 5000 }).toBe(0)
  expectIdentical([name, actual], [name, expected])
})
