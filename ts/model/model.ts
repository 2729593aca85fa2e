/**
 * `Model`: the read side of a Mongoose model over a rumongo collection. The schema's fields become an
 * inclusion projection sent with every query, so the server only sends what the schema declares.
 * Its queries are `query.ts`, field selection `selection.ts`, filter sanitizing `sanitize.ts`, and
 * what it reads from a Mongoose model `mongoose.ts`.
 * @module
 */
import type { Document } from 'bson'
import type { Collection, Filter, WithId } from '../collection.js'
import { MongoInvalidArgumentError, MongoNotConnectedError } from '../errors.js'
import type { MongoClient } from '../mongo_client.js'
import {
  type CountDocumentsOptions,
  type DistinctOptions,
  type EstimatedDocumentCountOptions,
} from '../options.js'
import { collectSchemaPaths, type MongooseModelLike } from './mongoose.js'
import { TRUSTED, isTrusted, rejectUnsafeOperators, sanitize } from './sanitize.js'
import {
  checkNotFindOptions,
  checkPath,
  isSameOrInside,
  normalizePaths,
  notInSchema,
  toProjection,
  type FieldSet,
  type ModelFields,
  type Selection,
} from './selection.js'
import {
  ModelQuery,
  checkFilterValues,
  checkFindOptions,
  checkPlainFilter,
  toAnyId,
  toObjectId,
  withExec,
  type ModelFindOptions,
  type ModelPromise,
  type QueryContext,
} from './query.js'
import { describe, isPlainObject } from '../validate.js'
import type {
  CheckedFields,
  ModelDocument,
  MongooseLeanDocument,
  MongooseRawDocType,
} from '../types/model.js'

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

/**
 * A collection read through a schema. Create one with `Model.define` or `Model.fromMongoose`.
 * Results are plain objects (as Mongoose `.lean()`), holding only the schema's fields.
 * `TSchema` is the collection's document type (filters are checked against it, as the
 * collection's are); `TDocument` is what the model reads, typed from its fields.
 */
export class Model<TSchema extends Document = Document, TDocument = WithId<TSchema>> {
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
   * Its documents are typed from the list: `Model.define(users, ['name', 'address.city'])` reads
   * `{ _id, name, address: { city } }` with the collection's types for them; a field the
   * collection's type lacks is a compile error (an untyped collection takes any path).
   * @throws MongoInvalidArgumentError on an empty or malformed field list.
   */
  static define<T extends Document = Document, const TFields extends ModelFields = ModelFields>(
    collection: Collection<T>,
    fields: TFields & CheckedFields<T, TFields>,
    options: ModelOptions = {},
  ): Model<T, ModelDocument<T, TFields>> {
    if (typeof (collection as { find?: unknown } | null)?.find !== 'function') {
      throw new MongoInvalidArgumentError(`Model.define expects a collection, got ${describe(collection)}`)
    }
    return Model.#create(() => collection, fields, options, toObjectId)
  }

  static #create<T extends Document, TDocument>(
    collection: () => Collection<T>,
    fields: ModelFields,
    options: ModelOptions,
    castId: (id: unknown) => unknown,
  ): Model<T, TDocument> {
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
   * connects to; a query built before that throws `MongoNotConnectedError`. Typed from the Mongoose
   * model: filters by its raw document type, results as its `lean()` documents.
   */
  static fromMongoose<TModel extends MongooseModelLike>(
    model: TModel,
    client: MongoClient,
    options: ModelOptions = {},
  ): Model<MongooseRawDocType<TModel>, MongooseLeanDocument<TModel>> {
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
    let collection: Collection<MongooseRawDocType<TModel>> | undefined
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
      if (collection?.dbName !== dbName) {
        collection = client.db(dbName).collection<MongooseRawDocType<TModel>>(collectionName)
      }
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
    filter: Filter<TSchema> = {},
    projection?: Selection | null,
    options?: ModelFindOptions | null,
  ): ModelQuery<TDocument[]> {
    return this.#query('find', filter, projection, options)
  }

  /** The first document matching `filter` (projected to the schema), or `null`; arguments as `find`. */
  findOne(
    filter: Filter<TSchema> = {},
    projection?: Selection | null,
    options?: ModelFindOptions | null,
  ): ModelQuery<TDocument | null> {
    return this.#query('findOne', filter, projection, options)
  }

  /**
   * The document with this `_id`, or `null`; `projection` and `options` as in `find`. `id` is an
   * ObjectId or its 24-digit hex string; `undefined` is `null` (Mongoose's `findById`); any other
   * value is used as the `_id` as given (no casting). A model from a Mongoose schema whose `_id` is
   * not an ObjectId (`_id: String`, ...) uses every id as given.
   * @throws MongoInvalidArgumentError on a string that is not 24 hex digits (ObjectId `_id`s), and
   * on a symbol or a function, which BSON cannot send (Mongoose: `CastError`).
   */
  findById(
    id: unknown,
    projection?: Selection | null,
    options?: ModelFindOptions | null,
  ): ModelQuery<TDocument | null> {
    return this.findOne({ _id: this.#castId(id) } as Filter<TSchema>, projection, options)
  }

  /** Number of documents matching `filter`. */
  countDocuments(filter: Filter<TSchema> = {}, options: CountDocumentsOptions = {}): ModelPromise<number> {
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
  distinct<T = any>(
    field: string,
    filter: Filter<TSchema> = {},
    options: DistinctOptions = {},
  ): ModelPromise<T[]> {
    checkPath(field)
    if (!this.#isReadable(field)) throw notInSchema(field, this.#fields.paths)
    return withExec(this.#untyped.distinct<T>(field, this.#filter(filter), options))
  }

  /** `{ _id }` of the first document matching `filter`, or `null` (Mongoose's `exists`). */
  exists(filter: Filter<TSchema> = {}): ModelPromise<{ _id: unknown } | null> {
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
    // (A collection-like object without BSON options sends functions as js-bson's default: not.)
    checkFilterValues(result, this.collection.bsonOptions?.serializeFunctions ?? false)
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
