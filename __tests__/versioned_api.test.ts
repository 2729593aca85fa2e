// The read operations of the versioned-API CRUD specification (API version 1, strict), run by both
// drivers: same results or same errors on the embedded server, and the same API fields sent on the
// command that opens a cursor and on its getMores.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as official from 'mongodb'
import * as rumongo from 'rumongo'
import { expectIdentical, uniqueDbName, uri } from './setup/helpers.js'
import { startWireServer, type WireServer } from './setup/wire_server.js'

type Driver = typeof official | typeof rumongo
const STRICT = { serverApi: { version: '1', strict: true } } as const
const dbName = uniqueDbName('versioned_api')
const documents = [11, 22, 33, 44, 55].map((x, i) => ({ _id: i + 1, x }))

beforeAll(async () => {
  const client = await official.MongoClient.connect(uri)
  await client.db(dbName).collection('test').insertMany(documents)
  await client.close()
})

afterAll(async () => {
  const client = await official.MongoClient.connect(uri)
  await client.db(dbName).dropDatabase()
  await client.close()
})

const OPERATIONS: [string, (client: any) => Promise<unknown>][] = [
  [
    'aggregate on a collection',
    (client) =>
      client
        .db(dbName)
        .collection('test')
        .aggregate([{ $sort: { x: 1 } }, { $match: { _id: { $gt: 1 } } }])
        .toArray(),
  ],
  [
    'aggregate on the admin database',
    (client) =>
      client
        .db('admin')
        .aggregate([{ $listLocalSessions: {} }, { $limit: 1 }])
        .toArray(),
  ],
  [
    'countDocuments',
    (client) =>
      client
        .db(dbName)
        .collection('test')
        .countDocuments({ x: { $gt: 11 } }),
  ],
  ['distinct', (client) => client.db(dbName).collection('test').distinct('x', {})],
  ['estimatedDocumentCount', (client) => client.db(dbName).collection('test').estimatedDocumentCount()],
  [
    'find with a batchSize (getMores)',
    (client) =>
      client
        .db(dbName)
        .collection('test')
        .find({}, { sort: { _id: 1 }, batchSize: 3 })
        .toArray(),
  ],
]

async function settle(driver: Driver, run: (client: any) => Promise<unknown>) {
  const client = await driver.MongoClient.connect(uri, STRICT as never)
  try {
    return { value: await run(client) }
  } catch (error) {
    const { name, code, codeName } = error as { name: string; code?: unknown; codeName?: string }
    return { error: name, code, codeName }
  } finally {
    await client.close()
  }
}

describe('versioned API, strict', () => {
  it.each(OPERATIONS)('%s: same result or error as the official driver', async (_, run) => {
    const expected = await settle(official, run)
    const actual = await settle(rumongo as unknown as Driver, run)
    expectIdentical(actual, expected)
  })

  describe('on the wire', () => {
    let server: WireServer
    beforeAll(async () => {
      server = await startWireServer({ documents })
    })
    afterAll(() => server?.stop())

    async function sent(driver: Driver) {
      server.commands.length = 0
      const client = await driver.MongoClient.connect(server.uri, STRICT as never)
      const found = await client.db('app').collection('test').find({}, { batchSize: 2 }).toArray()
      await client.close()
      const api = (command: official.Document | undefined) =>
        command && [command.apiVersion, command.apiStrict, command.apiDeprecationErrors]
      return {
        found,
        find: api(server.received('find')[0]),
        getMores: server.received('getMore').map(api),
      }
    }

    it('sends the API version with find and its getMores, as the official driver', async () => {
      const expected = await sent(official)
      const actual = await sent(rumongo as unknown as Driver)
      expect(actual).toEqual(expected)
      expect(actual.found).toEqual(documents)
      expect(actual.find).toEqual(['1', true, undefined])
      // Both drivers send them on the getMores too (the official 7.9 does; the Rust driver 3.9 as well).
      expect(actual.getMores).toEqual([
        ['1', true, undefined],
        ['1', true, undefined],
      ])
    })
  })
})
