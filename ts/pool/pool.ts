/**
 * `WorkerPool`: reductions over query results on worker threads, so the main thread's event loop
 * stays free while documents are decoded and reduced. Only the accumulator comes back.
 * @module
 */
import { availableParallelism } from 'node:os'
import { isAbsolute, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Worker, type ResourceLimits } from 'node:worker_threads'
import { BSON, type Document, type ObjectId } from 'bson'
import type { Filter, WithId } from '../collection.js'
import {
  ErrorCode,
  MongoInvalidArgumentError,
  MongoOperationTimeoutError,
  MongoWorkerPoolError,
} from '../errors.js'
import { MongoClient, type MongoClientOptions } from '../mongo_client.js'
import type { FindOptions } from '../options.js'
import { rebuildError, type ReduceRequest, type ReducerSpec, type WorkerReply } from './protocol.js'
import { checkCount, checkFilter, checkName, checkTimeout, describe } from '../validate.js'

/** The worker entry, compiled from worker.ts next to this file's build (dist/pool/). */
const WORKER_ENTRY = join(__dirname, 'worker.js')

/** How long a cancelled call's worker gets to stop by itself before it is terminated and replaced. */
const CANCEL_GRACE_MS = 1_000

/** Find options a worker's reduce cannot run with (see `reduce`). */
const POOL_REFUSED_OPTIONS = ['session', 'tailable', 'awaitData', 'maxAwaitTimeMS'] as const

/**
 * A replacement worker that dies before it is ready (e.g. out of memory while loading) is started
 * again after 100 ms, then 200 ms, 400 ms, ...
 */
const RESTART_DELAY_MS = 100

/** ... until this many starts failed in a row: then its slot is given up and `size` shrinks. */
const MAX_FAILED_STARTS = 5

/** How long `close()` waits for a worker to close its client and exit before terminating it. */
const STOP_TIMEOUT_MS = 5_000

/**
 * How long `close()` lets queued and running calls finish by default: within the usual shutdown
 * grace periods (10 to 30 s), so that a call that never ends cannot hold a shutdown.
 */
const CLOSE_TIMEOUT_MS = 10_000

/** Options of {@link WorkerPool.create}. */
export interface WorkerPoolOptions {
  /** The connection string every worker's client connects with. */
  uri: string
  /** Client options for every worker's client (structured-cloned into each worker). */
  clientOptions?: MongoClientOptions
  /** Number of worker threads. Default: `os.availableParallelism() - 1`, at least 1. */
  size?: number
  /** Calls one worker runs at once (their I/O interleaves). Default: 1. */
  concurrentTasksPerWorker?: number
  /** Calls waiting for a free worker before `reduce` rejects with `ERR_POOL_QUEUE_FULL`. Default: 1000. */
  maxQueue?: number
  /** V8 heap limits of each worker (`worker_threads` `resourceLimits`). */
  resourceLimits?: ResourceLimits
}

/** Options of {@link WorkerPool.reduce}: the find options, plus the call's cancellation and time limit. */
export interface PoolReduceOptions extends FindOptions {
  /**
   * Aborting rejects the call with `signal.reason`. Its worker stops it before the next document
   * (at once while it awaits a getMore or a reducer's promise) and closes its cursor; a reducer
   * that does not return within a second (an endless loop) gets its worker terminated.
   */
  signal?: AbortSignal
  /**
   * Time limit of the whole call (queueing, query and reducer) in ms; 0 or absent means none.
   * Past it the call rejects with `MongoOperationTimeoutError` and stops in its worker, as on abort.
   */
  timeoutMS?: number
}

/** A reducer function: gets the accumulator and one document, returns the next accumulator. */
export type ReduceFunction<TAccumulator, TSchema> = (
  accumulator: TAccumulator,
  document: TSchema,
) => TAccumulator | Promise<TAccumulator>

/** Options of {@link WorkerPool.close}. */
export interface WorkerPoolCloseOptions {
  /** Reject queued and running calls with `ERR_POOL_CLOSED` at once instead of letting them finish. */
  force?: boolean
  /**
   * How long queued and running calls get to finish, in ms; 0 means no limit. Default: 10 000.
   * Calls still pending then reject with `ERR_POOL_CLOSED` and are stopped, as with `force`.
   */
  timeoutMS?: number
}

interface Task {
  request: ReduceRequest
  resolve(value: unknown): void
  reject(error: unknown): void
  settled: boolean
  /** Whether its worker began it: a call it had not is re-queued if the worker dies. */
  started: boolean
  /** Removes the abort listener and the timeout. */
  release(): void
}

interface PoolWorker {
  worker: Worker
  /** Calls sent to this worker that it has not answered yet (settled or not for their callers). */
  tasks: Map<number, Task>
  ready: boolean
  /** Settles with the worker's startup: its client connected, or why not. */
  started: Promise<void>
  stopping: boolean
  /** Why the worker died, when it did: its uncaught error, or why the pool terminated it. */
  failure?: Error
}

/** How a worker rebuilds `reducer`; throws MongoInvalidArgumentError when it cannot. */
function reducerSpec(reducer: unknown): ReducerSpec {
  if (typeof reducer === 'function') {
    const source = Function.prototype.toString.call(reducer)
    if (/\{\s*\[native code\]\s*\}$/.test(source)) {
      throw new MongoInvalidArgumentError(
        'reducer is a native or bound function, whose source cannot be rebuilt in a worker: pass an arrow ' +
          'function or a function expression, or a module path',
      )
    }
    try {
      // Compiled here only to fail early and clearly; the worker compiles it again in its own scope.
      new Function(`return (${source})`)
    } catch (error) {
      throw new MongoInvalidArgumentError(
        `reducer source cannot be rebuilt in a worker (${String(error)}): pass an arrow function or a ` +
          'function expression (a method written `reduce(acc, doc) {}` does not compile alone), or a module path',
        { cause: error },
      )
    }
    return { kind: 'function', source }
  }
  if (reducer instanceof URL) {
    if (reducer.protocol !== 'file:') {
      throw new MongoInvalidArgumentError(`reducer module URL must be a file: URL, got ${reducer.href}`)
    }
    return { kind: 'module', url: reducer.href }
  }
  if (typeof reducer === 'string' && reducer.startsWith('file:')) return reducerSpec(new URL(reducer))
  if (typeof reducer === 'string' && isAbsolute(reducer)) {
    return { kind: 'module', url: pathToFileURL(reducer).href }
  }
  throw new MongoInvalidArgumentError(
    `reducer must be a function, a file URL or an absolute module path, got ${describe(reducer)}`,
  )
}

const ENTRY_FLAG = /^(-e|--eval|-p|--print|--input-type)(=|$)/

/**
 * The workers' Node options: inherited (`undefined`), unless the process runs `-e` code or has
 * `--input-type`, which a worker would inherit and then fail to load its file with. Then the
 * parent's options without those (given explicitly, Node rejects process-wide flags such as
 * `--expose-gc` here, hence inheriting whenever possible).
 */
function workerExecArgv(): string[] | undefined {
  const parent = process.execArgv
  if (!parent.some((arg) => ENTRY_FLAG.test(arg))) return undefined
  const args: string[] = []
  for (let index = 0; index < parent.length; index++) {
    const arg = parent[index]!
    if (['-e', '--eval', '-p', '--print', '--input-type'].includes(arg)) index++
    else if (!/^--(eval|print|input-type)=/.test(arg)) args.push(arg)
  }
  return args
}

/**
 * A pool of worker threads, each with its own rumongo client, that runs reductions over query
 * results: documents are fetched, decoded and reduced in a worker, and only the accumulator
 * (structured-cloned) comes back, so the main thread's event loop stays free.
 *
 * - Calls go to the least busy worker; when every worker is busy they wait in a bounded queue.
 * - A worker that dies (an uncaught error, `process.exit`, out of memory, terminated when stuck in
 *   a cancelled reducer) is replaced. The calls it had begun reject with `ERR_POOL_WORKER_EXITED`;
 *   the calls it had not begun are re-queued.
 * - It pays off when reducing many documents to a small result. Returning the documents gains
 *   nothing over a direct `find`: the main thread still builds every object, from a clone.
 */
export class WorkerPool {
  readonly #uri: string
  readonly #clientOptions: MongoClientOptions
  readonly #concurrency: number
  readonly #maxQueue: number
  readonly #resourceLimits: ResourceLimits | undefined
  readonly #workers = new Set<PoolWorker>()
  readonly #queue: Task[] = []
  readonly #drainWaiters: (() => void)[] = []
  #nextId = 1
  #closing: Promise<void> | null = null
  /** Why the last worker that died did, for calls that find no worker left. */
  #lastFailure: Error | undefined
  /** Whether create() resolved: until then a worker that fails to start makes it reject instead. */
  #created = false
  /** Workers that died before they were ready, in a row. */
  #failedStarts = 0
  /** Replacements waiting for their restart delay. */
  #restarting = 0

  private constructor(options: WorkerPoolOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new MongoInvalidArgumentError(`pool options must be an object, got ${describe(options)}`)
    }
    if (typeof options.uri !== 'string') {
      throw new MongoInvalidArgumentError(`uri must be a connection string, got ${describe(options.uri)}`)
    }
    this.#uri = options.uri
    this.#clientOptions = options.clientOptions ?? {}
    // Parsed here (no I/O) so that a bad connection string or option fails with its typed error
    // (MongoParseError, ...) before any worker starts.
    new MongoClient(this.#uri, this.#clientOptions)
    this.#concurrency = checkCount(options.concurrentTasksPerWorker, 'concurrentTasksPerWorker', 1)
    this.#maxQueue = checkCount(options.maxQueue, 'maxQueue', 1_000)
    this.#resourceLimits = options.resourceLimits
    const size = checkCount(options.size, 'size', Math.max(1, availableParallelism() - 1))
    for (let index = 0; index < size; index++) this.#spawn()
  }

  /**
   * Starts `size` workers and resolves once every worker's client is connected. Rejects with the
   * connection's error (e.g. `MongoServerSelectionError`), or `MongoInvalidArgumentError` for bad
   * options, after stopping the workers.
   */
  static async create(options: WorkerPoolOptions): Promise<WorkerPool> {
    const pool = new WorkerPool(options)
    try {
      await Promise.all([...pool.#workers].map((worker) => worker.started))
    } catch (error) {
      await pool.close({ force: true })
      throw error
    }
    pool.#created = true
    return pool
  }

  /**
   * Number of worker threads, counting a replacement waiting to restart after a failed start. It
   * shrinks only when a replacement fails to start 5 times in a row (a process warning says so).
   */
  get size(): number {
    return this.#workers.size + this.#restarting
  }

  /**
   * Runs `find(filter, options)` on `db.collection` in a worker and folds the documents with
   * `reducer`, starting from `initial`. Resolves with the final accumulator. `filter` and `options`
   * are what `find` accepts (options left `undefined` are ignored).
   *
   * `reducer` is either
   * - a function `(accumulator, document) => accumulator`, shipped as source and rebuilt in the
   *   worker: it sees only its arguments and globals (closures do not travel; put values in
   *   `initial`), or
   * - a module (file URL, `import.meta.url`-relative `URL`, or absolute path) exporting
   *   `reduce(accumulator, document)` and optionally `init()`, which gives the initial accumulator
   *   when `initial` is omitted. Each worker imports it once.
   *
   * `initial` and the result are structured-cloned across threads: BSON values (ObjectId, Long,
   * ...) arrive as plain objects, so reduce them to strings or numbers. A reducer may return a
   * promise. Errors keep their class, message, stack, `code`, `codeName`, `errorLabels` and
   * `cause` (when an `Error`).
   */
  async reduce<TAccumulator, TSchema extends Document = Document>(
    db: string,
    collection: string,
    filter: Filter<TSchema> | ObjectId,
    options: PoolReduceOptions,
    reducer: ReduceFunction<TAccumulator, WithId<TSchema>> | URL | string,
    initial?: TAccumulator,
  ): Promise<TAccumulator> {
    // The same filter and options as `find(filter, options)` accepts, with the same errors.
    const query = checkFilter(filter === undefined ? {} : filter)
    if (options !== undefined && options !== null && typeof options !== 'object') {
      throw new MongoInvalidArgumentError(`options must be an object, got ${describe(options)}`)
    }
    const { signal, timeoutMS: timeoutOption, ...findOptions } = options ?? {}
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new MongoInvalidArgumentError(`signal must be an AbortSignal, got ${describe(signal)}`)
    }
    for (const key of POOL_REFUSED_OPTIONS) {
      if ((findOptions as Document)[key] !== undefined) {
        throw new MongoInvalidArgumentError(
          `the worker pool does not support the find option "${key}": a session cannot cross to a ` +
            'worker thread, and a tailable cursor has no last document to reduce to',
        )
      }
    }
    const timeoutMS = checkTimeout(timeoutOption, 0)
    const names = { db: checkName(db, 'database'), collection: checkName(collection, 'collection') }
    const spec = reducerSpec(reducer)
    if (this.#closing) throw new MongoWorkerPoolError(ErrorCode.PoolClosed, 'the worker pool is closed')
    signal?.throwIfAborted()
    if (this.#queue.length >= this.#maxQueue) {
      throw new MongoWorkerPoolError(
        ErrorCode.PoolQueueFull,
        `the worker pool queue is full (${this.#maxQueue} calls waiting; maxQueue)`,
      )
    }
    // The filter crosses as BSON, byte for byte what the worker's find sends (js-bson types kept).
    // Options left undefined are dropped, as find drops them, instead of arriving as null.
    const definedOptions = Object.fromEntries(
      Object.entries(findOptions).filter(([, value]) => value !== undefined),
    )
    const serialize = {
      ignoreUndefined: findOptions.ignoreUndefined ?? this.#clientOptions.ignoreUndefined ?? false,
      serializeFunctions: findOptions.serializeFunctions ?? this.#clientOptions.serializeFunctions ?? false,
    }
    const request: ReduceRequest = {
      type: 'reduce',
      id: this.#nextId++,
      ...names,
      filter: BSON.serialize({ filter: query }, serialize),
      options: BSON.serialize({ options: definedOptions }, serialize),
      reducer: spec,
      hasInitial: initial !== undefined,
      initial,
      stopFlag: new Int32Array(new SharedArrayBuffer(4)),
    }
    return new Promise<TAccumulator>((resolve, reject) => {
      const task: Task = {
        request,
        resolve: resolve as (value: unknown) => void,
        reject,
        settled: false,
        started: false,
        release: () => {
          clearTimeout(timer)
          signal?.removeEventListener('abort', onAbort)
        },
      }
      const onAbort = () => this.#cancel(task, signal!.reason)
      signal?.addEventListener('abort', onAbort, { once: true })
      const timer =
        timeoutMS > 0
          ? setTimeout(
              () =>
                this.#cancel(task, new MongoOperationTimeoutError(`reduce timed out after ${timeoutMS} ms`)),
              timeoutMS,
            )
          : undefined
      this.#queue.push(task)
      this.#pump()
    })
  }

  /**
   * Stops the pool. New calls reject with `ERR_POOL_CLOSED`. Queued and running calls get
   * `timeoutMS` (default 10 s) to finish, then reject with `ERR_POOL_CLOSED` and are stopped as on
   * abort; with `force` they do at once. Then every worker closes its client and exits (a worker
   * that does not is terminated), so no handle is left open. Later calls return the first call's
   * promise.
   */
  async close(options: WorkerPoolCloseOptions = {}): Promise<void> {
    const timeoutMS = checkTimeout(options.timeoutMS, CLOSE_TIMEOUT_MS)
    this.#closing ??= this.#close(options.force === true ? null : timeoutMS)
    return this.#closing
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }

  /** Lets calls finish for up to `timeoutMS` (null: not at all), stops what is left, ends the workers. */
  async #close(timeoutMS: number | null): Promise<void> {
    if (timeoutMS !== null) {
      await new Promise<void>((resolve) => {
        const timer = timeoutMS > 0 ? setTimeout(resolve, timeoutMS) : undefined
        this.#drainWaiters.push(() => {
          clearTimeout(timer)
          resolve()
        })
        this.#checkDrained()
      })
    }
    const reason =
      timeoutMS === null
        ? 'the worker pool was closed'
        : `the worker pool was closed before this call finished (close timeoutMS: ${timeoutMS} ms)`
    const pending = [...this.#queue, ...[...this.#workers].flatMap((worker) => [...worker.tasks.values()])]
    for (const task of pending) this.#cancel(task, new MongoWorkerPoolError(ErrorCode.PoolClosed, reason))
    await Promise.all([...this.#workers].map((worker) => this.#stop(worker)))
  }

  /** Asks a worker to cancel its calls and close its client; terminates it if it does not exit. */
  async #stop(worker: PoolWorker): Promise<void> {
    worker.stopping = true
    worker.worker.ref()
    const exited = new Promise((resolve) => worker.worker.once('exit', resolve))
    worker.worker.postMessage({ type: 'close' })
    const timer = setTimeout(() => void worker.worker.terminate(), STOP_TIMEOUT_MS)
    await exited
    clearTimeout(timer)
  }

  #spawn(): void {
    const execArgv = workerExecArgv()
    const worker: PoolWorker = {
      worker: new Worker(WORKER_ENTRY, {
        workerData: { uri: this.#uri, clientOptions: this.#clientOptions },
        ...(this.#resourceLimits ? { resourceLimits: this.#resourceLimits } : {}),
        ...(execArgv ? { execArgv } : {}),
      }),
      tasks: new Map(),
      ready: false,
      started: Promise.resolve(),
      stopping: false,
    }
    worker.started = new Promise<void>((resolve, reject) => {
      worker.worker.on('message', (reply: WorkerReply) => {
        if (reply.type === 'ready' || reply.type === 'startupError') {
          // A client that failed to connect retries on its next call: the thread itself started.
          worker.ready = true
          this.#failedStarts = 0
          this.#updateRef(worker)
          if (reply.type === 'ready') resolve()
          else reject(rebuildError(reply.error))
        } else if (reply.type === 'started') {
          const task = worker.tasks.get(reply.id)
          if (task) task.started = true
        } else {
          this.#onReply(worker, reply)
        }
      })
      worker.worker.on('error', (error) => (worker.failure ??= error))
      worker.worker.on('exit', (code) => {
        reject(
          worker.failure ??
            new MongoWorkerPoolError(ErrorCode.PoolWorkerExited, 'a worker exited at startup'),
        )
        this.#onExit(worker, code)
      })
    })
    // Only create() awaits the first workers' startup; a replacement's calls report its failures.
    worker.started.catch(() => {})
    this.#workers.add(worker)
  }

  /** Keeps the process alive while a worker starts, runs calls or stops; never while it idles. */
  #updateRef(worker: PoolWorker): void {
    if (!worker.ready || worker.stopping || worker.tasks.size > 0) worker.worker.ref()
    else worker.worker.unref()
  }

  /** Sends queued calls to the least busy workers that have room. */
  #pump(): void {
    // Only when workers failed to start and were given up (see #onExit).
    if (this.size === 0) {
      for (const task of this.#queue.splice(0)) {
        this.#reject(
          task,
          new MongoWorkerPoolError(ErrorCode.PoolWorkerExited, 'the worker pool has no worker left', {
            cause: this.#lastFailure,
          }),
        )
      }
    }
    while (this.#queue.length > 0) {
      let chosen: PoolWorker | undefined
      for (const worker of this.#workers) {
        if (worker.stopping || worker.tasks.size >= this.#concurrency) continue
        if (!chosen || worker.tasks.size < chosen.tasks.size) chosen = worker
      }
      if (!chosen) return
      const task = this.#queue.shift()!
      try {
        chosen.worker.postMessage(task.request)
      } catch (error) {
        this.#reject(
          task,
          new MongoInvalidArgumentError(
            `the initial accumulator cannot be sent to a worker: ${String(error)}`,
            { cause: error },
          ),
        )
        continue
      }
      chosen.tasks.set(task.request.id, task)
      this.#updateRef(chosen)
    }
  }

  #onReply(worker: PoolWorker, reply: Extract<WorkerReply, { type: 'result' | 'error' }>): void {
    const task = worker.tasks.get(reply.id)
    if (!task) return
    worker.tasks.delete(reply.id)
    this.#updateRef(worker)
    if (reply.type === 'result') this.#resolve(task, reply.value)
    else this.#reject(task, rebuildError(reply.error))
    this.#pump()
    this.#checkDrained()
  }

  #onExit(worker: PoolWorker, code: number): void {
    this.#workers.delete(worker)
    const cause = worker.failure
    const requeued: Task[] = []
    for (const task of worker.tasks.values()) {
      // A call the worker never began runs on another worker; one it began may have run part of
      // its reducer, so it fails.
      if (!task.started) requeued.push(task)
      else
        this.#reject(
          task,
          new MongoWorkerPoolError(
            ErrorCode.PoolWorkerExited,
            `the worker running this call exited (code ${code})${cause ? `: ${cause.message}` : ''}`,
            { cause },
          ),
        )
    }
    this.#queue.unshift(...requeued.filter((task) => !task.settled))
    worker.tasks.clear()
    this.#lastFailure = cause ?? this.#lastFailure
    if (!worker.stopping && !this.#closing) this.#replace(worker)
    this.#pump()
    this.#checkDrained()
  }

  /** Starts a worker in place of one that died: at once, or after a delay if it died starting. */
  #replace(dead: PoolWorker): void {
    if (dead.ready) {
      this.#spawn()
      return
    }
    if (!this.#created) return
    this.#failedStarts++
    if (this.#failedStarts >= MAX_FAILED_STARTS) {
      process.emitWarning(
        `a WorkerPool worker failed to start ${this.#failedStarts} times in a row` +
          `${dead.failure ? ` (${dead.failure.message})` : ''}; the pool now has ${this.size} workers`,
        'MongoWorkerPoolWarning',
      )
      return
    }
    this.#restarting++
    setTimeout(
      () => {
        this.#restarting--
        if (!this.#closing) this.#spawn()
        this.#pump()
      },
      RESTART_DELAY_MS * 2 ** (this.#failedStarts - 1),
    )
  }

  /**
   * Rejects a call now (abort, timeout) and stops it in its worker, which closes its cursor. A
   * worker whose call has not stopped after a grace period is stuck in the reducer (an endless
   * loop): it is terminated and replaced.
   */
  #cancel(task: Task, reason: unknown): void {
    if (task.settled) return
    this.#reject(task, reason)
    const queued = this.#queue.indexOf(task)
    if (queued >= 0) {
      this.#queue.splice(queued, 1)
      this.#checkDrained()
      return
    }
    const worker = [...this.#workers].find((candidate) => candidate.tasks.has(task.request.id))
    if (!worker) return
    // Seen by the reducer loop between two documents even while it keeps the thread busy; the
    // message interrupts what the call awaits (a getMore, a reducer's promise).
    Atomics.store(task.request.stopFlag, 0, 1)
    worker.worker.postMessage({ type: 'cancel', id: task.request.id })
    setTimeout(() => {
      if (!worker.tasks.has(task.request.id)) return
      worker.failure ??= new MongoWorkerPoolError(
        ErrorCode.PoolWorkerExited,
        `terminated because a cancelled call's reducer did not return within ${CANCEL_GRACE_MS} ms`,
      )
      void worker.worker.terminate()
    }, CANCEL_GRACE_MS).unref()
  }

  /** Settles a call's promise, once. */
  #resolve(task: Task, value: unknown): void {
    if (task.settled) return
    task.settled = true
    task.release()
    task.resolve(value)
  }

  #reject(task: Task, error: unknown): void {
    if (task.settled) return
    task.settled = true
    task.release()
    task.reject(error)
  }

  #checkDrained(): void {
    if (this.#queue.length > 0) return
    for (const worker of this.#workers) if (worker.tasks.size > 0) return
    for (const resolve of this.#drainWaiters.splice(0)) resolve()
  }
}
