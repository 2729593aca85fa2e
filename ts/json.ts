/**
 * Query results as JSON text, transcoded from BSON in Rust without building JS objects:
 * `Collection.findJson` (a Buffer) and `Collection.pipeJson` (streamed into a Writable). The
 * format itself (what Rust writes, how JS completes it) is `format/json.ts`.
 * @module
 */
import type { Document } from 'bson'
import { DEFAULT_BSON_OPTIONS, DOCUMENT_SHAPING_OPTIONS } from './bson.js'
import type { CursorSource } from './cursor/abstract_cursor.js'
import { FindCursor } from './cursor/find_cursor.js'
import { MongoInvalidArgumentError } from './errors.js'
import { jsonFormat, type JsonChunk, type JsonFormat } from './format/json.js'
import type { FindOptions } from './options.js'
import { checkDestination, pipeParts } from './pipe.js'

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

/** @internal `Collection.pipeJson`; `checkedFilter` throws on a bad filter. */
export async function pipeJson(
  source: CursorSource,
  checkedFilter: () => Document,
  options: JsonOptions,
  destination: NodeJS.WritableStream,
  /** The whole call's limit: the operation's `timeoutMS`, else the client's. */
  timeoutMS?: number,
): Promise<PipeJsonResult> {
  checkDestination('pipeJson', destination)
  // A bad filter or options, like a query the server refuses, fail before any byte is written: the
  // caller can still answer (an HTTP 400 with the error's message).
  const cursor = jsonCursor(source, checkedFilter(), options)
  const written: PipeJsonResult = { count: 0, bytes: 0 }
  await pipeParts(destination, jsonArray(cursor, written), () => cursor.close(), timeoutMS)
  return written
}
