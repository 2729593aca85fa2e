// Both drivers behind the same fake load balancer (__tests__/setup/topology.ts, `loadBalanced=true`):
// the handshake, a cursor's getMores pinned to the connection of its find while other reads run
// beside it, a load balancer that answers hello without a serviceId (a misconfigured proxy), and
// a connection it closes mid-read. The official driver is the oracle.
import { describe, expect, it } from 'vitest'
import * as official from 'mongodb'
import * as rumongo from 'rumongo'
import { CLOSE_CONNECTION } from './setup/wire_server.js'
import { startLoadBalancer, type LoadBalancer, type LoadBalancerOptions } from './setup/topology.js'

type Driver = typeof official

/** Runs `scenario` through `driver` on a load balancer of its own, then closes both. */
async function behind<T>(
  driver: Driver,
  options: LoadBalancerOptions,
  scenario: (client: official.MongoClient, balancer: LoadBalancer) => Promise<T>,
  query = '',
): Promise<T> {
  const balancer = await startLoadBalancer(options)
  const client = new driver.MongoClient(balancer.uri(query))
  try {
    return await scenario(client, balancer)
  } finally {
    await client.close()
    await balancer.stop()
  }
}

const both = async <T>(options: LoadBalancerOptions, scenario: Parameters<typeof behind<T>>[2]) => ({
  official: await behind(official, options, scenario),
  rumongo: await behind(rumongo as unknown as Driver, options, scenario),
})

describe('a load balancer', () => {
  it('every connection says loadBalanced in its handshake, and no monitor polls it', async () => {
    const { official: expected, rumongo: actual } = await both({}, async (client, balancer) => {
      await client.connect()
      await Promise.all([1, 2, 3].map(() => client.db('db').collection('items').find({}).toArray()))
      const connections = new Set(balancer.log.map((entry) => entry.connection)).size
      return {
        loadBalanced: [...new Set(balancer.handshakes.map((hello) => hello.loadBalanced))],
        // One hello per connection: in load-balanced mode there is no monitoring.
        hellosPerConnection: balancer.handshakes.length / connections,
      }
    })
    expect(expected).toEqual({ loadBalanced: [true], hellosPerConnection: 1 })
    expect(actual).toEqual(expected)
  })

  it("a cursor's getMores go on the connection of its find while other cursors read beside it", async () => {
    const { official: expected, rumongo: actual } = await both(
      { documents: 6, batchSize: 2 },
      async (client, balancer) => {
        const items = client.db('db').collection('items')
        const cursor = items.find({}, { batchSize: 2 })
        await cursor.next()
        const others = await Promise.all([1, 2, 3].map(() => items.find({}, { batchSize: 2 }).toArray()))
        const rest = await cursor.toArray()
        // Each getMore against the connection its cursor's find came on.
        const findConnection = new Map(
          balancer.received('find').map((find) => [find.cursor, find.connection]),
        )
        const getMores = balancer.received('getMore')
        return {
          documents: [rest.length + 1, ...others.map((documents) => documents.length)],
          cursors: findConnection.size,
          getMores: getMores.length,
          unpinned: getMores.filter(({ command, connection }) => {
            return findConnection.get(BigInt(String(command.getMore))) !== connection
          }).length,
          connections: new Set(balancer.log.map((entry) => entry.connection)).size > 1,
        }
      },
    )
    expect(expected).toEqual({
      documents: [6, 6, 6, 6],
      cursors: 4,
      getMores: 8,
      unpinned: 0,
      connections: true,
    })
    expect(actual).toEqual(expected)
  })

  it('a hello without serviceId fails every read with MongoCompatibilityError, one handshake each, as the official driver', async () => {
    const { official: expected, rumongo: actual } = await both(
      { serviceId: null },
      async (client, balancer) => {
        const failures = []
        for (let read = 0; read < 2; read++) {
          const handshakes = balancer.handshakes.length
          const error = await client
            .db('db')
            .collection('items')
            .find({})
            .toArray()
            .catch((failure: unknown) => failure)
          failures.push({
            class:
              error instanceof
              (client instanceof official.MongoClient ? official : rumongo).MongoCompatibilityError,
            name: (error as Error).name,
            message: (error as Error).message,
            handshakes: balancer.handshakes.length - handshakes,
          })
        }
        return failures
      },
    )
    const failure = {
      class: true,
      name: 'MongoCompatibilityError',
      message:
        'Driver attempted to initialize in load balancing mode, but the server does not support this mode.',
      handshakes: 1,
    }
    expect(expected).toEqual([failure, failure])
    expect(actual).toEqual(expected)
  })

  it('a connection closed during a read without retryReads: the network error and labels of the official driver', async () => {
    const closing = { answer: (command: { find?: unknown }) => (command.find ? CLOSE_CONNECTION : undefined) }
    const run = (driver: Driver) =>
      behind(
        driver,
        closing,
        async (client, balancer) => {
          const read = client.db('db').collection('items').find({}).toArray()
          const error = (await read.catch((failure: unknown) => failure)) as official.MongoError
          return {
            name: error.name,
            message: error.message,
            errorLabels: error.errorLabels,
            address: balancer.address,
          }
        },
        'retryReads=false',
      )
    const expected = await run(official)
    // No ResetPool in load-balanced mode: the official driver clears the pool itself.
    expect(expected).toEqual({
      name: 'MongoNetworkError',
      message: `connection 1 to ${expected.address} closed`,
      errorLabels: ['RetryableWriteError'],
      address: expected.address,
    })
    const actual = await run(rumongo as unknown as Driver)
    expect(actual).toEqual({
      ...expected,
      message: `connection 1 to ${actual.address} closed`,
      address: actual.address,
    })
  })
})
