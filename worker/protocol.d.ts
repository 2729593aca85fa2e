// The messages a WorkerPool (ts/worker_pool.ts) and its workers (worker/pool_worker.ts) exchange.
// Types only, in a declaration file so both TypeScript projects can import it without emitting it.

/** `workerData` of every pool worker. */
export interface PoolWorkerData {
  uri: string
  /** `MongoClientOptions`, structured-cloned. */
  clientOptions: Record<string, unknown>
}

/** How a worker gets its reducer: rebuilt from a function's source, or imported from a module. */
export type ReducerSpec = { kind: 'function'; source: string } | { kind: 'module'; url: string }

/** An error as it crosses threads; the pool rebuilds its class from `name`. */
export interface SerializedError {
  name: string
  message: string
  stack?: string
  code?: number | string
  codeName?: string
  errorLabels?: string[]
  /** The error's `cause`, when it is an `Error`. */
  cause?: SerializedError
}

/** What every call the pool sends a worker carries. */
interface CallRequest {
  id: number
  /** On a SharedArrayBuffer: the pool sets it to 1 to stop the call (see RunningCall). */
  stopFlag: Int32Array
}

/** A query and its reducer. */
interface QueryRequest extends CallRequest {
  db: string
  collection: string
  /** BSON of `{ filter }`, so filter values keep their exact BSON types. */
  filter: Uint8Array
  /** BSON of `{ options }` (find options, BSON options). */
  options: Uint8Array
  reducer: ReducerSpec
}

/** Reduces the query's documents; the reply is the accumulator. */
export interface ReduceRequest extends QueryRequest {
  type: 'reduce'
  hasInitial: boolean
  initial: unknown
}

/** Splits the query by `_id` ranges into at most `parts`; the reply is each part's filter, as BSON of `{ filter }`. */
export interface SplitRequest extends QueryRequest {
  type: 'split'
  parts: number
}

/** Folds the accumulators of a split query's parts with the reducer module's `combine`. */
export interface CombineRequest extends CallRequest {
  type: 'combine'
  reducer: ReducerSpec
  accumulators: unknown[]
}

export type PoolCall = ReduceRequest | SplitRequest | CombineRequest

export type WorkerRequest = PoolCall | { type: 'cancel'; id: number } | { type: 'close' }

export type WorkerReply =
  | { type: 'ready' }
  | { type: 'startupError'; error: SerializedError }
  /** The worker received the call and began it. */
  | { type: 'started'; id: number }
  | { type: 'result'; id: number; value: unknown }
  | { type: 'error'; id: number; error: SerializedError }
