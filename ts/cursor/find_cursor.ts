/**
 * The cursor `find()` returns, with the official driver's builder methods.
 * @module
 */
import type { Document } from 'bson'
import { toBSON } from '../bson.js'
import { callNative } from '../errors.js'
import {
  FIND,
  normalizeOperationOption,
  resolveOperationOptions,
  type CollationOptions,
  type FindOptions,
  type Hint,
  type Sort,
  type SortDirection,
} from '../options.js'
import type { BatchFormat } from '../format/index.js'
import { findCommand, runExplain, type ExplainCommandOptions } from '../explain.js'
import type { ExplainVerbosityLike } from '../read_preference.js'
import { AbstractCursor, type CursorSource } from './abstract_cursor.js'
import { findSizeKey, withDefaultBatchSize } from './batch_size.js'
import { checkFilter } from '../validate.js'

/** A cursor over the results of a `find`. Set options with the builder methods before reading. */
export class FindCursor<TSchema = Document> extends AbstractCursor<TSchema> {
  #filter: Document
  readonly #options: FindOptions

  /** @internal Created by `Collection.find` (and `findLazy`, `findJson`, with their format). */
  constructor(source: CursorSource, filter: Document, options: FindOptions, format?: BatchFormat) {
    super(source, format)
    // Fail at the call site, not at the first read, on a bad option.
    resolveOperationOptions(FIND, options, source.bsonOptions)
    this.#filter = filter
    this.#options = { ...options }
  }

  protected override async openWithoutCursor(): Promise<Document[] | undefined> {
    const { explain } = this.#options
    return explain == null ? undefined : [await this.explain(explain as ExplainVerbosityLike)]
  }

  protected override async openNative() {
    const collection = await this.source.nativeCollection()
    const resolved = resolveOperationOptions(FIND, this.#options, this.source.bsonOptions)
    const { bson } = resolved
    const sizeKey = findSizeKey(this.source.namespace, resolved.command.projection)
    const command = withDefaultBatchSize(resolved.command, this.collectsAll ? undefined : sizeKey, this.bulk)
    const opened = await callNative(() =>
      collection.find(toBSON(this.#filter, bson), toBSON(command, bson), this.batchOutput(bson)),
    )
    return { opened, bsonOptions: bson, sizeKey }
  }

  /** A new, unstarted cursor of the same kind and format (lazy cursors stay lazy) with the same query. */
  override clone(): FindCursor<TSchema> {
    const Kind = this.constructor as new (
      source: CursorSource,
      filter: Document,
      options: FindOptions,
      format: BatchFormat,
    ) => FindCursor<TSchema>
    return new Kind(this.source, this.#filter, this.#options, this.format)
  }

  protected override get readOptions(): Document {
    return this.#options
  }

  override map<T>(transform: (document: TSchema) => T): FindCursor<T> {
    return super.map(transform) as FindCursor<T>
  }

  protected override applyNoCursorTimeout(value: boolean): void {
    this.#set('noCursorTimeout', value)
  }

  protected override get tailable(): boolean {
    return this.#options.tailable === true
  }

  protected override applyTailFlag(flag: 'tailable' | 'awaitData', value: boolean): boolean {
    this.#set(flag, value)
    return true
  }

  #set(key: keyof FindOptions & string, value: unknown): this {
    this.throwIfInitialized()
    ;(this.#options as Document)[key] = normalizeOperationOption(FIND, key, value)
    return this
  }

  /**
   * The server's plan for this query (the `explain` command): `verbosity` `'queryPlanner'`,
   * `'executionStats'` or `'allPlansExecution'` (the default, as `true`), or `{ verbosity, maxTimeMS }`.
   */
  async explain(
    verbosity?: ExplainVerbosityLike | ExplainCommandOptions,
    options?: ExplainCommandOptions,
  ): Promise<Document> {
    const { command: resolved, bson } = resolveOperationOptions(FIND, this.#options, this.source.bsonOptions)
    const command = findCommand(this.namespace.collection, this.#filter, resolved)
    return runExplain(this.source, command, resolved, bson, verbosity, options)
  }

  /** Replaces the query filter. */
  filter(filter: Document): this {
    this.throwIfInitialized()
    this.#filter = checkFilter(filter)
    return this
  }

  /** Sort order: `sort({ a: 1 })`, `sort('a', -1)`, `sort([['a', 1], ['b', -1]])`, ... */
  sort(sort: Sort, direction?: SortDirection): this {
    return this.#set('sort', typeof sort === 'string' && direction !== undefined ? [[sort, direction]] : sort)
  }

  limit(value: number): this {
    return this.#set('limit', value)
  }

  skip(value: number): this {
    return this.#set('skip', value)
  }

  /** Fields to include or exclude (`{ a: 1 }`, `{ b: 0 }`, `{ 'a.b': 1 }`, operators). */
  project<T extends Document = Document>(projection: Document): FindCursor<T> {
    this.#set('projection', projection)
    return this as unknown as FindCursor<T>
  }

  batchSize(value: number): this {
    return this.#set('batchSize', value)
  }

  hint(hint: Hint): this {
    return this.#set('hint', hint)
  }

  min(min: Document): this {
    return this.#set('min', min)
  }

  max(max: Document): this {
    return this.#set('max', max)
  }

  returnKey(value: boolean): this {
    return this.#set('returnKey', value)
  }

  showRecordId(value: boolean): this {
    return this.#set('showRecordId', value)
  }

  comment(value: unknown): this {
    return this.#set('comment', value)
  }

  maxTimeMS(value: number): this {
    return this.#set('maxTimeMS', value)
  }

  collation(value: CollationOptions): this {
    return this.#set('collation', value)
  }

  allowDiskUse(value = true): this {
    return this.#set('allowDiskUse', value)
  }
}
