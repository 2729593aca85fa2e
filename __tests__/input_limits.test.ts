// What a user can hand rumongo that it walks or forwards: a timeoutMS of any size, circular and
// deeply nested documents, values BSON has no form for in a Model's filter. Each gives what the
// official driver (or Mongoose, for the Model) gives, or a typed error with a code: never a
// crash, a TypeError of rumongo's own, a server error for rumongo's own option, or a query that
// silently matches everything.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MongoClient as OfficialClient, type Document } from 'mongodb'
import { MongoClient, MongoInvalidArgumentError, MongoParseError } from 'rumongo'
import { startWireServer, type WireServer } from './setup/wire_server.js'

let server: WireServer
let official: OfficialClient
let rumongo: MongoClient

beforeAll(async () => {
  server = await startWireServer({ documents: [{ _id: 1, name: 'a' }] })
  official = await OfficialClient.connect(server.uri)
  rumongo = await MongoClient.connect(server.uri)
})

afterAll(async () => {
  await Promise.all([official?.close(), rumongo?.close()])
  await server?.stop()
})

describe('timeoutMS of any size', () => {
  /** The maxTimeMS of the find each driver sends for `findOne({}, options)`. */
  async function sentMaxTime(client: MongoClient | OfficialClient, options: Document) {
    const before = server.received('find').length
    await client.db('db').collection('items').findOne({}, options)
    return server
      .received('find')
      .slice(before)
      .map((find) => find.maxTimeMS)
  }

  it('2^31 ms and more is enforced by the client alone: no maxTimeMS the server refuses', async () => {
    // The server refuses a maxTimeMS past 2^31 - 1 ("maxTimeMS is out of range"): every read failed.
    for (const timeoutMS of [2 ** 31, 2 ** 40, Number.MAX_SAFE_INTEGER]) {
      expect(await sentMaxTime(rumongo, { timeoutMS })).toEqual([undefined])
      // The official driver 7.x sends none for any timeoutMS (it ignores the option).
      expect(await sentMaxTime(official, { timeoutMS })).toEqual([undefined])
      const client = await MongoClient.connect(server.uri, { timeoutMS })
      try {
        expect(await sentMaxTime(client, {})).toEqual([undefined])
      } finally {
        await client.close()
      }
    }
    // Below, it is still sent (the server stops work the client gave up on).
    const longest = await sentMaxTime(rumongo, { timeoutMS: 2 ** 31 - 1 })
    expect(longest.map(Number)).toEqual([2 ** 31 - 1])
    // A maxTimeMS of the user's own is sent as given, as by the official driver.
    expect((await sentMaxTime(rumongo, { maxTimeMS: 5000, timeoutMS: 2 ** 31 })).map(Number)).toEqual([5000])
  })

  it('values that are no number of milliseconds are typed errors', async () => {
    const items = rumongo.db('db').collection('items')
    for (const timeoutMS of [Infinity, -Infinity, NaN, -1, 1.5, 1e300, '100', null as unknown, 10n]) {
      const error = await items
        .findOne({}, { timeoutMS: timeoutMS as number })
        .catch((caught: unknown) => caught)
      // null is "not set", as every option's null in the official driver.
      if (timeoutMS === null) continue
      expect(error, String(timeoutMS)).toBeInstanceOf(MongoInvalidArgumentError)
      expect((error as MongoInvalidArgumentError).code).toBe('ERR_INVALID_ARGUMENT')
    }
    for (const timeoutMS of [Infinity, NaN, -1, '1e400', 'abc']) {
      const created = () => new MongoClient(server.uri, { timeoutMS: timeoutMS as number })
      const inURI = () =>
        new MongoClient(`${server.uri}${server.uri.includes('?') ? '&' : '?'}timeoutMS=${timeoutMS}`)
      for (const create of [created, inURI]) {
        let error: unknown
        try {
          await create().connect()
        } catch (caught) {
          error = caught
        }
        expect(error, String(timeoutMS)).toSatisfy(
          (caught: unknown) =>
            caught instanceof MongoParseError || caught instanceof MongoInvalidArgumentError,
        )
        expect((error as { code?: string }).code).toMatch(/^ERR_/)
      }
    }
  })
})
