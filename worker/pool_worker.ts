/**
 * A WorkerPool thread (see ts/worker_pool.ts): one rumongo client per thread, reductions run here so
 * that decoding and reducing documents never block the main thread's event loop. Loads rumongo by
 * its package name, so it shares the build (CommonJS) the package resolves to.
 * @module
 */
import { parentPort, workerData } from 'node:worker_threads'
import { BSON, MongoClient, MongoError, MongoInvalidArgumentError, type Document } from 'rumongo'
import type {
  PoolWorkerData,
  ReduceRequest,
  ReducerSpec,
  SerializedError,
  WorkerReply,
  WorkerRequest,
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
const running = new Map<number, Promise<void>>()
const cancelled = new Set<number>()

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

async function runReduce(request: ReduceRequest): Promise<unknown> {
  const { reduce, init } = await loadReducer(request.reducer)
  // Numbers keep their BSON type in the filter (Int32, Double, Long), as the caller sent them;
  // options are plain numbers, which their validation expects.
  const { filter } = BSON.deserialize(request.filter, { promoteValues: false })
  const { options } = BSON.deserialize(request.options, { promoteLongs: false })
  let accumulator = request.hasInitial ? request.initial : await init?.()
  const cursor = client.db(request.db).collection(request.collection).find(filter, options)
  try {
    // A batch at a time: a cancel message is seen between batches.
    while (!cancelled.has(request.id) && (await cursor.hasNext())) {
      for (const document of cursor.readBufferedDocuments()) {
        accumulator = reduce(accumulator, document)
        if (isThenable(accumulator)) accumulator = await accumulator
      }
    }
  } finally {
    await cursor.close()
  }
  return accumulator
}

function start(request: ReduceRequest): void {
  const { id } = request
  const fail = (error: unknown) => {
    const serialized = serializeError(error)
    if (request.reducer.kind === 'function' && error instanceof ReferenceError)
      serialized.message += CLOSURE_HINT
    post({ type: 'error', id, error: serialized })
  }
  const run = runReduce(request).then((value) => {
    try {
      post({ type: 'result', id, value })
    } catch (error) {
      // Not structured-cloneable (a function, a class instance with private state, ...).
      fail(new TypeError(`the accumulator cannot be sent back to the main thread: ${String(error)}`))
    }
  }, fail)
  running.set(
    id,
    run.finally(() => {
      running.delete(id)
      cancelled.delete(id)
    }),
  )
}

/** Stops running reductions at their next batch, closes the client, and lets the thread end. */
async function close(): Promise<void> {
  for (const id of running.keys()) cancelled.add(id)
  await Promise.allSettled(running.values())
  try {
    await client.close()
  } finally {
    port.close()
  }
}

port.on('message', (request: WorkerRequest) => {
  if (request.type === 'reduce') start(request)
  else if (request.type === 'cancel') {
    if (running.has(request.id)) cancelled.add(request.id)
  } else {
    // A failed client close has no one left to report to: the pool is shutting this thread down.
    close().catch(() => {})
  }
})

client.connect().then(
  () => post({ type: 'ready' }),
  (error: unknown) => post({ type: 'startupError', error: serializeError(error) }),
)
