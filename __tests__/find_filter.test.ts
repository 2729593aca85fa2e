// The filter of find, countDocuments and distinct is parsed off the JS thread (src/options.rs,
// `DeferredDocument`): the native call copies the filter's BSON and returns its Promise; the
// runtime's thread builds the driver's `Document`. Parsing the `$in` of 10,000 ids a Mongoose
// populate sends took ~9M instructions of the JS thread per populate before (callgrind, session 17).
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BSONError } from 'bson'
import { MongoClient as OfficialClient } from 'mongodb'
import { MongoClient, ObjectId } from 'rumongo'
import { uniqueDbName, uri } from './setup/helpers.js'

const require = createRequire(import.meta.url)
const { callNative } = require('../dist/errors.js')
const { toBSON, DEFAULT_BSON_OPTIONS } = require('../dist/bson.js')

const dbName = uniqueDbName('find_filter')
let client: MongoClient
let official: OfficialClient

beforeAll(async () => {
  client = new MongoClient(uri)
  official = new OfficialClient(uri)
  await official
    .db(dbName)
    .collection('items')
    .insertMany(Array.from({ length: 50 }, (_, n) => ({ _id: new ObjectId(), n })))
})

afterAll(async () => {
  await official.db(dbName).dropDatabase()
  await official.close()
  await client.close()
})

/** Each read with a filter, called on the native collection with `filter` and empty options. */
const NATIVE_CALLS: Record<string, (native: any, filter: Buffer) => Promise<unknown>> = {
  find: (native, filter) => native.find(filter, toBSON({}, DEFAULT_BSON_OPTIONS), 'tape'),
  countDocuments: (native, filter) => native.countDocuments(filter, toBSON({}, DEFAULT_BSON_OPTIONS)),
  distinct: (native, filter) => native.distinct('n', filter, toBSON({}, DEFAULT_BSON_OPTIONS)),
}

describe('the filter of find, countDocuments and distinct', () => {
  it.each(Object.keys(NATIVE_CALLS))(
    '%s: parsed after the native call returns: malformed BSON rejects the Promise, the call does not throw',
    async (read) => {
      const cursor = client.db(dbName).collection('items').find({})
      // The cursor's source (a protected member in TypeScript) hands out the native collection.
      const native = await (cursor as any).source.nativeCollection()
      await cursor.close()
      // Declares 16 bytes, holds 5: the BSON parser refuses it.
      const malformed = Buffer.from([16, 0, 0, 0, 0])
      let pending: Promise<unknown> | undefined
      expect(() => {
        pending = NATIVE_CALLS[read]!(native, malformed)
      }).not.toThrow()
      // The error the synchronous throw translated to: js-bson's, as for any BSON rumongo cannot read.
      const error = await callNative(() => pending!).catch((caught: unknown) => caught)
      expect(BSONError.isBSONError(error)).toBe(true)
      expect((error as Error).message).toMatch(/^invalid BSON/)
    },
  )

  it("returns the official driver's documents, count and values for an $in of 10,000 ids", async () => {
    const stored = await official.db(dbName).collection('items').find({}).toArray()
    const ids = [
      ...stored.map((document) => document._id),
      ...Array.from({ length: 10_000 - stored.length }, () => new ObjectId()),
    ]
    const filter = { _id: { $in: ids } }
    const sort = { n: 1 } as const
    const ours = await client.db(dbName).collection('items').find(filter).sort(sort).toArray()
    const theirs = await official.db(dbName).collection('items').find(filter).sort(sort).toArray()
    expect(ours).toEqual(theirs)
    expect(ours).toHaveLength(50)
    const [ourCount, theirCount] = await Promise.all([
      client.db(dbName).collection('items').countDocuments(filter),
      official.db(dbName).collection('items').countDocuments(filter),
    ])
    expect(ourCount).toBe(theirCount)
    expect(ourCount).toBe(50)
    const [ourValues, theirValues] = await Promise.all([
      client.db(dbName).collection('items').distinct('n', filter),
      official.db(dbName).collection('items').distinct('n', filter),
    ])
    expect(ourValues).toEqual(theirValues)
    expect(ourValues).toHaveLength(50)
  })
})
