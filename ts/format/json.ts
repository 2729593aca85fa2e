/**
 * The JSON format (`findJson`, `pipeJson`): each server batch as JSON text written by Rust
 * (src/format/json.rs), with the documents Rust deferred rendered here by js-bson.
 * @module
 */
import { BSON, EJSON } from 'bson'
import type { ResolvedBSONOptions } from '../bson.js'
import { BatchOutput, type DocumentBatch } from '../native.cjs'
import type { BatchFormat } from './index.js'

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

/** One server batch as JSON: its documents, comma-separated, in parts to write one after another. */
export interface JsonChunk {
  parts: Buffer[]
  count: number
}

/** The JSON format in `format`: a cursor of it yields one `JsonChunk` per batch. */
export function jsonFormat(format: JsonFormat): BatchFormat {
  return {
    output: () => (format === 'plain' ? BatchOutput.PlainJson : BatchOutput.RelaxedJson),
    decoder(bsonOptions) {
      const toJson = batchJson(format, bsonOptions)
      return (batch): JsonChunk[] => [{ parts: toJson(batch), count: batch.count }]
    },
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
