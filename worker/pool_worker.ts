/**
 * A WorkerPool thread (see ts/worker_pool.ts): one rumongo client per thread, reductions run here so
 * that decoding and reducing documents never block the main thread's event loop. Loads rumongo by
 * its package name, so it shares the build (CommonJS) the package resolves to.
 * @module
 */
import { parentPort, workerData } from 'node:worker_threads'
import { BSON, MongoClient, MongoError, MongoInvalidArgumentError, type Document } from 'rumongo'
import type {
  CombineRequest,
  PoolCall,
  PoolWorkerData,
  ReduceRequest,
  ReducerSpec,
  SerializedError,
  SplitRequest,
  WorkerReply,
  WorkerRequest,
} from './protocol.js'

type ReduceFunction = (accumulator: unknown, document: Document) => unknown

interface Reducer {
  reduce: ReduceFunction
  init?: () => unknown
  /** Merges the accumulators of two parts of a split query (modules only). */
  combine?: (left: unknown, right: unknown) => unknown
}

/** Distinct function sources kept compiled; past it the cache restarts (sources built on the fly). */
const MAX_CACHED_FUNCTIONS = 256

/** Appended to a ReferenceError thrown by a function reducer: the usual cause. */
const CLOSURE_HINT =
  ' (function reducers are rebuilt from their source in a worker thread, so variables they close' +
  ' over do not travel: pass values in the initial accumulator, or use a module reducer)'

const port = parentPort!
const { uri, clientOptions } = workerData as PoolWorkerData
const client = new MongoClient(uri, clientOptions)
/** Reducer modules, imported once per worker (a rejected import is retried by the next call). */
const modules = new Map<string, Promise<Reducer>>()
const functions = new Map<string, ReduceFunction>()
const running = new Map<number, RunningCall>()

function post(reply: WorkerReply): void {
  port.postMessage(reply)
}

/** `error` as it crosses threads; `seen` stops a cause chain that loops. */
function serializeError(error: unknown, seen = new Set<unknown>()): SerializedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) }
  seen.add(error)
  const { name, message, stack, cause } = error
  const { code, codeName } = error as { code?: unknown; codeName?: unknown }
  return {
    name,
    message,
    stack,
    ...(typeof code === 'number' || typeof code === 'string' ? { code } : {}),
    ...(typeof codeName === 'string' ? { codeName } : {}),
    ...(error instanceof MongoError ? { errorLabels: error.errorLabels } : {}),
    ...(cause instanceof Error && !seen.has(cause) ? { cause: serializeError(cause, seen) } : {}),
  }
}

function compileFunction(source: string): ReduceFunction {
  let reduce = functions.get(source)
  if (!reduce) {
    // The pool checked that the source compiles; it runs in this thread's global scope.
    reduce = new Function(`return (${source})`)() as ReduceFunction
    if (functions.size >= MAX_CACHED_FUNCTIONS) functions.clear()
    functions.set(source, reduce)
  }
  return reduce
}

async function importReducer(url: string): Promise<Reducer> {
  const loaded = (await import(url)) as Partial<Reducer> & { default?: Partial<Reducer> }
  // A CommonJS module's exports arrive as named exports or only as `default`.
  const { reduce, init, combine } = typeof loaded.reduce === 'function' ? loaded : (loaded.default ?? {})
  if (typeof reduce !== 'function') {
    throw new MongoInvalidArgumentError(`reducer module ${url} does not export a reduce function`)
  }
  for (const [name, value] of Object.entries({ init, combine })) {
    if (value !== undefined && typeof value !== 'function') {
      throw new MongoInvalidArgumentError(`reducer module ${url} exports a ${name} that is not a function`)
    }
  }
  return { reduce, init, combine }
}

function loadReducer(spec: ReducerSpec): Reducer | Promise<Reducer> {
  if (spec.kind === 'function') return { reduce: compileFunction(spec.source) }
  let loaded = modules.get(spec.url)
  if (!loaded) {
    loaded = importReducer(spec.url)
    modules.set(spec.url, loaded)
    loaded.catch(() => modules.delete(spec.url))
  }
  return loaded
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function'
}

/** Why a call stopped early: the pool cancelled it (abort, timeout) or is closing. */
const STOPPED = new Error('the call was cancelled')

/** A call this worker runs, and its way to stop: the pool cancels it, or the worker closes. */
class RunningCall {
  /** Set to 1 by the pool (or by stop()): shared memory, so a reducer looping through a batch sees it. */
  readonly #stopFlag: Int32Array
  /** Rejects the one promise the call awaits, if any, when it stops. */
  #interrupt: ((reason: unknown) => void) | undefined
  /** Settles once its cursor is closed: a stopped call answers before that. */
  cursorClosed: Promise<void> = Promise.resolve()
  /** Settles once the call has answered and its cursor is closed. */
  done: Promise<void> = Promise.resolve()

  constructor(stopFlag: Int32Array) {
    this.#stopFlag = stopFlag
  }

  get stopped(): boolean {
    return Atomics.load(this.#stopFlag, 0) === 1
  }

  stop(): void {
    Atomics.store(this.#stopFlag, 0, 1)
    this.#interrupt?.(STOPPED)
  }

  throwIfStopped(): void {
    if (this.stopped) throw STOPPED
  }

  /**
   * `value` once it settles, or a rejection as soon as the call stops: a pending getMore or a
   * reducer promise that never settles does not hold the call (one await at a time per call).
   */
  async unlessStopped<T>(value: T | PromiseLike<T>): Promise<T> {
    this.throwIfStopped()
    try {
      return await new Promise<T>((resolve, reject) => {
        this.#interrupt = reject
        Promise.resolve(value).then(resolve, reject)
      })
    } finally {
      this.#interrupt = undefined
    }
  }
}

/** The request's query, with its values' exact BSON types. */
function decodeQuery(request: ReduceRequest | SplitRequest): { filter: Document; options: Document } {
  // Numbers keep their BSON type in the filter (Int32, Double, Long), as the caller sent them;
  // options are plain numbers, which their validation expects.
  const { filter } = BSON.deserialize(request.filter, { promoteValues: false })
  const { options } = BSON.deserialize(request.options, { promoteLongs: false })
  return { filter, options }
}

async function runReduce(request: ReduceRequest, call: RunningCall): Promise<unknown> {
  const { reduce, init } = await call.unlessStopped(loadReducer(request.reducer))
  const { filter, options } = decodeQuery(request)
  let accumulator = request.hasInitial ? request.initial : await call.unlessStopped(init?.())
  const cursor = client.db(request.db).collection(request.collection).find(filter, options)
  try {
    while (await call.unlessStopped(cursor.hasNext())) {
      for (const document of cursor.readBufferedDocuments()) {
        call.throwIfStopped()
        accumulator = reduce(accumulator, document)
        if (isThenable(accumulator)) accumulator = await call.unlessStopped(accumulator)
      }
    }
  } finally {
    // Also after a stop, which answers without waiting: the close first waits for a getMore in
    // flight, then kills the server cursor.
    const closed = cursor.close()
    call.cursorClosed = closed.catch(() => {})
    if (!call.stopped) await closed
  }
  return accumulator
}

/**
 * Range operators only compare an `_id` with values of its own BSON type bracket (a number with
 * numbers, a string with strings, ...).
 */
function typeBracket(value: unknown): string {
  const bsonType = (value as { _bsontype?: string } | null)?._bsontype
  if (typeof value === 'number' || ['Int32', 'Double', 'Long', 'Decimal128'].includes(bsonType ?? '')) {
    return 'number'
  }
  if (bsonType === 'BSONSymbol') return 'string'
  if (value instanceof Date) return 'date'
  return bsonType ?? (value === null ? 'null' : typeof value)
}

/**
 * Splits a query into at most `parts` queries of about equal size by `_id` ranges, bounded by the
 * `_id`s found at even steps through its results sorted by `_id` (count, then one skip query per
 * bound: FerretDB has no $bucketAuto). Part i matches `_id >= bound(i)` and not `_id >= bound(i+1)`:
 * with bounds of one type bracket (others are dropped), each document falls in exactly one part,
 * whatever the types of the `_id`s (those of other brackets fall in the first part).
 */
async function splitQuery(request: SplitRequest, call: RunningCall): Promise<Uint8Array[]> {
  // Checked before any part runs.
  await loadCombine(request.reducer, call)
  const { filter, options } = decodeQuery(request)
  const collection = client.db(request.db).collection(request.collection)
  const count = await call.unlessStopped(collection.countDocuments(filter, options))
  const steps = new Set(
    Array.from({ length: request.parts - 1 }, (_, index) =>
      Math.floor(((index + 1) * count) / request.parts),
    ),
  )
  const boundOptions = {
    ...options,
    projection: { _id: 1 },
    sort: { _id: 1 } as const,
    promoteValues: false,
    raw: false,
  }
  const found = await call.unlessStopped(
    Promise.all(
      [...steps]
        .filter((skip) => skip > 0)
        .map((skip) => collection.findOne(filter, { ...boundOptions, skip })),
    ),
  )
  const ids = found.flatMap((document) => (document ? [document._id as unknown] : []))
  const bounds = ids.filter((id) => typeBracket(id) === typeBracket(ids[0]))
  if (bounds.length === 0) return [request.filter]
  // Part i runs from bound i - 1 (none for the first part) to bound i (none for the last).
  return [undefined, ...bounds].map((lower, index) => {
    const upper = bounds[index]
    const range = {
      ...(lower === undefined ? {} : { $gte: lower }),
      ...(upper === undefined ? {} : { $not: { $gte: upper } }),
    }
    return BSON.serialize({ filter: { $and: [filter, { _id: range }] } })
  })
}

/** The reducer module's `combine`, which a split query needs. */
async function loadCombine(spec: ReducerSpec, call: RunningCall): Promise<NonNullable<Reducer['combine']>> {
  const { combine } = await call.unlessStopped(loadReducer(spec))
  if (!combine) {
    const source = spec.kind === 'module' ? `module ${spec.url}` : 'function'
    throw new MongoInvalidArgumentError(
      `split needs a reducer module that exports combine(a, b); ${source} does not`,
    )
  }
  return combine
}

async function combineParts(request: CombineRequest, call: RunningCall): Promise<unknown> {
  const combine = await loadCombine(request.reducer, call)
  let [accumulator, ...rest] = request.accumulators
  for (const next of rest) {
    accumulator = combine(accumulator, next)
    if (isThenable(accumulator)) accumulator = await call.unlessStopped(accumulator)
  }
  return accumulator
}

function runCall(request: PoolCall, call: RunningCall): Promise<unknown> {
  switch (request.type) {
    case 'reduce':
      return runReduce(request, call)
    case 'split':
      return splitQuery(request, call)
    case 'combine':
      return combineParts(request, call)
  }
}

function start(request: PoolCall): void {
  const { id } = request
  post({ type: 'started', id })
  const call = new RunningCall(request.stopFlag)
  running.set(id, call)
  const fail = (error: unknown) => {
    const serialized = serializeError(error)
    if (request.reducer.kind === 'function' && error instanceof ReferenceError)
      serialized.message += CLOSURE_HINT
    post({ type: 'error', id, error: serialized })
  }
  call.done = runCall(request, call)
    .then((value) => {
      try {
        post({ type: 'result', id, value })
      } catch (error) {
        // Not structured-cloneable (a function, a class instance with private state, ...).
        fail(new TypeError(`the accumulator cannot be sent back to the main thread: ${String(error)}`))
      }
    }, fail)
    .then(() => call.cursorClosed)
    .finally(() => running.delete(id))
}

/** Stops running reductions, closes the client, and lets the thread end. */
async function close(): Promise<void> {
  for (const call of running.values()) call.stop()
  await Promise.all([...running.values()].map((call) => call.done))
  try {
    await client.close()
  } finally {
    port.close()
  }
}

port.on('message', (request: WorkerRequest) => {
  if (request.type === 'cancel') running.get(request.id)?.stop()
  else if (request.type !== 'close') start(request)
  else {
    // A failed client close has no one left to report to: the pool is shutting this thread down.
    close().catch(() => {})
  }
})

client.connect().then(
  () => post({ type: 'ready' }),
  (error: unknown) => post({ type: 'startupError', error: serializeError(error) }),
)
