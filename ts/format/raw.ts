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

/**
 * The documents of a batch one at a time, in order: each call returns the next one's BSON as a
 * Buffer view (as many calls as `batch.count`). Each document's length is read when it is asked
 * for: a reader that decodes as it goes fails at a bad document, after the ones before it.
 */
export function documentSlicer(batch: DocumentBatch): () => Buffer {
  const documents = batch.documents ?? NO_DOCUMENTS
  let offset = 0
  return () => {
    const length = documents.readInt32LE(offset)
    const document = documents.subarray(offset, offset + length)
    offset += length
    return document
  }
}

/** `raw: true`: each document as a Buffer view of its BSON. */
export function splitDocuments(batch: DocumentBatch): Buffer[] {
  const { count } = batch
  const next = documentSlicer(batch)
  const result: Buffer[] = new Array(count)
  for (let index = 0; index < count; index++) result[index] = next()
  return result
}

/**
 * Where a document of the batch does not decode: its error, read in its place. The official driver
 * decodes each document as it is read, so a reader returns the documents before it, fails at it
 * with `error`, and may read on past it (as the official cursor's `next()` does).
 */
export class UndecodableDocument {
  constructor(readonly error: unknown) {}
}

/**
 * What `deserializeUntilFailure` throws when a document does not decode: every document of the
 * batch, an `UndecodableDocument` for each that does not. Internal: a cursor unwraps it.
 */
export class DecodedWithFailures extends Error {
  constructor(readonly documents: (Document | UndecodableDocument)[]) {
    super('a document of the batch does not decode')
  }
}

/** The batch through js-bson, as the official driver decodes it (also the source of its errors). */
export function deserializeAll(batch: DocumentBatch, options: DeserializeOptions): Document[] {
  const documents: Document[] = new Array(batch.count)
  BSON.deserializeStream(batch.documents ?? NO_DOCUMENTS, 0, batch.count, documents, 0, options)
  return documents
}

/**
 * `deserializeAll` for a cursor's batch.
 * @throws DecodedWithFailures when a document does not decode.
 */
export function deserializeUntilFailure(batch: DocumentBatch, options: DeserializeOptions): Document[] {
  const documents: Document[] = new Array(batch.count)
  try {
    BSON.deserializeStream(batch.documents ?? NO_DOCUMENTS, 0, batch.count, documents, 0, options)
  } catch {
    // js-bson fills the array in order: the documents before the bad one are there. The rest are
    // decoded one by one (the failure path only), each bad one kept as its error.
    let decoded = 0
    while (decoded < documents.length && documents[decoded] !== undefined) decoded++
    const parts = splitDocuments(batch)
    const all: (Document | UndecodableDocument)[] = documents.slice(0, decoded)
    for (let index = decoded; index < parts.length; index++) {
      try {
        all.push(BSON.deserialize(parts[index]!, options))
      } catch (error) {
        all.push(new UndecodableDocument(error))
      }
    }
    throw new DecodedWithFailures(all)
  }
  return documents
}
