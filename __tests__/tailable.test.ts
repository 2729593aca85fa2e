// Tailable and awaitData cursors on find (issue #35), side by side with the official driver on a
// scripted cursor: the find sends `tailable` and `awaitData`, every getMore the `maxTimeMS` of
// `maxAwaitTimeMS`, empty batches do not end the cursor (next() waits through them for the next
// document), and close() kills it.
import { afterEach, describe, expect, it } from 'vitest'
import { Long, MongoClient as OfficialClient, type Document } from 'mongodb'
import { MongoClient } from 'rumongo'
import { startWireServer, type WireServer } from './setup/wire_server.js'

const CURSOR_ID = 4242n

/**
 * A capped collection's tailable cursor: the find returns one document, the next two getMores
 * nothing (no new data), the third one document, every later one nothing; the cursor never ends.
 */
function tailServer(): Promise<WireServer> {
  let getMores = 0
  return startWireServer({
    answer(command) {
      const name = Object.keys(command)[0]!
      const ns = `${command.$db}.log`
      const id = Long.fromBigInt(CURSOR_ID)
      if (name === 'find') return { cursor: { id, ns, firstBatch: [{ _id: 1, line: 'a' }] }, ok: 1 }
      if (name === 'getMore') {
        getMores += 1
        const nextBatch = getMores === 3 ? [{ _id: 2, line: 'b' }] : []
        return { cursor: { id, ns, nextBatch }, ok: 1 }
      }
      return { ok: 1 }
    },
  })
}

type AnyClient = MongoClient | OfficialClient

async function tailScript(client: AnyClient) {
  await client.connect()
  const cursor = client
    .db('app')
    .collection('log')
    .find({}, { tailable: true, awaitData: true, maxAwaitTimeMS: 250 })
  const first = await cursor.next()
  const second = await cursor.next()
  await cursor.close()
  return { first, second, closed: cursor.closed }
}

const servers: WireServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()))
})

async function run(make: (uri: string) => AnyClient) {
  const server = await tailServer()
  servers.push(server)
  const client = make(server.uri)
  try {
    return { outcome: await tailScript(client), server }
  } finally {
    await client.close()
  }
}

/** The fields of a find or getMore that tailing sets. */
function tailFields(command: Document) {
  return {
    command: Object.keys(command)[0],
    tailable: command.tailable,
    awaitData: command.awaitData,
    maxTimeMS: command.maxTimeMS,
    maxAwaitTimeMS: command.maxAwaitTimeMS,
    getMore: command.getMore === undefined ? undefined : BigInt(command.getMore.toString()),
  }
}

describe('tailable awaitData cursors, both drivers', () => {
  it('tailable and awaitData on the find, maxAwaitTimeMS as each getMore maxTimeMS, through empty batches', async () => {
    const official = await run((uri) => new OfficialClient(uri))
    const rumongo = await run((uri) => new MongoClient(uri))
    expect(rumongo.outcome).toEqual(official.outcome)
    expect(rumongo.outcome).toEqual({
      first: { _id: 1, line: 'a' },
      second: { _id: 2, line: 'b' },
      closed: true,
    })
    const [find] = official.server.received('find')
    expect(tailFields(rumongo.server.received('find')[0]!)).toEqual(tailFields(find!))
    expect(tailFields(find!)).toMatchObject({ tailable: true, awaitData: true, maxAwaitTimeMS: undefined })
    // The three getMores the second document took; rumongo may have asked for more ahead of the
    // reader (prefetch), each of them the same.
    const theirs = official.server.received('getMore').map(tailFields)
    const ours = rumongo.server.received('getMore').map(tailFields)
    expect(theirs).toHaveLength(3)
    expect(ours.slice(0, 3)).toEqual(theirs)
    for (const getMore of [...theirs, ...ours]) {
      expect(getMore).toMatchObject({ getMore: CURSOR_ID, maxTimeMS: 250 })
    }
    // close() killed the cursor the server still held open.
    expect(rumongo.server.killed).toEqual(official.server.killed)
    expect(rumongo.server.killed).toEqual([CURSOR_ID])
  })

  it('tryNext() says null for an empty batch and the cursor stays open, as the official driver', async () => {
    const script = async (client: AnyClient) => {
      await client.connect()
      const cursor = client
        .db('app')
        .collection('log')
        .find({}, { tailable: true, awaitData: true, maxAwaitTimeMS: 250 })
      const seen = [
        await cursor.next(),
        await cursor.tryNext(),
        await cursor.tryNext(),
        await cursor.tryNext(),
      ]
      const closedBefore = cursor.closed
      await cursor.close()
      return { seen, closedBefore }
    }
    const outcome = async (make: (uri: string) => AnyClient) => {
      const server = await tailServer()
      servers.push(server)
      const client = make(server.uri)
      try {
        return await script(client)
      } finally {
        await client.close()
      }
    }
    const theirs = await outcome((uri) => new OfficialClient(uri))
    expect(await outcome((uri) => new MongoClient(uri))).toEqual(theirs)
    expect(theirs).toEqual({
      seen: [{ _id: 1, line: 'a' }, null, null, { _id: 2, line: 'b' }],
      closedBefore: false,
    })
  })

  it("addCursorFlag('tailable'): a tailable cursor without awaitData, no maxTimeMS on its getMores", async () => {
    const script = async (client: AnyClient) => {
      await client.connect()
      const cursor = client.db('app').collection('log').find({}).addCursorFlag('tailable', true)
      await cursor.next()
      await cursor.next()
      await cursor.close()
    }
    const commands = async (make: (uri: string) => AnyClient) => {
      const server = await tailServer()
      servers.push(server)
      const client = make(server.uri)
      try {
        await script(client)
      } finally {
        await client.close()
      }
      return [...server.received('find'), ...server.received('getMore').slice(0, 3)].map(tailFields)
    }
    expect(await commands((uri) => new MongoClient(uri))).toEqual(
      await commands((uri) => new OfficialClient(uri)),
    )
  })

  it('tryNext() meets a map() transform that throws: the cursor closes (its server cursor killed) before the read rejects, as the official driver', async () => {
    const script = async (client: AnyClient) => {
      await client.connect()
      const log: unknown[] = []
      const cursor = client
        .db('app')
        .collection('log')
        .find({}, { tailable: true, awaitData: true, maxAwaitTimeMS: 250 })
        .map((document) => {
          if (document._id === 2) throw new TypeError('transform failed')
          return document.line
        })
      cursor.on('close', () => log.push(['close event', cursor.closed, cursor.killed]))
      const step = async (name: string, read: () => Promise<unknown>) => {
        try {
          log.push([name, await read()])
        } catch (error) {
          log.push([name, (error as Error).name, (error as Error).message])
        }
        log.push([cursor.closed, cursor.killed, cursor.id?.isZero()])
      }
      await step('next', () => cursor.next())
      // Two empty batches, then document 2, which the transform refuses.
      for (let i = 0; i < 3; i++) await step('tryNext', () => cursor.tryNext())
      await step('tryNext', () => cursor.tryNext())
      await step('next', () => cursor.next())
      await step('close', () => cursor.close())
      return log
    }
    const outcome = async (make: (uri: string) => AnyClient) => {
      const server = await tailServer()
      servers.push(server)
      const client = make(server.uri)
      try {
        return { log: await script(client), killed: server.killed }
      } finally {
        await client.close()
      }
    }
    const theirs = await outcome((uri) => new OfficialClient(uri))
    expect(await outcome((uri) => new MongoClient(uri))).toEqual(theirs)
    expect(theirs.killed).toEqual([CURSOR_ID])
    expect(theirs.log.slice(6, 9)).toEqual([
      ['close event', true, true],
      ['tryNext', 'TypeError', 'transform failed'],
      [true, true, true],
    ])
  })
})
