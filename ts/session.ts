/**
 * `ClientSession`: an explicit session of a rumongo client (`client.startSession()`), for causally
 * consistent reads (`afterClusterTime`) and snapshot reads (`atClusterTime`), as the official
 * driver's. It wraps the Rust driver's session: the Rust driver sends `lsid`, the read concern's
 * cluster time and `$clusterTime` with each command and getMore of a read given `{ session }`.
 * rumongo runs reads only: no transactions.
 * @module
 */
import { BSON, type Binary, type Document, type Timestamp } from 'bson'
import {
  callNative,
  callNativeSync,
  MongoExpiredSessionError,
  MongoInvalidArgumentError,
  MongoTransactionError,
} from './errors.js'
import { toBSON } from './bson.js'
import { bsonTypeOf, describe, isPlainObject } from './validate.js'
import type { NativeClient, NativeSession } from './native.cjs'

/** Options of `client.startSession()`: the official driver's read options. */
export interface ClientSessionOptions {
  /** Reads see the writes and reads before them in the session (default true, unless snapshot). */
  causalConsistency?: boolean
  /** Every read of the session reads the data at one point in time (`atClusterTime`). */
  snapshot?: boolean
}

/** A session's id, `lsid` on the wire. */
export interface ServerSessionId {
  id: Binary
}

/** The `$clusterTime` a session gossips. */
export interface ClusterTime {
  clusterTime: Timestamp
  signature?: { hash: Binary; keyId: unknown }
}

/** What the official driver's transaction methods say on a rumongo session. */
const NO_TRANSACTIONS =
  'rumongo runs reads only and has no transactions: run a transaction with the official driver'

/** A session of a rumongo client. Create it with `client.startSession()`. */
export class ClientSession {
  readonly #native: NativeSession
  readonly #options: Readonly<ClientSessionOptions>
  readonly #onEnd: () => void
  #ended = false
  /** The latest `$clusterTime` given to `advanceClusterTime`. */
  #advancedClusterTime: ClusterTime | undefined = undefined
  /** Always true: rumongo has no implicit sessions the application sees. */
  readonly explicit = true

  /** @internal Created by `MongoClient.startSession`. */
  constructor(client: NativeClient, options: ClientSessionOptions, onEnd: () => void) {
    this.#options = Object.freeze({ ...options })
    this.#onEnd = onEnd
    this.#native = callNativeSync(() => client.startSession(options.causalConsistency, options.snapshot))
  }

  /** The session's id, `{ id: UUID }`, as the server sees it in `lsid`. */
  get id(): ServerSessionId {
    return BSON.deserialize(this.#native.id) as ServerSessionId
  }

  /** Whether `endSession()` ran (or the client closed). */
  get hasEnded(): boolean {
    return this.#ended
  }

  /** The latest `$clusterTime` the session saw. */
  get clusterTime(): ClusterTime | undefined {
    const seen = (this.#times().clusterTime as ClusterTime | null) ?? undefined
    // The one `advanceClusterTime` was given, as long as it is the latest: the official driver
    // keeps that object (its `keyId` as given, where one the server gave is decoded).
    const advanced = this.#advancedClusterTime
    if (seen && advanced?.clusterTime.equals(seen.clusterTime)) return advanced
    return seen
  }

  /** The `operationTime` of the session's latest read. */
  get operationTime(): Timestamp | undefined {
    return (this.#times().operationTime as Timestamp | null) ?? undefined
  }

  /**
   * Advances the session's `$clusterTime` to `clusterTime` (the `$clusterTime` another session saw)
   * if it is later: the session's next command gossips it. Checked with the official driver's
   * words.
   */
  advanceClusterTime(clusterTime: ClusterTime): void {
    if (!clusterTime || typeof clusterTime !== 'object') {
      throw new MongoInvalidArgumentError('input cluster time must be an object')
    }
    if (!isTimestamp(clusterTime.clusterTime)) {
      throw new MongoInvalidArgumentError(
        'input cluster time "clusterTime" property must be a valid BSON Timestamp',
      )
    }
    const signature = clusterTime.signature as { hash?: unknown; keyId?: unknown } | undefined
    const keyId = signature?.keyId
    if (
      !signature ||
      bsonTypeOf(signature.hash) !== 'Binary' ||
      (typeof keyId !== 'bigint' && typeof keyId !== 'number' && bsonTypeOf(keyId) !== 'Long')
    ) {
      throw new MongoInvalidArgumentError(
        'input cluster time must have a valid "signature" property with BSON Binary hash and BSON Long keyId',
      )
    }
    callNativeSync(() => this.#native.advanceClusterTime(toBSON(clusterTime, {})))
    if (this.clusterTime?.clusterTime.equals(clusterTime.clusterTime)) this.#advancedClusterTime = clusterTime
  }

  /**
   * Advances the session's operation time to `operationTime` if it is later: the next causally
   * consistent read of the session reads after it (`afterClusterTime`). The official driver takes
   * anything and fails later; a value that is not a Timestamp is refused here.
   */
  advanceOperationTime(operationTime: Timestamp): void {
    if (!isTimestamp(operationTime)) {
      throw new MongoInvalidArgumentError(
        `operationTime must be a BSON Timestamp, got ${describe(operationTime)}`,
      )
    }
    callNativeSync(() => this.#native.advanceOperationTime(toBSON({ operationTime }, {})))
  }

  /** Whether reads of this session read at one point in time. */
  get snapshotEnabled(): boolean {
    return this.#options.snapshot === true
  }

  /** The session's options: `causalConsistency` defaults to true unless `snapshot`. */
  get supports(): { causalConsistency: boolean } {
    return { causalConsistency: this.#options.causalConsistency ?? this.#options.snapshot !== true }
  }

  /** Whether the session's reads are causally consistent. */
  isCausallyConsistent(): boolean {
    return this.supports.causalConsistency
  }

  /** Always false: rumongo has no transactions. */
  inTransaction(): boolean {
    return false
  }

  startTransaction(): never {
    throw new MongoTransactionError(NO_TRANSACTIONS)
  }

  commitTransaction(): Promise<never> {
    return Promise.reject(new MongoTransactionError(NO_TRANSACTIONS))
  }

  abortTransaction(): Promise<never> {
    return Promise.reject(new MongoTransactionError(NO_TRANSACTIONS))
  }

  withTransaction(): Promise<never> {
    return Promise.reject(new MongoTransactionError(NO_TRANSACTIONS))
  }

  /**
   * Ends the session: its server session goes back to the client's pool (the client ends those on
   * the server when it closes). Waits for a read of the session in flight. Idempotent.
   */
  async endSession(): Promise<void> {
    if (this.#ended) return
    this.#ended = true
    this.#onEnd()
    await callNative(() => this.#native.end())
  }

  /** @internal The client closed: its sessions ended on the native side. */
  markEnded(): void {
    this.#ended = true
  }

  /**
   * @internal What an operation's options carry to the native side: the number the session is
   * registered under. js-bson calls it when it serializes the options.
   */
  toBSON(): number {
    return this.#native.number
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.endSession()
  }

  #times(): Document {
    return BSON.deserialize(this.#native.times)
  }
}

/** A BSON Timestamp of either copy of js-bson (rumongo's or the official driver's). */
function isTimestamp(value: unknown): value is Timestamp {
  return bsonTypeOf(value) === 'Timestamp'
}

/** Checks `startSession()`'s options as the official driver does. */
export function checkSessionOptions(options: unknown): ClientSessionOptions {
  if (options === undefined || options === null) return {}
  if (!isPlainObject(options)) {
    throw new MongoInvalidArgumentError(`session options must be an object, got ${describe(options)}`)
  }
  for (const key of ['causalConsistency', 'snapshot'] as const) {
    const value = options[key]
    if (value !== undefined && typeof value !== 'boolean') {
      throw new MongoInvalidArgumentError(`session option "${key}" must be a boolean, got ${describe(value)}`)
    }
  }
  if (options.snapshot === true && options.causalConsistency === true) {
    // The official driver's words (ClientSession's constructor).
    throw new MongoInvalidArgumentError(
      'Properties "causalConsistency" and "snapshot" are mutually exclusive',
    )
  }
  return { causalConsistency: options.causalConsistency, snapshot: options.snapshot }
}

/**
 * The `session` option of a read: a rumongo session that has not ended. A session of the official
 * driver cannot be joined (its server session, cluster times and transaction live in the other
 * driver's client), so it is refused saying which to use, and why when it is in a transaction.
 */
export function checkSession(operation: string, value: unknown): ClientSession {
  if (value instanceof ClientSession) {
    // The official driver's words for a read in an ended session.
    if (value.hasEnded) throw new MongoExpiredSessionError('Use of expired sessions is not permitted')
    return value
  }
  if (isOfficialSession(value)) {
    if (value.inTransaction()) {
      throw new MongoInvalidArgumentError(
        `${operation} option "session" is a session of the official driver in a transaction: rumongo ` +
          'runs no reads inside a transaction (it has no transactions); run the reads of the ' +
          'transaction with the official driver',
      )
    }
    throw new MongoInvalidArgumentError(
      `${operation} option "session" is a session of the official driver, which rumongo cannot ` +
        "join: start the session with rumongo's client.startSession()",
    )
  }
  throw new MongoInvalidArgumentError(
    `${operation} option "session" must be a ClientSession of rumongo's client.startSession(), got ${describe(value)}`,
  )
}

/** Whether `value` looks like the official driver's `ClientSession`. */
function isOfficialSession(value: unknown): value is { inTransaction(): boolean } {
  if (typeof value !== 'object' || value === null) return false
  const session = value as Record<string, unknown>
  return (
    typeof session.inTransaction === 'function' &&
    typeof session.endSession === 'function' &&
    'serverSession' in session
  )
}
