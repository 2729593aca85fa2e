// Heartbeat failures in the official driver's words and classes, both drivers on the fakes of
// setup/topology.ts: a mongos that closes each connection at its first request (the monitor's
// hello gets no reply: the crate said "unexpected end of file") and a stopped mongos (its port
// refuses connections: the event named no server). What is compared: the failure of each
// ServerHeartbeatFailedEvent, the server selection error that quotes it, and the server's error in
// that error's topology.
import { afterEach, describe, expect, it } from 'vitest'
import * as official from 'mongodb'
import * as rumongo from 'rumongo'
import { startMongos, type FakeServer } from './setup/topology.js'

type Driver = typeof official

/** What a test compares of an error: its class and message. */
function describeError(error: unknown) {
  const { name, message } = error as Error
  return { name, message }
}

/** The heartbeat failures and the connect error `driver` gets from `server`. */
async function heartbeatFailures(driver: Driver, server: FakeServer) {
  const client = new driver.MongoClient(
    `mongodb://${server.address}/?heartbeatFrequencyMS=500&serverSelectionTimeoutMS=1000`,
  )
  const heartbeats: unknown[] = []
  client.on('serverHeartbeatFailed', (event) => heartbeats.push(event.failure))
  const error = (await client.connect().then(
    () => undefined,
    (error: unknown) => error,
  )) as official.MongoServerSelectionError | undefined
  await client.close()
  return {
    heartbeats: [...new Set(heartbeats.map((failure) => JSON.stringify(describeError(failure))))].map(
      (failure) => JSON.parse(failure) as ReturnType<typeof describeError>,
    ),
    selection: describeError(error),
    server: describeError(error?.reason?.servers.get(server.address)?.error),
  }
}

describe('heartbeat failures', () => {
  let server: FakeServer
  afterEach(async () => {
    if (!server.stopped) await server.stop()
  })

  it('a connection the server closes: "connection <monitor> to host:port closed", as the official driver', async () => {
    server = (await startMongos(1)).servers[0]!
    server.closeEachConnection()
    const officialFailures = await heartbeatFailures(official, server)
    const rumongoFailures = await heartbeatFailures(rumongo as unknown as Driver, server)
    const closed = { name: 'MongoNetworkError', message: `connection <monitor> to ${server.address} closed` }
    expect(officialFailures).toEqual({
      heartbeats: [closed],
      selection: { name: 'MongoServerSelectionError', message: closed.message },
      server: closed,
    })
    expect(rumongoFailures).toEqual(officialFailures)
  })

  it('a refused connection names the server, as the official driver', async () => {
    server = (await startMongos(1)).servers[0]!
    await server.stop()
    const officialFailures = await heartbeatFailures(official, server)
    const rumongoFailures = await heartbeatFailures(rumongo as unknown as Driver, server)
    const refused = { name: 'MongoNetworkError', message: `connect ECONNREFUSED ${server.address}` }
    expect(officialFailures).toEqual({
      heartbeats: [refused],
      selection: { name: 'MongoServerSelectionError', message: refused.message },
      server: refused,
    })
    expect(rumongoFailures).toEqual(officialFailures)
  })
})
