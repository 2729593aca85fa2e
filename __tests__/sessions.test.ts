// Explicit sessions (issue #35): `client.startSession({ causalConsistency, snapshot })` and
// `{ session }` on every read, side by side with the official driver on a fake replica-set primary
// that gives cluster and operation times as a mongod does: the same script run by both drivers
// sends the same `lsid`s, `readConcern`s (`afterClusterTime`, `atClusterTime`) and `$clusterTime`s,
// returns the same values and fails with the same errors; the client's close ends the sessions
// (`endSessions`). A session of the official driver is refused saying which to use.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Binary, MongoClient as OfficialClient, type Document } from 'mongodb'
import { MongoClient } from 'rumongo'
import { clusterTimeOf, startReplicaPrimary } from './setup/replica_primary.js'
import type { WireServer } from './setup/wire_server.js'
import { uri as embeddedUri } from './setup/helpers.js'

const DOCUMENTS = [
  { _id: 1, a: 'x' },
  { _id: 2, a: 'y' },
]

/**
 * A primary answering the reads of the scripts below from DOCUMENTS; `hold`, when given, is waited
 * for before each answer (a read a test keeps in flight).
 */
function readServer(hold?: (command: Document) => Promise<void>): Promise<WireServer> {
  return startReplicaPrimary({
    async answer(command) {
      await hold?.(command)
      const name = Object.keys(command)[0]!
      const ns = `${command.$db}.${command[name]}`
      if (name === 'find') return { cursor: { id: 0n, ns, firstBatch: DOCUMENTS }, ok: 1 }
      if (name === 'aggregate') {
        const counts = JSON.stringify(command.pipeline).includes('$group')
        const firstBatch = counts ? [{ _id: 1, n: DOCUMENTS.length }] : DOCUMENTS
        return { cursor: { id: 0n, ns, firstBatch }, ok: 1 }
      }
      if (name === 'count') return { n: DOCUMENTS.length, ok: 1 }
      if (name === 'distinct') return { values: DOCUMENTS.map(({ a }) => a), ok: 1 }
      if (name === 'dbStats') return { db: command.$db, collections: 1, ok: 1 }
      return { ok: 1 }
    },
  })
}

/** The commands of the reads a script ran (no handshake, monitoring or `ping`), in order. */
function reads(server: WireServer): Document[] {
  const names = new Set(['find', 'aggregate', 'count', 'distinct', 'dbStats', 'getMore'])
  return server.commands.filter((command) => names.has(Object.keys(command)[0]!))
}

/**
 * What the session fields of a command are, for comparing two drivers' commands. The signature's
 * `keyId` is compared as a number: the official driver sends back the Int64 the server gave as a
 * 32-bit integer (js-bson promoted it), the Rust driver as the Int64 it received.
 */
function sessionFields(command: Document, lsid: Document | undefined) {
  const gossiped = command.$clusterTime
  return {
    command: Object.keys(command)[0],
    lsidIsTheSession: lsid !== undefined && sameId(command.lsid, lsid),
    txnNumber: command.txnNumber,
    readConcern: command.readConcern,
    $clusterTime: gossiped && {
      ...gossiped,
      signature: { ...gossiped.signature, keyId: Number(gossiped.signature.keyId) },
    },
  }
}

/**
 * The session fields of the reads `run` sent, the first read's `$clusterTime` included: both
 * drivers gossip the cluster time of the connection's handshake.
 */
function sessionWire(run: { server: WireServer; outcome: { id: Document } }) {
  return reads(run.server).map((command) => sessionFields(command, run.outcome.id))
}

/** Whether two `lsid`s are the same session's (as decoded by either copy of js-bson). */
function sameId(a: Document | undefined, b: Document): boolean {
  return a?.id instanceof Object && (a.id as Binary).toString('hex') === (b.id as Binary).toString('hex')
}

type AnyClient = MongoClient | OfficialClient

/** One script of reads in one session, run with either driver; what it saw. */
async function causalScript(client: AnyClient) {
  await client.connect()
  const session = client.startSession({ causalConsistency: true })
  const coll = client.db('app').collection('items')
  const results: unknown[] = []
  results.push(await coll.find({}, { session }).toArray())
  results.push(await coll.findOne({ _id: 1 }, { session }))
  results.push(await coll.aggregate([{ $match: {} }], { session }).toArray())
  results.push(await coll.countDocuments({}, { session }))
  results.push(await coll.distinct('a', {}, { session }))
  results.push(await coll.estimatedDocumentCount({ session }))
  results.push(await client.db('app').command({ dbStats: 1 }, { session }))
  const id = session.id as Document
  const times = { operationTime: session.operationTime, clusterTime: session.clusterTime }
  await session.endSession()
  return { id, times, results, hasEnded: session.hasEnded }
}

async function snapshotScript(client: AnyClient) {
  await client.connect()
  const session = client.startSession({ snapshot: true })
  const coll = client.db('app').collection('items')
  await coll.find({}, { session }).toArray()
  await coll.find({ a: 'x' }, { session }).toArray()
  await coll.distinct('a', {}, { session })
  const id = session.id as Document
  await session.endSession()
  return { id, snapshotEnabled: session.snapshotEnabled }
}

/** Runs `script` with a client of each driver on a fresh primary each. */
async function bothDrivers<T>(script: (client: AnyClient) => Promise<T>) {
  const run = async (make: (uri: string) => AnyClient) => {
    const server = await readServer()
    const client = make(server.uri)
    try {
      const outcome = await script(client)
      await client.close()
      return { outcome, server }
    } finally {
      await client.close()
      await server.stop()
    }
  }
  const official = await run((uri) => new OfficialClient(uri))
  const rumongo = await run((uri) => new MongoClient(uri))
  return { official, rumongo }
}

describe('sessions on a replica-set primary, both drivers', () => {
  it('causal consistency: lsid, afterClusterTime and $clusterTime as the official driver sends them', async () => {
    const { official, rumongo } = await bothDrivers(causalScript)
    expect(sessionWire(rumongo)).toEqual(sessionWire(official))
    const wire = (run: typeof official) =>
      reads(run.server).map((command) => sessionFields(command, run.outcome.id))
    // What the official driver sends, spelled out: the first read has no cluster time to wait
    // for; each later one waits for the operationTime of the one before, and gossips the
    // $clusterTime of the last reply.
    const sent = wire(official)
    expect(sent[0]).toMatchObject({ command: 'find', lsidIsTheSession: true, readConcern: undefined })
    expect(sent[1]).toMatchObject({
      command: 'find',
      lsidIsTheSession: true,
      txnNumber: undefined,
      readConcern: { afterClusterTime: clusterTimeOf(2).clusterTime },
      $clusterTime: { ...clusterTimeOf(2), signature: { ...clusterTimeOf(2).signature, keyId: 0 } },
    })
    expect(rumongo.outcome.results).toEqual(official.outcome.results)
    expect(rumongo.outcome.times).toEqual(official.outcome.times)
    expect(rumongo.outcome.times.operationTime).toEqual(clusterTimeOf(8).clusterTime)
    expect(rumongo.outcome.hasEnded).toBe(true)
    // The ended session's server session is ended on the server when the client closes
    // (endSessions). Not compared: the official driver 7.x sent no endSessions to this
    // directly connected fake (not investigated further); rumongo sends the crate's.
    const ended = rumongo.server
      .received('endSessions')
      .flatMap((command) => command.endSessions as Document[])
      .some((id) => sameId(id, rumongo.outcome.id))
    expect(ended).toBe(true)
  })

  it('snapshot: readConcern snapshot, then atClusterTime of the first read, as the official driver', async () => {
    const { official, rumongo } = await bothDrivers(snapshotScript)
    expect(sessionWire(rumongo)).toEqual(sessionWire(official))
    const wire = (run: typeof official) =>
      reads(run.server).map((command) => sessionFields(command, run.outcome.id))
    expect(wire(official).map(({ readConcern }) => readConcern)).toEqual([
      { level: 'snapshot' },
      { level: 'snapshot', atClusterTime: clusterTimeOf(2).clusterTime },
      { level: 'snapshot', atClusterTime: clusterTimeOf(2).clusterTime },
    ])
    expect(rumongo.outcome.snapshotEnabled).toBe(true)
  })

  it('withSession runs the callback in a session and ends it, as the official driver', async () => {
    const { official, rumongo } = await bothDrivers(async (client) => {
      await client.connect()
      let seen: Document | undefined
      const value = await client.withSession(async (session) => {
        seen = session.id as Document
        return client.db('app').collection('items').countDocuments({}, { session })
      })
      return { value, id: seen! }
    })
    expect(rumongo.outcome.value).toBe(official.outcome.value)
    for (const run of [official, rumongo]) {
      const [count] = reads(run.server)
      expect(sameId(count!.lsid, run.outcome.id)).toBe(true)
    }
  })
})

describe('session errors, both drivers', () => {
  let server: WireServer
  let official: OfficialClient
  let rumongo: MongoClient
  beforeAll(async () => {
    server = await readServer()
    official = await new OfficialClient(server.uri).connect()
    rumongo = await new MongoClient(server.uri).connect()
  })
  afterAll(async () => {
    await official.close()
    await rumongo.close()
    await server.stop()
  })

  /** The error `attempt` fails with: class name, message and code. */
  async function failure(attempt: () => unknown) {
    try {
      await attempt()
    } catch (error) {
      const { name, message, code } = error as { name: string; message: string; code?: unknown }
      return { name, message, code }
    }
    throw new Error('expected a failure')
  }

  it('causalConsistency and snapshot together: the official error', async () => {
    const options = { causalConsistency: true, snapshot: true }
    const theirs = await failure(() => official.startSession(options))
    const ours = await failure(() => rumongo.startSession(options))
    expect({ ...ours, code: undefined }).toEqual({ ...theirs, code: undefined })
    expect(ours.code).toBe('ERR_INVALID_ARGUMENT')
  })

  it('a read in an ended session: the official error', async () => {
    const end = async (client: AnyClient) => {
      const session = client.startSession()
      await session.endSession()
      return failure(() => client.db('app').collection('items').find({}, { session }).toArray())
    }
    const theirs = await end(official)
    const ours = await end(rumongo)
    expect({ name: ours.name, message: ours.message }).toEqual({ name: theirs.name, message: theirs.message })
    expect(ours.code).toBe('ERR_EXPIRED_SESSION')
  })

  it("a read in another client's session: the official error", async () => {
    const other = await new MongoClient(server.uri).connect()
    const otherOfficial = await new OfficialClient(server.uri).connect()
    try {
      const theirs = await failure(() =>
        official.db('app').collection('items').find({}, { session: otherOfficial.startSession() }).toArray(),
      )
      const ours = await failure(() =>
        rumongo.db('app').collection('items').find({}, { session: other.startSession() }).toArray(),
      )
      expect({ name: ours.name, message: ours.message }).toEqual({
        name: theirs.name,
        message: theirs.message,
      })
    } finally {
      await other.close()
      await otherOfficial.close()
    }
  })

  it("a session of the official driver is refused, saying to use rumongo's startSession", async () => {
    const session = official.startSession()
    try {
      const coll = rumongo.db('app').collection('items')
      const attempts = [
        () => coll.find({}, { session: session as never }).toArray(),
        () => coll.findOne({}, { session: session as never }),
        () => coll.countDocuments({}, { session: session as never }),
        () => coll.distinct('a', {}, { session: session as never }),
        () => coll.estimatedDocumentCount({ session: session as never }),
        () => coll.aggregate([], { session: session as never }).toArray(),
        () => rumongo.db('app').command({ dbStats: 1 }, { session: session as never }),
      ]
      for (const attempt of attempts) {
        const error = await failure(attempt)
        expect(error.name).toBe('MongoInvalidArgumentError')
        expect(error.code).toBe('ERR_INVALID_ARGUMENT')
        expect(error.message).toContain("rumongo's client.startSession()")
      }
    } finally {
      await session.endSession()
    }
  })

  it('a read inside a transaction of the official driver is refused with the reason', async () => {
    const session = official.startSession()
    session.startTransaction()
    try {
      const error = await failure(() =>
        rumongo
          .db('app')
          .collection('items')
          .find({}, { session: session as never })
          .toArray(),
      )
      expect(error).toMatchObject({ name: 'MongoInvalidArgumentError', code: 'ERR_INVALID_ARGUMENT' })
      expect(error.message).toContain('in a transaction')
    } finally {
      await session.abortTransaction().catch(() => undefined)
      await session.endSession()
    }
  })

  it('transactions are refused on a rumongo session with a typed error', async () => {
    const session = rumongo.startSession()
    try {
      const error = await failure(() => session.startTransaction())
      expect(error).toMatchObject({ name: 'MongoTransactionError', code: 'ERR_TRANSACTION' })
      expect(session.inTransaction()).toBe(false)
    } finally {
      await session.endSession()
    }
  })
})

describe('sessions on the embedded server', () => {
  it("a read in a session sends the session's lsid, on every read path", async () => {
    const client = new MongoClient(embeddedUri, { monitorCommands: true })
    const started: Document[] = []
    client.on('commandStarted', (event) => started.push(event.command))
    await client.connect()
    try {
      const session = client.startSession()
      const coll = client.db('rumongo_sessions').collection('items')
      await coll.find({}, { session }).toArray()
      await coll.findLazy({}, { session })
      await coll.findJson({}, { session })
      await coll.findArrow({}, { session })
      await coll.countDocuments({}, { session })
      const id = session.id
      await session.endSession()
      const reads = started.filter((command) => ['find', 'aggregate'].includes(Object.keys(command)[0]!))
      expect(reads.length).toBe(5)
      for (const command of reads) expect(sameId(command.lsid, id)).toBe(true)
    } finally {
      await client.close()
    }
  })
})

describe('advancing a session and closing its cursors, both drivers', () => {
  /** Advances a new causal session past what the server gave, then reads in it once. */
  async function advancedScript(client: AnyClient) {
    await client.connect()
    const session = client.startSession({ causalConsistency: true })
    session.advanceOperationTime(clusterTimeOf(50).clusterTime)
    session.advanceClusterTime(clusterTimeOf(60))
    // Earlier times change nothing.
    session.advanceOperationTime(clusterTimeOf(40).clusterTime)
    session.advanceClusterTime(clusterTimeOf(30))
    const advanced = { operationTime: session.operationTime, clusterTime: session.clusterTime }
    await client.db('app').collection('items').find({}, { session }).toArray()
    const id = session.id as Document
    await session.endSession()
    return { id, advanced }
  }

  it('advanceOperationTime and advanceClusterTime: the next read waits for and gossips them', async () => {
    const { official, rumongo } = await bothDrivers(advancedScript)
    // Compared whole, the first read's $clusterTime included: the advanced one is later than
    // what either driver saw before it.
    const wire = (run: typeof official) =>
      reads(run.server).map((command) => sessionFields(command, run.outcome.id))
    expect(wire(rumongo)).toEqual(wire(official))
    expect(wire(official)[0]).toMatchObject({
      readConcern: { afterClusterTime: clusterTimeOf(50).clusterTime },
      $clusterTime: { clusterTime: clusterTimeOf(60).clusterTime },
    })
    expect(rumongo.outcome.advanced).toEqual(official.outcome.advanced)
    expect(rumongo.outcome.advanced.clusterTime).toEqual(clusterTimeOf(60))
  })

  it('advances given while a read holds the session: the later time is kept, shown at once and sent next', async () => {
    /** Advances a causal session twice, the later time first, while its first read is held. */
    const run = async (make: (uri: string) => AnyClient) => {
      let arrived!: () => void
      const heldReadArrived = new Promise<void>((resolve) => (arrived = resolve))
      let release!: () => void
      const released = new Promise<void>((resolve) => (release = resolve))
      const server = await readServer(async (command) => {
        if (command.filter?.held !== true) return
        arrived()
        await released
      })
      const client = make(server.uri)
      try {
        await client.connect()
        const session = client.startSession({ causalConsistency: true })
        const coll = client.db('app').collection('items')
        const heldRead = coll.find({ held: true }, { session }).toArray()
        await heldReadArrived
        session.advanceOperationTime(clusterTimeOf(50).clusterTime)
        session.advanceClusterTime(clusterTimeOf(60))
        session.advanceOperationTime(clusterTimeOf(40).clusterTime)
        session.advanceClusterTime(clusterTimeOf(30))
        const whileHeld = { operationTime: session.operationTime, clusterTime: session.clusterTime }
        release()
        await heldRead
        await coll.find({}, { session }).toArray()
        const id = session.id as Document
        await session.endSession()
        return { whileHeld, wire: reads(server).map((command) => sessionFields(command, id)) }
      } finally {
        await client.close()
        await server.stop()
      }
    }
    const official = await run((uri) => new OfficialClient(uri))
    const rumongo = await run((uri) => new MongoClient(uri))
    expect(official.whileHeld).toEqual({
      operationTime: clusterTimeOf(50).clusterTime,
      clusterTime: clusterTimeOf(60),
    })
    expect(rumongo.whileHeld).toEqual(official.whileHeld)
    // The read after the held one waits for operation time 50 and gossips cluster time 60.
    expect(official.wire[1]).toMatchObject({
      readConcern: { afterClusterTime: clusterTimeOf(50).clusterTime },
      $clusterTime: { clusterTime: clusterTimeOf(60).clusterTime },
    })
    expect(rumongo.wire).toEqual(official.wire)
  })

  it('advanceClusterTime refuses what is not a $clusterTime with the official error', async () => {
    const server = await readServer()
    const official = await new OfficialClient(server.uri).connect()
    const rumongo = await new MongoClient(server.uri).connect()
    try {
      const ours = rumongo.startSession()
      const theirs = official.startSession()
      const bad: unknown[] = [
        null,
        5,
        {},
        { clusterTime: 1 },
        { clusterTime: clusterTimeOf(1).clusterTime },
        { clusterTime: clusterTimeOf(1).clusterTime, signature: { hash: 'x', keyId: 0 } },
        { clusterTime: clusterTimeOf(1).clusterTime, signature: { hash: new Binary(Buffer.alloc(20)) } },
      ]
      const failureOf = (attempt: () => void) => {
        try {
          attempt()
        } catch (error) {
          const { name, message, code } = error as { name: string; message: string; code?: unknown }
          return { name, message, code }
        }
        return 'no error'
      }
      for (const value of bad) {
        const expected = failureOf(() => theirs.advanceClusterTime(value as never))
        const got = failureOf(() => ours.advanceClusterTime(value as never))
        expect(got).toEqual({ ...(expected as object), code: 'ERR_INVALID_ARGUMENT' })
      }
      // The official driver takes anything here and fails at a later advance; rumongo refuses it.
      expect(failureOf(() => ours.advanceOperationTime(7 as never))).toMatchObject({
        name: 'MongoInvalidArgumentError',
        code: 'ERR_INVALID_ARGUMENT',
      })
      await ours.endSession()
      await theirs.endSession()
    } finally {
      await official.close()
      await rumongo.close()
      await server.stop()
    }
  })

  it("a session cursor closed early: its killCursors carries the session's lsid", async () => {
    const run = async (make: (uri: string) => AnyClient) => {
      const server = await startReplicaPrimary({
        answer(command) {
          // A cursor that never ends: rumongo's getMore ahead of the reader gets a batch too.
          if (command.find) {
            const ns = `${command.$db}.${command.find}`
            return { cursor: { id: 42n, ns, firstBatch: DOCUMENTS }, ok: 1 }
          }
          if (command.getMore) {
            const ns = `${command.$db}.${command.collection}`
            return { cursor: { id: 42n, ns, nextBatch: DOCUMENTS }, ok: 1 }
          }
          return { ok: 1 }
        },
      })
      const client = make(server.uri)
      try {
        await client.connect()
        const session = client.startSession()
        const cursor = client.db('app').collection('items').find({}, { session, batchSize: 2 })
        await cursor.next()
        await cursor.close()
        const id = session.id as Document
        await session.endSession()
        const [kill] = server.received('killCursors')
        const killed = (kill?.cursors as unknown[] | undefined)?.map((cursorId) => BigInt(String(cursorId)))
        return { killed, lsidIsTheSession: sameId(kill?.lsid, id) }
      } finally {
        await client.close()
        await server.stop()
      }
    }
    const official = await run((uri) => new OfficialClient(uri))
    const rumongo = await run((uri) => new MongoClient(uri))
    expect(official).toEqual({ killed: [42n], lsidIsTheSession: true })
    expect(rumongo).toEqual(official)
  })
})
