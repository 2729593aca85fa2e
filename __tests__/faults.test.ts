// Faults and load: timeouts, a hung, killed or restarted server, retries, concurrency and a short
// soak. Tests that break the server run a private dev server (kill, SIGSTOP, restart); timing
// bounds are generous upper bounds that prove "no hang", never speed targets.
import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { inspect, promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Long, type Document } from 'bson'
import { MongoClient as OfficialClient } from 'mongodb'
import {
  MongoClient,
  MongoCursorExhaustedError,
  MongoClientClosedError,
  MongoError,
  MongoInvalidArgumentError,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoOperationTimeoutError,
  MongoParseError,
  MongoServerError,
  MongoServerSelectionError,
  type Collection,
} from 'rumongo'
// @ts-expect-error: a plain ESM script without types
import { freePort, startDevdb } from '../scripts/devdb.mjs'
import { uniqueDbName, uri } from './setup/helpers.js'
import { startWireServer } from './setup/wire_server.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const NO_HANG_MS = 10_000
const ITEMS = 60

interface Outcome<T> {
  value?: T
  error?: unknown
  /** True when the promise was still pending after `boundMs`. */
  hung: boolean
  elapsed: number
}

/** Settles `promise` or gives up after `boundMs` (a hang), recording which and when. */
async function settle<T>(promise: Promise<T>, boundMs = NO_HANG_MS): Promise<Outcome<T>> {
  const started = Date.now()
  let timer: NodeJS.Timeout | undefined
  const hang = new Promise<Outcome<T>>((resolve) => {
    timer = setTimeout(() => resolve({ hung: true, elapsed: Date.now() - started }), boundMs)
  })
  const settled = promise.then(
    (value) => ({ value, hung: false, elapsed: Date.now() - started }),
    (error: unknown) => ({ error, hung: false, elapsed: Date.now() - started }),
  )
  try {
    return await Promise.race([settled, hang])
  } finally {
    clearTimeout(timer)
  }
}

type ErrorType = new (...args: any[]) => Error

/** Asserts that `promise` rejects within `boundMs` with `type` (or one of `type`); returns the error. */
async function expectRejects(
  promise: Promise<unknown>,
  type: ErrorType | ErrorType[],
  boundMs = NO_HANG_MS,
): Promise<Error> {
  const outcome = await settle(promise, boundMs)
  expect(outcome.hung, `still pending after ${boundMs} ms`).toBe(false)
  const types = Array.isArray(type) ? type : [type]
  const matched = types.some((each) => outcome.error instanceof each)
  expect(
    matched,
    `expected one of ${types.map((each) => each.name)}, got ${inspect(outcome.error ?? outcome.value)}`,
  ).toBe(true)
  expect(outcome.error).toBeInstanceOf(MongoError)
  return outcome.error as Error
}

interface Item {
  _id: number
  i: number
  group: number
}

const items = (): Item[] => Array.from({ length: ITEMS }, (_, i) => ({ _id: i, i, group: i % 4 }))
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
/** `base` with `query` appended to its options. */
const withQuery = (base: string, query: string) => `${base}${base.includes('?') ? '&' : '?'}${query}`

/**
 * Resolves once every thread of process `pid` is stopped. SIGSTOP is not instant: on these 2-vCPU
 * VMs the last of the server's threads stopped up to ~7.5 ms after kill() (10 of 40 starts over
 * 1 ms), long enough for it to answer a find in 2-4 ms, and a test then saw a "stopped" server
 * answer (9 of 60 reads with the official driver, 6 of 60 with rumongo, before this wait).
 */
async function untilStopped(pid: number, boundMs = 5_000) {
  const started = Date.now()
  const stopped = () =>
    readdirSync(`/proc/${pid}/task`).every(
      (task) => readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8').split(') ')[1]?.[0] === 'T',
    )
  while (!stopped()) {
    if (Date.now() - started > boundMs) throw new Error(`process ${pid} did not stop within ${boundMs} ms`)
    await sleep(1)
  }
}

/** Polls `check` until it holds; throws after `boundMs`. */
async function until(check: () => boolean, boundMs = NO_HANG_MS) {
  const started = Date.now()
  while (!check()) {
    if (Date.now() - started > boundMs) throw new Error(`condition not met within ${boundMs} ms`)
    await sleep(5)
  }
}

/** A private dev server with a kept data directory, so it can be killed and restarted. */
async function privateServer() {
  const dir = mkdtempSync(join(tmpdir(), 'rumongo-faults-'))
  let server = await startDevdb({ dir })
  const seed = await OfficialClient.connect(server.uri)
  await seed.db('faults').collection<Item>('items').insertMany(items())
  await seed.close()
  return {
    uri: server.uri as string,
    kill() {
      process.kill(server.pid, 'SIGKILL')
    },
    /** SIGSTOP: the server keeps its sockets open and accepts connections but never answers. */
    async whileStopped<T>(run: () => Promise<T>): Promise<T> {
      process.kill(server.pid, 'SIGSTOP')
      try {
        await untilStopped(server.pid)
        return await run()
      } finally {
        process.kill(server.pid, 'SIGCONT')
      }
    },
    async restart() {
      await server.stop()
      server = await startDevdb({ dir, port: server.port })
    },
    async stop() {
      await server.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

type PrivateServer = Awaited<ReturnType<typeof privateServer>>

/** Runs `test` against a fresh private server, stopped afterwards whatever happens. */
async function withPrivateServer(test: (server: PrivateServer) => Promise<void>) {
  const server = await privateServer()
  try {
    await test(server)
  } finally {
    await server.stop()
  }
}

/** The `faults.items` collection of a new rumongo client. */
function itemsOf(client: MongoClient): Collection<Item> {
  return client.db('faults').collection<Item>('items')
}

describe('timeoutMS on a healthy server', () => {
  const dbName = uniqueDbName('faults')
  let official: OfficialClient

  beforeAll(async () => {
    official = await OfficialClient.connect(uri)
    await official.db(dbName).collection<Item>('items').insertMany(items())
    // Big enough that the server cannot scan it within maxTimeMS: 1.
    await official
      .db(dbName)
      .collection('slow')
      .insertMany(Array.from({ length: 3000 }, (_, i) => ({ i, text: 'x'.repeat(50) })))
  })

  afterAll(async () => {
    await official.db(dbName).dropDatabase()
    await official.close()
  })

  it('returns complete results when the deadline is not reached, on every read operation', async () => {
    const client = await MongoClient.connect(withQuery(uri, 'timeoutMS=30000'))
    try {
      expect(client.timeoutMS).toBe(30_000)
      const coll = client.db(dbName).collection('items')
      const expected = items()
      expect(await coll.find({}, { sort: { _id: 1 }, batchSize: 7 }).toArray()).toEqual(expected)
      expect(
        await coll.find({}, { sort: { _id: 1 }, batchSize: 7, timeoutMS: 20_000, timeoutMode: 'iteration' }),
      ).toEqual(expected)
      expect(await coll.findOne({ _id: 5 }, { timeoutMS: 20_000 })).toEqual(expected[5])
      expect(
        await coll.aggregate([{ $sort: { _id: 1 } }], { batchSize: 5, timeoutMS: 20_000 }).toArray(),
      ).toEqual(expected)
      expect(await coll.countDocuments({ group: 1 }, { timeoutMS: 20_000 })).toBe(ITEMS / 4)
      expect(await coll.estimatedDocumentCount({ timeoutMS: 20_000 })).toBe(ITEMS)
      expect((await coll.distinct('group', {}, { timeoutMS: 20_000 })).sort()).toEqual([0, 1, 2, 3])
      expect((await coll.findLazy({ _id: 3 }, { timeoutMS: 20_000 }))[0]!.i).toBe(3)
    } finally {
      await client.close()
    }
    // The MongoClient option wins over the connection string's.
    const overridden = new MongoClient(withQuery(uri, 'timeoutMS=5'), {
      timeoutMS: 30_000,
    })
    expect(overridden.timeoutMS).toBe(30_000)
    expect(await overridden.db(dbName).collection('items').countDocuments({})).toBe(ITEMS)
    await overridden.close()
  })

  it('validates timeoutMS, timeoutMode and socketTimeoutMS', async () => {
    const client = await MongoClient.connect(uri)
    try {
      const coll = client.db(dbName).collection('items')
      await expectRejects(coll.find({}, { timeoutMS: -1 }).toArray(), MongoInvalidArgumentError)
      await expectRejects(coll.countDocuments({}, { timeoutMS: 1.5 }), MongoInvalidArgumentError)
      expect(() => coll.find({}, { timeoutMS: 100, timeoutMode: 'forever' as never })).toThrow(
        MongoInvalidArgumentError,
      )
      const error = await expectRejects(
        coll.find({}, { timeoutMode: 'iteration' }).toArray(),
        MongoInvalidArgumentError,
      )
      expect(error.message).toMatch(/timeoutMode without setting timeoutMS/)
    } finally {
      await client.close()
    }
    expect(() => new MongoClient(withQuery(uri, 'timeoutMS=soon'))).toThrow(MongoParseError)
    expect(() => new MongoClient(uri, { socketTimeoutMS: -1 })).toThrow(MongoParseError)
    // The Rust driver rejects socketTimeoutMS; rumongo takes it out of the URI and enforces it.
    const withSocketTimeout = await MongoClient.connect(withQuery(uri, 'SocketTimeoutMS=30000'))
    expect(await withSocketTimeout.db(dbName).collection('items').countDocuments({})).toBe(ITEMS)
    await withSocketTimeout.close()
  })

  it('bounds a cursor: one deadline for its lifetime by default, one per read in iteration mode', async () => {
    const client = await MongoClient.connect(uri)
    try {
      const coll = client.db(dbName).collection('items')
      // cursorLifetime: the getMores run after the deadline, so reading on fails.
      const lifetime = coll.find({}, { batchSize: 5, timeoutMS: 2_000 })
      expect(await lifetime.next()).not.toBeNull()
      await sleep(2_500)
      await expectRejects(lifetime.toArray(), MongoOperationTimeoutError)
      // iteration: the same pause between reads is fine, every getMore has its own timeoutMS.
      const iteration = coll.find({}, { batchSize: 5, timeoutMS: 5_000, timeoutMode: 'iteration' })
      const first = await iteration.next()
      await sleep(6_000)
      expect([first, ...(await iteration.toArray())]).toEqual(items())
      expect(await client.openCursorCount()).toBe(0)
    } finally {
      await client.close()
    }
  })

  it("reports the server's MaxTimeMSExpired like the official driver, or as a timeout under timeoutMS", async () => {
    const filter = { text: { $regex: 'never' } }
    const reference = await official
      .db(dbName)
      .collection('slow')
      .find(filter, { maxTimeMS: 1 })
      .toArray()
      .catch((error: Error) => error)
    expect(reference).toBeInstanceOf(Error)
    const client = await MongoClient.connect(uri)
    try {
      const slow = client.db(dbName).collection('slow')
      const error = (await expectRejects(
        slow.find(filter, { maxTimeMS: 1 }).toArray(),
        MongoServerError,
      )) as MongoServerError
      expect([error.code, error.codeName, error.message]).toEqual([
        50,
        'MaxTimeMSExpired',
        (reference as Error).message,
      ])
      const counted = (await expectRejects(
        slow.countDocuments(filter, { maxTimeMS: 1 }),
        MongoServerError,
      )) as MongoServerError
      expect(counted.codeName).toBe('MaxTimeMSExpired')
      // Under a timeoutMS, the official driver reports a server time-out as its own.
      await expectRejects(
        slow.find(filter, { maxTimeMS: 1, timeoutMS: 60_000 }).toArray(),
        MongoOperationTimeoutError,
      )
    } finally {
      await client.close()
    }
  })

  it('completes 200 concurrent finds on a pool of 5 connections with exact results', async () => {
    const client = await MongoClient.connect(uri, { maxPoolSize: 5 })
    try {
      const coll = client.db(dbName).collection('items')
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, n) =>
          coll.find({ group: n % 4 }, { sort: { _id: 1 }, batchSize: 4 + (n % 7) }).toArray(),
        ),
      )
      results.forEach((result, n) => {
        expect(result).toEqual(items().filter((item) => item.group === n % 4))
      })
      expect(await client.openCursorCount()).toBe(0)
    } finally {
      await client.close()
    }
  })
})

describe('a hung server (SIGSTOP)', () => {
  it('socketTimeoutMS fails new operations and open cursors with MongoNetworkTimeoutError', async () => {
    await withPrivateServer(async (server) => {
      const client = await MongoClient.connect(server.uri, { socketTimeoutMS: 500 })
      const coll = itemsOf(client)
      const open = coll.find({}, { batchSize: 5 })
      expect(await open.next()).toEqual(items()[0])
      await server.whileStopped(async () => {
        const error = await expectRejects(coll.find({}).toArray(), MongoNetworkTimeoutError)
        expect(error).toBeInstanceOf(MongoNetworkError)
        await expectRejects(open.toArray(), MongoNetworkTimeoutError)
        await expectRejects(coll.countDocuments({}), MongoNetworkTimeoutError)
        await expectRejects(coll.distinct('group'), MongoNetworkTimeoutError)
      })
      // Once the server answers again, so does the client.
      expect(await coll.find({}, { sort: { _id: 1 } }).toArray()).toEqual(items())
      expect(await client.openCursorCount()).toBe(0)
      await client.close()
    })
  })

  it('timeoutMS fails every read operation and open cursors with MongoOperationTimeoutError', async () => {
    await withPrivateServer(async (server) => {
      const limited = await MongoClient.connect(server.uri, { timeoutMS: 500 })
      const unlimited = await MongoClient.connect(server.uri)
      const open = itemsOf(limited).find({}, { batchSize: 5 })
      expect(await open.next()).toEqual(items()[0])
      await server.whileStopped(async () => {
        const coll = itemsOf(limited)
        const reads: [string, () => Promise<unknown>][] = [
          ['find', () => coll.find({}).toArray()],
          ['findOne', () => coll.findOne({})],
          ['aggregate', () => coll.aggregate([]).toArray()],
          ['countDocuments', () => coll.countDocuments({})],
          ['estimatedDocumentCount', () => coll.estimatedDocumentCount()],
          ['distinct', () => coll.distinct('group')],
          ['an open cursor', () => open.toArray()],
          ['per-operation timeoutMS', () => itemsOf(unlimited).find({}, { timeoutMS: 300 }).toArray()],
          ['a new client', () => MongoClient.connect(server.uri, { timeoutMS: 500 })],
        ]
        for (const [name, read] of reads) {
          const error = await expectRejects(read(), MongoOperationTimeoutError).catch((failure: Error) => {
            throw new Error(`${name}: ${failure.message}`)
          })
          expect(error.message).toMatch(/timeoutMS of \d+ ms expired/)
        }
      })
      expect(await itemsOf(limited).countDocuments({})).toBe(ITEMS)
      await Promise.all([limited.close(), unlimited.close()])
    })
  })

  it('timeoutMS: 0 lifts the client limit: the read waits for the server and completes', async () => {
    await withPrivateServer(async (server) => {
      const client = await MongoClient.connect(server.uri, { timeoutMS: 300 })
      let pending: Promise<Outcome<unknown>> | undefined
      await server.whileStopped(async () => {
        pending = settle(
          itemsOf(client)
            .find({}, { sort: { _id: 1 }, timeoutMS: 0 })
            .toArray(),
        )
        // Well past the client's 300 ms, the read is still waiting (on failure, what it settled with).
        const early = await settle(pending, 1_500)
        expect(early.hung, inspect(early, { depth: 1 })).toBe(true)
      })
      const outcome = await pending!
      expect(outcome.error).toBeUndefined()
      expect(outcome.value).toEqual(items())
      await client.close()
    })
  })
})

describe('a killed or restarted server', () => {
  it('rejects the pending reads of a cursor whose server is killed with MongoNetworkError', async () => {
    await withPrivateServer(async (server) => {
      const client = await MongoClient.connect(server.uri, { serverSelectionTimeoutMS: 2_000 })
      const coll = itemsOf(client)
      const cursor = coll.find({}, { batchSize: 5 })
      const iterated = coll.find({}, { batchSize: 5 })
      expect(await cursor.next()).toEqual(items()[0])
      const seen: unknown[] = []
      const loop = (async () => {
        for await (const item of iterated) {
          seen.push(item)
          if (seen.length === 1) server.kill()
          await sleep(10)
        }
      })()
      // Never a partial result presented as complete: the reads fail.
      await expectRejects(loop, MongoNetworkError)
      expect(seen.length).toBeLessThan(ITEMS)
      // The other cursor's getMore and a new operation fail too, and are not retried. Which error
      // depends on a race inside the driver: once the failure has marked the server unknown it is a
      // server selection error; if the operation checked out a pooled connection first, it is the
      // network error of that dead connection (seen on CI).
      const serverGone = [MongoServerSelectionError, MongoNetworkError]
      await expectRejects(cursor.toArray(), serverGone)
      await expectRejects(coll.countDocuments({}), serverGone)
      expect(await client.openCursorCount()).toBe(0)
      await client.close()
    })
  })

  it('nextBatch() under a killed server: full batches, then a rejection, never null or a short batch', async () => {
    await withPrivateServer(async (server) => {
      const client = await MongoClient.connect(server.uri, { serverSelectionTimeoutMS: 2_000 })
      const cursor = itemsOf(client).find({}, { batchSize: 5 })
      const read: Item[] = []
      read.push(...(await cursor.nextBatch())!)
      server.kill()
      // Batches fetched ahead before the kill may still come, whole; then the read fails.
      let outcome: Outcome<Item[] | null>
      for (
        outcome = await settle(cursor.nextBatch());
        outcome.value;
        outcome = await settle(cursor.nextBatch())
      ) {
        expect(outcome.value).toHaveLength(5)
        read.push(...outcome.value)
      }
      expect(outcome.hung, `still pending after ${NO_HANG_MS} ms`).toBe(false)
      expect(outcome.error, inspect(outcome.value)).toBeInstanceOf(MongoNetworkError)
      expect(read).toEqual(items().slice(0, read.length))
      expect(read.length).toBeLessThan(ITEMS)
      await expectRejects(cursor.nextBatch(), MongoCursorExhaustedError)
      await client.close()
    })
  })

  it('recovers after a restart: the next query succeeds', async () => {
    await withPrivateServer(async (server) => {
      const client = await MongoClient.connect(server.uri, { maxPoolSize: 2 })
      const coll = itemsOf(client)
      await Promise.all([coll.countDocuments({}), coll.countDocuments({})])
      server.kill()
      await server.restart()
      const outcome = await settle(coll.find({}, { sort: { _id: 1 } }).toArray())
      expect(outcome.hung).toBe(false)
      expect(outcome.error).toBeUndefined()
      expect(outcome.value).toEqual(items())
      expect(await coll.countDocuments({})).toBe(ITEMS)
      await client.close()
    })
  })

  // Polling monitoring with a long heartbeat: nothing but the query itself notices the restart, so
  // its first attempt runs on the pool's dead connection.
  const pinnedPool = 'maxPoolSize=1&serverMonitoringMode=poll&heartbeatFrequencyMS=60000'

  it('retries a find whose first attempt hits a dead connection once (retryReads)', async () => {
    await withPrivateServer(async (server) => {
      const retrying = await MongoClient.connect(withQuery(server.uri, pinnedPool))
      const notRetrying = await MongoClient.connect(withQuery(server.uri, `${pinnedPool}&retryReads=false`))
      expect(await itemsOf(retrying).countDocuments({})).toBe(ITEMS)
      expect(await itemsOf(notRetrying).countDocuments({})).toBe(ITEMS)
      server.kill()
      await server.restart()
      const retried = await settle(
        itemsOf(retrying)
          .find({}, { sort: { _id: 1 } })
          .toArray(),
      )
      expect(retried.error).toBeUndefined()
      expect(retried.value).toEqual(items())
      await expectRejects(itemsOf(notRetrying).find({}).toArray(), MongoNetworkError)
      // The failure cleared the pool: the next find runs on a new connection.
      expect(
        await itemsOf(notRetrying)
          .find({}, { sort: { _id: 1 } })
          .toArray(),
      ).toEqual(items())
      await Promise.all([retrying.close(), notRetrying.close()])
    })
  })

  it('never retries a getMore: a cursor of the restarted server fails with MongoNetworkError', async () => {
    await withPrivateServer(async (server) => {
      const client = await MongoClient.connect(withQuery(server.uri, pinnedPool))
      const cursor = itemsOf(client).find({}, { batchSize: 5 })
      expect(await cursor.next()).toEqual(items()[0])
      server.kill()
      await server.restart()
      // A retried getMore would reach the new server and fail with CursorNotFound instead.
      const error = await expectRejects(cursor.toArray(), MongoNetworkError)
      expect(error).not.toBeInstanceOf(MongoServerError)
      expect(await itemsOf(client).countDocuments({})).toBe(ITEMS)
      await client.close()
    })
  })
})

describe('unreachable servers and credentials', () => {
  it('fails within timeoutMS or serverSelectionTimeoutMS, without showing credentials', async () => {
    const port = await freePort()
    const secret = 'Sup3rS3cretTimeout'
    const selection = await expectRejects(
      MongoClient.connect(`mongodb://alice:${secret}@127.0.0.1:${port}/?serverSelectionTimeoutMS=500`),
      MongoServerSelectionError,
      5_000,
    )
    expect(inspect(selection, { depth: 10 })).not.toContain(secret)
    const timeout = await expectRejects(
      MongoClient.connect(
        `mongodb://alice:${secret}@127.0.0.1:${port}/?serverSelectionTimeoutMS=60000&timeoutMS=500`,
      ),
      MongoOperationTimeoutError,
      5_000,
    )
    expect(inspect(timeout, { depth: 10 })).not.toContain(secret)
    let parse: unknown
    try {
      new MongoClient(`mongodb://alice:${secret}@127.0.0.1:${port}/?socketTimeoutMS=-5`)
    } catch (error) {
      parse = error
    }
    expect(parse).toBeInstanceOf(MongoParseError)
    expect(inspect(parse, { depth: 10 })).not.toContain(secret)
  })

  it('shows no password in the errors of reads on a server that went away', async () => {
    await withPrivateServer(async (server) => {
      const uriSecret = 'Ur1S3cretGone'
      const authSecret = 'Auth0pt1onS3cretGone'
      // FerretDB accepts any PLAIN login.
      const url = new URL(withQuery(server.uri, 'authMechanism=PLAIN&authSource=%24external'))
      url.username = 'alice'
      url.password = uriSecret
      const client = await MongoClient.connect(url.href, {
        auth: { username: 'alice', password: authSecret },
        serverSelectionTimeoutMS: 2_000,
      })
      const cursor = itemsOf(client).find({}, { batchSize: 5 })
      expect(await cursor.next()).toEqual(items()[0])
      server.kill()
      const errors = [
        await expectRejects(cursor.toArray(), [MongoNetworkError, MongoServerSelectionError]),
        await expectRejects(itemsOf(client).countDocuments({}), [
          MongoNetworkError,
          MongoServerSelectionError,
        ]),
      ]
      for (const error of errors) {
        const shown = inspect(error, { depth: 10 })
        expect(shown).not.toContain(uriSecret)
        expect(shown).not.toContain(authSecret)
      }
      await client.close()
    })
  })
})

describe('close() while the server never answers (fake wire server)', () => {
  /**
   * A server that answers only finds, with the first batch of a cursor (ids from 77 on), and never
   * anything else.
   */
  const silentServer = () => {
    let cursorId = 77n
    return startWireServer({
      answer: (command) =>
        'find' in command
          ? {
              cursor: {
                id: Long.fromBigInt(cursorId++),
                ns: 'faults.items',
                firstBatch: items().slice(0, 2),
              },
              ok: 1,
            }
          : null,
    })
  }

  /** What a read that was pending when the client closed settled with. */
  const outcomeOf = ({ value, error, hung }: Outcome<unknown>) =>
    hung
      ? 'still pending'
      : error instanceof Error
        ? {
            class: error.constructor.name,
            name: error.name,
            message: error.message,
            code: (error as MongoError).code,
          }
        : { value }

  it('resolves at once, rejects the reads in flight as the official driver does and kills the open cursor', async () => {
    const seen: Record<string, unknown> = {}
    for (const [driver, Client] of [
      ['official', OfficialClient],
      ['rumongo', MongoClient],
    ] as const) {
      const server = await silentServer()
      try {
        const client = await (Client as typeof MongoClient).connect(server.uri)
        const coll = itemsOf(client)
        const cursor = coll.find({}, { batchSize: 2 })
        expect([await cursor.next(), await cursor.next()]).toEqual(items().slice(0, 2))
        const idle = coll.find({}, { batchSize: 2 })
        expect(await idle.next()).toEqual(items()[0])
        const reads = {
          getMore: settle(cursor.next()),
          countDocuments: settle(coll.countDocuments({})),
          estimatedDocumentCount: settle(coll.estimatedDocumentCount()),
          distinct: settle(coll.distinct('group')),
          aggregate: settle(coll.aggregate([]).toArray()),
        }
        // Every read reaches the server (each on a connection of its own, opened now: a fixed
        // 200 ms here was a guess on a loaded machine). rumongo also sends the getMores it reads
        // ahead, one per cursor.
        await until(
          () =>
            server.received('getMore').length >= 1 &&
            server.received('aggregate').length >= 2 &&
            server.received('count').length >= 1 &&
            server.received('distinct').length >= 1,
        )
        const started = Date.now()
        const closed = await settle(client.close())
        const outcomes = Object.fromEntries(
          await Promise.all(Object.entries(reads).map(async ([name, read]) => [name, outcomeOf(await read)])),
        )
        seen[driver] = {
          closeHung: closed.hung,
          closedFast: Date.now() - started < 2_000,
          outcomes,
          killed: [...server.killed].sort(),
        }
      } finally {
        await server.stop()
      }
    }
    const closedError = {
      class: 'MongoClientClosedError',
      name: 'MongoClientClosedError',
      message: 'Operation interrupted because client was closed',
      code: undefined,
    }
    expect(seen.official).toMatchObject({ closeHung: false, closedFast: true })
    expect(Object.values((seen.official as { outcomes: object }).outcomes)).toEqual(
      Array(5).fill(closedError),
    )
    // The official driver kills the idle cursor only; rumongo also kills the one whose getMore was
    // interrupted (the crate kills a dropped cursor), so that it does not linger on the server.
    expect(seen.official).toMatchObject({ killed: [78n] })
    expect(seen.rumongo).toEqual({ ...(seen.official as object), killed: [77n, 78n] })
    expect(MongoClientClosedError.name).toBe(closedError.class)
  })

  it('lets the process exit by itself right after close(), with a read left pending on the server', async () => {
    const server = await silentServer()
    try {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [
          '-e',
          `const { MongoClient } = require('rumongo')
           MongoClient.connect(process.env.URI).then(async (client) => {
             const count = client.db('faults').collection('items').countDocuments({})
             count.catch((error) => console.log(error.name))
             setTimeout(() => client.close().then(() => console.log(Date.now())), 200)
           })`,
        ],
        { cwd: root, env: { ...process.env, URI: server.uri }, timeout: 20_000 },
      )
      const [rejection, closedAt] = stdout.trim().split('\n')
      expect(rejection).toBe('MongoClientClosedError')
      expect(Date.now() - Number(closedAt)).toBeLessThan(3_000)
    } finally {
      await server.stop()
    }
  })
})

describe('retryable reads after a socket timeout (fake wire server)', () => {
  /** The server's answers once it answers: a find or aggregate opens a cursor of 2 + 2 documents. */
  const answered = (command: Document): Document => {
    const name = Object.keys(command)[0]
    const cursor = (id: number, key: string, batch: Item[]) => ({
      cursor: { id: Long.fromNumber(id), ns: 'faults.items', [key]: batch },
      ok: 1,
    })
    // countDocuments' pipeline ends with a $group that counts.
    if (name === 'aggregate' && command.pipeline.some((stage: Document) => '$group' in stage))
      return {
        ...cursor(0, 'firstBatch', []),
        cursor: { id: Long.ZERO, ns: 'faults.items', firstBatch: [{ _id: 1, n: ITEMS }] },
      }
    if (name === 'find' || name === 'aggregate') return cursor(77, 'firstBatch', items().slice(0, 2))
    if (name === 'getMore') return cursor(0, 'nextBatch', items().slice(2, 4))
    if (name === 'count') return { n: ITEMS, ok: 1 }
    if (name === 'distinct') return { values: [0, 1, 2, 3], ok: 1 }
    return { ok: 1 }
  }

  /**
   * Runs `read` with `driver` on a server that leaves the first `failing` command unanswered;
   * returns what the read gave, how many `failing` commands the server got and the command events
   * of `failing`.
   */
  async function attempts(
    Client: typeof MongoClient,
    query: string,
    failing: string,
    read: (client: MongoClient) => Promise<unknown>,
  ) {
    let unanswered = 1
    const server = await startWireServer({
      answer: (command) =>
        Object.keys(command)[0] === failing && unanswered-- > 0 ? null : answered(command),
    })
    const client = new Client(withQuery(server.uri, query), { monitorCommands: true })
    const events: string[] = []
    for (const name of ['commandStarted', 'commandFailed', 'commandSucceeded'] as const)
      client.on(name, (event: { commandName: string; failure?: Error }) => {
        if (event.commandName === failing) events.push(`${name} ${event.failure?.name ?? ''}`.trim())
      })
    try {
      await client.connect()
      const outcome = await settle(read(client))
      const result = outcome.error ? (outcome.error as Error).name : outcome.value
      // A command event of the abandoned attempt may come after the read settled.
      await sleep(100)
      return { result, sent: server.received(failing).length, events }
    } finally {
      await client.close()
      await server.stop()
    }
  }

  const reads: [string, string, (client: MongoClient) => Promise<unknown>][] = [
    ['find', 'find', (client) => itemsOf(client).find({}, { batchSize: 2 }).toArray()],
    ['findOne', 'find', (client) => itemsOf(client).findOne({})],
    ['aggregate', 'aggregate', (client) => itemsOf(client).aggregate([], { batchSize: 2 }).toArray()],
    ['countDocuments', 'aggregate', (client) => itemsOf(client).countDocuments({})],
    ['estimatedDocumentCount', 'count', (client) => itemsOf(client).estimatedDocumentCount()],
    ['distinct', 'distinct', (client) => itemsOf(client).distinct('group')],
    ['a database aggregate', 'aggregate', (client) => client.db('faults').aggregate([]).toArray()],
    [
      'a getMore (never retried)',
      'getMore',
      (client) => itemsOf(client).find({}, { batchSize: 2 }).toArray(),
    ],
    ['a command (never retried)', 'count', (client) => client.db('faults').command({ count: 'items' })],
  ]

  it.each(reads)(
    '%s: retried as by the official driver, with the events of every attempt',
    async (_, failing, read) => {
      const official = await attempts(OfficialClient as never, 'socketTimeoutMS=300', failing, read)
      const ours = await attempts(MongoClient, 'socketTimeoutMS=300', failing, read)
      const retried = !_.includes('never retried')
      expect(official.sent).toBe(retried ? 2 : 1)
      expect(official.events.slice(0, 2)).toEqual([
        'commandStarted',
        'commandFailed MongoNetworkTimeoutError',
      ])
      expect(ours).toEqual(official)
    },
  )

  it('not with retryReads=false; within timeoutMS as the official driver; not once timeoutMS expired', async () => {
    const find = (client: MongoClient) => itemsOf(client).find({}).toArray()
    for (const query of ['socketTimeoutMS=300&retryReads=false', 'socketTimeoutMS=300&timeoutMS=1000']) {
      const official = await attempts(OfficialClient as never, query, 'find', find)
      expect(official.sent, query).toBe(query.includes('retryReads=false') ? 1 : 2)
      expect(await attempts(MongoClient, query, 'find', find), query).toEqual(official)
    }
    // The socket timeout is the operation's: nothing left to retry in. (The official driver, whose
    // two timers race here, sometimes retries past its timeoutMS.)
    expect(await attempts(MongoClient, 'socketTimeoutMS=300&timeoutMS=300', 'find', find)).toEqual({
      result: 'MongoOperationTimeoutError',
      sent: 1,
      events: ['commandStarted', 'commandFailed MongoOperationTimeoutError'],
    })
  })
})

describe('soak', () => {
  /** A 15 s soak, with room for seeding and a loaded machine; the test waits longer than the child may run. */
  const SOAK_TIMEOUT_MS = 90_000

  it(
    'keeps RSS and open cursors flat over a short mixed-read soak',
    async () => {
      // A failing soak exits 1 after printing its report: keep what it printed either way.
      const { stdout, stderr } = await promisify(execFile)(
        process.execPath,
        ['--expose-gc', join(root, 'scripts', 'soak.mjs'), '--seconds', '15', '--uri', uri],
        { cwd: root, timeout: SOAK_TIMEOUT_MS },
      ).catch((error: { stdout?: string; stderr?: string; message: string }) => ({
        stdout: error.stdout ?? '',
        stderr: `${error.message}\n${error.stderr ?? ''}`,
      }))
      const report = JSON.parse(stdout.trim().split('\n').at(-1) || '{}')
      expect(report.ok, `${stdout}\n${stderr}`).toBe(true)
      expect(report.errors).toBe(0)
      expect(report.operations).toBeGreaterThan(30)
      expect(report.openCursorsAtEnd).toBe(0)
      expect(report.serverCursors.probed).toBeGreaterThan(0)
      expect(report.serverCursors.stillOpen).toBe(0)
    },
    SOAK_TIMEOUT_MS + 10_000,
  )
})
