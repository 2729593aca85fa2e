// WorkerPool: reductions on worker threads, parity with the official driver, errors, cancellation,
// crashes, close and process exit.
import { execFile } from 'node:child_process'
import { createRequire } from 'node:module'
import { availableParallelism } from 'node:os'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import type { WorkerOptions } from 'node:worker_threads'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MongoClient as OfficialClient, type Collection as OfficialCollection, type Document } from 'mongodb'
import {
  ErrorCode,
  MongoClient,
  MongoError,
  MongoInvalidArgumentError,
  MongoNetworkError,
  MongoOperationTimeoutError,
  MongoParseError,
  MongoServerError,
  MongoServerSelectionError,
  MongoWorkerPoolError,
  TopologyDescription,
  WorkerPool,
} from 'rumongo'
import { connectBoth, expectIdentical, uniqueDbName, uri, type Drivers } from './setup/helpers.js'
import { objectIdFor, orderDocuments } from './setup/data.js'

const ORDER_COUNT = 3_000
const fixture = (name: string) => new URL(`./fixtures/${name}`, import.meta.url)
const root = fileURLToPath(new URL('..', import.meta.url))

let drivers: Drivers
let dbName: string
let pool: WorkerPool
const orders = (): OfficialCollection => drivers.official.db(dbName).collection('orders')

beforeAll(async () => {
  drivers = await connectBoth()
  dbName = uniqueDbName('pool')
  await orders().insertMany(orderDocuments(ORDER_COUNT))
  pool = await WorkerPool.create({ uri, size: 2 })
})

afterAll(async () => {
  await pool.close()
  await drivers.official.db(dbName).dropDatabase()
  await drivers.close()
})

/** What the same reduction gives over the official driver's `find().toArray()`. */
async function officialReduce<T>(
  filter: Document,
  options: Document,
  reduce: (accumulator: T, document: Document) => T,
  initial: T,
): Promise<T> {
  return (await orders().find(filter, options).toArray()).reduce(reduce, initial)
}

/** A reducer that spends ~2 ms per document, so a reduction of every order runs for seconds. */
const slowCount = (count: number) => {
  const until = Date.now() + 2
  while (Date.now() < until);
  return count + 1
}

const WORKER_START_FAILURE = 'this worker cannot start'

/**
 * Makes the next `count` worker threads started in this process fail while loading, as a
 * replacement can (out of memory, say); the pool reaches `Worker` through the CommonJS exports
 * object patched here. Returns the undo.
 */
function failWorkerStarts(count: number): () => void {
  const threads = createRequire(import.meta.url)(
    'node:worker_threads',
  ) as typeof import('node:worker_threads')
  const RealWorker = threads.Worker
  let failing = count
  threads.Worker = class extends RealWorker {
    constructor(filename: string | URL, options: WorkerOptions = {}) {
      // A thread that fails while it loads, as one out of memory would. (A 2 MB heap did that on
      // Node 20, but on Node 24 a heap that small may abort the whole process instead.)
      if (failing-- > 0) super(`throw new Error('${WORKER_START_FAILURE}')`, { ...options, eval: true })
      else super(filename, options)
    }
  }
  return () => {
    threads.Worker = RealWorker
  }
}

/**
 * A reducer that never returns. Its initial accumulator is a flag on shared memory (see `looping`)
 * that it raises once it loops, holding its worker's thread.
 */
const endless = (looping: Int32Array) => {
  Atomics.store(looping, 0, 1)
  for (;;);
}

const looping = () => new Int32Array(new SharedArrayBuffer(4))

async function untilLooping(flag: Int32Array): Promise<void> {
  while (Atomics.load(flag, 0) === 0) await new Promise((resolve) => setTimeout(resolve, 10))
}

/** Resolves with what `promise` rejects with; fails the test if it resolves. */
async function rejection(promise: Promise<unknown>): Promise<Error & { code?: unknown }> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`)
    },
    (error: Error) => error,
  )
}

describe('reduce', () => {
  it('runs a function reducer and matches the official driver', async () => {
    const filter = { status: 'paid' }
    const options = { projection: { total: 1 }, sort: { _id: 1 } } as const
    const sumAndCount = (accumulator: { sum: number; n: number }, document: Document) => ({
      sum: accumulator.sum + document.total,
      n: accumulator.n + 1,
    })
    const result = await pool.reduce(dbName, 'orders', filter, options, sumAndCount, { sum: 0, n: 0 })
    expect(result.n).toBe(ORDER_COUNT / 3)
    expectIdentical(result, await officialReduce(filter, options, sumAndCount, { sum: 0, n: 0 }))
  })

  it('runs an ESM module reducer with init, given as a URL', async () => {
    const result = await pool.reduce(dbName, 'orders', {}, { sort: { _id: 1 } }, fixture('by_region.mjs'))
    const expected = await officialReduce<Record<string, { n: number; total: number }>>(
      {},
      { sort: { _id: 1 } },
      (totals, order) => {
        const region = (totals[order.region] ??= { n: 0, total: 0 })
        region.n += 1
        region.total += order.total
        return totals
      },
      {},
    )
    expect(Object.keys(result as object).sort()).toEqual(['apac', 'eu', 'latam', 'us'])
    expectIdentical(result, expected)
  })

  it('runs a CommonJS module reducer given as an absolute path', async () => {
    const count = await pool.reduce(
      dbName,
      'orders',
      { region: 'eu' },
      {},
      fileURLToPath(fixture('count.cjs')),
      0,
    )
    expect(count).toBe(await orders().countDocuments({ region: 'eu' }))
    expect(count).toBe(ORDER_COUNT / 4)
  })

  it('sends filter values with their BSON types and honours find options', async () => {
    const ids = [objectIdFor(100_010), objectIdFor(100_011), objectIdFor(100_500), objectIdFor(100_999)]
    const filter = { _id: { $in: ids }, at: { $gte: new Date(Date.UTC(2025, 0, 1)) } }
    const options = { sort: { n: -1 }, limit: 3, projection: { n: 1 } } as const
    const collect = (list: string[], document: Document) => [
      ...list,
      `${document._id.toHexString()}:${document.n}`,
    ]
    const result = await pool.reduce(dbName, 'orders', filter, options, collect, [] as string[])
    expect(result).toHaveLength(3)
    expect(result).toEqual(await officialReduce(filter, options, collect, [] as string[]))
  })

  it('accepts what find accepts: options left undefined, no options, no filter', async () => {
    const count = (n: number) => n + 1
    const undefinedOptions = { limit: undefined, skip: undefined, sort: undefined, projection: undefined }
    const direct = await drivers.rumongo
      .db(dbName)
      .collection('orders')
      .find({ status: 'paid' }, undefinedOptions)
    expect(await pool.reduce(dbName, 'orders', { status: 'paid' }, undefinedOptions, count, 0)).toBe(
      direct.length,
    )
    expect(await pool.reduce(dbName, 'orders', undefined as never, undefined as never, count, 0)).toBe(
      ORDER_COUNT,
    )
  })

  it('awaits a reducer that returns a promise', async () => {
    const count = await pool.reduce(
      dbName,
      'orders',
      { status: 'refunded' },
      {},
      async (n: number) => n + 1,
      0,
    )
    expect(count).toBe(ORDER_COUNT / 3)
  })

  it('spreads concurrent calls over the least busy workers of a pool larger than the cores', async () => {
    const size = availableParallelism() + 2
    const big = await WorkerPool.create({ uri, size })
    try {
      expect(big.size).toBe(size)
      const results = (await Promise.all(
        Array.from({ length: size }, () =>
          big.reduce(dbName, 'orders', { region: 'us' }, {}, fixture('thread.mjs')),
        ),
      )) as { n: number; threadId: number }[]
      for (const result of results) expect(result.n).toBe(ORDER_COUNT / 4)
      expect(new Set(results.map((result) => result.threadId)).size).toBe(size)
    } finally {
      await big.close()
    }
  })

  it('sends a call to the least busy worker, not to the next one in turn', async () => {
    const two = await WorkerPool.create({ uri, size: 2, concurrentTasksPerWorker: 2 })
    try {
      const controller = new AbortController()
      const busy = rejection(two.reduce(dbName, 'orders', {}, { signal: controller.signal }, slowCount, 0))
      const reduceThread = async () =>
        ((await two.reduce(dbName, 'orders', { n: 1 }, {}, fixture('thread.mjs'))) as { threadId: number })
          .threadId
      // Both go to the idle worker; taking turns would send the second one beside the busy call.
      const first = await reduceThread()
      const second = await reduceThread()
      controller.abort()
      await busy
      expect(second).toBe(first)
    } finally {
      await two.close()
    }
  })

  it('starts availableParallelism() - 1 workers by default, at least 1', async () => {
    const sized = await WorkerPool.create({ uri })
    try {
      expect(sized.size).toBe(Math.max(1, availableParallelism() - 1))
    } finally {
      await sized.close()
    }
  })

  it('imports a reducer module once per worker', async () => {
    const single = await WorkerPool.create({ uri, size: 1 })
    try {
      const results = []
      for (let call = 0; call < 3; call++) {
        results.push(await single.reduce(dbName, 'orders', { n: 1 }, {}, fixture('evaluations.mjs')))
      }
      const { threadId } = results[0] as { threadId: number }
      expect(results).toEqual([1, 1, 1].map((evaluations) => ({ evaluations, threadId })))
    } finally {
      await single.close()
    }
  })

  it('runs concurrentTasksPerWorker calls at once on one worker', async () => {
    const shared = await WorkerPool.create({ uri, size: 1, concurrentTasksPerWorker: 3 })
    try {
      const results = (await Promise.all(
        ['eu', 'us', 'apac'].map((region) =>
          shared.reduce(dbName, 'orders', { region }, {}, fixture('thread.mjs')),
        ),
      )) as { n: number; threadId: number }[]
      expect(results.map((result) => result.n)).toEqual([ORDER_COUNT / 4, ORDER_COUNT / 4, ORDER_COUNT / 4])
      expect(new Set(results.map((result) => result.threadId)).size).toBe(1)
    } finally {
      await shared.close()
    }
  })

  it('serves calls one after another with a pool of size 1', async () => {
    const single = await WorkerPool.create({ uri, size: 1 })
    try {
      const results = await Promise.all(
        ['paid', 'pending', 'refunded'].map((status) =>
          single.reduce(dbName, 'orders', { status }, {}, (n: number) => n + 1, 0),
        ),
      )
      expect(results).toEqual([ORDER_COUNT / 3, ORDER_COUNT / 3, ORDER_COUNT / 3])
    } finally {
      await single.close()
    }
  })
})

describe('errors', () => {
  it('passes a reducer error through with its class, message and stack', async () => {
    const error = await rejection(pool.reduce(dbName, 'orders', {}, {}, fixture('throwing.mjs'), 0))
    expect(error).toBeInstanceOf(RangeError)
    expect(error.message).toBe('reducer failed on purpose')
    expect(error.stack).toContain('reducer failed on purpose')
    expect(error.stack).toContain('throwing.mjs')
  })

  it('keeps the name and code of a custom error thrown by a function reducer', async () => {
    const error = await rejection(
      pool.reduce(
        dbName,
        'orders',
        {},
        {},
        () => {
          class QuotaError extends Error {
            code = 'E_QUOTA'
            override name = 'QuotaError'
          }
          throw new QuotaError('over quota')
        },
        0,
      ),
    )
    expect(error.name).toBe('QuotaError')
    expect(error.message).toBe('over quota')
    expect(error.code).toBe('E_QUOTA')
    expect(error.stack).toContain('QuotaError: over quota')
  })

  it('explains that closures do not travel', async () => {
    const threshold = 10
    const error = await rejection(
      pool.reduce(
        dbName,
        'orders',
        {},
        {},
        (n: number, order: Document) => n + (order.total > threshold ? 1 : 0),
        0,
      ),
    )
    expect(error).toBeInstanceOf(ReferenceError)
    expect(error.message).toMatch(/threshold is not defined/)
    expect(error.message).toMatch(/variables they close over do not travel/)
  })

  it('keeps the class, code and codeName of a server error', async () => {
    const filter = { n: { $bogusOperator: 1 } }
    const expected = await rejection(orders().find(filter).toArray())
    const error = await rejection(pool.reduce(dbName, 'orders', filter, {}, (n: number) => n + 1, 0))
    expect(error).toBeInstanceOf(MongoServerError)
    expect(error.code).toBe(expected.code)
    expect((error as MongoServerError).codeName).toBe((expected as unknown as MongoServerError).codeName)
    expect(error.message).toBe(expected.message)
  })

  it.each(['networkTimeout', 'network', 'server', 'serverWithTextCode', 'pool'])(
    'rebuilds a rumongo error (%s) with its class, code, codeName, labels and cause',
    async (kind) => {
      const { makeError } = (await import(fixture('mongo_errors.mjs').href)) as {
        makeError: Record<string, () => MongoError>
      }
      const expected = makeError[kind]!()
      const error = (await rejection(
        pool.reduce(dbName, 'orders', { n: 1 }, {}, fixture('mongo_errors.mjs'), kind),
      )) as MongoError
      expect(error).toBeInstanceOf(expected.constructor)
      expect(Object.getPrototypeOf(error)).toBe(Object.getPrototypeOf(expected))
      expect(error.name).toBe(expected.name)
      expect(error.message).toBe(expected.message)
      expect(error.code).toBe(expected.code)
      expect((error as MongoServerError).codeName).toBe((expected as MongoServerError).codeName)
      expect(error.errorLabels).toEqual(expected.errorLabels)
      expect(error.stack).toContain('mongo_errors.mjs')
      if (expected.cause === undefined) expect(error.cause).toBeUndefined()
      else expect(error.cause).toEqual(expected.cause)
    },
  )

  it('rejects an option rumongo does not support with a typed error from the worker', async () => {
    const error = await rejection(
      pool.reduce(dbName, 'orders', {}, { tailable: true } as never, (n: number) => n + 1, 0),
    )
    expect(error).toBeInstanceOf(MongoInvalidArgumentError)
    expect(error.code).toBe(ErrorCode.InvalidArgument)
  })

  it('rejects a module without a reduce export', async () => {
    const error = await rejection(pool.reduce(dbName, 'orders', {}, {}, fixture('no_reduce.mjs'), 0))
    expect(error).toBeInstanceOf(MongoInvalidArgumentError)
    expect(error.message).toMatch(/does not export a reduce function/)
  })

  it('rejects an accumulator that cannot cross threads', async () => {
    const error = await rejection(pool.reduce<unknown>(dbName, 'orders', { n: 1 }, {}, () => () => 1, 0))
    expect(error).toBeInstanceOf(TypeError)
    expect(error.message).toMatch(/accumulator cannot be sent back to the main thread/)
  })

  it.each([
    ['an empty database name', () => pool.reduce('', 'orders', {}, {}, (n: number) => n, 0)],
    ['a missing collection name', () => pool.reduce(dbName, undefined as never, {}, {}, (n: number) => n, 0)],
    ['an array filter', () => pool.reduce(dbName, 'orders', [] as never, {}, (n: number) => n, 0)],
    ['a null filter', () => pool.reduce(dbName, 'orders', null as never, {}, (n: number) => n, 0)],
    ['a string as options', () => pool.reduce(dbName, 'orders', {}, 'all' as never, (n: number) => n, 0)],
    ['a number reducer', () => pool.reduce(dbName, 'orders', {}, {}, 42 as never, 0)],
    ['a relative module path', () => pool.reduce(dbName, 'orders', {}, {}, './count.cjs', 0)],
    [
      'an http module URL',
      () => pool.reduce(dbName, 'orders', {}, {}, new URL('https://example.com/r.js'), 0),
    ],
    ['a bound function', () => pool.reduce(dbName, 'orders', {}, {}, ((n: number) => n).bind(null), 0)],
    [
      'a method shorthand',
      () =>
        pool.reduce(
          dbName,
          'orders',
          {},
          {},
          {
            reduce(n: number) {
              return n
            },
          }.reduce,
          0,
        ),
    ],
    ['a negative timeoutMS', () => pool.reduce(dbName, 'orders', {}, { timeoutMS: -1 }, (n: number) => n, 0)],
    [
      'a signal that is not an AbortSignal',
      () => pool.reduce(dbName, 'orders', {}, { signal: 'stop' as never }, (n: number) => n, 0),
    ],
    [
      'an initial accumulator that cannot be cloned',
      () =>
        pool.reduce<unknown>(
          dbName,
          'orders',
          {},
          {},
          (n: unknown) => n,
          () => 1,
        ),
    ],
    ['a negative close timeoutMS', () => pool.close({ timeoutMS: -1 })],
    ['size 0', () => WorkerPool.create({ uri, size: 0 })],
    ['maxQueue 1.5', () => WorkerPool.create({ uri, maxQueue: 1.5 })],
    ['no uri', () => WorkerPool.create({} as never)],
  ])('rejects %s with MongoInvalidArgumentError', async (_, call) => {
    const error = await rejection(call())
    expect(error).toBeInstanceOf(MongoInvalidArgumentError)
    expect(error.code).toBe(ErrorCode.InvalidArgument)
  })

  it('rejects create() with MongoParseError for a bad connection string, before starting workers', async () => {
    const error = await rejection(WorkerPool.create({ uri: 'http://127.0.0.1:27017' }))
    expect(error).toBeInstanceOf(MongoParseError)
    expect(error.code).toBe(ErrorCode.Parse)
  })

  it('rejects create() with the connection error when the server is unreachable, its reason kept', async () => {
    const unreachable = 'mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=300'
    const error = await rejection(WorkerPool.create({ uri: unreachable, size: 1 }))
    expect(error).toBeInstanceOf(MongoServerSelectionError)
    // The reason crosses the worker boundary as the client's own error has it.
    const direct = await rejection(MongoClient.connect(unreachable))
    const { reason } = error as MongoServerSelectionError
    expect(reason).toBeInstanceOf(TopologyDescription)
    expect(reason).toEqual((direct as MongoServerSelectionError).reason)
    const server = reason!.servers.get('127.0.0.1:9')!
    expect(server.error).toBeInstanceOf(MongoNetworkError)
    expect(reason!.error).toBe(server.error)
    // What the official driver's reason says of the same server.
    const official = await new OfficialClient(unreachable).connect().catch((failure: unknown) => failure)
    const officialServer = (official as { reason: TopologyDescription }).reason.servers.get('127.0.0.1:9')!
    expect([reason!.type, server.type, server.error!.message]).toEqual([
      (official as { reason: TopologyDescription }).reason.type,
      officialServer.type,
      officialServer.error!.message,
    ])
  })
})

describe('cancellation and limits', () => {
  it('rejects with the abort reason, before or during the call, and keeps serving', async () => {
    const already = AbortSignal.abort(new Error('aborted before'))
    const early = await rejection(pool.reduce(dbName, 'orders', {}, { signal: already }, slowCount, 0))
    expect(early.message).toBe('aborted before')

    const controller = new AbortController()
    const running = pool.reduce(dbName, 'orders', {}, { signal: controller.signal }, slowCount, 0)
    setTimeout(() => controller.abort(), 100)
    const error = await rejection(running)
    expect(error.name).toBe('AbortError')
    expect(await pool.reduce(dbName, 'orders', { status: 'paid' }, {}, (n: number) => n + 1, 0)).toBe(
      ORDER_COUNT / 3,
    )
  })

  it('stops an aborted call in its worker without disturbing a call running beside it', async () => {
    const shared = await WorkerPool.create({ uri, size: 1, concurrentTasksPerWorker: 2 })
    try {
      const reduceThread = (filter: Document) =>
        shared.reduce(dbName, 'orders', filter, {}, fixture('thread.mjs')) as Promise<{
          n: number
          threadId: number
        }>
      const { threadId } = await reduceThread({ n: 1 })
      const controller = new AbortController()
      // Its first batch keeps the thread busy for seconds: the abort must stop it between documents.
      const aborted = rejection(
        shared.reduce(dbName, 'orders', {}, { signal: controller.signal }, slowCount, 0),
      )
      const beside = reduceThread({})
      setTimeout(() => controller.abort(), 200)
      expect((await aborted).name).toBe('AbortError')
      expect(await beside).toEqual({ n: ORDER_COUNT, threadId })
      expect((await reduceThread({ n: 1 })).threadId).toBe(threadId)
    } finally {
      await shared.close()
    }
  })

  it('terminates a worker stuck in a cancelled reducer: re-queues the calls it had not begun, fails the others', async () => {
    const shared = await WorkerPool.create({ uri, size: 1, concurrentTasksPerWorker: 3 })
    try {
      const slowAsyncCount = async (n: number) => {
        await new Promise((resolve) => setTimeout(resolve, 20))
        return n + 1
      }
      const begun = rejection(shared.reduce(dbName, 'orders', {}, {}, slowAsyncCount, 0))
      const controller = new AbortController()
      const flag = looping()
      const stuck = rejection(
        shared.reduce(dbName, 'orders', { n: 1 }, { signal: controller.signal }, endless, flag),
      )
      await untilLooping(flag)
      // Sent while the loop holds the thread: the worker never reads it.
      const notBegun = shared.reduce(dbName, 'orders', { status: 'paid' }, {}, (n: number) => n + 1, 0)
      controller.abort()
      expect((await stuck).name).toBe('AbortError')
      const error = await begun
      expect(error).toBeInstanceOf(MongoWorkerPoolError)
      expect(error.code).toBe(ErrorCode.PoolWorkerExited)
      expect(error.message).toMatch(/a cancelled call's reducer did not return within 1000 ms/)
      expect(await notBegun).toBe(ORDER_COUNT / 3)
      expect(shared.size).toBe(1)
    } finally {
      await shared.close()
    }
  })

  it('times out an endless reducer, replaces its worker and keeps serving', async () => {
    const single = await WorkerPool.create({ uri, size: 1 })
    try {
      const before = (await single.reduce(dbName, 'orders', { n: 1 }, {}, fixture('thread.mjs'))) as {
        threadId: number
      }
      const flag = looping()
      const error = await rejection(
        single.reduce(dbName, 'orders', { n: 1 }, { timeoutMS: 1_000 }, endless, flag),
      )
      // Else the call stopped before its first document: nothing to terminate.
      expect(Atomics.load(flag, 0)).toBe(1)
      expect(error).toBeInstanceOf(MongoOperationTimeoutError)
      expect(error.code).toBe(ErrorCode.OperationTimeout)
      const after = (await single.reduce(dbName, 'orders', { n: 1 }, {}, fixture('thread.mjs'))) as {
        n: number
        threadId: number
      }
      expect(after.n).toBe(1)
      expect(after.threadId).not.toBe(before.threadId)
      expect(single.size).toBe(1)
    } finally {
      await single.close()
    }
  })

  it('rejects only the calls of a worker that exits, and replaces it', async () => {
    const crashing = pool.reduce(dbName, 'orders', {}, {}, () => process.exit(3), 0)
    const healthy = pool.reduce(dbName, 'orders', { status: 'pending' }, {}, (n: number) => n + 1, 0)
    const error = await rejection(crashing)
    expect(error).toBeInstanceOf(MongoWorkerPoolError)
    expect(error.code).toBe(ErrorCode.PoolWorkerExited)
    expect(error.message).toMatch(/exited \(code 3\)/)
    expect(await healthy).toBe(ORDER_COUNT / 3)
    expect(pool.size).toBe(2)
    expect(await pool.reduce(dbName, 'orders', { region: 'eu' }, {}, fixture('count.cjs'), 0)).toBe(
      ORDER_COUNT / 4,
    )
  })

  it('replaces a worker that runs out of its resourceLimits heap', async () => {
    const limited = await WorkerPool.create({ uri, size: 1, resourceLimits: { maxOldGenerationSizeMb: 32 } })
    try {
      const hog = (list: unknown[]) => {
        for (;;) list.push(new Array(10_000).fill(list.length))
      }
      const error = await rejection(limited.reduce(dbName, 'orders', { n: 1 }, {}, hog, []))
      expect(error).toBeInstanceOf(MongoWorkerPoolError)
      expect(error.code).toBe(ErrorCode.PoolWorkerExited)
      expect(await limited.reduce(dbName, 'orders', { n: 1 }, {}, (n: number) => n + 1, 0)).toBe(1)
    } finally {
      await limited.close()
    }
  })

  it('starts a replacement that died before it was ready again, after a delay', async () => {
    const single = await WorkerPool.create({ uri, size: 1 })
    const restore = failWorkerStarts(2)
    try {
      const error = await rejection(single.reduce(dbName, 'orders', { n: 1 }, {}, () => process.exit(3), 0))
      expect(error.code).toBe(ErrorCode.PoolWorkerExited)
      // No call waits meanwhile: the replacement dies twice with nothing to run, and restarts after
      // 100 ms, then 200 ms.
      expect(single.size).toBe(1)
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      expect(single.size).toBe(1)
      expect(await single.reduce(dbName, 'orders', { status: 'paid' }, {}, (n: number) => n + 1, 0)).toBe(
        ORDER_COUNT / 3,
      )
    } finally {
      restore()
      await single.close()
    }
  })

  it('gives up a worker that fails to start 5 times in a row, with a warning and a truthful size', async () => {
    const single = await WorkerPool.create({ uri, size: 1 })
    const restore = failWorkerStarts(Infinity)
    const warnings: Error[] = []
    const onWarning = (warning: Error) => warnings.push(warning)
    process.on('warning', onWarning)
    try {
      await rejection(single.reduce(dbName, 'orders', { n: 1 }, {}, () => process.exit(3), 0))
      const error = await rejection(single.reduce(dbName, 'orders', {}, {}, (n: number) => n + 1, 0))
      expect(error).toBeInstanceOf(MongoWorkerPoolError)
      expect(error.code).toBe(ErrorCode.PoolWorkerExited)
      expect(error.message).toBe('the worker pool has no worker left')
      expect((error.cause as Error).message).toBe(WORKER_START_FAILURE)
      expect(single.size).toBe(0)
      expect(warnings.map((warning) => [warning.name, warning.message])).toEqual([
        [
          'MongoWorkerPoolWarning',
          expect.stringMatching(
            /failed to start 5 times in a row \(.*this worker cannot start.*\); the pool now has 0 workers/,
          ),
        ],
      ])
    } finally {
      process.off('warning', onWarning)
      restore()
      await single.close()
    }
  })

  it('rejects a call past maxQueue with ERR_POOL_QUEUE_FULL', async () => {
    const single = await WorkerPool.create({ uri, size: 1, maxQueue: 1 })
    try {
      const first = single.reduce(dbName, 'orders', { status: 'paid' }, {}, (n: number) => n + 1, 0)
      const second = single.reduce(dbName, 'orders', { status: 'pending' }, {}, (n: number) => n + 1, 0)
      const error = await rejection(single.reduce(dbName, 'orders', {}, {}, (n: number) => n + 1, 0))
      expect(error).toBeInstanceOf(MongoWorkerPoolError)
      expect(error.code).toBe(ErrorCode.PoolQueueFull)
      expect(await Promise.all([first, second])).toEqual([ORDER_COUNT / 3, ORDER_COUNT / 3])
    } finally {
      await single.close()
    }
  })
})

describe('close', () => {
  it('lets running and queued calls finish, then rejects new ones', async () => {
    const closing = await WorkerPool.create({ uri, size: 1 })
    const running = closing.reduce(dbName, 'orders', { status: 'paid' }, {}, (n: number) => n + 1, 0)
    const queued = closing.reduce(dbName, 'orders', { region: 'us' }, {}, (n: number) => n + 1, 0)
    await closing.close()
    expect(await Promise.all([running, queued])).toEqual([ORDER_COUNT / 3, ORDER_COUNT / 4])
    const error = await rejection(closing.reduce(dbName, 'orders', {}, {}, (n: number) => n + 1, 0))
    expect(error).toBeInstanceOf(MongoWorkerPoolError)
    expect(error.code).toBe(ErrorCode.PoolClosed)
  })

  it('with force, rejects running and queued calls', async () => {
    const closing = await WorkerPool.create({ uri, size: 1 })
    const running = rejection(closing.reduce(dbName, 'orders', {}, {}, slowCount, 0))
    const queued = rejection(closing.reduce(dbName, 'orders', {}, {}, slowCount, 0))
    await new Promise((resolve) => setTimeout(resolve, 100))
    await closing.close({ force: true })
    for (const error of await Promise.all([running, queued])) {
      expect(error).toBeInstanceOf(MongoWorkerPoolError)
      expect(error.code).toBe(ErrorCode.PoolClosed)
    }
  })

  it('gives running and queued calls timeoutMS to finish, then rejects them and ends the workers', async () => {
    const closing = await WorkerPool.create({ uri, size: 1 })
    const flag = looping()
    const running = rejection(closing.reduce(dbName, 'orders', { n: 1 }, {}, endless, flag))
    const queued = rejection(closing.reduce(dbName, 'orders', {}, {}, (n: number) => n + 1, 0))
    await untilLooping(flag)
    const started = Date.now()
    await closing.close({ timeoutMS: 300 })
    // 300 ms, then a second for the stuck reducer to return before its worker is terminated.
    expect(Date.now() - started).toBeLessThan(5_000)
    expect(closing.size).toBe(0)
    for (const error of await Promise.all([running, queued])) {
      expect(error).toBeInstanceOf(MongoWorkerPoolError)
      expect(error.code).toBe(ErrorCode.PoolClosed)
      expect(error.message).toMatch(/closed before this call finished \(close timeoutMS: 300 ms\)/)
    }
  })

  it.each([
    [
      'module',
      `import { WorkerPool } from 'rumongo'
       const pool = await WorkerPool.create({ uri: process.env.MONGODB_URI, size: 2 })
       console.log(await pool.reduce(process.env.DB, 'orders', { status: 'paid' }, {}, (n) => n + 1, 0))
       await pool.close()`,
    ],
    [
      'commonjs',
      `const { WorkerPool } = require('rumongo')
       WorkerPool.create({ uri: process.env.MONGODB_URI, size: 2 }).then(async (pool) => {
         console.log(await pool.reduce(process.env.DB, 'orders', { status: 'paid' }, {}, (n) => n + 1, 0))
         await pool.close()
       })`,
    ],
  ] as const)('lets the process exit after close() (%s)', async (type, source) => {
    const { stdout } = await promisify(execFile)(process.execPath, [`--input-type=${type}`, '-e', source], {
      cwd: root,
      env: { ...process.env, MONGODB_URI: uri, DB: dbName },
      // A pool that left a handle open would keep the child alive until this kills it.
      timeout: 15_000,
    })
    expect(stdout.trim()).toBe(String(ORDER_COUNT / 3))
  })
})
