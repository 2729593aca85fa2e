/**
 * The official driver's client option table (its `connection_string.ts` OPTIONS), and what rumongo
 * does with each option: every one either works or is refused with the reason, and a name the
 * official driver does not know is refused as it refuses it.
 * @module
 */
import type { Document } from 'bson'
import { AuthMechanism } from './auth.js'
import { MongoInvalidArgumentError, MongoParseError } from './errors.js'
import { ReadConcern, ReadPreference, ServerApiVersion, type ServerApi } from './read_preference.js'
import { describe } from './validate.js'

/** The wire compressors (`compressors`), as the official driver's `Compressor` and `CompressorName`. */
export const Compressor = Object.freeze({ none: 0, snappy: 1, zlib: 2, zstd: 3 } as const)
export type CompressorName = keyof typeof Compressor

/** How rumongo honours one client option. */
type Handling =
  /** Passed in the connection string to the Rust driver, which implements it. */
  | 'uri'
  /** Implemented by rumongo itself (time limits, Stable API, BSON options, ...). */
  | 'rumongo'
  /** Concerns writes only: rumongo reads, so it has no effect (the official driver's writes keep it). */
  | 'writes'
  /** Refused, with this reason. */
  | { unsupported: string }

const NODE_SOCKET =
  'rumongo connects with the Rust driver, not Node sockets; it has no equivalent of this Node socket option'
const NODE_TLS =
  'rumongo connects with the Rust driver (rustls), not Node TLS: use tlsCAFile, tlsCertificateKeyFile and tlsCertificateKeyFilePassword instead'
const INTERNAL = 'it is internal to the official driver'

/** Every option of the official driver 7.x, by its official spelling. */
const CLIENT_OPTIONS: Readonly<Record<string, Handling>> = {
  appName: 'uri',
  auth: 'rumongo',
  authMechanism: 'uri',
  authMechanismProperties: 'uri',
  authSource: 'uri',
  compressors: 'uri',
  connectTimeoutMS: 'uri',
  directConnection: 'uri',
  heartbeatFrequencyMS: 'uri',
  loadBalanced: 'uri',
  localThresholdMS: 'uri',
  maxConnecting: 'uri',
  maxIdleTimeMS: 'uri',
  maxPoolSize: 'uri',
  maxStalenessSeconds: 'uri',
  minPoolSize: 'uri',
  readConcernLevel: 'uri',
  readPreference: 'uri',
  readPreferenceTags: 'uri',
  replicaSet: 'uri',
  retryReads: 'uri',
  serverMonitoringMode: 'uri',
  serverSelectionTimeoutMS: 'uri',
  srvMaxHosts: 'uri',
  srvServiceName: 'uri',
  ssl: 'uri',
  tls: 'uri',
  tlsAllowInvalidCertificates: 'uri',
  tlsAllowInvalidHostnames: 'uri',
  tlsCAFile: 'uri',
  tlsCertificateKeyFile: 'uri',
  tlsCertificateKeyFilePassword: 'uri',
  tlsInsecure: 'uri',
  waitQueueTimeoutMS: 'uri',
  zlibCompressionLevel: 'uri',
  bsonRegExp: 'rumongo',
  dbName: 'rumongo',
  driverInfo: 'rumongo',
  enableUtf8Validation: 'rumongo',
  ignoreUndefined: 'rumongo',
  monitorCommands: 'rumongo',
  promoteBuffers: 'rumongo',
  promoteLongs: 'rumongo',
  promoteValues: 'rumongo',
  raw: 'rumongo',
  readConcern: 'rumongo',
  serializeFunctions: 'rumongo',
  serverApi: 'rumongo',
  socketTimeoutMS: 'rumongo',
  timeoutMS: 'rumongo',
  useBigInt64: 'rumongo',
  checkKeys: 'writes',
  forceServerObjectId: 'writes',
  fsync: 'writes',
  j: 'writes',
  journal: 'writes',
  pkFactory: 'writes',
  retryWrites: 'writes',
  w: 'writes',
  writeConcern: 'writes',
  wtimeout: 'writes',
  wtimeoutMS: 'writes',
  autoEncryption: { unsupported: 'rumongo does not implement client-side field level encryption' },
  fieldsAsRaw: { unsupported: 'rumongo does not implement it; use raw: true for whole documents' },
  proxyHost: { unsupported: 'rumongo does not connect through a SOCKS5 proxy' },
  proxyPort: { unsupported: 'rumongo does not connect through a SOCKS5 proxy' },
  proxyUsername: { unsupported: 'rumongo does not connect through a SOCKS5 proxy' },
  proxyPassword: { unsupported: 'rumongo does not connect through a SOCKS5 proxy' },
  mongodbLogPath: 'rumongo',
  mongodbLogComponentSeverities: 'rumongo',
  mongodbLogMaxDocumentLength: 'rumongo',
  enableOverloadRetargeting: { unsupported: 'the Rust driver rumongo connects with has no equivalent' },
  maxAdaptiveRetries: { unsupported: 'the Rust driver rumongo connects with has no equivalent' },
  minHeartbeatFrequencyMS: { unsupported: 'the Rust driver rumongo connects with has no equivalent' },
  srvHostValidator: { unsupported: 'the Rust driver rumongo connects with has no equivalent' },
  srvAllowedHostsSuffix: { unsupported: 'the Rust driver rumongo connects with has no equivalent' },
  runtimeAdapters: { unsupported: 'the Rust driver rumongo connects with has no equivalent' },
  tlsCRLFile: { unsupported: 'the Rust driver rumongo connects with has no certificate revocation lists' },
  name: { unsupported: 'use driverInfo: { name }' },
  autoSelectFamily: { unsupported: NODE_SOCKET },
  autoSelectFamilyAttemptTimeout: { unsupported: NODE_SOCKET },
  family: { unsupported: NODE_SOCKET },
  hints: { unsupported: NODE_SOCKET },
  keepAliveInitialDelay: { unsupported: NODE_SOCKET },
  localAddress: { unsupported: NODE_SOCKET },
  localPort: { unsupported: NODE_SOCKET },
  lookup: { unsupported: NODE_SOCKET },
  minInternalBufferSize: { unsupported: NODE_SOCKET },
  noDelay: { unsupported: NODE_SOCKET },
  ALPNProtocols: { unsupported: NODE_TLS },
  SNICallback: { unsupported: NODE_TLS },
  allowPartialTrustChain: { unsupported: NODE_TLS },
  ca: { unsupported: NODE_TLS },
  cert: { unsupported: NODE_TLS },
  checkServerIdentity: { unsupported: NODE_TLS },
  ciphers: { unsupported: NODE_TLS },
  crl: { unsupported: NODE_TLS },
  ecdhCurve: { unsupported: NODE_TLS },
  enableTrace: { unsupported: NODE_TLS },
  key: { unsupported: NODE_TLS },
  minDHSize: { unsupported: NODE_TLS },
  passphrase: { unsupported: NODE_TLS },
  pfx: { unsupported: NODE_TLS },
  pskCallback: { unsupported: NODE_TLS },
  rejectUnauthorized: { unsupported: NODE_TLS },
  requestCert: { unsupported: NODE_TLS },
  requestOCSP: { unsupported: NODE_TLS },
  secureContext: { unsupported: NODE_TLS },
  secureProtocol: { unsupported: NODE_TLS },
  servername: { unsupported: NODE_TLS },
  session: { unsupported: NODE_TLS },
  __skipPingOnConnect: { unsupported: INTERNAL },
  connectionType: { unsupported: INTERNAL },
  index: { unsupported: INTERNAL },
  srvPoller: { unsupported: INTERNAL },
  // rumongo's own: OpenTelemetry spans on or off (docs/observability.md).
  tracing: 'rumongo',
}

/** Official spelling by lower-case name: option names are case-insensitive, as in the official driver. */
const BY_LOWER_CASE = new Map(Object.keys(CLIENT_OPTIONS).map((name) => [name.toLowerCase(), name]))

/** The official name of `key`, or undefined when the official driver does not know it. */
export function officialOptionName(key: string): string | undefined {
  return BY_LOWER_CASE.get(key.toLowerCase())
}

/**
 * Checks every option name given in the connection string's query and the options object: an
 * unknown one fails as in the official driver (`MongoParseError: option maxpoolszie is not
 * supported`), one rumongo does not implement fails with the reason.
 */
export function checkClientOptionNames(query: URLSearchParams, options: Document): void {
  const given = new Set<string>()
  for (const key of query.keys()) given.add(key.toLowerCase())
  for (const [key, value] of Object.entries(options)) if (value != null) given.add(key.toLowerCase())
  const unknown = [...given].filter((key) => !BY_LOWER_CASE.has(key))
  if (unknown.length > 0) {
    const [word, verb] = unknown.length > 1 ? ['options', 'are'] : ['option', 'is']
    throw new MongoParseError(`${word} ${unknown.join(', ')} ${verb} not supported`)
  }
  if ([...query.keys()].some((key) => key.toLowerCase() === 'serverapi')) {
    throw new MongoParseError('URI cannot contain `serverApi`, it can only be passed to the client')
  }
  if (Object.keys(options).some((key) => key.toLowerCase() === 'loadbalanced' && options[key] != null)) {
    throw new MongoParseError('loadBalanced is only a valid option in the URI')
  }
  for (const key of given) {
    const name = BY_LOWER_CASE.get(key)!
    const handling = CLIENT_OPTIONS[name]!
    if (typeof handling === 'object') {
      throw new MongoInvalidArgumentError(
        `rumongo does not support the client option "${name}": ${handling.unsupported}. ` +
          'Leave it out, or connect with the official driver where you need it',
      )
    }
  }
}

/** The connection-string options whose value the official driver reads as a boolean. */
const BOOLEAN_VALUES = new Set([
  'directConnection',
  'loadBalanced',
  'retryReads',
  'retryWrites',
  'tlsAllowInvalidCertificates',
  'tlsAllowInvalidHostnames',
  'tlsInsecure',
])
/** ... as an integer (`int`), or a non-negative one (`uint`). */
const INTEGER_VALUES: Readonly<Record<string, 'int' | 'uint'>> = {
  connectTimeoutMS: 'uint',
  heartbeatFrequencyMS: 'uint',
  localThresholdMS: 'uint',
  maxConnecting: 'uint',
  maxIdleTimeMS: 'uint',
  maxPoolSize: 'uint',
  maxStalenessSeconds: 'uint',
  minPoolSize: 'uint',
  serverSelectionTimeoutMS: 'uint',
  srvMaxHosts: 'uint',
  waitQueueTimeoutMS: 'uint',
  zlibCompressionLevel: 'int',
}
/** The mechanisms in the official driver's order (its message lists them so). */
const AUTH_MECHANISMS: readonly string[] = Object.values(AuthMechanism)

/**
 * Checks the values of the options that go to the Rust driver (the connection string's and the
 * options object's, merged in `query`) as the official driver's parser checks them, with its
 * classes and messages, before the Rust driver's parser, whose messages differ
 * (`connection string \`maxpoolsize\` argument must be a positive integer`), sees them. As there,
 * an integer is read by `parseInt` (`'10ms'` is 10) and `authMechanism` is matched as a word,
 * case-insensitively; the matched mechanism replaces the value.
 */
export function checkClientOptionValues(query: URLSearchParams): void {
  for (const [key, value] of [...query]) {
    const name = officialOptionName(key)
    if (name === 'tls' || name === 'ssl') {
      if (value !== 'true' && value !== 'false')
        throw new MongoParseError('tls/ssl must be either "true" or "false"')
    } else if (name !== undefined && BOOLEAN_VALUES.has(name)) {
      parseBoolean(name, value)
    } else if (name !== undefined && INTEGER_VALUES[name] !== undefined) {
      const parsed = Number.parseInt(value, 10)
      if (Number.isNaN(parsed)) {
        throw new MongoParseError(`Expected ${name} to be stringified int value, got: ${value}`)
      }
      if (INTEGER_VALUES[name] === 'uint' && parsed < 0) {
        throw new MongoParseError(`${name} can only be a positive int value, got: ${value}`)
      }
      if (name === 'maxConnecting' && parsed === 0) {
        throw new MongoInvalidArgumentError('maxConnecting must be > 0 if specified')
      }
    } else if (name === 'authMechanism') {
      const mechanism = AUTH_MECHANISMS.find((candidate) => matchesWord(candidate, value))
      if (mechanism === undefined) {
        throw new MongoParseError(`authMechanism one of ${AUTH_MECHANISMS.join(',')}, got ${value}`)
      }
      query.set(key, mechanism)
    }
  }
}

/**
 * Whether `text` holds `word` as a whole word, case-insensitively: the official driver's match of
 * an `authMechanism` (a regular expression of the value). A value that is no valid expression
 * matches nothing, where the official driver throws a SyntaxError.
 */
function matchesWord(text: string, word: string): boolean {
  try {
    return new RegExp(String.raw`\b${word}\b`, 'i').test(text)
  } catch {
    return false
  }
}

/**
 * The certificate files a client with this query reads when it connects: `tlsCAFile` and
 * `tlsCertificateKeyFile`, unless TLS is turned off (given without `tls=true`, they turn it on in
 * rumongo, see docs/tls.md).
 */
export function tlsFiles(query: URLSearchParams): string[] {
  const files: string[] = []
  let tlsOff = false
  for (const [key, value] of query) {
    const name = officialOptionName(key)
    if ((name === 'tls' || name === 'ssl') && value === 'false') tlsOff = true
    if (name === 'tlsCAFile' || name === 'tlsCertificateKeyFile') files.push(value)
  }
  return tlsOff ? [] : files
}

/** True for options that go into the connection string. */
export function isUriOption(name: string): boolean {
  return CLIENT_OPTIONS[name] === 'uri'
}

/**
 * The pool size the Rust driver gets for `maxPoolSize: 0`, which means no limit in the official
 * driver: the Rust driver refuses 0 ("cannot specify maxPoolSize=0") and has no unlimited pool, so
 * its largest one stands for it (reported as 0 again in `connectionPoolCreated`).
 */
export const UNLIMITED_POOL_SIZE = 2 ** 32 - 1

/** The query the Rust driver reads: `query` with `maxPoolSize=0` as `UNLIMITED_POOL_SIZE`. */
export function rustDriverQuery(query: URLSearchParams): URLSearchParams {
  const rust = new URLSearchParams()
  for (const [key, value] of query) {
    const unlimited = officialOptionName(key) === 'maxPoolSize' && /^\s*0+\s*$/.test(value)
    rust.append(key, unlimited ? String(UNLIMITED_POOL_SIZE) : value)
  }
  return rust
}

/** The connection-string form of an object option (`compressors: ['zstd']` -> `zstd`). */
export function uriOptionValues(name: string, value: unknown): [string, string][] {
  if (name === 'readPreference' && typeof value === 'object' && value !== null) {
    const preference = ReadPreference.fromOptions({ readPreference: value })!
    const entries: [string, string][] = [['readPreference', preference.mode]]
    for (const tags of preference.tags ?? []) {
      entries.push([
        'readPreferenceTags',
        Object.entries(tags)
          .map(([k, v]) => `${k}:${String(v)}`)
          .join(','),
      ])
    }
    if (preference.maxStalenessSeconds !== undefined) {
      entries.push(['maxStalenessSeconds', String(preference.maxStalenessSeconds)])
    }
    return entries
  }
  if (name === 'readPreferenceTags' && Array.isArray(value)) {
    return value.map((tags: Document) => [
      name,
      Object.entries(tags)
        .map(([k, v]) => `${k}:${String(v)}`)
        .join(','),
    ])
  }
  if (name === 'authMechanismProperties' && typeof value === 'object' && value !== null) {
    return [
      [
        name,
        Object.entries(value)
          .map(([k, v]) => `${k}:${String(v)}`)
          .join(','),
      ],
    ]
  }
  if (name === 'compressors') {
    const list = typeof value === 'string' ? value.split(',') : value
    if (!Array.isArray(list)) {
      throw new MongoInvalidArgumentError('compressors must be an array or a comma-delimited list of strings')
    }
    for (const compressor of list) {
      if (!Object.hasOwn(Compressor, String(compressor))) {
        throw new MongoInvalidArgumentError(
          `${String(compressor)} is not a valid compression mechanism. Must be one of: none,snappy,zlib,zstd.`,
        )
      }
    }
    // The Rust driver knows no `none`: no compressor listed is what it means.
    const compressors = list.map(String).filter((compressor) => compressor !== 'none')
    return compressors.length > 0 ? [[name, compressors.join(',')]] : []
  }
  return [[name, String(value)]]
}

/** `serverApi` validated as the official driver validates it: a version string or `{ version, ... }`. */
export function parseServerApi(value: unknown): ServerApi | undefined {
  if (value == null) return undefined
  const api = (typeof value === 'string' ? { version: value } : value) as Partial<ServerApi>
  const versions = `["${Object.values(ServerApiVersion).join('", "')}"]`
  if (!api?.version) {
    throw new MongoParseError(
      `Invalid \`serverApi\` property; must specify a version from the following enum: ${versions}`,
    )
  }
  if (!Object.values(ServerApiVersion).includes(api.version)) {
    throw new MongoParseError(
      `Invalid server API version=${String(api.version)}; must be in the following enum: ${versions}`,
    )
  }
  for (const flag of ['strict', 'deprecationErrors'] as const) {
    if (api[flag] !== undefined && typeof api[flag] !== 'boolean') {
      throw new MongoInvalidArgumentError(`serverApi.${flag} must be a boolean, got ${describe(api[flag])}`)
    }
  }
  return api as ServerApi
}

/** `driverInfo`: `{ name?, version?, platform? }`, strings. */
export function parseDriverInfo(value: unknown): { name?: string; version?: string; platform?: string } {
  if (value == null) return {}
  if (typeof value !== 'object') {
    throw new MongoInvalidArgumentError(`driverInfo must be an object, got ${describe(value)}`)
  }
  const info = value as Document
  for (const field of ['name', 'version', 'platform']) {
    if (info[field] !== undefined && typeof info[field] !== 'string') {
      throw new MongoInvalidArgumentError(
        `driverInfo.${field} must be a string, got ${describe(info[field])}`,
      )
    }
  }
  return { ...info }
}

/** A boolean client option given as a boolean, or as `true`/`false` in the connection string. */
export function parseBoolean(name: string, value: unknown): boolean {
  if (typeof value === 'boolean') return value
  if (value === 'true' || value === 'false') return value === 'true'
  throw new MongoParseError(`${name} must be either "true" or "false"`)
}

/** The official driver's defaults of the read-relevant options `client.options` lists. */
const OPTION_DEFAULTS: Readonly<Document> = {
  compressors: ['none'],
  connectTimeoutMS: 30000,
  directConnection: false,
  driverInfo: {},
  enableUtf8Validation: true,
  heartbeatFrequencyMS: 10000,
  loadBalanced: false,
  localThresholdMS: 15,
  maxConnecting: 2,
  maxIdleTimeMS: 0,
  maxPoolSize: 100,
  minPoolSize: 0,
  monitorCommands: false,
  raw: false,
  retryReads: true,
  retryWrites: true,
  serverMonitoringMode: 'auto',
  serverSelectionTimeoutMS: 30000,
  socketTimeoutMS: 0,
  srvMaxHosts: 0,
  srvServiceName: 'mongodb',
  waitQueueTimeoutMS: 0,
  zlibCompressionLevel: 0,
}

const NUMERIC = new Set([
  'connectTimeoutMS',
  'heartbeatFrequencyMS',
  'localThresholdMS',
  'maxConnecting',
  'maxIdleTimeMS',
  'maxPoolSize',
  'maxStalenessSeconds',
  'minPoolSize',
  'serverSelectionTimeoutMS',
  'srvMaxHosts',
  'waitQueueTimeoutMS',
  'wtimeoutMS',
  'zlibCompressionLevel',
])
const BOOLEAN = new Set([
  'directConnection',
  'loadBalanced',
  'retryReads',
  'retryWrites',
  'ssl',
  'tls',
  'tlsAllowInvalidCertificates',
  'tlsAllowInvalidHostnames',
  'tlsInsecure',
  'journal',
])
/** Passwords and the like, never listed. */
const HIDDEN = new Set(['tlsCertificateKeyFilePassword', 'authMechanismProperties'])

/** What `client.options` lists besides the connection string's options. */
export interface ClientOptionsExtras {
  hosts: string
  dbName: string
  serverApi: ServerApi | undefined
  driverInfo: Document
  monitorCommands: boolean
  timeoutMS: number | undefined
  socketTimeoutMS: number | undefined
  bsonOptions: Document
  /** The hedge of the `readPreference` option (a connection string cannot carry one). */
  readPreferenceHedge: Document | undefined
}

/** A host of the connection string, as the official driver's `HostAddress` prints. */
export class HostAddress {
  readonly host: string
  readonly port: number | undefined
  readonly isIPv6: boolean

  constructor(address: string) {
    const match = /^\[([^\]]+)\](?::(\d+))?$/.exec(address) ?? /^([^:]*)(?::(\d+))?$/.exec(address)
    this.isIPv6 = address.startsWith('[')
    this.host = decodeURIComponent(match?.[1] ?? address).toLowerCase()
    this.port = match?.[2] === undefined ? (address.endsWith('.sock') ? undefined : 27017) : Number(match[2])
  }

  toString(): string {
    const host = this.isIPv6 ? `[${this.host}]` : this.host
    return this.port === undefined ? host : `${host}:${this.port}`
  }

  toHostPort(): { host: string; port: number | undefined } {
    return { host: this.host, port: this.port }
  }
}

/**
 * The client's options as the official driver's `client.options` gives the read-relevant ones:
 * official names and types, defaults filled, `readPreference` a ReadPreference, `readConcern` a
 * ReadConcern. Secrets are not listed.
 */
export function describeClientOptions(query: URLSearchParams, extras: ClientOptionsExtras): Document {
  const options: Document = { ...OPTION_DEFAULTS }
  options.hosts = extras.hosts
    .split(',')
    .filter(Boolean)
    .map((host) => new HostAddress(host))
  const tags: Document[] = []
  for (const [key, value] of query) {
    const name = officialOptionName(key)
    if (name === undefined || HIDDEN.has(name)) continue
    if (name === 'readPreferenceTags') {
      const set = Object.create(null)
      for (const pair of value.split(',').filter(Boolean)) {
        const [tag, ...rest] = pair.split(':')
        set[tag!] = rest.join(':')
      }
      tags.push(set)
    } else if (name === 'compressors') {
      options.compressors = value.split(',')
    } else if (NUMERIC.has(name)) {
      options[name] = Number(value)
    } else if (BOOLEAN.has(name)) {
      options[name === 'ssl' ? 'tls' : name] = value === 'true'
    } else {
      options[name] = value
    }
  }
  const mode = options.readPreference ?? 'primary'
  options.readPreference = new ReadPreference(mode, tags.length > 0 ? tags : undefined, {
    maxStalenessSeconds: options.maxStalenessSeconds,
    hedge: extras.readPreferenceHedge,
  })
  delete options.maxStalenessSeconds
  if (options.readConcernLevel !== undefined) options.readConcern = new ReadConcern(options.readConcernLevel)
  delete options.readConcernLevel
  options.dbName = extras.dbName
  options.driverInfo = extras.driverInfo
  options.monitorCommands = extras.monitorCommands
  if (extras.serverApi !== undefined) options.serverApi = extras.serverApi
  if (extras.timeoutMS !== undefined) options.timeoutMS = extras.timeoutMS
  if (extras.socketTimeoutMS !== undefined) options.socketTimeoutMS = extras.socketTimeoutMS
  Object.assign(options, extras.bsonOptions)
  return options
}
