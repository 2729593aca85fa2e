// How many reads a client runs at once: `maxPoolSize` (the official driver's default, 100, when the
// connection string and the options set none). The wire server holds every find until the test
// releases them, so the number it has received at once is the number the client let through.
import { afterEach, expect, it } from 'vitest'
import { MongoClient as OfficialClient } from 'mongodb'
import { MongoClient } from 'rumongo'
import { startWireServer, type WireReply, type WireServer } from './setup/wire_server.js'

const IN_FLIGHT = 30

let server: WireServer | undefined
afterEach(async () => {
  await server?.stop()
  server = undefined
})

/** A wire server whose finds wait for `release()`, answering one empty batch each. */
async function holdingServer() {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  server = await startWireServer({
    answer: async (command): Promise<WireReply> => {
      if (!('find' in command)) return { ok: 1 }
      await released
      return { cursor: { id: 0n, ns: `test.${command.find}`, firstBatch: [] }, ok: 1 }
    },
  })
  return { server, release }
}

/** Starts `IN_FLIGHT` finds and waits (up to 20 s) until the server holds them all. */
async function finds(
  connect: (uri: string) => Promise<{ db(name: string): any; close(): Promise<void> }>,
  uri: string,
) {
  const { server, release } = await holdingServer()
  const client = await connect(uri.replace(/^mongodb:\/\/[^/]+/, `mongodb://${server.address}`))
  try {
    const reads = Array.from({ length: IN_FLIGHT }, (_, n) =>
      client.db('test').collection('items').find({ n }).toArray(),
    )
    const deadline = Date.now() + 20_000
    while (server.received('find').length < IN_FLIGHT && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const heldAtOnce = server.received('find').length
    release()
    await Promise.all(reads)
    return heldAtOnce
  } finally {
    await client.close()
  }
}

const URI = 'mongodb://placeholder/?directConnection=true&serverSelectionTimeoutMS=2000'

it(`without maxPoolSize, ${IN_FLIGHT} finds run at once, as with the official driver (default 100)`, async () => {
  expect(await finds((uri) => OfficialClient.connect(uri), URI)).toBe(IN_FLIGHT)
  // The crate's own default (10) capped rumongo at 10 reads in flight.
  expect(await finds((uri) => MongoClient.connect(uri), URI)).toBe(IN_FLIGHT)
  const client = new MongoClient(URI)
  expect(client.options.maxPoolSize).toBe(100)
}, 60_000)

it('maxPoolSize=5 lets 5 finds run at once, as with the official driver', async () => {
  const uri = `${URI}&maxPoolSize=5`
  // The count once all the others wait: checked after the 20 s wait runs out, so keep it short.
  const held = async (connect: (uri: string) => Promise<any>) => {
    const { server, release } = await holdingServer()
    const client = await connect(uri.replace(/^mongodb:\/\/[^/]+/, `mongodb://${server.address}`))
    try {
      const reads = Array.from({ length: 8 }, (_, n) =>
        client.db('test').collection('items').find({ n }).toArray(),
      )
      const deadline = Date.now() + 10_000
      while (server.received('find').length < 5 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      // Time for a sixth find to arrive, if the client let one through.
      await new Promise((resolve) => setTimeout(resolve, 500))
      const count = server.received('find').length
      release()
      await Promise.all(reads)
      return count
    } finally {
      await client.close()
    }
  }
  expect(await held((u) => OfficialClient.connect(u))).toBe(5)
  expect(await held((u) => MongoClient.connect(u))).toBe(5)
}, 60_000)
