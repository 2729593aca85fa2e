/**
 * The cursor surface of the official driver (`next`, `toArray`, `for await`, `map`, `close`, ...)
 * over native cursors that hand over one server batch at a time.
 * @module
 */
import { EventEmitter } from 'node:events'
import { Readable } from 'node:stream'
import { Long, type Document } from 'bson'
import type { ActiveCursors, ClientCursor } from '../active_cursors.js'
import type { ResolvedBSONOptions } from '../bson.js'
import { DOCUMENTS, type BatchFormat } from '../format/index.js'
import { DecodedWithFailures, UndecodableDocument } from '../format/raw.js'
import {
  callNative,
  MongoAPIError,
  MongoClientClosedError,
  MongoCursorExhaustedError,
  MongoCursorInUseError,
  MongoInvalidArgumentError,
  MongoNotConnectedError,
  cursorFailedEarlier,
} from '../errors.js'
import {
  type BatchOutput,
  type DocumentBatch,
  type NativeCollection,
  type NativeCursor,
  type OpenedCursor,
  type NativeDatabase,
} from '../native.cjs'
import { MongoDBNamespace } from '../namespace.js'
import { InTurn } from './in_turn.js'
import type { ReadConcernLike } from '../options.js'
import { ReadConcern, ReadPreference, type ReadPreferenceMode } from '../read_preference.js'
import { learnDocumentSize } from './batch_size.js'
import { checkFunction, describe } from '../validate.js'
import { LISTENER_CHANGING_METHODS, TypedEventEmitter } from '../events.js'

/** Where a cursor's documents come from: its collection and inherited BSON options. */
export interface CursorSource {
  /** `db.collection`. */
  namespace: string
  bsonOptions: ResolvedBSONOptions
  /** The native collection; connects the client on first use. */
  nativeCollection(): Promise<NativeCollection>
  /** The native database, for commands (explain); connects the client on first use. */
  nativeDatabase(): Promise<NativeDatabase>
  /** An aggregate runs on the database (`aggregate: 1`), not on a collection. */
  databaseLevel?: boolean
  /** The read preference and read concern of the collection or database the cursor reads. */
  readPreference: ReadPreference
  readConcern: ReadConcern | undefined
  /** The client's cursors that its `close()` closes (find, aggregate and change-stream cursors). */
  activeCursors: ActiveCursors
}

/** What a `map()` transform that returns `null` throws: the official driver's message. */
const TRANSFORM_TO_NULL =
  'Cursor returned a `null` document, but the cursor is not exhausted.  Mapping documents to `null` is not supported in the cursor transform.'

/** `failed`: a read failed; every later read rejects instead of passing for the end of the results. */
type CursorState = 'new' | 'opening' | 'open' | 'exhausted' | 'failed' | 'closed'

/**
 * Batches fetched ahead of the one being read when the caller sets no `prefetch`. With 2, Rust
 * encodes batch k+1 while the getMore for k+2 runs and JS builds documents from batch k; with 1,
 * encoding and fetching alternate and JS waits (a 10k-document find: ~1.5x the wall time).
 */
const DEFAULT_PREFETCH = 2

/** The official driver's cursor flags (`addCursorFlag`). */
export const CURSOR_FLAGS = [
  'tailable',
  'oplogReplay',
  'noCursorTimeout',
  'awaitData',
  'exhaust',
  'partial',
] as const
export type CursorFlag = (typeof CURSOR_FLAGS)[number]

/** The events a cursor emits, as the official driver's `AbstractCursorEvents`. */
export type AbstractCursorEvents = {
  /** Once per run of the query, when it is cleaned up: closed, failed, or its last batch taken. */
  close(): void
}

/** Adds the official cursor's own listeners; set in the class, which reads private fields (see `#addOwnListeners`). */
let addOwnListeners: (cursor: AbstractCursor<unknown>) => void

/** Takes a cursor out of its client's active cursors; set in the class. */
let untrack: (cursor: AbstractCursor<unknown>) => void

/**
 * The official cursor's `once('close')` listener (`removeActiveCursor`). rumongo takes the cursor
 * out where its run ends, before `'close'`: this finds it gone.
 */
function leaveActiveCursors(this: AbstractCursor<unknown>): void {
  untrack(this)
}

/** Whether Node's methods made the cursor's listener table (`_events`, see below the class). */
function hasListenerTable(cursor: AbstractCursor<unknown>): boolean {
  return (cursor as { _events?: object })._events !== undefined
}

const emitEvent = EventEmitter.prototype.emit
const addListener = EventEmitter.prototype.on
const onceListener = EventEmitter.prototype.once

/**
 * A cursor over query results. Lazy: nothing is sent until the first read.
 * Also a thenable, so `await collection.find(filter)` resolves to the array of all documents.
 * An event emitter, as the official cursor (see `AbstractCursorEvents`, and below the class).
 */
export abstract class AbstractCursor<TSchema = Document>
  implements AsyncIterable<TSchema>, PromiseLike<TSchema[]>, ClientCursor
{
  /** The event emitted once the cursor is cleaned up (see `AbstractCursorEvents`). */
  static readonly CLOSE = 'close' as const
  readonly #source: CursorSource
  /** What each server batch is prepared as, and how it becomes this cursor's items. */
  readonly #format: BatchFormat
  #state: CursorState = 'new'
  #native: NativeCursor | null = null
  #decode: ((batch: DocumentBatch) => unknown[]) | null = null
  #buffer: unknown[] = []
  #position = 0
  /**
   * The position in `#buffer` of the next `UndecodableDocument` (a document that did not decode),
   * or Infinity: a read that reaches it throws its error and moves past it.
   */
  #nextUndecodable = Infinity
  #fetching: Promise<boolean> | null = null
  /**
   * Batches requested from the native cursor and not consumed yet, oldest first. The native cursor
   * serves requests in call order, one getMore at a time, and encodes each batch while the next
   * getMore runs.
   */
  #ahead: Promise<DocumentBatch | null>[] = []
  /** How many of the next native batches hold more of the server reply of the last one. */
  #replyPartsLeft = 0
  /** False once a batch said the server cursor is exhausted. */
  #serverHasMore = true
  /**
   * Whether the last batch the reader took said the server holds more: what `close()` goes by, as
   * the official driver, which fetches nothing ahead, does (a batch fetched ahead that says the
   * end, or fails, is one the reader has not seen).
   */
  #moreForReader = false
  #prefetchBatches = DEFAULT_PREFETCH
  /** Server batches sized for a bulk read when the caller sets no batch size (`readInBulk`). */
  #bulk = false
  #id: Long | undefined = undefined
  #transform: ((document: any) => any) | null = null
  /** Opened by toArray(), which keeps every document (see `collectsAll`). */
  #collectsAll = false
  /** Where the size of this query's documents is learned, until its first documents arrive. */
  #sizeKey: string | undefined = undefined
  /** The error that failed the cursor (state `failed`). */
  #failure: unknown = undefined
  #killed = false
  /**
   * The close after a failure found in JS (a map() transform threw, a read of all the documents
   * met one that does not decode), which `close()` and the failing read wait for: the official
   * cursor closes itself (killCursors, 'close') before that read rejects.
   */
  #killing: Promise<void> | undefined = undefined
  /**
   * Whether a read started the query in this run: `rewind()` of a cursor never read does nothing,
   * as the official one's (closed before its first read, it stays closed).
   */
  #opened = false
  /** A `rewind()` in progress: a read started meanwhile waits for it, then runs the query again. */
  #rewinding: Promise<void> | undefined = undefined
  /** Takes it out of its client's active cursors: done once it ends or closes. */
  #untrack: () => void = () => {}
  /** Whether this run emitted `'close'` (the official `hasEmittedClose`). */
  #closeEmitted = false

  protected constructor(source: CursorSource, format: BatchFormat = DOCUMENTS) {
    this.#source = source
    this.#format = format
    // From its creation, as the official cursor: its client's close() closes it even unread.
    this.#untrack = source.activeCursors.add(this)
  }

  /** The database and collection this cursor reads (`String(namespace)`: `db.collection`). */
  get namespace(): MongoDBNamespace {
    return MongoDBNamespace.fromString(this.#source.namespace)
  }

  /** The read preference the cursor's command is sent with (its own, else its collection's). */
  get readPreference(): ReadPreference {
    return ReadPreference.fromOptions(this.readOptions) ?? this.#source.readPreference
  }

  /** The read concern the cursor's command is sent with (its own, else its collection's), if any. */
  get readConcern(): ReadConcern | undefined {
    return ReadConcern.fromOptions(this.readOptions) ?? this.#source.readConcern
  }

  /** Sets the read preference (a mode or a `ReadPreference`); only before the first read. */
  withReadPreference(readPreference: ReadPreference | ReadPreferenceMode): this {
    this.throwIfInitialized()
    if (readPreference instanceof ReadPreference) {
      this.readOptions.readPreference = readPreference
    } else if (typeof readPreference === 'string') {
      this.readOptions.readPreference = ReadPreference.fromString(readPreference)
    } else {
      throw new MongoInvalidArgumentError(`Invalid read preference: ${String(readPreference)}`)
    }
    return this
  }

  /** Sets the read concern (a level, `{ level }` or a `ReadConcern`); only before the first read. */
  withReadConcern(readConcern: ReadConcernLike): this {
    this.throwIfInitialized()
    const resolved = ReadConcern.fromOptions({ readConcern })
    if (resolved) this.readOptions.readConcern = resolved
    return this
  }

  /** The options the cursor's command is built from, where `withReadPreference` and co. write. */
  protected abstract get readOptions(): Document

  /** True once the server cursor is gone before its end: closed while open, or after a failure. */
  get killed(): boolean {
    return this.#killed
  }

  /**
   * True once the run ended (failed, closed, by its client too, or the server's last batch taken)
   * and nothing is left buffered, as the official cursor's: what is buffered then (the last batch,
   * or what a close left, which `readBufferedDocuments()` still takes) is taken first.
   */
  get closed(): boolean {
    return this.#running() ? false : this.bufferedCount() === 0
  }

  /** The server cursor's id once the first batch arrived (`Long(0)` once the server has no more). */
  get id(): Long | undefined {
    return this.#id
  }

  /**
   * True when toArray() opens the cursor: its documents all stay alive until the end, so it keeps
   * 2,000-document batches. Smaller ones (see `batch_size.ts`) leave V8 more idle moments during
   * the query to run a young-generation collection that copies every document read so far: a
   * 10k-document find of 822-byte documents took 26-29 ms in 4 of 6 processes, against 15-23 ms.
   */
  protected get collectsAll(): boolean {
    return this.#collectsAll
  }

  /**
   * True once the first read of this run has started: options (and `map()`) can no longer change.
   * A cursor closed before its first read is not initialized, as the official one's (whose close()
   * leaves `initialized` false): its options can still be set, its reads say `null`.
   */
  protected get initialized(): boolean {
    return this.#opened
  }

  protected get source(): CursorSource {
    return this.#source
  }

  protected throwIfInitialized(): void {
    if (this.initialized) throw new MongoCursorInUseError()
  }

  /**
   * Sets a cursor flag, as the official driver's `addCursorFlag` (same checks, same errors). A find
   * sends `noCursorTimeout`; `partial` is taken and, as in the official driver, sent by no command
   * (it is a flag of the legacy OP_QUERY). A find takes `tailable` and `awaitData` as its options of
   * those names. rumongo has no exhaust cursors: setting `oplogReplay` or `exhaust` (or tailing an
   * aggregate) is refused.
   */
  addCursorFlag(flag: CursorFlag, value: boolean): this {
    this.throwIfInitialized()
    if (!CURSOR_FLAGS.includes(flag)) {
      throw new MongoInvalidArgumentError(`Flag ${String(flag)} is not one of ${CURSOR_FLAGS.join()}`)
    }
    if (typeof value !== 'boolean')
      throw new MongoInvalidArgumentError(`Flag ${flag} must be a boolean value`)
    if (flag === 'noCursorTimeout') this.applyNoCursorTimeout(value)
    else if ((flag === 'tailable' || flag === 'awaitData') && this.applyTailFlag(flag, value)) return this
    else if (value && flag !== 'partial') {
      throw new MongoInvalidArgumentError(`rumongo does not support the cursor flag "${flag}"`)
    }
    return this
  }

  /** Where a cursor kind takes `noCursorTimeout` (an aggregate, like the official one, ignores it). */
  protected applyNoCursorTimeout(_value: boolean): void {}

  /** Where a cursor kind takes `tailable` and `awaitData`: false where it has no tailing (refused). */
  protected applyTailFlag(_flag: 'tailable' | 'awaitData', _value: boolean): boolean {
    return false
  }

  /**
   * Runs the cursor-creating command (find / aggregate); returns its decode options, and the key
   * under which its document size is learned (see `batch_size.ts`), if any.
   */
  protected abstract openNative(): Promise<{
    opened: OpenedCursor
    bsonOptions: ResolvedBSONOptions
    sizeKey?: string
  }>

  /** The batch format this cursor reads (documents, lazy documents, JSON). */
  protected get format(): BatchFormat {
    return this.#format
  }

  /** What the native cursor prepares from each batch, as the cursor's format says. */
  protected batchOutput(bsonOptions: ResolvedBSONOptions): BatchOutput {
    return this.#format.output(bsonOptions)
  }

  /**
   * The documents of a cursor that runs no cursor command (a find or aggregate with the `explain`
   * option yields the explain output), or undefined to open the native cursor.
   */
  protected async openWithoutCursor(): Promise<unknown[] | undefined> {
    return undefined
  }

  /** Buffers the documents of `openWithoutCursor` as the cursor's only batch. */
  #serveAnswer(documents: unknown[]): boolean {
    if (this.#state !== 'opening') return false
    this.#serverHasMore = false
    this.#buffer = documents
    this.#position = 0
    this.#end('exhausted')
    return documents.length > 0
  }

  /** A new, unstarted cursor with the same query and options (transforms not included). */
  abstract clone(): AbstractCursor<TSchema>

  /** Number of documents buffered client-side and readable without I/O. */
  bufferedCount(): number {
    return this.#buffer.length - this.#position
  }

  /**
   * Takes up to `count` buffered documents (all by default) without I/O, as the server sent them:
   * the `map()` transform is not applied, as in the official driver.
   * @throws MongoInvalidArgumentError when `count` is not a non-negative integer.
   */
  readBufferedDocuments(count?: number): TSchema[] {
    if (count !== undefined && !(Number.isSafeInteger(count) && count >= 0)) {
      throw new MongoInvalidArgumentError(
        `readBufferedDocuments expects a non-negative integer, got ${describe(count)}`,
      )
    }
    return this.#takeBufferedDocuments(count) as TSchema[]
  }

  /** Up to `count` buffered documents (all by default), untransformed. */
  #takeBufferedDocuments(count?: number): unknown[] {
    const end =
      count === undefined ? this.#buffer.length : Math.min(this.#buffer.length, this.#position + count)
    // A document that does not decode: the official cursor takes the documents one by one and
    // throws at it, the ones before it taken and lost, the ones after it still buffered.
    if (this.#nextUndecodable < end) throw this.#passUndecodable()
    const documents = this.#buffer.slice(this.#position, end)
    this.#position = end
    return documents
  }

  /**
   * Every buffered document, through the `map()` transform, appended to `into` (what `toArray()`
   * and `nextBatch()` return).
   */
  #takeBufferedMapped(into: TSchema[]): void {
    const documents = this.#takeBufferedDocuments()
    if (this.#transform) {
      for (const document of documents) into.push(this.#mapped(document))
    } else {
      for (const document of documents) into.push(document as TSchema)
    }
  }

  /**
   * A document through the `map()` transform. One that throws, or maps a document to `null` (which
   * reads would take for the end of the results), closes the cursor first, as the official
   * driver's `transformDocument`.
   */
  #mapped(document: unknown): TSchema {
    try {
      const mapped = this.#transform!(document)
      if (mapped === null) throw new MongoAPIError(TRANSFORM_TO_NULL)
      return mapped
    } catch (error) {
      this.#closeAfterFailure()
      throw error
    }
  }

  /**
   * Moves past the next `UndecodableDocument` (and what is buffered before it) and returns its error:
   * the cursor stays open, the documents after it readable, as the official cursor's.
   */
  #passUndecodable(): unknown {
    const undecodable = this.#buffer[this.#nextUndecodable] as UndecodableDocument
    this.#position = this.#nextUndecodable + 1
    this.#nextUndecodable = this.#findUndecodable(this.#position)
    return undecodable.error
  }

  /** The position of the first `UndecodableDocument` in the buffer from `from`, or Infinity. */
  #findUndecodable(from: number): number {
    for (let index = from; index < this.#buffer.length; index++) {
      if (this.#buffer[index] instanceof UndecodableDocument) return index
    }
    return Infinity
  }

  /**
   * A map() transform threw (or a read of all the documents met one that does not decode): the
   * cursor closes, as the official one does (its server cursor killed, 'close'); the failing read
   * waits for it (`#killing`) before it rejects.
   */
  #closeAfterFailure(): void {
    this.#killing = this.close()
  }

  /**
   * How many server batches are fetched ahead of the one being read (default 2; 0 fetches only on
   * demand). Memory stays bounded by about `count + 2` batches however large the result, and
   * fetching stops while nobody reads. Call it before reading.
   */
  prefetch(count: number): this {
    this.throwIfInitialized()
    if (!Number.isSafeInteger(count) || count < 0) {
      throw new MongoInvalidArgumentError(`prefetch must be a non-negative integer, got ${describe(count)}`)
    }
    this.#prefetchBatches = count
    return this
  }

  /**
   * @internal Reads in server batches of about `BULK_BATCH_BYTES` (`batch_size.ts`) when the caller
   * sets no batch size: for reads whose batches JS only hands on to Rust. Call it before reading.
   */
  readInBulk(): this {
    this.throwIfInitialized()
    this.#bulk = true
    return this
  }

  /** Whether the cursor reads in bulk (see `readInBulk`). */
  protected get bulk(): boolean {
    return this.#bulk
  }

  /**
   * The documents of the next server batch (the rest of the current one first), or `null` once
   * there are no more: a consumer that handles one batch at a time. A large first batch is read
   * in parts internally (see `DocumentBatch.replyPartsLeft`) and still handed over whole here.
   * @throws MongoCursorExhaustedError once the cursor is closed, or after a read failed.
   */
  async nextBatch(): Promise<TSchema[] | null> {
    this.#throwIfFailed()
    if (this.#state === 'closed') throw new MongoCursorExhaustedError()
    if (this.bufferedCount() === 0 && !(await this.#fetchBatch())) return null
    const documents: TSchema[] = []
    this.#takeBufferedMapped(documents)
    // A large first reply arrives in parts (JS decodes one while Rust encodes the next): hand over
    // the whole server batch.
    while (this.#replyPartsLeft > 0 && (await this.#fetchBatch())) this.#takeBufferedMapped(documents)
    return documents
  }

  /**
   * The next document, or `null` when there are no more.
   * @throws MongoCursorExhaustedError once the cursor is closed while the server still held it
   * (closed before its first read or after its end, it says `null`, as in the official driver), or
   * after a read failed.
   */
  async next(): Promise<TSchema | null> {
    if (this.#rewinding) await this.#rewinding.catch(() => undefined)
    this.#throwIfFailed()
    if (this.#state === 'closed') {
      if (this.#killed) throw new MongoCursorExhaustedError()
      return null
    }
    try {
      do {
        const document = this.#takeBuffered()
        if (document !== NO_DOCUMENT) return document
      } while (await this.#fetchBatch())
    } catch (error) {
      // A transform that threw closes the cursor first (see `#closeAfterFailure`).
      await this.#killing
      throw error
    }
    return null
  }

  /** The next buffered document (transformed), or `NO_DOCUMENT` when reading it needs `next()`. */
  #takeBuffered(): TSchema | typeof NO_DOCUMENT {
    // Closed (by its client: the buffer stays): next() says what a closed cursor says.
    if (this.#state === 'failed' || this.#state === 'closed' || this.#position >= this.#buffer.length)
      return NO_DOCUMENT
    // It does not decode: its error, the cursor staying open (the next read takes the next one).
    if (this.#position === this.#nextUndecodable) throw this.#passUndecodable()
    const document = this.#buffer[this.#position++]
    // A transform that fails closes the cursor: its next read then throws MongoCursorExhaustedError
    // if the server cursor was killed, else reads what is buffered, as the official cursor's.
    return this.#transform ? this.#mapped(document) : (document as TSchema)
  }

  /**
   * Same as `next()` on a cursor that is not tailable (it always waits for the server's answer). On
   * a tailable cursor, as the official driver's: `null` when the next server batch is empty (no new
   * data yet), the cursor staying open.
   */
  async tryNext(): Promise<TSchema | null> {
    if (!this.tailable) return this.next()
    if (this.#rewinding) await this.#rewinding.catch(() => undefined)
    this.#throwIfFailed()
    if (this.#state === 'closed') {
      if (this.#killed) throw new MongoCursorExhaustedError()
      return null
    }
    try {
      return await this.#tryNextTailing()
    } catch (error) {
      // A transform that threw closes the cursor first (see `#closeAfterFailure`).
      await this.#killing
      throw error
    }
  }

  /** `tryNext()` of a tailable cursor: a buffered document, else at most one server batch's. */
  async #tryNextTailing(): Promise<TSchema | null> {
    const buffered = this.#takeBuffered()
    if (buffered !== NO_DOCUMENT) return buffered
    // A fetch another read started ends where that read wants: wait for it, then fetch once.
    if (this.#fetching) await this.#fetching.catch(() => undefined)
    const again = this.#takeBuffered()
    if (again !== NO_DOCUMENT) return again
    if (this.#state === 'open' || this.#state === 'new') {
      // Shared as any fetch is: a read that joins it reads on (true) unless the cursor ended.
      const fetching = this.#fetchNonEmptyBatch(true)
        .then((found) => found || this.#state === 'open')
        .finally(() => {
          if (this.#fetching === fetching) this.#fetching = null
        })
      this.#fetching = fetching
      await fetching
    }
    const fetched = this.#takeBuffered()
    return fetched === NO_DOCUMENT ? null : fetched
  }

  /** Whether the cursor is tailable (an empty batch does not end it; see `tryNext`). */
  protected get tailable(): boolean {
    return false
  }

  /**
   * Whether another document is available (`false` once closed).
   * @throws MongoCursorExhaustedError after a read failed.
   */
  async hasNext(): Promise<boolean> {
    if (this.#rewinding) await this.#rewinding.catch(() => undefined)
    this.#throwIfFailed()
    if (this.#state === 'closed') return false
    do {
      if (this.#position < this.#buffer.length) return true
    } while (await this.#fetchBatch())
    return false
  }

  /**
   * All remaining documents (none once closed).
   * @throws MongoCursorExhaustedError after a read failed: what is left is unknown, not empty.
   */
  async toArray(): Promise<TSchema[]> {
    if (this.#rewinding) await this.#rewinding.catch(() => undefined)
    this.#throwIfFailed()
    if (this.#state === 'closed') return []
    if (this.#state === 'new') this.#collectsAll = true
    const documents: TSchema[] = []
    try {
      do {
        this.#takeBufferedMapped(documents)
      } while (await this.#fetchBatch())
    } catch (error) {
      // The official toArray() reads through `for await`, which closes the cursor on any failure.
      await this.close()
      throw error
    }
    return documents
  }

  /** Calls `iterator` for each document; stops early when it returns `false`. */
  async forEach(iterator: (document: TSchema) => boolean | void): Promise<void> {
    checkFunction('forEach', iterator)
    for await (const document of this) {
      if (iterator(document) === false) break
    }
  }

  /**
   * Applies `transform` to each document, after any earlier transform. Call it before reading.
   * Returns this cursor, retyped.
   */
  map<T>(transform: (document: TSchema) => T): AbstractCursor<T> {
    this.throwIfInitialized()
    checkFunction('map', transform)
    const previous = this.#transform
    this.#transform = previous ? (document) => transform(previous(document)) : transform
    return this as unknown as AbstractCursor<T>
  }

  /**
   * Kills the server cursor if still open; resolves once the server
   * answered the killCursors (or after a bound: a server that does not answer does not hold it).
   * The getMores fetched ahead are dropped where they stand, and a read in flight resolves to
   * `null`. Idempotent. A failed cursor stays failed (its reads keep rejecting) until `rewind()`.
   */
  close(): Promise<void> {
    return this.#close(true)
  }

  /** `close()`; `emits`: whether it emits `'close'` (not when `rewind()` closes the run). */
  async #close(emits: boolean): Promise<void> {
    // Closed after a failure found in JS: once that close is done.
    if (this.#state === 'failed' || this.#state === 'closed') return this.#killing
    // Exhausted: nothing to kill, and what is buffered reads on, as after the official close().
    if (this.#state === 'exhausted') return
    // During the find or aggregate, close() does not wait for it (a server that does not answer
    // would hold it): what it opens is killed once it answers (see `#fetchNonEmptyBatch`).
    const moreForReader = this.#moreForReader || this.#serverCursorOpen()
    if (this.#state === 'open' && moreForReader) this.#kill()
    // An exhausted cursor said 'close' as its last batch was taken.
    emits &&= this.#running()
    this.#state = 'closed'
    this.#untrack()
    // What is buffered stays counted (and `readBufferedDocuments()` takes it), as in the official
    // cursor, which is `closed` once it is taken; reads say what a closed cursor says.
    this.#ahead = []
    const native = this.#native
    this.#native = null
    // A drained native cursor has nothing to kill: no round trip to the runtime (findOne, and
    // every result of one batch, closes its cursor).
    try {
      if (native && (this.#serverHasMore || moreForReader)) await callNative(() => native.close())
    } finally {
      // Once the kill is answered, as the official cursor (whose close() awaits its killCursors).
      if (emits) this.#emitClose()
    }
  }

  /**
   * Its client closed (`MongoClient.close()`, whose native close kills the server cursor), as the
   * official driver closes its active cursors: every read then throws `MongoCursorExhaustedError`
   * (`hasNext()` false, `toArray()` empty) even with documents buffered, which stay counted. A
   * cursor whose reader has its last batch is no longer active there, and reads on.
   */
  closedByClient(): void {
    // Never read: closed as close() closes it (with nothing to kill, at once, 'close' included);
    // reads then say what a cursor closed before its first read says (null).
    if (this.#state === 'new') {
      void this.#close(true)
      return
    }
    if (this.#state !== 'open' || (this.#id !== undefined && !this.#moreForReader)) return
    this.#kill()
    this.#state = 'closed'
    this.#native = null
    this.#ahead = []
    this.#untrack()
    closedByTheirClient.add(this)
    this.#emitClose()
  }

  /**
   * @internal Whether its client's close() closed it while the server held more (see
   * `closedByClient`): a reader built on it (an Arrow cursor) drops what it prepared ahead.
   */
  get closedByItsClient(): boolean {
    return closedByTheirClient.has(this)
  }

  /**
   * Closes the cursor and resets it so the next read runs the query again (and emits `'close'`
   * again at its end). As with the official driver (whose `rewind()` returns nothing), a read may
   * follow at once without awaiting it.
   */
  rewind(): Promise<void> {
    // Never read (closed before it, or not): nothing to reset, a closed cursor stays closed.
    if (!this.#opened) return Promise.resolve()
    // Listened to again until the new run's 'close', as the official rewind() tracks the cursor
    // again (at once: it returns nothing to await).
    this.#closeEmitted = false
    if (hasListenerTable(this) && !this.listeners('close').includes(leaveActiveCursors)) {
      onceListener.call(this, 'close', leaveActiveCursors)
    }
    const rewinding = this.#rewind()
    this.#rewinding = rewinding
    const done = () => {
      if (this.#rewinding === rewinding) this.#rewinding = undefined
    }
    rewinding.then(done, done)
    return rewinding
  }

  async #rewind(): Promise<void> {
    const fetching = this.#fetching
    // The official rewind() drops the run without its 'close' (nor a killCursors, which rumongo
    // sends: the server cursor would otherwise stay open until it times out).
    await this.#close(false)
    // A read in flight ends once closed (a getMore is dropped; a find, once it answers): it must
    // not touch the cursor once reset.
    await fetching?.catch(() => false)
    this.#state = 'new'
    this.#opened = false
    this.#untrack = this.#source.activeCursors.add(this)
    // What a close by the client left buffered.
    this.#buffer = []
    this.#position = 0
    this.#nextUndecodable = Infinity
    this.#collectsAll = false
    this.#failure = undefined
    this.#killing = undefined
    this.#serverHasMore = true
    this.#moreForReader = false
    this.#replyPartsLeft = 0
    this.#id = undefined
    this.#killed = false
    closedByTheirClient.delete(this)
  }

  /**
   * The server cursor is killed (closed or failed while open, or its client closed): `killed`, and
   * the id reads 0, as the official cursor's once it sends the killCursors.
   */
  #kill(): void {
    this.#killed = true
    this.#id = Long.ZERO
  }

  /** Whether the server still holds this cursor (a closing or failing read kills it). */
  #serverCursorOpen(): boolean {
    return this.#serverHasMore && this.#id !== undefined && !this.#id.isZero()
  }

  /** A Node `Readable` (object mode) of the documents; backpressure pauses reading batches. */
  stream(): Readable {
    return Readable.from(this)
  }

  /**
   * `for await` (and `forEach()`, `stream()`): the documents until the end, none once the cursor
   * is closed, even mid-loop (as in the official driver); a failed read rejects.
   */
  [Symbol.asyncIterator](): AsyncGenerator<TSchema, void, void> {
    const iterated = {
      next: () => (this.#state === 'closed' && !this.#rewinding ? Promise.resolve(null) : this.next()),
      close: () => this.close(),
    }
    return new CursorIterator(iterated, () => this.#takeBuffered())
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }

  /** Makes the cursor awaitable: resolves to `toArray()`. */
  then<TResult1 = TSchema[], TResult2 = never>(
    onfulfilled?: ((value: TSchema[]) => TResult1 | PromiseLike<TResult1>) | null,
    onrejected?: ((reason: unknown) => TResult2 | PromiseLike<TResult2>) | null,
  ): Promise<TResult1 | TResult2> {
    return this.toArray().then(onfulfilled, onrejected)
  }

  /** Fetches the next non-empty batch into the buffer; false when there is none. Concurrent callers share one fetch. */
  #fetchBatch(): Promise<boolean> {
    if (this.#fetching) return this.#fetching
    const fetching = this.#fetchNonEmptyBatch().finally(() => {
      if (this.#fetching === fetching) this.#fetching = null
    })
    this.#fetching = fetching
    return fetching
  }

  /** `once`: at most one server batch, even an empty one (a tailable cursor's `tryNext`). */
  async #fetchNonEmptyBatch(once = false): Promise<boolean> {
    if (this.#state === 'new') {
      this.#state = 'opening'
      this.#opened = true
      let firstBatch: DocumentBatch | undefined
      try {
        const answer = await this.openWithoutCursor()
        if (answer !== undefined) return this.#serveAnswer(answer)
        const { opened, bsonOptions, sizeKey } = await this.openNative()
        if (this.#state !== 'opening') {
          // close() during the open: what was just opened is killed, in the background.
          const native = opened.cursor
          if (native) void callNative(() => native.close()).catch(() => {})
          return false
        }
        // No native cursor: the first batch is the whole result.
        this.#native = opened.cursor ?? null
        this.#serverHasMore = this.#native !== null
        firstBatch = opened.firstBatch
        this.#decode = this.#format.decoder(bsonOptions)
        this.#sizeKey = sizeKey
      } catch (error) {
        this.#fail(error)
        throw error
      }
      this.#state = 'open'
      // The first batch came with the cursor: no round trip to the native side for it.
      if (firstBatch) this.#ahead.push(Promise.resolve(firstBatch))
    }
    while (this.#state === 'open') {
      const native = this.#native
      if (this.#ahead.length === 0) {
        // The last batch said so (or the first was the whole result): asking the native cursor
        // would only confirm it.
        if (!this.#serverHasMore || native === null) {
          this.#end('exhausted')
          return false
        }
        this.#request(native)
      }
      const request = this.#ahead.shift()!
      // A batch fetched ahead that the client's close() interrupted before this read asked for
      // it: the read began after close(), and fails as any operation after close() does.
      const closedBefore = interruptedAhead.has(request)
        ? new MongoNotConnectedError('Client must be connected before running operations')
        : undefined
      const batch = await request.catch((error: unknown) => {
        const failure = closedBefore ?? error
        this.#fail(failure)
        throw failure
      })
      if (this.#state !== 'open') return false
      if (batch === null) {
        this.#end('exhausted')
        return false
      }
      if (batch.cursorId !== undefined) this.#id = Long.fromBigInt(batch.cursorId)
      this.#moreForReader = batch.hasMore && this.#id !== undefined && !this.#id.isZero()
      this.#replyPartsLeft = batch.replyPartsLeft
      // The native cursor is drained (its server cursor too): requests made before this batch
      // arrived can only answer null, and none is made after it. The first batch comes with the
      // cursor, not from #request, so this is where a result of several batches learns it.
      if (!batch.hasMore) {
        this.#ahead = []
        this.#serverHasMore = false
      }
      // Pipelining: the next getMores and their tapes run in Rust while JS decodes this batch.
      if (native) this.#requestAhead(native)
      if (batch.count > 0) {
        if (this.#sizeKey !== undefined) {
          learnDocumentSize(this.#sizeKey, batch.count, batch.documentBytes)
          this.#sizeKey = undefined
        }
        try {
          this.#buffer = this.#decode!(batch)
          this.#nextUndecodable = Infinity
        } catch (error) {
          if (!(error instanceof DecodedWithFailures)) {
            this.#abandon(error)
            throw error
          }
          // A document that does not decode (invalid UTF-8, ...) fails the read that reaches it,
          // as the official driver decodes each document as it is read (see `#passUndecodable`).
          this.#buffer = error.documents
          this.#nextUndecodable = this.#findUndecodable(0)
        }
        this.#position = 0
      }
      // The reader has the server's last batch: the cursor is cleaned up now, as the official one
      // is when that batch arrives ('close' before the read resolves; `closed` once it is taken).
      if (!batch.hasMore) this.#end('exhausted')
      if (batch.count > 0) return true
      if (once) return false
    }
    return false
  }

  /**
   * Tops up the batches requested ahead while the server may have more. The rest of a reply in
   * parts is fetched already and does not count: the requests beyond it start the next getMores
   * while its parts are encoded.
   */
  #requestAhead(native: NativeCursor): void {
    const wanted = this.#prefetchBatches + this.#replyPartsLeft
    while (this.#serverHasMore && this.#ahead.length < wanted) this.#request(native)
  }

  /** Asks the native cursor for its next batch; a failure is handled by whoever awaits it. */
  #request(native: NativeCursor): void {
    const request = callNative(() => native.nextBatch())
    this.#ahead.push(request)
    const lastBatch = () => {
      if (this.#native === native) this.#serverHasMore = false
    }
    request.then(
      (batch) => {
        if (batch === null || !batch.hasMore) lastBatch()
      },
      // A prefetch the cursor never awaits (closed first) must not become an unhandled rejection.
      (error: unknown) => {
        lastBatch()
        if (error instanceof MongoClientClosedError) interruptedAhead.add(request)
      },
    )
  }

  /**
   * Stops reading: the native cursor is drained, or dropped after a failure. What is buffered
   * stays readable once exhausted.
   */
  #end(state: 'exhausted' | 'failed'): void {
    const emits = this.#running()
    this.#state = state
    this.#untrack()
    this.#native = null
    this.#ahead = []
    if (emits) this.#emitClose()
  }

  /** Whether the run has not ended yet (nor emitted `'close'`). */
  #running(): boolean {
    return this.#state === 'new' || this.#state === 'opening' || this.#state === 'open'
  }

  /**
   * The official cursor's `'close'`, once per run: every path that ends a run (`#end`, `close()`,
   * `closedByClient()`) leaves a state that does not emit again until `rewind()`. EventEmitter's
   * methods create the listener table with the first listener: a cursor nobody listens to has
   * none, and this costs a property read.
   */
  #emitClose(): void {
    this.#closeEmitted = true
    // No listener table: nobody listens (the cursor's own listeners come with the table).
    if (hasListenerTable(this)) emitEvent.call(this, 'close')
  }

  /**
   * The official cursor's own listeners, added with the listener table (the first call of an
   * EventEmitter method, see below the class): an `'error'` listener that does nothing, so an
   * `'error'` emitted on the cursor is not thrown, and the `once('close')` that takes it out of its
   * client's active cursors (present until `'close'`, again after `rewind()`): `listenerCount()`,
   * `eventNames()` and `listeners()` say what the official cursor's do.
   */
  #addOwnListeners(): void {
    addListener.call(this, 'error', ignoreError)
    if (!this.#closeEmitted) onceListener.call(this, 'close', leaveActiveCursors)
  }

  static {
    addOwnListeners = (cursor) => cursor.#addOwnListeners()
    untrack = (cursor) => cursor.#untrack()
  }

  /**
   * Marks the cursor failed by `error` (unless its owner closed it meanwhile). The native cursor has
   * dropped its server cursor already: a getMore is never retried, so a batch could be missing.
   */
  #fail(error: unknown): void {
    if (this.#state === 'closed') return
    if (this.#serverCursorOpen()) this.#kill()
    this.#failure = error
    this.#end('failed')
  }

  /**
   * Fails the cursor on an error found in JS, where the native cursor is still open: it is closed
   * (killed on the server) in the background.
   */
  #abandon(error: unknown): void {
    const native = this.#native
    // What is buffered stays counted, as in the official cursor (which closes itself here).
    this.#fail(error)
    if (native && this.#state === 'failed') this.#killing = callNative(() => native.close()).catch(() => {})
  }

  /**
   * After a failed read, reading on must not pass for the end of the results (the official driver
   * returns `null` or `[]` there in some cases): it rejects, with the first failure as the cause.
   */
  #throwIfFailed(): void {
    if (this.#state === 'failed') throw cursorFailedEarlier(this.#failure)
  }
}

// The cursor is an EventEmitter as the official one (`instanceof EventEmitter`, its methods), without
// running EventEmitter's constructor for each cursor: Node's methods create the listener table on
// the first listener (`_events` undefined until then), so a cursor nobody listens to costs nothing
// more (a find or findOne reads through a cursor). The official cursor's own listeners (see
// `#addOwnListeners`) are added by the first call of a method that adds, removes, counts, lists or
// emits events: before it, nobody could tell them missing.
Object.setPrototypeOf(AbstractCursor.prototype, TypedEventEmitter.prototype)
export interface AbstractCursor<TSchema = Document> extends TypedEventEmitter<AbstractCursorEvents> {}

/** The official cursor's `'error'` listener (`noop`). */
function ignoreError(): void {}

for (const method of [
  ...LISTENER_CHANGING_METHODS,
  'emit',
  'listeners',
  'rawListeners',
  'listenerCount',
  'eventNames',
] as const) {
  const inherited = TypedEventEmitter.prototype[method] as (...args: unknown[]) => unknown
  Object.defineProperty(AbstractCursor.prototype, method, {
    configurable: true,
    writable: true,
    value: function (this: AbstractCursor<unknown>, ...args: unknown[]) {
      if (!hasListenerTable(this)) addOwnListeners(this)
      return inherited.apply(this, args)
    },
  })
}

/** The cursors `closedByClient()` closed: beside them, no field on every cursor for it. */
const closedByTheirClient = new WeakSet<AbstractCursor<unknown>>()

/** What `CursorIterator` reads: any cursor's `next()` and `close()`. */
type IteratedCursor<T> = { next(): Promise<T | null>; close(): Promise<void> }

/** Batches requested ahead whose request the client's `close()` interrupted (see `#fetchNonEmptyBatch`). */
const interruptedAhead = new WeakSet<Promise<unknown>>()

/** What a cursor's `takeBuffered` returns when the next document needs `next()`. */
const NO_DOCUMENT = Symbol('no document')

/**
 * The iterator of `for await` over a cursor: the documents of `next()` until it returns null,
 * closing the cursor however the iteration ends (`break`, throw), as an async generator would.
 * A document already buffered costs one resolved promise here (`takeBuffered`), where an async
 * generator over `next()` cost three promises and several microtask turns: 0.18 -> 0.05 µs per
 * document. Calls are served in order, as a generator's: one made while another waits for I/O
 * waits behind it.
 */
export class CursorIterator<T> implements AsyncGenerator<T, void, void> {
  readonly #cursor: IteratedCursor<T>
  readonly #takeBuffered: () => T | typeof NO_DOCUMENT
  #done = false
  /** Calls run one after another, as a generator's (a call may wait for a batch, or a close). */
  readonly #calls = new InTurn()

  constructor(cursor: IteratedCursor<T>, takeBuffered: () => T | typeof NO_DOCUMENT = () => NO_DOCUMENT) {
    this.#cursor = cursor
    this.#takeBuffered = takeBuffered
  }

  next(): Promise<IteratorResult<T, void>> {
    if (this.#calls.idle) {
      if (this.#done) return Promise.resolve({ value: undefined, done: true })
      try {
        const document = this.#takeBuffered()
        if (document !== NO_DOCUMENT) return Promise.resolve({ value: document, done: false })
      } catch (error) {
        // A map() transform threw: the iteration ends, as a generator's would.
        return this.throw(error)
      }
    }
    return this.#calls.run(() => this.#read())
  }

  return(value?: void | PromiseLike<void>): Promise<IteratorResult<T, void>> {
    return this.#calls.run(async () => {
      await this.#finish()
      return { value: await value, done: true }
    })
  }

  throw(error: unknown): Promise<IteratorResult<T, void>> {
    return this.#calls.run(async () => {
      await this.#finish()
      throw error
    })
  }

  [Symbol.asyncIterator](): this {
    return this
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.return()
  }

  async #read(): Promise<IteratorResult<T, void>> {
    if (this.#done) return { value: undefined, done: true }
    let document: T | null
    try {
      document = await this.#cursor.next()
    } catch (error) {
      await this.#finish()
      throw error
    }
    if (document !== null) return { value: document, done: false }
    await this.#finish()
    return { value: undefined, done: true }
  }

  /** Ends the iteration and closes the cursor, once. */
  async #finish(): Promise<void> {
    if (this.#done) return
    this.#done = true
    await this.#cursor.close()
  }
}
