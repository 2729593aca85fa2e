// Malformed server replies, byte by byte: an OP_MSG (or OP_COMPRESSED) reply built from its parts
// (flags, sections, trailing bytes, a header length or op code of the test's choosing), and a fake
// server (on wire_server.ts) serving a cursor whose find reply or first getMore reply is replaced,
// once, by such a message, so that both drivers meet the same bytes at the same point and the
// test can see what each makes of them, and what its next read on the same client does.
import { constants, deflateSync } from 'node:zlib'
import { BSON, Long, type Document } from 'bson'
import { startWireServer, type WireServer } from './wire_server.js'

export const OP_REPLY = 1
export const OP_QUERY = 2004
export const OP_COMPRESSED = 2012
export const OP_MSG = 2013

/** OP_MSG flag bits (the OP_MSG specification). */
export const CHECKSUM_PRESENT = 1 << 0
export const MORE_TO_COME = 1 << 1
export const EXHAUST_ALLOWED = 1 << 16

/** A message answering `responseTo`: the 16-byte header, then `body` (its length field as given). */
export function frame(responseTo: number, opCode: number, body: Uint8Array, length?: number): Buffer {
  const header = Buffer.alloc(16)
  header.writeInt32LE(length ?? 16 + body.length, 0)
  header.writeInt32LE(responseTo, 8)
  header.writeInt32LE(opCode, 12)
  return Buffer.concat([header, body])
}

/** An OP_MSG's body: its flag bits, then the given sections and trailing bytes. */
export function opMsgBody(flags: number, ...parts: Uint8Array[]): Buffer {
  const flagBits = Buffer.alloc(4)
  flagBits.writeUInt32LE(flags >>> 0, 0)
  return Buffer.concat([flagBits, ...parts])
}

/** A section of kind 0: the body, one document. */
export const kind0 = (document: Document) => Buffer.concat([Buffer.from([0]), BSON.serialize(document)])

/** A section of kind 1: a document sequence named `identifier` (its size as given, or its own). */
export function kind1(identifier: string, documents: Document[], size?: number): Buffer {
  const payload = Buffer.concat([Buffer.from(`${identifier}\0`), ...documents.map((d) => BSON.serialize(d))])
  const sizeField = Buffer.alloc(4)
  sizeField.writeInt32LE(size ?? 4 + payload.length, 0)
  return Buffer.concat([Buffer.from([1]), sizeField, payload])
}

export interface CompressedParts {
  /** The op code of the wrapped message (default OP_MSG). */
  originalOpCode?: number
  /** The uncompressed size the header declares (default: the real one). */
  uncompressedSize?: number
  /** 0 noop, 1 snappy, 2 zlib, 3 zstd (default zlib: built into Node.js, so both drivers have it). */
  compressorId?: number
  /** The compressed bytes (default: `inner` through zlib, or as it is for the noop compressor). */
  compressed?: Uint8Array
}

/** The body of an OP_COMPRESSED message wrapping the OP_MSG body `inner`. */
export function opCompressedBody(inner: Buffer, parts: CompressedParts = {}): Buffer {
  const compressorId = parts.compressorId ?? 2
  const compressed = parts.compressed ?? (compressorId === 2 ? deflateSync(inner) : inner)
  const details = Buffer.alloc(9)
  details.writeInt32LE(parts.originalOpCode ?? OP_MSG, 0)
  details.writeInt32LE(parts.uncompressedSize ?? inner.length, 4)
  details.writeUInt8(compressorId, 8)
  return Buffer.concat([details, compressed])
}

/**
 * A zlib stream that inflates to `mebibytes` MiB of zeros from about a thousandth of that: one
 * block of deflated zeros, flushed so that it ends on a byte boundary, repeated; then a final
 * empty block and a checksum that does not match (a decompressor finds that out only once it has
 * inflated everything).
 */
export function zlibBomb(mebibytes: number): Buffer {
  const flushed = deflateSync(Buffer.alloc(1 << 20), { finishFlush: constants.Z_SYNC_FLUSH })
  const block = flushed.subarray(2) // after the 2-byte zlib header
  const blocks = Array.from({ length: mebibytes }, () => block)
  return Buffer.concat([flushed.subarray(0, 2), ...blocks, Buffer.from([0x03, 0x00]), Buffer.alloc(4)])
}

/** Where the malformed reply goes: the find's own reply, or the cursor's first getMore's. */
export type Target = 'find' | 'getMore'

export interface MalformedServerOptions {
  target: Target
  /**
   * The malformed message answering request `requestId`, given the healthy reply it stands for
   * (so a layout can carry the real batch).
   */
  bytes: (requestId: number, reply: Document) => Buffer
}

export interface MalformedServer extends WireServer {
  /** The connection (its number on the server) each find and getMore came on, in order. */
  dataConnections: { name: string; connection: number }[]
  /** How many times the malformed reply was sent (once at most). */
  sent(): number
}

/** Document `n` of the cursor: a string field, so the batch is not all zeros. */
export const cursorDocument = (n: number): Document => ({ _id: n, text: `document ${n}` })
/** Documents of the cursor, served 2 a batch: a first batch and one getMore. */
export const CURSOR_TOTAL = 4
export const CURSOR_BATCH = 2

/**
 * A server of one collection of `CURSOR_TOTAL` documents (batches of `CURSOR_BATCH`, whatever the
 * client asks), whose `target` reply is `bytes(...)` the first time, healthy afterwards.
 */
export async function startMalformedServer(options: MalformedServerOptions): Promise<MalformedServer> {
  const cursors = new Map<bigint, { next: number; ns: string }>()
  const dataConnections: { name: string; connection: number }[] = []
  let nextId = 100n
  let sent = 0
  const serve = (id: bigint, key: 'firstBatch' | 'nextBatch'): Document => {
    const cursor = cursors.get(id)!
    const documents: Document[] = []
    while (documents.length < CURSOR_BATCH && cursor.next < CURSOR_TOTAL)
      documents.push(cursorDocument(cursor.next++))
    const more = cursor.next < CURSOR_TOTAL
    if (!more) cursors.delete(id)
    return { cursor: { id: Long.fromBigInt(more ? id : 0n), ns: cursor.ns, [key]: documents }, ok: 1 }
  }
  const server = await startWireServer({
    answer: (command, { connection }) => {
      const name = Object.keys(command)[0]!
      dataConnections.push({ name, connection })
      let reply: Document
      if (name === 'find') {
        const id = nextId++
        cursors.set(id, { next: 0, ns: `${command.$db}.${command.find}` })
        reply = serve(id, 'firstBatch')
      } else if (name === 'getMore') {
        const id = BigInt(String(command.getMore))
        if (!cursors.has(id))
          return { ok: 0, code: 43, codeName: 'CursorNotFound', errmsg: `cursor id ${id} not found` }
        reply = serve(id, 'nextBatch')
      } else {
        return { ok: 0, code: 59, codeName: 'CommandNotFound', errmsg: `no such command: '${name}'` }
      }
      if (name !== options.target || sent > 0) return reply
      sent += 1
      return { bytes: (requestId: number) => options.bytes(requestId, reply) }
    },
  })
  return { ...server, dataConnections, sent: () => sent }
}
