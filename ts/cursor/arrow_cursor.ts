/**
 * Arrow reads: `findArrow` / `aggregateArrow` (a Table, or IPC bytes), their cursors of record
 * batches, and `pipeArrow`. A find or aggregate hands over its raw server batches (no JS document
 * is built); Rust turns them into Arrow record batches on the rayon pool (`src/format/arrow.rs`).
 * @module
 */
import { Readable } from 'node:stream'
import type { Document, Long } from 'bson'
import type * as ApacheArrow from 'apache-arrow'
import { DOCUMENT_SHAPING_OPTIONS } from '../bson.js'
import { describe } from '../validate.js'
import {
  callNative,
  callNativeSync,
  cursorFailedEarlier,
  MongoArrowTypeMismatchError,
  MongoCursorExhaustedError,
  MongoInvalidArgumentError,
} from '../errors.js'
import {
  END_OF_STREAM,
  loadApacheArrow,
  nativeFields,
  RAW_BATCHES,
  schemaProjection,
  TYPE_MISMATCHES_KEY,
  type ArrowOptions,
  type IpcBatch,
  type NativeFields,
} from '../format/arrow.js'
import { NativeArrowEncoder, type DocumentBatch, type ExternalObject } from '../native.cjs'
import { checkDestination, pipeParts } from '../pipe.js'
import type { AggregateOptions, FindOptions } from '../options.js'
import { AbstractCursor, CursorIterator, type CursorSource } from './abstract_cursor.js'
import { AggregationCursor } from './aggregation_cursor.js'
import { FindCursor } from './find_cursor.js'
import { InTurn } from './in_turn.js'

/** Options of `findArrow` and `findArrowCursor`: those of `find`, plus the Arrow ones. */
export interface FindArrowOptions extends FindOptions, ArrowOptions, ArrowCursorOptions {
  /** `findArrow`: resolve to a Table (default) or to the IPC stream bytes. */
  as?: 'table' | 'ipc'
}

/** Options of `aggregateArrow` and `aggregateArrowCursor`. */
export interface AggregateArrowOptions extends AggregateOptions, ArrowOptions, ArrowCursorOptions {
  /** `aggregateArrow`: resolve to a Table (default) or to the IPC stream bytes. */
  as?: 'table' | 'ipc'
}

/** How an Arrow cursor cuts its record batches. */
export interface ArrowCursorOptions {
  /**
   * Server batches are gathered into one record batch until it holds at least this many rows.
   * Default: a cursor yields one record batch per server batch; `findArrow` and `pipeArrow`
   * gather about 8 MiB of BSON per record batch.
   */
  rowsPerBatch?: number
}

/** What `pipeArrow` wrote. */
export interface PipeArrowResult {
  rows: number
  batches: number
  bytes: number
}

/** BSON per record batch of `findArrow` / `pipeArrow`: few record batches, bounded memory. */
const TABLE_BATCH_BYTES = 16 * 1024 * 1024

/**
 * Server batches fetched ahead by a Table or pipe read, which reads in bulk (4 MiB batches, see
 * `readInBulk`): one record batch's worth, so the next ones arrive while one is built (with the
 * default 2, fetching stopped during each build).
 */
const TABLE_PREFETCH = 4

const ARROW_OPTION_NAMES = ['schema', 'onTypeMismatch', 'objectId', 'rowsPerBatch', 'as'] as const

/** An Arrow read's options, split into the query's and the Arrow ones (checked). */
function splitOptions<T extends Document>(options: T, method: string) {
  if (options === null || typeof options !== 'object') {
    throw new MongoInvalidArgumentError(`${method} options must be an object, got ${describe(options)}`)
  }
  const query: Document = { ...options }
  for (const name of ARROW_OPTION_NAMES) delete query[name]
  if (query.explain != null) {
    throw new MongoInvalidArgumentError(
      `${method}: explain does not apply to Arrow output: read the plan with explain()`,
    )
  }
  for (const name of DOCUMENT_SHAPING_OPTIONS) {
    if (query[name] !== undefined) {
      throw new MongoInvalidArgumentError(
        `${method}: ${name} does not apply to Arrow output, which builds no documents`,
      )
    }
  }
  const {
    schema,
    onTypeMismatch = 'null',
    objectId = 'binary',
    rowsPerBatch,
  } = options as ArrowOptions & ArrowCursorOptions
  if (onTypeMismatch !== 'null' && onTypeMismatch !== 'error') {
    throw new MongoInvalidArgumentError(
      `${method}: onTypeMismatch must be 'null' or 'error', got ${describe(onTypeMismatch)}`,
    )
  }
  if (objectId !== 'binary' && objectId !== 'hex') {
    throw new MongoInvalidArgumentError(
      `${method}: objectId must be 'binary' or 'hex', got ${describe(objectId)}`,
    )
  }
  if (rowsPerBatch !== undefined && !(Number.isSafeInteger(rowsPerBatch) && rowsPerBatch > 0)) {
    throw new MongoInvalidArgumentError(
      `${method}: rowsPerBatch must be a positive integer, got ${describe(rowsPerBatch)}`,
    )
  }
  const fields = schema === undefined ? undefined : nativeFields(schema)
  const encoder = callNativeSync(
    () =>
      new NativeArrowEncoder({
        schema: fields && JSON.stringify(fields),
        objectIdHex: objectId === 'hex',
        mismatchError: onTypeMismatch === 'error',
      }),
  )
  return { query, fields, encoder, rowsPerBatch }
}

/** @internal The cursor of `findArrowCursor` (and what `findArrow` reads). */
export function findArrowCursor(
  source: CursorSource,
  filter: Document,
  options: FindArrowOptions,
  tableBatches: boolean,
): ArrowCursor {
  const { query, fields, encoder, rowsPerBatch } = splitOptions(options, 'findArrow')
  // The caller's `projection` key wins, even undefined (a server that takes no projection).
  if (fields !== undefined && !('projection' in query)) query.projection = schemaProjection(fields)
  if (query.projection === undefined) delete query.projection
  const documents = new FindCursor<DocumentBatch>(source, filter, query, RAW_BATCHES)
  if (tableBatches) documents.prefetch(TABLE_PREFETCH).readInBulk()
  return new ArrowCursor(documents, encoder, rowsPerBatch, tableBatches ? TABLE_BATCH_BYTES : 0)
}

/** @internal The cursor of `aggregateArrowCursor` (and what `aggregateArrow` reads). */
export function aggregateArrowCursor(
  source: CursorSource,
  pipeline: readonly Document[],
  options: AggregateArrowOptions,
  tableBatches: boolean,
): ArrowCursor {
  const { query, fields, encoder, rowsPerBatch } = splitOptions(options, 'aggregateArrow')
  const stages =
    Array.isArray(pipeline) && fields !== undefined
      ? [...pipeline, { $project: schemaProjection(fields) }]
      : pipeline
  const documents = new AggregationCursor<DocumentBatch>(source, stages, query, RAW_BATCHES)
  if (tableBatches) documents.prefetch(TABLE_PREFETCH).readInBulk()
  return new ArrowCursor(documents, encoder, rowsPerBatch, tableBatches ? TABLE_BATCH_BYTES : 0)
}

/**
 * `failed`: building a record batch failed (a getMore, the encode, a type mismatch with
 * `onTypeMismatch: 'error'`); every later read rejects instead of passing for the end of the results.
 */
type ArrowCursorState = 'open' | 'exhausted' | 'failed' | 'closed' | 'closedByClient'

/**
 * A cursor of Arrow record batches: one per server batch by default (see
 * {@link ArrowCursorOptions.rowsPerBatch}), all of one schema. Memory stays bounded: server batches
 * are fetched a few ahead of the reader, and one record batch is built ahead while the last one is
 * read. Reads are served one after another in call order, concurrent ones included. A read that
 * fails (its own or the one built ahead for it) rejects, and every later read rejects with
 * `MongoCursorExhaustedError`. Leaving a `for await` early, `close()`, or closing the client kills
 * the server cursor; after the client's close, every read throws `MongoCursorExhaustedError` (its
 * record batch built ahead dropped), as a find cursor's, unless the server's last batch was in.
 */
export class ArrowCursor implements AsyncIterable<ApacheArrow.RecordBatch> {
  readonly #documents: AbstractCursor<DocumentBatch>
  readonly #encoder: NativeArrowEncoder
  readonly #rowsPerBatch: number | undefined
  /** Gather server batches up to this much BSON per record batch (0: one per server batch). */
  readonly #batchBytes: number
  /** Rows of the record batches built so far. */
  #rows = 0
  #batches = 0
  /**
   * The next record batch, being built while the last one is read. A build that fails stays here
   * until the next read takes it: that read rejects with its error.
   */
  #ahead: Promise<IpcBatch | null> | null = null
  #mismatches: Record<string, number> = {}
  #fields: NativeFields | undefined
  #state: ArrowCursorState = 'open'
  /** The error that failed the cursor (state `failed`). */
  #failure: unknown = undefined
  /** Reads run one after another: two at once would both take the batch built ahead. */
  readonly #reads = new InTurn()
  /** Record batches go to the encoder's stream (`finishStream`), not to `nextIpcBatch`'s `ipc`. */
  #append = false

  /** @internal Created by `findArrowCursor` / `aggregateArrowCursor`. */
  constructor(
    documents: AbstractCursor<DocumentBatch>,
    encoder: NativeArrowEncoder,
    rowsPerBatch: number | undefined,
    batchBytes: number,
  ) {
    this.#documents = documents
    this.#encoder = encoder
    this.#rowsPerBatch = rowsPerBatch
    this.#batchBytes = batchBytes
  }

  /** Values nulled because their type did not fit their column, by column path, so far. */
  get typeMismatches(): Record<string, number> {
    return { ...this.#mismatches }
  }

  /** The server cursor's id once the first batch arrived (`Long(0)` once the server has no more). */
  get id(): Long | undefined {
    return this.#documents.id
  }

  /** Rows read so far. */
  get rows(): number {
    return this.#rows
  }

  /** True once closed (by its client too), exhausted or failed. */
  get closed(): boolean {
    return this.#state !== 'open' || this.#documents.closedByItsClient
  }

  /**
   * The next record batch as an IPC stream of its own (schema, batch, end of stream), or `null`
   * at the end.
   * @throws MongoArrowTypeMismatchError with `onTypeMismatch: 'error'`; the cursor is closed.
   * @throws MongoCursorExhaustedError after a read failed.
   */
  async nextIPC(): Promise<Buffer | null> {
    return (await this.nextIpcBatch())?.ipc ?? null
  }

  /**
   * The next record batch, or `null` at the end (needs `apache-arrow`).
   * @throws MongoArrowTypeMismatchError with `onTypeMismatch: 'error'`; the cursor is closed.
   * @throws MongoCursorExhaustedError after a read failed.
   */
  next(): Promise<ApacheArrow.RecordBatch | null> {
    return this.#reads.run(async () => {
      // Before the read: a missing apache-arrow fails without taking a batch.
      const arrow = await loadApacheArrow('ArrowCursor.next')
      const batch = await this.#read()
      return batch === null ? null : arrow.tableFromIPC(batch.ipc).batches[0]
    })
  }

  /** @internal The next record batch as Rust built it. */
  nextIpcBatch(): Promise<IpcBatch | null> {
    return this.#reads.run(() => this.#read())
  }

  async #read(): Promise<IpcBatch | null> {
    if (this.#documents.closedByItsClient && (this.#state === 'open' || this.#state === 'failed')) {
      // Its client closed while the server held more (and killed the server cursor): as a find
      // cursor's, every read started after that throws, even with a record batch built ahead (or
      // the build ahead failed by the close: its documents' cursor was open, so nothing else did).
      this.#state = 'closedByClient'
      this.#ahead = null
    }
    if (this.#state === 'closedByClient') throw new MongoCursorExhaustedError()
    const ahead = this.#ahead
    this.#ahead = null
    if (ahead === null) {
      if (this.#state === 'failed') throw cursorFailedEarlier(this.#failure)
      if (this.#state !== 'open') return null
    }
    // A build ahead that failed rejects here: this read gets its error, the later ones the above.
    const batch = await (ahead ?? this.#build())
    // The schema is fixed once the first rows are built: the next batch may be built meanwhile.
    if (batch !== null && this.#fields !== undefined && this.#state === 'open') {
      this.#ahead = this.#build()
      // Not unhandled while nobody reads: the next read takes the rejection.
      this.#ahead.catch(() => {})
    }
    return batch
  }

  /**
   * @internal From now on, record batches join one IPC stream that the encoder holds (the batches
   * `nextIpcBatch` returns have no `ipc`), read at the end by {@link finishStream}.
   */
  appendToStream(): void {
    this.#append = true
  }

  /**
   * @internal The stream of the record batches built with {@link appendToStream}, its schema
   * carrying the type-mismatch counts (`rumongo.typeMismatches`) when there are any.
   */
  finishStream(): Promise<Buffer> {
    const mismatches = this.typeMismatches
    const metadata =
      Object.keys(mismatches).length > 0
        ? JSON.stringify({ [TYPE_MISMATCHES_KEY]: JSON.stringify(mismatches) })
        : undefined
    return callNative(() => this.#encoder.finishStream(metadata))
  }

  /** @internal An empty batch of the cursor's schema (a result without rows still has one). */
  emptyBatch(): Promise<IpcBatch> {
    return this.#encode([], [])
  }

  /**
   * Gathers the next server batches and builds them into a record batch. Any failure (a getMore,
   * the encode, a type mismatch) fails the cursor and kills the server cursor before rejecting.
   */
  async #build(): Promise<IpcBatch | null> {
    try {
      const parts: ExternalObject<'RawBatch'>[] = []
      const counts: number[] = []
      let rows = 0
      let bytes = 0
      for (let batch; (batch = await this.#documents.next()) !== null;) {
        parts.push(batch.rawBatch!)
        counts.push(batch.count)
        rows += batch.count
        bytes += batch.documentBytes
        // A large first reply arrives in parts (see DocumentBatch.replyPartsLeft): one server batch.
        if (batch.replyPartsLeft === 0 && this.#enough(rows, bytes)) break
      }
      if (parts.length === 0) {
        await this.#end('exhausted')
        return null
      }
      return await this.#encode(parts, counts)
    } catch (error) {
      await this.#end('failed', error)
      throw error
    }
  }

  /** Stops reading (unless closed meanwhile: a close stands) and closes the server cursor. */
  async #end(state: 'exhausted' | 'failed', failure?: unknown): Promise<void> {
    if (this.#state === 'open') {
      this.#state = state
      this.#failure = failure
    }
    await this.#documents.close()
  }

  #enough(rows: number, bytes: number): boolean {
    if (this.#rowsPerBatch !== undefined) return rows >= this.#rowsPerBatch
    return bytes >= this.#batchBytes
  }

  async #encode(parts: ExternalObject<'RawBatch'>[], counts: number[]): Promise<IpcBatch> {
    // A Table or a pipe takes record batches of any count: large encodes are built in parallel.
    const split = this.#batchBytes > 0
    const encoded = await callNative(() => this.#encoder.encode(parts, counts, split, this.#append))
    const mismatch = encoded.typeMismatch
    if (mismatch) {
      throw new MongoArrowTypeMismatchError(
        mismatch.path,
        this.#rows + mismatch.row,
        mismatch.expected,
        mismatch.found,
      )
    }
    for (const { path, count } of encoded.mismatches)
      this.#mismatches[path] = (this.#mismatches[path] ?? 0) + count
    if (encoded.rows > 0) this.#fields ??= JSON.parse(encoded.schema) as NativeFields
    this.#rows += encoded.rows
    this.#batches += 1
    return {
      ipc: encoded.ipc!,
      schemaBytes: encoded.schemaBytes,
      rows: encoded.rows,
      recordBatches: encoded.recordBatches,
    }
  }

  /**
   * Kills the server cursor if still open. Idempotent. A failed cursor stays failed: its reads keep
   * rejecting.
   */
  async close(): Promise<void> {
    if (this.#state === 'open') this.#state = 'closed'
    this.#ahead = null
    await this.#documents.close()
  }

  /** A Node `Readable` (object mode) of the record batches; backpressure pauses reading. */
  stream(): Readable {
    return Readable.from(this)
  }

  [Symbol.asyncIterator](): AsyncGenerator<ApacheArrow.RecordBatch, void, void> {
    return new CursorIterator(this)
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }
}

/**
 * @internal All the record batches of `cursor` as one IPC stream built in Rust (one empty batch
 * for no rows), the cursor closed after.
 */
async function readAll(cursor: ArrowCursor): Promise<Buffer> {
  cursor.appendToStream()
  try {
    let rows = 0
    for (let batch; (batch = await cursor.nextIpcBatch()) !== null;) rows += batch.rows
    if (rows === 0) await cursor.emptyBatch()
  } finally {
    await cursor.close()
  }
  return cursor.finishStream()
}

/** @internal `findArrow` / `aggregateArrow`: the cursor's rows as a Table, or IPC bytes. */
export async function readArrow(
  open: () => ArrowCursor,
  as: unknown,
  method: string,
): Promise<ApacheArrow.Table | Buffer> {
  if (as !== undefined && as !== 'table' && as !== 'ipc') {
    throw new MongoInvalidArgumentError(`${method}: as must be 'table' or 'ipc', got ${describe(as)}`)
  }
  // Before the query: a missing apache-arrow fails at once.
  const arrow = as === 'ipc' ? undefined : await loadApacheArrow(method)
  const ipc = await readAll(open())
  // One stream, one schema: wrapped once, without a copy (its metadata holds the mismatches).
  return arrow === undefined ? ipc : arrow.tableFromIPC(ipc)
}

/**
 * @internal `pipeArrow`: the cursor's rows written to `destination` as one Arrow IPC stream, then
 * ended (see `pipeParts`: backpressure, the whole call's `timeoutMS`, a destination that fails,
 * closes or is ended elsewhere). A query that fails before its first batch rejects with the
 * destination untouched.
 */
export async function pipeArrow(
  open: () => ArrowCursor,
  destination: NodeJS.WritableStream,
  /** The whole call's limit: the operation's `timeoutMS`, else the client's. */
  timeoutMS?: number,
): Promise<PipeArrowResult> {
  checkDestination('pipeArrow', destination)
  const cursor = open()
  const written: PipeArrowResult = { rows: 0, batches: 0, bytes: 0 }
  await pipeParts(destination, ipcStream(cursor, written), () => cursor.close(), timeoutMS)
  return written
}

/**
 * The cursor's record batches as the chunks of one IPC stream, counted into `written`; the first
 * batch (or an empty one) is built before the first chunk.
 */
async function* ipcStream(cursor: ArrowCursor, written: PipeArrowResult): AsyncGenerator<Buffer> {
  try {
    // No binding holds the first batch (compared with it, it stayed alive for the whole pipe).
    let batch: IpcBatch | null = (await cursor.nextIpcBatch()) ?? (await cursor.emptyBatch())
    for (let index = 0; batch !== null; batch = await cursor.nextIpcBatch(), index++) {
      const chunk = batch.ipc.subarray(
        index === 0 ? 0 : batch.schemaBytes,
        batch.ipc.length - END_OF_STREAM.length,
      )
      written.rows += batch.rows
      written.batches += batch.recordBatches
      written.bytes += chunk.length
      yield chunk
    }
    written.bytes += END_OF_STREAM.length
    yield END_OF_STREAM
  } finally {
    await cursor.close()
  }
}
