/**
 * Query results as JSON text, transcoded from BSON in Rust without building JS objects:
 * `Collection.findJson` (a Buffer) and `Collection.pipeJson` (streamed into a Writable).
 * @module
 */
import type { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { BSON, EJSON, type Document } from 'bson'
import { DEFAULT_BSON_OPTIONS, describe, type ResolvedBSONOptions } from './bson.js'
import type { BatchDecode, CursorSource } from './cursor/abstract_cursor.js'
import { FindCursor } from './cursor/find_cursor.js'
import { MongoInvalidArgumentError } from './errors.js'
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

/** The parts of the JSON array of the cursor's documents; counts what it yields into `written`. */
async function* jsonArray(cursor: JsonCursor, written: PipeJsonResult): AsyncGenerator<Buffer> {
  const part = (bytes: Buffer) => {
    written.bytes += bytes.length
    return bytes
  }
  yield part(OPEN)
  for await (const chunk of cursor) {
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
  const parts: Buffer[] = []
  for await (const part of jsonArray(new JsonCursor(source, filter, options), { count: 0, bytes: 0 })) {
    parts.push(part)
  }
  return Buffer.concat(parts)
}

/** @internal `Collection.pipeJson`; `checkedFilter` throws on a bad filter. */
export async function pipeJson(
  source: CursorSource,
  checkedFilter: () => Document,
  options: JsonOptions,
  destination: NodeJS.WritableStream,
): Promise<PipeJsonResult> {
  if (typeof destination?.write !== 'function' || typeof destination.on !== 'function') {
    throw new MongoInvalidArgumentError(`pipeJson needs a Writable stream, got ${describe(destination)}`)
  }
  let cursor: JsonCursor
  try {
    cursor = new JsonCursor(source, checkedFilter(), options)
  } catch (error) {
    // A bad filter or options fail like a failed query: a response left open would keep its client waiting.
    // Destroyed without the error, which would be an unhandled 'error' event on `destination`.
    ;(destination as Partial<Writable>).destroy?.()
    throw error
  }
  const written: PipeJsonResult = { count: 0, bytes: 0 }
  // pipeline() honours backpressure, ends the destination, and on an error or a destination closed
  // early (a client that went away) destroys both ends; the generator's return closes the cursor.
  await pipeline(jsonArray(cursor, written), destination)
  return written
}
