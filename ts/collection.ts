/**
 * `Collection`: the read operations of the official driver's collection, same names and results.
 * @module
 */
import type { Document, ObjectId } from 'bson'
import type { ActiveCursors } from './active_cursors.js'
import { resolveBSONOptions, toBSON, type BSONOptions, type ResolvedBSONOptions } from './bson.js'
import { AggregationCursor } from './cursor/aggregation_cursor.js'
import { ChangeStream, type ChangeStreamDocument, type ChangeStreamOptions } from './change_stream.js'
import { FindCursor } from './cursor/find_cursor.js'
import {
  aggregateArrowCursor,
  ArrowCursor,
  findArrowCursor,
  pipeArrow,
  readArrow,
  type AggregateArrowOptions,
  type FindArrowOptions,
  type PipeArrowResult,
} from './cursor/arrow_cursor.js'
import type * as ApacheArrow from 'apache-arrow'
import type { CursorSource } from './cursor/abstract_cursor.js'
import { createDecoder } from './format/index.js'
import { callNative, MongoAPIError, MongoInvalidArgumentError } from './errors.js'
import { findJson, pipeJson, type JsonOptions, type PipeJsonResult } from './json.js'
import { LAZY, type LazyDocument } from './format/lazy.js'
import type { NativeCollection, NativeDatabase } from './native.cjs'
import { CommandCursor, ListIndexesCursor, runCommand, type CommandCursorOptions } from './commands.js'
import {
  inheritOptions,
  resolveInherited,
  type InheritableOptions,
  type InheritedOptions,
} from './inherit.js'
import type { ReadConcern, ReadPreference } from './read_preference.js'
import {
  COUNT,
  COUNT_DOCUMENTS,
  DISTINCT,
  ESTIMATED_DOCUMENT_COUNT,
  resolveOperationOptions,
  type AggregateOptions,
  type CollationOptions,
  type CountDocumentsOptions,
  type DistinctOptions,
  type EstimatedDocumentCountOptions,
  type FindOptions,
  type Hint,
  type ReadOperationOptions,
} from './options.js'
import { checkFilter, describe } from './validate.js'
import type { Filter, Flatten, WithId } from './types/filter.js'

export type { Filter, WithId } from './types/filter.js'

/** Options of `findCursor`: those of `find`, plus how documents are delivered. */
export interface FindCursorOptions extends FindOptions {
  /** Yield lazy documents (see `findLazy`) instead of plain ones. Default false. */
  lazy?: boolean
  /** Server batches fetched ahead of the one being read (default 2); see `AbstractCursor.prefetch`. */
  prefetch?: number
}

/** Options for `db.collection()`: inherited by its operations. */
export type CollectionOptions = BSONOptions & InheritableOptions

/** What a collection needs from its database. */
export interface CollectionParent {
  databaseName: string
  bsonOptions: ResolvedBSONOptions
  /** What the database sets itself (not what it inherits from the client). */
  inherited: InheritedOptions
  /** The database's effective values. */
  readPreference: ReadPreference
  readConcern: ReadConcern | undefined
  timeoutMS: number | undefined
  nativeCollection(name: string): Promise<NativeCollection>
  nativeDatabase(): Promise<NativeDatabase>
  /** The client's cursors that its `close()` closes. */
  activeCursors: ActiveCursors
}

/** Options of `listIndexes`, `indexes`, `indexExists` and `indexInformation`. */
export interface ListIndexesOptions extends CommandCursorOptions {
  /** `indexes` / `indexInformation`: the full index documents (true), or `{ name: [[key, dir]] }`. */
  full?: boolean
}

/** Options of the deprecated `count`. */
export interface CountOptions extends ReadOperationOptions {
  skip?: number
  limit?: number
  hint?: Hint
  collation?: CollationOptions
}

/** A collection's read operations. Get one with `client.db(name).collection(name)`. */
export class Collection<TSchema extends Document = Document> {
  readonly #parent: CollectionParent
  readonly #name: string
  readonly #bsonOptions: ResolvedBSONOptions
  /** readPreference, readConcern and timeoutMS set on this collection or its database. */
  readonly #inherited: InheritedOptions

  /** @internal Created by `Db.collection`. */
  constructor(parent: CollectionParent, name: string, options?: CollectionOptions) {
    if (typeof name !== 'string' || name.length === 0) {
      throw new MongoInvalidArgumentError(`collection name must be a non-empty string, got ${describe(name)}`)
    }
    this.#parent = parent
    this.#name = name
    this.#bsonOptions = resolveBSONOptions(options, parent.bsonOptions)
    this.#inherited = resolveInherited(options, parent.inherited)
  }

  /** The read preference of this collection's operations (its own, else its database's). */
  get readPreference(): ReadPreference {
    return this.#inherited.readPreference ?? this.#parent.readPreference
  }

  /** The read concern of this collection's operations (its own, else its database's), if any. */
  get readConcern(): ReadConcern | undefined {
    return this.#inherited.readConcern ?? this.#parent.readConcern
  }

  /** The `timeoutMS` of this collection's operations (its own, else its database's), if any. */
  get timeoutMS(): number | undefined {
    return this.#inherited.timeoutMS ?? this.#parent.timeoutMS
  }

  get collectionName(): string {
    return this.#name
  }

  get dbName(): string {
    return this.#parent.databaseName
  }

  /** `db.collection`. */
  get namespace(): string {
    return `${this.dbName}.${this.#name}`
  }

  /** BSON options in force for this collection's operations. */
  get bsonOptions(): ResolvedBSONOptions {
    return { ...this.#bsonOptions }
  }

  /** Not cached: after `close()` and `connect()` the client has a new native connection. */
  #nativeCollection(): Promise<NativeCollection> {
    return this.#parent.nativeCollection(this.#name)
  }

  #cursorSource(): CursorSource {
    return {
      namespace: this.namespace,
      bsonOptions: this.#bsonOptions,
      nativeCollection: () => this.#nativeCollection(),
      nativeDatabase: () => this.#parent.nativeDatabase(),
      readPreference: this.readPreference,
      readConcern: this.readConcern,
      activeCursors: this.#parent.activeCursors,
    }
  }

  /** `options` with the collection's and database's readPreference, readConcern, timeoutMS. */
  #inherit<T extends object>(options: T): T {
    return inheritOptions(this.#inherited, options as any) as T
  }

  /**
   * Documents matching `filter`. Returns a cursor; `await` it (or call `toArray()`) for the array.
   * `filter` may also be an ObjectId, meaning `{ _id: id }`. As in the official driver, `find<T>()`
   * types the documents `T` instead (unchecked: for a projection or a schema the collection lacks).
   */
  find(filter?: Filter<TSchema> | ObjectId, options?: FindOptions): FindCursor<WithId<TSchema>>
  find<T extends Document>(filter?: Filter<TSchema> | ObjectId, options?: FindOptions): FindCursor<T>
  find(filter: Filter<TSchema> | ObjectId = {}, options: FindOptions = {}): FindCursor<WithId<TSchema>> {
    return new FindCursor(this.#cursorSource(), checkFilter(filter), this.#inherit(options))
  }

  /**
   * A streaming cursor over the documents matching `filter`, for results too large to hold at once:
   * memory stays bounded by a few server batches whatever the result size, because batches are
   * fetched only `prefetch` ahead of the reader.
   *
   * ```js
   * for await (const doc of orders.findCursor({ region: 'eu' }, { batchSize: 1000 })) ...
   * let batch; while ((batch = await cursor.nextBatch())) handle(batch)
   * cursor.stream().pipe(transform)   // object mode, backpressure honoured
   * ```
   * Leaving a `for await` early (break, throw) closes the server cursor; so does `close()`, closing
   * the client, or the cursor being garbage-collected unclosed. `{ lazy: true }` yields lazy
   * documents (see {@link findLazy}).
   */
  findCursor(
    filter?: Filter<TSchema> | ObjectId,
    options?: FindCursorOptions & { lazy?: false },
  ): FindCursor<WithId<TSchema>>
  findCursor(
    filter: Filter<TSchema> | ObjectId,
    options: FindCursorOptions & { lazy: true },
  ): FindCursor<LazyDocument<WithId<TSchema>>>
  findCursor(
    filter: Filter<TSchema> | ObjectId = {},
    options: FindCursorOptions = {},
  ): FindCursor<WithId<TSchema>> | FindCursor<LazyDocument<WithId<TSchema>>> {
    const { lazy = false, prefetch, ...findOptions } = options ?? {}
    if (typeof lazy !== 'boolean') {
      throw new MongoInvalidArgumentError(`findCursor option "lazy" must be a boolean, got ${describe(lazy)}`)
    }
    const cursor = lazy ? this.#findLazyCursor(filter, findOptions) : this.find(filter, findOptions)
    return prefetch === undefined ? cursor : cursor.prefetch(prefetch)
  }

  /** A find whose documents come out lazy (findLazy, findCursor `lazy`). */
  #findLazyCursor(filter: Filter<TSchema> | ObjectId, options: FindOptions) {
    // Lazy documents are built from the batch bytes whatever `raw` says.
    return new FindCursor<LazyDocument<WithId<TSchema>>>(
      this.#cursorSource(),
      checkFilter(filter),
      { ...this.#inherit(options), raw: false },
      LAZY,
    )
  }

  /**
   * The documents matching `filter` as one JSON array (a Buffer of UTF-8), transcoded from BSON in
   * Rust: no JS object is built. `options.format` picks relaxed Extended JSON (default) or plain
   * `JSON.stringify` output; see {@link JsonFormat}. Decode options other than
   * `enableUtf8Validation` do not apply (passing one is an error).
   */
  async findJson(filter: Filter<TSchema> | ObjectId = {}, options: JsonOptions = {}): Promise<Buffer> {
    checkNoExplain(options)
    return findJson(this.#cursorSource(), checkFilter(filter), this.#inherit(options ?? {}))
  }

  /**
   * Streams the documents matching `filter` into `destination` (an HTTP response, a file, any
   * Writable) as one JSON array, batch by batch, honouring backpressure, then ends it. Nothing is
   * written before the first batch arrived: a query that fails rejects with the destination
   * untouched. Once writing, if the destination errors, closes or is ended elsewhere, or
   * `timeoutMS` passes (backpressure waits included), the cursor is killed, the destination
   * destroyed and the promise rejects. Same formats as {@link findJson}.
   */
  async pipeJson(
    filter: Filter<TSchema> | ObjectId,
    options: JsonOptions,
    destination: NodeJS.WritableStream,
  ): Promise<PipeJsonResult> {
    const inherited = this.#inherit(options ?? {})
    // The whole call's limit (pipeJson keeps it in JS): the operation's or an inherited timeoutMS.
    const timeoutMS = inherited.timeoutMS ?? this.#parent.timeoutMS
    return pipeJson(
      this.#cursorSource(),
      () => {
        checkNoExplain(options)
        return checkFilter(filter)
      },
      inherited,
      destination,
      timeoutMS,
    )
  }

  /**
   * Documents matching `filter` (same filter and options as `find`), each a read-only lazy view over
   * its batch's raw BSON: a field is parsed on first read, then cached. Values and types equal what
   * `find` returns under the same BSON options.
   *
   * - Reads like a plain object: fields, spread, `Object.keys/entries`, `in`, `for...in`,
   *   `JSON.stringify`, `util.inspect` / `console.log`. Embedded documents are lazy views too;
   *   arrays are real, frozen arrays built on first access (their documents lazy).
   * - Read-only: assigning, deleting or defining a property throws a `TypeError`.
   * - `doc.toObject()` returns the plain document `find` returns (use it for `structuredClone`, or
   *   to modify). A stored field named `toObject` wins over the method: call `materialize(doc)`.
   * - Documents of one server batch share that batch's buffer: keeping one alive keeps its batch.
   */
  async findLazy(
    filter: Filter<TSchema> | ObjectId = {},
    options: FindOptions = {},
  ): Promise<LazyDocument<WithId<TSchema>>[]> {
    return this.#findLazyCursor(filter, options).toArray()
  }

  /** The first document matching `filter`, or `null`; `findOne<T>()` types it `T`, as `find<T>()`. */
  findOne(filter?: Filter<TSchema> | ObjectId, options?: FindOptions): Promise<WithId<TSchema> | null>
  findOne<T = TSchema>(filter?: Filter<TSchema> | ObjectId, options?: FindOptions): Promise<T | null>
  async findOne(
    filter: Filter<TSchema> | ObjectId = {},
    options: FindOptions = {},
  ): Promise<WithId<TSchema> | null> {
    // `limit: 1, singleBatch: true` and no batchSize, the command the official driver sends; with
    // `explain`, the plan of that command.
    const cursor =
      options?.explain != null
        ? this.find(filter, { ...options, singleBatch: true }).limit(1)
        : this.find(filter, options).limit(-1)
    try {
      return await cursor.next()
    } finally {
      await cursor.close()
    }
  }

  /** Runs a read-only aggregation pipeline. Returns a cursor, awaitable like `find`'s. */
  aggregate<T extends Document = Document>(
    pipeline: readonly Document[] = [],
    options: AggregateOptions = {},
  ): AggregationCursor<T> {
    return new AggregationCursor<T>(this.#cursorSource(), pipeline, this.#inherit(options))
  }

  /** A change stream of this collection's changes (`$changeStream`); see {@link ChangeStream}. */
  watch<TLocal extends Document = TSchema, TChange extends Document = ChangeStreamDocument<TLocal>>(
    pipeline: Document[] = [],
    options: ChangeStreamOptions = {},
  ): ChangeStream<TLocal, TChange> {
    return new ChangeStream<TLocal, TChange>(
      this.#cursorSource(),
      'collection',
      pipeline,
      this.#inherit(options ?? {}),
    )
  }

  /**
   * The documents matching `filter` as an Apache Arrow `Table` (needs the optional peer dependency
   * `apache-arrow`), built in Rust from the raw BSON: no JS document is created. `{ as: 'ipc' }`
   * resolves to the Arrow IPC stream bytes instead (no apache-arrow needed). Columns follow
   * `options.schema` (which also becomes the projection) or are inferred; see {@link ArrowOptions}.
   */
  findArrow(filter: Filter<TSchema> | ObjectId, options: FindArrowOptions & { as: 'ipc' }): Promise<Buffer>
  findArrow(
    filter?: Filter<TSchema> | ObjectId,
    options?: FindArrowOptions & { as?: 'table' },
  ): Promise<ApacheArrow.Table>
  async findArrow(
    filter: Filter<TSchema> | ObjectId = {},
    options: FindArrowOptions = {},
  ): Promise<ApacheArrow.Table | Buffer> {
    const open = () => this.#findArrowCursor(filter, options, true)
    return readArrow(open, options?.as, 'findArrow')
  }

  /** A cursor of Arrow record batches over the documents matching `filter`; see {@link ArrowCursor}. */
  findArrowCursor(filter: Filter<TSchema> | ObjectId = {}, options: FindArrowOptions = {}): ArrowCursor {
    return this.#findArrowCursor(filter, options, false)
  }

  /** `tableBatches`: record batches of ~8 MiB of BSON (a Table, a pipe), else one per server batch. */
  #findArrowCursor(filter: Filter<TSchema> | ObjectId, options: FindArrowOptions, tableBatches: boolean) {
    return findArrowCursor(
      this.#cursorSource(),
      checkFilter(filter),
      this.#inherit(options ?? {}),
      tableBatches,
    )
  }

  /** The results of `pipeline` as an Apache Arrow `Table`, or IPC bytes; see {@link findArrow}. */
  aggregateArrow(
    pipeline: readonly Document[],
    options: AggregateArrowOptions & { as: 'ipc' },
  ): Promise<Buffer>
  aggregateArrow(
    pipeline?: readonly Document[],
    options?: AggregateArrowOptions & { as?: 'table' },
  ): Promise<ApacheArrow.Table>
  async aggregateArrow(
    pipeline: readonly Document[] = [],
    options: AggregateArrowOptions = {},
  ): Promise<ApacheArrow.Table | Buffer> {
    const open = () => this.#aggregateArrowCursor(pipeline, options, true)
    return readArrow(open, options?.as, 'aggregateArrow')
  }

  /** A cursor of Arrow record batches over the results of `pipeline`; see {@link ArrowCursor}. */
  aggregateArrowCursor(pipeline: readonly Document[] = [], options: AggregateArrowOptions = {}): ArrowCursor {
    return this.#aggregateArrowCursor(pipeline, options, false)
  }

  #aggregateArrowCursor(
    pipeline: readonly Document[],
    options: AggregateArrowOptions,
    tableBatches: boolean,
  ) {
    return aggregateArrowCursor(this.#cursorSource(), pipeline, this.#inherit(options ?? {}), tableBatches)
  }

  /**
   * Streams the documents matching `filter` into `destination` (an HTTP response, a file) as one
   * Arrow IPC stream, record batch by record batch, honouring backpressure, then ends it. A query
   * that fails before its first batch rejects with the destination untouched. Once writing, if the
   * destination errors, closes or is ended elsewhere, or `timeoutMS` passes (backpressure waits
   * included), the cursor is killed, the destination destroyed (a partial stream has no
   * end-of-stream marker) and the promise rejects, as with {@link pipeJson}.
   */
  async pipeArrow(
    filter: Filter<TSchema> | ObjectId,
    options: FindArrowOptions,
    destination: NodeJS.WritableStream,
  ): Promise<PipeArrowResult> {
    // The whole call's limit, as for pipeJson: the operation's or an inherited timeoutMS.
    const timeoutMS = this.#inherit(options ?? {}).timeoutMS ?? this.#parent.timeoutMS
    return pipeArrow(() => this.#findArrowCursor(filter, options, true), destination, timeoutMS)
  }

  /** Number of documents matching `filter` (exact, via an aggregation). */
  async countDocuments(filter: Filter<TSchema> = {}, options: CountDocumentsOptions = {}): Promise<number> {
    const checked = checkFilter(filter)
    const { command, bson } = resolveOperationOptions(
      COUNT_DOCUMENTS,
      this.#inherit(options),
      this.#bsonOptions,
    )
    const collection = await this.#nativeCollection()
    return callNative(() => collection.countDocuments(toBSON(checked, bson), toBSON(command, bson)))
  }

  /** Number of documents in the collection from its metadata (fast, may be approximate). */
  async estimatedDocumentCount(options: EstimatedDocumentCountOptions = {}): Promise<number> {
    const { command, bson } = resolveOperationOptions(
      ESTIMATED_DOCUMENT_COUNT,
      this.#inherit(options),
      this.#bsonOptions,
    )
    const collection = await this.#nativeCollection()
    return callNative(() => collection.estimatedDocumentCount(toBSON(command, bson)))
  }

  /**
   * The distinct values of `key` among documents matching `filter`: typed by the schema for one of
   * its top-level fields (an array field's elements), as in the official driver; else `T`.
   */
  distinct<Key extends keyof WithId<TSchema>>(
    key: Key,
    filter?: Filter<TSchema>,
    options?: DistinctOptions,
  ): Promise<Flatten<WithId<TSchema>[Key]>[]>
  distinct<T = any>(key: string, filter?: Filter<TSchema>, options?: DistinctOptions): Promise<T[]>
  async distinct<T = any>(
    key: string,
    filter: Filter<TSchema> = {},
    options: DistinctOptions = {},
  ): Promise<T[]> {
    if (typeof key !== 'string') {
      throw new MongoInvalidArgumentError(`distinct key must be a string, got ${describe(key)}`)
    }
    const checked = checkFilter(filter)
    const { command, bson } = resolveOperationOptions(DISTINCT, this.#inherit(options), this.#bsonOptions)
    const collection = await this.#nativeCollection()
    const reply = await callNative(() =>
      collection.distinct(key, toBSON(checked, bson), toBSON(command, bson)),
    )
    return createDecoder({ ...bson, raw: false }).decodeDocument(reply).values as T[]
  }

  /** The collection's options as `listCollections` reports them (`capped`, `validator`, ...). */
  async options(options: CommandCursorOptions = {}): Promise<Document> {
    const [collection] = await this.#listSelf(options)
    if (collection == null || collection.options == null) {
      throw new MongoAPIError(`collection ${this.namespace} not found`)
    }
    return collection.options
  }

  /** True for a capped collection. */
  async isCapped(options: CommandCursorOptions = {}): Promise<boolean> {
    return Boolean((await this.options(options)).capped)
  }

  /** This collection's `listCollections` entry, if it exists. */
  #listSelf(options: CommandCursorOptions): Promise<Document[]> {
    const command = { listCollections: 1, filter: { name: this.#name }, cursor: {} }
    return new CommandCursor<Document>(
      this.#cursorSource(),
      this.#parent,
      command,
      this.#inherit(options ?? {}),
    ).toArray()
  }

  /** A cursor over the collection's indexes (`{ v, key, name, ... }`). */
  listIndexes(options: ListIndexesOptions = {}): ListIndexesCursor<Document> {
    const resolved = this.#inherit(options ?? {})
    const command: Document = {
      listIndexes: this.#name,
      cursor: resolved.batchSize ? { batchSize: resolved.batchSize } : {},
    }
    if (resolved.comment !== undefined) command.comment = resolved.comment
    return new ListIndexesCursor(this.#cursorSource(), this.#parent, command, resolved)
  }

  /**
   * The collection's indexes: the index documents, or with `full: false` an object mapping each
   * index name to its key as `[field, direction]` pairs.
   */
  async indexes(options?: ListIndexesOptions & { full?: true }): Promise<Document[]>
  async indexes(options: ListIndexesOptions & { full: false }): Promise<Record<string, [string, unknown][]>>
  async indexes(options: ListIndexesOptions = {}): Promise<Document[] | Record<string, [string, unknown][]>> {
    const indexes = await this.listIndexes(options).toArray()
    if (options?.full ?? true) return indexes
    return Object.fromEntries(indexes.map(({ name, key }) => [name, Object.entries(key)]))
  }

  /** True when every index named in `indexes` exists. */
  async indexExists(indexes: string | string[], options?: ListIndexesOptions): Promise<boolean> {
    const names = Array.isArray(indexes) ? indexes : [indexes]
    const existing = new Set(
      await this.listIndexes(options)
        .map(({ name }) => name as string)
        .toArray(),
    )
    return names.every((name) => existing.has(name))
  }

  /** `indexes()` with `full: false` unless asked otherwise: `{ name: [[field, direction]] }`. */
  async indexInformation(options?: ListIndexesOptions): Promise<Document> {
    return this.indexes({ ...options, full: (options?.full ?? false) as false })
  }

  /**
   * Number of documents matching `filter`, by the `count` command (deprecated in the official
   * driver: from metadata without a filter, and not exact on sharded clusters; prefer
   * `countDocuments` or `estimatedDocumentCount`).
   * @deprecated
   */
  async count(filter: Filter<TSchema> = {}, options: CountOptions = {}): Promise<number> {
    const checked = checkFilter(filter)
    const { command: resolved, bson } = resolveOperationOptions(
      COUNT,
      this.#inherit(options),
      this.#bsonOptions,
    )
    const command: Document = { count: this.#name, query: checked }
    for (const key of ['limit', 'skip', 'hint', 'maxTimeMS', 'collation', 'comment'] as const) {
      if (resolved[key] !== undefined) command[key] = resolved[key]
    }
    if (resolved.readConcern !== undefined) command.readConcern = resolved.readConcern
    const reply = await runCommand(this.#parent, command, resolved, { ...bson, raw: false })
    return Number(reply.n)
  }
}

/** JSON output renders documents: a plan is read with `find(filter).explain()`. */
function checkNoExplain(options: unknown): void {
  if ((options as { explain?: unknown } | null | undefined)?.explain != null) {
    throw new MongoInvalidArgumentError(
      'explain does not apply to JSON output: read the plan with find(filter).explain()',
    )
  }
}
