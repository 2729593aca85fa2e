// Leaving a cursor early (`close()`, `break` out of `for await`, `ArrowCursor.close()`) settles at
// once even while getMores rumongo started ahead on its own wait for a slow or silent server, sends
// killCursors and resolves only once the server has it (a process that exits right after leaves no
// cursor open), side by side with the official driver on a fake wire server (issue #32, points 6
// and 9).
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Long, MongoClient as OfficialClient, type Document } from 'mongodb'
import { FindCursor, MongoClient, MongoCursorExhaustedError } from 'rumongo'
import { CLOSE_CONNECTION, startWireServer, type WireReply, type WireServer } from './setup/wire_server.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const run = promisify(execFile)

/** How the fake server answers a getMore. */
type GetMore = 'slow' | 'never' | 'fails' | 'at once'

/** A getMore that answers, but only after this long: far beyond any bound asserted here. */
const SLOW_GETMORE_MS = 10_000
/**
 * How long leaving a cursor may take here: generous for a loaded machine, far below the slow
 * getMore (rumongo took as long as the getMores it had started ahead, or forever).
 */
const SETTLES_MS = 3_000

/**
 * A server whose finds open a cursor of their own (a new id each, two documents a batch) and
 * whose getMores answer as `getMore` says: `slow` after SLOW_GETMORE_MS, `never`, `fails` (the
 * connection closes: a network error), `at once` (two more documents, the cursor still open).
 */
async function cursorServer(getMore: GetMore): Promise<WireServer> {
  let nextId = 5000n
  const batch = (command: Document, key: 'firstBatch' | 'nextBatch', id: bigint) => ({
    cursor: { id: Long.fromBigInt(id), ns: `${command.$db}.items`, [key]: [{ n: 1 }, { n: 2 }] },
    ok: 1,
  })
  return startWireServer({
    answer(command): WireReply | Promise<WireReply> {
      if ('find' in command) return batch(command, 'firstBatch', (nextId += 1n))
      if (!('getMore' in command)) return { ok: 1 }
      const id = BigInt(String(command.getMore))
      if (getMore === 'never') return new Promise<WireReply>(() => {})
      if (getMore === 'fails') return CLOSE_CONNECTION
      if (getMore === 'at once') return batch(command, 'nextBatch', id)
      return new Promise((resolve) =>
        setTimeout(() => resolve(batch(command, 'nextBatch', id)), SLOW_GETMORE_MS),
      )
    },
  })
}

type AnyClient = MongoClient | OfficialClient
type AnyCursor = { next(): Promise<unknown> }

function items(client: AnyClient) {
  return (client as OfficialClient).db('test').collection('items')
}

/** Polls `check` until it holds (at most 10 s). */
async function until(check: () => boolean, waitMS = 10_000): Promise<void> {
  const deadline = Date.now() + waitMS
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** What `next()` gives once the cursor is closed: `null`, or the error's class name. */
async function nextAfterClose(cursor: AnyCursor): Promise<string> {
  return cursor.next().then(
    (document) => String(document),
    (error: Error) => error.constructor.name,
  )
}

/**
 * Reads the first document of a find, waits until the server has as many getMores as rumongo's
 * read-ahead sends (none for the official driver), then leaves the cursor as `how` says. Resolves
 * with how long leaving took, the cursor's id and whether the server had its killCursors as soon
 * as leaving resolved.
 */
async function leaveEarly(client: AnyClient, server: WireServer, how: 'break' | 'close()') {
  const getMoresBefore = server.received('getMore').length
  const expectGetMore = client instanceof MongoClient
  const cursor = items(client).find({}, { batchSize: 2 })
  let started = 0
  // Read before leaving: the official driver's cursor says 0 once closed.
  let id = 0n
  if (how === 'break') {
    for await (const _document of cursor) {
      if (expectGetMore) await until(() => server.received('getMore').length > getMoresBefore)
      id = BigInt(cursor.id!.toString())
      started = Date.now()
      break
    }
  } else {
    await cursor.next()
    if (expectGetMore) await until(() => server.received('getMore').length > getMoresBefore)
    id = BigInt(cursor.id!.toString())
    started = Date.now()
    await cursor.close()
  }
  const elapsed = Date.now() - started
  return { elapsed, killed: server.killed.includes(id), next: await nextAfterClose(cursor) }
}

describe.each(['slow', 'never'] as const)('a getMore started ahead that is %s to answer', (getMore) => {
  let server: WireServer
  let official: OfficialClient
  let rumongo: MongoClient

  beforeAll(async () => {
    server = await cursorServer(getMore)
    official = await OfficialClient.connect(server.uri)
    rumongo = await MongoClient.connect(server.uri)
  })

  afterAll(async () => {
    await Promise.all([official?.close(), rumongo?.close()])
    await server?.stop()
  })

  it.each(['break', 'close()'] as const)(
    '%s settles at once and the server has the killCursors when it does, as with the official driver',
    async (how) => {
      const expected = await leaveEarly(official, server, how)
      const actual = await leaveEarly(rumongo, server, how)
      expect(expected).toMatchObject({ killed: true, next: 'MongoCursorExhaustedError' })
      expect(actual.elapsed).toBeLessThan(SETTLES_MS)
      expect(actual).toMatchObject({ killed: expected.killed, next: expected.next })
    },
  )

  it('close() ends a next() waiting for that getMore with null, at once', async () => {
    const cursor = rumongo.db('test').collection('items').find({}, { batchSize: 2 })
    const getMoresBefore = server.received('getMore').length
    await cursor.next()
    await cursor.next()
    // The reader's own getMore (the first batch is read).
    const pending = cursor.next()
    await until(() => server.received('getMore').length > getMoresBefore)
    expect(await rumongo.openCursorCount()).toBe(1)
    // Read before close(): a killed cursor's id reads 0, as the official cursor's.
    const id = BigInt(cursor.id!.toString())
    const started = Date.now()
    await cursor.close()
    await expect(pending).resolves.toBeNull()
    expect(Date.now() - started).toBeLessThan(SETTLES_MS)
    expect(server.killed).toContain(id)
    // Counted by what the cursor is, not by whether a read holds it (the soak's "1 at the end").
    expect(await rumongo.openCursorCount()).toBe(0)
  })

  // Its span ends too: an OpenTelemetry span (and rumongo's record of the command) per getMore
  // left by close() would otherwise stay open for good. The getMore is not dropped at once (that
  // would close its connection): it ends when the server answers, or after 10 s unanswered.
  it('the getMore close() leaves running ends: answered, or after 10 s with a commandFailed', async () => {
    const client = await MongoClient.connect(server.uri, { monitorCommands: true })
    try {
      const started: number[] = []
      const ended = new Map<number, unknown>()
      client.on('commandStarted', (event) => {
        if (event.commandName === 'getMore') started.push(event.requestId)
      })
      client.on('commandSucceeded', (event) => ended.set(event.requestId, 'succeeded'))
      client.on('commandFailed', (event) => ended.set(event.requestId, event.failure))
      const cursor = client.db('test').collection('items').find({}, { batchSize: 2 })
      await cursor.next()
      await until(() => started.length > 0)
      await cursor.close()
      await until(() => started.every((requestId) => ended.has(requestId)), 25_000)
      if (getMore === 'never') expect(ended.get(started[0]!)).toBeInstanceOf(MongoCursorExhaustedError)
      // The slow answer (10 s after the getMore left) and the 10 s bound (from close()) race.
      else
        expect(ended.get(started[0]!)).toSatisfy(
          (end) => end === 'succeeded' || end instanceof MongoCursorExhaustedError,
        )
    } finally {
      await client.close()
    }
  }, 60_000)

  it('ArrowCursor.close() settles at once while the next record batch waits for it', async () => {
    const getMoresBefore = server.received('getMore').length
    const cursor = rumongo
      .db('test')
      .collection('items')
      .findArrowCursor({}, { batchSize: 2, rowsPerBatch: 2 })
    expect(await cursor.nextIPC()).not.toBeNull()
    await until(() => server.received('getMore').length > getMoresBefore)
    // Read before close(): a killed cursor's id reads 0, as the official cursor's.
    const id = BigInt(cursor.id!.toString())
    const started = Date.now()
    await cursor.close()
    expect(Date.now() - started).toBeLessThan(SETTLES_MS)
    expect(server.killed).toContain(id)
    expect(await cursor.nextIPC()).toBeNull()
  })
})

describe('a getMore started ahead that fails', () => {
  let server: WireServer
  let official: OfficialClient
  let rumongo: MongoClient

  beforeAll(async () => {
    server = await cursorServer('fails')
    official = await OfficialClient.connect(server.uri)
    rumongo = await MongoClient.connect(server.uri)
  })

  afterAll(async () => {
    await Promise.all([official?.close(), rumongo?.close()])
    await server?.stop()
  })

  // The reader never asked for that batch: its error does not surface, and the cursor reads as
  // the official driver's does once closed (which has sent no getMore).
  it('close() resolves, and next() after it gives what the official driver gives', async () => {
    const results = []
    for (const client of [official, rumongo]) {
      const getMoresBefore = server.received('getMore').length
      const cursor = items(client).find({}, { batchSize: 2 })
      await cursor.next()
      if (client === rumongo) {
        await until(() => server.received('getMore').length > getMoresBefore)
        await new Promise((resolve) => setTimeout(resolve, 100)) // the failure reaches the cursor
      }
      await cursor.close()
      results.push({ killed: cursor.killed, next: await nextAfterClose(cursor) })
    }
    expect(results[0]).toEqual({ killed: true, next: 'MongoCursorExhaustedError' })
    expect(results[1]).toEqual(results[0])
  })
})

describe('close() during the find', () => {
  /** A server whose finds answer after `delayMS` (never when null) with an open cursor. */
  const slowFind = (delayMS: number | null) => {
    let nextId = 7000n
    return startWireServer({
      answer(command): WireReply | Promise<WireReply> {
        if (!('find' in command)) return { ok: 1 }
        const reply = {
          cursor: { id: Long.fromBigInt((nextId += 1n)), ns: 'test.items', firstBatch: [{ n: 1 }] },
          ok: 1,
        }
        if (delayMS === null) return new Promise<WireReply>(() => {})
        return new Promise((resolve) => setTimeout(() => resolve(reply), delayMS))
      },
    })
  }

  /** Starts a read, waits until the server has the find, closes; resolves with how long close() took. */
  const closeDuringFind = async (client: AnyClient, server: WireServer) => {
    const findsBefore = server.received('find').length
    const cursor = items(client).find({}, { batchSize: 1 })
    const read = cursor.next().catch((error: Error) => error)
    await until(() => server.received('find').length > findsBefore)
    const started = Date.now()
    await cursor.close()
    return { elapsed: Date.now() - started, read }
  }

  // The official driver resolves at once too (and leaves the cursor open on the server).
  it('settles at once when the server never answers the find, as with the official driver', async () => {
    const server = await slowFind(null)
    const official = await OfficialClient.connect(server.uri)
    const rumongo = await MongoClient.connect(server.uri)
    try {
      expect((await closeDuringFind(official, server)).elapsed).toBeLessThan(SETTLES_MS)
      expect((await closeDuringFind(rumongo, server)).elapsed).toBeLessThan(SETTLES_MS)
    } finally {
      await Promise.all([official.close(), rumongo.close()])
      await server.stop()
    }
  })

  it('kills the cursor the find opens once it answers', async () => {
    const server = await slowFind(SETTLES_MS + 1_000)
    const rumongo = await MongoClient.connect(server.uri)
    try {
      const { elapsed, read } = await closeDuringFind(rumongo, server)
      expect(elapsed).toBeLessThan(SETTLES_MS)
      expect(await read).toBeNull()
      await until(() => server.killed.length > 0)
      expect(server.killed).toContain(7001n)
    } finally {
      await rumongo.close()
      await server.stop()
    }
  })
})

describe('command events of close()', () => {
  let server: WireServer

  beforeAll(async () => {
    server = await cursorServer('at once')
  })

  afterAll(async () => {
    await server?.stop()
  })

  // rumongo sends killCursors itself (and awaits it); the Rust driver would kill the cursor again
  // when it is dropped: told not to once the kill is answered (vendor/README.md).
  it('one killCursors, as with the official driver: in the events and on the wire', async () => {
    const wireKills = async (client: AnyClient) => {
      const before = server.received('killCursors').length
      const cursor = items(client).find({}, { batchSize: 2 })
      if (cursor instanceof FindCursor) cursor.prefetch(0)
      await cursor.next()
      await cursor.close()
      await new Promise((resolve) => setTimeout(resolve, 300)) // a kill sent later would be here
      return server.received('killCursors').length - before
    }
    const names = async (client: AnyClient) => {
      const events: string[] = []
      for (const name of ['commandStarted', 'commandSucceeded', 'commandFailed'] as const) {
        ;(client as OfficialClient).on(name, (event) => events.push(`${name} ${event.commandName}`))
      }
      const cursor = items(client).find({}, { batchSize: 2 })
      if (cursor instanceof FindCursor) cursor.prefetch(0)
      await cursor.next()
      await cursor.close()
      await new Promise((resolve) => setTimeout(resolve, 300)) // a kill sent later would be here
      return events
    }
    const official = await OfficialClient.connect(server.uri, { monitorCommands: true })
    const rumongo = await MongoClient.connect(server.uri, { monitorCommands: true })
    try {
      const expected = await names(official)
      expect(expected).toEqual([
        'commandStarted find',
        'commandSucceeded find',
        'commandStarted killCursors',
        'commandSucceeded killCursors',
      ])
      expect(await names(rumongo)).toEqual(expected)
      expect(await wireKills(official)).toBe(1)
      expect(await wireKills(rumongo)).toBe(1)
    } finally {
      await Promise.all([official.close(), rumongo.close()])
    }
  })
})

describe('a process that exits right after closing its cursors', () => {
  let server: WireServer

  beforeAll(async () => {
    server = await cursorServer('at once')
  })

  afterAll(async () => {
    await server?.stop()
  })

  /** A child process that opens 20 cursors, reads one document of each, closes them all and exits. */
  const child = (driver: 'rumongo' | 'mongodb') => `
    const { MongoClient } = require('${driver}')
    ;(async () => {
      const client = await MongoClient.connect(process.env.WIRE_URI)
      const cursors = []
      for (let i = 0; i < 20; i++) {
        const cursor = client.db('test').collection('items').find({}, { batchSize: 2 })
        await cursor.next()
        cursors.push(cursor)
      }
      console.log(JSON.stringify(cursors.map((cursor) => cursor.id.toString())))
      await Promise.all(cursors.map((cursor) => cursor.close()))
      process.exit(0)
    })()
  `

  it.each(['mongodb', 'rumongo'] as const)('leaves none open on the server (%s)', async (driver) => {
    const { stdout } = await run(process.execPath, ['-e', child(driver)], {
      cwd: root,
      env: { ...process.env, WIRE_URI: server.uri },
      timeout: 20_000,
    })
    const ids = (JSON.parse(stdout.trim()) as string[]).map(BigInt)
    expect(ids).toHaveLength(20)
    expect(ids.filter((id) => !server.killed.includes(id))).toEqual([])
  })
})
