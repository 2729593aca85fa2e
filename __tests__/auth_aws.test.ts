// MONGODB-AWS with both drivers against a fake mongod that checks the signed STS request
// (setup/auth_server.ts computes the SigV4 signature with the secret key it knows): credentials from
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, as the official driver reads them
// (through the optional @aws-sdk/credential-providers, a dev dependency here), the same payloads,
// and the same refusals, with no key or token in any error or event.
import { inspect } from 'node:util'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { MongoClient as OfficialClient } from 'mongodb'
import { MongoAPIError, MongoClient, MongoServerError } from 'rumongo'
import type { Document } from 'bson'
import { loginAndPing, startAuthServer, type AuthServer, type AwsIdentity } from './setup/auth_server.js'

const IDENTITY: Required<AwsIdentity> = {
  accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  sessionToken: 'IQoJb3JpZ2luX2VjEXAMPLE-session-token',
}
const AWS_VARIABLES = [
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_REGION',
  'AWS_EC2_METADATA_DISABLED',
  'AWS_SHARED_CREDENTIALS_FILE',
  'AWS_CONFIG_FILE',
]
const saved = new Map(AWS_VARIABLES.map((name) => [name, process.env[name]]))

/** The environment a Lambda function or an EKS pod gives: keys, and a token for temporary ones. */
function setEnvironment(identity: AwsIdentity) {
  process.env.AWS_ACCESS_KEY_ID = identity.accessKeyId
  process.env.AWS_SECRET_ACCESS_KEY = identity.secretAccessKey
  if (identity.sessionToken === undefined) delete process.env.AWS_SESSION_TOKEN
  else process.env.AWS_SESSION_TOKEN = identity.sessionToken
  // Nothing but these variables: no instance metadata service (a link-local address, never asked
  // here), no profile files of the machine.
  process.env.AWS_REGION = 'us-east-1'
  process.env.AWS_EC2_METADATA_DISABLED = 'true'
  process.env.AWS_SHARED_CREDENTIALS_FILE = '/nonexistent/credentials'
  process.env.AWS_CONFIG_FILE = '/nonexistent/config'
}

let servers: AuthServer[] = []

afterEach(async () => {
  await Promise.all(servers.map((server) => server.stop()))
  servers = []
})

beforeAll(() => setEnvironment(IDENTITY))

afterAll(() => {
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
})

async function login(
  driver: 'official' | 'rumongo',
  identity: AwsIdentity,
  url?: (address: string) => string,
) {
  const server = await startAuthServer({ aws: identity })
  servers.push(server)
  const uri =
    url?.(server.address) ??
    `mongodb://${server.address}/?authMechanism=MONGODB-AWS&serverSelectionTimeoutMS=2000`
  const { error, events } = await loginAndPing(
    driver === 'official' ? OfficialClient : MongoClient,
    uri,
    {},
    ['commandStarted', 'commandSucceeded'],
  )
  const saslStart = server.received('saslStart')[0]
  return { server, error, events, saslStart }
}

describe('MONGODB-AWS', () => {
  it.each<[string, AwsIdentity]>([
    ['temporary credentials (AWS_SESSION_TOKEN)', IDENTITY],
    ['long-term keys', { accessKeyId: IDENTITY.accessKeyId, secretAccessKey: IDENTITY.secretAccessKey }],
  ])('logs in with %s from the environment, signing as the official driver', async (_, identity) => {
    setEnvironment(identity)
    try {
      const official = await login('official', identity)
      const rumongo = await login('rumongo', identity)
      expect(official.error).toBeUndefined()
      expect(rumongo.error).toBeUndefined()
      expect(rumongo.server.authenticated).toEqual([`MONGODB-AWS ${identity.accessKeyId}`])
      // The first step: `{ r: <32-byte nonce>, p: 110 }` on $external, in both.
      for (const { saslStart } of [official, rumongo]) {
        expect(saslStart?.mechanism).toBe('MONGODB-AWS')
        expect(saslStart?.$db).toBe('$external')
      }
      // The second: the STS request's Authorization and X-Amz-Date (and the token), signed alike.
      const [theirs] = official.server.awsSteps
      const [ours] = rumongo.server.awsSteps
      expect(ours?.refused).toBeUndefined()
      expect(ours?.fields).toEqual(theirs?.fields)
      expect(ours?.fields).toEqual(identity.sessionToken ? ['a', 'd', 't'] : ['a', 'd'])
      const shape = (authorization = '') =>
        authorization.replace(/\d{8}/, 'DATE').replace(/Signature=\w+/, '')
      expect(shape(ours?.authorization)).toBe(shape(theirs?.authorization))
      // No key or token in the command events (the login is not monitored, as in the official driver).
      const shown = inspect(rumongo.events, { depth: 20 })
      expect(shown).not.toContain(identity.secretAccessKey)
      expect(shown).not.toContain(IDENTITY.sessionToken)
    } finally {
      setEnvironment(IDENTITY)
    }
  })

  it('fails on a wrong secret key with the server error, code 18, as the official driver', async () => {
    setEnvironment({ ...IDENTITY, secretAccessKey: 'not-the-secret-key' })
    try {
      const official = await login('official', IDENTITY)
      const rumongo = await login('rumongo', IDENTITY)
      expect(rumongo.server.awsSteps[0]?.refused).toBe('wrong signature')
      expect(rumongo.error).toBeInstanceOf(MongoServerError)
      for (const field of ['name', 'message', 'code', 'codeName']) {
        expect(rumongo.error?.[field]).toBe(official.error?.[field])
      }
      expect(rumongo.error?.code).toBe(18)
      const shown = inspect(rumongo.error, { depth: 10, showHidden: true })
      expect(shown).not.toContain('not-the-secret-key')
      expect(shown).not.toContain(IDENTITY.sessionToken)
    } finally {
      setEnvironment(IDENTITY)
    }
  })

  it('refuses credentials in the connection string or options, as the official driver 7', async () => {
    const key = encodeURIComponent(IDENTITY.secretAccessKey)
    const cases: [string, Document][] = [
      [`mongodb://${IDENTITY.accessKeyId}:${key}@127.0.0.1:1/?authMechanism=MONGODB-AWS`, {}],
      [
        'mongodb://127.0.0.1:1/?authMechanism=MONGODB-AWS',
        { auth: { username: IDENTITY.accessKeyId, password: IDENTITY.secretAccessKey } },
      ],
      [
        'mongodb://127.0.0.1:1/?authMechanism=MONGODB-AWS',
        { authMechanismProperties: { AWS_SESSION_TOKEN: IDENTITY.sessionToken } },
      ],
    ]
    for (const [uri, options] of cases) {
      const errors = [OfficialClient, MongoClient].map((Client) => {
        try {
          new Client(uri, options)
        } catch (error) {
          return error as Error
        }
        return undefined
      })
      const [official, rumongo] = errors
      expect(rumongo).toBeInstanceOf(MongoAPIError)
      expect(rumongo?.name).toBe(official?.name)
      expect(rumongo?.message).toBe(official?.message)
      expect(inspect(rumongo, { showHidden: true })).not.toContain(IDENTITY.secretAccessKey)
    }
  })
})
