// Arrow cursors build the next record batch ahead of the reader: a failure of that step (a getMore,
// an expired timeoutMS, client.close(), a type mismatch with onTypeMismatch: 'error') reaches the
// next read and every later one, never passes for the end of the results; concurrent reads queue in
// order. find / findJson (and the official driver's find) are the reference: they reject.
import { Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import * as arrow from 'apache-arrow'
import { MongoClient as OfficialClient } from 'mongodb'
import {
  MongoArrowTypeMismatchError,
  MongoClient,
  MongoCursorExhaustedError,
  MongoOperationTimeoutError,
  type ArrowCursor,
  type Collection,
} from 'rumongo'
import {
  CLOSE_CONNECTION,
  scriptedCursor,
  startWireServer,
  type ScriptedCursorOptions,
  type WireReply,
  type WireServer,
} from './setup/wire_server.js'

/** A wire server playing `script`, and both drivers connected to it (closed by `afterEach`). */
let opened: { server: WireServer; official: OfficialClient; ours: MongoClient } | undefined
async function serve(script: ScriptedCursorOptions) {
  const server = await startWireServer({ answer: scriptedCursor(script) })
  const official = await OfficialClient.connect(server.uri)
  const ours = await MongoClient.connect(server.uri)
  opened = { server, official, ours }
  return {
    theirs: official.db('db').collection('items'),
    items: ours.db('db').collection('items') as Collection,
    ours,
  }
}

afterEach(async () => {
  if (!opened) return
  const { server, official, ours } = opened
  opened = undefined
  await Promise.all([official.close(), ours.close()])
  await server.stop()
})

/** How `promise` settled: `{ value }` or `{ error }`. */
async function outcome<T>(promise: Promise<T>): Promise<{ value?: T; error?: any }> {
  return promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  )
}

/** Reads `cursor` with `for await` until it ends or fails: the rows read, and the error if it failed. */
async function readAll(cursor: ArrowCursor): Promise<{ rows: number; error?: any }> {
  let rows = 0
  try {
    for await (const batch of cursor) rows += batch.numRows
  } catch (error) {
    return { rows, error }
  }
  return { rows }
}

/** Every later read of a failed cursor rejects with MongoCursorExhaustedError, its cause the failure. */
async function expectFailedForGood(cursor: ArrowCursor, failure: unknown) {
  expect(cursor.closed).toBe(true)
  for (const read of [() => cursor.next(), () => cursor.nextIPC(), () => cursor.next()]) {
    const { error } = await outcome(read())
    expect(error).toBeInstanceOf(MongoCursorExhaustedError)
    expect(error.message).toMatch(/an earlier read failed/)
    expect(error.cause).toBe(failure)
  }
  await cursor.close()
  await expect(cursor.nextIPC()).rejects.toBeInstanceOf(MongoCursorExhaustedError)
}

/**
 * A slow reader: each chunk takes 20 ms, so the pipe waits for 'drain' while the next record batch
 * is built ahead (a failure there found nobody waiting for it).
 */
const sink = () =>
  new Writable({ highWaterMark: 1, write: (_chunk, _encoding, done) => setTimeout(done, 20) })

describe.each<[string, WireReply, Record<string, unknown>]>([
  ['a network error', CLOSE_CONNECTION, { name: 'MongoNetworkError' }],
  [
    'CursorNotFound',
    { ok: 0, code: 43, codeName: 'CursorNotFound', errmsg: 'cursor id 100 not found' },
    { name: 'MongoServerError', code: 43 },
  ],
])('%s on the 3rd getMore (100 rows in batches of 10)', (_, reply, expected) => {
  const script = {
    total: 100,
    batchSize: 10,
    fault: (getMore: number) => (getMore === 3 ? reply : undefined),
  }

  it('find, findJson and findArrow reject, as the official driver’s find', async () => {
    const { theirs, items } = await serve(script)
    expect((await outcome(theirs.find({}).toArray())).error).toMatchObject(expected)
    expect((await outcome(items.find({}).toArray())).error).toMatchObject(expected)
    expect((await outcome(items.findJson({}))).error).toMatchObject(expected)
    expect((await outcome(items.findArrow({}))).error).toMatchObject(expected)
  })

  it('an Arrow cursor rejects after the 30 rows before it, then every read is MongoCursorExhaustedError', async () => {
    const { items } = await serve(script)
    const cursor = items.findArrowCursor({})
    const { rows, error } = await readAll(cursor)
    expect(rows).toBe(30)
    expect(error).toMatchObject(expected)
    await expectFailedForGood(cursor, error)
  })

  it('nextIPC() the same way', async () => {
    const { items } = await serve(script)
    const cursor = items.findArrowCursor({})
    let rows = 0
    const { error } = await outcome(
      (async () => {
        for (let ipc; (ipc = await cursor.nextIPC()) !== null;) rows += arrow.tableFromIPC(ipc).numRows
      })(),
    )
    expect(rows).toBe(30)
    expect(error).toMatchObject(expected)
    await expectFailedForGood(cursor, error)
  })

  it('pipeArrow rejects, its destination destroyed', async () => {
    const { items } = await serve(script)
    const destination = sink()
    const { value, error } = await outcome(items.pipeArrow({}, { rowsPerBatch: 10 }, destination))
    expect(value).toBeUndefined()
    expect(error).toMatchObject(expected)
    expect(destination.destroyed).toBe(true)
  })
})

describe("a type mismatch at row 75 with onTypeMismatch: 'error'", () => {
  const script = {
    total: 100,
    batchSize: 10,
    document: (n: number) => ({ n, v: n === 75 ? 'seventy-five' : n }),
  }
  const options = { schema: { n: 'int32', v: 'int32' }, onTypeMismatch: 'error' } as const

  it('findArrow rejects (the reference)', async () => {
    const { items } = await serve(script)
    const { error } = await outcome(items.findArrow({}, options))
    expect(error).toBeInstanceOf(MongoArrowTypeMismatchError)
    expect(error.message).toMatch(/document 75 /)
  })

  it('an Arrow cursor rejects after the 70 rows of the batches before, then MongoCursorExhaustedError', async () => {
    const { items } = await serve(script)
    const cursor = items.findArrowCursor({}, options)
    const { rows, error } = await readAll(cursor)
    expect(rows).toBe(70)
    expect(error).toBeInstanceOf(MongoArrowTypeMismatchError)
    expect(error.message).toMatch(/document 75 /)
    await expectFailedForGood(cursor, error)
  })

  it('pipeArrow rejects', async () => {
    const { items } = await serve(script)
    const destination = sink()
    const { error } = await outcome(items.pipeArrow({}, { ...options, rowsPerBatch: 10 }, destination))
    expect(error).toBeInstanceOf(MongoArrowTypeMismatchError)
    expect(destination.destroyed).toBe(true)
  })
})

describe('timeoutMS expiring mid-read (getMores of 100 ms, a cursor that never ends)', () => {
  const script = { total: Infinity, batchSize: 10, getMoreDelayMS: 100 }

  // The official driver's find is no reference here: on this server its getMores go on past
  // timeoutMS (its toArray() had not settled after 20 s).
  it('find and findJson reject with MongoOperationTimeoutError', async () => {
    const { items } = await serve(script)
    expect((await outcome(items.find({}, { timeoutMS: 3000 }).toArray())).error).toBeInstanceOf(
      MongoOperationTimeoutError,
    )
    expect((await outcome(items.findJson({}, { timeoutMS: 3000 }))).error).toBeInstanceOf(
      MongoOperationTimeoutError,
    )
  })

  it('an Arrow cursor rejects with MongoOperationTimeoutError, then MongoCursorExhaustedError', async () => {
    const { items } = await serve(script)
    const cursor = items.findArrowCursor({}, { timeoutMS: 3000 })
    const { rows, error } = await readAll(cursor)
    expect(error).toBeInstanceOf(MongoOperationTimeoutError)
    expect(rows).toBeGreaterThan(0)
    await expectFailedForGood(cursor, error)
  })

  it('pipeArrow rejects with MongoOperationTimeoutError', async () => {
    const { items } = await serve(script)
    const { error } = await outcome(items.pipeArrow({}, { timeoutMS: 3000, rowsPerBatch: 10 }, sink()))
    expect(error).toBeInstanceOf(MongoOperationTimeoutError)
  })
})

describe('client.close() during a read (getMores of 50 ms, a cursor that never ends)', () => {
  const script = { total: Infinity, batchSize: 10, getMoreDelayMS: 50 }
  /**
   * pipeJson reads a find cursor, which the client's close() closes as the official driver's: a
   * read started after it throws MongoCursorExhaustedError; one in flight, the closed client's error.
   * pipeArrow reads an Arrow cursor, which does the same.
   */
  const closedCursor = /^(MongoClientClosedError|MongoNotConnectedError|MongoCursorExhaustedError)$/

  /**
   * A Writable that closes `client` 20 ms after its first chunk, which it takes 100 ms to write:
   * the pipe waits for 'drain' while the client closes under the record batch built ahead.
   */
  const closingOnFirstWrite = (client: MongoClient) => {
    let writes = 0
    return new Writable({
      highWaterMark: 1,
      write(_chunk, _encoding, done) {
        if (++writes === 1) setTimeout(() => void client.close(), 20)
        setTimeout(done, 100)
      },
    })
  }

  it.each(['pipeJson', 'pipeArrow'] as const)('%s rejects', async (method) => {
    const { items, ours } = await serve(script)
    const destination = closingOnFirstWrite(ours)
    const piped =
      method === 'pipeJson'
        ? items.pipeJson({}, {}, destination)
        : items.pipeArrow({}, { rowsPerBatch: 10 }, destination)
    const { value, error } = await outcome(piped)
    expect(value).toBeUndefined()
    expect(error?.name).toMatch(closedCursor)
  })

  it('an Arrow cursor: every read after it throws MongoCursorExhaustedError, as a find cursor', async () => {
    const { items, ours } = await serve(script)
    const cursor = items.findArrowCursor({})
    expect((await cursor.next())?.numRows).toBe(10)
    // The next record batch is being built (its getMores in flight) when the client closes.
    await sleep(20)
    await ours.close()
    expect(cursor.closed).toBe(true)
    const { rows, error } = await readAll(cursor)
    expect(error).toBeInstanceOf(MongoCursorExhaustedError)
    expect(rows).toBe(0)
    for (const read of [() => cursor.next(), () => cursor.nextIPC()])
      await expect(read()).rejects.toBeInstanceOf(MongoCursorExhaustedError)
  })
})

describe('client.close() with a record batch built ahead (batches of 4, 40 documents)', () => {
  // The reference: a find cursor of the same server. Arrow cursors were not told by the client's
  // close(): the record batch built ahead came next, then its build's failure.
  it.each(['find', 'findArrowCursor'] as const)(
    '%s: closed at once, every later read throws MongoCursorExhaustedError, the server cursor killed',
    async (method) => {
      const { items, ours } = await serve({ total: 40, batchSize: 4 })
      const server = opened!.server
      const cursor = method === 'find' ? items.find({}) : items.findArrowCursor({})
      expect(await cursor.next()).not.toBeNull()
      // Wait for the reads ahead (the next batch, the next record batch) to be ready.
      await sleep(100)
      await ours.close()
      // A find cursor says `closed` once what it holds buffered is taken (as the official one): an
      // Arrow cursor counts nothing buffered.
      if (method === 'findArrowCursor') expect(cursor.closed).toBe(true)
      const seen: unknown[] = []
      for (const read of [() => cursor.next(), () => cursor.next()]) {
        const { value, error } = await outcome(read())
        seen.push(value === undefined ? error?.name : 'a value')
      }
      expect(seen).toEqual(['MongoCursorExhaustedError', 'MongoCursorExhaustedError'])
      expect(server.killed).toEqual([100n])
    },
  )
})

describe('concurrent reads of an Arrow cursor (5,000 rows in batches of 100)', () => {
  const script = { total: 5000, batchSize: 100 }
  const numbers = (table: arrow.Table | arrow.RecordBatch) => [...table.getChild('n')!.toArray()]

  it('FindCursor.next() called 5,001 times at once gives every document in order, then null (the reference)', async () => {
    const { items } = await serve(script)
    const cursor = items.find({})
    const documents = await Promise.all(Array.from({ length: 5001 }, () => cursor.next()))
    expect(documents.slice(0, 5000).map((document) => document!.n)).toEqual([...Array(5000).keys()])
    expect(documents[5000]).toBeNull()
  })

  it('next() and nextIPC() called 60 times at once give every record batch once, in order, then null', async () => {
    const { items } = await serve(script)
    const cursor = items.findArrowCursor({})
    const reads = await Promise.all(
      Array.from({ length: 60 }, (_, index) => (index % 2 === 0 ? cursor.next() : cursor.nextIPC())),
    )
    const rows = reads
      .slice(0, 50)
      .flatMap((read) => (Buffer.isBuffer(read) ? numbers(arrow.tableFromIPC(read)) : numbers(read!)))
    expect(rows).toEqual([...Array(5000).keys()])
    expect(reads.slice(50)).toEqual(Array(10).fill(null))
    expect(cursor.closed).toBe(true)
  })

  it('for await beside next(): each batch goes to one of them, none lost', async () => {
    const { items } = await serve(script)
    const cursor = items.findArrowCursor({})
    const seen: number[][] = []
    const looping = (async () => {
      for await (const batch of cursor) seen.push(numbers(batch))
    })()
    const extra = await Promise.all(Array.from({ length: 5 }, () => cursor.next()))
    await looping
    for (const batch of extra) if (batch) seen.push(numbers(batch))
    expect(seen.flat().sort((a, b) => a - b)).toEqual([...Array(5000).keys()])
  })
})
