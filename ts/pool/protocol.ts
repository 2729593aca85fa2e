/**
 * The protocol between a WorkerPool (`pool.ts`) and its worker threads (`worker.ts`): the messages
 * they exchange, and how an error crosses threads (serialized in the worker, rebuilt with its class
 * in the pool).
 * @module
 */
import { BSONError } from 'bson'
import * as errors from '../errors.js'
import {
  MongoError,
  MongoServerSelectionError,
  TopologyDescription,
  type ServerDescription,
} from '../errors.js'

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
  /**
   * The error's other own properties of a primitive value: a Node.js system error's `errno`,
   * `syscall`, `address`, `port` (the cause of a `MongoNetworkError`), a custom error's fields.
   */
  properties?: Record<string, string | number | boolean | null>
  /** A `MongoServerSelectionError`'s `reason`: the deployment as server selection saw it. */
  reason?: SerializedTopology
}

/** A `TopologyDescription` as it crosses threads: its type, and each server with its error. */
export interface SerializedTopology {
  type: string
  servers: { address: string; type: string; error: SerializedError | null }[]
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
  // The errors this one is a cause of: its reason's errors may repeat what its cause chain holds.
  const ancestors = new Set(seen)
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
    ...primitiveProperties(error),
    ...(error instanceof MongoServerSelectionError && error.reason
      ? { reason: serializeTopology(error.reason, ancestors) }
      : {}),
  }
}

/** What `SerializedError.properties` keeps: the fields it has no slot of its own for. */
function primitiveProperties(error: Error): { properties?: SerializedError['properties'] } {
  const properties: NonNullable<SerializedError['properties']> = {}
  for (const [key, value] of Object.entries(error)) {
    if (['name', 'message', 'stack', 'code', 'codeName'].includes(key)) continue
    if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) properties[key] = value
  }
  return Object.keys(properties).length === 0 ? {} : { properties }
}

function serializeTopology(topology: TopologyDescription, ancestors: Set<unknown>): SerializedTopology {
  return {
    type: topology.type,
    servers: [...topology.servers.values()].map(({ address, type, error }) => ({
      address,
      type,
      // The first server's error is also the selection error's `cause`: serialized twice, it is
      // rebuilt as two equal errors, not one.
      error: error === null ? null : serializeError(error, new Set(ancestors)),
    })),
  }
}

function rebuildTopology({ type, servers }: SerializedTopology): TopologyDescription {
  const descriptions = new Map<string, ServerDescription>()
  for (const server of servers) {
    const error = server.error === null ? null : (rebuildError(server.error) as MongoError)
    descriptions.set(server.address, { address: server.address, type: server.type, error })
  }
  return new TopologyDescription(type, descriptions)
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
  if (serialized.properties !== undefined) Object.assign(error, serialized.properties)
  if (serialized.reason !== undefined) Object.assign(error, { reason: rebuildTopology(serialized.reason) })
  if (serialized.stack !== undefined) error.stack = serialized.stack
  return error
}
