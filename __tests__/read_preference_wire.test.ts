// The `$readPreference` each driver sends to a mongos, compared document for document: the mongos
// routes by it, so a field it does not know (the Rust driver 3.9 sent tag sets as `tagSets`, not
// the `tags` of the server's read preference format; vendor/README.md) silently routes tag-aware
// reads to any member. Every way of giving tag sets (URI, client options, a ReadPreference, a plain
// object; several sets, an empty set), maxStalenessSeconds and hedge (where the official driver
// reads it from and where it does not), on find, aggregate, count, distinct and db.command.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as official from 'mongodb'
import * as rumongo from 'rumongo'
import { Long, type Document } from 'bson'
import { startWireServer, type WireServer } from './setup/wire_server.js'

type Driver = typeof official

let server: WireServer
beforeAll(async () => {
  server = await startWireServer({
    mongos: true,
    answer: (command) => {
      const name = Object.keys(command)[0]
      if (name === 'find' || name === 'aggregate') {
        return { cursor: { id: Long.fromNumber(0), ns: 'app.items', firstBatch: [] }, ok: 1 }
      }
      if (name === 'count') return { n: 0, ok: 1 }
      if (name === 'distinct') return { values: [], ok: 1 }
      return { ok: 1 }
    },
  })
})
afterAll(() => server?.stop())

interface Case {
  /** Appended to the connection string. */
  uri?: string
  client?: (driver: Driver) => object
  db?: (driver: Driver) => object
  collection?: (driver: Driver) => object
  operation?: (driver: Driver) => object
  /** What the official driver sends with find, written out so that the comparison cannot pass on nothing. */
  wire: Document
}

const CASES: [string, Case][] = [
  [
    'tag sets from the URI (readPreferenceTags, several, the last one empty)',
    {
      uri: 'readPreference=secondary&readPreferenceTags=dc:ny,rack:1&readPreferenceTags=dc:sf&readPreferenceTags=',
      wire: { mode: 'secondary', tags: [{ dc: 'ny', rack: '1' }, { dc: 'sf' }, {}] },
    },
  ],
  [
    'maxStalenessSeconds and a tag set from the URI',
    {
      uri: 'readPreference=nearest&maxStalenessSeconds=120&readPreferenceTags=region:eu',
      wire: { mode: 'nearest', tags: [{ region: 'eu' }], maxStalenessSeconds: 120 },
    },
  ],
  [
    'readPreference and readPreferenceTags in the client options',
    {
      client: () => ({ readPreference: 'secondaryPreferred', readPreferenceTags: [{ dc: 'ny' }, {}] }),
      wire: { mode: 'secondaryPreferred', tags: [{ dc: 'ny' }, {}] },
    },
  ],
  [
    'a ReadPreference with tag sets and maxStalenessSeconds on the collection',
    {
      collection: (driver) => ({
        readPreference: new driver.ReadPreference('secondaryPreferred', [{ dc: 'ny' }, { dc: 'sf' }, {}], {
          maxStalenessSeconds: 90,
        }),
      }),
      wire: { mode: 'secondaryPreferred', tags: [{ dc: 'ny' }, { dc: 'sf' }, {}], maxStalenessSeconds: 90 },
    },
  ],
  [
    'a ReadPreference with a tag set and hedge on the operation',
    {
      operation: (driver) => ({
        readPreference: new driver.ReadPreference('nearest', [{ region: 'eu' }], {
          hedge: { enabled: true },
        }),
      }),
      wire: { mode: 'nearest', tags: [{ region: 'eu' }], hedge: { enabled: true } },
    },
  ],
  [
    'a ReadPreference with hedge disabled on the client',
    {
      client: (driver) => ({
        readPreference: new driver.ReadPreference('secondary', undefined, { hedge: { enabled: false } }),
      }),
      wire: { mode: 'secondary', hedge: { enabled: false } },
    },
  ],
  [
    'a plain object with hedge in the client options',
    {
      client: () => ({ readPreference: { mode: 'nearest', hedge: { enabled: true } } }),
      wire: { mode: 'nearest', hedge: { enabled: true } },
    },
  ],
  [
    'a plain object with tag sets and maxStalenessSeconds on the operation',
    {
      operation: () => ({
        readPreference: { mode: 'primaryPreferred', tags: [{ dc: 'ny' }, {}], maxStalenessSeconds: 100 },
      }),
      wire: { mode: 'primaryPreferred', tags: [{ dc: 'ny' }, {}], maxStalenessSeconds: 100 },
    },
  ],
  [
    "a plain object's own hedge on the database (the official driver reads none from it)",
    {
      db: () => ({ readPreference: { mode: 'nearest', tags: [{ a: 'b' }], hedge: { enabled: true } } }),
      wire: { mode: 'nearest', tags: [{ a: 'b' }] },
    },
  ],
  [
    "a plain object's own hedge on the operation (the official driver reads none from it)",
    {
      operation: () => ({ readPreference: { mode: 'nearest', hedge: { enabled: true } } }),
      wire: { mode: 'nearest' },
    },
  ],
  [
    'hedge beside a mode on the operation',
    {
      operation: () => ({ readPreference: 'nearest', hedge: { enabled: true } }),
      wire: { mode: 'nearest', hedge: { enabled: true } },
    },
  ],
  [
    "the official driver's ReadPreference, given to both, with hedge on the collection",
    {
      collection: () => ({
        readPreference: new official.ReadPreference('nearest', [{ a: 'b' }], { hedge: { enabled: true } }),
      }),
      wire: { mode: 'nearest', tags: [{ a: 'b' }], hedge: { enabled: true } },
    },
  ],
]

const OPERATIONS: [string, string, (db: any, collection: any, options: object) => Promise<unknown>][] = [
  ['find', 'find', (_, collection, options) => collection.find({}, options).toArray()],
  ['aggregate', 'aggregate', (_, collection, options) => collection.aggregate([], options).toArray()],
  ['estimatedDocumentCount', 'count', (_, collection, options) => collection.estimatedDocumentCount(options)],
  ['distinct', 'distinct', (_, collection, options) => collection.distinct('n', {}, options)],
  ['db.command', 'count', (db, _, options) => db.command({ count: 'items' }, options)],
]

/** The `$readPreference` `driver` sends with each of OPERATIONS, by operation, and the client's. */
async function sent(driver: Driver, setup: Case): Promise<Record<string, unknown>> {
  const uri = `${server.uri}${setup.uri ? `&${setup.uri}` : ''}`
  const client = await driver.MongoClient.connect(uri, setup.client?.(driver))
  try {
    const db = client.db('app', setup.db?.(driver))
    const collection = db.collection('items', setup.collection?.(driver))
    const received: Record<string, unknown> = { 'client.readPreference': client.readPreference.toJSON() }
    for (const [operation, command, run] of OPERATIONS) {
      server.commands.length = 0
      await run(db, collection, setup.operation?.(driver) ?? {})
      const commands = server.received(command)
      expect(commands, `${operation} sends ${command} once`).toHaveLength(1)
      received[operation] = commands[0]!.$readPreference
    }
    return received
  } finally {
    await client.close()
  }
}

describe('$readPreference on the wire to a mongos', () => {
  it.each(CASES)("%s: the official driver's document on every read", async (_, setup) => {
    const expected = await sent(official, setup)
    const actual = await sent(rumongo as unknown as Driver, setup)
    expect(expected.find).toEqual(setup.wire)
    expect(actual).toStrictEqual(expected)
  })
})
