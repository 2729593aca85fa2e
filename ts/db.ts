/**
 * `Db`: a database's collections, its read commands and introspection, as in the official driver.
 * @module
 */
import type { Document } from 'bson'
import {
  DEFAULT_BSON_OPTIONS,
  resolveBSONOptions,
  type BSONOptions,
  type ResolvedBSONOptions,
} from './bson.js'
import type { ActiveCursors } from './active_cursors.js'
import { Admin } from './admin.js'
import { Collection, type CollectionOptions } from './collection.js'
import {
  checkReadCommand,
  CommandCursor,
  ListCollectionsCursor,
  runCommand,
  type CommandCursorOptions,
  type RunCommandOptions,
} from './commands.js'
import { AggregationCursor } from './cursor/aggregation_cursor.js'
import {
  ChangeStream,
  WATCH_CLUSTER,
  type ChangeStreamDocument,
  type ChangeStreamOptions,
  type ChangeStreamScope,
} from './change_stream.js'
import type { CursorSource } from './cursor/abstract_cursor.js'
import { MongoInvalidArgumentError } from './errors.js'
import {
  inheritOptions,
  resolveInherited,
  type InheritableOptions,
  type InheritedOptions,
} from './inherit.js'
import type { NativeCollection, NativeDatabase } from './native.cjs'
import type { AggregateOptions } from './options.js'
import type { ReadConcern, ReadPreference } from './read_preference.js'
import { describe, isPlainObject } from './validate.js'

/** What a database needs from its client. */
export interface DbParent {
  bsonOptions: ResolvedBSONOptions
  /** What the database's operations send unless it or they set their own. */
  inherited: InheritedOptions
  readPreference: ReadPreference
  readConcern: ReadConcern | undefined
  timeoutMS: number | undefined
  nativeDatabase(name: string): Promise<NativeDatabase>
  nativeCollection(db: string, name: string): Promise<NativeCollection>
  /** The client's cursors that its `close()` closes. */
  activeCursors: ActiveCursors
}

/** Options of `client.db()`: inherited by its collections and operations. */
export type DbOptions = BSONOptions & InheritableOptions

/** Options of `db.listCollections()`. */
export interface ListCollectionsOptions extends CommandCursorOptions {
  /** Only names and types (faster; no collection options). */
  nameOnly?: boolean
  authorizedCollections?: boolean
}

/** Options of `db.stats()`. */
export interface DbStatsOptions extends BSONOptions, InheritableOptions {
  /** Divide the sizes by this (1024: kilobytes). */
  scale?: number
}

/** A database's collections and read commands. Get one with `client.db(name)`. */
export class Db {
  readonly #parent: DbParent
  readonly #name: string
  readonly #bsonOptions: ResolvedBSONOptions
  /** readPreference, readConcern and timeoutMS set here (undefined: the client's). */
  readonly #inherited: InheritedOptions

  /** @internal Created by `MongoClient.db`. */
  constructor(parent: DbParent, name: string, options?: DbOptions) {
    if (typeof name !== 'string' || name.length === 0 || /[ ."$/\\\0]/.test(name)) {
      throw new MongoInvalidArgumentError(`invalid database name ${JSON.stringify(name)}`)
    }
    this.#parent = parent
    this.#name = name
    this.#bsonOptions = resolveBSONOptions(options, parent.bsonOptions)
    this.#inherited = resolveInherited(options, parent.inherited)
  }

  get databaseName(): string {
    return this.#name
  }

  get bsonOptions(): ResolvedBSONOptions {
    return { ...this.#bsonOptions }
  }

  /** The database name (the official driver's `db.namespace`). */
  get namespace(): string {
    return this.#name
  }

  /** True when this database's read preference may read from a secondary. */
  get secondaryOk(): boolean {
    return this.readPreference.secondaryOk()
  }

  /** The read preference of this database's operations (its own, else the client's). */
  get readPreference(): ReadPreference {
    return this.#inherited.readPreference ?? this.#parent.readPreference
  }

  /** The read concern of this database's operations (its own, else the client's), if any. */
  get readConcern(): ReadConcern | undefined {
    return this.#inherited.readConcern ?? this.#parent.readConcern
  }

  /** The `timeoutMS` of this database's operations (its own, else the client's), if any. */
  get timeoutMS(): number | undefined {
    return this.#inherited.timeoutMS ?? this.#parent.timeoutMS
  }

  /** @internal Connects on first use. */
  nativeDatabase(): Promise<NativeDatabase> {
    return this.#parent.nativeDatabase(this.#name)
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
        inherited: this.#inherited,
        readPreference: this.readPreference,
        readConcern: this.readConcern,
        timeoutMS: this.timeoutMS,
        nativeCollection: (collection) => this.#parent.nativeCollection(this.#name, collection),
        nativeDatabase: () => this.nativeDatabase(),
        activeCursors: this.#parent.activeCursors,
      },
      name,
      options,
    )
  }

  /**
   * Runs a read-only command (`ping`, `dbStats`, `listCollections`, `explain` of a read, ...) and
   * returns the server's reply. Like the official driver, it inherits no read preference or BSON
   * option from the database (only `timeoutMS`).
   * @throws MongoInvalidArgumentError for a command that may write or change the server (insert,
   * update, delete, findAndModify, drop, create, ...): run those with the official driver.
   */
  async command(command: Document, options: RunCommandOptions = {}): Promise<Document> {
    checkReadCommand(command)
    const bson = resolveBSONOptions(options, DEFAULT_BSON_OPTIONS)
    return runCommand(
      this,
      command,
      {
        readPreference: options?.readPreference,
        timeoutMS: options?.timeoutMS ?? this.timeoutMS,
        session: options?.session,
      },
      bson,
    )
  }

  /**
   * Runs a read-only cursor-returning command (`find`, `aggregate`, `listCollections`,
   * `listIndexes`) and returns a cursor over its results.
   * @throws MongoInvalidArgumentError for a command that may write (see `command`).
   */
  runCursorCommand<T extends Document = Document>(
    command: Document,
    options: CommandCursorOptions = {},
  ): CommandCursor<T> {
    checkReadCommand(command)
    return new CommandCursor<T>(this.#cursorSource(), this, command, { ...options })
  }

  /** The `admin` database's commands (`ping`, `serverStatus`, `listDatabases`, `buildInfo`). */
  admin(): Admin {
    return new Admin(this.#name === 'admin' ? this : new Db(this.#parent, 'admin'))
  }

  /** A cursor over the database's collections (`{ name, type, options, info, idIndex }`). */
  listCollections<T extends Document = Document>(
    filter: Document = {},
    options: ListCollectionsOptions = {},
  ): ListCollectionsCursor<T> {
    if (!isPlainObject(filter)) {
      throw new MongoInvalidArgumentError(`listCollections filter must be an object, got ${describe(filter)}`)
    }
    const resolved = inheritOptions(this.#inherited, options ?? {})
    const command: Document = {
      listCollections: 1,
      filter,
      cursor: resolved.batchSize ? { batchSize: resolved.batchSize } : {},
      nameOnly: Boolean(resolved.nameOnly),
      authorizedCollections: Boolean(resolved.authorizedCollections),
    }
    if (resolved.comment !== undefined) command.comment = resolved.comment
    return new ListCollectionsCursor<T>(this.#cursorSource(), this, command, resolved)
  }

  /** Handles on the database's collections (those whose name holds no `$`). */
  async collections(options: ListCollectionsOptions = {}): Promise<Collection[]> {
    const collections = await this.listCollections({}, { ...options, nameOnly: true }).toArray()
    return collections.filter(({ name }) => !name.includes('$')).map(({ name }) => this.collection(name))
  }

  /** The `dbStats` command's reply. */
  async stats(options: DbStatsOptions = {}): Promise<Document> {
    const resolved = inheritOptions(this.#inherited, options ?? {})
    const command: Document = { dbStats: true }
    if (resolved.scale != null) command.scale = resolved.scale
    return runCommand(this, command, resolved, resolveBSONOptions(resolved, this.#bsonOptions))
  }

  /** Runs a database-level read pipeline (`$documents`, `$currentOp`, ...); returns a cursor. */
  aggregate<T extends Document = Document>(
    pipeline: readonly Document[] = [],
    options: AggregateOptions = {},
  ): AggregationCursor<T> {
    return new AggregationCursor<T>(
      this.#cursorSource(),
      pipeline,
      inheritOptions(this.#inherited, options ?? {}),
    )
  }

  /** A change stream of this database's changes (`$changeStream` on `aggregate: 1`). */
  watch<TSchema extends Document = Document, TChange extends Document = ChangeStreamDocument<TSchema>>(
    pipeline: Document[] = [],
    options: ChangeStreamOptions = {},
  ): ChangeStream<TSchema, TChange> {
    return this.#watch('database', pipeline, options)
  }

  /** @internal The client's `watch()`: every database's changes, run on `admin`. */
  [WATCH_CLUSTER]<TSchema extends Document, TChange extends Document>(
    pipeline: Document[],
    options: ChangeStreamOptions,
  ): ChangeStream<TSchema, TChange> {
    return this.#watch('cluster', pipeline, options)
  }

  #watch<TSchema extends Document, TChange extends Document>(
    scope: ChangeStreamScope,
    pipeline: Document[],
    options: ChangeStreamOptions,
  ): ChangeStream<TSchema, TChange> {
    const inherited = inheritOptions(this.#inherited, options ?? {}) as ChangeStreamOptions
    return new ChangeStream<TSchema, TChange>(this.#cursorSource(), scope, pipeline, inherited)
  }

  /** The index information of collection `name` (see `Collection.indexInformation`). */
  async indexInformation(name: string, options?: Document): Promise<Document> {
    return this.collection(name).indexInformation(inheritOptions(this.#inherited, options ?? {}))
  }

  /** A source for the cursors of database-level commands (an aggregate sends `aggregate: 1`). */
  #cursorSource(): CursorSource {
    return {
      namespace: this.#name,
      bsonOptions: this.#bsonOptions,
      nativeCollection: () =>
        Promise.reject(new MongoInvalidArgumentError('no collection: a database-level cursor')),
      nativeDatabase: () => this.nativeDatabase(),
      databaseLevel: true,
      readPreference: this.readPreference,
      readConcern: this.readConcern,
      activeCursors: this.#parent.activeCursors,
    }
  }
}
