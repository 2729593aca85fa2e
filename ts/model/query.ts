/**
 * `ModelQuery`: a Mongoose-style query of a `Model` (chain builders, then `await` or `exec()`).
 * @module
 */
import { ObjectId, type Document } from 'bson'
import type { Collection } from '../collection.js'
import type { FindCursor } from '../cursor/find_cursor.js'
import { MongoInvalidArgumentError } from '../errors.js'
import { type FindOptions, type Hint, type Sort } from '../options.js'
import { applySelection, toProjection, type FieldSet, type Selection } from './selection.js'
import { describe, isPlainObject, walkDocument } from '../validate.js'

/** Options of `Model.find` and `Model.findOne`: the driver's find options, with a Mongoose-style projection. */
export interface ModelFindOptions extends Omit<FindOptions, 'projection' | 'sort'> {
  /** Narrows the schema's fields for this query (any `Selection` form). */
  projection?: Selection
  /** A driver sort, or Mongoose's string form (`'age -name'`). */
  sort?: Sort
  /** Accepted for Mongoose code; results are always plain objects, as with `lean`. */
  lean?: boolean | Document
}

/** A promise that also has Mongoose's `exec()`, so `Model.countDocuments(f).exec()` keeps working. */
export type ModelPromise<T> = Promise<T> & { exec(): Promise<T> }

/** What a query needs from its model. */
export interface QueryContext {
  collection: Collection
  fields: FieldSet
  hiddenFields: readonly string[]
  /** The filter the query sends for the conditions it gathered. */
  filter(filter: Document): Document
}

/**
 * A Mongoose-style query: chain builders, then `await` it (or `exec()`). Built on the collection's
 * `find`, so `cursor()` hands back an ordinary `FindCursor`.
 */
export class ModelQuery<TResult> implements PromiseLike<TResult> {
  readonly #context: QueryContext
  readonly #kind: 'find' | 'findOne'
  readonly #filter: Document
  readonly #options: Omit<FindOptions, 'projection'>
  #fields: FieldSet
  /** The path `where(path)` named, for the comparison that follows. */
  #wherePath: string | null = null

  /** @internal Created by `Model.find` and friends. */
  constructor(context: QueryContext, kind: 'find' | 'findOne', filter: Document, options: ModelFindOptions) {
    this.#context = context
    this.#kind = kind
    // A copy: where() adds conditions, and the caller's filter must not change under it.
    this.#filter = {}
    defineFields(this.#filter, filter)
    const { projection, sort, ...rest } = options
    this.#options = rest
    this.#fields = context.fields
    if (sort !== undefined) this.sort(sort)
    if (projection !== undefined) this.select(projection)
  }

  /** Sort order: a driver sort, or Mongoose's string form `'age -name'`. */
  sort(sort: Sort): this {
    this.#options.sort = typeof sort === 'string' ? parseSortString(sort) : sort
    return this
  }

  limit(value: number): this {
    this.#options.limit = value
    return this
  }

  skip(value: number): this {
    this.#options.skip = value
    return this
  }

  batchSize(value: number): this {
    this.#options.batchSize = value
    return this
  }

  maxTimeMS(value: number): this {
    this.#options.maxTimeMS = value
    return this
  }

  hint(value: Hint): this {
    this.#options.hint = value
    return this
  }

  comment(value: unknown): this {
    this.#options.comment = value
    return this
  }

  /**
   * Narrows the fields read (Mongoose `select` forms). Successive calls narrow further.
   * @throws MongoInvalidArgumentError on a path outside the schema, or on mixed inclusion and exclusion.
   */
  select(selection: Selection): this {
    this.#fields = applySelection(this.#fields, selection, this.#context)
    return this
  }

  /** A no-op kept for Mongoose code: results are always plain objects. */
  lean(_lean?: unknown): this {
    return this
  }

  /**
   * Starts a condition on `path`, finished by `equals`, `gt`, `gte`, `lt`, `lte` or `in`.
   * `where(path, value)` is `where(path).equals(value)`; `where({ ... })` merges conditions.
   * @throws MongoInvalidArgumentError when `path` is neither a string nor a plain object.
   */
  where(path: string | Document, value?: unknown): this {
    if (typeof path === 'string') {
      this.#wherePath = path
      return arguments.length > 1 ? this.equals(value) : this
    }
    defineFields(this.#filter, checkPlainFilter(path))
    return this
  }

  equals(value: unknown): this {
    defineField(this.#filter, this.#currentPath('equals'), value)
    return this
  }

  gt(value: unknown): this {
    return this.#addOperator('$gt', value)
  }

  gte(value: unknown): this {
    return this.#addOperator('$gte', value)
  }

  lt(value: unknown): this {
    return this.#addOperator('$lt', value)
  }

  lte(value: unknown): this {
    return this.#addOperator('$lte', value)
  }

  in(values: readonly unknown[]): this {
    return this.#addOperator('$in', values)
  }

  /** The query's find cursor, for streaming or `for await` (one document at a time). */
  cursor(): FindCursor<TResult extends (infer Item)[] ? Item : NonNullable<TResult>> {
    const options: FindOptions = { ...this.#options, projection: toProjection(this.#fields) }
    if (this.#kind === 'findOne') options.limit = -1
    const filter = this.#context.filter(this.#filter)
    return this.#context.collection.find(filter, options) as FindCursor<any>
  }

  /** Runs the query. */
  async exec(): Promise<TResult> {
    const cursor = this.cursor()
    if (this.#kind === 'find') return (await cursor.toArray()) as TResult
    try {
      return (await cursor.next()) as TResult
    } finally {
      await cursor.close()
    }
  }

  then<TFulfilled = TResult, TRejected = never>(
    onFulfilled?: ((value: TResult) => TFulfilled | PromiseLike<TFulfilled>) | null,
    onRejected?: ((reason: any) => TRejected | PromiseLike<TRejected>) | null,
  ): Promise<TFulfilled | TRejected> {
    return this.exec().then(onFulfilled, onRejected)
  }

  catch<TRejected = never>(
    onRejected?: ((reason: any) => TRejected | PromiseLike<TRejected>) | null,
  ): Promise<TResult | TRejected> {
    return this.exec().catch(onRejected)
  }

  finally(onFinally?: (() => void) | null): Promise<TResult> {
    return this.exec().finally(onFinally)
  }

  #currentPath(method: string): string {
    if (this.#wherePath === null) {
      throw new MongoInvalidArgumentError(`${method}() must follow where(path)`)
    }
    return this.#wherePath
  }

  /** Adds `operator` to the path's conditions, keeping operators already there (`gte` then `lt`). */
  #addOperator(operator: string, value: unknown): this {
    const path = this.#currentPath(operator.slice(1))
    const existing = Object.hasOwn(this.#filter, path) ? this.#filter[path] : undefined
    const conditions = isPlainObject(existing) && Object.keys(existing).every((key) => key.startsWith('$'))
    defineField(this.#filter, path, { ...(conditions ? existing : {}), [operator]: value })
    return this
  }
}

/**
 * Refuses a filter value that BSON has no form for (a symbol; a function unless `serializeFunctions`
 * sends it as Code): js-bson leaves such a field out, so the condition would vanish and the query
 * match every document. Mongoose refuses these values (`CastError`); the official driver's
 * collection methods send what js-bson makes of them, and so do rumongo's. `undefined` is left to
 * `ignoreUndefined`, as in both drivers.
 */
export function checkFilterValues(filter: Document, serializeFunctions: boolean): void {
  walkDocument(filter, (key, value) => {
    if (typeof value === 'symbol' || (typeof value === 'function' && !serializeFunctions)) {
      throw new MongoInvalidArgumentError(
        `Cannot cast ${describe(value)} at path "${key}": BSON has no such value, and the filter would lose the condition`,
      )
    }
  })
}

export function checkPlainFilter(filter: unknown): Document {
  if (!isPlainObject(filter)) {
    throw new MongoInvalidArgumentError(`Query filter must be a plain object, got ${describe(filter)}`)
  }
  return filter
}

/**
 * Sets `target[key]` as an own field. Defined, not assigned: a "__proto__" key (from JSON input)
 * stays a field instead of replacing the prototype.
 */
export function defineField(target: Document, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

/** `Object.assign` that keeps every key a field (see `defineField`). */
export function defineFields(target: Document, source: Document): void {
  for (const [key, value] of Object.entries(source)) defineField(target, key, value)
}

/** The options of `find`/`findOne` (Mongoose's third argument); `lean` is what rumongo always does. */
export function checkFindOptions(
  method: string,
  options: ModelFindOptions | null | undefined,
): ModelFindOptions {
  if (options === undefined || options === null) return {}
  if (!isPlainObject(options)) {
    throw new MongoInvalidArgumentError(`${method} options must be an object, got ${describe(options)}`)
  }
  const { lean: _lean, ...rest } = options
  return rest
}

/** Mongoose's sort string: `'age -name'` is `{ age: 1, name: -1 }`. */
export function parseSortString(sort: string): [string, 1 | -1][] {
  return sort
    .split(/\s+/)
    .filter((token) => token !== '')
    .map((token) => (token.startsWith('-') ? [token.slice(1), -1] : [token.replace(/^\+/, ''), 1]))
}

/**
 * An `_id` from `findById`: ObjectId hex strings become ObjectIds; a symbol or a function (which no
 * `_id` can be) fails as a bad string does; other values pass through.
 */
export function toObjectId(id: unknown): unknown {
  if (typeof id === 'symbol' || typeof id === 'function') {
    throw new MongoInvalidArgumentError(`findById expects an ObjectId or 24 hex digits, got ${describe(id)}`)
  }
  if (typeof id === 'string') {
    if (!/^[0-9a-fA-F]{24}$/.test(id)) {
      throw new MongoInvalidArgumentError(
        `findById expects an ObjectId or 24 hex digits, got '${id.slice(0, 40)}'`,
      )
    }
    return ObjectId.createFromHexString(id)
  }
  return toAnyId(id)
}

/** An `_id` from `findById` as given: Mongoose does `if (typeof id === 'undefined') id = null`. */
export function toAnyId(id: unknown): unknown {
  return id === undefined ? null : id
}

export function withExec<T>(promise: Promise<T>): ModelPromise<T> {
  return Object.assign(promise, { exec: () => promise })
}
