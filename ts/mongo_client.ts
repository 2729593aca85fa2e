/**
 * `MongoClient` and `Db`: connection and namespaces, as in the official driver.
 * @module
 */
import {
  describe,
  DEFAULT_BSON_OPTIONS,
  isBSONOptionName,
  resolveBSONOptions,
  type BSONOptions,
  type ResolvedBSONOptions,
} from './bson.js'
import { Collection, type CollectionOptions } from './collection.js'
import type { Document } from 'bson'
import {
  callNative,
  callNativeSync,
  MongoInvalidArgumentError,
  MongoNotConnectedError,
  MongoParseError,
} from './errors.js'
import { ClientMonitor, TypedEventEmitter, type MongoClientEvents } from './events.js'
import { CommandLogger, type LoggingOptions } from './logging.js'
import { NativeClient, type NativeCollection } from './native.cjs'
import { CommandTracer, startTracing, tracerProviderRegistered } from './telemetry.js'

/**
 * Client options: the connection-string options (same names as in the URI and the official
 * driver), `auth`, and the BSON options inherited by every database, collection and operation.
 */
export interface MongoClientOptions extends BSONOptions, LoggingOptions {
  auth?: { username?: string; password?: string }
  appName?: string
  authMechanism?: string
  authSource?: string
  compressors?: string | string[]
  connectTimeoutMS?: number
  directConnection?: boolean
  heartbeatFrequencyMS?: number
  loadBalanced?: boolean
  localThresholdMS?: number
  maxConnecting?: number
  maxIdleTimeMS?: number
  maxPoolSize?: number
  maxStalenessSeconds?: number
  minPoolSize?: number
  /**
   * Emit `commandStarted`, `commandSucceeded` and `commandFailed` events (off by default, as in
   * the official driver). Pool and server events are emitted to their listeners either way.
   */
  monitorCommands?: boolean
  readConcernLevel?: string
  readPreference?: string
  replicaSet?: string
  retryReads?: boolean
  serverMonitoringMode?: 'auto' | 'poll' | 'stream'
  serverSelectionTimeoutMS?: number
  /**
   * OpenTelemetry spans for this client's commands, as `@opentelemetry/instrumentation-mongodb`
   * makes them for the official driver: on (the default) when `@opentelemetry/api` is installed and
   * a tracer provider is registered when the client connects; `false` turns them off.
   */
  tracing?: boolean
  /**
   * Bound on each round trip to the server (a command or a getMore; server selection and waiting
   * for a pooled connection included); fails with `MongoNetworkTimeoutError`. `0` (the default):
   * no limit.
   */
  socketTimeoutMS?: number
  srvMaxHosts?: number
  srvServiceName?: string
  ssl?: boolean
  tls?: boolean
  tlsAllowInvalidCertificates?: boolean
  tlsAllowInvalidHostnames?: boolean
  tlsCAFile?: string
  tlsCertificateKeyFile?: string
  tlsCertificateKeyFilePassword?: string
  tlsInsecure?: boolean
  /**
   * Default client-side time limit of every operation, in milliseconds (see
   * `ReadOperationOptions.timeoutMS`). `0` (the default): no limit.
   */
  timeoutMS?: number
  waitQueueTimeoutMS?: number
  zlibCompressionLevel?: number
}

/** Options that go into the connection string as they are. */
const URI_OPTIONS = new Set<string>([
  'appName',
  'authMechanism',
  'authSource',
  'compressors',
  'connectTimeoutMS',
  'directConnection',
  'heartbeatFrequencyMS',
  'loadBalanced',
  'localThresholdMS',
  'maxConnecting',
  'maxIdleTimeMS',
  'maxPoolSize',
  'maxStalenessSeconds',
  'minPoolSize',
  'readConcernLevel',
  'readPreference',
  'replicaSet',
  'retryReads',
  'serverMonitoringMode',
  'serverSelectionTimeoutMS',
  'srvMaxHosts',
  'srvServiceName',
  'ssl',
  'tls',
  'tlsAllowInvalidCertificates',
  'tlsAllowInvalidHostnames',
  'tlsCAFile',
  'tlsCertificateKeyFile',
  'tlsCertificateKeyFilePassword',
  'tlsInsecure',
  'waitQueueTimeoutMS',
  'zlibCompressionLevel',
])

/** Official driver options that change behaviour rumongo does not implement: rejected, not ignored. */
const UNSUPPORTED_CLIENT_OPTIONS = [
  'autoEncryption',
  'proxyHost',
  'proxyPort',
  'proxyUsername',
  'proxyPassword',
  'driverInfo',
  'serverApi',
]

/**
 * The connection string's parts, split as mongodb-connection-string-url (the official driver's
 * parser) splits them: user info up to the first `@`, a user name without `:` or `@`.
 */
const URI_PATTERN =
  /^(?<scheme>[^/]+:\/\/)(?:(?<username>[^:@]*)(?::(?<password>[^@]*))?@)?(?<hosts>(?!:)[^/?@]*)(?<rest>.*)$/s

/** Characters the user info must percent-encode (the official driver's list). */
const UNESCAPED_USERINFO = /[:/?#[\]@]/

interface ParsedUri {
  scheme: string
  userinfo: string | undefined
  hosts: string
  path: string
  query: string
}

/**
 * Splits a connection string, checking its user info exactly as the official driver does, with
 * its messages, before anything else reads it: a password with an unescaped `?`, `@`, `/` or `:`
 * must fail here, where no message quotes it, rather than be read as a host or an option.
 */
function parseUri(uri: unknown): ParsedUri {
  if (typeof uri !== 'string')
    throw new MongoParseError(`connection string must be a string, got ${describe(uri)}`)
  if (!uri.startsWith('mongodb://') && !uri.startsWith('mongodb+srv://')) {
    throw new MongoParseError(
      'Invalid scheme, expected connection string to start with "mongodb://" or "mongodb+srv://"',
    )
  }
  const match = URI_PATTERN.exec(uri)
  if (!match) throw new MongoParseError('Invalid connection string')
  const { scheme, username, password, hosts, rest } = match.groups as Record<string, string | undefined>
  if (!hosts) throw new MongoParseError('Protocol and host list are required in the uri')
  for (const part of [username, password]) {
    try {
      decodeURIComponent(part ?? '')
    } catch (error) {
      // "URI malformed": the official message, which quotes nothing.
      throw new MongoParseError((error as Error).message)
    }
  }
  if (username !== undefined && UNESCAPED_USERINFO.test(username)) {
    throw new MongoParseError(`Username contains unescaped characters ${username}`)
  }
  if (!username || !password) {
    const afterScheme = uri.slice(scheme!.length)
    if (afterScheme.startsWith('@') || afterScheme.startsWith(':')) {
      throw new MongoParseError('URI contained empty userinfo section')
    }
  }
  if (password !== undefined && UNESCAPED_USERINFO.test(password)) {
    throw new MongoParseError('Password contains unescaped characters')
  }
  if (/^[^/?]*@/.test(rest!)) throw new MongoParseError('Invalid connection string')
  const [, path = '', query = ''] = /^(\/[^?]*)?(\?.*)?$/s.exec(rest!) ?? []
  const userinfo =
    username === undefined ? undefined : password === undefined ? username : `${username}:${password}`
  return { scheme: scheme!, userinfo, hosts, path, query }
}

/** Client time limits rumongo enforces itself (the Rust driver has neither option). */
interface ClientTimeouts {
  timeoutMS?: number
  socketTimeoutMS?: number
}

const TIMEOUT_OPTIONS = ['timeoutMS', 'socketTimeoutMS'] as const

function parseTimeout(name: string, value: unknown): number {
  const parsed = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value
  if (typeof parsed !== 'number' || !Number.isSafeInteger(parsed) || parsed < 0) {
    throw new MongoParseError(`${name} must be a non-negative integer, got ${describe(value)}`)
  }
  return parsed
}

/** Takes the time limits out of the connection string's query and the options (which win). */
function takeTimeouts(query: URLSearchParams, options: MongoClientOptions): ClientTimeouts {
  const timeouts: ClientTimeouts = {}
  for (const [key, value] of [...query]) {
    const name = TIMEOUT_OPTIONS.find((option) => option.toLowerCase() === key.toLowerCase())
    if (name === undefined) continue
    query.delete(key)
    timeouts[name] = parseTimeout(name, value)
  }
  for (const name of TIMEOUT_OPTIONS) {
    if (options[name] !== undefined) timeouts[name] = parseTimeout(name, options[name])
  }
  return timeouts
}

/** The connection string with `options` merged into its query, and the client's time limits. */
function buildUri(parsed: ParsedUri, options: MongoClientOptions): { uri: string; timeouts: ClientTimeouts } {
  let { userinfo } = parsed
  const query = new URLSearchParams(parsed.query.slice(1))
  const timeouts = takeTimeouts(query, options)
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined || isBSONOptionName(key)) continue
    if (key === 'auth') {
      const { username = '', password } = value as NonNullable<MongoClientOptions['auth']>
      userinfo =
        encodeURIComponent(username) + (password === undefined ? '' : `:${encodeURIComponent(password)}`)
    } else if (URI_OPTIONS.has(key)) {
      query.set(key, Array.isArray(value) ? value.join(',') : String(value))
    } else if (UNSUPPORTED_CLIENT_OPTIONS.includes(key)) {
      throw new MongoInvalidArgumentError(`rumongo does not support the client option "${key}"`)
    }
  }
  const search = query.toString()
  const credentials = userinfo === undefined ? '' : `${userinfo}@`
  const uri = `${parsed.scheme}${credentials}${parsed.hosts}${parsed.path || '/'}${search ? `?${search}` : ''}`
  return { uri, timeouts }
}

/**
 * What the Rust driver reads in place of the password: the password goes to it apart from the
 * connection string, so that no message of the crate quoting the string can quote the password.
 */
const PASSWORD_STAND_IN = 'redacted'

/** The connection string with a stand-in for its password, and the password (decoded). */
function separatePassword(uri: string): { uri: string; password: string | undefined } {
  const parsed = parseUri(uri)
  const separator = parsed.userinfo?.indexOf(':') ?? -1
  if (separator < 0) return { uri, password: undefined }
  const username = parsed.userinfo!.slice(0, separator)
  return {
    uri: `${parsed.scheme}${username}:${PASSWORD_STAND_IN}@${parsed.hosts}${parsed.path}${parsed.query}`,
    password: decodeURIComponent(parsed.userinfo!.slice(separator + 1)),
  }
}

/** `monitorCommands` as the official driver reads it: a boolean, or "true" / "false". */
function parseMonitorCommands(value: unknown): boolean {
  if (value === undefined) return false
  if (value === true || value === 'true') return true
  if (value === false || value === 'false') return false
  throw new MongoParseError('monitorCommands must be either "true" or "false"')
}

/** A database's collections. Get one with `client.db(name)`. */
export class Db {
  readonly #client: MongoClient
  readonly #name: string
  readonly #bsonOptions: ResolvedBSONOptions

  /** @internal Created by `MongoClient.db`. */
  constructor(client: MongoClient, name: string, options?: BSONOptions) {
    if (typeof name !== 'string' || name.length === 0 || /[ ."$/\\\0]/.test(name)) {
      throw new MongoInvalidArgumentError(`invalid database name ${JSON.stringify(name)}`)
    }
    this.#client = client
    this.#name = name
    this.#bsonOptions = resolveBSONOptions(options, client.bsonOptions)
  }

  get databaseName(): string {
    return this.#name
  }

  get bsonOptions(): ResolvedBSONOptions {
    return { ...this.#bsonOptions }
  }

  /** A collection handle; no I/O until an operation runs. */
  collection<TSchema extends Document = Document>(
    name: string,
    options?: CollectionOptions,
  ): Collection<TSchema> {
    // One native handle per connected native client: a handle per operation would cost every
    // small read a native call and a wrapped object.
    let handle: { client: NativeClient; collection: NativeCollection } | undefined
    return new Collection<TSchema>(
      {
        databaseName: this.#name,
        bsonOptions: this.#bsonOptions,
        nativeCollection: async (collection) => {
          const client = await this.#client.nativeClient()
          if (handle?.client !== client) {
            handle = { client, collection: callNativeSync(() => client.collection(this.#name, collection)) }
          }
          return handle.collection
        },
      },
      name,
      options,
    )
  }
}

/**
 * A client for a MongoDB deployment. Operations connect it on first use; `close()` ends it.
 * Its password (connection string or `auth`) reaches the Rust driver apart from the connection
 * string, so that no error message can quote it; neither it nor the connection string shows in
 * `util.inspect`.
 */
export class MongoClient extends TypedEventEmitter<MongoClientEvents> {
  readonly #uri: string
  readonly #password: string | undefined
  readonly #timeouts: ClientTimeouts
  readonly #defaultDb: string
  readonly #bsonOptions: ResolvedBSONOptions
  readonly #monitorCommands: boolean
  readonly #tracing: boolean
  #tracingClaim: { release(): void } | null = null
  /** @internal Relays the native client's monitoring events to this emitter's listeners. */
  readonly monitor: ClientMonitor
  #native: Promise<NativeClient> | null = null
  /** The native client once connected: told at once when the set of listened events changes. */
  #connected: NativeClient | null = null
  #closed = false

  constructor(url: string, options: MongoClientOptions = {}) {
    super()
    if (typeof options !== 'object' || options === null) {
      throw new MongoInvalidArgumentError(`client options must be an object, got ${describe(options)}`)
    }
    this.#monitorCommands = parseMonitorCommands(options.monitorCommands)
    if (options.tracing !== undefined && typeof options.tracing !== 'boolean') {
      throw new MongoInvalidArgumentError(`tracing must be a boolean, got ${describe(options.tracing)}`)
    }
    this.#tracing = options.tracing ?? true
    this.monitor = new ClientMonitor(this, (mask) => this.#connected?.setEventMask(mask), {
      monitorCommands: this.#monitorCommands,
      logger: CommandLogger.resolve(options),
    })
    const parsed = parseUri(url)
    const { uri, timeouts } = buildUri(parsed, options)
    const separated = separatePassword(uri)
    this.#uri = separated.uri
    this.#password = separated.password
    this.#timeouts = timeouts
    this.#defaultDb = decodeURIComponent(parsed.path.slice(1)) || 'test'
    this.#bsonOptions = resolveBSONOptions(options, DEFAULT_BSON_OPTIONS)
  }

  /** @internal */
  protected override listenersChanged(): void {
    // Called by EventEmitter methods, the first time from the base constructor's own setup.
    this.monitor?.listenersChanged()
  }

  /** Creates a client and connects it. */
  static async connect(url: string, options?: MongoClientOptions): Promise<MongoClient> {
    return new MongoClient(url, options).connect()
  }

  /**
   * Connects (selects a server and pings it). Optional: operations connect on first use. A closed
   * client connects again.
   * @throws MongoNotConnectedError when `close()` was called before the connection completed.
   */
  async connect(): Promise<this> {
    this.#closed = false
    await this.nativeClient()
    // close() while connecting closed what this connected: the client is not usable.
    if (this.#closed) throw new MongoNotConnectedError('Client was closed while connecting')
    return this
  }

  /** The client's default `timeoutMS` (`undefined`: none). */
  get timeoutMS(): number | undefined {
    return this.#timeouts.timeoutMS
  }

  /** BSON options inherited by this client's databases. */
  get bsonOptions(): ResolvedBSONOptions {
    return { ...this.#bsonOptions }
  }

  /** A database handle; `name` defaults to the connection string's database, else `test`. */
  db(name: string = this.#defaultDb, options?: BSONOptions): Db {
    return new Db(this, name, options)
  }

  /** @internal The connected native client, connecting on first use. */
  nativeClient(): Promise<NativeClient> {
    if (this.#closed) {
      return Promise.reject(new MongoNotConnectedError('Client must be connected before running operations'))
    }
    const { timeoutMS, socketTimeoutMS } = this.#timeouts
    this.#native ??= this.#connectNative(timeoutMS, socketTimeoutMS).catch((error: unknown) => {
      this.#native = null
      throw error
    })
    return this.#native
  }

  async #connectNative(timeoutMS?: number, socketTimeoutMS?: number): Promise<NativeClient> {
    const monitor = this.monitor
    monitor.openTopology()
    const tracing = this.#tracing && tracerProviderRegistered()
    const native = await callNative(() =>
      NativeClient.connect(
        this.#uri,
        timeoutMS,
        socketTimeoutMS,
        this.#password,
        monitor.receive,
        monitor.mask,
        monitor.commandsWanted,
        tracing,
      ),
    )
    if (tracing) {
      monitor.tracer = new CommandTracer()
      this.#tracingClaim = startTracing()
    }
    // Listeners added or removed while connecting.
    native.setEventMask(monitor.mask)
    this.#connected = native
    return native
  }

  /**
   * @internal How many of this client's cursors are open on the server (not exhausted or closed).
   * For leak checks (the soak test); 0 when not connected.
   */
  async openCursorCount(): Promise<number> {
    const client = await this.#native?.catch(() => null)
    return client?.openCursorCount ?? 0
  }

  /** Kills open cursors, closes every connection. Operations after it fail until `connect()`. */
  async close(): Promise<void> {
    this.#closed = true
    const native = this.#native
    this.#native = null
    this.#connected = null
    const client = await native?.catch(() => null)
    if (client) await callNative(() => client.close())
    this.#tracingClaim?.release()
    this.#tracingClaim = null
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }
}
