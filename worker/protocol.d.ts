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

export interface ReduceRequest {
  type: 'reduce'
  id: number
  db: string
  collection: string
  /** BSON of `{ filter }`, so filter values keep their exact BSON types. */
  filter: Uint8Array
  /** BSON of `{ options }` (find options, BSON options). */
  options: Uint8Array
  reducer: ReducerSpec
  hasInitial: boolean
  initial: unknown
  /** On a SharedArrayBuffer: the pool sets it to 1 to stop the call (see RunningCall). */
  stopFlag: Int32Array
}

export type WorkerRequest = ReduceRequest | { type: 'cancel'; id: number } | { type: 'close' }

export type WorkerReply =
  | { type: 'ready' }
  | { type: 'startupError'; error: SerializedError }
  /** The worker received the call and began it. */
  | { type: 'started'; id: number }
  | { type: 'result'; id: number; value: unknown }
  | { type: 'error'; id: number; error: SerializedError }
