/**
 * `Model`: the read side of a Mongoose model over a rumongo collection. The schema's fields become an
 * inclusion projection sent with every query, so the server only sends what the schema declares.
 * @module
 */
import { ObjectId, type Document } from 'bson'
import { describe, isBSONOptionName } from './bson.js'
import type { Collection, WithId } from './collection.js'
import type { FindCursor } from './cursor/find_cursor.js'
import { MongoInvalidArgumentError, MongoNotConnectedError } from './errors.js'
import type { MongoClient } from './mongo_client.js'
import {
  FIND,
  isPlainObject,
  type CountDocumentsOptions,
  type DistinctOptions,
  type EstimatedDocumentCountOptions,
  type FindOptions,
  type Hint,
  type Sort,
} from './options.js'

/**
 * A field selection, in any of Mongoose's `select` forms: `'name age'` (inclusion), `'-age'`
 * (exclusion), `'+password'` (adds a `select: false` field), an array of those strings, or
 * `{ name: 1 }` / `{ age: 0 }`. Every path must be in the schema.
 */
export type Selection = string | readonly string[] | { readonly [path: string]: 0 | 1 | boolean }

/** A schema for `Model.define`: `{ name: 1, 'address.city': 1 }` (`_id: 0` drops `_id`), or a list of paths. */
export type ModelFields = readonly string[] | { readonly [path: string]: 0 | 1 | boolean }

/** Options of `Model.define`. */
export interface ModelOptions {
  /**
   * Passes every query's whole filter through `Model.sanitizeFilter` when it runs, conditions added
   * with `where()`, `equals()`, `gt()`, ... included, as Mongoose's `sanitizeFilter` does: an
   * operator condition must be marked with `Model.trusted()` to reach the server as an operator.
   */
  sanitizeFilter?: boolean
  /**
   * With `sanitizeFilter`: also reject `$where`, `$function`, `$accumulator` and `$expr` wherever the
   * server would evaluate them, in trusted values too.
   */
  rejectUnsafeOperators?: boolean
  /** Paths left out unless a query asks for them with `'+path'` (Mongoose's `select: false`). */
  hiddenFields?: readonly string[]
  /**
   * A discriminator: its key stays in the projection, and when `value` is set, queries that do not
   * filter on the key get `{ [key]: value }` added (as Mongoose does for a discriminator model).
   */
  discriminator?: { key: string; value?: string }
}

/** Options of `Model.sanitizeFilter`. */
export interface SanitizeFilterOptions {
  /** Throw on `$where`, `$function`, `$accumulator` and `$expr` anywhere they would be evaluated. */
  rejectUnsafeOperators?: boolean
}

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

/** What `Model.fromMongoose` reads from a Mongoose model (structural: rumongo does not load Mongoose). */
export interface MongooseModelLike {
  schema: MongooseSchemaLike
  collection: { collectionName: string }
  /** The model's connection: its `name` (the database) is set once Mongoose connects. */
  db: { name?: string }
  discriminators?: Record<string, { schema: MongooseSchemaLike }> | null
  baseModelName?: string
}

interface MongooseSchemaLike {
  paths: Record<string, MongooseSchemaTypeLike>
  options?: { discriminatorKey?: string }
  discriminatorMapping?: { key: string; value: unknown; isRoot: boolean }
}

interface MongooseSchemaTypeLike {
  /** The type's name: `'ObjectId'`, `'String'`, ... */
  instance?: string
  options?: { select?: boolean }
  /** Set on subdocuments and document arrays. */
  schema?: MongooseSchemaLike
}

/** Operators that run code or arbitrary expressions on the server. */
const UNSAFE_OPERATORS = new Set(['$where', '$function', '$accumulator', '$expr'])
/** Operators Mongoose's `sanitizeFilter` always refuses. */
const SANITIZE_REFUSED = new Set(['$where', '$expr', '$jsonSchema', '$text'])
/** Operators whose values are lists of filters. */
const LOGICAL_OPERATORS = new Set(['$and', '$or', '$nor'])

/** The resolved fields of one query: which paths to include, and whether `_id` comes along. */
interface FieldSet {
  paths: readonly string[]
  includeId: boolean
}

/**
 * A collection read through a schema. Create one with `Model.define` or `Model.fromMongoose`.
 * Results are plain objects (as Mongoose `.lean()`), holding only the schema's fields.
 */
export class Model<TSchema extends Document = Document> {
  /** The collection, found when a query is built (a Mongoose model's database is known only then). */
  readonly #resolveCollection: () => Collection<TSchema>
  readonly #fields: FieldSet
  readonly #hiddenFields: readonly string[]
  readonly #projection: Document
  readonly #options: ModelOptions
  /** `findById`'s id as the `_id` to look for. */
  readonly #castId: (id: unknown) => unknown

  /** @internal Use `Model.define` or `Model.fromMongoose`. */
  private constructor(
    collection: () => Collection<TSchema>,
    fields: FieldSet,
    options: ModelOptions,
    castId: (id: unknown) => unknown,
  ) {
    this.#resolveCollection = collection
    this.#castId = castId
    this.#fields = fields
    this.#hiddenFields = normalizePaths(options.hiddenFields ?? [])
    this.#options = { ...options }
    this.#projection = toProjection(fields)
  }

  /**
   * A model over `collection` reading only `fields`. `_id` is included unless `fields` has `_id: 0`.
   * @throws MongoInvalidArgumentError on an empty or malformed field list.
   */
  static define<T extends Document = Document>(
    collection: Collection<T>,
    fields: ModelFields,
    options: ModelOptions = {},
  ): Model<T> {
    if (typeof (collection as { find?: unknown } | null)?.find !== 'function') {
      throw new MongoInvalidArgumentError(`Model.define expects a collection, got ${describe(collection)}`)
    }
    return Model.#create(() => collection, fields, options, toObjectId)
  }

  static #create<T extends Document>(
    collection: () => Collection<T>,
    fields: ModelFields,
    options: ModelOptions,
    castId: (id: unknown) => unknown,
  ): Model<T> {
    if (typeof options !== 'object' || options === null) {
      throw new MongoInvalidArgumentError(`Model options must be an object, got ${describe(options)}`)
    }
    let includeId = true
    const paths: string[] = []
    const entries: [string, unknown][] = Array.isArray(fields)
      ? fields.map((path) => [path, 1])
      : isPlainObject(fields)
        ? Object.entries(fields)
        : []
    if (entries.length === 0) {
      throw new MongoInvalidArgumentError(
        `Model fields must be a non-empty object or array of paths, got ${describe(fields)}`,
      )
    }
    for (const [path, include] of entries) {
      checkPath(path)
      if (path === '_id') includeId = Boolean(include)
      else if (include) paths.push(path)
      else
        throw new MongoInvalidArgumentError(`Model fields list included paths; '${path}: 0' is not allowed`)
    }
    const discriminatorKey = options.discriminator?.key
    if (discriminatorKey !== undefined) paths.push(discriminatorKey)
    return new Model(collection, { paths: normalizePaths(paths), includeId }, options, castId)
  }

  /**
   * A model with the fields of a Mongoose model's schema, reading the same collection through
   * `client`. Nested paths are projected field by field; subdocuments and document arrays whole, or
   * field by field when they hold `select: false` fields. `select: false` paths are left out (ask for
   * them with `select('+path')`). A discriminator key is kept, a base model reads its
   * discriminators' fields too, and a discriminator model filters on its value. Virtuals, getters,
   * populate, hooks and validation are not carried over. The database is the Mongoose connection's
   * when a query is built, so a model made before `mongoose.connect()` reads the database Mongoose
   * connects to; a query built before that throws `MongoNotConnectedError`.
   */
  static fromMongoose(model: MongooseModelLike, client: MongoClient, options: ModelOptions = {}): Model {
    if (typeof model?.schema?.paths !== 'object' || typeof model.collection?.collectionName !== 'string') {
      throw new MongoInvalidArgumentError(`fromMongoose expects a Mongoose model, got ${describe(model)}`)
    }
    const visible: string[] = []
    const hidden: string[] = []
    collectSchemaPaths(model.schema, '', visible, hidden)
    // A base model also reads its discriminators' documents, with their own fields.
    for (const discriminated of Object.values(model.discriminators ?? {})) {
      collectSchemaPaths(discriminated.schema, '', visible, hidden)
    }
    const mapping = model.schema.discriminatorMapping
    const isDiscriminated = Object.keys(model.discriminators ?? {}).length > 0 || Boolean(model.baseModelName)
    const key = mapping?.key ?? model.schema.options?.discriminatorKey ?? '__t'
    const discriminator = isDiscriminated
      ? {
          key,
          value: mapping && !mapping.isRoot && typeof mapping.value === 'string' ? mapping.value : undefined,
        }
      : undefined
    const collectionName = model.collection.collectionName
    let collection: Collection | undefined
    const resolveCollection = () => {
      // Read at each query: `fromMongoose` usually runs at import time, before `mongoose.connect()`
      // names the database (and `useDb()` may change it).
      const dbName = model.db?.name
      if (typeof dbName !== 'string' || dbName === '') {
        throw new MongoNotConnectedError(
          `Model.fromMongoose: the Mongoose model '${collectionName}' has no database yet; ` +
            'connect Mongoose (mongoose.connect(uri)) before the first query',
        )
      }
      if (collection?.dbName !== dbName) collection = client.db(dbName).collection(collectionName)
      return collection
    }
    // Mongoose casts findById's id to the schema's `_id` type: an ObjectId unless declared otherwise.
    const idType = model.schema.paths._id?.instance
    const castId = idType === undefined || idType === 'ObjectId' ? toObjectId : toAnyId
    return Model.#create(
      resolveCollection,
      visible,
      {
        ...options,
        hiddenFields: [...hidden, ...(options.hiddenFields ?? [])],
        discriminator: options.discriminator ?? discriminator,
      },
      castId,
    )
  }

  /**
   * Mongoose's `sanitizeFilter` (same results), without mutating its argument: an object with
   * `$`-keys as a field's value (an operator smuggled in by user input, e.g.
   * `{ password: { $ne: null } }`) becomes a literal match via `$eq`; `$and`/`$or`/`$nor` are
   * sanitized recursively; `$where`, `$expr`, `$jsonSchema` and `$text` throw, as in Mongoose. A value
   * marked with `Model.trusted()` (or Mongoose's `mongoose.trusted()`) is left as it is. With
   * `rejectUnsafeOperators`, `$where`/`$function`/`$accumulator`/`$expr` also throw anywhere the
   * server would evaluate them (a value wrapped in `$eq` is a literal and is not).
   * @throws MongoInvalidArgumentError on a refused operator, or options that are not an object.
   */
  static sanitizeFilter<T extends Document>(filter: T, options: SanitizeFilterOptions = {}): T {
    if (!isPlainObject(options)) {
      throw new MongoInvalidArgumentError(
        `sanitizeFilter options must be an object, got ${describe(options)}`,
      )
    }
    const sanitized = sanitize(filter) as T
    if (options.rejectUnsafeOperators) rejectUnsafeOperators(sanitized)
    return sanitized
  }

  /**
   * Marks a filter value as written by the application, not by a user: `sanitizeFilter` leaves it
   * as it is (Mongoose's `mongoose.trusted()`, whose marks are honoured too). Returns `value`; a
   * primitive is returned as it is (there is nothing to sanitize in it).
   * @throws MongoInvalidArgumentError on a frozen, sealed or non-extensible object (mark a copy).
   */
  static trusted<T>(value: T): T {
    if (typeof value === 'object' && value !== null && !isTrusted(value)) {
      if (!Object.isExtensible(value)) {
        throw new MongoInvalidArgumentError(
          'Model.trusted cannot mark a frozen or non-extensible object: mark a copy',
        )
      }
      Object.defineProperty(value, TRUSTED, { value: true, enumerable: false })
    }
    return value
  }

  /** The collection this model reads. */
  get collection(): Collection<TSchema> {
    return this.#resolveCollection()
  }

  /** The schema's fields (without `_id`), as sent in the projection. */
  get fields(): string[] {
    return [...this.#fields.paths]
  }

  /** The projection sent when a query selects nothing narrower. */
  get projection(): Document {
    return { ...this.#projection }
  }

  /**
   * Documents matching `filter`, projected to the schema. Returns a query: chain `sort`, `limit`,
   * `skip`, `select`, `where`, ... then `await` it (or `exec()`, or `cursor()` to stream).
   * Mongoose's signature: `projection` narrows the schema's fields (`'name age'`, `'-age'`,
   * `{ email: 0 }`, `['name']`; `null` for none), `options` are the driver's find options (`sort`
   * also in Mongoose's string form; `lean` is accepted: results are always plain objects).
   * @throws MongoInvalidArgumentError on a projection path outside the schema, or find options given
   * as the projection.
   */
  find(
    filter: Document = {},
    projection?: Selection | null,
    options?: ModelFindOptions | null,
  ): ModelQuery<WithId<TSchema>[]> {
    return this.#query('find', filter, projection, options)
  }

  /** The first document matching `filter` (projected to the schema), or `null`; arguments as `find`. */
  findOne(
    filter: Document = {},
    projection?: Selection | null,
    options?: ModelFindOptions | null,
  ): ModelQuery<WithId<TSchema> | null> {
    return this.#query('findOne', filter, projection, options)
  }

  /**
   * The document with this `_id`, or `null`; `projection` and `options` as in `find`. `id` is an
   * ObjectId or its 24-digit hex string; `undefined` is `null` (Mongoose's `findById`); any other
   * value is used as the `_id` as given (no casting). A model from a Mongoose schema whose `_id` is
   * not an ObjectId (`_id: String`, ...) uses every id as given.
   * @throws MongoInvalidArgumentError on a string that is not 24 hex digits (ObjectId `_id`s).
   */
  findById(
    id: unknown,
    projection?: Selection | null,
    options?: ModelFindOptions | null,
  ): ModelQuery<WithId<TSchema> | null> {
    return this.findOne({ _id: this.#castId(id) }, projection, options)
  }

  /** Number of documents matching `filter`. */
  countDocuments(filter: Document = {}, options: CountDocumentsOptions = {}): ModelPromise<number> {
    return withExec(this.#untyped.countDocuments(this.#filter(filter), options))
  }

  /** Number of documents in the collection from its metadata (fast, may be approximate). */
  estimatedDocumentCount(options: EstimatedDocumentCountOptions = {}): ModelPromise<number> {
    return withExec(this.collection.estimatedDocumentCount(options))
  }

  /**
   * The distinct values of a schema field among documents matching `filter`.
   * @throws MongoInvalidArgumentError when `field` is not in the schema.
   */
  distinct<T = any>(field: string, filter: Document = {}, options: DistinctOptions = {}): ModelPromise<T[]> {
    checkPath(field)
    if (!this.#isReadable(field)) throw notInSchema(field, this.#fields.paths)
    return withExec(this.#untyped.distinct<T>(field, this.#filter(filter), options))
  }

  /** `{ _id }` of the first document matching `filter`, or `null` (Mongoose's `exists`). */
  exists(filter: Document = {}): ModelPromise<{ _id: unknown } | null> {
    return withExec(this.#untyped.findOne(this.#filter(filter), { projection: { _id: 1 } }))
  }

  /** Filters are passed through uncast, so the schema's type cannot check them. */
  get #untyped(): Collection {
    return this.collection as unknown as Collection
  }

  /** A field is readable when it is a schema field, inside one, or the `_id`. */
  #isReadable(path: string): boolean {
    return path === '_id' || this.#fields.paths.some((field) => isSameOrInside(path, field))
  }

  /** The filter sent for `filter`: sanitized when the model asks for it, with its discriminator. */
  #filter(filter: Document): Document {
    let result = checkPlainFilter(filter)
    if (this.#options.sanitizeFilter) {
      result = Model.sanitizeFilter(filter, { rejectUnsafeOperators: this.#options.rejectUnsafeOperators })
    }
    const discriminator = this.#options.discriminator
    if (discriminator?.value !== undefined && !(discriminator.key in result)) {
      result = { ...result, [discriminator.key]: discriminator.value }
    }
    return result
  }

  #query<TResult>(
    kind: 'find' | 'findOne',
    filter: Document,
    projection: unknown,
    options: ModelFindOptions | null | undefined,
  ): ModelQuery<TResult> {
    const query = new ModelQuery<TResult>(
      this.#queryContext(),
      kind,
      checkPlainFilter(filter),
      checkFindOptions(kind, options),
    )
    if (projection !== undefined && projection !== null) {
      checkNotFindOptions(kind, projection, (path) => this.#isReadable(path))
      query.select(projection as Selection)
    }
    return query
  }

  #queryContext(): QueryContext {
    return {
      collection: this.#untyped,
      fields: this.#fields,
      hiddenFields: this.#hiddenFields,
      filter: (filter) => this.#filter(filter),
    }
  }
}

/** What a query needs from its model. */
interface QueryContext {
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

function checkPlainFilter(filter: unknown): Document {
  if (!isPlainObject(filter)) {
    throw new MongoInvalidArgumentError(`Query filter must be a plain object, got ${describe(filter)}`)
  }
  return filter
}

/**
 * Sets `target[key]` as an own field. Defined, not assigned: a "__proto__" key (from JSON input)
 * stays a field instead of replacing the prototype.
 */
function defineField(target: Document, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

/** `Object.assign` that keeps every key a field (see `defineField`). */
function defineFields(target: Document, source: Document): void {
  for (const [key, value] of Object.entries(source)) defineField(target, key, value)
}

/** The options of `find`/`findOne` (Mongoose's third argument); `lean` is what rumongo always does. */
function checkFindOptions(method: string, options: ModelFindOptions | null | undefined): ModelFindOptions {
  if (options === undefined || options === null) return {}
  if (!isPlainObject(options)) {
    throw new MongoInvalidArgumentError(`${method} options must be an object, got ${describe(options)}`)
  }
  const { lean: _lean, ...rest } = options
  return rest
}

/**
 * Refuses a projection that is find options (`find(filter, { sort, limit })`, the driver's
 * signature): Mongoose reads the second argument as the projection, and so does rumongo.
 */
function checkNotFindOptions(method: string, projection: unknown, isReadable: (path: string) => boolean) {
  if (!isPlainObject(projection)) return
  const option = Object.keys(projection).find(
    (key) => (key in FIND.options || isBSONOptionName(key)) && !isReadable(key),
  )
  if (option !== undefined) {
    throw new MongoInvalidArgumentError(
      `${method}(filter, projection, options): the second argument is the projection, as in Mongoose, ` +
        `and '${option}' is a ${method === 'findOne' ? 'find' : method} option, not a schema field; ` +
        `pass options third: ${method}(filter, null, { ${option}: ... })`,
    )
  }
}

function checkPath(path: unknown): asserts path is string {
  if (typeof path !== 'string' || path.length === 0 || path.startsWith('$') || path.split('.').includes('')) {
    throw new MongoInvalidArgumentError(`a field path must be a non-empty dotted name, got ${describe(path)}`)
  }
}

/** `path` is `field`, or a path inside it. */
function isSameOrInside(path: string, field: string): boolean {
  return path === field || path.startsWith(`${field}.`)
}

/**
 * Sorted, unique paths with none inside another: the server rejects `{ a: 1, 'a.b': 1 }` as a
 * path collision, and `a` already brings `a.b`.
 */
function normalizePaths(paths: readonly string[]): string[] {
  const sorted = [...new Set(paths)].sort()
  return sorted.filter((path) => !sorted.some((other) => other !== path && isSameOrInside(path, other)))
}

function toProjection({ paths, includeId }: FieldSet): Document {
  const projection: Document = Object.fromEntries(paths.map((path) => [path, 1]))
  // An empty inclusion would mean "everything": ask for the `_id` alone instead.
  if (paths.length === 0 && includeId) projection._id = 1
  if (!includeId) projection._id = 0
  return projection
}

function notInSchema(path: string, fields: readonly string[]): MongoInvalidArgumentError {
  return new MongoInvalidArgumentError(
    `'${path}' is not a field of this model's schema (fields: ${fields.join(', ')}); ` +
      'add it to the schema to read it',
  )
}

/**
 * The visible and `select: false` paths of a Mongoose schema. A subdocument or document array is
 * read whole unless it hides some of its fields: projecting an array's fields one by one may move the
 * array to the end of the document on some servers (FerretDB), unlike Mongoose's results.
 */
function collectSchemaPaths(schema: MongooseSchemaLike, prefix: string, visible: string[], hidden: string[]) {
  for (const [name, type] of Object.entries(schema.paths)) {
    // Map values (`meta.$*`) are covered by the map's own path.
    if (name.includes('$')) continue
    const path = prefix + name
    if (type.options?.select === false) {
      hidden.push(path)
    } else if (type.schema && hidesFields(type.schema)) {
      collectSchemaPaths(type.schema, `${path}.`, visible, hidden)
    } else {
      visible.push(path)
    }
  }
}

function hidesFields(schema: MongooseSchemaLike): boolean {
  return Object.values(schema.paths).some(
    (type) => type.options?.select === false || (type.schema !== undefined && hidesFields(type.schema)),
  )
}

/** Parses a selection into included, excluded and forced (`+path`) paths, plus what it says of `_id`. */
function parseSelection(selection: Selection): { include: string[]; exclude: string[]; force: string[] } {
  const include: string[] = []
  const exclude: string[] = []
  const force: string[] = []
  const add = (token: string, included: boolean) => {
    if (token.startsWith('+')) force.push(token.slice(1))
    else if (token.startsWith('-')) exclude.push(token.slice(1))
    else (included ? include : exclude).push(token)
  }
  if (typeof selection === 'string' || Array.isArray(selection)) {
    const tokens = typeof selection === 'string' ? selection.split(/\s+/) : selection
    for (const token of tokens) if (token !== '') add(String(token), true)
  } else if (isPlainObject(selection)) {
    for (const [path, value] of Object.entries(selection)) add(path, Boolean(value))
  } else {
    throw new MongoInvalidArgumentError(
      `select expects a string, array or object, got ${describe(selection)}`,
    )
  }
  for (const path of [...include, ...exclude, ...force]) checkPath(path)
  return { include, exclude, force }
}

/** The fields left after `selection` narrows `current` (all paths checked against the schema). */
function applySelection(current: FieldSet, selection: Selection, context: QueryContext): FieldSet {
  const { include, exclude, force } = parseSelection(selection)
  const schemaFields = context.fields.paths
  const includedFields = include.filter((path) => path !== '_id')
  const excludedFields = exclude.filter((path) => path !== '_id')
  if (includedFields.length > 0 && excludedFields.length > 0) {
    throw new MongoInvalidArgumentError(
      `a selection cannot mix inclusion and exclusion (apart from _id): ${JSON.stringify(selection)}`,
    )
  }
  let paths = [...current.paths]
  // `select('_id')` alone is an inclusion too: the `_id` and nothing else.
  if (include.length > 0 && excludedFields.length === 0) {
    paths = includedFields.flatMap((path) => {
      // A path inside a selected field narrows it; a parent of fields selects those fields.
      const containing = paths.find((field) => isSameOrInside(path, field))
      if (containing) return [path]
      const inside = paths.filter((field) => isSameOrInside(field, path))
      if (inside.length > 0) return inside
      throw notInSchema(path, schemaFields)
    })
  }
  for (const path of excludedFields) {
    if (!schemaFields.some((field) => isSameOrInside(path, field) || isSameOrInside(field, path))) {
      throw notInSchema(path, schemaFields)
    }
    const container = paths.find((field) => field !== path && isSameOrInside(path, field))
    if (container) {
      throw new MongoInvalidArgumentError(
        `cannot exclude '${path}': the schema reads '${container}' whole; select the fields you want instead`,
      )
    }
    paths = paths.filter((field) => !isSameOrInside(field, path))
  }
  for (const path of force) {
    const known = [...schemaFields, ...context.hiddenFields]
    if (!known.some((field) => isSameOrInside(path, field))) throw notInSchema(path, schemaFields)
    paths.push(path)
  }
  let includeId = current.includeId
  if (exclude.includes('_id')) includeId = false
  else if (include.includes('_id')) includeId = true
  return { paths: normalizePaths(paths), includeId }
}

/** Mongoose's sort string: `'age -name'` is `{ age: 1, name: -1 }`. */
function parseSortString(sort: string): [string, 1 | -1][] {
  return sort
    .split(/\s+/)
    .filter((token) => token !== '')
    .map((token) => (token.startsWith('-') ? [token.slice(1), -1] : [token.replace(/^\+/, ''), 1]))
}

/** An `_id` from `findById`: ObjectId hex strings become ObjectIds; other values pass through. */
function toObjectId(id: unknown): unknown {
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
function toAnyId(id: unknown): unknown {
  return id === undefined ? null : id
}

function withExec<T>(promise: Promise<T>): ModelPromise<T> {
  return Object.assign(promise, { exec: () => promise })
}

/** The mark `Model.trusted()` sets. */
const TRUSTED = Symbol('rumongo.trusted')
/** The description of the symbol `mongoose.trusted()` sets (a private symbol of Mongoose's). */
const MONGOOSE_TRUSTED = 'mongoose#trustedSymbol'

function isTrusted(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false
  if ((value as { [TRUSTED]?: boolean })[TRUSTED] === true) return true
  return Object.getOwnPropertySymbols(value).some(
    (symbol) => symbol.description === MONGOOSE_TRUSTED && (value as Record<symbol, unknown>)[symbol],
  )
}

/** As Mongoose's `sanitizeFilter` (lib/helpers/query/sanitizeFilter.js), on a copy. */
function sanitize(filter: unknown): unknown {
  if (Array.isArray(filter)) return filter.map(sanitize)
  if (!isPlainObject(filter)) return filter
  const sanitized: Document = {}
  for (const [key, value] of Object.entries(filter)) {
    let result = value
    if (isTrusted(value)) result = value
    else if (LOGICAL_OPERATORS.has(key)) result = sanitize(value)
    else if (SANITIZE_REFUSED.has(key)) {
      throw new MongoInvalidArgumentError(`${key} is not allowed with sanitizeFilter`)
    } else if (hasOperatorKeys(value) && !isOnlyEq(value)) result = { $eq: value }
    defineField(sanitized, key, result)
  }
  return sanitized
}

function hasOperatorKeys(value: unknown): boolean {
  return typeof value === 'object' && value !== null && Object.keys(value).some((key) => key.startsWith('$'))
}

/** Already a literal match: wrapping it again would change nothing but the server's reading. */
function isOnlyEq(value: object): boolean {
  const keys = Object.keys(value)
  return keys.length === 1 && keys[0] === '$eq'
}

/**
 * Throws on an unsafe operator anywhere but inside `$eq` (whose value is a literal, never evaluated),
 * trusted values included: the option is a second line of defence behind sanitizing.
 */
function rejectUnsafeOperators(value: unknown): void {
  if (Array.isArray(value)) {
    for (const item of value) rejectUnsafeOperators(item)
    return
  }
  if (!isPlainObject(value)) return
  for (const [key, child] of Object.entries(value)) {
    if (UNSAFE_OPERATORS.has(key)) {
      throw new MongoInvalidArgumentError(`the operator ${key} is not allowed in a sanitized filter`)
    }
    if (key !== '$eq') rejectUnsafeOperators(child)
  }
}
