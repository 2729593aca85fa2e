// MONGODB-OIDC with both drivers against a fake mongod that accepts the JWTs it is given
// (setup/auth_server.ts): a JS OIDC_CALLBACK in the client options, the parameters it gets, what it
// may return, its failures, and ENVIRONMENT:k8s (a token file); no token in any error or event.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { inspect } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MongoClient as OfficialClient } from 'mongodb'
import { BSON, type Binary, type Document } from 'bson'
import {
  MongoClient,
  MongoInvalidArgumentError,
  MongoMissingCredentialsError,
  MongoServerError,
} from 'rumongo'
import { loginAndPing, startAuthServer, type AuthServer } from './setup/auth_server.js'

/** A JWT's shape (header.payload.signature); the fake only compares it with the ones it knows. */
const jwt = (subject: string) =>
  [{ alg: 'RS256', typ: 'JWT' }, { sub: subject, aud: 'mongodb' }, 'signature']
    .map((part) => Buffer.from(typeof part === 'string' ? part : JSON.stringify(part)).toString('base64url'))
    .join('.')
const TOKEN = jwt('workload')
const K8S_TOKEN = jwt('k8s-service-account')

let server: AuthServer
let tokenDir: string

beforeAll(async () => {
  server = await startAuthServer({ oidcTokens: [TOKEN, K8S_TOKEN] })
  tokenDir = mkdtempSync(join(tmpdir(), 'rumongo-oidc-'))
})

afterAll(async () => {
  await server.stop()
  rmSync(tokenDir, { recursive: true, force: true })
})

const URI = () =>
  `mongodb://HOST/?authMechanism=MONGODB-OIDC&serverSelectionTimeoutMS=2000`.replace('HOST', server.address)

async function login(driver: 'official' | 'rumongo', uri: string, options: Document = {}) {
  server.commands.length = 0
  server.authenticated.length = 0
  const { error, events } = await loginAndPing(
    driver === 'official' ? OfficialClient : MongoClient,
    uri,
    options,
  )
  const jwtSteps = server.commands
    .map((command) => command.speculativeAuthenticate ?? command)
    .filter((command) => command.saslStart !== undefined && command.mechanism === 'MONGODB-OIDC')
    .map((command) => ({
      db: command.$db ?? command.db,
      payload: BSON.deserialize((command.payload as Binary).buffer),
    }))
  return { error, events, jwtSteps, authenticated: [...new Set(server.authenticated)] }
}

/** A callback that records its parameters (their keys and types) and answers `answer()`. */
function recordingCallback(answer: () => unknown) {
  const calls: Document[] = []
  const callback = async (params: Document) => {
    calls.push(
      Object.fromEntries(
        Object.entries(params).map(([key, value]) => [key, value?.constructor?.name ?? typeof value]),
      ),
    )
    return answer()
  }
  return { callback, calls }
}

describe('MONGODB-OIDC', () => {
  it('logs in with a JS OIDC_CALLBACK in the client options, calling it as the official driver', async () => {
    const results = []
    for (const driver of ['official', 'rumongo'] as const) {
      const { callback, calls } = recordingCallback(() => ({ accessToken: TOKEN, expiresInSeconds: 300 }))
      const result = await login(driver, URI(), { authMechanismProperties: { OIDC_CALLBACK: callback } })
      results.push({ ...result, calls })
    }
    const [official, rumongo] = results
    expect(official!.error).toBeUndefined()
    expect(rumongo!.error).toBeUndefined()
    expect(rumongo!.authenticated).toEqual([`MONGODB-OIDC ${TOKEN}`])
    // `{ timeoutContext: AbortSignal, version: 1 }`, once for the login.
    expect(rumongo!.calls[0]).toEqual({ timeoutContext: 'AbortSignal', version: 'Number' })
    expect(rumongo!.calls[0]).toEqual(official!.calls[0])
    // The JWT step: saslStart on $external with `{ jwt }`.
    expect(rumongo!.jwtSteps[0]).toEqual({ db: '$external', payload: { jwt: TOKEN } })
    expect(rumongo!.jwtSteps[0]).toEqual(official!.jwtSteps[0])
    expect(inspect(rumongo!.events, { depth: 20 })).not.toContain(TOKEN)
  })

  it('passes the user name to the callback, as the official driver', async () => {
    const calls = []
    for (const driver of ['official', 'rumongo'] as const) {
      const recording = recordingCallback(() => ({ accessToken: TOKEN }))
      const uri = URI().replace('mongodb://', 'mongodb://workload-id@')
      const result = await login(driver, uri, {
        authMechanismProperties: { OIDC_CALLBACK: recording.callback },
      })
      expect(result.error, driver).toBeUndefined()
      calls.push(recording.calls[0])
    }
    expect(calls[1]).toEqual(calls[0])
    expect(calls[1]).toHaveProperty('username')
  })

  it('fails on a token the server refuses with the server error, code 18, as the official driver', async () => {
    const wrong = jwt('someone-else')
    const errors = []
    for (const driver of ['official', 'rumongo'] as const) {
      const { callback } = recordingCallback(() => ({ accessToken: wrong }))
      errors.push(
        (await login(driver, URI(), { authMechanismProperties: { OIDC_CALLBACK: callback } })).error,
      )
    }
    const [official, rumongo] = errors
    expect(rumongo).toBeInstanceOf(MongoServerError)
    for (const field of ['name', 'message', 'code', 'codeName'])
      expect(rumongo?.[field]).toBe(official?.[field])
    expect(inspect(rumongo, { depth: 10, showHidden: true })).not.toContain(wrong)
  })

  it.each([
    ['nothing', () => undefined],
    ['no accessToken', () => ({ token: TOKEN })],
    ['an unknown field', () => ({ accessToken: TOKEN, scope: 'all' })],
  ])('refuses a callback answer with %s, as the official driver', async (_, answer) => {
    const errors = []
    for (const driver of ['official', 'rumongo'] as const) {
      const { callback } = recordingCallback(answer)
      errors.push(
        (await login(driver, URI(), { authMechanismProperties: { OIDC_CALLBACK: callback } })).error,
      )
    }
    const [official, rumongo] = errors
    expect(rumongo).toBeInstanceOf(MongoMissingCredentialsError)
    expect(rumongo?.name).toBe(official?.name)
    expect(rumongo?.message).toBe(official?.message)
  })

  it("rejects with the callback's own error when it throws, as the official driver", async () => {
    const errors = []
    for (const driver of ['official', 'rumongo'] as const) {
      const failure = new Error('identity provider unreachable')
      const callback = async () => {
        throw failure
      }
      const { error } = await login(driver, URI(), { authMechanismProperties: { OIDC_CALLBACK: callback } })
      errors.push({ error, same: error === failure })
    }
    const [official, rumongo] = errors
    expect(rumongo!.error?.message).toBe(official!.error?.message)
    expect(rumongo!.same).toBe(official!.same)
  })

  it('reads the token file of ENVIRONMENT:k8s, as the official driver', async () => {
    const file = join(tokenDir, 'token')
    writeFileSync(file, K8S_TOKEN)
    const saved = process.env.AWS_WEB_IDENTITY_TOKEN_FILE
    const savedAzure = process.env.AZURE_FEDERATED_TOKEN_FILE
    delete process.env.AZURE_FEDERATED_TOKEN_FILE
    process.env.AWS_WEB_IDENTITY_TOKEN_FILE = file
    try {
      const uri = `${URI()}&authMechanismProperties=ENVIRONMENT:k8s`
      const official = await login('official', uri)
      const rumongo = await login('rumongo', uri)
      expect(official.error).toBeUndefined()
      expect(rumongo.error).toBeUndefined()
      expect(rumongo.authenticated).toEqual([`MONGODB-OIDC ${K8S_TOKEN}`])
      expect(rumongo.jwtSteps[0]).toEqual(official.jwtSteps[0])
    } finally {
      if (saved === undefined) delete process.env.AWS_WEB_IDENTITY_TOKEN_FILE
      else process.env.AWS_WEB_IDENTITY_TOKEN_FILE = saved
      if (savedAzure !== undefined) process.env.AZURE_FEDERATED_TOKEN_FILE = savedAzure
    }
  })

  it.each(['azure', 'gcp'])(
    'refuses ENVIRONMENT:%s, which it is built without, with a typed error',
    (environment) => {
      const uri = `${URI()}&authMechanismProperties=ENVIRONMENT:${environment},TOKEN_RESOURCE:api://mongodb`
      expect(() => new MongoClient(uri)).toThrow(MongoInvalidArgumentError)
      expect(() => new MongoClient(uri)).toThrow(
        `rumongo does not support ENVIRONMENT:${environment} for MONGODB-OIDC`,
      )
    },
  )

  it('checks the OIDC options when the client is created, with the official messages', () => {
    const callback = async () => ({ accessToken: TOKEN })
    const cases: [string, Document][] = [
      ['', {}],
      ['&authMechanismProperties=ENVIRONMENT:k8s', { authMechanismProperties: { OIDC_CALLBACK: callback } }],
      ['&authMechanismProperties=ENVIRONMENT:vm', {}],
      ['&authMechanismProperties=ENVIRONMENT:azure', {}],
    ]
    for (const [query, options] of cases) {
      const errors = [OfficialClient, MongoClient].map((Client) => {
        try {
          new Client(URI() + query, options)
        } catch (error) {
          return error as Error
        }
        return undefined
      })
      const [official, rumongo] = errors
      expect(rumongo, query).toBeInstanceOf(MongoInvalidArgumentError)
      expect(rumongo?.name).toBe(official?.name)
      expect(rumongo?.message).toBe(official?.message)
    }
  })
})
