// `npm run soak`: a mixed read load on one client (find, findLazy, cursors left early with `break`,
// findOne, countDocuments, aggregate, findJson, pipeJson into a consumer that goes away, bursts of
// reads that time out, reads that fail in JS while decoding or transforming, Arrow cursors read by
// concurrent calls, and Arrow cursors, pipeArrow and pipeJson whose getMores fail: their server
// cursor is killed under them), every result checked, for --seconds (default 300).
// Samples RSS (after a forced GC) and the client's open cursors every second, then compares the
// first window (one minute, or a fifth of a shorter run) with the last one. Fails (exit 1) on any
// wrong result or error, when the last window's median RSS exceeds the first's by more than
// max(32 MB, 25 %), when more cursors are open than there are workers (each runs one operation
// at a time), when any cursor is still open at the end, or when the server still has a cursor
// that a `break` left. The last line of output is a JSON report.
//
// The server's own count of open cursors is not available on the dev server (FerretDB 1.24 has no
// cursor metrics in serverStatus, an empty currentOp and no $currentOp), so the cursors left with
// `break` are checked one by one: a getMore on each must fail with CursorNotFound.
//
// Usage: node --expose-gc scripts/soak.mjs [--seconds N] [--concurrency N] [--uri mongodb://...]
// Without --uri (or MONGODB_URI) it starts a private embedded dev server.
import { createRequire } from 'node:module'
import { Writable } from 'node:stream'
import { parseArgs } from 'node:util'
import { startDevdb } from './devdb.mjs'

const require = createRequire(import.meta.url)
const { MongoClient, MongoCursorExhaustedError, MongoOperationTimeoutError } = require('../dist/index.js')
const { Long, MongoClient: OfficialClient } = require('mongodb')

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '300' },
    concurrency: { type: 'string', default: '8' },
    uri: { type: 'string' },
  },
})
const seconds = Number(values.seconds)
const concurrency = Number(values.concurrency)
if (!(seconds > 0) || !(concurrency > 0)) throw new Error('--seconds and --concurrency must be positive')

const DOCUMENTS = 2_000
/** Cursors left with `break` whose ids are kept to check on the server at the end. */
const MAX_PROBED_CURSORS = 200
const GROUPS = 10
const MB = 1024 * 1024
const windowSeconds = Math.min(60, Math.max(2, Math.floor(seconds / 5)))

const server = values.uri || process.env.MONGODB_URI ? null : await startDevdb()
const uri = values.uri ?? process.env.MONGODB_URI ?? server.uri
const dbName = `soak_${process.pid}_${Date.now().toString(36)}`

const documents = Array.from({ length: DOCUMENTS }, (_, i) => ({
  _id: i,
  group: i % GROUPS,
  name: `item ${i}`,
  tags: ['a', 'b', 'c'].slice(0, i % 4),
  nested: { at: new Date(1_700_000_000_000 + i), score: i / 3 },
}))
const official = await OfficialClient.connect(uri)
await official.db(dbName).collection('items').insertMany(documents)

const client = await MongoClient.connect(uri, { maxPoolSize: 5 })
const items = client.db(dbName).collection('items')

// The pipes whose getMores fail: their server cursor is killed as soon as their find answers,
// found by the find's `comment` on a client of their own that reports its commands.
const KILLED_PIPE = 'soak: killed under a pipe '
const piping = await MongoClient.connect(uri, { maxPoolSize: 5, monitorCommands: true })
const pipedItems = piping.db(dbName).collection('items')
const findsToKill = new Map()
/** Settles once the cursor of the pipe whose find carried `comment` has been killed. */
const killedUnder = new Map()
const killedUnderPipe = (comment) => {
  let settle
  const killed = new Promise((resolve) => (settle = resolve))
  killedUnder.set(comment, settle)
  return killed
}
piping.on('commandStarted', (event) => {
  const comment = String(event.command.comment)
  if (event.commandName === 'find' && comment.startsWith(KILLED_PIPE))
    findsToKill.set(event.requestId, comment)
})
piping.on('commandSucceeded', (event) => {
  const comment = findsToKill.get(event.requestId)
  if (comment === undefined) return
  findsToKill.delete(event.requestId)
  // The pipe's destination takes nothing until the kill is done (its reads ahead are bounded), so
  // the pipe cannot reach the end of the results first, however loaded the machine.
  const id = String(event.reply.cursor.id)
  killCursor(event.reply.cursor.id).then(
    () => killedUnder.get(comment)?.({ id }),
    (error) => killedUnder.get(comment)?.({ id, error }),
  )
})
// FerretDB 1.24 answers a getMore that was running when its cursor was killed with what it had
// read so far as the last batch (cursor id 0, fewer documents than the batch size: seen with 0, 7,
// 9 and 19 of 20) instead of CursorNotFound (mongod: CursorKilled): the server says the results
// ended there, and any driver ends there. rumongo reads ahead, so its getMore may be that one: the
// cursor ids the server ended so, which the checks below accept as the server's answer.
const endedByTheServer = new Set()
/** The batch size of the reads whose cursor is killed under them. */
const KILLED_BATCH_SIZE = 20
const getMores = new Map()
/** How the reads whose cursor was killed under them ended (checked: see the operations). */
const killedReads = { rejected: 0, endedByTheServer: 0 }
const replies = new Map()
piping.on('commandStarted', (event) => {
  if (event.commandName === 'getMore') getMores.set(event.requestId, String(event.command.getMore))
})
piping.on('commandSucceeded', (event) => {
  const id = getMores.get(event.requestId)
  getMores.delete(event.requestId)
  const cursor = event.reply?.cursor
  if (id !== undefined)
    replies.set(id, [...(replies.get(id) ?? []), `${cursor?.id}:${cursor?.nextBatch?.length}`])
  if (id !== undefined && String(cursor?.id) === '0' && cursor.nextBatch?.length < KILLED_BATCH_SIZE)
    endedByTheServer.add(id)
})
piping.on('commandFailed', (event) => {
  const id = getMores.get(event.requestId)
  if (id !== undefined) replies.set(id, [...(replies.get(id) ?? []), `failed:${event.failure?.codeName}`])
  getMores.delete(event.requestId)
})
piping.on('commandFailed', (event) => {
  const comment = findsToKill.get(event.requestId)
  findsToKill.delete(event.requestId)
  // No cursor to kill: the pipe rejects with the find's error (checked as a wrong result).
  if (comment !== undefined) killedUnder.get(comment)?.({})
})

/** Kills server cursor `id` from another client: the getMores of its owner then fail. */
async function killCursor(id) {
  const cursors = [typeof id === 'number' ? Long.fromNumber(id) : id]
  const { cursorsKilled } = await official.db(dbName).command({ killCursors: 'items', cursors })
  check(cursorsKilled.length === 1, 'killCursors from another client kills the cursor')
}

const leftCursorIds = []

function check(condition, what) {
  if (!condition) throw new Error(`wrong result: ${what}`)
}

const operations = [
  async (n) => {
    const group = n % GROUPS
    const found = await items.find({ group }, { sort: { _id: 1 }, batchSize: 64 }).toArray()
    check(found.length === DOCUMENTS / GROUPS && found.every((d, k) => d._id === group + k * GROUPS), 'find')
  },
  async (n) => {
    const group = n % GROUPS
    const lazy = await items.findLazy({ group }, { sort: { _id: 1 }, batchSize: 50 })
    check(lazy.length === DOCUMENTS / GROUPS && lazy[7].name === `item ${group + 7 * GROUPS}`, 'findLazy')
  },
  async () => {
    let seen = 0
    const cursor = items.find({}, { batchSize: 20 })
    for await (const document of cursor) {
      check(typeof document._id === 'number', 'cursor document')
      if (++seen === 30) break
    }
    check(seen === 30, 'cursor with break')
    if (leftCursorIds.length < MAX_PROBED_CURSORS) leftCursorIds.push(cursor.id)
  },
  async (n) => {
    const id = (n * 7919) % DOCUMENTS
    const one = await items.findOne({ _id: id })
    check(one?.name === `item ${id}` && one.nested.at.getTime() === 1_700_000_000_000 + id, 'findOne')
  },
  async (n) => {
    check((await items.countDocuments({ group: n % GROUPS })) === DOCUMENTS / GROUPS, 'countDocuments')
  },
  async () => {
    const groups = await items.aggregate([{ $group: { _id: '$group', n: { $sum: 1 } } }]).toArray()
    check(groups.length === GROUPS && groups.every((g) => g.n === DOCUMENTS / GROUPS), 'aggregate')
  },
  async (n) => {
    const group = n % GROUPS
    const json = JSON.parse(
      await items.findJson({ group }, { sort: { _id: 1 }, batchSize: 64, format: 'plain' }),
    )
    check(json.length === DOCUMENTS / GROUPS && json[3].name === `item ${group + 3 * GROUPS}`, 'findJson')
  },
  async () => {
    // A consumer that goes away after the first batch: pipeJson rejects and closes its cursor.
    let writes = 0
    const leaving = new Writable({
      write(_chunk, _encoding, done) {
        done(++writes === 3 ? new Error('consumer went away') : undefined)
      },
    })
    const piped = await items.pipeJson({}, { batchSize: 20 }, leaving).then(
      () => 'completed',
      (error) => error.message,
    )
    check(piped === 'consumer went away', 'pipeJson into a consumer that goes away')
  },
  async (n) => {
    // A burst of reads that time out (more than the pool's 5 connections): the next read must not
    // wait for the pool to recover.
    const id = (n * 7919) % DOCUMENTS
    const burst = await Promise.allSettled(
      Array.from({ length: 20 }, () => items.findOne({ _id: id }, { timeoutMS: 1 })),
    )
    for (const result of burst) {
      if (result.status === 'fulfilled') check(result.value?._id === id, 'findOne in a timed-out burst')
      else
        check(
          result.reason instanceof MongoOperationTimeoutError,
          'a timed-out read fails with MongoOperationTimeoutError',
        )
    }
    // 5 s: the stall this guards against (timed-out reads left queued for the pool) held the next
    // read 8-31 s, while a sound read waits behind the soak's other workers (8 on 5 connections):
    // about 2 s a read on a loaded 2-vCPU machine, where a 2 s bound failed 2 runs in 3.
    const started = Date.now()
    const one = await items.findOne({ _id: id }, { timeoutMS: 5_000 })
    check(one?._id === id && Date.now() - started < 5_000, 'the read after a timed-out burst')
  },
  async () => {
    // Reads that fail in JS: a batch js-bson refuses to decode, a map() transform that throws in
    // the second batch, which closes its cursor as the official one's (killed on the server): a
    // later read rejects.
    const refused = items.find({}, { batchSize: 20, useBigInt64: true, promoteLongs: false })
    const decodeError = await refused.next().then(
      () => null,
      (error) => error,
    )
    check(decodeError?.name === 'BSONError', 'a batch js-bson refuses fails the read')
    const transformed = items.find({}, { sort: { _id: 1 }, batchSize: 20 }).map((document) => {
      if (document._id === 25) throw new Error('transform failed')
      return document
    })
    let read = 0
    const transformError = await (async () => {
      for (;;) if ((await transformed.next()) !== null) read++
    })().catch((error) => error)
    check(
      transformError?.message === 'transform failed' && read === 25,
      'a throwing transform fails the read',
    )
    const after = await transformed.next().catch((error) => error)
    check(after instanceof MongoCursorExhaustedError, 'a read after a failed read rejects')
    await Promise.all([refused.close(), transformed.close()])
    if (leftCursorIds.length < MAX_PROBED_CURSORS) leftCursorIds.push(transformed.id)
  },
  async () => {
    // An Arrow cursor read by 24 concurrent next() calls: each record batch once, in order.
    const cursor = items.findArrowCursor({}, { sort: { _id: 1 }, batchSize: 100 })
    const batches = await Promise.all(Array.from({ length: 24 }, () => cursor.next()))
    const ids = batches.filter(Boolean).flatMap((batch) => [...batch.getChild('_id')])
    check(
      ids.length === DOCUMENTS &&
        ids.every((id, k) => id === k) &&
        batches.slice(20).every((b) => b === null),
      'concurrent reads of an Arrow cursor',
    )
  },
  async () => {
    // An Arrow cursor whose server cursor is killed after its first record batch: a getMore fails,
    // the read rejects with CursorNotFound (never an early end with rows missing), every later read
    // with MongoCursorExhaustedError.
    const cursor = pipedItems.findArrowCursor({}, { sort: { _id: 1 }, batchSize: KILLED_BATCH_SIZE })
    let rows = (await cursor.next()).numRows
    const id = String(cursor.id)
    await killCursor(cursor.id)
    const failure = await (async () => {
      for await (const batch of cursor) rows += batch.numRows
    })().then(
      () => null,
      (error) => error,
    )
    if (failure === null && endedByTheServer.delete(id)) return void killedReads.endedByTheServer++
    killedReads.rejected++
    check(
      failure?.codeName === 'CursorNotFound' && rows < DOCUMENTS,
      `an Arrow cursor whose getMore fails (${rows} rows, then ${failure?.stack ?? failure}; getMores ${replies.get(id)})`,
    )
    const after = await cursor.nextIPC().catch((error) => error)
    check(after instanceof MongoCursorExhaustedError, 'an Arrow read after a failed one rejects')
  },
  async (n) => {
    // pipeArrow / pipeJson into a slow reader, their server cursor killed as soon as the find
    // answers: a getMore fails and the pipe rejects, never resolves with rows missing.
    const comment = `${KILLED_PIPE}${n}`
    const killed = killedUnderPipe(comment)
    const destination = new Writable({
      highWaterMark: 1,
      write: (_chunk, _encoding, done) => void killed.then(() => setTimeout(done, 2)),
    })
    const options = { sort: { _id: 1 }, batchSize: KILLED_BATCH_SIZE, comment }
    const piped =
      n % 2 === 0
        ? pipedItems.pipeArrow({}, { ...options, rowsPerBatch: 20 }, destination)
        : pipedItems.pipeJson({}, options, destination)
    const failure = await piped.then(
      () => null,
      (error) => error,
    )
    killedUnder.delete(comment)
    const kill = await killed
    if (kill.error) throw kill.error
    if (failure === null && endedByTheServer.delete(kill.id)) return void killedReads.endedByTheServer++
    killedReads.rejected++
    check(
      failure?.codeName === 'CursorNotFound',
      `${n % 2 === 0 ? 'pipeArrow' : 'pipeJson'} whose getMore fails`,
    )
  },
]

let completed = 0
let inFlight = 0
const errors = []
let stopping = false

async function worker(id) {
  for (let n = id; !stopping; n += concurrency) {
    inFlight++
    try {
      await operations[n % operations.length](n)
      completed++
    } catch (error) {
      errors.push(error)
      if (errors.length <= 5) console.error(`soak: ${error.stack ?? error}`)
    } finally {
      inFlight--
    }
  }
}

/** One sample a second: RSS after a full GC and the client's open cursors. */
const samples = []
const started = Date.now()
const sampler = setInterval(async () => {
  globalThis.gc?.()
  samples.push({
    at: (Date.now() - started) / 1000,
    rss: process.memoryUsage().rss,
    openCursors: (await client.openCursorCount()) + (await piping.openCursorCount()),
    inFlight,
  })
}, 1_000)

const workers = Array.from({ length: concurrency }, (_, id) => worker(id))
await new Promise((resolve) => setTimeout(resolve, seconds * 1_000))
stopping = true
await Promise.all(workers)
clearInterval(sampler)
const openCursorsAtEnd = (await client.openCursorCount()) + (await piping.openCursorCount())
const serverCursorsLeft = await serverCursorsStillOpen(leftCursorIds)

await Promise.all([client.close(), piping.close()])
await official.db(dbName).dropDatabase()
await official.close()
await server?.stop()

/**
 * How many of `ids` the server still has open: a getMore on each, from another client, must fail
 * with CursorNotFound. The kills are sent in the background, so this waits up to 5 s for them.
 */
async function serverCursorsStillOpen(ids) {
  let open = ids
  for (const deadline = Date.now() + 5_000; open.length > 0 && Date.now() < deadline;) {
    const alive = await Promise.all(
      open.map((id) =>
        official
          .db(dbName)
          .command({ getMore: id, collection: 'items', batchSize: 1 })
          .then(
            () => true,
            (error) => error.codeName !== 'CursorNotFound',
          ),
      ),
    )
    open = open.filter((_, index) => alive[index])
    if (open.length > 0) await new Promise((resolve) => setTimeout(resolve, 200))
  }
  return open.length
}

const median = (list) => {
  const sorted = [...list].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? 0
}
const inWindow = (from, to) => samples.filter((sample) => sample.at > from && sample.at <= to)
const end = samples.at(-1)?.at ?? seconds
const first = inWindow(0, windowSeconds)
const last = inWindow(end - windowSeconds, end)
const firstRss = median(first.map((sample) => sample.rss))
const lastRss = median(last.map((sample) => sample.rss))
const boundRss = Math.max(32 * MB, firstRss * 0.25)
const maxOpen = Math.max(0, ...samples.map((sample) => sample.openCursors))
const tooManyOpen = samples.filter((sample) => sample.openCursors > concurrency).length

const report = {
  ok:
    errors.length === 0 &&
    lastRss - firstRss <= boundRss &&
    tooManyOpen === 0 &&
    openCursorsAtEnd === 0 &&
    serverCursorsLeft === 0,
  seconds,
  concurrency,
  operations: completed,
  errors: errors.length,
  windowSeconds,
  rssMB: {
    firstWindow: +(firstRss / MB).toFixed(1),
    lastWindow: +(lastRss / MB).toFixed(1),
    growth: +((lastRss - firstRss) / MB).toFixed(1),
    bound: +(boundRss / MB).toFixed(1),
  },
  openCursors: {
    max: maxOpen,
    firstWindowMax: Math.max(0, ...first.map((sample) => sample.openCursors)),
    lastWindowMax: Math.max(0, ...last.map((sample) => sample.openCursors)),
    samplesAboveConcurrency: tooManyOpen,
  },
  openCursorsAtEnd,
  serverCursors: { probed: leftCursorIds.length, stillOpen: serverCursorsLeft },
  killedReads,
  gc: typeof globalThis.gc === 'function',
}
console.log(
  `soak: ${completed} operations in ${seconds} s, ${errors.length} errors; RSS median ` +
    `${report.rssMB.firstWindow} MB (first ${windowSeconds} s) -> ${report.rssMB.lastWindow} MB ` +
    `(last ${windowSeconds} s), bound +${report.rssMB.bound} MB; open cursors max ${maxOpen}, ` +
    `at end ${openCursorsAtEnd}; cursors left with break still open on the server ` +
    `${serverCursorsLeft} of ${leftCursorIds.length}; reads whose cursor was killed: ` +
    `${killedReads.rejected} rejected, ${killedReads.endedByTheServer} ended by the server: ` +
    `${report.ok ? 'PASS' : 'FAIL'}`,
)
console.log(JSON.stringify(report))
process.exit(report.ok ? 0 : 1)
