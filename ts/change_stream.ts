/**
 * `watch()`: change streams with the official driver's API, events, options and resume rules
 * (the change-streams spec, as the official driver's `ChangeStream` and `ChangeStreamCursor`
 * implement it).
 *
 * A change stream is an aggregate whose first stage is `$changeStream`, read with getMores that
 * wait up to `maxAwaitTimeMS` for events. It runs on the native cursor every aggregate uses, so the
 * events are fetched and put on the tape off the JS thread as a find's documents are, with the
 * same values and types. What the resume rules need of each reply (`postBatchResumeToken`,
 * `operationTime`) comes with its batch (`DocumentBatch.resumeFields`). The resume logic is
 * here, in JS, a port of the official driver's: which errors resume, and from which token or
 * operation time, are then the official driver's by construction. (The crate's own change
 * streams were not used: they hand events over one at a time, deserialized into Rust structs,
 * and resume by their own rules.)
 *
 * Unlike other cursors, a change stream fetches nothing ahead by default: each getMore waits on the
 * server for new events, and one in flight when the stream resumes or closes would be a command the
 * official driver never sends. What overlaps instead is the encoding: a reply over 128 KiB comes in
 * parts (`nextBatch(true)`), so JS builds the first events while Rust encodes the rest. The
 * `prefetch: 1` option (rumongo's own) sends the next getMore while the reply in hand is read.
 * @module
 */
import { Readable } from 'node:stream'
import { BSON, Long, type Document, type Timestamp } from 'bson'
import { toBSON } from './bson.js'
import {
  callNative,
  MongoAPIError,
  MongoChangeStreamError,
  MongoCursorExhaustedError,
  MongoError,
  MongoErrorLabel,
  MongoInvalidArgumentError,
  MongoNetworkError,
  MongoRuntimeError,
  MongoServerSelectionError,
} from './errors.js'
import { TypedEventEmitter } from './events.js'
import { DOCUMENTS, documentReader } from './format/index.js'
import type { DocumentBatch, NativeCursor } from './native.cjs'
import { AGGREGATE, resolveOperationOptions, type AggregateOptions, type OperationSpec } from './options.js'
import type { ClientCursor } from './active_cursors.js'
import type { CursorSource } from './cursor/abstract_cursor.js'
import { describe, isPlainObject } from './validate.js'
import type { ChangeStreamDocument, ResumeToken } from './types/change_stream_document.js'

export type { ChangeStreamDocument, ResumeToken } from './types/change_stream_document.js'

/** A point in time on the server (a reply's `operationTime`). */
export type OperationTime = Timestamp

/** The options of `watch()`, as in the official driver. */
export interface ChangeStreamOptions extends Omit<AggregateOptions, 'explain'> {
  /** `'updateLookup'`, `'whenAvailable'` or `'required'`: post-images of updates and replaces. */
  fullDocument?: string
  /** `'whenAvailable'`, `'required'` or `'off'`: pre-images. */
  fullDocumentBeforeChange?: string
  /** How long each getMore waits on the server for new events (its `maxTimeMS`). */
  maxAwaitTimeMS?: number
  /** Starts after this event (an event's `_id`). */
  resumeAfter?: ResumeToken
  /** Starts after this event, even an `invalidate`. */
  startAfter?: ResumeToken
  /** Starts at this operation time. */
  startAtOperationTime?: OperationTime
  /** Events per server batch. */
  batchSize?: number
  /** DDL events too (`createIndexes`, `create`, ...) and their extra fields. */
  showExpandedEvents?: boolean
  /**
   * rumongo only: getMores sent ahead of the reader, 0 (default, as the official driver) or 1 (the
   * next getMore goes out while the events of the reply in hand are read). Not sent to the server.
   */
  prefetch?: number
  [key: string]: unknown
}

/** The events a change stream emits, as the official driver's. */
export type ChangeStreamEvents<TChange extends Document = ChangeStreamDocument> = {
  resumeTokenChanged(token: ResumeToken): void
  change(change: TChange): void
  error(error: Error): void
  close(): void
  end(): void
  init(response: unknown): void
  more(response?: unknown): void
  response(): void
}

/** The method of `Db` behind the client's `watch()` (the cluster scope is not a `Db`'s to offer). */
export const WATCH_CLUSTER = Symbol('watchCluster')

/** What a change stream watches: a collection, a database, or the whole deployment. */
export type ChangeStreamScope = 'collection' | 'database' | 'cluster'

/**
 * The options that go to the aggregate command, not into the `$changeStream` stage: the official
 * driver's deny list (`buildDisallowedChangeStreamOptions`). Every other option, an unknown one
 * included, goes into the stage, as there.
 */
const AGGREGATE_OPTIONS = new Set([
  'allowDiskUse',
  'authdb',
  'batchSize',
  'bsonRegExp',
  'bypassDocumentValidation',
  'bypassPinningCheck',
  'checkKeys',
  'collation',
  'comment',
  'cursor',
  'dbName',
  'enableUtf8Validation',
  'explain',
  'fieldsAsRaw',
  'hint',
  'ignoreUndefined',
  'let',
  'maxAwaitTimeMS',
  'maxTimeMS',
  'omitMaxTimeMS',
  'out',
  'promoteBuffers',
  'promoteLongs',
  'promoteValues',
  'raw',
  'rawData',
  'readConcern',
  'readPreference',
  'serializeFunctions',
  'session',
  'timeoutContext',
  'timeoutMS',
  'timeoutMode',
  'useBigInt64',
  'willRetryWrite',
  'writeConcern',
])

/** Where a change stream resumes from: one of these at most, per the spec. */
const RESUME_OPTIONS = ['resumeAfter', 'startAfter', 'startAtOperationTime'] as const

/**
 * The aggregate of a change stream. `explain` has no meaning for a stream; `timeoutMS` and
 * `timeoutMode` are dropped before this, as the official driver drops them (no-ops on a stream).
 */
const WATCH: OperationSpec = {
  ...AGGREGATE,
  name: 'watch',
  local: [],
  unsupported: [...AGGREGATE.unsupported, 'explain'],
}

const CHANGESTREAM_CLOSED_ERROR = 'ChangeStream is closed'
const NO_RESUME_TOKEN_ERROR = 'A change stream document has been received that lacks a resume token (_id).'

const CURSOR_NOT_FOUND = 43

/** What reads the events of no batch (never called: nothing is left to read). */
const NO_EVENT = (): Document => {
  throw new MongoRuntimeError('rumongo: read past the events of a change stream batch')
}

/**
 * Whether a change stream resumes after `error`: the official driver's `isResumableError` for the
 * servers it supports (4.4 and later, wire version 9+): a network or server-selection error, a
 * server error labelled `ResumableChangeStreamError`, or CursorNotFound. (Its list of codes is for
 * older servers, which label nothing; rumongo does not read the server's wire version.)
 */
function isResumableError(error: unknown): boolean {
  if (!(error instanceof MongoError)) return false
  if (error instanceof MongoNetworkError || error instanceof MongoServerSelectionError) return true
  if (error.code === CURSOR_NOT_FOUND) return true
  return error.hasErrorLabel(MongoErrorLabel.ResumableChangeStreamError)
}

/** The `prefetch` option: getMores sent ahead of the reader (see `ChangeStreamCursor`). */
function checkPrefetch(value: unknown): number {
  if (value === undefined) return 0
  if (value !== 0 && value !== 1) {
    throw new MongoInvalidArgumentError(`prefetch of a change stream must be 0 or 1, got ${describe(value)}`)
  }
  return value
}

/** A batch asked of the native cursor and not taken yet. */
interface Requested {
  batch: Promise<DocumentBatch | null>
  /** A part of the reply in hand (fetched already), not the first part of a reply. */
  part: boolean
}

/** The fields of a reply a stream resumes from (`DocumentBatch.resumeFields`). */
interface ResumeFields {
  postBatchResumeToken?: ResumeToken
  operationTime?: Timestamp
}

/**
 * One aggregate of a change stream and its getMores: the official `ChangeStreamCursor`. A resume
 * replaces it with a new one built from `resumeOptions`.
 */
class ChangeStreamCursor implements ClientCursor {
  readonly #source: CursorSource
  readonly #scope: ChangeStreamScope
  readonly #pipeline: Document[]
  /** The options it was built with (the official `changeStreamCursorOptions`). */
  readonly #options: ChangeStreamOptions
  /** getMores sent ahead of the reader: 0 or 1 (the `prefetch` option). */
  readonly #prefetch: number
  #emit: (event: 'resumeTokenChanged' | 'close', token?: ResumeToken) => void = () => {}
  #resumeToken: ResumeToken = null
  #startAtOperationTime: Timestamp | null
  /** Whether an event was returned (then `startAfter` resumes as `resumeAfter`). */
  #hasReceived = false
  #postBatchResumeToken: ResumeToken | undefined = undefined
  /**
   * `killed`: its client closed (`MongoClient.close()`), which killed the server cursor. The events
   * buffered stay counted (`bufferedCount()`), but every read throws `MongoCursorExhaustedError`,
   * as the official cursor's, whose id is then 0.
   */
  #state: 'new' | 'open' | 'dead' | 'killed' | 'closed' = 'new'
  /** Takes it out of its client's active cursors (see `#open`). */
  #untrack: () => void = () => {}
  #native: NativeCursor | null = null
  #decode: ((batch: DocumentBatch) => () => Document) | null = null
  /**
   * The next event of the batch in hand, decoded when it is read: an event then lives only until
   * the application drops it, so the young-generation collections that run meanwhile find few
   * survivors (decoding the whole batch at once kept up to a batch of events alive through them).
   */
  #read: () => Document = NO_EVENT
  /** Events of the batch in hand not read yet. */
  #left = 0
  /**
   * How many of the next native batches hold more of the reply already fetched, and how many
   * events they hold: a reply over 128 KiB is handed over in parts, so that JS decodes the first
   * events while the rest is encoded (`nextBatch(true)`); the stream still counts and resumes by
   * the whole reply, as the official driver's.
   */
  #partsLeft = 0
  #partsEventsLeft = 0
  /**
   * The batches asked of the native cursor and not taken yet, in the order it hands them over:
   * the other parts of the reply in hand, asked for as soon as its first part came (fetched
   * already: no command goes to the server), then, with `prefetch: 1`, the next reply, whose
   * getMore goes out then. A batch read ahead is only taken (its events counted, its
   * `postBatchResumeToken` kept) when the reader gets to it, so the resume token, `bufferedCount()`
   * and a resume after its getMore failed are those of a stream that sent it then; `close()` and a
   * resume drop it unread. The native cursor answers requests in the order they are made, a reply's
   * parts before the next getMore: asked for in that order, each request is known for what it gets
   * (a part, or the first part of the next reply, after which the next getMore may go out), so one
   * getMore at most is ahead of the reader.
   */
  #requested: Requested[] = []
  /** Until the first reply is read whole: its `operationTime` is where an unset stream starts. */
  #firstReply = true
  #id: Long | undefined = undefined
  #closeEmitted = false
  /** The fetch in progress, which concurrent reads share. */
  #fetching: Promise<void> | null = null

  constructor(
    source: CursorSource,
    scope: ChangeStreamScope,
    pipeline: Document[],
    options: ChangeStreamOptions,
    prefetch: number,
  ) {
    this.#source = source
    this.#scope = scope
    this.#pipeline = pipeline
    this.#options = options
    this.#prefetch = prefetch
    this.#startAtOperationTime = options.startAtOperationTime ?? null
    // Set before anyone listens, as in the official constructor (no resumeTokenChanged).
    if (options.startAfter) this.#resumeToken = options.startAfter
    else if (options.resumeAfter) this.#resumeToken = options.resumeAfter
  }

  /** Where `resumeTokenChanged` and `close` go (the change stream's emitter). */
  listen(emit: (event: 'resumeTokenChanged' | 'close', token?: ResumeToken) => void): void {
    this.#emit = emit
  }

  get resumeToken(): ResumeToken {
    return this.#resumeToken
  }

  #setResumeToken(token: ResumeToken): void {
    this.#resumeToken = token
    this.#emit('resumeTokenChanged', token)
  }

  /** The server cursor's id once the aggregate answered. */
  get id(): Long | undefined {
    return this.#id
  }

  get closed(): boolean {
    if (this.#state === 'closed') return true
    return (this.#state === 'dead' || this.#state === 'killed') && this.bufferedCount() === 0
  }

  /** The events of the reply in hand not returned yet, as the official driver counts them. */
  bufferedCount(): number {
    return this.#left + this.#partsEventsLeft
  }

  /** The next event of the batch in hand (there is one). */
  #shift(): Document {
    this.#left -= 1
    return this.#read()
  }

  /** The options of the cursor that resumes this one (the spec's resume rules). */
  get resumeOptions(): ChangeStreamOptions {
    const options: ChangeStreamOptions = { ...this.#options }
    for (const key of RESUME_OPTIONS) delete options[key]
    if (this.#resumeToken != null) {
      if (this.#options.startAfter && !this.#hasReceived) options.startAfter = this.#resumeToken
      else options.resumeAfter = this.#resumeToken
    } else if (this.#startAtOperationTime != null) {
      options.startAtOperationTime = this.#startAtOperationTime
    }
    return options
  }

  /**
   * Remembers the token of an event just returned: the batch's token once the batch (the whole
   * reply) is read, else the event's `_id`.
   */
  cacheResumeToken(token: ResumeToken): void {
    if (this.bufferedCount() === 0 && this.#postBatchResumeToken) {
      this.#setResumeToken(this.#postBatchResumeToken)
    } else {
      this.#setResumeToken(token)
    }
    this.#hasReceived = true
  }

  /** The next event, waiting for one (getMores until one comes); null once the cursor is dead. */
  async next(): Promise<Document | null> {
    this.#throwIfClosed()
    for (;;) {
      if (this.#left > 0) return this.#shift()
      if (this.#state === 'dead') return null
      await this.#fetch()
      if (this.#state === 'closed') return null
      this.#throwIfClosed()
    }
  }

  /**
   * The next buffered event, without waiting: null when none is buffered (or the cursor closed,
   * which `next()` reports). Lets the stream return an event of the current batch with no await
   * in between (each costs the event loop a turn of the microtask queue, per event).
   */
  takeBuffered(): Document | null {
    if (this.#state === 'closed' || this.#state === 'killed' || this.#left === 0) return null
    return this.#shift()
  }

  /** The next event if one is buffered or comes with one more batch, else null. */
  async tryNext(): Promise<Document | null> {
    this.#throwIfClosed()
    if (this.#left > 0) return this.#shift()
    if (this.#state === 'dead') return null
    await this.#fetch()
    return this.#left > 0 ? this.#shift() : null
  }

  async hasNext(): Promise<boolean> {
    for (;;) {
      // As the official cursor's once its id is 0: no more, even with events buffered.
      if (this.#state === 'closed' || this.#state === 'killed') return false
      if (this.bufferedCount() > 0) return true
      if (this.#state !== 'new' && this.#state !== 'open') return false
      await this.#fetch()
    }
  }

  /** After close() or the client's, reading is an error, as the official cursor's. */
  #throwIfClosed(): void {
    if (this.#state === 'closed' || this.#state === 'killed') throw new MongoCursorExhaustedError()
  }

  /** Runs the aggregate and/or one getMore (or reads the next part of the first reply). */
  #fetch(): Promise<void> {
    if (this.#fetching) return this.#fetching
    const fetching = this.#fetchOnce().finally(() => {
      if (this.#fetching === fetching) this.#fetching = null
    })
    this.#fetching = fetching
    return fetching
  }

  /** As the official cursor: the aggregate, then a getMore at once if its batch was empty. */
  async #fetchOnce(): Promise<void> {
    if (this.#state === 'new') {
      await this.#open()
      if (this.bufferedCount() > 0 || !this.#readable()) return
    }
    await this.#getMore()
  }

  /** Whether the cursor may still return events (not closed, failed or ended). */
  #readable(): boolean {
    return this.#state === 'open'
  }

  async #open(): Promise<void> {
    this.#state = 'open'
    const stage: Document = {}
    const aggregate: Document = {}
    for (const [key, value] of Object.entries(this.#options)) {
      if (value === undefined) continue
      if (AGGREGATE_OPTIONS.has(key)) aggregate[key] = value
      else stage[key] = value
    }
    if (this.#scope === 'cluster') stage.allChangesForCluster = true
    delete aggregate.timeoutMS
    delete aggregate.timeoutMode
    const { command, bson } = resolveOperationOptions(WATCH, aggregate, this.#source.bsonOptions)
    const pipeline = [{ $changeStream: stage }, ...this.#pipeline]
    let opened
    try {
      const target =
        this.#scope === 'collection'
          ? await this.#source.nativeCollection()
          : await this.#source.nativeDatabase()
      opened = await callNative(() =>
        target.aggregate(toBSON({ pipeline }, bson), toBSON(command, bson), DOCUMENTS.output(bson)),
      )
    } catch (error) {
      this.#died()
      throw error
    }
    if (this.#state !== 'open') {
      // close() during the aggregate: what it opened is killed in the background.
      const native = opened.cursor
      if (native) void callNative(() => native.close()).catch(() => {})
      return
    }
    this.#native = opened.cursor ?? null
    // Open on the server: the client's close() closes it, as the official driver's.
    if (this.#native) this.#untrack = this.#source.activeCursors.add(this)
    this.#decode = documentReader(bson)
    this.#take(opened.firstBatch ?? null)
  }

  async #getMore(): Promise<void> {
    const native = this.#native
    if (native === null) {
      this.#died()
      return
    }
    const requested = this.#requested.shift()
    let batch: DocumentBatch | null
    try {
      batch = await (requested?.batch ?? callNative(() => native.nextBatch(true)))
    } catch (error) {
      // The native cursor is gone (killed on the server), as the official cursor after a failure.
      if (this.#state === 'open') this.#died()
      throw error
    }
    if (this.#state !== 'open') return
    this.#take(batch, requested?.part ?? false)
  }

  /** Asks the native cursor for its next batch (a part of the reply in hand, or a getMore). */
  #request(native: NativeCursor, part: boolean): void {
    const batch = callNative(() => native.nextBatch(true))
    // Read (and its failure thrown) when the reader gets to it; dropped unread if the cursor closes first.
    batch.catch(() => {})
    this.#requested.push({ batch, part })
  }

  /** Takes a batch: its events, and what the resume rules need from its reply. */
  #take(batch: DocumentBatch | null, part = false): void {
    if (batch === null) {
      this.#died()
      return
    }
    if (batch.cursorId !== undefined) this.#id = Long.fromBigInt(batch.cursorId)
    this.#partsLeft = batch.replyPartsLeft
    this.#partsEventsLeft = batch.replyDocumentsLeft
    const native = this.#native
    if (!part && native !== null) {
      for (let left = this.#partsLeft; left > 0; left--) this.#request(native, true)
      if (this.#prefetch > 0 && batch.cursorId !== undefined && batch.cursorId !== 0n)
        this.#request(native, false)
    }
    const fields: ResumeFields | undefined = batch.resumeFields
      ? (BSON.deserialize(batch.resumeFields) as ResumeFields)
      : undefined
    if (this.#firstReply && this.#partsLeft === 0) {
      this.#firstReply = false
      if (
        this.#startAtOperationTime == null &&
        this.#options.resumeAfter == null &&
        this.#options.startAfter == null &&
        fields?.operationTime
      ) {
        this.#startAtOperationTime = fields.operationTime
      }
    }
    this.#read = batch.count > 0 ? this.#decode!(batch) : NO_EVENT
    this.#left = batch.count
    if (fields?.postBatchResumeToken) {
      this.#postBatchResumeToken = fields.postBatchResumeToken
      if (batch.count === 0) this.#setResumeToken(fields.postBatchResumeToken)
    }
    if (!batch.hasMore) {
      // The server closed the cursor (after an `invalidate`): nothing to kill.
      this.#native = null
      this.#state = 'dead'
      this.#emitClose()
    }
  }

  /** The cursor failed or ended: its native cursor dropped it (killed on the server if open). */
  #died(): void {
    this.#native = null
    this.#state = 'dead'
    this.#read = NO_EVENT
    this.#left = 0
    this.#partsEventsLeft = 0
    this.#requested = []
    this.#emitClose()
  }

  #emitClose(): void {
    // Done with the server cursor: its client's close() has nothing left to close.
    this.#untrack()
    if (this.#closeEmitted) return
    this.#closeEmitted = true
    this.#emit('close')
  }

  /** Its client closed: the native client's close kills the server cursor. */
  closedByClient(): void {
    if (this.#state !== 'open') return
    this.#native = null
    this.#requested = []
    this.#state = 'killed'
    this.#emitClose()
  }

  /** Kills the server cursor if open; resolves once the server answered (or after a bound). */
  async close(): Promise<void> {
    if (this.#state === 'closed') return
    const native = this.#native
    this.#native = null
    this.#state = 'closed'
    this.#read = NO_EVENT
    this.#left = 0
    this.#partsEventsLeft = 0
    this.#requested = []
    try {
      if (native) await callNative(() => native.close())
    } finally {
      this.#emitClose()
    }
  }
}

/**
 * A change stream: an async iterator (`for await`, `next`, `tryNext`, `hasNext`) or an event
 * emitter (`change`, `error`, `close`, `resumeTokenChanged`), not both, as in the official
 * driver. It resumes by itself after a resumable error, from the last event's token (or the
 * batch's `postBatchResumeToken`), else from the operation time the stream started at.
 */
export class ChangeStream<
  TSchema extends Document = Document,
  TChange extends Document = ChangeStreamDocument<TSchema>,
> extends TypedEventEmitter<ChangeStreamEvents<TChange>> {
  static readonly RESPONSE = 'response' as const
  static readonly MORE = 'more' as const
  static readonly INIT = 'init' as const
  static readonly CLOSE = 'close' as const
  static readonly CHANGE = 'change' as const
  static readonly END = 'end' as const
  static readonly ERROR = 'error' as const
  static readonly RESUME_TOKEN_CHANGED = 'resumeTokenChanged' as const

  readonly pipeline: Document[]
  readonly options: ChangeStreamOptions
  readonly #source: CursorSource
  readonly #scope: ChangeStreamScope
  /** getMores sent ahead of the reader (the `prefetch` option, rumongo's own). */
  readonly #prefetch: number
  #cursor: ChangeStreamCursor
  #isClosed = false
  #mode: false | 'iterator' | 'emitter' = false
  /** Whether the emitter loop runs (see `#streamEvents`). */
  #pumping = false

  /** @internal Created by `watch()` on a collection, a database or a client. */
  constructor(
    source: CursorSource,
    scope: ChangeStreamScope,
    pipeline: Document[],
    options: ChangeStreamOptions,
  ) {
    super()
    if (!Array.isArray(pipeline)) {
      throw new MongoInvalidArgumentError(`watch pipeline must be an array, got ${describe(pipeline)}`)
    }
    for (const stage of pipeline) {
      if (!isPlainObject(stage)) {
        throw new MongoInvalidArgumentError(`every pipeline stage must be an object, got ${describe(stage)}`)
      }
    }
    if (options != null && !isPlainObject(options)) {
      throw new MongoInvalidArgumentError(`watch options must be an object, got ${describe(options)}`)
    }
    const { prefetch, ...streamOptions } = options ?? {}
    this.#prefetch = checkPrefetch(prefetch)
    this.pipeline = pipeline
    this.options = streamOptions
    this.#source = source
    this.#scope = scope
    // Options the aggregate refuses are refused here, at watch(), not at the first read.
    resolveOperationOptions(WATCH, aggregateOnly(this.options), source.bsonOptions)
    this.#cursor = this.#createCursor(this.options)
  }

  /** The token the stream resumes from: the last event's, or the last batch's. */
  get resumeToken(): ResumeToken {
    return this.#cursor.resumeToken
  }

  /** Events buffered client-side. */
  bufferedCount(): number {
    return this.#cursor.bufferedCount()
  }

  get closed(): boolean {
    return this.#isClosed || this.#cursor.closed
  }

  /** Whether an event is available (waits for one, resuming after resumable errors). */
  async hasNext(): Promise<boolean> {
    this.#setIsIterator()
    for (;;) {
      try {
        return await this.#cursor.hasNext()
      } catch (error) {
        await this.#recoverOrClose(error)
      }
    }
  }

  /** The next event (waits for one, resuming after resumable errors). */
  async next(): Promise<TChange> {
    this.#setIsIterator()
    for (;;) {
      try {
        const change = this.#cursor.takeBuffered() ?? (await this.#cursor.next())
        return this.#processChange(change)
      } catch (error) {
        await this.#recoverOrClose(error)
      }
    }
  }

  /** The next event if one is buffered or comes with the next batch, else null. */
  async tryNext(): Promise<TChange | null> {
    this.#setIsIterator()
    for (;;) {
      try {
        const change = await this.#cursor.tryNext()
        return change ? this.#processChange(change) : null
      } catch (error) {
        await this.#recoverOrClose(error)
      }
    }
  }

  /** Iterator mode: resumes after a resumable error, else closes the stream and rethrows. */
  async #recoverOrClose(error: unknown): Promise<void> {
    try {
      await this.#processErrorIteratorMode(error, this.#cursor.id != null)
    } catch (failure) {
      await this.close().catch(() => {})
      throw failure
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<TChange, void, void> {
    if (this.closed) return
    try {
      for (;;) {
        // An event of the batch in hand is yielded as next() would return it, without the promise
        // of a next() call in between (per event, as many turns of the microtask queue).
        this.#setIsIterator()
        const buffered = this.#cursor.takeBuffered()
        if (buffered === null) {
          yield await this.next()
          continue
        }
        let change: TChange
        try {
          change = this.#processChange(buffered)
        } catch (error) {
          await this.#recoverOrClose(error)
          continue
        }
        yield change
      }
    } finally {
      await this.close().catch(() => {})
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }

  /** Closes the stream and kills its server cursor. */
  async close(): Promise<void> {
    this.#isClosed = true
    await this.#cursor.close()
  }

  /** A Node `Readable` (object mode) of the events. */
  stream(): Readable & AsyncIterable<TChange> {
    if (this.closed) throw new MongoChangeStreamError(CHANGESTREAM_CLOSED_ERROR)
    return Readable.from(this)
  }

  /** Starts emitting `change` events when the first listener comes (as the official driver). */
  protected override listenersChanged(): void {
    if (this.listenerCount('change') > 0 && !this.#pumping) {
      this.#setIsEmitter()
      void this.#streamEvents()
    }
  }

  /** Emitter mode: reads events while someone listens to `change`. */
  async #streamEvents(): Promise<void> {
    this.#pumping = true
    try {
      while (!this.#isClosed && this.listenerCount('change') > 0) {
        let change: Document | null
        const cursor = this.#cursor
        try {
          change = await cursor.next()
        } catch (error) {
          if (!(await this.#processErrorStreamMode(error, cursor.id != null))) return
          continue
        }
        if (this.#isClosed || cursor !== this.#cursor) continue
        if (change === null) {
          this.#closeWithError(new MongoRuntimeError(CHANGESTREAM_CLOSED_ERROR))
          return
        }
        try {
          this.emit('change', this.#processChange(change))
        } catch (error) {
          // A 'change' listener threw (or the event has no resume token): 'error'. Heard, the stream
          // reads on. Unheard, the official stream is destroyed by it: its cursor closes (killed,
          // 'close'), then the error reaches the process.
          if (this.listenerCount('error') === 0) await this.close().catch(() => {})
          this.#emitError(error)
        }
      }
    } finally {
      this.#pumping = false
    }
  }

  /** Emitter mode's error: resumes (true) or emits `error` and closes (false). */
  async #processErrorStreamMode(error: unknown, cursorInitialized: boolean): Promise<boolean> {
    if (this.#isClosed) return false
    if (cursorInitialized && isResumableError(error)) {
      await this.#cursor.close().catch(() => {})
      try {
        this.#resume()
        return true
      } catch {
        this.#closeWithError(error)
        return false
      }
    }
    this.#closeWithError(error)
    return false
  }

  #closeWithError(error: unknown): void {
    this.#emitError(error)
    this.close().catch(() => {})
  }

  /**
   * Emits `error`. With no listener, EventEmitter throws the error: it then reaches the process as
   * an uncaught exception, as the official stream's does (emitted from its cursor stream's
   * 'error'), instead of rejecting the emitter loop's promise (an unhandled rejection, which
   * `--unhandled-rejections=warn` only logs, and which left the stream open).
   */
  #emitError(error: unknown): void {
    try {
      this.emit('error', error as Error)
    } catch (unheard) {
      process.nextTick(() => {
        throw unheard
      })
    }
  }

  async #processErrorIteratorMode(error: unknown, cursorInitialized: boolean): Promise<void> {
    if (this.#isClosed) throw new MongoAPIError(CHANGESTREAM_CLOSED_ERROR)
    if (cursorInitialized && isResumableError(error)) {
      await this.#cursor.close().catch(() => {})
      this.#resume()
    } else {
      await this.close().catch(() => {})
      throw error
    }
  }

  /** A new cursor from where the old one was (the server is selected by its aggregate). */
  #resume(): void {
    this.#cursor = this.#createCursor(this.#cursor.resumeOptions)
  }

  #createCursor(options: ChangeStreamOptions): ChangeStreamCursor {
    const cursor = new ChangeStreamCursor(this.#source, this.#scope, this.pipeline, options, this.#prefetch)
    // Forwarded with the cursor event's argument, as the official driver forwards them (its
    // listeners of `close` get one argument, `undefined`).
    cursor.listen((event, token) => (this.emit as (event: string, token: unknown) => boolean)(event, token))
    return cursor
  }

  #processChange(change: Document | null): TChange {
    if (this.#isClosed) throw new MongoAPIError(CHANGESTREAM_CLOSED_ERROR)
    // The server closed the cursor (after an `invalidate`): the stream is over.
    if (change == null) throw new MongoRuntimeError(CHANGESTREAM_CLOSED_ERROR)
    if (!change._id) throw new MongoChangeStreamError(NO_RESUME_TOKEN_ERROR)
    this.#cursor.cacheResumeToken(change._id)
    // A resume goes by the token from now on (the official driver wipes it here too).
    this.options.startAtOperationTime = undefined
    return change as TChange
  }

  #setIsEmitter(): void {
    if (this.#mode === 'iterator') {
      throw new MongoAPIError(
        'ChangeStream cannot be used as an EventEmitter after being used as an iterator',
      )
    }
    this.#mode = 'emitter'
  }

  #setIsIterator(): void {
    if (this.#mode === 'emitter') {
      throw new MongoAPIError(
        'ChangeStream cannot be used as an iterator after being used as an EventEmitter',
      )
    }
    this.#mode = 'iterator'
  }
}

/** The options of a stream that go to its aggregate command. */
function aggregateOnly(options: ChangeStreamOptions): Document {
  const aggregate: Document = {}
  for (const [key, value] of Object.entries(options)) {
    if (AGGREGATE_OPTIONS.has(key) && key !== 'timeoutMS' && key !== 'timeoutMode') aggregate[key] = value
  }
  return aggregate
}
