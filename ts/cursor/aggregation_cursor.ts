/**
 * The cursor `aggregate()` returns. Read pipelines only: `$out` and `$merge` belong to the
 * official driver, which rumongo leaves the writes to.
 * @module
 */
import type { Document } from 'bson'
import { toBSON } from '../bson.js'
import { callNative, MongoInvalidArgumentError } from '../errors.js'
import {
  AGGREGATE,
  normalizeOperationOption,
  resolveOperationOptions,
  type AggregateOptions,
} from '../options.js'
import type { BatchFormat } from '../format/index.js'
import { aggregateCommand, runExplain, type ExplainCommandOptions } from '../explain.js'
import type { ExplainVerbosityLike } from '../read_preference.js'
import { AbstractCursor, type CursorSource } from './abstract_cursor.js'
import { withDefaultBatchSize } from './batch_size.js'
import { describe, isPlainObject } from '../validate.js'

const WRITE_STAGES = ['$out', '$merge']

/** A cursor over the results of an aggregation pipeline. Stages can be appended before reading. */
export class AggregationCursor<TSchema = Document> extends AbstractCursor<TSchema> {
  readonly #pipeline: Document[]
  readonly #options: AggregateOptions

  /** @internal Created by `Collection.aggregate` (with a format: another batch format than documents). */
  constructor(
    source: CursorSource,
    pipeline: readonly Document[],
    options: AggregateOptions,
    format?: BatchFormat,
  ) {
    super(source, format)
    if (!Array.isArray(pipeline)) {
      throw new MongoInvalidArgumentError(`aggregate pipeline must be an array, got ${describe(pipeline)}`)
    }
    this.#pipeline = []
    pipeline.forEach((stage) => this.#append(stage))
    resolveOperationOptions(AGGREGATE, options, source.bsonOptions)
    this.#options = { ...options }
  }

  protected override async openWithoutCursor(): Promise<Document[] | undefined> {
    const { explain } = this.#options
    return explain == null ? undefined : [await this.explain(explain as ExplainVerbosityLike)]
  }

  protected override async openNative() {
    // Both run `aggregate` with the same arguments: on a database, the command says `aggregate: 1`.
    const target = this.source.databaseLevel
      ? await this.source.nativeDatabase()
      : await this.source.nativeCollection()
    const resolved = resolveOperationOptions(AGGREGATE, this.#options, this.source.bsonOptions)
    const { bson } = resolved
    const command = withDefaultBatchSize(resolved.command)
    const pipeline = toBSON({ pipeline: this.#pipeline }, bson)
    const opened = await callNative(() =>
      target.aggregate(pipeline, toBSON(command, bson), this.batchOutput(bson)),
    )
    return { opened, bsonOptions: bson }
  }

  /** The server's plan for this pipeline (the `explain` command); see `FindCursor.explain`. */
  async explain(
    verbosity?: ExplainVerbosityLike | ExplainCommandOptions,
    options?: ExplainCommandOptions,
  ): Promise<Document> {
    const { command: resolved, bson } = resolveOperationOptions(
      AGGREGATE,
      this.#options,
      this.source.bsonOptions,
    )
    const target = this.source.databaseLevel ? 1 : this.namespace.collection!
    const command = aggregateCommand(target, this.#pipeline, resolved)
    return runExplain(this.source, command, resolved, bson, verbosity, options)
  }

  override clone(): AggregationCursor<TSchema> {
    return new AggregationCursor<TSchema>(this.source, this.#pipeline, this.#options, this.format)
  }

  protected override get readOptions(): Document {
    return this.#options
  }

  override map<T>(transform: (document: TSchema) => T): AggregationCursor<T> {
    return super.map(transform) as AggregationCursor<T>
  }

  /** Documents per server batch. Call it before reading. */
  batchSize(value: number): this {
    this.throwIfInitialized()
    ;(this.#options as Document).batchSize = normalizeOperationOption(AGGREGATE, 'batchSize', value)
    return this
  }

  /** Server-side time limit in milliseconds. Call it before reading. */
  maxTimeMS(value: number): this {
    this.throwIfInitialized()
    ;(this.#options as Document).maxTimeMS = normalizeOperationOption(AGGREGATE, 'maxTimeMS', value)
    return this
  }

  #append(stage: unknown): void {
    if (!isPlainObject(stage)) {
      throw new MongoInvalidArgumentError(`every pipeline stage must be an object, got ${describe(stage)}`)
    }
    const write = Object.keys(stage).find((name) => WRITE_STAGES.includes(name))
    if (write !== undefined) {
      throw new MongoInvalidArgumentError(
        `rumongo runs read pipelines only: run the ${write} stage with the official driver`,
      )
    }
    this.#pipeline.push(stage)
  }

  /** Appends a stage to the pipeline. */
  addStage<T = Document>(stage: Document): AggregationCursor<T> {
    this.throwIfInitialized()
    this.#append(stage)
    return this as unknown as AggregationCursor<T>
  }

  match(filter: Document): this {
    return this.addStage({ $match: stageObject('match', filter) }) as this
  }

  project<T extends Document = Document>(projection: Document): AggregationCursor<T> {
    return this.addStage<T>({ $project: stageObject('project', projection) })
  }

  sort(sort: Document): this {
    return this.addStage({ $sort: stageObject('sort', sort) }) as this
  }

  skip(value: number): this {
    return this.addStage({ $skip: stageInteger('skip', value, 0) }) as this
  }

  limit(value: number): this {
    return this.addStage({ $limit: stageInteger('limit', value, 1) }) as this
  }

  group<T = Document>(group: Document): AggregationCursor<T> {
    return this.addStage<T>({ $group: stageObject('group', group) })
  }

  unwind<T = Document>(unwind: string | Document): AggregationCursor<T> {
    return this.addStage<T>({ $unwind: typeof unwind === 'string' ? unwind : stageObject('unwind', unwind) })
  }

  lookup(lookup: Document): this {
    return this.addStage({ $lookup: stageObject('lookup', lookup) }) as this
  }
}

/** A builder's stage argument: an object, checked here rather than by the server on the first read. */
function stageObject(method: string, value: unknown): Document {
  if (!isPlainObject(value)) {
    throw new MongoInvalidArgumentError(`${method} expects an object, got ${describe(value)}`)
  }
  return value
}

function stageInteger(method: string, value: unknown, minimum: number): number {
  if (!Number.isSafeInteger(value) || (value as number) < minimum) {
    throw new MongoInvalidArgumentError(`${method} expects an integer >= ${minimum}, got ${describe(value)}`)
  }
  return value as number
}
