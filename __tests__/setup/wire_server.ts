// A small fake mongod for what the embedded server cannot show: it records every command both
// drivers send (to compare `apiVersion`, `readConcern`, `$readPreference`), answers hello as a
// standalone or a mongos, and can delay replies (timeoutMS). find and aggregate return `documents`,
// in batches of their `batchSize` (getMore serves the rest).
import { once } from 'node:events'
import { createServer, type Server, type Socket } from 'node:net'
import { BSON, Long, type Document } from 'bson'

const OP_REPLY = 1
const OP_QUERY = 2004
const OP_MSG = 2013

export interface WireServerOptions {
  /** Answer hello as a mongos (`msg: 'isdbgrid'`): drivers then send `$readPreference`. */
  mongos?: boolean
  /** Documents every find / aggregate returns. */
  documents?: Document[]
  /** Milliseconds to wait before answering a find or aggregate. */
  delayMS?: number
}

export interface WireServer {
  uri: string
  /** Every command received (hello and monitoring included), in order. */
  commands: Document[]
  /** The received commands named `name`. */
  received(name: string): Document[]
  stop(): Promise<void>
}

function hello(options: WireServerOptions, legacy: boolean): Document {
  return {
    [legacy ? 'ismaster' : 'isWritablePrimary']: true,
    helloOk: true,
    ...(options.mongos ? { msg: 'isdbgrid' } : {}),
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

function reply(command: Document, options: WireServerOptions, cursors: OpenCursors): Document {
  const name = Object.keys(command)[0]!
  if (['hello', 'ismaster', 'isMaster'].includes(name)) return hello(options, name !== 'hello')
  if (name === 'find' || name === 'aggregate') {
    const ns = `${command.$db}.${name === 'find' ? command.find : command.aggregate}`
    const batchSize = name === 'find' ? command.batchSize : command.cursor?.batchSize
    return batch(cursors, ns, options.documents ?? [], batchSize, true)
  }
  if (name === 'getMore') {
    const id = BigInt(String(command.getMore))
    const cursor = cursors.get(id)
    cursors.delete(id)
    return batch(cursors, cursor?.ns ?? '', cursor?.documents ?? [], command.batchSize, false)
  }
  if (name === 'count') return { n: (options.documents ?? []).length, ok: 1 }
  return { ok: 1 }
}

function frame(opCode: number, responseTo: number, body: Buffer): Buffer {
  const header = Buffer.alloc(16)
  header.writeInt32LE(16 + body.length, 0)
  header.writeInt32LE(0, 4)
  header.writeInt32LE(responseTo, 8)
  header.writeInt32LE(opCode, 12)
  return Buffer.concat([header, body])
}

export async function startWireServer(options: WireServerOptions = {}): Promise<WireServer> {
  const commands: Document[] = []
  const cursors: OpenCursors = new Map()
  const sockets = new Set<Socket>()
  const answer = async (socket: Socket, message: Buffer) => {
    const requestId = message.readInt32LE(4)
    const opCode = message.readInt32LE(12)
    let command: Document
    if (opCode === OP_MSG) {
      // flagBits, then section kind 0 (the body); document sequences (kind 1) are not needed here.
      command = BSON.deserialize(message.subarray(21, 21 + message.readInt32LE(21)), { promoteLongs: false })
    } else if (opCode === OP_QUERY) {
      const nameEnd = message.indexOf(0, 20)
      const at = nameEnd + 9
      command = BSON.deserialize(message.subarray(at, at + message.readInt32LE(at)), { promoteLongs: false })
    } else {
      socket.destroy()
      return
    }
    commands.push(command)
    const name = Object.keys(command)[0]
    if (options.delayMS && (name === 'find' || name === 'aggregate')) {
      await new Promise((resolve) => setTimeout(resolve, options.delayMS))
    }
    if (socket.destroyed) return
    const document = Buffer.from(BSON.serialize(reply(command, options, cursors)))
    if (opCode === OP_MSG) {
      socket.write(frame(OP_MSG, requestId, Buffer.concat([Buffer.alloc(5), document])))
    } else {
      const prefix = Buffer.alloc(20)
      prefix.writeInt32LE(1, 16) // numberReturned
      socket.write(frame(OP_REPLY, requestId, Buffer.concat([prefix, document])))
    }
  }
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => socket.destroy())
    let pending = Buffer.alloc(0)
    socket.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk])
      while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
        const length = pending.readInt32LE(0)
        void answer(socket, pending.subarray(0, length))
        pending = pending.subarray(length)
      }
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  return {
    uri: `mongodb://127.0.0.1:${port}/?directConnection=true`,
    commands,
    received: (name) => commands.filter((command) => Object.keys(command)[0] === name),
    async stop() {
      for (const socket of sockets) socket.destroy()
      server.close()
      await once(server, 'close')
    },
  }
}
