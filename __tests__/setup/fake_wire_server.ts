// A minimal MongoDB wire server for behaviour no real server shows on demand (what a client sends
// while it authenticates, a chosen reply to one command). It speaks OP_MSG and the legacy OP_QUERY
// handshake, answers `hello` as a standalone server, and hands every other command to `answer`.
import { once } from 'node:events'
import { createServer, type Server, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { BSON, type Document } from 'bson'

const OP_REPLY = 1
const OP_QUERY = 2004
const OP_MSG = 2013

export interface FakeWireServer {
  /** `host:port` of the server. */
  address: string
  /** Every command received (`hello` included), in order. */
  commands: Document[]
  stop(): Promise<void>
}

/** The reply of a standalone server to `hello` (no topologyVersion: drivers poll, never stream). */
function helloReply(): Document {
  return {
    ismaster: true,
    isWritablePrimary: true,
    helloOk: true,
    maxBsonObjectSize: 16 * 1024 * 1024,
    maxMessageSizeBytes: 48_000_000,
    maxWriteBatchSize: 100_000,
    localTime: new Date(),
    minWireVersion: 0,
    maxWireVersion: 21,
    connectionId: 1,
    ok: 1,
  }
}

/** Reads a command out of an OP_MSG or OP_QUERY body; `undefined` for other op codes. */
function readCommand(opCode: number, body: Buffer): Document | undefined {
  if (opCode === OP_MSG) {
    // flagBits, then sections; kind 0 holds the command, kind 1 document sequences.
    let offset = 4
    let command: Document | undefined
    while (offset < body.length) {
      const kind = body[offset]!
      offset += 1
      const size = body.readInt32LE(offset)
      if (kind === 0) command = BSON.deserialize(body.subarray(offset, offset + size))
      offset += size
    }
    return command
  }
  if (opCode === OP_QUERY) {
    const nameEnd = body.indexOf(0, 4)
    const start = nameEnd + 1 + 8
    const size = body.readInt32LE(start)
    return BSON.deserialize(body.subarray(start, start + size))
  }
  return undefined
}

/** A message answering request `responseTo` (the header's own requestID is not read by drivers). */
function frame(responseTo: number, opCode: number, body: Buffer): Buffer {
  const header = Buffer.alloc(16)
  header.writeInt32LE(16 + body.length, 0)
  header.writeInt32LE(responseTo, 8)
  header.writeInt32LE(opCode, 12)
  return Buffer.concat([header, body])
}

function reply(responseTo: number, opCode: number, document: Document): Buffer {
  const bytes = Buffer.from(BSON.serialize(document))
  if (opCode === OP_QUERY) {
    const prefix = Buffer.alloc(20)
    prefix.writeInt32LE(1, 16) // numberReturned; flags, cursorId and startingFrom stay 0
    return frame(responseTo, OP_REPLY, Buffer.concat([prefix, bytes]))
  }
  return frame(responseTo, OP_MSG, Buffer.concat([Buffer.alloc(5), bytes]))
}

/** Starts a server answering every command but `hello` with `answer(command)`. */
export async function startFakeWireServer(answer: (command: Document) => Document): Promise<FakeWireServer> {
  const commands: Document[] = []
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => socket.destroy())
    let pending = Buffer.alloc(0)
    socket.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk])
      while (pending.length >= 16 && pending.length >= pending.readInt32LE(0)) {
        const length = pending.readInt32LE(0)
        const requestId = pending.readInt32LE(4)
        const opCode = pending.readInt32LE(12)
        const command = readCommand(opCode, pending.subarray(16, length))
        pending = pending.subarray(length)
        if (command === undefined) continue
        commands.push(command)
        const name = Object.keys(command)[0]!.toLowerCase()
        const isHello = name === 'hello' || name === 'ismaster'
        const response = isHello ? helloReply() : answer(command)
        socket.write(reply(requestId, opCode, response))
      }
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    address: `127.0.0.1:${port}`,
    commands,
    async stop() {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
