/**
 * A WorkerPool thread (see pool.ts): one rumongo client per thread, reductions run here so that
 * decoding and reducing documents never block the main thread's event loop. Loads rumongo's
 * CommonJS entry (`dist/index.js`), the build the package resolves to for both module systems.
 * @module
 */
import { parentPort, workerData } from 'node:worker_threads'
import { BSON, MongoClient, MongoInvalidArgumentError, type Document } from '../index.js'
import {
  serializeError,
  type PoolWorkerData,
  type ReduceRequest,
  type ReducerSpec,
  type WorkerReply,
  type WorkerRequest,
} from './protocol.js'

type ReduceFunction = (accumulator: unknown, document: Document) => unknown

interface Reducer {
  reduce: ReduceFunction
  init?: () => unknown
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
  const { reduce, init } = typeof loaded.reduce === 'function' ? loaded : (loaded.default ?? {})
  if (typeof reduce !== 'function') {
    throw new MongoInvalidArgumentError(`reducer module ${url} does not export a reduce function`)
  }
  if (init !== undefined && typeof init !== 'function') {
    throw new MongoInvalidArgumentError(`reducer module ${url} exports an init that is not a function`)
  }
  return { reduce, init }
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

async function runReduce(request: ReduceRequest, call: RunningCall): Promise<unknown> {
  const { reduce, init } = await call.unlessStopped(loadReducer(request.reducer))
  // Numbers keep their BSON type in the filter (Int32, Double, Long), as the caller sent them;
  // options are plain numbers, which their validation expects.
  const { filter } = BSON.deserialize(request.filter, { promoteValues: false })
  const { options } = BSON.deserialize(request.options, { promoteLongs: false })
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

function start(request: ReduceRequest): void {
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
  call.done = runReduce(request, call)
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
  if (request.type === 'reduce') start(request)
  else if (request.type === 'cancel') running.get(request.id)?.stop()
  else {
    // A failed client close has no one left to report to: the pool is shutting this thread down.
    close().catch(() => {})
  }
})

client.connect().then(
  () => post({ type: 'ready' }),
  (error: unknown) => post({ type: 'startupError', error: serializeError(error) }),
)
