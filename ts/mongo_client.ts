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
  'socketTimeoutMS',
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
  'timeoutMS',
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

/** The connection string with `options` merged into its query. */
function buildUri(parsed: ParsedUri, options: MongoClientOptions): string {
  let { userinfo } = parsed
  const query = new URLSearchParams(parsed.query.slice(1))
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
  return `${parsed.scheme}${credentials}${parsed.hosts}${parsed.path || '/'}${search ? `?${search}` : ''}`
}

/** Removes the connection string's credentials from an error message. */
function redactCredentials(error: unknown, userinfo: string | undefined): unknown {
  if (!userinfo || !(error instanceof Error)) return error
  const secrets = new Set([userinfo, decodeURIComponent(userinfo)])
  for (const part of [...secrets]) {
    const separator = part.indexOf(':')
    if (separator >= 0) secrets.add(part.slice(separator + 1))
  }
  for (const secret of secrets) {
    if (secret) error.message = error.message.split(secret).join('<redacted>')
  }
  if (error.cause instanceof Error) redactCredentials(error.cause, userinfo)
  return error
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
 * Credentials in the connection string never appear in errors or `util.inspect`.
 */
export class MongoClient {
  readonly #uri: string
  readonly #userinfo: string | undefined
  readonly #defaultDb: string
  readonly #bsonOptions: ResolvedBSONOptions
  #native: Promise<NativeClient> | null = null
  #closed = false

  constructor(url: string, options: MongoClientOptions = {}) {
    if (typeof options !== 'object' || options === null) {
      throw new MongoInvalidArgumentError(`client options must be an object, got ${describe(options)}`)
    }
    const parsed = parseUri(url)
    this.#userinfo =
      parsed.userinfo ?? (options.auth?.password ? encodeURIComponent(options.auth.password) : undefined)
    this.#uri = buildUri(parsed, options)
    this.#defaultDb = decodeURIComponent(parsed.path.slice(1)) || 'test'
    this.#bsonOptions = resolveBSONOptions(options, DEFAULT_BSON_OPTIONS)
  }

  /** Creates a client and connects it. */
  static async connect(url: string, options?: MongoClientOptions): Promise<MongoClient> {
    return new MongoClient(url, options).connect()
  }

  /** Connects (selects a server and pings it). Optional: operations connect on first use. */
  async connect(): Promise<this> {
    this.#closed = false
    await this.nativeClient()
    return this
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
    this.#native ??= callNative(() => NativeClient.connect(this.#uri)).catch((error: unknown) => {
      this.#native = null
      throw redactCredentials(error, this.#userinfo)
    })
    return this.#native
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
