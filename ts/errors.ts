/**
 * The official driver's error hierarchy, rebuilt so that code catching by class
 * (`err instanceof MongoServerError`, `err.code === 11000`, ...) keeps working after the switch.
 * @module
 */
import { getSystemErrorMap } from 'node:util'
import { BSONError, BSONOffsetError } from 'bson'
import { listenerFailure, withCallTag } from './telemetry.js'

/**
 * Stable `code` values of the errors rumongo raises for API misuse. Server errors carry the server's
 * numeric code; network and server-selection errors have none, as in the official driver.
 */
export const ErrorCode = {
  InvalidArgument: 'ERR_INVALID_ARGUMENT',
  CursorInUse: 'ERR_CURSOR_IN_USE',
  CursorExhausted: 'ERR_CURSOR_EXHAUSTED',
  NotConnected: 'ERR_NOT_CONNECTED',
  Parse: 'ERR_PARSE',
  Runtime: 'ERR_RUNTIME',
  OperationTimeout: 'ERR_OPERATION_TIMEOUT',
  PoolClosed: 'ERR_POOL_CLOSED',
  PoolQueueFull: 'ERR_POOL_QUEUE_FULL',
  PoolWorkerExited: 'ERR_POOL_WORKER_EXITED',
  MissingDependency: 'ERR_MISSING_DEPENDENCY',
  ArrowTypeMismatch: 'ERR_ARROW_TYPE_MISMATCH',
  ExpiredSession: 'ERR_EXPIRED_SESSION',
  Transaction: 'ERR_TRANSACTION',
} as const

/** Options shared by every rumongo error. */
export interface MongoErrorOptions {
  cause?: unknown
  errorLabels?: readonly string[]
}

/** The base of every error raised by rumongo. */
export class MongoError extends Error {
  /** A server error code (number) or one of {@link ErrorCode} for errors raised by the driver. */
  code?: number | string
  private readonly labels: Set<string>

  constructor(message: string, options: MongoErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.labels = new Set(options.errorLabels)
  }

  override get name(): string {
    return 'MongoError'
  }

  /** Labels the server or driver attached, e.g. `RetryableError`. */
  get errorLabels(): string[] {
    return [...this.labels]
  }

  hasErrorLabel(label: string): boolean {
    return this.labels.has(label)
  }

  /** Legacy alias of `message`, as in the official driver. */
  get errmsg(): string {
    return this.message
  }
}

/** An error raised by the driver itself, not by the server. */
export class MongoDriverError extends MongoError {
  override get name(): string {
    return 'MongoDriverError'
  }
}

/** The API was used wrongly. */
export class MongoAPIError extends MongoDriverError {
  override get name(): string {
    return 'MongoAPIError'
  }
}

/** An argument or option has a wrong type or value. */
export class MongoInvalidArgumentError extends MongoAPIError {
  override code = ErrorCode.InvalidArgument
  override get name(): string {
    return 'MongoInvalidArgumentError'
  }
}

/** A cursor option was changed after the cursor started. */
export class MongoCursorInUseError extends MongoAPIError {
  override code = ErrorCode.CursorInUse
  constructor(message = 'Cursor is already initialized', options?: MongoErrorOptions) {
    super(message, options)
  }
  override get name(): string {
    return 'MongoCursorInUseError'
  }
}

/** A closed cursor was read, or a cursor was read on after one of its reads failed. */
export class MongoCursorExhaustedError extends MongoAPIError {
  override code = ErrorCode.CursorExhausted
  constructor(message = 'Cursor is exhausted', options?: MongoErrorOptions) {
    super(message, options)
  }
  override get name(): string {
    return 'MongoCursorExhaustedError'
  }
}

/**
 * What every read of a cursor rejects with once one of its reads failed: reading on must not pass
 * for the end of the results. The first failure is the `cause`.
 */
export function cursorFailedEarlier(failure: unknown): MongoCursorExhaustedError {
  const reason = failure instanceof Error ? failure.message : String(failure)
  return new MongoCursorExhaustedError(`Cursor is exhausted: an earlier read failed (${reason})`, {
    cause: failure,
  })
}

/** An operation ran on a client that is not connected (never connected, or closed). */
export class MongoNotConnectedError extends MongoAPIError {
  override code = ErrorCode.NotConnected
  override get name(): string {
    return 'MongoNotConnectedError'
  }
}

/** The connection string or a client option could not be parsed. */
export class MongoParseError extends MongoDriverError {
  override code = ErrorCode.Parse
  override get name(): string {
    return 'MongoParseError'
  }
}

/** Something that should not happen inside the driver (e.g. a malformed server reply). */
export class MongoRuntimeError extends MongoDriverError {
  override code = ErrorCode.Runtime
  override get name(): string {
    return 'MongoRuntimeError'
  }
}

/** A change stream cannot go on: an event without a resume token, or a closed stream's `stream()`. */
export class MongoChangeStreamError extends MongoRuntimeError {
  override get name(): string {
    return 'MongoChangeStreamError'
  }
}

/**
 * A `WorkerPool` could not run a call: the pool is closed (`ERR_POOL_CLOSED`), its queue is full
 * (`ERR_POOL_QUEUE_FULL`), or the worker running the call exited (`ERR_POOL_WORKER_EXITED`).
 */
export class MongoWorkerPoolError extends MongoDriverError {
  declare code: (typeof ErrorCode)['PoolClosed' | 'PoolQueueFull' | 'PoolWorkerExited']

  constructor(code: MongoWorkerPoolError['code'], message: string, options?: MongoErrorOptions) {
    super(message, options)
    this.code = code
  }

  override get name(): string {
    return 'MongoWorkerPoolError'
  }
}

/** Details a server error reply carries. */
export interface ServerErrorDetails extends MongoErrorOptions {
  code: number
  codeName: string
}

/** The server answered with an error (`ok: 0`). */
export class MongoServerError extends MongoError {
  /** The reply's other fields (`keyValue`, `errInfo`, ...), typed as the official driver types them. */
  [key: string]: any
  ok = 0
  codeName: string
  // `code`: always the server's number here, typed as the official driver types it (MongoError's
  // `number | string`), so code comparing it with a string code compiles as it did there.

  constructor(message: string, details: ServerErrorDetails) {
    super(message, details)
    this.code = details.code
    this.codeName = details.codeName
  }

  /**
   * The server's error reply: `{ ok: 0, errmsg, code, codeName, errorLabels? }` (the fields the
   * Rust driver keeps of it; a reply's other fields, such as `$clusterTime`, are not kept). Built
   * from `message` when read, so that a password redacted from the message is not in it either.
   */
  get errorResponse(): Record<string, unknown> {
    const labels = this.errorLabels
    return {
      ok: 0,
      errmsg: this.message,
      code: this.code,
      codeName: this.codeName,
      ...(labels.length > 0 ? { errorLabels: labels } : {}),
    }
  }

  override get name(): string {
    return 'MongoServerError'
  }
}

/** An operation on a client that was closed while it ran. */
export class MongoTopologyClosedError extends MongoAPIError {
  constructor(message = 'Topology is closed', options?: MongoErrorOptions) {
    super(message, options)
  }
  override get name(): string {
    return 'MongoTopologyClosedError'
  }
}

/** An operation on a client that was closed. */
export class MongoClientClosedError extends MongoAPIError {
  constructor(message = 'Operation interrupted because client was closed', options?: MongoErrorOptions) {
    super(message, options)
  }
  override get name(): string {
    return 'MongoClientClosedError'
  }
}

/** An operation on a server (connection pool) that was closed. */
export class MongoServerClosedError extends MongoAPIError {
  constructor(message = 'Server is closed', options?: MongoErrorOptions) {
    super(message, options)
  }
  override get name(): string {
    return 'MongoServerClosedError'
  }
}

/** A feature the server or driver version does not support. */
export class MongoCompatibilityError extends MongoAPIError {
  override get name(): string {
    return 'MongoCompatibilityError'
  }
}

/** Credentials are missing or incomplete. */
export class MongoMissingCredentialsError extends MongoAPIError {
  override get name(): string {
    return 'MongoMissingCredentialsError'
  }
}

/** An optional dependency an option needs is not installed. */
export class MongoMissingDependencyError extends MongoAPIError {
  override code = ErrorCode.MissingDependency
  /** The npm package to install. */
  dependencyName?: string

  constructor(message: string, options: MongoErrorOptions & { dependencyName?: string } = {}) {
    super(message, options)
    this.dependencyName = options.dependencyName
  }

  override get name(): string {
    return 'MongoMissingDependencyError'
  }
}

/** A value's type did not fit its Arrow column (`findArrow` with `onTypeMismatch: 'error'`). */
export class MongoArrowTypeMismatchError extends MongoDriverError {
  override code = ErrorCode.ArrowTypeMismatch
  /** The column: `a.b` for a struct's field, `a[]` for a list's items. */
  readonly path: string
  /** The document's index in the results. */
  readonly row: number
  /** The column's type. */
  readonly expected: string
  /** The value's BSON type, as `$type` names it. */
  readonly found: string

  constructor(path: string, row: number, expected: string, found: string) {
    super(`Arrow column '${path}' expects ${expected}, but document ${row} of the results holds a ${found}`)
    this.path = path
    this.row = row
    this.expected = expected
    this.found = found
  }

  override get name(): string {
    return 'MongoArrowTypeMismatchError'
  }
}

/** A tailable-cursor operation on a cursor that is not tailable. */
export class MongoTailableCursorError extends MongoAPIError {
  constructor(message = 'Tailable cursor does not support this operation', options?: MongoErrorOptions) {
    super(message, options)
  }
  override get name(): string {
    return 'MongoTailableCursorError'
  }
}

/** A session used after it ended. */
export class MongoExpiredSessionError extends MongoAPIError {
  override code = ErrorCode.ExpiredSession
  constructor(message = 'Cannot use a session that has ended', options?: MongoErrorOptions) {
    super(message, options)
  }
  override get name(): string {
    return 'MongoExpiredSessionError'
  }
}

/** A transaction misused. */
export class MongoTransactionError extends MongoAPIError {
  override code = ErrorCode.Transaction
  override get name(): string {
    return 'MongoTransactionError'
  }
}

/** A compressed server reply that could not be decompressed. */
export class MongoDecompressionError extends MongoRuntimeError {
  override get name(): string {
    return 'MongoDecompressionError'
  }
}

/** A server reply of an unexpected shape. */
export class MongoUnexpectedServerResponseError extends MongoRuntimeError {
  override get name(): string {
    return 'MongoUnexpectedServerResponseError'
  }
}

/** A primary older than one already seen (replica set monitoring). */
export class MongoStalePrimaryError extends MongoRuntimeError {
  override get name(): string {
    return 'MongoStalePrimaryError'
  }
}

/** Kerberos (GSSAPI) authentication failed. */
export class MongoKerberosError extends MongoRuntimeError {
  override get name(): string {
    return 'MongoKerberosError'
  }
}

/** AWS authentication failed. */
export class MongoAWSError extends MongoRuntimeError {
  override get name(): string {
    return 'MongoAWSError'
  }
}

/** OIDC authentication failed. */
export class MongoOIDCError extends MongoRuntimeError {
  override get name(): string {
    return 'MongoOIDCError'
  }
}

/** Azure OIDC authentication failed. */
export class MongoAzureError extends MongoOIDCError {
  override get name(): string {
    return 'MongoAzureError'
  }
}

/** GCP OIDC authentication failed. */
export class MongoGCPError extends MongoOIDCError {
  override get name(): string {
    return 'MongoGCPError'
  }
}

/** The labels the official driver attaches to errors. */
export const MongoErrorLabel = Object.freeze({
  RetryableWriteError: 'RetryableWriteError',
  TransientTransactionError: 'TransientTransactionError',
  UnknownTransactionCommitResult: 'UnknownTransactionCommitResult',
  ResumableChangeStreamError: 'ResumableChangeStreamError',
  HandshakeError: 'HandshakeError',
  ResetPool: 'ResetPool',
  PoolRequestedRetry: 'PoolRequestedRetry',
  InterruptInUseConnections: 'InterruptInUseConnections',
  NoWritesPerformed: 'NoWritesPerformed',
  RetryableError: 'RetryableError',
  SystemOverloadedError: 'SystemOverloadedError',
} as const)

/** A network failure talking to a server. */
export class MongoNetworkError extends MongoError {
  override get name(): string {
    return 'MongoNetworkError'
  }
}

/** A round trip to the server took longer than `socketTimeoutMS`. */
export class MongoNetworkTimeoutError extends MongoNetworkError {
  override get name(): string {
    return 'MongoNetworkTimeoutError'
  }
}

/**
 * An operation did not complete within its `timeoutMS` (server selection, connection checkout,
 * retries and server execution included; for a cursor, its getMores too). A server
 * `MaxTimeMSExpired` error under a `timeoutMS` is reported as this error, as in the official driver.
 */
export class MongoOperationTimeoutError extends MongoDriverError {
  override code = ErrorCode.OperationTimeout
  override get name(): string {
    return 'MongoOperationTimeoutError'
  }
}

/**
 * `waitQueueTimeoutMS` passed before a connection of the selected server's pool was free (not under
 * a `timeoutMS`, which then bounds the wait instead), as the official driver's
 * `WaitQueueTimeoutError`.
 */
export class MongoWaitQueueTimeoutError extends MongoDriverError {
  /** The server whose pool had no free connection (`host:port`). */
  address: string
  constructor(message: string, address: string) {
    super(message)
    this.address = address
  }
  override get name(): string {
    return 'MongoWaitQueueTimeoutError'
  }
}

/** A failure of the system around the driver. */
export class MongoSystemError extends MongoError {
  override get name(): string {
    return 'MongoSystemError'
  }
}

/** The kinds of server (`ServerDescription.type`), as the official driver's `ServerType`. */
export const ServerType = Object.freeze({
  Standalone: 'Standalone',
  Mongos: 'Mongos',
  PossiblePrimary: 'PossiblePrimary',
  RSPrimary: 'RSPrimary',
  RSSecondary: 'RSSecondary',
  RSArbiter: 'RSArbiter',
  RSOther: 'RSOther',
  RSGhost: 'RSGhost',
  Unknown: 'Unknown',
  LoadBalancer: 'LoadBalancer',
} as const)
export type ServerType = (typeof ServerType)[keyof typeof ServerType]

/** The kinds of deployment (`TopologyDescription.type`), as the official driver's `TopologyType`. */
export const TopologyType = Object.freeze({
  Single: 'Single',
  ReplicaSetNoPrimary: 'ReplicaSetNoPrimary',
  ReplicaSetWithPrimary: 'ReplicaSetWithPrimary',
  Sharded: 'Sharded',
  Unknown: 'Unknown',
  LoadBalanced: 'LoadBalanced',
} as const)
export type TopologyType = (typeof TopologyType)[keyof typeof TopologyType]

/** What a server-selection failure knew of one server: its type, and why it is not usable. */
export interface ServerDescription {
  address: string
  /** `'Unknown'` (unreachable), `'Standalone'`, `'RSPrimary'`, `'Mongos'`, ... as in the official driver. */
  type: string
  /** The last error talking to it (`MongoNetworkError`: `connect ECONNREFUSED 127.0.0.1:1`), or `null`. */
  error: MongoError | null
}

/** The deployment as server selection saw it (the official driver's `TopologyDescription` shape). */
export class TopologyDescription {
  constructor(
    /** `'Unknown'`, `'Single'`, `'ReplicaSetWithPrimary'`, ... as in the official driver. */
    readonly type: string,
    /** Each server by `host:port`. */
    readonly servers: Map<string, ServerDescription>,
  ) {}

  /** The first server's error, as in the official driver. */
  get error(): MongoError | null {
    return [...this.servers.values()].find((server) => server.error !== null)?.error ?? null
  }
}

/**
 * No suitable server was found within `serverSelectionTimeoutMS`. As in the official driver, the
 * message and `cause` are the first server's error (`connect ECONNREFUSED 127.0.0.1:1`) and
 * `reason` describes every server.
 */
export class MongoServerSelectionError extends MongoSystemError {
  /** The servers selection considered, each with its error. */
  reason?: TopologyDescription

  constructor(message: string, reason?: TopologyDescription) {
    const error = reason?.error ?? undefined
    super(error?.message ?? message, { cause: error })
    if (reason) this.reason = reason
  }

  override get name(): string {
    return 'MongoServerSelectionError'
  }
}

const NATIVE_ERROR_PREFIX = 'rumongo-error:'

/**
 * The errors of JS callbacks the native side called (the OIDC callback) that threw or rejected, by
 * number, until the native error that reports them is turned back into them: the user gets the
 * callback's own error, as from the official driver. Bounded: a failure no operation reports (a
 * background connection's) is dropped once newer ones arrive.
 */
const callbackFailures = new Map<number, unknown>()
const CALLBACK_FAILURES_KEPT = 16
let nextCallbackFailure = 1

/** Keeps `error`, a JS callback's failure, and returns the number the native side reports it by. */
export function keepCallbackFailure(error: unknown): number {
  const id = nextCallbackFailure++
  callbackFailures.set(id, error)
  for (const old of callbackFailures.keys()) {
    if (callbackFailures.size <= CALLBACK_FAILURES_KEPT) break
    callbackFailures.delete(old)
  }
  return id
}

interface NativeErrorPayload {
  kind: string
  message: string
  /** A server error's number, or a network error's Node.js code (`ECONNREFUSED`). */
  code?: number | string
  codeName?: string
  errorLabels?: string[]
  /** A network error's system call (`connect`, `getaddrinfo`, `querySrv`) and server (`host:port`). */
  syscall?: string
  address?: string | null
  /** A failed DNS lookup's name (`_mongodb._tcp.<host>`). */
  hostname?: string | null
  /** A failed JS callback's number (`keepCallbackFailure`). */
  id?: number
  /** Where js-bson's parser stopped in a malformed reply's body (`BSONOffsetError`). */
  offset?: number
  /** A server-selection failure's topology. */
  topologyType?: string
  servers?: { address: string; type: string; error: NativeErrorPayload | null }[]
}

/**
 * The `code` napi-rs gives the errors it raises itself (its `Status` names): an argument the addon
 * could not convert, or a Rust panic caught at the boundary (`GenericFailure`). Either is a bug in
 * rumongo, never the user's input, since the TypeScript layer validates every argument first.
 */
const NAPI_STATUS_CODES = new Set([
  'InvalidArg',
  'ObjectExpected',
  'StringExpected',
  'NameExpected',
  'FunctionExpected',
  'NumberExpected',
  'BooleanExpected',
  'ArrayExpected',
  'GenericFailure',
  'PendingException',
  'Cancelled',
  'EscapeCalledTwice',
  'HandleScopeMismatch',
  'CallbackScopeMismatch',
  'QueueFull',
  'Closing',
  'BigintExpected',
  'DateExpected',
  'ArrayBufferExpected',
  'DetachableArraybufferExpected',
  'WouldDeadlock',
  'NoExternalBuffersAllowed',
  'Unknown',
])

/**
 * Credentials as they would sit in a message quoting a connection string: the password of its user
 * info, a `tlsCertificateKeyFilePassword` option. A client's own password never reaches the Rust
 * driver inside its connection string (see `MongoClient`), so this guards what a message could
 * quote otherwise, at the cost of one pass over the message, whatever the number of clients.
 */
const QUOTED_CREDENTIALS =
  /(mongodb(?:\+srv)?:\/\/[^:@/?\s]*:)[^@/?\s]*@|(tlsCertificateKeyFilePassword=)[^&\s]*/gi

/** `text` with the credentials it quotes replaced by `<redacted>`. */
export function redactCredentials(text: string): string {
  return text.replace(QUOTED_CREDENTIALS, (_, userinfo: string | undefined, option: string | undefined) =>
    userinfo === undefined ? `${option}<redacted>` : `${userinfo}<redacted>@`,
  )
}

/**
 * Rebuilds the typed error that a native call encoded in its message (see src/error.rs), with the
 * credentials it quotes redacted. An error napi-rs raised on its own (a caught panic, an argument it could not
 * convert) becomes a `MongoRuntimeError`; any other error (js-bson's, while serializing a filter)
 * passes through.
 */
export function translateNativeError(error: unknown): unknown {
  if (!(error instanceof Error)) return error
  if (!error.message.startsWith(NATIVE_ERROR_PREFIX)) {
    const code = (error as { code?: unknown }).code
    if (typeof code === 'string' && NAPI_STATUS_CODES.has(code) && !(error instanceof MongoError)) {
      return new MongoRuntimeError(`rumongo internal error: ${error.message}`)
    }
    return error
  }
  return fromPayload(JSON.parse(error.message.slice(NATIVE_ERROR_PREFIX.length)) as NativeErrorPayload)
}

function fromPayload(payload: NativeErrorPayload): Error {
  const { errorLabels } = payload
  const message = redactCredentials(payload.message)
  // No `cause`: the napi error is only the payload's carrier, not a failure the user could act on.
  const options = { errorLabels }
  switch (payload.kind) {
    case 'server':
      return new MongoServerError(message, {
        ...options,
        code: payload.code as number,
        codeName: payload.codeName!,
      })
    case 'authentication':
      // The server answers a failed SCRAM conversation with code 18, which is what users check.
      return new MongoServerError(message, { ...options, code: 18, codeName: 'AuthenticationFailed' })
    case 'serverSelection':
      return new MongoServerSelectionError(message, topologyOf(payload))
    case 'network':
      return networkError(message, payload)
    case 'dns':
      // A failed SRV lookup: the official driver lets node:dns's error through, a plain `Error`
      // (`querySrv ENODATA _mongodb._tcp.<host>`, `code`, `syscall`, `hostname`), no MongoError.
      return Object.assign(new Error(message), {
        code: payload.code,
        syscall: payload.syscall,
        hostname: payload.hostname,
      })
    case 'networkTimeout':
      return new MongoNetworkTimeoutError(message, options)
    case 'operationTimeout':
      return new MongoOperationTimeoutError(message, options)
    case 'waitQueueTimeout':
      // The official driver's message, which names no server (the error's `address` does).
      return new MongoWaitQueueTimeoutError(
        'Timed out while checking out a connection from connection pool',
        payload.address ?? '',
      )
    case 'invalidArgument':
      return new MongoInvalidArgumentError(message, options)
    case 'cursorExhausted':
      return new MongoCursorExhaustedError(message, options)
    case 'parse':
      return new MongoParseError(message, options)
    case 'api':
      return new MongoAPIError(message, options)
    case 'compatibility':
      return new MongoCompatibilityError(message, options)
    case 'closed':
      return new MongoNotConnectedError('Client must be connected before running operations', options)
    case 'clientClosed':
      return new MongoClientClosedError(message, options)
    case 'bson':
      return new BSONError(message)
    // A malformed reply, refused as the official driver's parser refuses it, with the class that
    // parser throws. js-bson's BSONOffsetError has no `code` (it is typed by its class, as every
    // BSONError); the RangeError of a length past the message's end gets the `code` Node.js gives
    // the same failure of its own Buffer reads (the official driver's has none).
    case 'bsonOffset':
      return new BSONOffsetError(message, payload.offset ?? 0)
    case 'range':
      return Object.assign(new RangeError(message), { code: 'ERR_BUFFER_OUT_OF_BOUNDS' })
    case 'decompression':
      return new MongoDecompressionError(message, options)
    case 'callbackFailure': {
      const failure = callbackFailures.get(payload.id!)
      if (failure === undefined) return new MongoOIDCError(message, options)
      // Several operations may report one failure (the connections of a burst share a token).
      return failure instanceof Error ? failure : new MongoOIDCError(String(failure), options)
    }
    default:
      return new MongoRuntimeError(message, options)
  }
}

/** A server-selection payload's servers as the official driver's `TopologyDescription`. */
function topologyOf(payload: NativeErrorPayload): TopologyDescription {
  const servers = new Map<string, ServerDescription>()
  for (const server of payload.servers ?? []) {
    servers.set(server.address, {
      address: server.address,
      // The crate's `RsPrimary` is the official driver's `RSPrimary`.
      type: server.type.replace(/^Rs/, 'RS'),
      error: server.error ? (fromPayload(server.error) as MongoError) : null,
    })
  }
  return new TopologyDescription(payload.topologyType ?? 'Unknown', servers)
}

/** Node.js's `errno` for a network error `code` (getaddrinfo's `ENOTFOUND` is libuv's `EAI_NONAME`). */
function libuvErrno(code: string): number | undefined {
  const name = code === 'ENOTFOUND' ? 'EAI_NONAME' : code
  for (const [errno, [errorName]] of getSystemErrorMap()) if (errorName === name) return errno
  return undefined
}

/**
 * A network error as the official driver gives it: a connection failure is a `MongoNetworkError`
 * whose `cause` is Node.js's own error for it (`code`, `syscall`, `address`, `port`).
 */
function networkError(message: string, payload: NativeErrorPayload): MongoNetworkError {
  const { code, syscall, errorLabels } = payload
  if (typeof code !== 'string') return new MongoNetworkError(message, { errorLabels })
  if (syscall === undefined) {
    // A TLS failure: Node.js's error names OpenSSL's reason in its `code` (`CERT_HAS_EXPIRED`).
    return new MongoNetworkError(message, { cause: Object.assign(new Error(message), { code }), errorLabels })
  }
  const system: NodeJS.ErrnoException & { address?: string; port?: number; hostname?: string } =
    Object.assign(new Error(message), { code, syscall })
  system.errno = libuvErrno(code)
  if (payload.address) {
    // `host:port`, the host of an IPv6 address in brackets.
    const separator = payload.address.lastIndexOf(':')
    const host = payload.address.slice(0, separator).replace(/^\[|\]$/g, '')
    if (syscall === 'getaddrinfo') {
      system.hostname = host
    } else {
      system.address = host
      system.port = Number(payload.address.slice(separator + 1))
    }
  }
  return new MongoNetworkError(message, { cause: system, errorLabels })
}

/**
 * Awaits a native call and rethrows its failure as the matching typed error. A command listener
 * that threw on one of the call's command events fails the call with what the official driver
 * gives for it (`listenerError`), whatever the call's own outcome; a cursor it opened is closed.
 */
export async function callNative<T>(call: () => Promise<T>): Promise<T> {
  let listenedTag = 0
  let value: T
  try {
    const tagged = withCallTag(call)
    listenedTag = tagged.listenedTag
    value = await tagged.result
  } catch (error) {
    const failure = listenedTag === 0 ? null : await listenerFailure(listenedTag)
    throw failure ? listenerError(failure.thrown) : translateNativeError(error)
  }
  // Untagged (no listener anywhere): no await, the hot path stays as it was.
  const failure = listenedTag === 0 ? null : await listenerFailure(listenedTag)
  if (failure) {
    closeOpenedCursor(value)
    throw listenerError(failure.thrown)
  }
  return value
}

/**
 * Runs a synchronous native call and rethrows its failure as the matching typed error. It runs no
 * command of its own that a listener could fail (a cursor it drops is killed later).
 */
export function callNativeSync<T>(call: () => T): T {
  try {
    return withCallTag(call, { listened: false }).result
  } catch (error) {
    throw translateNativeError(error)
  }
}

/**
 * What a read rejects with when a command listener threw `thrown`, as in the official driver
 * (its `decorateCommandError`): the value itself when it is an error (an object with a `name`),
 * else a `MongoRuntimeError` naming its type (`undefined`, a number, a symbol, `{ code }`).
 */
export function listenerError(thrown: unknown): unknown {
  if (typeof thrown !== 'object' || thrown === null || !('name' in thrown)) {
    return new MongoRuntimeError(`An unexpected error type: ${typeof thrown}`)
  }
  return thrown
}

/** Closes the server cursor of a find or aggregate's result that is not handed out. */
function closeOpenedCursor(value: unknown): void {
  const cursor = (value as { cursor?: { close?: unknown } } | null | undefined)?.cursor
  if (typeof cursor?.close === 'function') {
    Promise.resolve(cursor.close.call(cursor)).catch(() => {})
  }
}
