/**
 * The protocol between a WorkerPool (`pool.ts`) and its worker threads (`worker.ts`): the messages
 * they exchange, and how an error crosses threads (serialized in the worker, rebuilt with its class
 * in the pool).
 * @module
 */
import { BSONError } from 'bson'
import * as errors from '../errors.js'
import { MongoError } from '../errors.js'

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

/** `error` as it crosses threads; `seen` stops a cause chain that loops. */
export function serializeError(error: unknown, seen = new Set<unknown>()): SerializedError {
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

/** rumongo's error classes by name: every class ts/errors.ts exports. */
const MONGO_ERRORS = new Map(
  Object.values(errors)
    .filter(
      (value): value is typeof MongoError =>
        typeof value === 'function' && (value === MongoError || value.prototype instanceof MongoError),
    )
    .map((errorClass) => [errorClass.prototype.name, errorClass]),
)

/** Other errors rebuilt with their class; each takes `(message, { cause })`. */
const PLAIN_ERRORS: Record<string, new (message: string, options?: { cause?: unknown }) => Error> = {
  Error,
  EvalError,
  RangeError,
  ReferenceError,
  SyntaxError,
  TypeError,
  URIError,
  BSONError,
}

/** The error a worker reported, with its class (rumongo's or built-in), message, stack, code and cause. */
export function rebuildError(serialized: SerializedError): Error {
  const { name, message, code, codeName, errorLabels } = serialized
  const cause = serialized.cause && rebuildError(serialized.cause)
  const options = cause === undefined ? {} : { cause }
  const mongoClass = MONGO_ERRORS.get(name)
  let error: Error
  if (mongoClass) {
    // Built by the base constructor with the class's prototype: the classes differ only in their
    // constructor's parameters and in the code and codeName they set, which are copied below.
    error = Reflect.construct(MongoError, [message, { ...options, errorLabels }], mongoClass)
  } else {
    error = new (PLAIN_ERRORS[name] ?? Error)(message, options)
    if (!(name in PLAIN_ERRORS)) Object.defineProperty(error, 'name', { value: name, configurable: true })
  }
  if (code !== undefined) Object.assign(error, { code })
  if (codeName !== undefined) Object.assign(error, { codeName })
  if (serialized.stack !== undefined) error.stack = serialized.stack
  return error
}
