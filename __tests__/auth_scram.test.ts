// SCRAM-SHA-1 and SCRAM-SHA-256 against a fake mongod that verifies the proofs
// (setup/auth_server.ts), with both drivers side by side: logins, refusals, authSource, mechanism
// negotiation and speculative authentication, and no password in any error, event or log.
import { inspect } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MongoClient as OfficialClient } from 'mongodb'
import { MongoClient, MongoInvalidArgumentError, MongoParseError, MongoServerError } from 'rumongo'
import type { Document } from 'bson'
import { startAuthServer, type AuthServer } from './setup/auth_server.js'

const PASSWORD = 'pencil-Sécret,=42'
let server: AuthServer

beforeAll(async () => {
  server = await startAuthServer({
    users: [
      { user: 'alice', password: PASSWORD },
      { user: 'sha1only', password: PASSWORD, mechanisms: ['SCRAM-SHA-1'] },
      { user: 'sha256only', password: PASSWORD, mechanisms: ['SCRAM-SHA-256'] },
      { user: 'we=ird,name', password: PASSWORD },
      // Stored SASLprep'd: "I<soft hyphen>X" prepares to "IX" (RFC 4013's example).
      { user: 'prepped', password: 'IX', mechanisms: ['SCRAM-SHA-256'] },
      { user: 'reader', password: PASSWORD, db: 'users' },
    ],
  })
})

afterAll(async () => {
  await server.stop()
})

type Driver = 'official' | 'rumongo'
const DRIVERS: Driver[] = ['official', 'rumongo']

function connectionString(user: string, password: string | undefined, query = '', path = '/') {
  const userinfo =
    encodeURIComponent(user) + (password === undefined ? '' : `:${encodeURIComponent(password)}`)
  return `mongodb://${userinfo}@${server.address}${path}?serverSelectionTimeoutMS=2000${query}`
}

/** The login steps a driver sent: hello's speculative first step, then the SASL commands. */
function loginSteps(commands: Document[]): string[] {
  const steps: string[] = []
  for (const command of commands) {
    const name = Object.keys(command)[0]!
    if (command.speculativeAuthenticate) {
      steps.push(
        `hello+${command.speculativeAuthenticate.mechanism} on ${command.speculativeAuthenticate.db}`,
      )
    } else if (name === 'saslStart') steps.push(`saslStart ${command.mechanism} on ${command.$db}`)
    else if (name === 'saslContinue') steps.push(`saslContinue on ${command.$db}`)
  }
  return steps
}

interface Attempt {
  error: (Error & { code?: unknown; codeName?: unknown }) | undefined
  /** The logins the server accepted. */
  authenticated: string[]
  steps: string[]
}

/** Connects with one driver and runs a command; what the server saw and the error, if any. */
async function attempt(driver: Driver, url: string, options: Document = {}): Promise<Attempt> {
  server.commands.length = 0
  server.authenticated.length = 0
  const Client = driver === 'official' ? OfficialClient : MongoClient
  const client = new Client(url, options)
  let error: Attempt['error']
  try {
    await client.connect()
    await client.db('x').command({ ping: 1 })
  } catch (caught) {
    error = caught as Attempt['error']
  } finally {
    await client.close()
  }
  return {
    error,
    authenticated: [...new Set(server.authenticated)],
    steps: [...new Set(loginSteps(server.commands))],
  }
}

async function both(url: string, options: Document = {}) {
  const official = await attempt('official', url, options)
  const rumongo = await attempt('rumongo', url, options)
  return { official, rumongo }
}

/** The same refusal: class, code, codeName and message, and no password anywhere in it. */
function expectSameError(rumongo: Attempt['error'], official: Attempt['error'], secret: string) {
  expect(official).toBeDefined()
  expect(rumongo?.name).toBe(official!.name)
  expect(rumongo?.message).toBe(official!.message)
  // rumongo gives its driver errors a `code` ('ERR_INVALID_ARGUMENT') where the official has none.
  if (official!.code !== undefined) expect(rumongo?.code).toBe(official!.code)
  expect(rumongo?.codeName).toBe(official!.codeName)
  expect(inspect(rumongo, { depth: 10, showHidden: true })).not.toContain(secret)
}

describe('SCRAM logins', () => {
  it.each([
    ['SCRAM-SHA-256 by default', 'alice', '', 'SCRAM-SHA-256 admin.alice'],
    ['SCRAM-SHA-256', 'alice', '&authMechanism=SCRAM-SHA-256', 'SCRAM-SHA-256 admin.alice'],
    ['SCRAM-SHA-1', 'alice', '&authMechanism=SCRAM-SHA-1', 'SCRAM-SHA-1 admin.alice'],
    // The official driver matches the name as a word, in any case.
    ['scram-sha-1 in lower case', 'alice', '&authMechanism=scram-sha-1', 'SCRAM-SHA-1 admin.alice'],
    ['a user name with = and ,', 'we=ird,name', '', 'SCRAM-SHA-256 admin.we=ird,name'],
  ])('logs in with %s, speculatively in hello, as the official driver', async (_, user, query, login) => {
    const { official, rumongo } = await both(connectionString(user, PASSWORD, query))
    expect(official.error).toBeUndefined()
    expect(rumongo.error).toBeUndefined()
    expect(official.authenticated).toEqual([login])
    expect(rumongo.authenticated).toEqual([login])
    // The first step rides in hello: no saslStart, one saslContinue.
    expect(official.steps).toEqual([`hello+${login.split(' ')[0]} on admin`, 'saslContinue on admin'])
    expect(rumongo.steps).toEqual(official.steps)
  })

  it('prepares a SCRAM-SHA-256 password with SASLprep (RFC 4013)', async () => {
    const { official, rumongo } = await both(connectionString('prepped', 'I\u00adX'))
    expect(official.error).toBeUndefined()
    expect(rumongo.error).toBeUndefined()
    expect(rumongo.authenticated).toEqual(['SCRAM-SHA-256 admin.prepped'])
  })

  it.each([
    ['SCRAM-SHA-1', 'sha1only'],
    ['SCRAM-SHA-256', 'sha256only'],
  ])('negotiates %s from the saslSupportedMechs hello returns', async (mechanism, user) => {
    const { official, rumongo } = await both(connectionString(user, PASSWORD))
    expect(official.error).toBeUndefined()
    expect(rumongo.error).toBeUndefined()
    expect(official.authenticated).toEqual([`${mechanism} admin.${user}`])
    expect(rumongo.authenticated).toEqual(official.authenticated)
    expect(rumongo.steps).toEqual(official.steps)
  })

  it('authenticates against authSource, or the database of the path, as the official driver', async () => {
    for (const [query, path] of [
      ['&authSource=users', '/'],
      ['', '/users'],
    ]) {
      const { official, rumongo } = await both(connectionString('reader', PASSWORD, query, path))
      expect(official.error).toBeUndefined()
      expect(rumongo.error).toBeUndefined()
      expect(rumongo.authenticated).toEqual(['SCRAM-SHA-256 users.reader'])
      expect(rumongo.steps).toEqual(['hello+SCRAM-SHA-256 on users', 'saslContinue on users'])
      expect(rumongo.steps).toEqual(official.steps)
    }
    // The user is not in admin: the server refuses the login there.
    const { official, rumongo } = await both(
      connectionString('reader', PASSWORD, '&authSource=admin', '/users'),
    )
    expect(rumongo.error).toBeInstanceOf(MongoServerError)
    expectSameError(rumongo.error, official.error, PASSWORD)
  })
})

describe('SCRAM refusals', () => {
  it.each([
    ['a wrong password', 'alice', 'wrong-password', ''],
    ['a wrong password with SCRAM-SHA-1', 'alice', 'wrong-password', '&authMechanism=SCRAM-SHA-1'],
    ['an unknown user', 'mallory', PASSWORD, ''],
  ])(
    'fails on %s with the server error, code 18, as the official driver',
    async (_, user, password, query) => {
      const { official, rumongo } = await both(connectionString(user, password, query))
      expect(rumongo.error).toBeInstanceOf(MongoServerError)
      expect(rumongo.error?.message).toBe('Authentication failed.')
      expect(rumongo.error?.code).toBe(18)
      expectSameError(rumongo.error, official.error, password)
      expect(rumongo.authenticated).toEqual([])
    },
  )

  it('sends the attempt of a user name without a password, as the official driver', async () => {
    // SCRAM-SHA-256: the proof of an empty password goes out and the server refuses it.
    const sha256 = await both(connectionString('alice', undefined))
    expect(sha256.rumongo.error).toBeInstanceOf(MongoServerError)
    expectSameError(sha256.rumongo.error, sha256.official.error, PASSWORD)
    expect(sha256.rumongo.steps).toEqual(['hello+SCRAM-SHA-256 on admin', 'saslContinue on admin'])
    expect(sha256.rumongo.steps).toEqual(sha256.official.steps)
    // SCRAM-SHA-1 refuses an empty password once the server answered the first step.
    const sha1 = await both(connectionString('alice', undefined, '&authMechanism=SCRAM-SHA-1'))
    expect(sha1.rumongo.error).toBeInstanceOf(MongoInvalidArgumentError)
    expectSameError(sha1.rumongo.error, sha1.official.error, PASSWORD)
    expect(sha1.rumongo.error?.message).toBe('Password cannot be empty')
    expect(sha1.rumongo.steps).toEqual(sha1.official.steps)
    // The same through the `auth` option, whose `password` key must be there (undefined is fine).
    const viaAuth = await both(`mongodb://${server.address}/?serverSelectionTimeoutMS=2000`, {
      auth: { username: 'alice', password: undefined },
    })
    expect(viaAuth.rumongo.error).toBeInstanceOf(MongoServerError)
    expectSameError(viaAuth.rumongo.error, viaAuth.official.error, PASSWORD)
    const refusals = [OfficialClient, MongoClient].map((Client) => {
      try {
        new Client(`mongodb://${server.address}/`, { auth: { username: 'alice' } })
      } catch (error) {
        return error as Error
      }
      return undefined
    })
    expect(refusals[1]).toBeInstanceOf(MongoParseError)
    expect(refusals[1]?.message).toBe(refusals[0]?.message)
  })
})

describe('secrets', () => {
  it('shows the password in no error, command event, command log or client.options', async () => {
    const seen: Record<Driver, string[]> = { official: [], rumongo: [] }
    for (const driver of DRIVERS) {
      for (const password of [PASSWORD, `${PASSWORD}-wrong`]) {
        const events: Document[] = []
        const logs: unknown[] = []
        const Client = driver === 'official' ? OfficialClient : MongoClient
        const client = new Client(connectionString('alice', password), {
          monitorCommands: true,
          mongodbLogPath: { write: (log: unknown) => void logs.push(log) },
          mongodbLogComponentSeverities: { command: 'trace' },
        } as never)
        for (const name of ['commandStarted', 'commandSucceeded', 'commandFailed'] as const) {
          client.on(name, (event: unknown) => events.push(event as Document))
        }
        let error: unknown
        try {
          await client.connect()
          await client.db('admin').command({ ping: 1 })
        } catch (caught) {
          error = caught
        } finally {
          await client.close()
        }
        expect(error === undefined, `${driver} ${password}`).toBe(password === PASSWORD)
        // (The official driver's client.options lists the password, in `credentials`: not rumongo's.)
        const shown = inspect([events, logs, error, driver === 'rumongo' ? client.options : {}], {
          depth: 20,
          showHidden: true,
        })
        expect(shown, driver).not.toContain(PASSWORD)
        expect(shown, driver).not.toContain(encodeURIComponent(PASSWORD))
        // The login itself is not command-monitored, in either driver.
        seen[driver].push(...events.map((event) => event.commandName))
      }
    }
    expect(seen.rumongo.filter((name) => name.startsWith('sasl'))).toEqual([])
    expect(seen.official.filter((name) => name.startsWith('sasl'))).toEqual([])
  })
})
