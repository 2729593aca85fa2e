// A fake server (on wire_server.ts) holding a known collection of `total` documents, served by
// find / aggregate in batches of `batchSize` (firstBatch, then getMores: the batchSize drivers send
// is ignored, so every driver sees the same batches), that injects ONE fault into one reply: the
// connection closed before, inside (at a byte offset: in the 16-byte header, inside a document) or
// after the reply's bytes; the reply split into tiny pieces with pauses; a wrong messageLength or
// document length; a server error; no answer at all; the cursor id 0 given early. The fault fires
// once per server, on the `reply`-th data reply (0: the find / aggregate / distinct / count reply,
// k: the k-th getMore), so a retried command meets a healthy server, as after a real blip.
import { setTimeout as sleep } from 'node:timers/promises'
import { BSON, Long, type Document } from 'bson'
import {
  CLOSE_CONNECTION,
  replyMessage,
  startWireServer,
  type WireReply,
  type WireServer,
} from './wire_server.js'

export type Fault =
  /** The connection closed instead of the reply. */
  | { kind: 'closeBefore' }
  /** The reply's first bytes up to `at` (in the header: < 16; `inDocument`: inside the batch's first document, `at` bytes into it), then closed. */
  | { kind: 'cut'; at: number; inDocument?: boolean }
  /** The whole reply, then the connection closed. */
  | { kind: 'closeAfter' }
  /** The reply in pieces of `size` bytes, a pause between them: a healthy but slow network. */
  | { kind: 'pieces'; size: number }
  /** The header's messageLength off by `delta` (the connection closed a moment later). */
  | { kind: 'messageLength'; delta: number }
  /** The first document's length prefix off by `delta` (the message's own length is right). */
  | { kind: 'documentLength'; delta: number }
  /** An `{ ok: 0 }` reply with `code`. */
  | { kind: 'error'; code: number; codeName: string }
  /** No answer, ever (the connection stays open). */
  | { kind: 'silent' }
  /** The cursor's id 0 with this batch: the server says the results end here. */
  | { kind: 'endEarly' }

export interface FaultServerOptions {
  total: number
  batchSize: number
  fault: Fault
  /** Which data reply the fault replaces (0: the command's own reply, k: the k-th getMore). */
  reply: number
}

export interface FaultServer extends WireServer {
  /** Whether the fault fired (the reply it targets was asked for). */
  fired(): boolean
  /** Resolves once the faulty reply was asked for. */
  reached: Promise<void>
  /**
   * No fault from now on. A read that failed before it reached the faulty reply (its own timeout,
   * on a loaded machine) would otherwise leave the fault to the next read.
   */
  disarm(): void
  /** The ids of the cursors still open on the server (not exhausted, not killed). */
  openCursors(): bigint[]
}

/** Document `n` of the collection (a string field, so that a cut can land inside a value). */
export const faultDocument = (n: number): Document => ({ _id: n, n, text: `document number ${n}` })

const PAUSE_MS = 1
const PIECES_A_PAUSE = 8

/** Writes `bytes` and closes the connection once they are sent. */
function writeThenClose(socket: import('node:net').Socket, bytes: Buffer) {
  socket.write(bytes, () => socket.destroy())
}

/** The reply `document` written with `fault` (for the faults that change or cut its bytes). */
export function rawFault(document: Document, fault: Fault): WireReply {
  return {
    write: async (socket, requestId, opCode) => {
      const bytes = replyMessage(requestId, opCode, document)
      const first = firstDocumentOffset(bytes, document)
      switch (fault.kind) {
        case 'cut':
          return writeThenClose(socket, bytes.subarray(0, fault.inDocument ? first + fault.at : fault.at))
        case 'closeAfter':
          return writeThenClose(socket, bytes)
        case 'pieces':
          // A pause after every few pieces: each write a reader may see alone, at a bounded cost.
          for (let at = 0, piece = 0; at < bytes.length && !socket.destroyed; at += fault.size, piece++) {
            socket.write(bytes.subarray(at, at + fault.size))
            if (piece % PIECES_A_PAUSE === 0) await sleep(PAUSE_MS)
          }
          return
        case 'messageLength':
          bytes.writeInt32LE(bytes.length + fault.delta, 0)
          socket.write(bytes)
          await sleep(100)
          socket.destroy()
          return
        case 'documentLength':
          bytes.writeInt32LE(bytes.readInt32LE(first) + fault.delta, first)
          socket.write(bytes)
          return
      }
    },
  }
}

/** Where the batch's first document starts in the reply `bytes` (its serialized form is unique). */
function firstDocumentOffset(bytes: Buffer, reply: Document): number {
  const first = (reply.cursor?.firstBatch ?? reply.cursor?.nextBatch)?.[0]
  // No document batch (distinct's values): the reply body itself, after the header and flagBits,
  // and the section kind.
  if (first === undefined) return 21
  const at = bytes.indexOf(BSON.serialize(first))
  if (at < 0) throw new Error('first document not found in the reply')
  return at
}

export async function startFaultServer(options: FaultServerOptions): Promise<FaultServer> {
  const { total, batchSize, fault } = options
  const documents = Array.from({ length: total }, (_, n) => faultDocument(n))
  const cursors = new Map<bigint, { next: number; ns: string; getMores: number }>()
  let nextId = 100n
  let fired = false
  const orphaned = new Set<bigint>()
  let reach = () => {}
  const reached = new Promise<void>((resolve) => (reach = resolve))

  /** Applies the fault to the data reply number `index`, once. */
  const faulty = (
    index: number,
    make: (end: boolean) => Document,
    id?: bigint,
  ): WireReply | Promise<WireReply> => {
    if (fired || index !== options.reply) return make(false)
    fired = true
    reach()
    // A first reply the client cannot read leaves it without the cursor's id: the cursor is not
    // its to kill (an error reply opens none; a lost one leaves one the server times out).
    const unread = ['closeBefore', 'cut', 'error', 'silent', 'messageLength'].includes(fault.kind)
    if (index === 0 && unread && id !== undefined) orphaned.add(id)
    switch (fault.kind) {
      case 'closeBefore':
        return CLOSE_CONNECTION
      case 'error':
        // CursorNotFound: the server has no such cursor (any more).
        if (fault.code === 43 && id !== undefined) cursors.delete(id)
        return { ok: 0, code: fault.code, codeName: fault.codeName, errmsg: `injected ${fault.codeName}` }
      case 'silent':
        return new Promise<WireReply>(() => {})
      case 'endEarly':
        return make(true)
      default:
        return rawFault(make(false), fault)
    }
  }

  /** The next batch of cursor `id`; the id 0 once it is exhausted (or when `end`). */
  const serve = (id: bigint, key: 'firstBatch' | 'nextBatch', limit: number, end = false): Document => {
    const cursor = cursors.get(id)!
    const batch = documents.slice(cursor.next, cursor.next + Math.min(batchSize, limit))
    cursor.next += batch.length
    const more = !end && cursor.next < Math.min(total, limit)
    if (!more) cursors.delete(id)
    return { cursor: { id: Long.fromBigInt(more ? id : 0n), ns: cursor.ns, [key]: batch }, ok: 1 }
  }

  const open = (ns: string, limit: number) => {
    const id = nextId++
    cursors.set(id, { next: 0, ns, getMores: 0 })
    return faulty(0, (end) => serve(id, 'firstBatch', limit, end), id)
  }

  const server = await startWireServer({
    answer: (command) => {
      const name = Object.keys(command)[0]!
      const ns = `${command.$db}.${command[name]}`
      if (name === 'find') {
        const limit = Number(command.limit ?? 0) || Infinity
        return open(ns, limit)
      }
      if (name === 'aggregate') {
        const group = command.pipeline?.find((stage: Document) => stage.$group !== undefined)
        if (group !== undefined) {
          // countDocuments: `[{ $match }, { $group: { _id: 1, n: { $sum: 1 } } }]`
          const reply = { cursor: { id: Long.ZERO, ns, firstBatch: [{ _id: 1, n: total }] }, ok: 1 }
          return faulty(0, () => reply)
        }
        return open(ns, Infinity)
      }
      if (name === 'distinct') {
        const reply = { values: documents.map((document) => document.n), ok: 1 }
        return faulty(0, () => reply)
      }
      if (name === 'getMore') {
        const id = BigInt(String(command.getMore))
        const cursor = cursors.get(id)
        if (cursor === undefined) {
          return { ok: 0, code: 43, codeName: 'CursorNotFound', errmsg: `cursor id ${id} not found` }
        }
        cursor.getMores += 1
        return faulty(cursor.getMores, (end) => serve(id, 'nextBatch', Infinity, end), id)
      }
      return { ok: 0, errmsg: `unexpected ${name}`, code: 59, codeName: 'CommandNotFound' }
    },
  })
  return {
    ...server,
    fired: () => fired,
    reached,
    disarm: () => {
      fired = true
    },
    openCursors: () => [...cursors.keys()].filter((id) => !server.killed.includes(id) && !orphaned.has(id)),
  }
}
