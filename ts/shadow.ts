/**
 * Shadow mode: serve reads from one driver and compare a sample of them with the other driver,
 * off the caller's critical path, to migrate a live service with evidence.
 * @module
 */
import { Readable } from 'node:stream'
import type { Document } from 'bson'
import type { Collection, Filter, WithId } from './collection.js'
import { firstDifference, redactValue, typeName, type Difference, type DifferenceReason } from './compare.js'
import { MongoInvalidArgumentError } from './errors.js'
import { CursorIterator } from './cursor/abstract_cursor.js'
import type {
  AggregateOptions,
  CountDocumentsOptions,
  DistinctOptions,
  EstimatedDocumentCountOptions,
  FindOptions,
} from './options.js'

export { firstDifference, type CompareOptions, type Difference, type DifferenceReason } from './compare.js'
import { describe } from './validate.js'

/** Which driver: `'official'` (the `mongodb` package) or `'rumongo'`. */
export type ShadowSide = 'official' | 'rumongo'

/** The cursor surface shadow mode uses; the cursors of both drivers have it. */
export interface ShadowableCursor {
  next(): Promise<any>
  hasNext(): Promise<boolean>
  toArray(): Promise<any[]>
  close(): Promise<void>
}

/**
 * The read operations shadow mode uses: a rumongo `Collection` and an official driver `Collection`
 * both have them (so does any test double with the same methods).
 */
export interface ShadowableCollection {
  find(filter: any, options?: any): ShadowableCursor
  findOne(filter: any, options?: any): Promise<any>
  aggregate(pipeline: any, options?: any): ShadowableCursor
  countDocuments(filter?: any, options?: any): Promise<number>
  estimatedDocumentCount(options?: any): Promise<number>
  distinct(key: string, filter?: any, options?: any): Promise<any[]>
}

/** The operations shadow mode runs. */
export type ShadowOperation =
  'find' | 'findOne' | 'aggregate' | 'countDocuments' | 'estimatedDocumentCount' | 'distinct'

/** A read, as reports describe it. With `redact`, every value in it is replaced by its type name. */
export interface ShadowQuery {
  operation: ShadowOperation
  /** The side whose result the caller got. */
  served: ShadowSide
  filter?: Document
  pipeline?: Document[]
  /** The key of a `distinct`. */
  key?: string
  options?: Document
  /** Cursor builder calls in order, as `[method, ...arguments]` (`['limit', 10]`). */
  cursor?: unknown[][]
}

/**
 * What `onMismatch` receives: the read and the first difference between the two results, or, when
 * the two results could not be compared (`firstDifference` threw: values nested too deeply, a
 * getter that throws), `reason: 'uncomparable'` at `$` with the comparison's `error`.
 */
export interface ShadowMismatchReport extends ShadowQuery {
  /** The first differing path, `$` being the whole result (`$[3].customer.name`). */
  path: string
  reason: DifferenceReason | 'uncomparable'
  /** Why the results could not be compared (`reason: 'uncomparable'` only). */
  error?: unknown
  /** The official driver's value at `path` (its type name with `redact`). */
  official: unknown
  /** rumongo's value at `path` (its type name with `redact`). */
  rumongo: unknown
}

/** What `onError` receives: an error of the side that was not served (the caller never sees it). */
export interface ShadowErrorReport extends ShadowQuery {
  /** The side that failed. */
  side: ShadowSide
  error: unknown
}

/** Options of `shadow`. */
export interface ShadowOptions {
  /** Fraction of reads (0 to 1) also run on the other side and compared. Default `0.01`. */
  sampleRate?: number
  /** The side whose results the caller gets. Default `'official'`, the safe start of a migration. */
  serve?: ShadowSide
  /**
   * Most comparisons running at once; a sampled read over the cap is not compared (counted in
   * `skipped`), so shadowing cannot pile up load on the database. Default 4.
   */
  maxConcurrentComparisons?: number
  /** Objects with the same keys in another order are not a mismatch. Default `false`. */
  ignoreKeyOrder?: boolean
  /** Reports hold type names instead of values (the query's too): no data in logs. Default `false`. */
  redact?: boolean
  /** Called on each mismatch. Its errors (thrown or rejected) are swallowed and counted. */
  onMismatch?: (report: ShadowMismatchReport) => unknown
  /** Called when the side that was not served fails. Its own errors are swallowed and counted. */
  onError?: (report: ShadowErrorReport) => unknown
}

/** Latency of one side, in ms, over its last 1024 complete reads (`null` before the first). */
export interface ShadowLatency {
  p50: number | null
  p95: number | null
  /** Reads in the window. */
  samples: number
}

/** Counters of a shadow collection since it was created. */
export interface ShadowStats {
  /** Sampled reads whose two results were compared. */
  compared: number
  /** Compared reads whose results differed. */
  mismatches: number
  /** Sampled reads not compared because `maxConcurrentComparisons` were already running. */
  skipped: number
  /** Sampled cursors closed before the caller read them to the end: nothing to compare. */
  incomplete: number
  /** Comparisons running now (at most `maxConcurrentComparisons`). */
  inFlight: number
  /** Failures of the side that was not served, and of the `onMismatch` / `onError` callbacks. */
  errors: { official: number; rumongo: number; callbacks: number }
  /** Latency of rumongo's complete reads (every served read, and every shadow read). */
  rumongoMs: ShadowLatency
  /** Latency of the official driver's complete reads. */
  officialMs: ShadowLatency
}

const LATENCY_WINDOW = 1024
/** The cursor builders applied to both sides. */
type CursorBuilder = 'sort' | 'limit' | 'skip' | 'project' | 'batchSize'

/**
 * Reads of one collection served by one driver, with a sample of them also run on the other driver
 * and compared exactly (values, types, key order). The served side answers at once; the other side
 * runs afterwards, off the caller's path. Errors of the other side never reach the caller.
 *
 * ```js
 * const orders = shadow(officialDb.collection('orders'), rumongoDb.collection('orders'), {
 *   sampleRate: 0.05,
 *   serve: 'rumongo',
 *   onMismatch: (report) => logger.warn(report),
 * })
 * await orders.find({ status: 'paid' }).toArray()
 * orders.stats()
 * ```
 * @throws MongoInvalidArgumentError on invalid options.
 */
export function shadow<TSchema extends Document = Document>(
  official: ShadowableCollection,
  rumongo: ShadowableCollection,
  options: ShadowOptions = {},
): ShadowCollection<TSchema> {
  return new ShadowCollection<TSchema>(official, rumongo, options)
}

/** The read operations of a collection, shadowed. Create one with `shadow()`. */
export class ShadowCollection<TSchema extends Document = Document> {
  readonly #comparer: Comparer

  /** @internal Use `shadow()`. */
  constructor(official: ShadowableCollection, rumongo: ShadowableCollection, options: ShadowOptions = {}) {
    this.#comparer = new Comparer(official, rumongo, options)
  }

  /** Like `Collection.find`: the cursor supports `toArray`, `await`, `for await`, `next` and the common builders. */
  find(filter: Filter<TSchema> | Document = {}, options: FindOptions = {}): ShadowCursor<WithId<TSchema>> {
    return new ShadowCursor(this.#comparer, { operation: 'find', filter, options }, (side) =>
      side.find(filter, options),
    )
  }

  findOne(
    filter: Filter<TSchema> | Document = {},
    options: FindOptions = {},
  ): Promise<WithId<TSchema> | null> {
    return this.#comparer.run({ operation: 'findOne', filter, options }, (side) =>
      side.findOne(filter, options),
    )
  }

  /**
   * Like `Collection.aggregate`; the cursor is the same as `find`'s.
   * @throws MongoInvalidArgumentError when `pipeline` is not an array.
   */
  aggregate<T extends Document = Document>(
    pipeline: readonly Document[] = [],
    options: AggregateOptions = {},
  ): ShadowCursor<T> {
    if (!Array.isArray(pipeline)) {
      throw new MongoInvalidArgumentError(`aggregate expects a pipeline array, got ${describe(pipeline)}`)
    }
    return new ShadowCursor(
      this.#comparer,
      { operation: 'aggregate', pipeline: [...pipeline], options },
      (side) => side.aggregate(pipeline, options),
    )
  }

  countDocuments(
    filter: Filter<TSchema> | Document = {},
    options: CountDocumentsOptions = {},
  ): Promise<number> {
    return this.#comparer.run({ operation: 'countDocuments', filter, options }, (side) =>
      side.countDocuments(filter, options),
    )
  }

  /** Compared like the others: on a collection being written, the two counts may differ by the writes in between. */
  estimatedDocumentCount(options: EstimatedDocumentCountOptions = {}): Promise<number> {
    return this.#comparer.run({ operation: 'estimatedDocumentCount', options }, (side) =>
      side.estimatedDocumentCount(options),
    )
  }

  distinct<T = any>(
    key: string,
    filter: Filter<TSchema> | Document = {},
    options: DistinctOptions = {},
  ): Promise<T[]> {
    return this.#comparer.run({ operation: 'distinct', key, filter, options }, (side) =>
      side.distinct(key, filter, options),
    )
  }

  /** Counters and latency percentiles since creation. */
  stats(): ShadowStats {
    return this.#comparer.stats()
  }

  /** Resolves once the comparisons started so far have finished (for tests and graceful shutdown). */
  flush(): Promise<void> {
    return this.#comparer.flush()
  }

  /**
   * This shadow collection typed as a rumongo `Collection`, for `Model.define`: the model's reads
   * (`find` with `toArray`/`next`/`close`/`for await`, `findOne`, `countDocuments`,
   * `estimatedDocumentCount`, `distinct`) then go through shadow mode. Only those run: a model
   * query's `cursor()` is a `ShadowCursor`, without `map`, `hint` and the other builders.
   */
  asCollection(): Collection<TSchema> {
    return this as unknown as Collection<TSchema>
  }
}

/**
 * A cursor over the served side's results. When it was sampled and the caller reads it to the end
 * (or reads as many documents as its `limit`), the other side runs the same query and the results
 * are compared; closed earlier (a `break` out of `for await`), it counts as `incomplete`.
 */
export class ShadowCursor<TSchema = Document> implements AsyncIterable<TSchema>, PromiseLike<TSchema[]> {
  readonly #comparer: Comparer
  readonly #query: ShadowQuery
  readonly #open: (side: ShadowableCollection) => ShadowableCursor
  readonly #served: ShadowableCursor & Record<string, any>
  readonly #builders: [string, unknown[]][] = []
  /** The documents read so far, kept only when sampled. */
  readonly #documents: TSchema[] | null
  #limit: number
  #elapsed = 0
  #read = 0
  #finished = false

  /** @internal Created by `ShadowCollection.find` and `aggregate`. */
  constructor(
    comparer: Comparer,
    query: Omit<ShadowQuery, 'served'>,
    open: (side: ShadowableCollection) => ShadowableCursor,
  ) {
    this.#comparer = comparer
    this.#query = { ...query, served: comparer.served }
    this.#open = open
    this.#served = open(comparer.servedCollection)
    this.#documents = comparer.sample() ? [] : null
    this.#limit = query.operation === 'find' ? Math.abs(Number(query.options?.limit ?? 0)) : 0
  }

  sort(...args: unknown[]): this {
    return this.#build('sort', args)
  }

  limit(value: number): this {
    if (this.#query.operation === 'find') this.#limit = Math.abs(value)
    return this.#build('limit', [value])
  }

  skip(value: number): this {
    return this.#build('skip', [value])
  }

  project<T extends Document = Document>(projection: Document): ShadowCursor<T> {
    return this.#build('project', [projection]) as unknown as ShadowCursor<T>
  }

  batchSize(value: number): this {
    return this.#build('batchSize', [value])
  }

  /** The next document, or `null` when there are no more. */
  async next(): Promise<TSchema | null> {
    const document = await this.#timed(() => this.#served.next())
    if (document === null) this.#finish(true)
    else this.#keep([document])
    return document
  }

  /** Whether another document is available. */
  async hasNext(): Promise<boolean> {
    const more = await this.#timed(() => this.#served.hasNext())
    if (!more) this.#finish(true)
    return more
  }

  /** All remaining documents. */
  async toArray(): Promise<TSchema[]> {
    const documents = await this.#timed(() => this.#served.toArray())
    this.#keep(documents)
    this.#finish(true)
    return documents
  }

  /** Closes the served cursor; a sampled cursor not read to the end counts as `incomplete`. */
  async close(): Promise<void> {
    this.#finish(false)
    await this.#served.close()
  }

  /** A Node `Readable` (object mode) of the documents. */
  stream(): Readable {
    return Readable.from(this)
  }

  [Symbol.asyncIterator](): AsyncGenerator<TSchema, void, void> {
    return new CursorIterator(this)
  }

  /** Makes the cursor awaitable: resolves to `toArray()`. */
  then<TResult1 = TSchema[], TResult2 = never>(
    onfulfilled?: ((value: TSchema[]) => TResult1 | PromiseLike<TResult1>) | null,
    onrejected?: ((reason: unknown) => TResult2 | PromiseLike<TResult2>) | null,
  ): Promise<TResult1 | TResult2> {
    return this.toArray().then(onfulfilled, onrejected)
  }

  #build(method: CursorBuilder, args: unknown[]): this {
    this.#served[method](...args)
    this.#builders.push([method, args])
    this.#query.cursor = this.#builders.map(([name, values]) => [name, ...values])
    return this
  }

  /** Runs a read of the served cursor, timing it; a failure ends the cursor's shadowing. */
  async #timed<T>(read: () => Promise<T>): Promise<T> {
    const started = performance.now()
    try {
      return await read()
    } catch (error) {
      this.#finished = true
      throw error
    } finally {
      this.#elapsed += performance.now() - started
    }
  }

  #keep(documents: TSchema[]): void {
    this.#read += documents.length
    if (this.#documents !== null) for (const document of documents) this.#documents.push(document)
    if (this.#limit > 0 && this.#read >= this.#limit) this.#finish(true)
  }

  #finish(complete: boolean): void {
    if (this.#finished) return
    this.#finished = true
    if (complete) {
      this.#comparer.recordLatency(this.#comparer.served, this.#elapsed)
      if (this.#documents !== null) {
        this.#comparer.compareLater(this.#query, this.#documents, async (side) => {
          const cursor = this.#open(side) as ShadowableCursor & Record<string, any>
          for (const [method, args] of this.#builders) cursor[method](...args)
          return cursor.toArray()
        })
      }
    } else if (this.#documents !== null) {
      this.#comparer.countIncomplete()
    }
  }
}

/** The state shared by a shadow collection and its cursors: options, counters, comparisons. */
class Comparer {
  readonly served: ShadowSide
  readonly servedCollection: ShadowableCollection
  readonly #other: ShadowableCollection
  readonly #sampleRate: number
  readonly #maxConcurrent: number
  readonly #options: ShadowOptions
  readonly #latency: Record<ShadowSide, number[]> = { official: [], rumongo: [] }
  readonly #latencyNext: Record<ShadowSide, number> = { official: 0, rumongo: 0 }
  readonly #counters = { compared: 0, mismatches: 0, skipped: 0, incomplete: 0 }
  readonly #errors = { official: 0, rumongo: 0, callbacks: 0 }
  #inFlight = 0
  #idle: (() => void)[] = []

  constructor(official: ShadowableCollection, rumongo: ShadowableCollection, options: ShadowOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new MongoInvalidArgumentError(`shadow options must be an object, got ${describe(options)}`)
    }
    const { sampleRate = 0.01, serve = 'official', maxConcurrentComparisons = 4 } = options
    for (const [name, side] of [
      ['official', official],
      ['rumongo', rumongo],
    ] as const) {
      if (typeof side?.find !== 'function' || typeof side.aggregate !== 'function') {
        throw new MongoInvalidArgumentError(`shadow expects a collection as ${name}, got ${describe(side)}`)
      }
    }
    if (typeof sampleRate !== 'number' || !(sampleRate >= 0 && sampleRate <= 1)) {
      throw new MongoInvalidArgumentError(
        `sampleRate must be a number from 0 to 1, got ${describe(sampleRate)}`,
      )
    }
    if (serve !== 'official' && serve !== 'rumongo') {
      throw new MongoInvalidArgumentError(`serve must be 'official' or 'rumongo', got ${describe(serve)}`)
    }
    if (!Number.isInteger(maxConcurrentComparisons) || maxConcurrentComparisons < 1) {
      throw new MongoInvalidArgumentError(
        `maxConcurrentComparisons must be a positive integer, got ${describe(maxConcurrentComparisons)}`,
      )
    }
    for (const [name, type] of [
      ['ignoreKeyOrder', 'boolean'],
      ['redact', 'boolean'],
      ['onMismatch', 'function'],
      ['onError', 'function'],
    ] as const) {
      const value = options[name]
      if (value !== undefined && typeof value !== type) {
        throw new MongoInvalidArgumentError(`${name} must be a ${type}, got ${describe(value)}`)
      }
    }
    this.served = serve
    this.servedCollection = serve === 'official' ? official : rumongo
    this.#other = serve === 'official' ? rumongo : official
    this.#sampleRate = sampleRate
    this.#maxConcurrent = maxConcurrentComparisons
    this.#options = { ...options }
  }

  get #otherSide(): ShadowSide {
    return this.served === 'official' ? 'rumongo' : 'official'
  }

  sample(): boolean {
    return this.#sampleRate > 0 && Math.random() < this.#sampleRate
  }

  /** A promise-returning read: served, then compared later when sampled. */
  async run<T>(
    query: Omit<ShadowQuery, 'served'>,
    read: (side: ShadowableCollection) => Promise<T>,
  ): Promise<T> {
    const sampled = this.sample()
    const started = performance.now()
    const result = await read(this.servedCollection)
    this.recordLatency(this.served, performance.now() - started)
    if (sampled) this.compareLater({ ...query, served: this.served }, result, read)
    return result
  }

  /** Runs the other side after the caller got `served`, unless too many comparisons are running. */
  compareLater(query: ShadowQuery, served: unknown, read: (side: ShadowableCollection) => Promise<unknown>) {
    if (this.#inFlight >= this.#maxConcurrent) {
      this.#counters.skipped++
      return
    }
    this.#inFlight++
    setImmediate(() => {
      this.#compare(query, served, read)
        .catch(() => undefined)
        .finally(() => {
          if (--this.#inFlight === 0) for (const resolve of this.#idle.splice(0)) resolve()
        })
    })
  }

  async #compare(
    query: ShadowQuery,
    served: unknown,
    read: (side: ShadowableCollection) => Promise<unknown>,
  ) {
    const side = this.#otherSide
    const started = performance.now()
    let other: unknown
    try {
      other = await read(this.#other)
    } catch (error) {
      this.#errors[side]++
      await this.#callback(this.#options.onError, { ...this.#describe(query), side, error })
      return
    }
    this.recordLatency(side, performance.now() - started)
    const [official, rumongo] = this.served === 'official' ? [served, other] : [other, served]
    // Results that cannot be compared are not proven equal: a mismatch, never a silent drop.
    let difference: Difference | { path: '$'; reason: 'uncomparable'; a: unknown; b: unknown; error: unknown }
    try {
      const found = firstDifference(official, rumongo, { ignoreKeyOrder: this.#options.ignoreKeyOrder })
      this.#counters.compared++
      if (found === undefined) return
      difference = found
    } catch (error) {
      this.#counters.compared++
      difference = { path: '$', reason: 'uncomparable', a: official, b: rumongo, error }
    }
    this.#counters.mismatches++
    const keyOrder = difference.reason === 'keyOrder'
    const redact = this.#options.redact === true && !keyOrder
    await this.#callback(this.#options.onMismatch, {
      ...this.#describe(query),
      path: difference.path,
      reason: difference.reason,
      official: redact ? typeName(difference.a) : difference.a,
      rumongo: redact ? typeName(difference.b) : difference.b,
      ...('error' in difference ? { error: difference.error } : {}),
    })
  }

  /** The query for a report: redacted when asked (keys, operators and the distinct key stay). */
  #describe(query: ShadowQuery): ShadowQuery {
    if (!this.#options.redact) return query
    const redacted: ShadowQuery = { ...query }
    if (query.filter) redacted.filter = redactValue(query.filter) as Document
    if (query.pipeline) redacted.pipeline = redactValue(query.pipeline) as Document[]
    if (query.options) redacted.options = redactValue(query.options) as Document
    if (query.cursor)
      redacted.cursor = query.cursor.map(([name, ...args]) => [name, ...args.map(redactValue)])
    return redacted
  }

  async #callback<T>(callback: ((report: T) => unknown) | undefined, report: T): Promise<void> {
    if (callback === undefined) return
    try {
      await callback(report)
    } catch {
      this.#errors.callbacks++
    }
  }

  countIncomplete(): void {
    this.#counters.incomplete++
  }

  recordLatency(side: ShadowSide, ms: number): void {
    const window = this.#latency[side]
    window[this.#latencyNext[side]] = ms
    this.#latencyNext[side] = (this.#latencyNext[side] + 1) % LATENCY_WINDOW
  }

  stats(): ShadowStats {
    return {
      ...this.#counters,
      inFlight: this.#inFlight,
      errors: { ...this.#errors },
      rumongoMs: percentiles(this.#latency.rumongo),
      officialMs: percentiles(this.#latency.official),
    }
  }

  flush(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve()
    return new Promise((resolve) => this.#idle.push(resolve))
  }
}

/** Nearest-rank p50 and p95 of a latency window. */
function percentiles(window: readonly number[]): ShadowLatency {
  if (window.length === 0) return { p50: null, p95: null, samples: 0 }
  const sorted = [...window].sort((x, y) => x - y)
  const rank = (p: number) => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!
  return { p50: rank(0.5), p95: rank(0.95), samples: sorted.length }
}
