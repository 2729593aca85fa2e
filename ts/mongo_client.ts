/**
 * `MongoClient` and `Db`: connection and namespaces, as in the official driver.
 * @module
 */
import {
  DEFAULT_BSON_OPTIONS,
  isBSONOptionName,
  resolveBSONOptions,
  type BSONOptions,
  type ResolvedBSONOptions,
} from './bson.js'
import type { Document } from 'bson'
import { getServers } from 'node:dns'
import { readFile } from 'node:fs/promises'
import {
  checkAwsCredentials,
  checkOidcOptions,
  mechanismProperty,
  nativeOidcCallback,
  passwordFor,
  takeOidcCallback,
  type AuthMechanism,
} from './auth.js'
import {
  checkClientOptionNames,
  checkClientOptionValues,
  describeClientOptions,
  isUriOption,
  officialOptionName,
  parseBoolean,
  parseDriverInfo,
  parseServerApi,
  rustDriverQuery,
  tlsFiles,
  uriOptionValues,
  type CompressorName,
} from './client_options.js'
import { ActiveCursors } from './active_cursors.js'
import { Db, type DbOptions } from './db.js'
import {
  WATCH_CLUSTER,
  type ChangeStream,
  type ChangeStreamDocument,
  type ChangeStreamOptions,
} from './change_stream.js'
import type { InheritedOptions } from './inherit.js'
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
import {
  ReadConcern,
  ReadPreference,
  type ReadConcernLevel,
  type ServerApi,
  type ServerApiVersion,
} from './read_preference.js'
import type { ReadConcernLike, ReadPreferenceLike } from './options.js'
import { checkSessionOptions, ClientSession, type ClientSessionOptions } from './session.js'
import { describe } from './validate.js'

/**
 * Client options: the connection-string options (same names as in the URI and the official
 * driver), `auth`, and the BSON options inherited by every database, collection and operation.
 */
export interface MongoClientOptions extends BSONOptions, LoggingOptions {
  auth?: { username?: string; password?: string }
  /** The Stable API version to declare (sent with every command): `'1'` or `{ version, strict, deprecationErrors }`. */
  serverApi?: ServerApiVersion | ServerApi
  /** A library wrapping rumongo names itself in the connection handshake. */
  driverInfo?: { name?: string; version?: string; platform?: string }
  /** Emit command monitoring events. Default false. */
  monitorCommands?: boolean
  /** The database `client.db()` opens without a name (else the connection string's, else `test`). */
  dbName?: string
  /** The client's read concern: a level or `{ level }` (same as `readConcernLevel`). */
  readConcern?: ReadConcernLike
  authMechanismProperties?: Document
  readPreferenceTags?: Document[]
  appName?: string
  authMechanism?: AuthMechanism
  authSource?: string
  /** `['zstd', 'zlib']` or the connection string's form, `'zstd,zlib'`. */
  compressors?: CompressorName[] | string
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
  readConcernLevel?: ReadConcernLevel
  readPreference?: ReadPreferenceLike
  replicaSet?: string
  retryReads?: boolean
  serverMonitoringMode?: 'auto' | 'poll' | 'stream'
  serverSelectionTimeoutMS?: number
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
  zlibCompressionLevel?: 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | undefined
  /** Write options: accepted for code shared with the official driver; rumongo never writes. */
  w?: number | string
  journal?: boolean
  wtimeoutMS?: number
  writeConcern?: Document
  retryWrites?: boolean
  forceServerObjectId?: boolean
  checkKeys?: boolean
  pkFactory?: unknown
  /**
   * OpenTelemetry spans for this client's commands, as `@opentelemetry/instrumentation-mongodb`
   * makes them for the official driver: on (the default) when `@opentelemetry/api` is installed and
   * a tracer provider is registered when the client connects; `false` turns them off.
   */
  tracing?: boolean
}

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
  // The official parser's checks of an SRV name, with its messages (the Rust driver's differ).
  if (scheme === 'mongodb+srv://') {
    const names = hosts.split(',')
    if (names.length !== 1) throw new MongoParseError('mongodb+srv URI cannot have multiple service names')
    if (names.some((host) => host.includes(':'))) {
      throw new MongoParseError('mongodb+srv URI cannot have port number')
    }
  }
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

/** What a client is built from: the connection string for the Rust driver and what rumongo keeps. */
interface ResolvedClientOptions {
  uri: string
  /** The connection string's final query (options merged in). */
  query: URLSearchParams
  timeouts: ClientTimeouts
  /** BSON options from the connection string (the options object's win over them). */
  uriBSONOptions: BSONOptions
  serverApi: ServerApi | undefined
  driverInfo: { name?: string; version?: string; platform?: string }
  monitorCommands: boolean
  dbName: string | undefined
  /** The hedge of the `readPreference` option: a connection string cannot carry it. */
  readPreferenceHedge: Document | undefined
}

/** Takes the query keys whose official name is `name` out of `query`; returns the last value. */
function takeQueryOption(query: URLSearchParams, name: string): string | undefined {
  let value: string | undefined
  for (const key of [...query.keys()]) {
    if (officialOptionName(key) !== name) continue
    value = query.get(key) ?? undefined
    query.delete(key)
  }
  return value
}

/**
 * The connection string with `options` merged into its query (options win, as in the official
 * driver), and the options rumongo implements itself taken out of both.
 */
function resolveClientOptions(parsed: ParsedUri, options: MongoClientOptions): ResolvedClientOptions {
  let { userinfo } = parsed
  const query = new URLSearchParams(parsed.query.slice(1))
  checkClientOptionNames(query, options)
  const timeouts = takeTimeouts(query, options)
  const uriBSONOptions: Document = {}
  const fromQuery = new Map<string, string>()
  for (const key of [...query.keys()]) {
    const name = officialOptionName(key)!
    if (isUriOption(name)) continue
    const value = takeQueryOption(query, name)
    if (value !== undefined) fromQuery.set(name, value)
  }
  for (const [name, value] of fromQuery) {
    if (isBSONOptionName(name)) uriBSONOptions[name] = parseBoolean(name, value)
  }
  if (fromQuery.has('readConcern')) query.set('readConcernLevel', fromQuery.get('readConcern')!)
  let dbName = fromQuery.get('dbName')
  let readPreferenceHedge: Document | undefined
  let monitorCommands = fromQuery.has('monitorCommands')
    ? parseBoolean('monitorCommands', fromQuery.get('monitorCommands'))
    : false
  for (const [key, value] of Object.entries(options)) {
    if (value == null || isBSONOptionName(key)) continue
    const name = officialOptionName(key)!
    if (name === 'auth') {
      // As the official driver: both keys present (a value may be undefined).
      if (typeof value !== 'object' || !('username' in value) || !('password' in value)) {
        throw new MongoParseError("credentials must be an object with 'username' and 'password' properties")
      }
      const { username = '', password } = value as NonNullable<MongoClientOptions['auth']>
      userinfo =
        encodeURIComponent(username) + (password === undefined ? '' : `:${encodeURIComponent(password)}`)
    } else if (isUriOption(name)) {
      if (name === 'readPreference') {
        // As the official driver's client option (its connection_string.ts): the object's own fields
        // stand beside it, so a plain object's hedge counts here.
        readPreferenceHedge =
          typeof value === 'object'
            ? ReadPreference.fromOptions({ readPreference: value, ...value })!.hedge
            : undefined
      }
      const entries = uriOptionValues(name, value)
      for (const [entry] of entries) takeQueryOption(query, entry)
      takeQueryOption(query, name)
      for (const [entry, text] of entries) query.append(entry, text)
    } else if (name === 'readConcern') {
      const level = ReadConcern.fromOptions({ readConcern: value })?.level
      if (level === undefined) {
        throw new MongoInvalidArgumentError(
          `readConcern must be a level or { level }, got ${describe(value)}`,
        )
      }
      takeQueryOption(query, 'readConcernLevel')
      query.set('readConcernLevel', level)
    } else if (name === 'dbName') {
      if (typeof value !== 'string') {
        throw new MongoInvalidArgumentError(`dbName must be a string, got ${describe(value)}`)
      }
      dbName = value
    } else if (name === 'monitorCommands') {
      monitorCommands = parseBoolean(name, value)
    }
  }
  checkClientOptionValues(query)
  const search = rustDriverQuery(query).toString()
  const credentials = userinfo === undefined ? '' : `${userinfo}@`
  const uri = `${parsed.scheme}${credentials}${parsed.hosts}${parsed.path || '/'}${search ? `?${search}` : ''}`
  return {
    uri,
    query,
    timeouts,
    uriBSONOptions,
    serverApi: parseServerApi(options.serverApi),
    driverInfo: parseDriverInfo(options.driverInfo),
    monitorCommands,
    dbName,
    readPreferenceHedge,
  }
}

/**
 * What the Rust driver reads in place of the password: the password goes to it apart from the
 * connection string, so that no message of the crate quoting the string can quote the password.
 */
const PASSWORD_STAND_IN = 'redacted'

/** The connection string with a stand-in for its password, the password and the user name (decoded). */
function separatePassword(uri: string): {
  uri: string
  password: string | undefined
  username: string | undefined
} {
  const parsed = parseUri(uri)
  const separator = parsed.userinfo?.indexOf(':') ?? -1
  if (separator < 0) {
    const username = parsed.userinfo === undefined ? undefined : decodeURIComponent(parsed.userinfo)
    return { uri, password: undefined, username }
  }
  const username = parsed.userinfo!.slice(0, separator)
  return {
    uri: `${parsed.scheme}${username}:${PASSWORD_STAND_IN}@${parsed.hosts}${parsed.path}${parsed.query}`,
    password: decodeURIComponent(parsed.userinfo!.slice(separator + 1)),
    username: decodeURIComponent(username),
  }
}

/** A connection-string option's value, whatever the case of its name. */
function queryValue(query: URLSearchParams, name: string): string | undefined {
  for (const [key, value] of query) if (officialOptionName(key) === name) return value
  return undefined
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
  /** The `OIDC_CALLBACK` as the native side calls it, if one was given. */
  readonly #oidcCallback: ReturnType<typeof nativeOidcCallback> | undefined
  readonly #oidcHuman: boolean
  readonly #timeouts: ClientTimeouts
  readonly #defaultDb: string
  readonly #bsonOptions: ResolvedBSONOptions
  readonly #serverApi: ServerApi | undefined
  readonly #driverInfo: { name?: string; version?: string; platform?: string }
  readonly #options: Readonly<Document>
  /** What the client's databases start from instead of nothing (see the constructor). */
  readonly #dbDefaults: InheritedOptions
  readonly #tracing: boolean
  #tracingClaim: { release(): void } | null = null
  /** @internal Relays the native client's monitoring events to this emitter's listeners. */
  readonly monitor: ClientMonitor
  #native: Promise<NativeClient> | null = null
  /** The native client once connected: told at once when the set of listened events changes. */
  #connected: NativeClient | null = null
  /**
   * One native collection handle per namespace and connected native client: a handle per
   * operation would cost every small read a native call and a wrapped object.
   */
  #collections = new Map<string, NativeCollection>()
  #collectionsOf: NativeClient | null = null
  #closed = false
  /**
   * The close() under way: a second call waits for it (the official driver's `closeLock`), not only
   * for its own part, which has nothing left to close: it resolved before the first call's
   * killCursors reached the server.
   */
  #closing: Promise<void> | null = null
  /** Sessions started and not ended: `close()` ends them. */
  readonly #sessions = new Set<ClientSession>()
  /** Cursors open on the server: `close()` closes them (their buffered documents are not read). */
  readonly #activeCursors = new ActiveCursors()

  constructor(url: string, options: MongoClientOptions = {}) {
    super()
    if (typeof options !== 'object' || options === null) {
      throw new MongoInvalidArgumentError(`client options must be an object, got ${describe(options)}`)
    }
    if (options.tracing !== undefined && typeof options.tracing !== 'boolean') {
      throw new MongoInvalidArgumentError(`tracing must be a boolean, got ${describe(options.tracing)}`)
    }
    this.#tracing = options.tracing ?? true
    const parsed = parseUri(url)
    // The OIDC callback is a function: it reaches the native side apart from the connection string.
    const { options: uriOptions, oidc } = takeOidcCallback(options)
    const resolved = resolveClientOptions(parsed, uriOptions)
    this.monitor = new ClientMonitor(this, (mask) => this.#connected?.setEventMask(mask), {
      monitorCommands: resolved.monitorCommands,
      logger: CommandLogger.resolve(options),
    })
    const separated = separatePassword(resolved.uri)
    this.#uri = separated.uri
    const mechanism = queryValue(resolved.query, 'authMechanism') ?? ''
    const properties = queryValue(resolved.query, 'authMechanismProperties')
    checkAwsCredentials(mechanism, separated.username, separated.password !== undefined, properties)
    checkOidcOptions(
      mechanism,
      separated.username,
      separated.password !== undefined,
      properties,
      oidc !== undefined,
    )
    this.#password = passwordFor(separated.password, separated.username, mechanism)
    this.#oidcCallback =
      oidc && nativeOidcCallback(oidc, separated.username, mechanismProperty(properties, 'TOKEN_RESOURCE'))
    this.#oidcHuman = oidc?.human ?? false
    this.#timeouts = resolved.timeouts
    this.#defaultDb = resolved.dbName ?? (decodeURIComponent(parsed.path.slice(1)) || 'test')
    this.#bsonOptions = resolveBSONOptions(
      options,
      resolveBSONOptions(resolved.uriBSONOptions, DEFAULT_BSON_OPTIONS),
    )
    this.#serverApi = resolved.serverApi
    this.#driverInfo = resolved.driverInfo
    const bsonGiven = Object.fromEntries(
      Object.entries({ ...resolved.uriBSONOptions, ...options }).filter(
        ([key, value]) => isBSONOptionName(key) && value !== undefined,
      ),
    )
    this.#options = Object.freeze(
      describeClientOptions(resolved.query, {
        hosts: parsed.hosts,
        dbName: this.#defaultDb,
        serverApi: resolved.serverApi,
        driverInfo: resolved.driverInfo,
        monitorCommands: resolved.monitorCommands,
        timeoutMS: resolved.timeouts.timeoutMS,
        socketTimeoutMS: resolved.timeouts.socketTimeoutMS,
        bsonOptions: bsonGiven,
        readPreferenceHedge: resolved.readPreferenceHedge,
      }),
    )
    // The native client reads its read preference from the connection string, which cannot carry
    // a hedge: with one, the databases send the client's read preference with each operation.
    this.#dbDefaults = this.readPreference.hedge ? { readPreference: this.readPreference } : {}
  }

  /** @internal */
  protected override listenersChanged(): void {
    // Called by EventEmitter methods, the first time from the base constructor's own setup.
    this.monitor?.listenersChanged()
  }

  /**
   * The client's options as the official driver's `client.options` lists them (the read-relevant
   * ones): official names, types and defaults; `monitorCommands` a boolean.
   */
  get options(): Readonly<Document> {
    return this.#options
  }

  /** The client's read preference (`primary` unless the connection string or options say). */
  get readPreference(): ReadPreference {
    return this.#options.readPreference
  }

  /** The client's read concern, if set. */
  get readConcern(): ReadConcern | undefined {
    return this.#options.readConcern
  }

  /** The Stable API version the client declares, if any. */
  get serverApi(): Readonly<ServerApi> | undefined {
    return this.#serverApi
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

  /**
   * A database handle; `name` defaults to `dbName`, else the connection string's database, else
   * `test`. `options` (readPreference, readConcern, timeoutMS, BSON options) are inherited by its
   * collections and operations.
   */
  db(name: string = this.#defaultDb, options?: DbOptions): Db {
    return new Db(
      {
        bsonOptions: this.#bsonOptions,
        inherited: this.#dbDefaults,
        readPreference: this.readPreference,
        readConcern: this.readConcern,
        timeoutMS: this.timeoutMS,
        nativeDatabase: async (db) => {
          const client = await this.nativeClient()
          return callNativeSync(() => client.database(db))
        },
        nativeCollection: async (db, collection) => this.#nativeCollection(db, collection),
        activeCursors: this.#activeCursors,
      },
      name,
      options,
    )
  }

  /**
   * A change stream of every database's changes (`$changeStream` with `allChangesForCluster`, on
   * `admin`), as the official driver's `client.watch()`.
   */
  watch<TSchema extends Document = Document, TChange extends Document = ChangeStreamDocument<TSchema>>(
    pipeline: Document[] = [],
    options: ChangeStreamOptions = {},
  ): ChangeStream<TSchema, TChange> {
    return this.db('admin')[WATCH_CLUSTER]<TSchema, TChange>(pipeline, options)
  }

  async #nativeCollection(db: string, collection: string): Promise<NativeCollection> {
    const client = await this.nativeClient()
    if (this.#collectionsOf !== client || this.#collections.size >= COLLECTION_HANDLES) {
      this.#collections.clear()
      this.#collectionsOf = client
    }
    const key = `${db}.${collection}`
    let handle = this.#collections.get(key)
    if (handle === undefined) {
      handle = callNativeSync(() => client.collection(db, collection))
      this.#collections.set(key, handle)
    }
    return handle
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
    // The official driver reads these files when it connects, and fails with node:fs's error
    // (`ENOENT: no such file or directory, open '...'`) when one cannot be read.
    const query = this.#uri.includes('?') ? this.#uri.slice(this.#uri.indexOf('?') + 1) : ''
    for (const file of tlsFiles(new URLSearchParams(query))) await readFile(file)
    const monitor = this.monitor
    monitor.openTopology()
    const tracing = this.#tracing && tracerProviderRegistered()
    const connectOptions = {
      serverApi: this.#serverApi,
      driverInfo: this.#driverInfo,
      password: this.#password,
      monitorCommands: monitor.commandsWanted,
      traceCommands: tracing,
      // A mongodb+srv string is resolved with the name servers node:dns uses, as the official
      // driver resolves it (so dns.setServers() applies to both).
      dnsServers: this.#uri.startsWith('mongodb+srv://') ? getServers() : undefined,
      oidcHumanCallback: this.#oidcHuman,
    }
    const native = await callNative(() =>
      NativeClient.connect(
        this.#uri,
        timeoutMS,
        socketTimeoutMS,
        connectOptions,
        monitor.receive,
        monitor.mask,
        this.#oidcCallback,
      ),
    )
    if (tracing) {
      monitor.tracer = new CommandTracer()
      this.#tracingClaim = startTracing()
    }
    // Listeners added or removed while connecting.
    native.setEventMask(monitor.mask)
    // Not for a client closed while it connected.
    monitor.connected = !this.#closed
    this.#connected = native
    return native
  }

  /**
   * Starts an explicit session for causally consistent (`causalConsistency`, the default) or
   * snapshot (`snapshot`) reads: pass it as `{ session }` to reads. End it with `endSession()`.
   * @throws MongoNotConnectedError before `connect()` completed: rumongo starts the session on
   * the connected client (the official driver also starts one before connecting).
   * @throws MongoInvalidArgumentError for `causalConsistency` and `snapshot` together.
   */
  startSession(options?: ClientSessionOptions): ClientSession {
    const checked = checkSessionOptions(options)
    const native = this.#connected
    if (native === null) {
      throw new MongoNotConnectedError(
        'rumongo starts a session on a connected client: await client.connect() before startSession()',
      )
    }
    const session = new ClientSession(native, checked, () => this.#sessions.delete(session))
    this.#sessions.add(session)
    return session
  }

  /**
   * Runs `executor` with a new session and ends the session when it settles (as the official
   * driver's `withSession`); resolves to what `executor` resolves to.
   */
  async withSession<T>(executor: (session: ClientSession) => Promise<T>): Promise<T>
  async withSession<T>(
    options: ClientSessionOptions,
    executor: (session: ClientSession) => Promise<T>,
  ): Promise<T>
  async withSession<T>(
    optionsOrExecutor: ClientSessionOptions | ((session: ClientSession) => Promise<T>),
    executor?: (session: ClientSession) => Promise<T>,
  ): Promise<T> {
    const options = typeof optionsOrExecutor === 'object' ? optionsOrExecutor : undefined
    const callback = typeof optionsOrExecutor === 'function' ? optionsOrExecutor : executor
    if (typeof callback !== 'function') {
      throw new MongoInvalidArgumentError('Missing required callback parameter')
    }
    const session = this.startSession(options)
    try {
      return await callback(session)
    } finally {
      await session.endSession().catch(() => undefined)
    }
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
    if (this.#closing) return this.#closing
    this.#closing = this.#close()
    try {
      await this.#closing
    } finally {
      this.#closing = null
    }
  }

  async #close(): Promise<void> {
    this.#closed = true
    const native = this.#native
    this.#native = null
    this.#connected = null
    this.#collections.clear()
    this.#collectionsOf = null
    this.monitor.connected = false
    // Before the native close (which kills their server cursors): told at once, as the official
    // driver closes its active cursors first.
    this.#activeCursors.closeAll()
    // The native close ends them (their server sessions go in its `endSessions`).
    for (const session of this.#sessions) session.markEnded()
    this.#sessions.clear()
    const client = await native?.catch(() => null)
    if (client) await callNative(() => client.close())
    this.#tracingClaim?.release()
    this.#tracingClaim = null
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }
}

/** Native collection handles a client keeps before it starts over (see `#nativeCollection`). */
const COLLECTION_HANDLES = 1_000
