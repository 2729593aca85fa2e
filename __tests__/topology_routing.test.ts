// Both drivers on the same fake replica set and mongos (__tests__/setup/topology.ts): which member
// serves each read for every read preference mode with tags and maxStalenessSeconds (and the
// `$readPreference` it receives), a direct connection to a secondary, failover with a read in
// flight and with the client idle, a dead mongos, and the network error a read gets without
// retries. The official driver is the oracle; each case also writes out what it does, so that a
// comparison cannot pass on nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { setTimeout as sleep } from 'node:timers/promises'
import * as official from 'mongodb'
import * as rumongo from 'rumongo'
import type { Document } from 'bson'
import { CLOSE_CONNECTION } from './setup/wire_server.js'
import { startMongos, startReplicaSet, type FakeServer, type ReplicaSet } from './setup/topology.js'

type Driver = typeof official

/** Waits until `condition()` holds (a fake server received a command), failing after 10 s. */
async function until(condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 10_000) throw new Error('condition not met within 10 s')
    await sleep(10)
  }
}

/** What a test compares of an error: its class, message and labels. */
function describeError(error: unknown) {
  const { name, message, errorLabels } = error as official.MongoError
  return { name, message, errorLabels }
}

describe('read preference routing on a replica set', () => {
  // 0: the primary; 1 and 2: secondaries, 2 five minutes behind (stale for maxStalenessSeconds=90).
  let rs: ReplicaSet
  beforeAll(async () => {
    rs = await startReplicaSet({
      members: [
        { tags: { dc: 'ny' } },
        { tags: { dc: 'ny', rack: '1' } },
        { tags: { dc: 'sf' }, lagSeconds: 300 },
      ],
    })
  })
  afterAll(async () => {
    for (const member of rs.members) await member.stop()
  })

  interface Case {
    /** Appended to the connection string. */
    uri?: string
    client?: (driver: Driver) => object
    /** The members that serve the reads (indexes), as the official driver routes them. */
    members: number[]
    /** The `$readPreference` the serving members receive (absent for a primary read). */
    wire?: Document
  }

  const CASES: [string, Case][] = [
    ['primary', { uri: 'readPreference=primary', members: [0] }],
    [
      'primaryPreferred',
      { uri: 'readPreference=primaryPreferred', members: [0], wire: { mode: 'primaryPreferred' } },
    ],
    [
      'primaryPreferred with a tag set only a secondary has (the primary is available)',
      {
        uri: 'readPreference=primaryPreferred&readPreferenceTags=dc:sf',
        members: [0],
        wire: { mode: 'primaryPreferred', tags: [{ dc: 'sf' }] },
      },
    ],
    ['secondary', { uri: 'readPreference=secondary', members: [1, 2], wire: { mode: 'secondary' } }],
    [
      'secondary with a tag set',
      {
        uri: 'readPreference=secondary&readPreferenceTags=dc:sf',
        members: [2],
        wire: { mode: 'secondary', tags: [{ dc: 'sf' }] },
      },
    ],
    [
      'secondary with tag sets, the first matching none',
      {
        uri: 'readPreference=secondary&readPreferenceTags=dc:la&readPreferenceTags=dc:ny',
        members: [1],
        wire: { mode: 'secondary', tags: [{ dc: 'la' }, { dc: 'ny' }] },
      },
    ],
    [
      'secondary with maxStalenessSeconds (the lagging member is left out)',
      {
        uri: 'readPreference=secondary&maxStalenessSeconds=90',
        members: [1],
        wire: { mode: 'secondary', maxStalenessSeconds: 90 },
      },
    ],
    [
      'secondaryPreferred',
      { uri: 'readPreference=secondaryPreferred', members: [1, 2], wire: { mode: 'secondaryPreferred' } },
    ],
    [
      'secondaryPreferred with a tag set no secondary has (falls back to the primary)',
      {
        uri: 'readPreference=secondaryPreferred&readPreferenceTags=dc:la',
        members: [0],
        wire: { mode: 'secondaryPreferred', tags: [{ dc: 'la' }] },
      },
    ],
    ['nearest', { uri: 'readPreference=nearest', members: [0, 1, 2], wire: { mode: 'nearest' } }],
    [
      'nearest with a tag set',
      {
        uri: 'readPreference=nearest&readPreferenceTags=dc:ny',
        members: [0, 1],
        wire: { mode: 'nearest', tags: [{ dc: 'ny' }] },
      },
    ],
    [
      'nearest with maxStalenessSeconds and a tag set',
      {
        uri: 'readPreference=nearest&maxStalenessSeconds=90&readPreferenceTags=rack:1',
        members: [1],
        wire: { mode: 'nearest', tags: [{ rack: '1' }], maxStalenessSeconds: 90 },
      },
    ],
    [
      'a ReadPreference with tags, maxStalenessSeconds and hedge in the client options',
      {
        client: (driver) => ({
          readPreference: new driver.ReadPreference('nearest', [{ dc: 'ny' }], {
            maxStalenessSeconds: 90,
            hedge: { enabled: true },
          }),
        }),
        members: [0, 1],
        wire: { mode: 'nearest', tags: [{ dc: 'ny' }], maxStalenessSeconds: 90, hedge: { enabled: true } },
      },
    ],
  ]

  /** The members that served 30 reads through `driver`, and each distinct `$readPreference` they got. */
  async function route(driver: Driver, setup: Case) {
    // A latency window wide enough for every member: a loaded machine must not narrow the choice.
    const client = await driver.MongoClient.connect(
      rs.uri(`localThresholdMS=5000&${setup.uri ?? ''}`),
      setup.client?.(driver),
    )
    const logged = rs.members.map((member) => member.log.length)
    try {
      const members = new Set<number>()
      for (let read = 0; read < 30; read++) {
        const [document] = await client.db('db').collection('items').find({}).toArray()
        members.add(rs.members.findIndex((member) => member.address === document!.served))
      }
      const sent = new Set<string>()
      rs.members.forEach((member, index) => {
        for (const { name, command } of member.log.slice(logged[index])) {
          if (name === 'find') sent.add(JSON.stringify(command.$readPreference ?? null))
        }
      })
      return { members: [...members].sort(), wire: [...sent].map((json) => JSON.parse(json) ?? undefined) }
    } finally {
      await client.close()
    }
  }

  it.each(CASES)('%s: the same members serve, with the same $readPreference', async (_, setup) => {
    const expected = await route(official, setup)
    const actual = await route(rumongo as unknown as Driver, setup)
    expect(expected).toEqual({ members: setup.members, wire: [setup.wire] })
    expect(actual).toEqual(expected)
  })

  /** How `connect()` ends through `driver` with `query`: connected, or the error and its topology. */
  async function connectWith(driver: Driver, uri: string) {
    const client = new driver.MongoClient(uri)
    try {
      await client.connect()
      const [document] = await client.db('db').collection('items').find({}).toArray()
      return { served: rs.members.findIndex((member) => member.address === document!.served) }
    } catch (error) {
      const { name, message, reason } = error as official.MongoServerSelectionError
      // Each member's type, by member (the Rust driver keeps its servers in no particular order).
      const servers = rs.members.map((member) => reason!.servers.get(member.address)?.type)
      return { error: { name, message, topology: reason!.type, servers } }
    } finally {
      await client.close()
    }
  }

  it('no member fits (tags of a stale member only): connect() fails server selection, as the official driver', async () => {
    // The official driver's connect() selects a server for the client's read preference.
    const uri = rs.uri(
      'readPreference=secondary&maxStalenessSeconds=90&readPreferenceTags=dc:sf&serverSelectionTimeoutMS=2000',
    )
    const expected = await connectWith(official, uri)
    expect(expected).toEqual({
      error: {
        name: 'MongoServerSelectionError',
        message: 'Server selection timed out after 2000 ms',
        topology: 'ReplicaSetWithPrimary',
        servers: ['RSPrimary', 'RSSecondary', 'RSSecondary'],
      },
    })
    expect(await connectWith(rumongo as unknown as Driver, uri)).toEqual(expected)
  })

  it('no primary: connect() with readPreference=secondaryPreferred succeeds and reads from a secondary', async () => {
    rs.stepDown()
    try {
      // The official driver's close() waits up to serverSelectionTimeoutMS for a primary to end
      // its sessions on.
      const uri = rs.uri(
        'readPreference=secondaryPreferred&readPreferenceTags=rack:1&serverSelectionTimeoutMS=2000',
      )
      const expected = await connectWith(official, uri)
      expect(expected).toEqual({ served: 1 })
      expect(await connectWith(rumongo as unknown as Driver, uri)).toEqual(expected)
    } finally {
      rs.elect(rs.members[0]!)
    }
  })
})

describe('a direct connection to a secondary', () => {
  let rs: ReplicaSet
  beforeAll(async () => {
    rs = await startReplicaSet({ members: [{}, {}] })
  })
  afterAll(async () => {
    for (const member of rs.members) await member.stop()
  })

  /** Which member served a read through `driver` with `query`, and the `$readPreference` it got. */
  async function read(driver: Driver, query: string) {
    const secondary = rs.members[1]!
    const client = await driver.MongoClient.connect(
      `mongodb://${secondary.address}/?serverSelectionTimeoutMS=10000&${query}`,
    )
    try {
      const [document] = await client.db('db').collection('items').find({}).toArray()
      const member = rs.members.find((each) => each.address === document!.served)!
      return {
        served: member === secondary ? 'secondary' : 'primary',
        wire: member.log.at(-1)!.command.$readPreference,
      }
    } finally {
      await client.close()
    }
  }

  it.each([
    ['directConnection=true', { served: 'secondary', wire: { mode: 'primaryPreferred' } }],
    ['directConnection=true&readPreference=secondary', { served: 'secondary', wire: { mode: 'secondary' } }],
    [
      'directConnection=false (discovers the set, reads from the primary)',
      { served: 'primary', wire: undefined },
    ],
  ])('%s', async (query, outcome) => {
    const uri = query.split(' ')[0]!
    const expected = await read(official, uri)
    expect(expected).toEqual(outcome)
    expect(await read(rumongo as unknown as Driver, uri)).toEqual(expected)
  })
})

describe('failover', () => {
  /** A replica set of two whose first member, the primary, holds every find until `release()`. */
  async function holdingReplicaSet() {
    let release = () => {}
    const held = new Promise<null>((resolve) => (release = () => resolve(null)))
    let holding = false
    const rs = await startReplicaSet({
      members: [{}, {}],
      answer: (command, server) => (holding && command.find && server === rs.members[0] ? held : undefined),
    })
    return {
      rs,
      hold: () => (holding = true),
      release,
      async stop() {
        release()
        for (const member of rs.members) if (!member.stopped) await member.stop()
      },
    }
  }

  /**
   * A read in flight on the primary when it dies and the other member is elected: what it returns
   * (or how it fails), and the finds each member received.
   */
  async function readInFlight(driver: Driver, query: string) {
    const { rs, hold, stop } = await holdingReplicaSet()
    const client = await driver.MongoClient.connect(rs.uri(query))
    try {
      const items = client.db('db').collection('items')
      await items.find({}).toArray() // the pool has a connection to the primary
      hold()
      const read = items.find({}).toArray()
      await until(() => rs.members[0]!.received('find').length === 2)
      rs.elect(rs.members[1]!)
      const dead = rs.members[0]!.address
      await rs.members[0]!.stop()
      const outcome = await read.then(
        ([document]) => ({ served: document!.served === dead ? 'old primary' : 'new primary' }),
        (error: unknown) => ({ error: describeError(error) }),
      )
      return { outcome, finds: rs.members.map((member) => member.received('find').length), dead }
    } finally {
      await client.close()
      await stop()
    }
  }

  it('a read in flight when the primary dies is retried on the new primary', async () => {
    const expected = await readInFlight(official, '')
    expect(expected).toMatchObject({ outcome: { served: 'new primary' }, finds: [2, 1] })
    const actual = await readInFlight(rumongo as unknown as Driver, '')
    expect(actual).toMatchObject({ outcome: expected.outcome, finds: expected.finds })
  })

  it('without retryReads it fails with a network error naming the server, with the labels of the official driver', async () => {
    const failure = { name: 'MongoNetworkError', errorLabels: ['RetryableWriteError', 'ResetPool'] }
    const expected = await readInFlight(official, 'retryReads=false')
    expect(expected.outcome).toEqual({
      error: { ...failure, message: `connection 1 to ${expected.dead} closed` },
    })
    expect(expected.finds).toEqual([2, 0])
    const actual = await readInFlight(rumongo as unknown as Driver, 'retryReads=false')
    expect(actual.outcome).toEqual({
      error: { ...failure, message: `connection 1 to ${actual.dead} closed` },
    })
    expect(actual.finds).toEqual(expected.finds)
  })

  /** The primary dies while the client is idle and the other member is elected; then one read. */
  async function readAfterIdleFailover(driver: Driver) {
    const rs = await startReplicaSet({ members: [{}, {}] })
    const primaries = new Set<string>()
    const client = new driver.MongoClient(rs.uri())
    client.on('serverDescriptionChanged', (event) => {
      if (event.newDescription.type === 'RSPrimary') primaries.add(event.address)
    })
    try {
      await client.connect()
      const items = client.db('db').collection('items')
      await items.find({}).toArray()
      rs.elect(rs.members[1]!)
      await rs.members[0]!.stop()
      const [document] = await items.find({}).toArray()
      return {
        served: rs.members.findIndex((member) => member.address === document!.served),
        // The primaries the client saw, in the order of the members.
        primaries: rs.members.map((member) => primaries.has(member.address)),
      }
    } finally {
      await client.close()
      await rs.members[1]!.stop()
    }
  }

  /**
   * The primary steps down with the client idle; a primary read starts, and a moment later the
   * other member is elected: which member serves the read.
   */
  async function readDuringElection(driver: Driver) {
    const rs = await startReplicaSet({ members: [{}, {}] })
    const client = await driver.MongoClient.connect(rs.uri())
    try {
      const items = client.db('db').collection('items')
      await items.find({}).toArray()
      rs.stepDown()
      const read = items.find({}).toArray()
      await sleep(300)
      rs.elect(rs.members[1]!)
      const [document] = await read
      return { served: rs.members.findIndex((member) => member.address === document!.served) }
    } finally {
      await client.close()
      for (const member of rs.members) await member.stop()
    }
  }

  it('a primary read during an election (no primary for a moment) is served by the new primary', async () => {
    const expected = await readDuringElection(official)
    expect(expected).toEqual({ served: 1 })
    expect(await readDuringElection(rumongo as unknown as Driver)).toEqual(expected)
  })

  it('after the primary died while the client was idle, the next read goes to the new primary', async () => {
    const expected = await readAfterIdleFailover(official)
    expect(expected).toEqual({ served: 1, primaries: [true, true] })
    expect(await readAfterIdleFailover(rumongo as unknown as Driver)).toEqual(expected)
  })
})

describe('a hung member', () => {
  /** Primary reads while a secondary answers nothing any more (its monitoring hello included). */
  async function primaryReadsBesideHungSecondary(driver: Driver) {
    const rs = await startReplicaSet({ members: [{}, {}, {}] })
    const client = await driver.MongoClient.connect(rs.uri())
    try {
      const items = client.db('db').collection('items')
      await items.find({}).toArray()
      rs.members[2]!.hang()
      const served = []
      for (let read = 0; read < 5; read++) {
        const [document] = await items.find({}).toArray()
        served.push(rs.members.findIndex((member) => member.address === document!.served))
      }
      return served
    } finally {
      await client.close()
      for (const member of rs.members) await member.stop()
    }
  }

  it('primary reads go on while a secondary hangs', async () => {
    const expected = await primaryReadsBesideHungSecondary(official)
    expect(expected).toEqual([0, 0, 0, 0, 0])
    expect(await primaryReadsBesideHungSecondary(rumongo as unknown as Driver)).toEqual(expected)
  })
})

describe('mongos', () => {
  /** Reads through two mongos after the first one died: which one served each. */
  async function readsPastDeadMongos(driver: Driver) {
    const { servers, uri } = await startMongos(2)
    const client = await driver.MongoClient.connect(uri('localThresholdMS=5000'))
    try {
      const items = client.db('db').collection('items')
      for (let read = 0; read < 10; read++) await items.find({}).toArray()
      const served = (mongos: FakeServer) => mongos.received('find').length
      const before = servers.map(served)
      await servers[0]!.stop()
      const results: string[] = []
      for (let read = 0; read < 10; read++) {
        const [document] = await items.find({}).toArray()
        results.push(document!.served === servers[1]!.address ? 'live' : 'dead')
      }
      return { usedBoth: before.every((count) => count > 0), results }
    } finally {
      await client.close()
      await servers[1]!.stop()
    }
  }

  it('a dead mongos: every read succeeds on the other one', async () => {
    const expected = await readsPastDeadMongos(official)
    expect(expected).toEqual({ usedBoth: true, results: Array(10).fill('live') })
    expect(await readsPastDeadMongos(rumongo as unknown as Driver)).toEqual(expected)
  })

  /** A find a mongos answers by closing the connection, through `driver` with `query`. */
  async function closedRead(driver: Driver, query: string) {
    const { servers, uri } = await startMongos(1, {
      answer: (command) => (command.find ? CLOSE_CONNECTION : undefined),
    })
    const client = await driver.MongoClient.connect(uri(query))
    try {
      const error = await client
        .db('db')
        .collection('items')
        .find({})
        .toArray()
        .catch((failure: unknown) => failure)
      return {
        error: describeError(error),
        finds: servers[0]!.received('find').length,
        address: servers[0]!.address,
      }
    } finally {
      await client.close()
      await servers[0]!.stop()
    }
  }

  it.each([
    ['retryReads=false', 1, 1],
    ['retryReads=true (the retry fails too)', 2, 2],
  ])(
    'a connection the mongos closes, %s: the network error of the official driver',
    async (query, finds, connection) => {
      const uri = query.split(' ')[0]!
      const expected = await closedRead(official, uri)
      expect(expected).toEqual({
        error: {
          name: 'MongoNetworkError',
          message: `connection ${connection} to ${expected.address} closed`,
          errorLabels: ['RetryableWriteError', 'ResetPool'],
        },
        finds,
        address: expected.address,
      })
      const actual = await closedRead(rumongo as unknown as Driver, uri)
      expect(actual).toEqual({
        ...expected,
        error: { ...expected.error, message: `connection ${connection} to ${actual.address} closed` },
        address: actual.address,
      })
    },
  )
})
