/**
 * The cursor of `findLazy` and `findCursor(..., { lazy: true })`: a find whose batches come with
 * Rust's field index and turn into lazy documents (`ts/lazy.ts`).
 * @module
 */
import type { Document } from 'bson'
import type { ResolvedBSONOptions } from '../bson.js'
import { lazyBatchDecoder } from '../lazy.js'
import { BatchOutput } from '../native.cjs'
import type { FindOptions } from '../options.js'
import type { BatchDecode, CursorSource } from './abstract_cursor.js'
import { FindCursor } from './find_cursor.js'

/** @internal A `FindCursor` of lazy documents. */
export class LazyFindCursor<TSchema = Document> extends FindCursor<TSchema> {
  constructor(source: CursorSource, filter: Document, options: FindOptions) {
    // Lazy documents are built from the batch bytes whatever `raw` says.
    super(source, filter, { ...options, raw: false })
  }

  protected override batchOutput(): BatchOutput {
    return BatchOutput.Lazy
  }

  protected override batchDecode(bsonOptions: ResolvedBSONOptions): BatchDecode {
    return lazyBatchDecoder(bsonOptions) as BatchDecode
  }
}
