/**
 * Commands run on a database: the read-only allow-list of `db.command()` and the cursor over a
 * cursor-returning command (`listCollections`, `listIndexes`, `db.aggregate`).
 * @module
 */
import type { Document } from 'bson'
import { resolveBSONOptions, toBSON, type BSONOptions, type ResolvedBSONOptions } from './bson.js'
import { createDecoder } from './format/index.js'
import { AbstractCursor, type CursorSource } from './cursor/abstract_cursor.js'
import { callNative, MongoInvalidArgumentError } from './errors.js'
import type { NativeDatabase } from './native.cjs'
import { ReadPreference, type ReadPreferenceMode } from './read_preference.js'
import { checkSession, type ClientSession } from './session.js'
import { describe, isPlainObject } from './validate.js'

/**
 * The commands `db.command()` runs: those that only read (data, metadata or server state).
 * An allow-list, not a deny-list: the server keeps adding commands, and one that is not known to
 * be read-only (a new write, `shutdown`, `fsync`, `killOp`, `setParameter`, ...) must not pass
 * through a library whose promise is that it never writes. Lower case: the server matches the
 * first key of the command, and accepts `isMaster` and `ismaster` alike.
 */
const READ_COMMANDS = new Set(
  [
    'aggregate',
    'buildInfo',
    'collStats',
    'connectionStatus',
    'count',
    'dataSize',
    'dbHash',
    'dbStats',
    'distinct',
    'explain',
    'find',
    'getCmdLineOpts',
    'getDefaultRWConcern',
    'getLog',
    'getParameter',
    'hello',
    'hostInfo',
    'isMaster',
    'listCollections',
    'listCommands',
    'listDatabases',
    'listIndexes',
    'listShards',
    'lockInfo',
    'ping',
    'replSetGetConfig',
    'replSetGetStatus',
    'rolesInfo',
    'serverStatus',
    'top',
    'usersInfo',
    'whatsmyuri',
  ].map((name) => name.toLowerCase()),
)

const WRITE_STAGES = ['$out', '$merge']

function refuse(what: string): never {
  throw new MongoInvalidArgumentError(
    `rumongo runs read-only commands: ${what} may write or change the server; run it with the official driver`,
  )
}

/** Throws unless `command` only reads (see {@link READ_COMMANDS}); checks what an `explain` wraps. */
export function checkReadCommand(command: unknown): Document {
  if (!isPlainObject(command)) {
    throw new MongoInvalidArgumentError(`command must be an object, got ${describe(command)}`)
  }
  const name = Object.keys(command)[0]
  if (name === undefined) throw new MongoInvalidArgumentError('command must not be empty')
  if (!READ_COMMANDS.has(name.toLowerCase())) refuse(`"${name}"`)
  if (name.toLowerCase() === 'aggregate' && Array.isArray(command.pipeline)) {
    const write = command.pipeline.flatMap((stage: unknown) =>
      isPlainObject(stage) ? Object.keys(stage).filter((key) => WRITE_STAGES.includes(key)) : [],
    )[0]
    if (write !== undefined) refuse(`an aggregate with a ${write} stage`)
  }
  if (name.toLowerCase() === 'explain') checkReadCommand(command[name])
  return command
}

/** Options of `db.command()`. */
export interface RunCommandOptions extends BSONOptions {
  readPreference?: ReadPreferenceMode | ReadPreference | { mode: ReadPreferenceMode }
  timeoutMS?: number
  /** A session of rumongo's `client.startSession()` the command runs in. */
  session?: ClientSession
}

/** What a command needs from its database. */
export interface CommandTarget {
  nativeDatabase(): Promise<NativeDatabase>
}

/** The native options of a command: read preference, time limit and session, as BSON. */
export function commandOptions(options: {
  readPreference?: unknown
  timeoutMS?: unknown
  session?: unknown
}): Document {
  const native: Document = {}
  if (options.session !== undefined) native.session = checkSession('command', options.session)
  // As the official driver's db.command: only `readPreference`, no `hedge` or tags beside it.
  const readPreference = ReadPreference.fromOptions({ readPreference: options.readPreference })
  if (readPreference !== undefined) {
    native.readPreference = { mode: readPreference.mode }
    if (readPreference.tags?.length) native.readPreference.tagSets = readPreference.tags
    if (readPreference.maxStalenessSeconds !== undefined) {
      native.readPreference.maxStalenessSeconds = readPreference.maxStalenessSeconds
    }
    if (readPreference.hedge) native.readPreference.hedge = readPreference.hedge
  }
  if (options.timeoutMS !== undefined) {
    if (!Number.isSafeInteger(options.timeoutMS) || (options.timeoutMS as number) < 0) {
      throw new MongoInvalidArgumentError(
        `timeoutMS must be a non-negative integer, got ${describe(options.timeoutMS)}`,
      )
    }
    native.timeoutMS = options.timeoutMS
  }
  return native
}

/** Runs `command` (checked by the caller) and decodes the reply with `bson`. */
export async function runCommand(
  target: CommandTarget,
  command: Document,
  options: { readPreference?: unknown; timeoutMS?: unknown; session?: unknown },
  bson: ResolvedBSONOptions,
): Promise<Document> {
  const native = commandOptions(options)
  const database = await target.nativeDatabase()
  const reply = await callNative(() => database.runCommand(toBSON(command, bson), toBSON(native, bson)))
  return createDecoder(bson).decodeDocument(reply)
}

/** Options of a cursor over a command. */
export interface CommandCursorOptions extends BSONOptions {
  batchSize?: number
  comment?: unknown
  readPreference?: unknown
  timeoutMS?: number
  /** A session of rumongo's `client.startSession()` the command and its getMores run in. */
  session?: ClientSession
}

/**
 * A cursor over the results of a cursor-returning command, with the official driver's cursor
 * surface (`next`, `toArray`, `for await`, `map`, `close`, ...).
 */
export class CommandCursor<TSchema = Document> extends AbstractCursor<TSchema> {
  readonly #target: CommandTarget
  readonly #command: Document
  readonly #options: CommandCursorOptions
  readonly #bson: ResolvedBSONOptions

  /** @internal */
  constructor(source: CursorSource, target: CommandTarget, command: Document, options: CommandCursorOptions) {
    super(source)
    if (
      options.batchSize !== undefined &&
      !(Number.isSafeInteger(options.batchSize) && options.batchSize >= 0)
    ) {
      throw new MongoInvalidArgumentError(
        `batchSize must be a non-negative integer, got ${describe(options.batchSize)}`,
      )
    }
    this.#target = target
    this.#command = command
    this.#options = { ...options }
    this.#bson = resolveBSONOptions(options, source.bsonOptions)
  }

  protected override async openNative() {
    const { batchSize, comment } = this.#options
    const native = commandOptions(this.#options)
    if (batchSize !== undefined) native.batchSize = batchSize
    if (comment !== undefined) native.comment = comment
    const bson = this.#bson
    const database = await this.#target.nativeDatabase()
    const opened = await callNative(() =>
      database.runCursorCommand(toBSON(this.#command, bson), toBSON(native, bson), this.batchOutput(bson)),
    )
    return { opened, bsonOptions: bson }
  }

  override clone(): CommandCursor<TSchema> {
    const Kind = this.constructor as typeof CommandCursor<TSchema>
    return new Kind(this.source, this.#target, this.#command, this.#options)
  }

  protected override get readOptions(): Document {
    return this.#options
  }

  override map<T>(transform: (document: TSchema) => T): CommandCursor<T> {
    return super.map(transform) as CommandCursor<T>
  }
}

/** The cursor of `db.listCollections()`. */
export class ListCollectionsCursor<TSchema = Document> extends CommandCursor<TSchema> {}

/** The cursor of `collection.listIndexes()`. */
export class ListIndexesCursor<TSchema = Document> extends CommandCursor<TSchema> {}
