// A fake MongoDB wire server for faults no real server produces (it stands for a broken server or
// proxy, not for MongoDB): it answers the handshake, `ping`, `endSessions` and `killCursors` itself
// and every other command with what the test's `answer` returns. Both drivers connect to it.
import { once } from 'node:events'
import { createServer, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { BSON, Long, type Document } from 'bson'

const OP_REPLY = 1
const OP_QUERY = 2004
const OP_MSG = 2013

/** What the server sends for a command: a reply document, raw bytes written as they are, or nothing. */
export type FakeReply = Document | { bytes: (requestId: number) => Buffer } | null

export interface FakeServer {
  uri: string
  /** The commands received (handshakes and monitoring excluded), in order. */
  commands: Document[]
  /** The cursor ids `killCursors` named. */
  killed: bigint[]
  close(): Promise<void>
}

const HANDSHAKE = new Set(['hello', 'ismaster', 'isMaster'])

/** A reply OP_MSG to request `requestId` carrying `body`. */
export function opMsg(requestId: number, body: Document): Buffer {
  const document = BSON.serialize(body)
  const header = Buffer.alloc(21)
  header.writeInt32LE(21 + document.length, 0)
  header.writeInt32LE(requestId + 1_000_000, 4)
  header.writeInt32LE(requestId, 8)
  header.writeInt32LE(OP_MSG, 12)
  header.writeUInt32LE(0, 16) // flagBits
  header.writeUInt8(0, 20) // section kind 0: the body
  return Buffer.concat([header, document])
}

/** A legacy OP_REPLY (the answer to an OP_QUERY handshake). */
function opReply(requestId: number, body: Document): Buffer {
  const document = BSON.serialize(body)
  const header = Buffer.alloc(36)
  header.writeInt32LE(36 + document.length, 0)
  header.writeInt32LE(requestId + 1_000_000, 4)
  header.writeInt32LE(requestId, 8)
  header.writeInt32LE(OP_REPLY, 12)
  header.writeInt32LE(0, 16) // responseFlags
  header.writeBigInt64LE(0n, 20) // cursorID
  header.writeInt32LE(0, 28) // startingFrom
  header.writeInt32LE(1, 32) // numberReturned
  return Buffer.concat([header, document])
}

function helloReply(): Document {
  return {
    helloOk: true,
    ismaster: true,
    isWritablePrimary: true,
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

/** The body of an OP_MSG (its kind-0 section), or of an OP_QUERY. */
function requestBody(message: Buffer): Document {
  const opCode = message.readInt32LE(12)
  if (opCode === OP_QUERY) {
    const collectionEnd = message.indexOf(0, 20)
    const start = collectionEnd + 1 + 8 // numberToSkip, numberToReturn
    const length = message.readInt32LE(start)
    return BSON.deserialize(message.subarray(start, start + length))
  }
  let at = 20
  while (at < message.length) {
    const kind = message.readUInt8(at)
    const length = message.readInt32LE(at + 1)
    if (kind === 0) return BSON.deserialize(message.subarray(at + 1, at + 1 + length))
    at += 1 + length
  }
  throw new Error('fake server: an OP_MSG without a body')
}

/** Starts the server; `answer` gets every command that is not a handshake, ping or killCursors. */
export async function startFakeServer(answer: (command: Document) => FakeReply): Promise<FakeServer> {
  const commands: Document[] = []
  const killed: bigint[] = []
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    let pending = Buffer.alloc(0)
    socket.on('data', (data) => {
      pending = Buffer.concat([pending, data])
      while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
        const message = pending.subarray(0, pending.readInt32LE(0))
        pending = pending.subarray(message.length)
        const requestId = message.readInt32LE(4)
        const legacy = message.readInt32LE(12) === OP_QUERY
        const command = requestBody(message)
        const name = Object.keys(command)[0]!
        let reply: FakeReply
        if (HANDSHAKE.has(name)) reply = helloReply()
        else if (name === 'ping' || name === 'endSessions') reply = { ok: 1 }
        else if (name === 'killCursors') {
          for (const id of command.cursors as (Long | number)[]) killed.push(BigInt(id.toString()))
          reply = { cursorsKilled: command.cursors, cursorsNotFound: [], cursorsAlive: [], ok: 1 }
        } else {
          commands.push(command)
          reply = answer(command)
        }
        if (reply === null) continue
        if (typeof reply.bytes === 'function') socket.write(reply.bytes(requestId))
        else socket.write(legacy ? opReply(requestId, reply) : opMsg(requestId, reply))
      }
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    uri: `mongodb://127.0.0.1:${port}/?directConnection=true&serverSelectionTimeoutMS=2000`,
    commands,
    killed,
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
