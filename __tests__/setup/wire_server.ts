// A small fake MongoDB wire server for what the embedded server cannot show (it stands for a mongod, a
// mongos, or a broken server or proxy): it records every command both drivers send (to compare
// `apiVersion`, `readConcern`, `$readPreference`, a login's payload), answers the handshake as a
// standalone or a mongos, and answers every other command with a scripted reply (a document, raw
// bytes such as a header with a bad messageLength, or nothing) or, by default, serves `documents` to
// find and aggregate in batches of their `batchSize` (getMore serves the rest). It speaks OP_MSG and
// the legacy OP_QUERY handshake.
import { once } from 'node:events'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { BSON, Long, type Document } from 'bson'

const OP_REPLY = 1
const OP_QUERY = 2004
const OP_MSG = 2013

/** A reply that makes the server close the connection instead of answering (a network error). */
export const CLOSE_CONNECTION = Symbol('close connection')

/**
 * What the server sends for a command: a reply document, raw bytes written as they are, nothing,
 * or CLOSE_CONNECTION.
 */
export type WireReply =
  Document | { bytes: (requestId: number) => Buffer } | RawWrite | typeof CLOSE_CONNECTION | null

/**
 * A reply the test writes on the socket itself (cut short, split into pieces, then closed...: see
 * setup/fault_server.ts); `opCode` is the request's, for `replyMessage`.
 */
export interface RawWrite {
  write: (socket: Socket, requestId: number, opCode: number) => void | Promise<void>
}

/** Which connection a command came on: its number on this server, from 1 in the order they opened. */
export interface WireContext {
  connection: number
}

export interface WireServerOptions {
  /**
   * Answers every command but the handshake, `ping`, `endSessions` and `killCursors` (the server
   * answers those itself); without it, find / aggregate / getMore / count serve `documents` and any
   * other command gets `{ ok: 1 }`. A promise delays the answer until it settles (a slow or hung
   * getMore: a promise that never settles is a server that never answers).
   */
  answer?: (command: Document, context: WireContext) => WireReply | Promise<WireReply>
  /** Answer hello as a mongos (`msg: 'isdbgrid'`): drivers then send `$readPreference`. */
  mongos?: boolean
  /**
   * Answers the handshake (`hello`, `ismaster`) in place of the standalone or mongos reply: a
   * replica-set member or a load balancer (start from `helloReply(false)` and add `setName`,
   * `hosts`, `serviceId`...). Called for every handshake and monitoring check, so a test can change
   * what it returns (an election, a member going away), or close the connection instead.
   */
  hello?: (
    command: Document,
    context: WireContext,
  ) => Document | typeof CLOSE_CONNECTION | Promise<Document | null>
  /** Documents every find / aggregate returns (when there is no `answer`). */
  documents?: Document[]
  /** Milliseconds to wait before answering a find or aggregate. */
  delayMS?: number
}

export interface WireServer {
  uri: string
  /** `host:port` of the server, for tests that write their own connection string. */
  address: string
  /** Every command received (handshakes and monitoring included), in order, Int64 kept as `Long`. */
  commands: Document[]
  /** The received commands named `name`. */
  received(name: string): Document[]
  /** The cursor ids `killCursors` named. */
  killed: bigint[]
  /**
   * How many client connections are open. Once none is, every command a client sent before it
   * closed them has been received (TCP delivers the data before the close).
   */
  openConnections(): number
  stop(): Promise<void>
}

const HANDSHAKE = new Set(['hello', 'ismaster', 'isMaster'])

/** A message answering request `responseTo` (drivers do not read the header's own requestID). */
function frame(opCode: number, responseTo: number, body: Uint8Array): Buffer {
  const header = Buffer.alloc(16)
  header.writeInt32LE(16 + body.length, 0)
  header.writeInt32LE(responseTo, 8)
  header.writeInt32LE(opCode, 12)
  return Buffer.concat([header, body])
}

/** The reply to request `responseTo` carrying `document`: an OP_REPLY to an OP_QUERY, else an OP_MSG. */
export function replyMessage(responseTo: number, requestOpCode: number, document: Document): Buffer {
  const bytes = BSON.serialize(document)
  if (requestOpCode === OP_QUERY) {
    const prefix = Buffer.alloc(20) // responseFlags, cursorID, startingFrom stay 0
    prefix.writeInt32LE(1, 16) // numberReturned
    return frame(OP_REPLY, responseTo, Buffer.concat([prefix, bytes]))
  }
  // flagBits 0, then section kind 0: the body.
  return frame(OP_MSG, responseTo, Buffer.concat([Buffer.alloc(5), bytes]))
}

/** The command in an OP_MSG (its kind-0 section) or an OP_QUERY; `undefined` for other op codes. */
function readCommand(message: Buffer): Document | undefined {
  const options = { promoteLongs: false }
  const opCode = message.readInt32LE(12)
  if (opCode === OP_QUERY) {
    const collectionEnd = message.indexOf(0, 20)
    const start = collectionEnd + 1 + 8 // numberToSkip, numberToReturn
    return BSON.deserialize(message.subarray(start, start + message.readInt32LE(start)), options)
  }
  if (opCode !== OP_MSG) return undefined
  // flagBits, then sections: kind 0 holds the command, kind 1 a document sequence.
  let at = 20
  while (at < message.length) {
    const kind = message.readUInt8(at)
    const length = message.readInt32LE(at + 1)
    if (kind === 0) return BSON.deserialize(message.subarray(at + 1, at + 1 + length), options)
    at += 1 + length
  }
  return undefined
}

/** The reply of a standalone server (or a mongos) to `hello` (no topologyVersion: drivers poll). */
export function helloReply(mongos: boolean): Document {
  return {
    helloOk: true,
    ismaster: true,
    isWritablePrimary: true,
    ...(mongos ? { msg: 'isdbgrid' } : {}),
    maxBsonObjectSize: 16 * 1024 * 1024,
    maxMessageSizeBytes: 48_000_000,
    maxWriteBatchSize: 100_000,
    localTime: new Date(),
    logicalSessionTimeoutMinutes: 30,
    connectionId: 1,
    minWireVersion: 0,
    maxWireVersion: 21,
    readOnly: false,
    ok: 1,
  }
}

/** Documents a cursor still has to return, by cursor id. */
type OpenCursors = Map<bigint, { ns: string; documents: Document[] }>

/** A cursor reply of at most `batchSize` documents of `documents`, keeping the rest open. */
function batch(cursors: OpenCursors, ns: string, documents: Document[], batchSize: unknown, first: boolean) {
  const size = typeof batchSize === 'number' && batchSize > 0 ? batchSize : documents.length
  const rest = documents.slice(size)
  let id = 0n
  if (rest.length > 0) {
    id = BigInt(cursors.size + 1) + 1000n
    cursors.set(id, { ns, documents: rest })
  }
  const key = first ? 'firstBatch' : 'nextBatch'
  return { cursor: { id: Long.fromBigInt(id), ns, [key]: documents.slice(0, size) }, ok: 1 }
}

/** The default answer: `documents` served to find / aggregate / getMore / count, `{ ok: 1 }` to the rest. */
function answerFromDocuments(command: Document, documents: Document[], cursors: OpenCursors): Document {
  const name = Object.keys(command)[0]!
  if (name === 'find' || name === 'aggregate') {
    const ns = `${command.$db}.${name === 'find' ? command.find : command.aggregate}`
    const batchSize = name === 'find' ? command.batchSize : command.cursor?.batchSize
    return batch(cursors, ns, documents, batchSize, true)
  }
  if (name === 'getMore') {
    const id = BigInt(String(command.getMore))
    const cursor = cursors.get(id)
    cursors.delete(id)
    return batch(cursors, cursor?.ns ?? '', cursor?.documents ?? [], command.batchSize, false)
  }
  if (name === 'count') return { n: documents.length, ok: 1 }
  return { ok: 1 }
}

export async function startWireServer(options: WireServerOptions = {}): Promise<WireServer> {
  const commands: Document[] = []
  const killed: bigint[] = []
  const cursors: OpenCursors = new Map()
  const sockets = new Set<Socket>()
  let connections = 0

  const answer = (command: Document, context: WireContext): WireReply | Promise<WireReply> => {
    const name = Object.keys(command)[0]!
    if (HANDSHAKE.has(name)) return options.hello?.(command, context) ?? helloReply(options.mongos ?? false)
    if (name === 'ping' || name === 'endSessions') return { ok: 1 }
    if (name === 'killCursors') {
      for (const id of command.cursors as (Long | number)[]) killed.push(BigInt(id.toString()))
      return { cursorsKilled: command.cursors, cursorsNotFound: [], cursorsAlive: [], ok: 1 }
    }
    if (options.answer) return options.answer(command, context)
    return answerFromDocuments(command, options.documents ?? [], cursors)
  }

  const respond = async (socket: Socket, context: WireContext, message: Buffer) => {
    const requestId = message.readInt32LE(4)
    const opCode = message.readInt32LE(12)
    const command = readCommand(message)
    if (command === undefined) {
      socket.destroy()
      return
    }
    commands.push(command)
    const name = Object.keys(command)[0]
    if (options.delayMS && (name === 'find' || name === 'aggregate')) {
      await new Promise((resolve) => setTimeout(resolve, options.delayMS))
      if (socket.destroyed) return
    }
    const reply = await answer(command, context)
    if (reply === null || socket.destroyed) return
    if (reply === CLOSE_CONNECTION) {
      socket.destroy()
      return
    }
    if (typeof reply.write === 'function') await (reply as RawWrite).write(socket, requestId, opCode)
    else if (typeof reply.bytes === 'function') socket.write(reply.bytes(requestId))
    else socket.write(replyMessage(requestId, opCode, reply))
  }

  const server = createServer((socket) => {
    sockets.add(socket)
    const context: WireContext = { connection: ++connections }
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => socket.destroy())
    let pending = Buffer.alloc(0)
    socket.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk])
      while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
        const message = pending.subarray(0, pending.readInt32LE(0))
        pending = pending.subarray(message.length)
        void respond(socket, context, message)
      }
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = `127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    uri: `mongodb://${address}/?directConnection=true&serverSelectionTimeoutMS=2000`,
    address,
    commands,
    received: (name) => commands.filter((command) => Object.keys(command)[0] === name),
    killed,
    openConnections: () => sockets.size,
    async stop() {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

export interface ScriptedCursorOptions {
  /** Documents the cursor returns in all (`Infinity`: a cursor that never ends). */
  total: number
  /** Documents a batch (the batchSize drivers send is ignored). */
  batchSize: number
  /** Document number `n` (default `{ n }`). */
  document?: (n: number) => Document
  /** Milliseconds each getMore waits before it answers (a slow server). */
  getMoreDelayMS?: number
  /**
   * The answer to the `getMore`-th getMore of a cursor (1-based) in place of its batch, or
   * `undefined` for the batch: an error reply, CLOSE_CONNECTION, a promise that never settles.
   */
  fault?: (getMore: number) => WireReply | Promise<WireReply> | undefined
}

/**
 * An `answer` for `startWireServer`: every find opens a cursor of its own (ids from 100) over the
 * documents `document(0)`, `document(1)`, ..., served `batchSize` a batch, with the faults and
 * delays asked for; a getMore on an unknown cursor gets CursorNotFound.
 */
export function scriptedCursor(options: ScriptedCursorOptions) {
  const { total, batchSize, document = (n: number) => ({ n }), getMoreDelayMS = 0, fault } = options
  const cursors = new Map<bigint, { next: number; getMores: number }>()
  let nextId = 100n
  const serve = (id: bigint, cursor: { next: number }, key: 'firstBatch' | 'nextBatch') => {
    const documents: Document[] = []
    while (documents.length < batchSize && cursor.next < total) documents.push(document(cursor.next++))
    const more = cursor.next < total
    if (!more) cursors.delete(id)
    return { cursor: { id: Long.fromBigInt(more ? id : 0n), ns: 'db.items', [key]: documents }, ok: 1 }
  }
  return async (command: Document): Promise<WireReply> => {
    if (command.find !== undefined) {
      const id = nextId++
      const cursor = { next: 0, getMores: 0 }
      cursors.set(id, cursor)
      return serve(id, cursor, 'firstBatch')
    }
    if (command.getMore !== undefined) {
      const id = BigInt(String(command.getMore))
      const cursor = cursors.get(id)
      if (cursor === undefined) {
        return { ok: 0, code: 43, codeName: 'CursorNotFound', errmsg: `cursor id ${id} not found` }
      }
      const getMore = ++cursor.getMores
      if (getMoreDelayMS > 0) await new Promise((resolve) => setTimeout(resolve, getMoreDelayMS))
      const faulty = fault?.(getMore)
      if (faulty !== undefined) return faulty
      return serve(id, cursor, 'nextBatch')
    }
    return { ok: 0, errmsg: `unexpected ${Object.keys(command)[0]}`, code: 59 }
  }
}
