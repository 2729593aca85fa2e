// readPreference, readConcern, timeoutMS and BSON options inherited client -> db -> collection ->
// operation with the official precedence. What each driver sends is compared on a recording wire
// server answering as a mongos (so that both send `$readPreference`).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as official from 'mongodb'
import * as rumongo from 'rumongo'
import { startWireServer, type WireServer } from './setup/wire_server.js'

type Driver = typeof official | typeof rumongo

let server: WireServer
beforeAll(async () => {
  server = await startWireServer({ mongos: true, documents: [{ _id: 1, n: 1 }] })
})
afterAll(() => server?.stop())

interface Levels {
  client?: string
  db?: object
  collection?: object
  operation?: object
}

const LEVELS: [string, Levels][] = [
  ['the client (connection string)', { client: 'readPreference=secondary&readConcernLevel=local' }],
  [
    'the database over the client',
    {
      client: 'readPreference=secondary&readConcernLevel=local',
      db: { readPreference: 'nearest', readConcern: { level: 'majority' } },
    },
  ],
  [
    'the collection over the database',
    {
      client: 'readPreference=secondary&readConcernLevel=local',
      db: { readPreference: 'nearest', readConcern: { level: 'majority' } },
      collection: {
        readPreference: { mode: 'secondaryPreferred', tags: [{ dc: 'ny' }, {}], maxStalenessSeconds: 120 },
        readConcern: 'available',
      },
    },
  ],
  [
    'the operation over the collection',
    {
      db: { readPreference: 'nearest', readConcern: { level: 'majority' } },
      collection: { readPreference: 'secondaryPreferred', readConcern: 'available' },
      operation: { readPreference: 'primaryPreferred', readConcern: { level: 'local' } },
    },
  ],
]

const OPERATIONS: [string, string, (collection: any, options: object) => Promise<unknown>][] = [
  ['find', 'find', (collection, options) => collection.find({}, options).toArray()],
  ['findOne', 'find', (collection, options) => collection.findOne({}, options)],
  ['aggregate', 'aggregate', (collection, options) => collection.aggregate([], options).toArray()],
  ['countDocuments', 'aggregate', (collection, options) => collection.countDocuments({}, options)],
  ['estimatedDocumentCount', 'count', (collection, options) => collection.estimatedDocumentCount(options)],
]

/** The read preference and read concern `driver` sends for `operation` configured at `levels`. */
async function sent(
  driver: Driver,
  levels: Levels,
  command: string,
  run: (c: any, o: object) => Promise<unknown>,
) {
  const client = await driver.MongoClient.connect(`${server.uri}${levels.client ? `&${levels.client}` : ''}`)
  try {
    const collection = client.db('app', levels.db as never).collection('items', levels.collection as never)
    server.commands.length = 0
    await run(collection, levels.operation ?? {})
    const [received] = server.received(command)
    return {
      readConcern: received?.readConcern,
      $readPreference: received?.$readPreference,
      getters: {
        readPreference: collection.readPreference?.toJSON(),
        readConcern: collection.readConcern?.toJSON(),
      },
    }
  } finally {
    await client.close()
  }
}

describe('readPreference and readConcern', () => {
  for (const [level, levels] of LEVELS) {
    it.each(OPERATIONS)(
      `%s takes them from ${level}, as the official driver does`,
      async (_, command, run) => {
        const [expected, actual] = [
          await sent(official, levels, command, run),
          await sent(rumongo as unknown as Driver, levels, command, run),
        ]
        expect(actual).toEqual(expected)
      },
    )
  }

  it('distinct sends the collection read concern and read preference as the official driver does', async () => {
    const levels = LEVELS[2]![1]
    const run = (collection: any) => collection.distinct('n', {}).catch(() => undefined)
    const [expected, actual] = [
      await sent(official, levels, 'distinct', run),
      await sent(rumongo as unknown as Driver, levels, 'distinct', run),
    ]
    expect(actual).toEqual(expected)
  })

  it('exposes the effective values on the client, the database and the collection', () => {
    const url = `${server.uri}&readPreference=secondaryPreferred&readConcernLevel=local`
    const view = (driver: Driver) => {
      const client = new driver.MongoClient(url)
      const db = client.db('app', { readPreference: 'nearest' } as never)
      const collection = db.collection('items', { readConcern: { level: 'majority' } } as never)
      const plain = client.db('other').collection('x')
      return [
        db.readPreference,
        db.readConcern,
        collection.readPreference,
        collection.readConcern,
        plain.readPreference,
        plain.readConcern,
      ].map((value) => value?.toJSON())
    }
    expect(view(rumongo as unknown as Driver)).toEqual(view(official))
    const collection = new rumongo.MongoClient(url).db('app').collection('items')
    expect(collection.readPreference).toBeInstanceOf(rumongo.ReadPreference)
    expect(collection.readConcern).toBeInstanceOf(rumongo.ReadConcern)
  })
})

describe("a cursor's readPreference and readConcern", () => {
  const CURSORS: [string, string, (collection: any, options: object) => any][] = [
    ['find', 'find', (collection, options) => collection.find({}, options)],
    ['aggregate', 'aggregate', (collection, options) => collection.aggregate([], options)],
  ]

  it.each(CURSORS)(
    '%s: the getters give the effective values, as the official driver',
    (_, _command, open) => {
      const url = `${server.uri}&readPreference=secondaryPreferred&readConcernLevel=local`
      const view = (driver: Driver) => {
        const client = new driver.MongoClient(url)
        const collection = client.db('app', { readPreference: 'nearest' } as never).collection('items')
        const own = open(collection, {
          readPreference: 'primaryPreferred',
          readConcern: { level: 'majority' },
        })
        const inherited = open(collection, {})
        const plain = open(new driver.MongoClient(server.uri).db('x').collection('y'), {})
        return [own, inherited, plain].flatMap((cursor) => [
          cursor.readPreference?.constructor.name,
          cursor.readPreference?.toJSON(),
          cursor.readConcern?.constructor.name,
          cursor.readConcern?.toJSON(),
        ])
      }
      expect(view(rumongo as unknown as Driver)).toEqual(view(official))
    },
  )

  it.each(CURSORS)(
    '%s: withReadPreference / withReadConcern set what is sent, as the official driver',
    async (_, command, open) => {
      const send = async (driver: Driver) => {
        const client = await driver.MongoClient.connect(server.uri)
        try {
          const cursor = open(client.db('app').collection('items'), {})
          expect(cursor.withReadPreference(new driver.ReadPreference('secondary'))).toBe(cursor)
          expect(cursor.withReadConcern({ level: 'available' })).toBe(cursor)
          const getters = [cursor.readPreference.toJSON(), cursor.readConcern.toJSON()]
          cursor.withReadPreference('nearest').withReadConcern('majority')
          getters.push(cursor.readPreference.toJSON(), cursor.readConcern.toJSON())
          server.commands.length = 0
          await cursor.toArray()
          const [received] = server.received(command)
          return { getters, readConcern: received?.readConcern, $readPreference: received?.$readPreference }
        } finally {
          await client.close()
        }
      }
      const [expected, actual] = [await send(official), await send(rumongo as unknown as Driver)]
      expect(actual).toEqual(expected)
      expect(actual.$readPreference).toEqual({ mode: 'nearest' })
    },
  )

  it.each(CURSORS)(
    '%s: refused after the first read and for a bad value, as the official driver',
    async (_, _command, open) => {
      const errors = async (driver: Driver) => {
        const client = await driver.MongoClient.connect(server.uri)
        const caught = (run: () => unknown) => {
          try {
            run()
          } catch (error) {
            return [(error as Error).constructor.name, (error as Error).message]
          }
          return null
        }
        try {
          const cursor = open(client.db('app').collection('items'), {})
          const bad = [
            caught(() => cursor.withReadPreference({ mode: 'secondary' })),
            caught(() => cursor.withReadPreference(42)),
            caught(() => cursor.withReadPreference('sometimes')),
          ]
          await cursor.next()
          const started = [
            caught(() => cursor.withReadPreference('secondary')),
            caught(() => cursor.withReadConcern('majority')),
          ]
          await cursor.close()
          return { bad, started }
        } finally {
          await client.close()
        }
      }
      const [expected, actual] = [await errors(official), await errors(rumongo as unknown as Driver)]
      expect(actual).toEqual(expected)
      expect(actual.started[0]![0]).toBe('MongoCursorInUseError')
    },
  )
})

describe('timeoutMS', () => {
  let slow: WireServer
  beforeAll(async () => {
    slow = await startWireServer({ documents: [{ _id: 1 }], delayMS: 400 })
  })
  afterAll(() => slow?.stop())

  it.each([
    ['the database', { db: { timeoutMS: 100 } }, true],
    ['the collection', { collection: { timeoutMS: 100 } }, true],
    [
      'the collection, lifted by the operation (0)',
      { collection: { timeoutMS: 100 }, operation: { timeoutMS: 0 } },
      false,
    ],
    [
      'the database, lifted by the collection (0)',
      { db: { timeoutMS: 100 }, collection: { timeoutMS: 0 } },
      false,
    ],
    ['the client, overridden by the database', { client: 'timeoutMS=5000', db: { timeoutMS: 100 } }, true],
  ] as [string, Levels, boolean][])('set on %s bounds the find', async (_, levels, expired) => {
    const client = await rumongo.MongoClient.connect(`${slow.uri}${levels.client ? `&${levels.client}` : ''}`)
    try {
      const collection = client.db('app', levels.db as never).collection('items', levels.collection as never)
      const find = collection.find({}, (levels.operation ?? {}) as never).toArray()
      if (expired) await expect(find).rejects.toBeInstanceOf(rumongo.MongoOperationTimeoutError)
      else await expect(find).resolves.toEqual([{ _id: 1 }])
      expect(collection.timeoutMS).toBe(
        (levels.collection as any)?.timeoutMS ?? (levels.db as any)?.timeoutMS ?? client.timeoutMS,
      )
    } finally {
      await client.close()
    }
  })
})

describe('BSON options', () => {
  it('an operation option overrides the collection, which overrides the database and the client', async () => {
    const reads = async (driver: Driver) => {
      const client = await driver.MongoClient.connect(server.uri, { promoteValues: false } as never)
      try {
        const db = client.db('app', { promoteValues: true } as never)
        const collection = db.collection('items', { promoteValues: false } as never)
        const viaCollection = await collection.findOne({})
        const viaOperation = await collection.findOne({}, { promoteValues: true } as never)
        const viaDb = await db.collection('items').findOne({})
        const viaClient = await client.db('app').collection('items').findOne({})
        return [viaCollection, viaOperation, viaDb, viaClient].map((doc: any) => doc?.n?.constructor?.name)
      } finally {
        await client.close()
      }
    }
    const [expected, actual] = [await reads(official), await reads(rumongo as unknown as Driver)]
    expect(actual).toEqual(expected)
    expect(actual).toEqual(['Int32', 'Number', 'Number', 'Int32'])
  })
})
