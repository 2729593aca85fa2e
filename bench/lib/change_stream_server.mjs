// A fake replica-set primary serving scripted insert events for the change-stream bench
// (bench/change_stream.mjs), run in a child process of its own so its work is not counted on
// the measured process's main thread. The replay server (bench/replay) serves collections, not
// change streams; this serves exactly: an aggregate whose first stage is `$changeStream` opens a
// cursor with an empty first batch (as a server does), each getMore returns the next
// `--batch` events with a `postBatchResumeToken`, pre-encoded at startup so serving costs a
// socket write; once the events are out, getMores wait `maxTimeMS` and return an empty batch.
// Anything else but the handshake, ping, endSessions and killCursors is refused.
//
//   node bench/lib/change_stream_server.mjs --dataset wide45|orders --events 100000 --batch 1000
//
// Sends `{ port }` over IPC once listening.
import { createServer } from 'node:net'
import { parseArgs } from 'node:util'
import { BSON, Long, Timestamp } from 'mongodb'
import { GENERATORS } from './datasets.mjs'

const { values } = parseArgs({
  options: {
    dataset: { type: 'string', default: 'wide45' },
    events: { type: 'string', default: '100000' },
    batch: { type: 'string', default: '1000' },
  },
})
const total = Number(values.events)
const batchSize = Number(values.batch)
const generate = GENERATORS[values.dataset]
if (!generate) throw new Error(`unknown dataset ${values.dataset}`)

const CURSOR_ID = 4242n
const OP_MSG = 2013
const OP_REPLY = 1
const OP_QUERY = 2004

function event(n) {
  const document = generate(n)
  return {
    _id: { _data: `826${n.toString(16).padStart(15, '0')}0100` },
    operationType: 'insert',
    clusterTime: new Timestamp({ t: 1_700_000_000, i: n + 1 }),
    wallTime: new Date(1_700_000_000_000 + n),
    fullDocument: document,
    ns: { db: 'bench', coll: values.dataset },
    documentKey: { _id: document._id },
  }
}

/** The body of every getMore reply, in order (the cursor id and ns are the same for all). */
const ns = `bench.${values.dataset}`
const batches = []
for (let start = 0; start < total; start += batchSize) {
  const nextBatch = []
  for (let n = start; n < Math.min(total, start + batchSize); n++) nextBatch.push(event(n))
  const end = start + nextBatch.length
  batches.push(
    BSON.serialize({
      cursor: {
        nextBatch,
        postBatchResumeToken: { _data: `826${end.toString(16).padStart(15, '0')}0200` },
        id: Long.fromBigInt(CURSOR_ID),
        ns,
      },
      operationTime: new Timestamp({ t: 1_700_000_000, i: end }),
      ok: 1,
    }),
  )
}

function hello() {
  return {
    helloOk: true,
    ismaster: true,
    isWritablePrimary: true,
    setName: 'bench',
    hosts: [address],
    me: address,
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

function frame(opCode, responseTo, body) {
  const header = Buffer.alloc(16)
  header.writeInt32LE(16 + body.length, 0)
  header.writeInt32LE(responseTo, 8)
  header.writeInt32LE(opCode, 12)
  return Buffer.concat([header, body])
}

function reply(responseTo, requestOpCode, bytes) {
  if (requestOpCode === OP_QUERY) {
    const prefix = Buffer.alloc(20)
    prefix.writeInt32LE(1, 16)
    return frame(OP_REPLY, responseTo, Buffer.concat([prefix, bytes]))
  }
  return frame(OP_MSG, responseTo, Buffer.concat([Buffer.alloc(5), bytes]))
}

function readCommand(message) {
  const opCode = message.readInt32LE(12)
  if (opCode === OP_QUERY) {
    const start = message.indexOf(0, 20) + 1 + 8
    return BSON.deserialize(message.subarray(start, start + message.readInt32LE(start)))
  }
  return BSON.deserialize(message.subarray(21, 21 + message.readInt32LE(21)))
}

/** Per connection: the next batch its cursor serves (a new aggregate starts over). */
function answer(command, state) {
  const name = Object.keys(command)[0]
  if (['hello', 'ismaster', 'isMaster'].includes(name)) return BSON.serialize(hello())
  if (['ping', 'endSessions', 'killCursors'].includes(name)) return BSON.serialize({ ok: 1 })
  if (name === 'aggregate' && command.pipeline?.[0]?.$changeStream) {
    state.next = 0
    return BSON.serialize({
      cursor: { firstBatch: [], id: Long.fromBigInt(CURSOR_ID), ns },
      operationTime: new Timestamp({ t: 1_700_000_000, i: 0 }),
      ok: 1,
    })
  }
  if (name === 'getMore') {
    if (state.next < batches.length) return batches[state.next++]
    return new Promise((resolve) =>
      setTimeout(
        () =>
          resolve(BSON.serialize({ cursor: { nextBatch: [], id: Long.fromBigInt(CURSOR_ID), ns }, ok: 1 })),
        Math.min(Number(command.maxTimeMS ?? 1000), 1000),
      ),
    )
  }
  return BSON.serialize({ ok: 0, errmsg: `not served: ${name}`, code: 59, codeName: 'CommandNotFound' })
}

const state = { next: 0 }
const server = createServer((socket) => {
  let pending = Buffer.alloc(0)
  // Requests are answered in order, one at a time (a waiting getMore holds the ones behind it).
  let answering = Promise.resolve()
  socket.on('error', () => socket.destroy())
  socket.on('data', (chunk) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk
    while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
      const message = pending.subarray(0, pending.readInt32LE(0))
      pending = pending.subarray(message.length)
      answering = answering.then(async () => {
        const bytes = await answer(readCommand(message), state)
        if (!socket.destroyed) socket.write(reply(message.readInt32LE(4), message.readInt32LE(12), bytes))
      })
    }
  })
})
let address = ''
server.listen(0, '127.0.0.1', () => {
  address = `127.0.0.1:${server.address().port}`
  process.send({ port: server.address().port })
})
process.on('disconnect', () => process.exit(0))
