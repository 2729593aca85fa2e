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

/**
 * Starts `reads` finds on a client of `connect` and returns how many the server held at once:
 * waits (up to 20 s) until it holds `expected`, then `settleMS` more for any beyond it to arrive.
 */
async function heldAtOnce(
  connect: (uri: string) => Promise<{ db(name: string): any; close(): Promise<void> }>,
  uri: string,
  { reads, expected, settleMS = 0 }: { reads: number; expected: number; settleMS?: number },
) {
  const { server, release } = await holdingServer()
  const client = await connect(uri.replace(/^mongodb:\/\/[^/]+/, `mongodb://${server.address}`))
  try {
    const finds = Array.from({ length: reads }, (_, n) =>
      client.db('test').collection('items').find({ n }).toArray(),
    )
    const deadline = Date.now() + 20_000
    while (server.received('find').length < expected && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    await new Promise((resolve) => setTimeout(resolve, settleMS))
    const held = server.received('find').length
    release()
    await Promise.all(finds)
    return held
  } finally {
    await client.close()
  }
}

const URI = 'mongodb://placeholder/?directConnection=true&serverSelectionTimeoutMS=2000'

it(`without maxPoolSize, ${IN_FLIGHT} finds run at once, as with the official driver (default 100)`, async () => {
  const all = { reads: IN_FLIGHT, expected: IN_FLIGHT }
  expect(await heldAtOnce((uri) => OfficialClient.connect(uri), URI, all)).toBe(IN_FLIGHT)
  // The crate's own default (10) capped rumongo at 10 reads in flight.
  expect(await heldAtOnce((uri) => MongoClient.connect(uri), URI, all)).toBe(IN_FLIGHT)
  const client = new MongoClient(URI)
  expect(client.options.maxPoolSize).toBe(100)
}, 60_000)

it('maxPoolSize=5 lets 5 finds run at once, as with the official driver', async () => {
  // 500 ms after the fifth arrived, for a sixth to arrive if the client let one through.
  const five = { reads: 8, expected: 5, settleMS: 500 }
  const uri = `${URI}&maxPoolSize=5`
  expect(await heldAtOnce((u) => OfficialClient.connect(u), uri, five)).toBe(5)
  expect(await heldAtOnce((u) => MongoClient.connect(u), uri, five)).toBe(5)
}, 60_000)
