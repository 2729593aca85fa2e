// Connection pools per server, as in the official driver: `maxPoolSize` (default 100) bounds the reads
// in flight to each member of a replica set or each mongos, not to the whole client, and a member
// that is slow or hung never delays the reads routed to another. rumongo used to hand out
// `maxPoolSize` slots client-wide before the crate selected a server (its own gate, kept because the
// crate's pool left the checkout requests of reads that gave up queued): over 3 members, 2 reads in
// flight in all instead of 6, and reads to the primary waited for a hung secondary.
//
// The fakes hold every find on collection `held` (or `hung`) until the test releases them and count
// how many each member holds at once.
import { afterEach, describe, expect, it } from 'vitest'
import { MongoClient as OfficialClient, type Document } from 'mongodb'
import { MongoClient } from 'rumongo'
import { helloReply, startWireServer, type WireReply, type WireServer } from './setup/wire_server.js'

/** One fake server of a deployment and the held finds it has counted. */
interface Member {
  server: WireServer
  /** Finds on `held` or `hung` it holds now. */
  holding: number
  /** The most it held at once. */
  most: number
}

interface Deployment {
  members: Member[]
  /** The connection string of the deployment, with `options` appended. */
  uri: (options: string) => string
  /** Answers every held find. */
  release: () => void
  /** Finds held now, all members together. */
  holding: () => number
}

/** A client of either driver, as these tests use it. */
type Client = { db(name: string): any; close(): Promise<void> }
type Connect = (uri: string) => Promise<Client>
const DRIVERS: [string, Connect][] = [
  ['official', (uri) => OfficialClient.connect(uri)],
  ['rumongo', (uri) => MongoClient.connect(uri)],
]

const started: Deployment[] = []
afterEach(async () => {
  for (const deployment of started.splice(0)) {
    deployment.release()
    await Promise.all(deployment.members.map((member) => member.server.stop()))
  }
})

/** The hello of member `index` of replica set `rs` (member 0 is the primary). */
function memberHello(hosts: string[], index: number): Document {
  const primary = index === 0
  return {
    ...helloReply(false),
    ismaster: primary,
    isWritablePrimary: primary,
    secondary: !primary,
    setName: 'rs',
    hosts,
    primary: hosts[0],
    me: hosts[index],
  }
}

/**
 * `count` replica-set members or mongos on loopback. Finds on `held` and `hung` wait for
 * `release()`; every other find answers at once; each answer names the member that served it.
 */
async function deploy(kind: 'replicaSet' | 'mongos', count: number): Promise<Deployment> {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  const hosts: string[] = []
  const members: Member[] = []
  for (let index = 0; index < count; index++) {
    const member = { holding: 0, most: 0 } as Member
    member.server = await startWireServer({
      mongos: kind === 'mongos',
      hello: kind === 'replicaSet' ? () => memberHello(hosts, index) : undefined,
      answer: async (command): Promise<WireReply> => {
        if (!('find' in command)) return { ok: 1 }
        if (command.find === 'held' || command.find === 'hung') {
          member.holding++
          member.most = Math.max(member.most, member.holding)
          await released
          member.holding--
        }
        return { cursor: { id: 0n, ns: `test.${command.find}`, firstBatch: [{ member: index }] }, ok: 1 }
      },
    })
    hosts.push(member.server.address)
    members.push(member)
  }
  // A wide latency window: every member is eligible for `nearest` on a loaded machine too.
  const base = `mongodb://${hosts.join(',')}/?localThresholdMS=10000&serverSelectionTimeoutMS=10000`
  const deployment: Deployment = {
    members,
    uri: (options) =>
      `${base}${kind === 'replicaSet' ? '&replicaSet=rs' : ''}${options ? `&${options}` : ''}`,
    release,
    holding: () => members.reduce((sum, member) => sum + member.holding, 0),
  }
  started.push(deployment)
  return deployment
}

/** Reads (readPreference nearest) until every member has served one: the client knows them all. */
async function warmUp(client: Client, deployment: Deployment) {
  const warm = client.db('test').collection('warm', { readPreference: 'nearest' })
  const served = new Set<number>()
  for (let n = 0; n < 500 && served.size < deployment.members.length; n++) {
    const document = await warm.findOne({})
    served.add(document.member)
  }
  expect(served.size).toBe(deployment.members.length)
}

/** Resolves once `ready()` holds (polled, up to 20 s), then `settleMS` more. */
async function until(ready: () => boolean, settleMS = 0) {
  const deadline = Date.now() + 20_000
  while (!ready() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25))
  await new Promise((resolve) => setTimeout(resolve, settleMS))
}

/**
 * Starts `reads` finds on `held` (readPreference nearest) on a fresh deployment and returns how many
 * the members held at once, all together and each: waits until they hold `expected`, then 500 ms
 * for any beyond it to arrive.
 */
async function heldAtOnce(
  connect: Connect,
  kind: 'replicaSet' | 'mongos',
  options: string,
  { reads, expected }: { reads: number; expected: number },
) {
  const deployment = await deploy(kind, kind === 'replicaSet' ? 3 : 2)
  const client = await connect(deployment.uri(options))
  try {
    await warmUp(client, deployment)
    const held = client.db('test').collection('held', { readPreference: 'nearest' })
    const finds = Array.from({ length: reads }, (_, n) => held.find({ n }).toArray())
    await until(() => deployment.holding() >= expected, 500)
    const atOnce = { all: deployment.holding(), each: deployment.members.map((member) => member.most) }
    deployment.release()
    await Promise.all(finds)
    return atOnce
  } finally {
    await client.close()
  }
}

describe('maxPoolSize bounds the reads in flight to each server, not to the client', () => {
  it.each(DRIVERS)(
    'maxPoolSize=2, nearest over 3 members: 6 finds in flight (%s)',
    async (_, connect) => {
      // Every member is chosen often enough among 24 reads to fill its 2 connections.
      const atOnce = await heldAtOnce(connect, 'replicaSet', 'readPreference=nearest&maxPoolSize=2', {
        reads: 24,
        expected: 6,
      })
      expect(atOnce).toEqual({ all: 6, each: [2, 2, 2] })
    },
    60_000,
  )

  it.each(DRIVERS)(
    'maxPoolSize=2 over 2 mongos: 4 finds in flight (%s)',
    async (_, connect) => {
      const atOnce = await heldAtOnce(connect, 'mongos', 'maxPoolSize=2', { reads: 16, expected: 4 })
      expect(atOnce).toEqual({ all: 4, each: [2, 2] })
    },
    60_000,
  )

  it.each(DRIVERS)(
    'without maxPoolSize, 150 finds over 3 members all in flight (%s)',
    async (_, connect) => {
      // 100 a member (the official default); rumongo allowed 100 for the whole client.
      const atOnce = await heldAtOnce(connect, 'replicaSet', 'readPreference=nearest', {
        reads: 150,
        expected: 150,
      })
      expect(atOnce.all).toBe(150)
    },
    60_000,
  )
})

describe('maxPoolSize=0: no limit, as in the official driver', () => {
  // The Rust driver refuses 0 ("cannot specify maxPoolSize=0"): rumongo failed to connect.
  const CLIENTS: [string, (uri: string) => any][] = [
    ['official', (uri) => new OfficialClient(uri)],
    ['rumongo', (uri) => new MongoClient(uri)],
  ]
  it.each(CLIENTS)(
    '40 finds over 2 mongos all in flight; options and pool events say 0 (%s)',
    async (_, create) => {
      const deployment = await deploy('mongos', 2)
      const client = create(deployment.uri('maxPoolSize=0'))
      const pools: number[] = []
      client.on('connectionPoolCreated', (event: { options: Document }) =>
        pools.push(event.options.maxPoolSize),
      )
      try {
        await client.connect()
        expect(client.options.maxPoolSize).toBe(0)
        await warmUp(client, deployment)
        const held = client.db('test').collection('held')
        const finds = Array.from({ length: 40 }, (_, n) => held.find({ n }).toArray())
        await until(() => deployment.holding() >= 40, 300)
        expect(deployment.holding()).toBe(40)
        deployment.release()
        await Promise.all(finds)
        expect(pools).toEqual([0, 0])
      } finally {
        await client.close()
      }
    },
    60_000,
  )
})

describe('waitQueueTimeoutMS bounds the wait for a pooled connection, as in the official driver', () => {
  // The Rust driver parsed it and dropped it: a read waited for a connection without end.
  const CLIENTS: [string, (uri: string) => any][] = [
    ['official', (uri) => new OfficialClient(uri)],
    ['rumongo', (uri) => new MongoClient(uri)],
  ]
  /** The error of a read that waits for the only connection, held by a find the server holds. */
  async function waitingRead(create: (uri: string) => any, uri: string, readOptions: Document) {
    const deployment = await deploy('mongos', 1)
    const client = create(deployment.uri(`maxPoolSize=1&waitQueueTimeoutMS=300${uri}`))
    const checkoutFailures: string[] = []
    client.on('connectionCheckOutFailed', (event: { reason: string }) => checkoutFailures.push(event.reason))
    try {
      await client.connect()
      const test = client.db('test')
      const holding = test.collection('held').findOne({})
      await until(() => deployment.holding() === 1)
      const started = Date.now()
      const error = await test
        .collection('fast')
        .findOne({}, readOptions)
        .catch((caught: Error) => caught)
      const waited = Date.now() - started
      deployment.release()
      await holding
      return { error, waited, checkoutFailures }
    } finally {
      await client.close()
    }
  }

  it.each(CLIENTS)(
    'without timeoutMS: MongoWaitQueueTimeoutError after 300 ms (%s)',
    async (_, create) => {
      const { error, waited, checkoutFailures } = await waitingRead(create, '', {})
      expect(error.name).toBe('MongoWaitQueueTimeoutError')
      expect(error.message).toBe('Timed out while checking out a connection from connection pool')
      expect(waited).toBeGreaterThanOrEqual(250)
      expect(waited).toBeLessThan(10_000)
      expect(checkoutFailures).toEqual(['timeout'])
    },
    60_000,
  )

  it.each(CLIENTS)(
    'with an operation timeoutMS too (%s)',
    async (_, create) => {
      const { error } = await waitingRead(create, '', { timeoutMS: 1_500 })
      expect(error.name).toBe('MongoWaitQueueTimeoutError')
    },
    60_000,
  )

  it.each(CLIENTS)(
    "under the client's timeoutMS too (%s)",
    async (_, create) => {
      // The official driver 7.9 does not let timeoutMS bound the checkout of a read in its place.
      const { error } = await waitingRead(create, '&timeoutMS=1500', {})
      expect(error.name).toBe('MongoWaitQueueTimeoutError')
    },
    60_000,
  )
})

describe('a hung member does not delay the reads routed to another', () => {
  it.each(DRIVERS)(
    'reads to the primary settle while both secondaries hold theirs (%s)',
    async (_, connect) => {
      const deployment = await deploy('replicaSet', 3)
      const client = await connect(deployment.uri('maxPoolSize=2'))
      try {
        await warmUp(client, deployment)
        const test = client.db('test')
        const hung = test.collection('hung', { readPreference: 'secondary' })
        const stuck = Array.from({ length: 4 }, (_, n) => hung.find({ n }).toArray())
        await until(() => deployment.holding() >= 2)
        const started = Date.now()
        const primary = test.collection('fast')
        const served = await Promise.all(Array.from({ length: 5 }, (_, n) => primary.findOne({ n })))
        // A generous bound: the secondaries hold their reads until released.
        expect(Date.now() - started).toBeLessThan(1_000)
        expect(served.map((document: Document) => document.member)).toEqual([0, 0, 0, 0, 0])
        deployment.release()
        await Promise.all(stuck)
      } finally {
        await client.close()
      }
    },
    60_000,
  )

  /**
   * Reads that time out on the hung secondaries, then a read to the primary and, once the
   * secondaries answer, a read to a secondary: both must resolve within their timeout.
   */
  async function burstOnHungSecondaries(
    connect: Connect,
    { uri, reads, timeouts }: { uri: string; reads: number; timeouts: (n: number) => object },
  ) {
    const deployment = await deploy('replicaSet', 3)
    const client = await connect(deployment.uri(uri))
    try {
      await warmUp(client, deployment)
      const test = client.db('test')
      const hung = test.collection('hung', { readPreference: 'secondary' })
      const burst = await Promise.allSettled(
        Array.from({ length: reads }, (_, n) => hung.findOne({ n }, timeouts(n))),
      )
      const failures = burst.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []))
      expect(failures).toHaveLength(reads)
      // The timeout bounds each read: one that resolves was not held up behind the burst.
      const primary = await test.collection('fast').findOne({}, timeouts(0))
      expect(primary).toMatchObject({ member: 0 })
      deployment.release()
      const secondary = test.collection('fast', { readPreference: 'secondary' })
      expect(await secondary.findOne({}, timeouts(0))).toHaveProperty('member')
      return new Set(failures.map((failure) => failure.name))
    } finally {
      await client.close()
    }
  }

  it.each(DRIVERS)(
    'a burst of reads timing out (socketTimeoutMS) on hung secondaries holds up no other read (%s)',
    async (_, connect) => {
      const names = await burstOnHungSecondaries(connect, {
        uri: 'maxPoolSize=2&socketTimeoutMS=300',
        reads: 20,
        timeouts: () => ({}),
      })
      expect([...names]).toEqual(['MongoNetworkTimeoutError'])
    },
    60_000,
  )

  it('the [O] burst (100 reads with timeoutMS 1-3 ms) on hung secondaries leaves nothing queued', async () => {
    // reliability.test.ts's guarantee, per server: the reads that gave up hold no connection of
    // another member, and leave no checkout request queued in their own member's pool. rumongo
    // only: the official driver 7.9 never ends a read that a server does not answer under an
    // operation's timeoutMS (seen on these fakes and on a standalone one: still pending after 3 s).
    const names = await burstOnHungSecondaries((uri) => MongoClient.connect(uri), {
      uri: 'maxPoolSize=2',
      reads: 100,
      timeouts: (n) => ({ timeoutMS: n === 0 ? 2_000 : 1 + (n % 3) }),
    })
    expect([...names]).toEqual(['MongoOperationTimeoutError'])
  }, 60_000)
})

describe('client.options tells the pool options as the official driver does', () => {
  const POOL_OPTIONS = ['maxPoolSize', 'minPoolSize', 'maxConnecting', 'maxIdleTimeMS', 'waitQueueTimeoutMS']
  const pick = (options: Readonly<Document>) =>
    Object.fromEntries(POOL_OPTIONS.map((key) => [key, options[key]]))
  it.each([
    ['the defaults', ''],
    [
      'set in the URI',
      'maxPoolSize=7&minPoolSize=3&maxConnecting=4&maxIdleTimeMS=5000&waitQueueTimeoutMS=250',
    ],
  ])('%s', (_, options) => {
    const uri = `mongodb://127.0.0.1:1,127.0.0.1:2/?replicaSet=rs${options ? `&${options}` : ''}`
    const expected = pick(new OfficialClient(uri).options)
    expect(pick(new MongoClient(uri).options)).toEqual(expected)
    expect(expected.maxPoolSize).toBe(options ? 7 : 100)
  })
})
