/**
 * Query results as JSON text, transcoded from BSON in Rust without building JS objects:
 * `Collection.findJson` (a Buffer) and `Collection.pipeJson` (streamed into a Writable).
 * @module
 */
import type { Writable } from 'node:stream'
import { BSON, EJSON, type Document } from 'bson'
import { DEFAULT_BSON_OPTIONS, describe, type ResolvedBSONOptions } from './bson.js'
import type { BatchDecode, CursorSource } from './cursor/abstract_cursor.js'
import { FindCursor } from './cursor/find_cursor.js'
import { MongoInvalidArgumentError, MongoOperationTimeoutError } from './errors.js'
import { BatchOutput, type DocumentBatch } from './native.cjs'
import type { FindOptions } from './options.js'

/**
 * The JSON rendering of the documents, each byte for byte what JavaScript gives for the official
 * driver's documents:
 * - `'relaxed'` (default): `EJSON.stringify(docs, { relaxed: true })`: ObjectId as `{"$oid":...}`,
 *   Date as `{"$date":"...Z"}` (years 1970-9999, else `{"$date":{"$numberLong":...}}`), numbers as
 *   JSON numbers, NaN/Infinity as `{"$numberDouble":"NaN"}`, Decimal128 as `{"$numberDecimal":...}`,
 *   Binary as `{"$binary":{"base64":...,"subType":...}}`. Parse it back with `EJSON.parse`.
 * - `'plain'`: `JSON.stringify(docs)`: ObjectId as its hex string, Date as its ISO string, Binary as
 *   base64, NaN/Infinity as `null`, Decimal128 as `{"$numberDecimal":...}`, an int64 beyond +-2^53
 *   as the official driver's `Long` serializes (`{"high":...,"low":...,"unsigned":false}`).
 *
 * Strings are escaped as `JSON.stringify` escapes them (U+2028/2029 stay raw, which JSON allows).
 */
export type JsonFormat = 'relaxed' | 'plain'

/** Options of `findJson` / `pipeJson`: those of `find`, plus the output format. */
export interface JsonOptions extends FindOptions {
  format?: JsonFormat
}

/** What `pipeJson` wrote. */
export interface PipeJsonResult {
  /** Documents written. */
  count: number
  /** Bytes of JSON written. */
  bytes: number
}

/** One server batch as JSON: its documents, comma-separated, in parts to write one after another. */
interface JsonChunk {
  parts: Buffer[]
  count: number
}

/** Decode options that would change the documents the JSON renders: not applicable here. */
const SHAPING_BSON_OPTIONS = [
  'raw',
  'promoteValues',
  'promoteLongs',
  'promoteBuffers',
  'useBigInt64',
  'bsonRegExp',
] as const

const OPEN = Buffer.from('[')
const COMMA = Buffer.from(',')
const CLOSE = Buffer.from(']')

/** A find whose batches arrive as JSON chunks. */
class JsonCursor extends FindCursor<JsonChunk> {
  readonly #format: JsonFormat

  constructor(source: CursorSource, filter: Document, options: JsonOptions) {
    const format = options.format ?? 'relaxed'
    if (format !== 'relaxed' && format !== 'plain') {
      throw new MongoInvalidArgumentError(`format must be 'relaxed' or 'plain', got ${describe(format)}`)
    }
    for (const name of SHAPING_BSON_OPTIONS) {
      if (options[name] !== undefined && options[name] !== DEFAULT_BSON_OPTIONS[name]) {
        throw new MongoInvalidArgumentError(
          `${name} does not apply to JSON output, which renders the official driver's default documents`,
        )
      }
    }
    super(source, filter, { ...options, raw: false })
    this.#format = format
  }

  protected override batchOutput(): BatchOutput {
    return this.#format === 'plain' ? BatchOutput.PlainJson : BatchOutput.RelaxedJson
  }

  protected override batchDecode(bsonOptions: ResolvedBSONOptions): BatchDecode {
    const toJson = batchJson(this.#format, bsonOptions)
    return (batch) => [{ parts: toJson(batch), count: batch.count }]
  }
}

/**
 * A native JSON batch's text (its documents, comma-separated) with the documents Rust deferred
 * rendered into place, in parts whose concatenation is the text.
 * @internal
 */
export function batchJson(
  format: JsonFormat,
  bsonOptions: ResolvedBSONOptions,
): (batch: DocumentBatch) => Buffer[] {
  const render = deferredRenderer(format, bsonOptions)
  return (batch) => jsonText(batch, render)
}

/**
 * Renders a document Rust left to js-bson (a rare type, or bytes js-bson decides on): decoded as
 * the official driver decodes it, then stringified, so the result (or the error) is the official one.
 */
function deferredRenderer(
  format: JsonFormat,
  bsonOptions: ResolvedBSONOptions,
): (bytes: Uint8Array) => string {
  const options = { validation: { utf8: bsonOptions.enableUtf8Validation } }
  return format === 'plain'
    ? (bytes) => JSON.stringify(BSON.deserialize(bytes, options))
    : (bytes) => EJSON.stringify(BSON.deserialize(bytes, options), { relaxed: true })
}

/** The batch's JSON text with its deferred documents rendered into place, in parts. */
function jsonText(batch: DocumentBatch, render: (bytes: Uint8Array) => string): Buffer[] {
  const deferred = batch.jsonDeferred!
  if (deferred.length === 0) return batch.json!
  // Rare (a type or key only js-bson renders): the parts are joined to splice the renderings in.
  const text = Buffer.concat(batch.json!)
  const parts: Buffer[] = []
  let copied = 0
  for (let index = 0; index < deferred.length; index += 3) {
    const [at, start, length] = [deferred[index], deferred[index + 1], deferred[index + 2]]
    parts.push(
      text.subarray(copied, at),
      Buffer.from(render(batch.documents!.subarray(start, start + length))),
    )
    copied = at
  }
  parts.push(text.subarray(copied))
  return [Buffer.concat(parts)]
}

/**
 * The parts of the JSON array of the cursor's documents; counts what it yields into `written`.
 * The first batch is read before the first part: a query the server refuses fails before any byte.
 */
async function* jsonArray(cursor: JsonCursor, written: PipeJsonResult): AsyncGenerator<Buffer> {
  const part = (bytes: Buffer) => {
    written.bytes += bytes.length
    return bytes
  }
  let chunk = await cursor.next()
  yield part(OPEN)
  for (; chunk !== null; chunk = await cursor.next()) {
    if (written.count > 0) yield part(COMMA)
    written.count += chunk.count
    for (const text of chunk.parts) yield part(text)
  }
  yield part(CLOSE)
}

/** @internal `Collection.findJson`. */
export async function findJson(
  source: CursorSource,
  filter: Document,
  options: JsonOptions,
): Promise<Buffer> {
  const cursor = new JsonCursor(source, filter, options)
  const parts: Buffer[] = []
  try {
    for await (const part of jsonArray(cursor, { count: 0, bytes: 0 })) parts.push(part)
  } finally {
    await cursor.close()
  }
  return Buffer.concat(parts)
}

/** Destinations a `pipeJson` is writing into: a second one would interleave its JSON. */
const receiving = new WeakSet<object>()

/** @internal `Collection.pipeJson`; `checkedFilter` throws on a bad filter. */
export async function pipeJson(
  source: CursorSource,
  checkedFilter: () => Document,
  options: JsonOptions,
  destination: NodeJS.WritableStream,
  /** The whole call's limit: the operation's `timeoutMS`, else the client's. */
  timeoutMS?: number,
): Promise<PipeJsonResult> {
  if (typeof destination?.write !== 'function' || typeof destination.on !== 'function') {
    throw new MongoInvalidArgumentError(`pipeJson needs a Writable stream, got ${describe(destination)}`)
  }
  const writable = destination as NodeJS.WritableStream & Partial<Writable>
  if (writable.writableEnded || writable.destroyed) {
    throw new MongoInvalidArgumentError('pipeJson needs an open Writable: the destination is already ended')
  }
  if (receiving.has(destination)) {
    throw new MongoInvalidArgumentError('pipeJson: another pipeJson is already writing into this destination')
  }
  // A bad filter or options, like a query the server refuses, fail before any byte is written: the
  // caller can still answer (an HTTP 400 with the error's message).
  const cursor = new JsonCursor(source, checkedFilter(), options)
  receiving.add(destination)
  const watch = watchDestination(writable, timeoutMS)
  const written: PipeJsonResult = { count: 0, bytes: 0 }
  const parts = jsonArray(cursor, written)
  try {
    for (;;) {
      const { value, done } = await watch.race(parts.next())
      if (done) break
      if (!writable.write(value)) await watch.race(watch.drained())
    }
    watch.ending = true
    writable.end()
    await watch.race(watch.finished())
    return written
  } catch (error) {
    // Killed before the rejection, unless time ran out: a getMore in flight (a hung server) would
    // hold it; the cursor is then killed once it is free.
    const closing = cursor.close().catch(() => {})
    if (!(error instanceof MongoOperationTimeoutError)) await closing
    // A partial array must not pass for a complete one. Destroyed without the error, which would
    // be an unhandled 'error' event on `destination`.
    if (written.bytes > 0) writable.destroy?.()
    throw error
  } finally {
    watch.dispose()
    receiving.delete(destination)
  }
}

/**
 * What ends a `pipeJson` early: the destination failing, closing, or ended by someone else, and
 * `timeoutMS` (the whole call, waits for a slow reader included). `race` rejects as soon as one
 * happens, whatever the raced promise is waiting for.
 */
function watchDestination(destination: NodeJS.WritableStream & Partial<Writable>, timeoutMS?: number) {
  let stop!: (error: unknown) => void
  const stopped = new Promise<never>((_resolve, reject) => (stop = reject))
  stopped.catch(() => {})
  const state = { ending: false }
  const onError = (error: unknown) => stop(error)
  const onClose = () => stop(prematureClose())
  const onFinish = () => {
    if (!state.ending) stop(prematureClose('the destination was ended by other code'))
  }
  destination.on('error', onError)
  destination.on('close', onClose)
  destination.on('finish', onFinish)
  const timer =
    timeoutMS && timeoutMS > 0
      ? setTimeout(
          () =>
            stop(new MongoOperationTimeoutError(`operation timed out: timeoutMS of ${timeoutMS} ms expired`)),
          timeoutMS,
        )
      : undefined
  const waits: (() => void)[] = []
  const once = (event: string) =>
    new Promise<void>((resolve) => {
      destination.once(event, resolve)
      waits.push(() => destination.removeListener(event, resolve))
    })
  return Object.assign(state, {
    race: <T>(promise: Promise<T>): Promise<T> => Promise.race([promise, stopped]),
    drained: () => once('drain'),
    finished: () => (destination.writableFinished ? Promise.resolve() : once('finish')),
    dispose() {
      clearTimeout(timer)
      destination.removeListener('error', onError)
      destination.removeListener('close', onClose)
      destination.removeListener('finish', onFinish)
      for (const remove of waits) remove()
    },
  })
}

/** Node's error for a stream that closed before the pipe ended (what `pipeline` rejects with). */
function prematureClose(message = 'Premature close'): Error {
  return Object.assign(new Error(message), { code: 'ERR_STREAM_PREMATURE_CLOSE' })
}
