// A seeded fault sweep over every read path: one fault (setup/fault_server.ts) at a seeded point of
// a cursor of 10 documents served in batches of 3 (a first batch and three getMores), for each
// path. Every (path, fault) must end in the exact full result or a typed rejection (a MongoError,
// or an error with a `code`), never a shorter result resolved as complete; settle within a generous
// bound; raise no unhandled rejection; and leave a client whose close() resolves. Where the
// official driver has the path, it runs on the same fault (a second server with the same script)
// and is the oracle for the outcome: the same error class, the same result, a killCursors where it
// sends one.
import { PassThrough } from 'node:stream'
import { inspect } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BSONError, Long, type Document } from 'bson'
import { MongoClient as OfficialClient } from 'mongodb'
import { MongoClient, MongoError } from 'rumongo'
import { eventToken, insertEvent, startChangeStreamServer } from './setup/change_stream_server.js'
import { rawFault, startFaultServer, type Fault } from './setup/fault_server.js'

const TOTAL = 10
const BATCH = 3
/** Data replies of a cursor path: the first batch and three getMores. */
const CURSOR_REPLIES = Math.ceil(TOTAL / BATCH)
const NO_HANG_MS = 5_000
/**
 * The timeouts of the never-answering cases: short, the bound above is what proves "no hang". At
 * 150 ms, a loaded machine (load 8-11) sometimes went past them before the fault (in connect()'s
 * ping, a find: the case then failed there) or in the read after it (both drivers).
 */
const SHORT_MS = 1_000
const SEED = 16

/** mulberry32: a small seeded generator, so that every run injects the same faults. */
function seeded(seed: number) {
  let state = seed >>> 0
  return (below: number) => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return (((t ^ (t >>> 14)) >>> 0) / 4294967296) * below
  }
}
const random = seeded(SEED)
const pick = (low: number, high: number) => low + Math.floor(random(high - low + 1))

interface FaultCase {
  name: string
  fault: Fault
  /** Client options the fault needs (a deadline for a server that never answers). */
  options?: Record<string, unknown>
  /** Close the client while the faulty reply is awaited (a server that never answers, no deadline). */
  closeWhileWaiting?: boolean
  /** Whether the official driver is the oracle here (it has the behaviour); default true. */
  oracle?: boolean
}

const headerAt = pick(1, 15)
const documentAt = pick(1, 30)
/**
 * The faults that close the connection: each costs both drivers a server check (at least 500 ms,
 * minHeartbeatFrequencyMS) before the next read, so each path meets one of them, in turn (every
 * one of them meets several paths).
 */
const CONNECTION_FAULTS: FaultCase[] = [
  { name: 'closed before the reply', fault: { kind: 'closeBefore' } },
  { name: `closed ${headerAt} bytes into the header`, fault: { kind: 'cut', at: headerAt } },
  { name: 'closed after the whole header', fault: { kind: 'cut', at: 16 } },
  {
    name: `closed ${documentAt} bytes into a document`,
    fault: { kind: 'cut', at: documentAt, inDocument: true },
  },
  { name: 'closed after the reply', fault: { kind: 'closeAfter' } },
  { name: 'messageLength too long, then closed', fault: { kind: 'messageLength', delta: pick(1, 64) } },
]
const FAULTS: FaultCase[] = [
  { name: 'in pieces of 1 byte', fault: { kind: 'pieces', size: 1 } },
  { name: 'in pieces of 7 bytes', fault: { kind: 'pieces', size: pick(2, 7) } },
  { name: 'messageLength too short', fault: { kind: 'messageLength', delta: -pick(1, 8) } },
  { name: 'document length too long', fault: { kind: 'documentLength', delta: pick(1, 9) } },
  { name: 'document length too short', fault: { kind: 'documentLength', delta: -pick(1, 9) } },
  {
    name: 'a retryable error (ShutdownInProgress)',
    fault: { kind: 'error', code: 91, codeName: 'ShutdownInProgress' },
  },
  { name: 'a non-retryable error (BadValue)', fault: { kind: 'error', code: 2, codeName: 'BadValue' } },
  { name: 'CursorNotFound', fault: { kind: 'error', code: 43, codeName: 'CursorNotFound' } },
  // The official driver 7 ignores timeoutMS ("timeoutMS has no effect", its warning): it waits.
  {
    name: 'no answer, timeoutMS',
    fault: { kind: 'silent' },
    options: { timeoutMS: SHORT_MS },
    oracle: false,
  },
  { name: 'no answer, socketTimeoutMS', fault: { kind: 'silent' }, options: { socketTimeoutMS: SHORT_MS } },
  { name: 'no answer, client closed', fault: { kind: 'silent' }, closeWhileWaiting: true },
  { name: 'cursor id 0 early', fault: { kind: 'endEarly' } },
]

type AnyClient = MongoClient | OfficialClient
type AnyCollection = ReturnType<ReturnType<MongoClient['db']>['collection']>

interface ReadPath {
  name: string
  /** Data replies the path reads (the fault lands on one of them). */
  replies: number
  /** Whether the official driver has this path (it then runs as the oracle). */
  official: boolean
  /** The numbers `n` of the documents read (or the path's own result). */
  read(collection: AnyCollection, client: AnyClient): Promise<unknown>
  /** What the path gives for the documents `ns` (all of them, or those before an early end). */
  expected(ns: number[]): unknown
}

const numbers = (documents: Document[]) => documents.map((document) => document.n as number)
const itself = (ns: number[]) => ns

const PATHS: ReadPath[] = [
  {
    name: 'find().toArray()',
    replies: CURSOR_REPLIES,
    official: true,
    read: async (items) => numbers(await items.find({}).toArray()),
    expected: itself,
  },
  {
    name: 'for await',
    replies: CURSOR_REPLIES,
    official: true,
    async read(items) {
      const ns: number[] = []
      for await (const document of items.find({})) ns.push(document.n)
      return ns
    },
    expected: itself,
  },
  {
    name: 'next()/hasNext()',
    replies: CURSOR_REPLIES,
    official: true,
    async read(items) {
      const cursor = items.find({})
      const ns: number[] = []
      while (await cursor.hasNext()) ns.push((await cursor.next())!.n)
      return ns
    },
    expected: itself,
  },
  {
    name: 'nextBatch()',
    replies: CURSOR_REPLIES,
    official: false,
    async read(items) {
      const cursor = items.find({})
      const ns: number[] = []
      for (let batch = await cursor.nextBatch(); batch !== null; batch = await cursor.nextBatch()) {
        ns.push(...numbers(batch))
      }
      return ns
    },
    expected: itself,
  },
  {
    name: 'stream()',
    replies: CURSOR_REPLIES,
    official: true,
    read: (items) =>
      new Promise((resolve, reject) => {
        const ns: number[] = []
        items
          .find({})
          .stream()
          .on('data', (document: Document) => ns.push(document.n))
          .on('error', reject)
          .on('end', () => resolve(ns))
      }),
    expected: itself,
  },
  {
    name: 'map()',
    replies: CURSOR_REPLIES,
    official: true,
    read: (items) =>
      items
        .find({})
        .map((document) => document.n * 2)
        .toArray(),
    expected: (ns) => ns.map((n) => n * 2),
  },
  {
    name: 'findOne',
    replies: 1,
    official: true,
    read: async (items) => (await items.findOne({}))?.n,
    expected: (ns) => ns[0],
  },
  {
    name: 'aggregate',
    replies: CURSOR_REPLIES,
    official: true,
    read: async (items) => numbers(await items.aggregate([]).toArray()),
    expected: itself,
  },
  {
    name: 'countDocuments',
    replies: 1,
    official: true,
    read: (items) => items.countDocuments({}),
    expected: () => TOTAL,
  },
  {
    name: 'distinct',
    replies: 1,
    official: true,
    read: (items) => items.distinct('n'),
    expected: () => Array.from({ length: TOTAL }, (_, n) => n),
  },
  {
    name: 'findJson',
    replies: CURSOR_REPLIES,
    official: false,
    read: async (items) => numbers(JSON.parse((await items.findJson({})).toString())),
    expected: itself,
  },
  {
    name: 'pipeJson',
    replies: CURSOR_REPLIES,
    official: false,
    async read(items) {
      const destination = new PassThrough()
      const chunks: Buffer[] = []
      destination.on('data', (chunk: Buffer) => chunks.push(chunk))
      await items.pipeJson({}, {}, destination)
      return numbers(JSON.parse(Buffer.concat(chunks).toString()))
    },
    expected: itself,
  },
  {
    name: 'findLazy',
    replies: CURSOR_REPLIES,
    official: false,
    read: async (items) => (await items.findLazy({})).map((document) => document.n as number),
    expected: itself,
  },
  {
    name: 'findArrow',
    replies: CURSOR_REPLIES,
    official: false,
    read: async (items) => Array.from((await items.findArrow({})).getChild('n')!.toArray(), Number),
    expected: itself,
  },
  {
    name: 'find in a session',
    replies: CURSOR_REPLIES,
    official: true,
    async read(items, client) {
      const session = client.startSession()
      try {
        return numbers(await items.find({}, { session: session as never }).toArray())
      } finally {
        // Ended after every outcome, at once: a step given up on (a timeout) does not hold it.
        await session.endSession()
      }
    },
    expected: itself,
  },
]

interface Outcome {
  value?: unknown
  error?: unknown
  hung: boolean
  /** Cursor ids the client killed. */
  killed: bigint[]
  /** Cursors the server still had open after the client closed (neither exhausted nor killed). */
  leftOpen: bigint[]
  closeHung: boolean
  /** What a second read on the same client gave after the fault (undefined: not run). */
  after?: { value?: unknown; error?: unknown; hung: boolean; elapsed: number }
}

/** Settles `promise` within `bound` ms, or says it hung; with how long it took. */
async function within<T>(promise: Promise<T>, bound = NO_HANG_MS) {
  let timer: NodeJS.Timeout | undefined
  const started = performance.now()
  const elapsed = () => Math.round(performance.now() - started)
  const hang = new Promise<{ hung: true; elapsed: number }>((resolve) => {
    timer = setTimeout(() => resolve({ hung: true, elapsed: elapsed() }), bound)
  })
  const settled = promise.then(
    (value) => ({ hung: false as const, value, elapsed: elapsed() }),
    (error: unknown) => ({ hung: false as const, error, elapsed: elapsed() }),
  )
  try {
    return await Promise.race([settled, hang])
  } finally {
    clearTimeout(timer)
  }
}

/** Polls `check` until it holds or `bound` ms have passed. */
async function until(check: () => boolean, bound: number) {
  for (const started = performance.now(); !check() && performance.now() - started < bound;) {
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
}

/**
 * The read after the fault has a deadline of its own, not the case's client timeoutMS: a new
 * connection, a find and three getMores took up to 953 ms under load 11 (1-11 ms quiet). What it
 * checks is that it reads the whole collection, not how fast.
 */
const afterReadOptions = (faultCase: FaultCase) =>
  faultCase.options?.timeoutMS === undefined ? {} : { timeoutMS: NO_HANG_MS }

/** Runs `path` with `Client` against a fresh fault server injecting `faultCase` at data reply `reply`. */
async function run(
  Client: typeof MongoClient | typeof OfficialClient,
  path: ReadPath,
  faultCase: FaultCase,
  reply: number,
): Promise<Outcome> {
  const server = await startFaultServer({ total: TOTAL, batchSize: BATCH, fault: faultCase.fault, reply })
  const client = new Client(server.uri, { maxPoolSize: 2, ...faultCase.options })
  try {
    await client.connect()
    const reading = path.read(client.db('db').collection('items') as AnyCollection, client)
    if (faultCase.closeWhileWaiting) {
      // Close once the read waits for the reply that never comes (or once it settled without it).
      void Promise.race([server.reached, reading.catch(() => undefined)]).then(() => client.close())
    }
    const outcome = await within(reading)
    // A read that timed out before the faulty reply leaves it unfired: the read after it must not
    // meet it (it did: a findArrow whose find took longer than timeoutMS, then a read that waited
    // for the silent reply).
    server.disarm()
    // The fault fired once: the client must read the collection again, whole (a connection left
    // with a broken reply's bytes unread must not serve this read).
    const after = faultCase.closeWhileWaiting
      ? undefined
      : await within(
          client.db('db').collection('items').find({}, afterReadOptions(faultCase)).toArray() as Promise<
            Document[]
          >,
        )
    const closed = await within(client.close())
    // Every connection closed: whatever the client sent before (a killCursors) has arrived, where a
    // 20 ms sleep lost to a late one under load. Both drivers close them within 13 ms here; one
    // left open is not waited for past the bound.
    await until(() => server.openConnections() === 0, NO_HANG_MS)
    return {
      ...outcome,
      after,
      killed: [...server.killed],
      leftOpen: server.openCursors(),
      closeHung: closed.hung,
    }
  } finally {
    await server.stop()
  }
}

const unexpected: unknown[] = []
const record = (error: unknown) => unexpected.push(error)
beforeAll(() => {
  process.on('unhandledRejection', record)
  process.on('uncaughtException', record)
})
afterAll(() => {
  process.off('unhandledRejection', record)
  process.off('uncaughtException', record)
})

/**
 * A rejection the caller can tell apart: a MongoError, js-bson's BSONError (a document the server
 * sent that does not parse: the official driver's class for it too), or an error with a `code`.
 */
function expectTyped(error: unknown) {
  expect(error, inspect(error)).toBeInstanceOf(Error)
  const typed =
    error instanceof MongoError ||
    BSONError.isBSONError(error) ||
    (error as { code?: unknown }).code !== undefined
  expect(typed, `untyped rejection ${inspect(error)}`).toBe(true)
}

/**
 * The class of a rejection as compared with the official driver's: js-bson's errors as one family
 * (the official driver's parser says BSONOffsetError where rumongo's Rust parser says BSONError,
 * with its own message: both are `instanceof BSONError`).
 */
const errorClass = (error: unknown) =>
  BSONError.isBSONError(error) ? 'BSONError' : (error as Error | undefined)?.name

/**
 * Faults after which the two drivers' killCursors differ, rumongo's kept: a reply whose documents do
 * not parse (rumongo reads its cursor id and kills the cursor the server keeps open, where the
 * official driver, whose parser fails first, cannot; on a last batch, id 0, rumongo sends nothing,
 * the official driver a killCursors of the id it had), and CursorNotFound (the official driver sends
 * a killCursors for the cursor the server just said it does not have), and a client closed while
 * a getMore waits (rumongo's close() kills the cursor, the official driver's does not). `leftOpen`
 * checks rumongo.
 */
const killsDiffer = (faultCase: FaultCase) =>
  faultCase.closeWhileWaiting ||
  faultCase.fault.kind === 'documentLength' ||
  faultCase.fault.kind === 'messageLength' ||
  (faultCase.fault.kind === 'error' && faultCase.fault.code === 43)

/** The data reply the fault replaces for `path`: seeded, among the replies the path reads. */
const firstConnectionFault = pick(0, CONNECTION_FAULTS.length - 1)
const cases = PATHS.flatMap((path, index) =>
  [...FAULTS, CONNECTION_FAULTS[(firstConnectionFault + index) % CONNECTION_FAULTS.length]!].map(
    (faultCase) => ({ path, faultCase, reply: Math.floor(random(path.replies)) }),
  ),
)

// Concurrent: each case has its own servers and clients, and mostly waits (server checks, pauses).
describe.concurrent('one fault on every read path', () => {
  it.each(cases.map((each) => [each.path.name, each.faultCase.name, each.reply, each] as const))(
    '%s: %s (data reply %i)',
    async (_, __, reply, { path, faultCase }) => {
      const ours = await run(MongoClient, path, faultCase, reply)
      const oracle = path.official && faultCase.oracle !== false
      const reference = oracle ? await run(OfficialClient, path, faultCase, reply) : undefined
      expect(ours.hung, 'the read is still pending').toBe(false)
      expect(ours.closeHung, 'close() is still pending').toBe(false)
      if (ours.after !== undefined) {
        expect(ours.after.hung, 'the read after the fault is still pending').toBe(false)
        expect(
          numbers((ours.after.value as Document[]) ?? []),
          `${inspect(ours.after.error)} after ${ours.after.elapsed} ms`,
        ).toEqual(Array.from({ length: TOTAL }, (_, n) => n))
      }
      // Nothing left open on the server: every cursor the fault left open was killed.
      expect(ours.leftOpen, `killed ${ours.killed}`).toEqual([])
      const full = path.expected(Array.from({ length: TOTAL }, (_, n) => n))
      if ('error' in ours) {
        expectTyped(ours.error)
        if (reference !== undefined && !reference.hung) {
          // The official driver's class for the same fault (a result there: see DIFFERENCES).
          expect(errorClass(ours.error), inspect(reference.error ?? reference.value)).toBe(
            errorClass(reference.error),
          )
        }
      } else if (faultCase.fault.kind === 'endEarly') {
        // The server said the results end with the faulty batch: what is before it, no more.
        const kept = path.replies === 1 ? TOTAL : Math.min(TOTAL, (reply + 1) * BATCH)
        expect(ours.value).toEqual(path.expected(Array.from({ length: kept }, (_, n) => n)))
        if (reference !== undefined) expect(ours.value).toEqual(reference.value)
      } else {
        expect(ours.value).toEqual(full)
        // The official driver fails where rumongo gives the exact result only on a reply it cannot
        // parse: with a RangeError of its own parser for a body that is shorter than it says
        // (distinct), a failure rumongo's parser does not have.
        if (reference?.error !== undefined) expect(reference.error).toBeInstanceOf(RangeError)
      }
      if (reference !== undefined && !reference.hung && !killsDiffer(faultCase)) {
        // A killCursors where the official driver sends one (for the cursor the fault left open).
        expect(ours.killed.length > 0, `killed ${ours.killed} (official ${reference.killed})`).toBe(
          reference.killed.length > 0,
        )
      }
      expect(unexpected).toEqual([])
    },
  )
})

describe('one fault in a change stream getMore (replica-set fake)', () => {
  const ns = { db: 'db', coll: 'items' }
  const EVENTS = Array.from({ length: 9 }, (_, n) => insertEvent(n, ns, (_id) => ({ _id, n })))
  /** The second getMore's reply on the fake's first cursor (id 7001): events 6..8, to cut or bend. */
  const getMoreReply = {
    cursor: {
      nextBatch: EVENTS.slice(6, 9).map((event, n) => ({ _id: eventToken(n + 6), ...event })),
      postBatchResumeToken: { _data: 'pb9' },
      id: Long.fromNumber(7001),
      ns: 'db.items',
    },
    ok: 1,
  }
  const STREAM_FAULTS = [...CONNECTION_FAULTS, ...FAULTS].filter(
    (each) =>
      each.fault.kind === 'cut' ||
      each.fault.kind === 'messageLength' ||
      each.fault.kind === 'documentLength',
  )

  it.each(STREAM_FAULTS.map((each) => [each.name, each] as const))('%s', async (_, faultCase) => {
    const outcomes = []
    for (const Client of [MongoClient, OfficialClient]) {
      const server = await startChangeStreamServer({
        events: EVENTS,
        batchSize: 3,
        fault: (name, count) =>
          name === 'getMore' && count === 2 ? rawFault(getMoreReply, faultCase.fault) : undefined,
      })
      const client = new Client(server.uri)
      try {
        await client.connect()
        const stream = client
          .db('db')
          .collection('items')
          .watch([], { batchSize: 3 } as never)
        const read = async () => {
          const seen: number[] = []
          while (seen.length < 9) seen.push(((await stream.next()) as Document).fullDocument.n)
          return seen
        }
        const outcome = await within(read())
        await within(stream.close())
        const closed = await within(client.close())
        outcomes.push({ ...outcome, closeHung: closed.hung })
      } finally {
        await server.stop()
      }
    }
    const [ours, official] = outcomes as [Outcome, Outcome]
    expect(ours.hung).toBe(false)
    expect(ours.closeHung).toBe(false)
    if ('error' in ours) {
      expectTyped(ours.error)
      expect(errorClass(ours.error), inspect(official.error ?? official.value)).toBe(
        errorClass(official.error),
      )
    } else {
      // Resumed: every event once, in order.
      expect(ours.value).toEqual(Array.from({ length: 9 }, (_, n) => n))
      expect(official.value).toEqual(ours.value)
    }
    expect(unexpected).toEqual([])
  })
})
