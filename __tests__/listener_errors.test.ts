// A monitoring listener may throw anything (undefined, a number, a Symbol, `{ code }`, an Error):
// the read whose command it saw fails as the official driver's does, and the process lives
// whatever any listener, log destination or span hook throws. And a command that `close()`
// interrupts ends with `commandFailed` (and its span ends), as in the official driver.
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MongoClient as OfficialClient } from 'mongodb'
import { MongoClient, MongoClientClosedError, MongoRuntimeError } from 'rumongo'
import { startWireServer, type WireServer } from './setup/wire_server.js'

const run = promisify(execFile)
const root = fileURLToPath(new URL('..', import.meta.url))

type AnyClient = MongoClient | OfficialClient
const COMMAND_EVENTS = ['commandStarted', 'commandSucceeded', 'commandFailed'] as const

let server: WireServer

beforeAll(async () => {
  server = await startWireServer({ documents: [{ _id: 1 }, { _id: 2 }, { _id: 3 }] })
})

afterAll(async () => {
  await server?.stop()
})

/** What a rejection is, comparable across the two drivers' classes. */
function outcome(error: unknown, thrown: unknown) {
  return {
    isWhatWasThrown: error === thrown,
    name: (error as Error | undefined)?.constructor?.name ?? typeof error,
    message: typeof error === 'object' && error !== null ? (error as Error).message : undefined,
  }
}

/**
 * The command events `client` emits while `read` runs, as `name:commandName` (recorded by
 * listeners added before `setUp` adds its own), and how the read ended.
 */
async function watched(
  client: AnyClient,
  setUp: (client: AnyClient) => void,
  read: () => Promise<unknown>,
  thrown: unknown,
) {
  const events: string[] = []
  for (const name of COMMAND_EVENTS) {
    client.on(name, (event: { commandName: string }) => events.push(`${name}:${event.commandName}`))
  }
  setUp(client)
  const result = await read().then(
    (value) => ({ resolved: value }),
    (error: unknown) => ({ rejected: outcome(error, thrown) }),
  )
  // rumongo's events come through the event loop: let any late one arrive.
  await new Promise((resolve) => setTimeout(resolve, 50))
  return { result, events: events.filter((event) => !event.endsWith(':endSessions')) }
}

const THROWN: [string, unknown][] = [
  ['undefined', undefined],
  ['a number', 42],
  ['a Symbol', Symbol('thrown')],
  ['an object without a name', { code: 11000 }],
  ['an Error', new TypeError('listener failure')],
]

describe('a command listener that throws', () => {
  async function both(
    setUp: (client: AnyClient) => void,
    read: (client: AnyClient) => Promise<unknown>,
    thrown: unknown,
  ) {
    const official = new OfficialClient(server.uri, { monitorCommands: true })
    const rumongo = new MongoClient(server.uri, { monitorCommands: true })
    try {
      await Promise.all([official.connect(), rumongo.connect()])
      const expected = await watched(official, setUp, () => read(official), thrown)
      const actual = await watched(rumongo, setUp, () => read(rumongo), thrown)
      return { expected, actual }
    } finally {
      await Promise.all([official.close(), rumongo.close()])
    }
  }

  it.each(THROWN)(
    'commandStarted, %s: the read rejects as the official driver, no end event follows',
    async (_, thrown) => {
      const { expected, actual } = await both(
        (client) =>
          client.on('commandStarted', () => {
            throw thrown
          }),
        (client) => client.db('db').collection('items').findOne({}),
        thrown,
      )
      expect(actual).toEqual(expected)
      expect(expected.events).toEqual(['commandStarted:find'])
      if (typeof thrown !== 'object') {
        expect(actual.result).toEqual({
          rejected: {
            isWhatWasThrown: false,
            name: 'MongoRuntimeError',
            message: `An unexpected error type: ${typeof thrown}`,
          },
        })
      }
    },
  )

  it.each(THROWN)(
    'commandSucceeded, %s: commandFailed carries it and the read rejects, as the official driver',
    async (_, thrown) => {
      const failures: unknown[] = []
      const { expected, actual } = await both(
        (client) => {
          client.on('commandSucceeded', () => {
            throw thrown
          })
          client.on('commandFailed', (event: { commandName: string; failure: unknown }) => {
            if (event.commandName === 'find') failures.push(event.failure)
          })
        },
        (client) => client.db('db').collection('items').find({}).toArray(),
        thrown,
      )
      expect(actual).toEqual(expected)
      expect(expected.events).toEqual(['commandStarted:find', 'commandSucceeded:find', 'commandFailed:find'])
      expect(failures).toHaveLength(2)
      expect(Object.is(failures[0], thrown) && Object.is(failures[1], thrown)).toBe(true)
    },
  )

  it("a commandFailed listener that throws in turn: its error is the read's, as the official driver", async () => {
    const second = new RangeError('from commandFailed')
    const { expected, actual } = await both(
      (client) => {
        client.on('commandSucceeded', () => {
          throw new TypeError('from commandSucceeded')
        })
        client.on('commandFailed', () => {
          throw second
        })
      },
      (client) => client.db('db').collection('items').findOne({}),
      second,
    )
    expect(actual).toEqual(expected)
    expect(actual.result).toEqual({
      rejected: { isWhatWasThrown: true, name: 'RangeError', message: 'from commandFailed' },
    })
  })

  it('the cursor a failed find opened is killed on the server', async () => {
    const client = new MongoClient(server.uri, { monitorCommands: true })
    try {
      await client.connect()
      const killedBefore = server.killed.length
      client.once('commandStarted', () => {
        throw undefined
      })
      const read = client.db('db').collection('items').find({}, { batchSize: 1 }).next()
      await expect(read).rejects.toBeInstanceOf(MongoRuntimeError)
      for (let waited = 0; server.killed.length === killedBefore && waited < 5000; waited += 20) {
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      expect(server.killed.length).toBe(killedBefore + 1)
      // The next read is unaffected.
      await expect(client.db('db').collection('items').findOne({})).resolves.toEqual({ _id: 1 })
    } finally {
      await client.close()
    }
  })
})

describe('a listener that throws on a cleanup command (killCursors, endSessions)', () => {
  it('fails no close(), as the official driver squashes their errors', async () => {
    // Another client with command listeners keeps every call tagged while these close.
    const bystander = new MongoClient(server.uri, { monitorCommands: true })
    bystander.on('commandStarted', () => {})
    await bystander.connect()
    async function closes(client: AnyClient) {
      await client.connect()
      client.on('commandStarted', (event: { commandName: string }) => {
        if (event.commandName === 'killCursors' || event.commandName === 'endSessions') throw 42
      })
      const cursor = client.db('db').collection('items').find({}, { batchSize: 1 })
      if ('prefetch' in cursor) cursor.prefetch(0)
      await cursor.next()
      const closed = await cursor.close().then(
        () => 'resolved',
        (error: unknown) => error,
      )
      const clientClosed = await client.close().then(
        () => 'resolved',
        (error: unknown) => error,
      )
      return [closed, clientClosed]
    }
    try {
      const expected = await closes(new OfficialClient(server.uri, { monitorCommands: true }))
      const actual = await closes(new MongoClient(server.uri, { monitorCommands: true }))
      expect(expected).toEqual(['resolved', 'resolved'])
      expect(actual).toEqual(expected)
    } finally {
      await bystander.close()
    }
  })
})

describe('the process lives whatever a listener, log destination or span hook throws', () => {
  it('every kind of throw on every listener path: the reads settle, warnings report the rest, exit code 0', async () => {
    const script = fileURLToPath(new URL('./fixtures/hostile_listeners.cjs', import.meta.url))
    const { stdout, stderr } = await run(process.execPath, [script, server.uri], {
      cwd: root,
      timeout: 30_000,
    }).catch((error: { code?: number; stdout?: string; stderr?: string }) => {
      throw new Error(`exit code ${error.code}\n${error.stdout}\n${error.stderr}`)
    })
    const report = JSON.parse(stdout.trim().split('\n').at(-1)!)
    expect(report).toEqual({
      started: 'MongoRuntimeError: An unexpected error type: undefined',
      succeeded: 'MongoRuntimeError: An unexpected error type: symbol',
      traced: { _id: 1 },
      afterwards: [{ _id: 1 }],
      alive: true,
    })
    // What could not fail a read (pool, server and heartbeat listeners, the log destination, the
    // span hook) became warnings, described without calling anything on what was thrown.
    expect(stderr).toMatch(/a 'connectionCheckedOut' listener threw: a symbol \(pool\)/)
    expect(stderr).toMatch(/a 'serverHeartbeatSucceeded' listener threw: a number \(42\)/)
    expect(stderr).toMatch(/a 'topologyDescriptionChanged' listener threw: an object \(Object\)/)
    expect(stderr).toMatch(
      /the MongoDB log destination failed, logging is halted: an object \(null prototype\)/,
    )
    expect(stderr).toMatch(/a command span could not be recorded: undefined/)
  })
})

describe('a command that close() interrupts', () => {
  it('ends with commandFailed (MongoClientClosedError), as in the official driver', async () => {
    const silent = await startWireServer({
      answer: (command) => ('find' in command ? new Promise(() => {}) : { ok: 1 }),
    })
    async function interrupted(client: AnyClient) {
      await client.connect()
      const events: { name: string; commandName: string; failure?: Error }[] = []
      for (const name of COMMAND_EVENTS) {
        client.on(name, (event: { commandName: string; failure?: Error }) => events.push({ ...event, name }))
      }
      const started = once(client, 'commandStarted')
      const read = client
        .db('db')
        .collection('items')
        .findOne({})
        .catch((error: unknown) => error)
      await started
      await client.close()
      const error = (await read) as Error
      await new Promise((resolve) => setTimeout(resolve, 50))
      const find = events.filter((event) => event.commandName === 'find')
      return {
        error: [error.constructor.name, error.message],
        events: find.map((event) => [event.name, event.failure?.constructor.name, event.failure?.message]),
      }
    }
    try {
      const expected = await interrupted(new OfficialClient(silent.uri, { monitorCommands: true }))
      const actual = await interrupted(new MongoClient(silent.uri, { monitorCommands: true }))
      expect(actual).toEqual(expected)
      expect(actual.events).toEqual([
        ['commandStarted', undefined, undefined],
        ['commandFailed', 'MongoClientClosedError', 'Operation interrupted because client was closed'],
      ])
      expect(actual.error[0]).toBe(MongoClientClosedError.name)
    } finally {
      await silent.stop()
    }
  })

  it('its OpenTelemetry span ends with an error status, as the official driver instrumentation', async () => {
    const silent = await startWireServer({
      answer: (command) => ('find' in command ? new Promise(() => {}) : { ok: 1 }),
    })
    try {
      const script = fileURLToPath(new URL('./fixtures/otel_close.mjs', import.meta.url))
      const { stdout } = await run(process.execPath, [script, silent.uri], { cwd: root, timeout: 30_000 })
      const { official, rumongo } = JSON.parse(stdout) as Record<string, unknown[]>
      expect(official).toEqual([
        {
          name: 'find items',
          status: { code: 2, message: 'Operation interrupted because client was closed' },
        },
      ])
      expect(rumongo).toEqual(official)
    } finally {
      await silent.stop()
    }
  })
})
