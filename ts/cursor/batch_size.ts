/**
 * The batch size of a cursor whose caller sets none: about {@link TARGET_BATCH_BYTES} of BSON per
 * server batch. The server counts batches in documents, and one cursor keeps its batch size from
 * the find to its last getMore, so the document size comes from what the same query (namespace and
 * projection) returned before.
 * @module
 */
import type { Document } from 'bson'

/**
 * Documents per server batch for a query whose document size is not known yet, and the most a
 * batch of small documents gets. The official driver lets the server choose (101 documents, then
 * up to 16 MiB per getMore); batches of this size are decoded while the next one is fetched, keep a
 * streaming cursor's memory at a few small batches, and spare V8's young generation a 16 MiB burst
 * of surviving documents: 1.4x-2.3x faster on 100k-document results here (BENCHMARKS.md).
 */
const DEFAULT_BATCH_SIZE = 2000

/**
 * BSON bytes per batch once the document size is known. Large documents in 2,000-document batches
 * (1.6 MB of 822-byte ones) make the find wait for its whole first reply before JS can start:
 * batches of ~512 KiB made `findCursor` over 660-820-byte documents 15-17% faster at 10k documents
 * and 5-12% at 100k here, while 2,000 documents of 141-267 bytes (282-534 KB) were best for small
 * ones (BENCHMARKS.md, session 8).
 */
const TARGET_BATCH_BYTES = 512 * 1024

/**
 * BSON bytes per batch of a bulk read, whose batches JS only passes on to Rust (an Arrow table or
 * pipe: no JS document is built, and Rust gathers 16 MiB of BSON per record batch). Each server
 * batch costs the JS thread a wake-up, a handed-over batch and the cursor's bookkeeping: a
 * 100k-document wide45 `findArrow` kept it busy 25-39 ms in 512 KiB batches and 21-24 ms in 4 MiB
 * ones (session 12).
 */
const BULK_BATCH_BYTES = 4 * 1024 * 1024

/** The fewest documents per learned batch: very large documents still share a round trip. */
const MIN_BATCH_SIZE = 16

/** BSON bytes per document of each query key's last results, shared by every client. */
const documentSizes = new Map<string, number>()
/** Query keys kept: projections are few in practice, and a stale guess only sizes batches. */
const DOCUMENT_SIZES_LIMIT = 1024

/** The key under which a find's document size is learned: its namespace and projection. */
export function findSizeKey(namespace: string, projection: Document | undefined): string {
  if (projection === undefined) return namespace
  // A projection may hold a BigInt (an int64 in an $elemMatch), which JSON.stringify refuses.
  return `${namespace} ${JSON.stringify(projection, (_, value) => (typeof value === 'bigint' ? `${value}n` : value))}`
}

/**
 * The batch size for a query with this key when its caller sets none: about
 * {@link TARGET_BATCH_BYTES} per batch, or {@link BULK_BATCH_BYTES} for a bulk read.
 * {@link DEFAULT_BATCH_SIZE} also caps batches of small documents built into JS objects, for V8's
 * young generation; a bulk read builds none.
 */
function batchSizeFor(key: string | undefined, bulk: boolean): number {
  const bytesPerDocument = key === undefined ? undefined : documentSizes.get(key)
  if (bytesPerDocument === undefined) return DEFAULT_BATCH_SIZE
  const targetBytes = bulk ? BULK_BATCH_BYTES : TARGET_BATCH_BYTES
  const fitting = Math.max(MIN_BATCH_SIZE, Math.floor(targetBytes / bytesPerDocument))
  return bulk ? fitting : Math.min(DEFAULT_BATCH_SIZE, fitting)
}

/** Records the size of `count` documents of a query with this key (`bytes` of BSON). */
export function learnDocumentSize(key: string, count: number, bytes: number): void {
  if (count === 0) return
  if (documentSizes.size >= DOCUMENT_SIZES_LIMIT && !documentSizes.has(key)) documentSizes.clear()
  documentSizes.set(key, bytes / count)
}

/**
 * `command` with a batch size when it sets none (one-batch reads keep the server's): the one
 * learned for `key` (see `batchSizeFor`; `bulk` for a bulk read), else {@link DEFAULT_BATCH_SIZE}.
 */
export function withDefaultBatchSize(command: Document, key?: string, bulk = false): Document {
  if (command.batchSize !== undefined || command.singleBatch === true || command.limit < 0) return command
  return { ...command, batchSize: batchSizeFor(key, bulk) }
}
