// The official exports and shapes a read-path user touches: ReadPreference, ReadConcern,
// ServerApiVersion, ExplainVerbosity, the error classes, errorResponse, cursor.namespace, killed.
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as official from 'mongodb'
import * as rumongo from 'rumongo'
import { uniqueDbName, uri } from './setup/helpers.js'

const READ_PATH_EXPORTS = [
  'ReadPreference',
  'ReadPreferenceMode',
  'ReadConcern',
  'ReadConcernLevel',
  'ServerApiVersion',
  'ExplainVerbosity',
  'MongoErrorLabel',
  'Admin',
  'Db',
  'ListCollectionsCursor',
  'ListIndexesCursor',
  'ClientSession',
  // Constants application code names (`{ $type: BSONType.int }`, `AuthMechanism.MONGODB_AWS`).
  'BSONType',
  'AuthMechanism',
  'Compressor',
  'CursorTimeoutMode',
  'ServerType',
  'TopologyType',
  ...Object.keys(official).filter(
    (name) =>
      /^Mongo.*Error$/.test(name) &&
      !/Bulk|Crypt|GridFS|ChangeStream|WriteConcern|BatchReExecution/.test(name),
  ),
]

describe('exports', () => {
  it.each(READ_PATH_EXPORTS)('exports %s from the CommonJS and ESM entries', (name) => {
    const cjs = createRequire(import.meta.url)('rumongo')
    expect(typeof (rumongo as Record<string, unknown>)[name]).toBe(
      typeof (official as Record<string, unknown>)[name],
    )
    expect((rumongo as Record<string, unknown>)[name]).toBe(cjs[name])
  })

  it.each([
    'ReadPreferenceMode',
    'ReadConcernLevel',
    'ServerApiVersion',
    'ExplainVerbosity',
    'MongoErrorLabel',
    'CURSOR_FLAGS',
    'BSONType',
    'AuthMechanism',
    'Compressor',
    'CursorTimeoutMode',
    'ServerType',
    'TopologyType',
  ])('%s has the official values', (name) => {
    expect((rumongo as Record<string, unknown>)[name]).toEqual((official as Record<string, unknown>)[name])
  })

  it.each(READ_PATH_EXPORTS.filter((name) => /Error$/.test(name)))(
    '%s has the official class hierarchy and name',
    (name) => {
      const chain = (Class: any) => {
        const names: string[] = []
        for (let current = Class; current && current !== Error; current = Object.getPrototypeOf(current)) {
          names.push(current.name)
        }
        return names
      }
      expect(chain((rumongo as any)[name])).toEqual(chain((official as any)[name]))
    },
  )

  it('exports mongoosePlugin from the CommonJS and ESM entries', () => {
    const cjs = createRequire(import.meta.url)('rumongo')
    expect(typeof rumongo.mongoosePlugin).toBe('function')
    expect(rumongo.mongoosePlugin).toBe(cjs.mongoosePlugin)
  })

  it('ReadPreference and ReadConcern validate and serialize as the official ones', () => {
    for (const driver of [official, rumongo] as any[]) {
      expect(() => new driver.ReadPreference('bad')).toThrow('Invalid read preference mode "bad"')
      expect(() => new driver.ReadPreference('primary', [{ dc: 'ny' }])).toThrow(
        'Primary read preference cannot be combined with tags',
      )
    }
    const build = (driver: any) => [
      new driver.ReadPreference('secondary', [{ dc: 'ny' }], { maxStalenessSeconds: 100 }).toJSON(),
      driver.ReadPreference.fromOptions({
        readPreference: 'nearest',
        readPreferenceTags: [{ a: 'b' }],
      }).toJSON(),
      driver.ReadPreference.secondaryPreferred.secondaryOk(),
      driver.ReadPreference.primary.secondaryOk(),
      new driver.ReadConcern('majority').toJSON(),
      driver.ReadConcern.fromOptions({ readConcern: { level: 'local' } }).toJSON(),
      driver.ReadConcern.MAJORITY,
    ]
    expect(build(rumongo)).toEqual(build(official))
  })
})

describe('shapes', () => {
  const dbName = uniqueDbName('exports')
  let officialClient: official.MongoClient
  let client: rumongo.MongoClient

  beforeAll(async () => {
    officialClient = await official.MongoClient.connect(uri)
    client = await rumongo.MongoClient.connect(uri)
    await officialClient
      .db(dbName)
      .collection('items')
      .insertMany(Array.from({ length: 10 }, (_, n) => ({ n })))
  })

  afterAll(async () => {
    await officialClient?.db(dbName).dropDatabase()
    await Promise.all([officialClient?.close(), client?.close()])
  })

  const collections = () =>
    [officialClient.db(dbName).collection('items'), client.db(dbName).collection('items')] as any[]

  it('cursor.namespace is { db, collection } and prints as db.collection', () => {
    const [expected, actual] = collections().map((collection) => {
      const { namespace } = collection.find()
      return { db: namespace.db, collection: namespace.collection, text: String(namespace) }
    })
    expect(actual).toEqual(expected)
    expect(actual).toEqual({ db: dbName, collection: 'items', text: `${dbName}.items` })
  })

  it.each([
    ['never read, then closed', async (cursor: any) => cursor.close()],
    ['read to the end', async (cursor: any) => cursor.toArray()],
    [
      'closed with a server cursor open',
      async (cursor: any) => {
        await cursor.next()
        await cursor.close()
      },
    ],
    [
      'closed open, then rewound',
      async (cursor: any) => {
        await cursor.next()
        await cursor.close()
        await cursor.rewind()
      },
    ],
  ])('cursor.killed when %s is the official value', async (_, run) => {
    const states: boolean[][] = []
    for (const collection of collections()) {
      const cursor = collection.find({}).batchSize(2)
      const before = cursor.killed
      await run(cursor)
      states.push([before, cursor.killed])
    }
    expect(states[1]).toEqual(states[0])
  })

  it('a server error carries the official errorResponse, ok, code and codeName', async () => {
    const failure = async (collection: any) => {
      const error = await collection
        .aggregate([{ $bad: 1 }])
        .toArray()
        .catch((caught: any) => caught)
      return {
        name: error.name,
        errorResponse: error.errorResponse,
        ok: error.ok,
        code: error.code,
        codeName: error.codeName,
      }
    }
    const [expected, actual] = [await failure(collections()[0]), await failure(collections()[1])]
    expect(actual).toEqual(expected)
    expect(actual.errorResponse).toMatchObject({ ok: 0, code: expected.code })
  })
})
