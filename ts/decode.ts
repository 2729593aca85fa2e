/**
 * The decoder seam: how a native batch becomes JS documents. Everything that reads documents
 * (cursors, findOne, distinct) goes through here, so a faster decoder replaces this file only.
 * @module
 */
import { BSON, type Document } from 'bson'
import type { ResolvedBSONOptions } from './bson.js'
import type { DocumentBatch } from './native.cjs'

type DeserializeOptions = Parameters<typeof BSON.deserialize>[1] & {}

/** A decoder for one operation's BSON options, reused for each of its batches. */
export interface BatchDecoder {
  decodeBatch(batch: DocumentBatch): Document[]
  /** Decodes one standalone BSON document (a command reply such as distinct's). */
  decodeDocument(bytes: Uint8Array): Document
}

/** The js-bson decoder: exactly the official driver's values and types. */
export function createDecoder(options: ResolvedBSONOptions): BatchDecoder {
  const deserializeOptions: DeserializeOptions = {
    promoteValues: options.promoteValues,
    promoteLongs: options.promoteLongs,
    promoteBuffers: options.promoteBuffers,
    useBigInt64: options.useBigInt64,
    bsonRegExp: options.bsonRegExp,
    validation: { utf8: options.enableUtf8Validation },
  }
  return {
    decodeBatch(batch) {
      if (options.raw) return splitDocuments(batch)
      const documents: Document[] = new Array(batch.count)
      BSON.deserializeStream(batch.documents, 0, batch.count, documents, 0, deserializeOptions)
      return documents
    },
    decodeDocument(bytes) {
      return BSON.deserialize(bytes, deserializeOptions)
    },
  }
}

/** `raw: true`: each document as a Buffer view of its BSON. */
function splitDocuments({ documents, count }: DocumentBatch): Buffer[] {
  const result: Buffer[] = new Array(count)
  let offset = 0
  for (let index = 0; index < count; index++) {
    const length = documents.readInt32LE(offset)
    result[index] = documents.subarray(offset, offset + length)
    offset += length
  }
  return result
}
