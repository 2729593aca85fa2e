// A cursor's reads after it was closed before its first read, step by step
// beside the official driver (its cursor, its client), logging each read's outcome, the cursor's
// state (closed, killed, id, bufferedCount), and its 'close' events:
// - client.close() of a cursor never read: the official cursor is in its client's active cursors
//   from its creation, so it is closed ('close'; reads say null, toArray() []). rumongo's joined
//   them at its first read: its reads ran the query on the closed client.
// - rewind() of a cursor closed before its first read: the official rewind() does nothing (never
//   initialized), the cursor stays closed. rumongo's ran the query again.
import { afterAll, beforeAll, it } from 'vitest'
import { MongoClient as OfficialClient, type Document } from 'mongodb'
import { MongoClient } from 'rumongo'
import { connectBoth, expectIdentical, uniqueDbName, uri, type Drivers } from './setup/helpers.js'

const dbName = uniqueDbName('cursor_failures')
let drivers: Drivers

beforeAll(async () => {
  drivers = await connectBoth()
  await drivers.official
    .db(dbName)
    .collection('items')
    .insertMany(Array.from({ length: 10 }, (_, n) => ({ _id: n, n })))
})

afterAll(async () => {
  await drivers?.official.db(dbName).dropDatabase()
  await drivers?.close()
})

type AnyCursor = {
  on(event: 'close', listener: () => void): unknown
  next(): Promise<unknown>
  tryNext(): Promise<unknown>
  hasNext(): Promise<boolean>
  toArray(): Promise<unknown[]>
  close(): Promise<void>
  rewind(): void
  readBufferedDocuments(count?: number): unknown[]
  bufferedCount(): number
  map(transform: (document: Document) => unknown): AnyCursor
  closed: boolean
  killed: boolean
  id: { isZero(): boolean } | undefined
} & AsyncIterable<unknown>

type AnyClient = MongoClient | OfficialClient

const find = (client: AnyClient, collection: string, batchSize: number) =>
  (client as OfficialClient)
    .db(dbName)
    .collection(collection)
    .find({}, { batchSize, sort: { _id: 1 } }) as unknown as AnyCursor

function state(cursor: AnyCursor) {
  const id = cursor.id === undefined ? 'no id' : cursor.id.isZero() ? 'id 0' : 'id open'
  return [cursor.closed ? 'closed' : 'open', cursor.killed ? 'killed' : '-', id, cursor.bufferedCount()]
}

const ids = (value: unknown): unknown =>
  Array.isArray(value) ? value.map(ids) : ((value as Document | null)?._id ?? value)

type Step = (name: string, run: () => unknown) => Promise<void>
type Scenario = (client: AnyClient, cursor: (open: AnyCursor) => AnyCursor, step: Step) => Promise<void>

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
