// The objects rumongo's decoder builds have the shape V8 gives js-bson's (the official driver's),
// which Mongoose's hydration and populate read as fast (session 17: hydrating 10,000 orders took
// 80-100 ms from either driver): fast properties, one map for every document of one shape, and
// the very maps of js-bson's ObjectId and Date. A dictionary-mode document, or a map per document,
// would make every property read in Mongoose's `init` and populate megamorphic.
import { setFlagsFromString } from 'node:v8'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MongoClient as OfficialClient, type Document } from 'mongodb'
import { MongoClient, ObjectId } from 'rumongo'
import { uniqueDbName, uri } from './setup/helpers.js'

setFlagsFromString('--allow-natives-syntax')
const natives = (call: string) =>
  new Function('a', 'b', `return ${call}`) as (a: object, b?: object) => boolean
const hasFastProperties = natives('%HasFastProperties(a)')
const haveSameMap = natives('%HaveSameMap(a, b)')

const dbName = uniqueDbName('document_shape')
let client: MongoClient
let official: OfficialClient

beforeAll(async () => {
  client = new MongoClient(uri)
  official = new OfficialClient(uri)
  await official
    .db(dbName)
    .collection('orders')
    .insertMany(
      Array.from({ length: 200 }, (_, n) => ({
        _id: new ObjectId(),
        n,
        status: ['paid', 'pending'][n % 2],
        at: new Date(1_700_000_000_000 + n),
        customer: { name: `customer ${n % 7}`, tier: n % 4 },
        children: [new ObjectId(), new ObjectId()],
      })),
    )
})

afterAll(async () => {
  await official.db(dbName).dropDatabase()
  await official.close()
  await client.close()
})

describe('decoded documents', () => {
  it("have fast properties, one map per shape, and js-bson's ObjectId and Date maps", async () => {
    const read = (driver: MongoClient | OfficialClient) =>
      driver.db(dbName).collection('orders').find({}).sort({ n: 1 }).toArray() as Promise<Document[]>
    const ours = await read(client)
    const theirs = await read(official)
    expect(ours).toEqual(theirs)
    const first = ours[0]!
    for (const document of ours) {
      expect(hasFastProperties(document)).toBe(true)
      expect(hasFastProperties(document.customer)).toBe(true)
      expect(haveSameMap(document, first)).toBe(true)
      expect(haveSameMap(document.customer, first.customer)).toBe(true)
      expect(haveSameMap(document.children, first.children)).toBe(true)
    }
    expect(haveSameMap(first._id, theirs[0]!._id)).toBe(true)
    expect(haveSameMap(first.children[0], theirs[0]!.children[0])).toBe(true)
    expect(haveSameMap(first.at, theirs[0]!.at)).toBe(true)
  })
})
