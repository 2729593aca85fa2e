/**
 * The batch formats, one module a format, each mirroring its Rust side in src/format/: what the
 * native cursor prepares from each server batch (`BatchOutput`) and how JS turns such a batch into
 * a cursor's items. A cursor takes a format; adding one means a module here and one in
 * src/format/ (see docs/development.md, "Layout").
 * @module
 */
import { BSON, type Document } from 'bson'
import { toDeserializeOptions, type ResolvedBSONOptions } from '../bson.js'
import { BatchOutput, type DocumentBatch } from '../native.cjs'
import { deserializeAll, deserializeUntilFailure, documentSlicer, splitDocuments } from './raw.js'
import { isTaped, tapeDecoder, tapeReader } from './tape.js'

/** A batch format: what the native side prepares, and how JS decodes it. */
export interface BatchFormat {
  /** What the native cursor prepares from each server batch, for these options. */
  output(bsonOptions: ResolvedBSONOptions): BatchOutput
  /** Turns one native batch into the cursor's items; made once per cursor. */
  decoder(bsonOptions: ResolvedBSONOptions): (batch: DocumentBatch) => unknown[]
}

/** A decoder for one operation's BSON options, reused for each of its batches. */
export interface BatchDecoder {
  decodeBatch(batch: DocumentBatch): Document[]
  /** Decodes one standalone BSON document (a command reply such as distinct's). */
  decodeDocument(bytes: Uint8Array): Document
}

/** A decoder with exactly the official driver's values and types for these options. */
export function createDecoder(options: ResolvedBSONOptions): BatchDecoder {
  const deserialize = toDeserializeOptions(options)
  const decodeTape = tapeDecoder(options)
  return {
    decodeBatch(batch) {
      if (options.raw) return splitDocuments(batch)
      return isTaped(batch) ? decodeTape(batch) : deserializeAll(batch, deserialize)
    },
    decodeDocument(bytes) {
      return BSON.deserialize(bytes, deserialize)
    },
  }
}

/** Documents as the official driver returns them: the tape, or raw BSON with `raw: true`. */
export const DOCUMENTS: BatchFormat = {
  output: (bsonOptions) => (bsonOptions.raw ? BatchOutput.Raw : BatchOutput.Tape),
  decoder(bsonOptions) {
    const decoder = createDecoder(bsonOptions)
    const deserialize = toDeserializeOptions(bsonOptions)
    // No tape: a document Rust could not tape (see `DecodedWithFailures`).
    return (batch) =>
      bsonOptions.raw || isTaped(batch)
        ? decoder.decodeBatch(batch)
        : deserializeUntilFailure(batch, deserialize)
  },
}

/**
 * Reads a batch of `DOCUMENTS` one document at a time, each decoded when it is asked for (the
 * documents of a batch in order; as many calls as `batch.count`). For a reader that holds each
 * document briefly (a change stream's events): a batch decoded at once stays alive through the
 * garbage collections that run while it is read.
 */
export function documentReader(options: ResolvedBSONOptions): (batch: DocumentBatch) => () => Document {
  const decoder = createDecoder(options)
  const readTape = tapeReader(options)
  return (batch) => {
    if (options.raw) {
      const documents = splitDocuments(batch)
      let position = 0
      return () => documents[position++]!
    }
    if (isTaped(batch)) return readTape(batch)
    // No tape: Rust found a document it could not tape (malformed BSON, invalid UTF-8, ...).
    // js-bson decodes each one as it is read, as the official driver does: the documents before
    // a bad one are returned, and the bad one throws its error (decoding the whole batch first
    // threw before any of them).
    const nextDocument = documentSlicer(batch)
    return () => decoder.decodeDocument(nextDocument())
  }
}
