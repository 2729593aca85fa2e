/**
 * Batches handed over as their documents' BSON (src/format/raw.rs, and the tape's fallback): split
 * into one Buffer per document (`raw: true`), or decoded by js-bson exactly as the official driver
 * decodes them (a batch the tape refused: js-bson then also gives the official errors).
 * @module
 */
import { BSON, type Document } from 'bson'
import type { DeserializeOptions } from '../bson.js'
import type { DocumentBatch } from '../native.cjs'

/** What a batch without documents' bytes reads as (Rust leaves an empty buffer out). */
export const NO_DOCUMENTS = Buffer.alloc(0)

/** `raw: true`: each document as a Buffer view of its BSON. */
export function splitDocuments(batch: DocumentBatch): Buffer[] {
  const { count } = batch
  const documents = batch.documents ?? NO_DOCUMENTS
  const result: Buffer[] = new Array(count)
  let offset = 0
  for (let index = 0; index < count; index++) {
    const length = documents.readInt32LE(offset)
    result[index] = documents.subarray(offset, offset + length)
    offset += length
  }
  return result
}

/** The batch through js-bson, as the official driver decodes it (also the source of its errors). */
export function deserializeAll(batch: DocumentBatch, options: DeserializeOptions): Document[] {
  const documents: Document[] = new Array(batch.count)
  BSON.deserializeStream(batch.documents ?? NO_DOCUMENTS, 0, batch.count, documents, 0, options)
  return documents
}
