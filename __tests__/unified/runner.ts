// A small runner for the unified test format (specifications repository,
// source/unified-test-format/unified-test-format.md), limited to what the vendored CRUD read tests
// use: client/database/collection entities with command monitoring, runOnRequirements,
// initialData, the read operations, expectResult, expectError, expectEvents and outcome.
//
// One runner drives either package: `driver` is the module (`mongodb` or `rumongo`). Setup and
// anything that writes (initialData, outcome, createCollection, failPoint, ...) goes through the
// official driver, because rumongo is read-only; when rumongo is the driver under test, such a
// write that a test makes between its reads is sent by an official client opened with the same
// options, whose command events join the rumongo client's list in order.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import * as official from 'mongodb'
import { EJSON } from 'bson'

export type Driver = typeof official
type Document = Record<string, any>

export interface UnifiedFile {
  description: string
  schemaVersion: string
  runOnRequirements?: Document[]
  createEntities: Document[]
  initialData?: { collectionName: string; databaseName: string; documents: Document[] }[]
  tests: UnifiedTest[]
}

export interface UnifiedTest {
  description: string
  runOnRequirements?: Document[]
  operations: Operation[]
  expectEvents?: { client: string; eventType?: string; ignoreExtraEvents?: boolean; events: Document[] }[]
  outcome?: { collectionName: string; databaseName: string; documents: Document[] }[]
}

interface Operation {
  name: string
  object: string
  arguments?: Document
  expectResult?: unknown
  expectError?: Document
}

/** A fault in the runner or a test file (not a driver's behaviour): fails the suite outright. */
export class RunnerError extends Error {}

/** The driver's behaviour did not match the test: the test fails for that driver. */
export class MatchError extends Error {}

const READS = new Set([
  'find',
  'findOne',
  'aggregate',
  'countDocuments',
  'estimatedDocumentCount',
  'distinct',
])
/** Operations the runner performs through the official driver (setup steps inside a test). */
const HELPERS = new Set(['dropCollection', 'createCollection', 'failPoint'])

export function loadFiles(dir: string): [string, UnifiedFile][] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => [
      name.replace(/\.json$/, ''),
      EJSON.parse(readFileSync(join(dir, name), 'utf8'), { relaxed: true }) as UnifiedFile,
    ])
}

/** Whether every operation of the test is a read or a setup step: the tests this runner runs. */
export function isReadTest(test: UnifiedTest): boolean {
  return test.operations.every((op) => READS.has(op.name) || HELPERS.has(op.name))
}

// ---------------------------------------------------------------- requirements

export interface ServerInfo {
  version: number[]
  topology: 'single' | 'replicaset' | 'sharded' | 'load-balanced'
  auth: boolean
  parameters(name: string): Promise<unknown>
}

export async function serverInfo(client: official.MongoClient, uri: string): Promise<ServerInfo> {
  const admin = client.db('admin')
  const build = await admin.command({ buildInfo: 1 })
  const hello = await admin.command({ hello: 1 })
  const topology = hello.msg === 'isdbgrid' ? 'sharded' : hello.setName ? 'replicaset' : 'single'
  return {
    version: String(build.version)
      .split('.')
      .map((part) => parseInt(part, 10)),
    topology: /loadBalanced=true/i.test(uri) ? 'load-balanced' : topology,
    auth: /^mongodb(\+srv)?:\/\/[^/]*@/.test(uri),
    async parameters(name) {
      const reply = await admin.command({ getParameter: 1, [name]: 1 })
      return reply[name]
    },
  }
}

function compareVersions(a: number[], b: number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const difference = (a[i] ?? 0) - (b[i] ?? 0)
    if (difference !== 0) return difference
  }
  return 0
}

/** Why none of the requirements holds, or `undefined` when one does (or there are none). */
export async function unmetRequirement(
  requirements: Document[] | undefined,
  server: ServerInfo,
): Promise<string | undefined> {
  if (!requirements?.length) return undefined
  const reasons: string[] = []
  for (const requirement of requirements) {
    const reason = await unmet(requirement, server)
    if (reason === undefined) return undefined
    reasons.push(reason)
  }
  return reasons.join('; ')
}

async function unmet(requirement: Document, server: ServerInfo): Promise<string | undefined> {
  const version = server.version.join('.')
  for (const [key, value] of Object.entries(requirement)) {
    const parse = () => String(value).split('.').map(Number)
    if (key === 'minServerVersion' && compareVersions(server.version, parse()) < 0) {
      return `server ${version} < minServerVersion ${value}`
    }
    if (key === 'maxServerVersion' && compareVersions(server.version, parse()) > 0) {
      return `server ${version} > maxServerVersion ${value}`
    }
    if (key === 'topologies') {
      const accepted = (value as string[]).map((t) => (t === 'sharded-replicaset' ? 'sharded' : t))
      if (!accepted.includes(server.topology)) return `topology ${server.topology} not in ${value}`
    }
    // This runner never runs against Atlas Serverless.
    if (key === 'serverless' && value === 'require') return 'requires serverless'
    if (key === 'auth' && value !== server.auth) return `auth ${server.auth}, wanted ${value}`
    if (key === 'serverParameters') {
      for (const [name, wanted] of Object.entries(value as Document)) {
        const actual = await server.parameters(name).catch(() => undefined)
        if (match(wanted, actual, { root: false })) return `server parameter ${name}`
      }
    }
    if (
      ![
        'minServerVersion',
        'maxServerVersion',
        'topologies',
        'serverless',
        'auth',
        'serverParameters',
      ].includes(key)
    ) {
      throw new RunnerError(`runOnRequirement ${key} is not supported`)
    }
  }
  return undefined
}

// ---------------------------------------------------------------- matching

/** Numbers of any BSON numeric type (not Decimal128) as a JS number, else `undefined`. */
function numeric(value: unknown): number | undefined {
  if (typeof value === 'number') return value
  if (typeof value === 'bigint') return Number(value)
  const type = (value as { _bsontype?: string } | null)?._bsontype
  if (type === 'Int32' || type === 'Double') return (value as { value: number }).value
  if (type === 'Long') return (value as official.Long).toNumber()
  return undefined
}

function isDocument(value: unknown): value is Document {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !(value as { _bsontype?: string })._bsontype &&
    !(value instanceof Date) &&
    !(value instanceof Uint8Array) &&
    !(value instanceof RegExp)
  )
}

/** The `$type` names a value has (a JS number may have come from an int, a long or a double). */
function bsonTypes(value: unknown): string[] {
  if (value === null) return ['null']
  if (value === undefined) return ['undefined']
  if (typeof value === 'number') {
    return Number.isInteger(value) ? ['int', 'long', 'double', 'number'] : ['double', 'number']
  }
  if (typeof value === 'string') return ['string']
  if (typeof value === 'boolean') return ['bool']
  if (value instanceof Date) return ['date']
  if (value instanceof RegExp) return ['regex']
  if (Array.isArray(value)) return ['array']
  const names: Record<string, string> = {
    Int32: 'int',
    Long: 'long',
    Double: 'double',
    Decimal128: 'decimal',
    ObjectId: 'objectId',
    Binary: 'binData',
    Timestamp: 'timestamp',
    BSONRegExp: 'regex',
    Code: 'javascript',
    BSONSymbol: 'symbol',
    MinKey: 'minKey',
    MaxKey: 'maxKey',
    DBRef: 'object',
  }
  const type = (value as { _bsontype?: string })._bsontype
  if (type) {
    const name = names[type] ?? type
    if (name === 'javascript' && (value as official.Code).scope) return ['javascriptWithScope']
    return ['int', 'long', 'double'].includes(name) ? [name, 'number'] : [name]
  }
  if (value instanceof Uint8Array) return ['binData']
  return ['object']
}

function show(value: unknown): string {
  try {
    return EJSON.stringify(value as Document, { relaxed: true })
  } catch {
    return String(value)
  }
}

function operator(expected: unknown): string | undefined {
  if (!isDocument(expected)) return undefined
  const keys = Object.keys(expected)
  return keys.length === 1 && keys[0].startsWith('$$') ? keys[0] : undefined
}

/**
 * The unified format's match: the first mismatch as "path: what", or `undefined`. `root` allows
 * extra fields in the actual document (root-level documents only); numbers match by value.
 */
export function match(
  expected: unknown,
  actual: unknown,
  { root }: { root: boolean },
  path = '$',
): string | undefined {
  // The official driver's command events hold a find's sort as a Map (an ordered document).
  if (actual instanceof Map) actual = Object.fromEntries(actual)
  const special = operator(expected)
  if (special) return matchOperator(special, (expected as Document)[special], actual, root, path)
  if (isDocument(expected)) {
    if (!isDocument(actual)) return `${path}: expected a document, got ${show(actual)}`
    for (const [key, value] of Object.entries(expected)) {
      const inner = operator(value)
      const present = Object.prototype.hasOwnProperty.call(actual, key) && actual[key] !== undefined
      if (inner === '$$exists') {
        if (present !== value.$$exists) return `${path}.${key}: ${present ? 'present' : 'missing'}`
        continue
      }
      if (inner === '$$unsetOrMatches' && !present) continue
      if (!present) return `${path}.${key}: missing, expected ${show(value)}`
      const difference = match(value, actual[key], { root: false }, `${path}.${key}`)
      if (difference) return difference
    }
    if (!root) {
      const extra = Object.keys(actual).filter((key) => !(key in expected) && actual[key] !== undefined)
      if (extra.length) return `${path}: unexpected fields ${extra.join(', ')}`
    }
    return undefined
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${path}: expected an array, got ${show(actual)}`
    if (actual.length !== expected.length) {
      return `${path}: ${actual.length} elements, expected ${expected.length}: ${show(actual)}`
    }
    for (let i = 0; i < expected.length; i++) {
      const difference = match(expected[i], actual[i], { root: false }, `${path}[${i}]`)
      if (difference) return difference
    }
    return undefined
  }
  const expectedNumber = numeric(expected)
  if (expectedNumber !== undefined) {
    const actualNumber = numeric(actual)
    return actualNumber === expectedNumber ? undefined : `${path}: ${show(actual)} !== ${show(expected)}`
  }
  if (show(expected) === show(actual)) return undefined
  return `${path}: ${show(actual)} !== ${show(expected)}`
}

function matchOperator(name: string, value: unknown, actual: unknown, root: boolean, path: string) {
  switch (name) {
    case '$$unsetOrMatches':
      return actual === undefined ? undefined : match(value, actual, { root }, path)
    case '$$type': {
      const wanted = Array.isArray(value) ? value : [value]
      if (actual === undefined) return `${path}: missing, expected $$type ${wanted}`
      const types = bsonTypes(actual)
      return wanted.some((type) => types.includes(type))
        ? undefined
        : `${path}: type ${types[0]}, expected ${wanted}`
    }
    case '$$lte': {
      const actualNumber = numeric(actual)
      return actualNumber !== undefined && actualNumber <= (numeric(value) as number)
        ? undefined
        : `${path}: ${show(actual)} > ${show(value)}`
    }
    case '$$exists':
      throw new RunnerError(`${path}: $$exists is only valid as a field's value`)
    default:
      throw new RunnerError(`${path}: ${name} is not supported`)
  }
}

// ---------------------------------------------------------------- entities and operations

interface ObservedEvent {
  type: string
  event: Document
}

interface ClientEntity {
  client: official.MongoClient
  /** The official client that sends this test's writes when the driver under test is rumongo. */
  writer: official.MongoClient
  events: ObservedEvent[]
}

// The unified format's default: commands a runner never reports (security-sensitive, fail points).
const IGNORED_COMMANDS = new Set([
  'authenticate',
  'saslstart',
  'saslcontinue',
  'getnonce',
  'createuser',
  'updateuser',
  'copydbgetnonce',
  'copydbsaslstart',
  'copydb',
  'configurefailpoint',
])

const EVENT_NAMES: Record<string, string> = {
  commandStartedEvent: 'commandStarted',
  commandSucceededEvent: 'commandSucceeded',
  commandFailedEvent: 'commandFailed',
}

export interface Counters {
  /** Writes inside read tests sent through the official driver when rumongo is under test. */
  delegatedWrites: number
}

/** A `failCommand` fail point as a fake server applies it: the reply for a command, if it fails it. */
export function failCommand(failPoint: Document): (command: Document) => Document | 'close' | undefined {
  const { configureFailPoint, mode, data } = failPoint
  if (configureFailPoint !== 'failCommand' || typeof mode?.times !== 'number') {
    throw new RunnerError(`fail point ${JSON.stringify(failPoint)} is not supported on the fake server`)
  }
  let times = mode.times as number
  return (command) => {
    if (times === 0 || !data.failCommands.includes(Object.keys(command)[0])) return undefined
    times--
    if (data.closeConnection) return 'close'
    return { ok: 0, code: data.errorCode, errmsg: "Failing command via 'failCommand' failpoint" }
  }
}

export class TestRun {
  private clients = new Map<string, ClientEntity>()
  private databases = new Map<string, { client: string; db: official.Db; writer: official.Db }>()
  private collections = new Map<
    string,
    { client: string; coll: official.Collection; writer: official.Collection }
  >()
  private failPoints: { client: official.MongoClient; name: string }[] = []
  private readonly isOfficial: boolean

  constructor(
    private driver: Driver,
    private uri: string,
    private setup: official.MongoClient,
    private counters: Counters,
    /** Arms a `failCommand` fail point on a fake server (instead of sending configureFailPoint). */
    private setFailPoint?: (failPoint: Document) => void,
  ) {
    this.isOfficial = (driver as unknown) === official
  }

  async run(file: UnifiedFile, test: UnifiedTest): Promise<void> {
    try {
      await this.loadData(file.initialData)
      await this.createEntities(file.createEntities)
      for (const op of test.operations) await this.runOperation(op)
      for (const expected of test.expectEvents ?? []) await this.checkEvents(expected)
      for (const expected of test.outcome ?? []) await this.checkOutcome(expected)
    } finally {
      await this.close()
    }
  }

  private async loadData(initialData: UnifiedFile['initialData']) {
    for (const { collectionName, databaseName, documents } of initialData ?? []) {
      const db = this.setup.db(databaseName)
      await db
        .collection(collectionName)
        .drop()
        .catch(() => undefined)
      if (documents.length) await db.collection(collectionName).insertMany(documents)
      else await db.createCollection(collectionName)
    }
  }

  private async createEntities(entities: Document[]) {
    for (const entity of entities) {
      const [[kind, spec]] = Object.entries(entity)
      if (kind === 'client') await this.createClient(spec)
      else if (kind === 'database') {
        const parent = this.entity(this.clients, spec.client)
        this.databases.set(spec.id, {
          client: spec.client,
          db: parent.client.db(spec.databaseName, spec.databaseOptions),
          writer: parent.writer.db(spec.databaseName, spec.databaseOptions),
        })
      } else if (kind === 'collection') {
        const parent = this.entity(this.databases, spec.database)
        this.collections.set(spec.id, {
          client: parent.client,
          coll: parent.db.collection(spec.collectionName, spec.collectionOptions),
          writer: parent.writer.collection(spec.collectionName, spec.collectionOptions),
        })
      } else throw new RunnerError(`entity ${kind} is not supported`)
    }
  }

  private async createClient(spec: Document) {
    const known = [
      'id',
      'uriOptions',
      'serverApi',
      'observeEvents',
      'ignoreCommandMonitoringEvents',
      'useMultipleMongoses',
    ]
    const unknown = Object.keys(spec).filter((key) => !known.includes(key))
    if (unknown.length) throw new RunnerError(`client ${unknown.join(', ')} not supported`)
    const options = {
      ...spec.uriOptions,
      ...(spec.serverApi && { serverApi: spec.serverApi }),
      monitorCommands: true,
    }
    const client = new this.driver.MongoClient(this.uri, options)
    await client.connect()
    const writer = this.isOfficial ? client : await new official.MongoClient(this.uri, options).connect()
    const entity: ClientEntity = { client, writer, events: [] }
    // Listeners are added once connected: rumongo's connect() pings, the official driver's does not.
    const observed = new Set<string>(
      (spec.observeEvents ?? []).map((name: string) => {
        if (!EVENT_NAMES[name]) throw new RunnerError(`observeEvents ${name} is not supported`)
        return EVENT_NAMES[name]
      }),
    )
    const ignored = new Set<string>(
      (spec.ignoreCommandMonitoringEvents ?? []).map((n: string) => n.toLowerCase()),
    )
    for (const source of new Set([client, writer])) {
      for (const type of observed) {
        source.on(type as 'commandStarted', (event: Document) => {
          const name = String(event.commandName).toLowerCase()
          if (IGNORED_COMMANDS.has(name) || ignored.has(name)) return
          entity.events.push({ type, event })
        })
      }
    }
    this.clients.set(spec.id, entity)
  }

  private entity<T>(map: Map<string, T>, id: string): T {
    const found = map.get(id)
    if (!found) throw new RunnerError(`no entity ${id}`)
    return found
  }

  private async runOperation(op: Operation) {
    let result: unknown
    let error: unknown
    try {
      result = await this.perform(op)
    } catch (caught) {
      if (caught instanceof RunnerError) throw caught
      error = caught
    }
    const client = this.clients.get(this.ownerOf(op.object))
    // rumongo delivers command events asynchronously (the command ran on a Rust thread).
    if (client && !this.isOfficial) await settle(client)
    if (op.expectError) return checkError(this.driver, op, error)
    if (error) throw new MatchError(`${op.name}: unexpected error ${describeError(error)}`)
    if (op.expectResult !== undefined) {
      const root = ['find', 'aggregate', 'findOne'].includes(op.name)
      const difference =
        root && Array.isArray(op.expectResult) && Array.isArray(result)
          ? arrayOfRoots(op.expectResult, result)
          : match(op.expectResult, result, { root })
      if (difference) throw new MatchError(`${op.name} result ${difference}`)
    }
  }

  private ownerOf(object: string): string {
    return this.collections.get(object)?.client ?? this.databases.get(object)?.client ?? object
  }

  private async perform({ name, object, arguments: args = {} }: Operation): Promise<unknown> {
    if (object === 'testRunner') {
      if (name !== 'failPoint') throw new RunnerError(`testRunner ${name} is not supported`)
      if (this.setFailPoint) return this.setFailPoint(args.failPoint)
      // A separate official client sets it, as the format asks (not the client under test).
      const client = await new official.MongoClient(this.uri).connect()
      this.failPoints.push({ client, name: args.failPoint.configureFailPoint })
      return client.db('admin').command(args.failPoint)
    }
    if (HELPERS.has(name)) {
      if (!this.isOfficial) this.counters.delegatedWrites++
      const { writer } = this.entity(this.databases, object)
      const { collection, ...options } = args
      if (name === 'dropCollection') return writer.dropCollection(collection, options)
      return writer.createCollection(collection, options)
    }
    const target: any = this.collections.get(object)?.coll ?? this.databases.get(object)?.db
    if (!target || !READS.has(name)) throw new RunnerError(`${name} on ${object} is not supported`)
    const { filter, pipeline, fieldName, ...options } = args
    switch (name) {
      case 'find':
        return target.find(filter, options).toArray()
      case 'findOne':
        return target.findOne(filter, options)
      case 'aggregate':
        return target.aggregate(pipeline, options).toArray()
      case 'countDocuments':
        return target.countDocuments(filter, options)
      case 'estimatedDocumentCount':
        return target.estimatedDocumentCount(options)
      default:
        return target.distinct(fieldName, filter, options)
    }
  }

  private async checkEvents({
    client: id,
    eventType = 'command',
    ignoreExtraEvents,
    events,
  }: NonNullable<UnifiedTest['expectEvents']>[number]) {
    if (eventType !== 'command') throw new RunnerError(`eventType ${eventType} is not supported`)
    const actual = this.entity(this.clients, id).events
    const count = ignoreExtraEvents ? Math.min(actual.length, events.length) : actual.length
    const names = actual.map(({ event }) => event.commandName).join(', ')
    if (count !== events.length) {
      throw new MatchError(`${id}: ${actual.length} command events (${names}), expected ${events.length}`)
    }
    events.forEach((expected, i) => {
      const [[key, fields]] = Object.entries(expected)
      const { type, event } = actual[i]
      if (EVENT_NAMES[key] !== type) throw new MatchError(`event ${i}: ${type}, expected ${key}`)
      for (const [field, value] of Object.entries(fields as Document)) {
        const root = field === 'command' || field === 'reply'
        const difference = match(value, event[field], { root }, `event ${i} (${event.commandName}).${field}`)
        if (difference) throw new MatchError(difference)
      }
    })
  }

  private async checkOutcome({
    collectionName,
    databaseName,
    documents,
  }: NonNullable<UnifiedTest['outcome']>[number]) {
    const found = await this.setup
      .db(databaseName)
      .collection(collectionName)
      .find({}, { sort: { _id: 1 } })
      .toArray()
    const difference = match(documents, found, { root: false }, `outcome ${collectionName}`)
    if (difference) throw new MatchError(difference)
  }

  private async close() {
    for (const { client, name } of this.failPoints) {
      await client
        .db('admin')
        .command({ configureFailPoint: name, mode: 'off' })
        .catch(() => undefined)
      await client.close()
    }
    for (const { client, writer } of this.clients.values()) {
      await client.close()
      if (writer !== client) await writer.close()
    }
  }
}

function arrayOfRoots(expected: unknown[], actual: unknown[]): string | undefined {
  if (actual.length !== expected.length) {
    return `$: ${actual.length} documents, expected ${expected.length}: ${show(actual)}`
  }
  for (let i = 0; i < expected.length; i++) {
    const difference = match(expected[i], actual[i], { root: true }, `$[${i}]`)
    if (difference) return difference
  }
  return undefined
}

/** Waits until a client's command events stop arriving (no new one for 25 ms). */
async function settle(entity: ClientEntity) {
  let seen = -1
  while (seen !== entity.events.length) {
    seen = entity.events.length
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

export function describeError(error: unknown): string {
  const { name, message, code, codeName } = error as Document
  return `${name}${code !== undefined ? ` code ${code}` : ''}${codeName ? ` (${codeName})` : ''}: ${message}`
}

function checkError(driver: Driver, op: Operation, error: unknown) {
  const expected = op.expectError as Document
  if (!error) throw new MatchError(`${op.name}: expected an error, got a result`)
  const caught = error as Document
  const fail = (what: string) => {
    throw new MatchError(`${op.name}: ${what}; got ${describeError(error)}`)
  }
  for (const [key, value] of Object.entries(expected)) {
    switch (key) {
      case 'isError':
        break
      case 'isClientError': {
        // A server error is one derived from a server response: MongoServerError and its subclasses.
        const fromServer = caught instanceof driver.MongoServerError
        if (fromServer === value) fail(value ? 'expected a client error' : 'expected a server error')
        break
      }
      case 'errorContains':
        if (!String(caught.message).toLowerCase().includes(String(value).toLowerCase())) {
          fail(`message should contain ${JSON.stringify(value)}`)
        }
        break
      case 'errorCode':
        if (!(caught instanceof driver.MongoServerError) || caught.code !== value)
          fail(`expected server code ${value}`)
        break
      case 'errorCodeName':
        if (String(caught.codeName).toLowerCase() !== String(value).toLowerCase())
          fail(`expected codeName ${value}`)
        break
      default:
        throw new RunnerError(`expectError.${key} is not supported`)
    }
  }
}
