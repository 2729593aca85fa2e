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
  registerSecrets,
} from './errors.js'
import { NativeClient } from './native.cjs'

/**
 * Client options: the connection-string options (same names as in the URI and the official
 * driver), `auth`, and the BSON options inherited by every database, collection and operation.
 */
export interface MongoClientOptions extends BSONOptions {
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
  readConcernLevel?: string
  readPreference?: string
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
  'monitorCommands',
  'proxyHost',
  'proxyPort',
  'proxyUsername',
  'proxyPassword',
  'driverInfo',
  'serverApi',
  'mongodbLogPath',
  'mongodbLogComponentSeverities',
]

const URI_PATTERN = /^(mongodb(?:\+srv)?:\/\/)(?:([^@/]*)@)?([^/?]*)(\/[^?]*)?(\?.*)?$/

interface ParsedUri {
  scheme: string
  userinfo: string | undefined
  hosts: string
  path: string
  query: string
}

function parseUri(uri: unknown): ParsedUri {
  if (typeof uri !== 'string')
    throw new MongoParseError(`connection string must be a string, got ${describe(uri)}`)
  const match = URI_PATTERN.exec(uri)
  if (!match) {
    throw new MongoParseError(
      'Invalid scheme, expected connection string to start with "mongodb://" or "mongodb+srv://"',
    )
  }
  const [, scheme, userinfo, hosts, path = '', query = ''] = match
  return { scheme: scheme!, userinfo, hosts: hosts!, path, query }
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
 * The secrets a client is given: the connection string's password, `auth.password` and
 * `tlsCertificateKeyFilePassword` (option or connection string).
 */
function clientSecrets(parsed: ParsedUri, options: MongoClientOptions): string[] {
  const secrets: string[] = []
  const uriPassword = parsed.userinfo?.split(':').slice(1).join(':')
  if (uriPassword) secrets.push(uriPassword, decodeLeniently(uriPassword))
  if (typeof options.auth?.password === 'string') secrets.push(options.auth.password)
  if (typeof options.tlsCertificateKeyFilePassword === 'string')
    secrets.push(options.tlsCertificateKeyFilePassword)
  for (const [key, value] of new URLSearchParams(parsed.query.slice(1))) {
    if (key.toLowerCase() === 'tlscertificatekeyfilepassword') secrets.push(value)
  }
  return secrets
}

/** `text` percent-decoded, or as it is when it is not valid percent-encoding. */
function decodeLeniently(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
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
    return new Collection<TSchema>(
      {
        databaseName: this.#name,
        bsonOptions: this.#bsonOptions,
        timeoutMS: () => this.#client.timeoutMS,
        nativeCollection: async (collection) => {
          const client = await this.#client.nativeClient()
          return callNativeSync(() => client.collection(this.#name, collection))
        },
      },
      name,
      options,
    )
  }
}

/**
 * A client for a MongoDB deployment. Operations connect it on first use; `close()` ends it.
 * Its passwords (connection string, `auth`, `tlsCertificateKeyFilePassword`) never appear in the
 * errors rumongo raises, from any operation, or in `util.inspect`.
 */
export class MongoClient {
  readonly #uri: string
  readonly #timeouts: ClientTimeouts
  readonly #defaultDb: string
  readonly #bsonOptions: ResolvedBSONOptions
  #native: Promise<NativeClient> | null = null
  #closed = false

  constructor(url: string, options: MongoClientOptions = {}) {
    if (typeof options !== 'object' || options === null) {
      throw new MongoInvalidArgumentError(`client options must be an object, got ${describe(options)}`)
    }
    const parsed = parseUri(url)
    registerSecrets(clientSecrets(parsed, options))
    const { uri, timeouts } = buildUri(parsed, options)
    this.#uri = uri
    this.#timeouts = timeouts
    this.#defaultDb = decodeURIComponent(parsed.path.slice(1)) || 'test'
    this.#bsonOptions = resolveBSONOptions(options, DEFAULT_BSON_OPTIONS)
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
    this.#native ??= callNative(() => NativeClient.connect(this.#uri, timeoutMS, socketTimeoutMS)).catch(
      (error: unknown) => {
        this.#native = null
        throw error
      },
    )
    return this.#native
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
    const client = await native?.catch(() => null)
    if (client) await callNative(() => client.close())
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }
}
