// The `HandshakeError` label: the official driver labels every failure of a connection's handshake,
// the hello command's and the login's (src/cmap/connect.ts, `performInitialHandshake`), and its
// server error handling reads it; users read `hasErrorLabel('HandshakeError')` and `errorLabels`.
// Both drivers run against the same fake server; the official driver is the oracle.
import { afterEach, describe, expect, it } from 'vitest'
import { MongoClient as OfficialClient } from 'mongodb'
import { MongoClient } from 'rumongo'
import { startAuthServer } from './setup/auth_server.js'
import { CLOSE_CONNECTION, helloReply, startWireServer, type WireServer } from './setup/wire_server.js'

interface Failure {
  name: string
  code?: unknown
  errorLabels: string[]
  handshake: boolean
}

/**
 * What `connect()` of each driver rejects with, each on a server of its own from `start` (the
 * servers number their connections), at the URI `uri` makes of the server's.
 */
async function connectFailures(
  start: () => Promise<WireServer>,
  uri: (serverUri: string) => string = (serverUri) => serverUri,
): Promise<{ official: Failure; rumongo: Failure }> {
  const failures: Failure[] = []
  for (const Client of [OfficialClient, MongoClient]) {
    const server = await start()
    servers.push(server)
    const client = new Client(uri(server.uri), { serverSelectionTimeoutMS: 2000, retryReads: false })
    const error = await client.connect().then(
      () => new Error('connected'),
      (error: unknown) => error as Error & { code?: unknown; errorLabels: string[] },
    )
    await client.close()
    const { name, code, errorLabels } = error as Error & { code?: unknown; errorLabels: string[] }
    failures.push({
      name,
      code,
      errorLabels: errorLabels ?? [],
      handshake:
        (error as { hasErrorLabel?(label: string): boolean }).hasErrorLabel?.('HandshakeError') ?? false,
    })
  }
  const [official, rumongo] = failures as [Failure, Failure]
  return { official, rumongo }
}

const servers: WireServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()))
})

describe('HandshakeError', () => {
  it('labels a failed login, as the official driver', async () => {
    const { official, rumongo } = await connectFailures(
      () => startAuthServer({ users: [{ user: 'reader', password: 'right' }] }),
      (uri) => uri.replace('mongodb://', 'mongodb://reader:wrong@'),
    )
    expect(official).toMatchObject({ name: 'MongoServerError', code: 18, handshake: true })
    expect(rumongo).toEqual(official)
  })

  it("labels a server error in the application connection's hello, as the official driver", async () => {
    // The first connection is the monitor's: its hello succeeds, the next connections' fail.
    const { official, rumongo } = await connectFailures(() =>
      startWireServer({
        hello: (_, { connection }) =>
          connection === 1
            ? helloReply(false)
            : Promise.resolve({
                ok: 0,
                code: 11600,
                codeName: 'InterruptedAtShutdown',
                errmsg: 'shutting down',
              }),
      }),
    )
    expect(official).toMatchObject({ name: 'MongoServerError', code: 11600, handshake: true })
    expect(rumongo).toEqual(official)
  })

  it("labels a connection closed during the application connection's hello", async () => {
    const { official, rumongo } = await connectFailures(() =>
      startWireServer({
        hello: (_, { connection }) => (connection === 1 ? helloReply(false) : CLOSE_CONNECTION),
      }),
    )
    // With the official driver's overload labels for a network error of the hello.
    expect(official).toMatchObject({
      name: 'MongoNetworkError',
      handshake: true,
      errorLabels: ['HandshakeError', 'SystemOverloadedError', 'RetryableError'],
    })
    expect(rumongo).toEqual(official)
  })
})
