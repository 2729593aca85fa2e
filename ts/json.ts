/**
 * Query results as JSON text, transcoded from BSON in Rust without building JS objects:
 * `Collection.findJson` (a Buffer) and `Collection.pipeJson` (streamed into a Writable). The
 * format itself (what Rust writes, how JS completes it) is `format/json.ts`.
 * @module
 */
import type { Writable } from 'node:stream'
import type { Document } from 'bson'
import { DEFAULT_BSON_OPTIONS, DOCUMENT_SHAPING_OPTIONS } from './bson.js'
import type { CursorSource } from './cursor/abstract_cursor.js'
import { FindCursor } from './cursor/find_cursor.js'
import { MongoInvalidArgumentError, MongoOperationTimeoutError } from './errors.js'
import { jsonFormat, type JsonChunk, type JsonFormat } from './format/json.js'
import type { FindOptions } from './options.js'

export type { JsonFormat } from './format/json.js'
import { describe } from './validate.js'

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

const OPEN = Buffer.from('[')
const COMMA = Buffer.from(',')
const CLOSE = Buffer.from(']')

/**
 * A find whose batches arrive as JSON chunks; fails at the call site on a format or a decode option
 * that does not apply.
 */
function jsonCursor(source: CursorSource, filter: Document, options: JsonOptions): FindCursor<JsonChunk> {
  const format = options.format ?? 'relaxed'
  if (format !== 'relaxed' && format !== 'plain') {
    throw new MongoInvalidArgumentError(`format must be 'relaxed' or 'plain', got ${describe(format)}`)
  }
  for (const name of DOCUMENT_SHAPING_OPTIONS) {
    if (options[name] !== undefined && options[name] !== DEFAULT_BSON_OPTIONS[name]) {
      throw new MongoInvalidArgumentError(
        `${name} does not apply to JSON output, which renders the official driver's default documents`,
      )
    }
  }
  return new FindCursor<JsonChunk>(source, filter, { ...options, raw: false }, jsonFormat(format))
}

/**
 * The parts of the JSON array of the cursor's documents; counts what it yields into `written`.
 * The first batch is read before the first part: a query the server refuses fails before any byte.
 */
async function* jsonArray(cursor: FindCursor<JsonChunk>, written: PipeJsonResult): AsyncGenerator<Buffer> {
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
  const cursor = jsonCursor(source, filter, options)
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
  const cursor = jsonCursor(source, checkedFilter(), options)
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
