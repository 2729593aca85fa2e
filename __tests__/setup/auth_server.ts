// A fake mongod that authenticates: it knows some users (name, password, database, mechanisms) and
// verifies SCRAM-SHA-1 and SCRAM-SHA-256 proofs (RFC 5802 / RFC 7677, with MongoDB's SCRAM-SHA-1
// password digest, MD5 of `user:mongo:password`, and SASLprep for SCRAM-SHA-256) and PLAIN, and
// answers as mongod does: `saslSupportedMechs` in hello, speculative authentication in hello, the
// conversation over saslStart / saslContinue, and `{ ok: 0, code: 18, codeName:
// 'AuthenticationFailed', errmsg: 'Authentication failed.' }` for a wrong proof, a wrong password
// or an unknown user (mongod says nothing more, so as not to tell whether the user exists).
// MONGODB-AWS: it checks the signed STS request as mongod would have AWS check it, by computing the
// SigV4 signature with the secret key it knows. MONGODB-OIDC: it accepts the JWTs it is given.
// The embedded server (FerretDB) only speaks PLAIN, which is why the others need this fake.
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto'
import { Binary, BSON, type Document } from 'bson'
import { saslprep } from '@mongodb-js/saslprep'
import { helloReply, startWireServer, type WireReply, type WireServer } from './wire_server.js'

export type ScramMechanism = 'SCRAM-SHA-1' | 'SCRAM-SHA-256'

export interface AuthUser {
  user: string
  password: string
  /** The database the user is defined in (`authSource`); `admin` by default. */
  db?: string
  /** What the user has credentials for (mongod's `createUser` default: both). */
  mechanisms?: ScramMechanism[]
}

/** mongod's reply to every failed login. */
export const AUTHENTICATION_FAILED = {
  ok: 0,
  errmsg: 'Authentication failed.',
  code: 18,
  codeName: 'AuthenticationFailed',
} as const

/** mongod's default iteration counts (`scramIterationCount`, `scramSHA256IterationCount`). */
const SCRAM_MECHANISMS: ScramMechanism[] = ['SCRAM-SHA-1', 'SCRAM-SHA-256']

/** mongod's default iteration counts (`scramIterationCount`, `scramSHA256IterationCount`). */
const ITERATIONS: Record<ScramMechanism, number> = { 'SCRAM-SHA-1': 10000, 'SCRAM-SHA-256': 15000 }

interface ScramCredential {
  salt: Buffer
  iterations: number
  storedKey: Buffer
  serverKey: Buffer
}

interface Conversation {
  mechanism: ScramMechanism
  credential: ScramCredential | undefined
  clientFirstBare: string
  serverFirst: string
  nonce: string
  skipEmptyExchange: boolean
  /** The proof was right and the server's signature sent; waiting for the empty last step. */
  proven: boolean
}

const hash = (mechanism: ScramMechanism) => (mechanism === 'SCRAM-SHA-1' ? 'sha1' : 'sha256')

function hmac(mechanism: ScramMechanism, key: Buffer, text: string): Buffer {
  return createHmac(hash(mechanism), key).update(text, 'utf8').digest()
}

/** What mongod stores for a user: salt, iterations, StoredKey and ServerKey (never the password). */
function scramCredential(mechanism: ScramMechanism, user: string, password: string): ScramCredential {
  const prepared =
    mechanism === 'SCRAM-SHA-1'
      ? createHash('md5').update(`${user}:mongo:${password}`, 'utf8').digest('hex')
      : saslprep(password)
  const salt = randomBytes(mechanism === 'SCRAM-SHA-1' ? 16 : 28)
  const iterations = ITERATIONS[mechanism]
  const length = mechanism === 'SCRAM-SHA-1' ? 20 : 32
  const salted = pbkdf2Sync(prepared, salt, iterations, length, hash(mechanism))
  const clientKey = hmac(mechanism, salted, 'Client Key')
  return {
    salt,
    iterations,
    storedKey: createHash(hash(mechanism)).update(clientKey).digest(),
    serverKey: hmac(mechanism, salted, 'Server Key'),
  }
}

/** `a=1,b=2` as a map; values keep any `=` they contain. */
function attributes(text: string): Map<string, string> {
  const map = new Map<string, string>()
  for (const part of text.split(',')) {
    const at = part.indexOf('=')
    if (at > 0) map.set(part.slice(0, at), part.slice(at + 1))
  }
  return map
}

/** A SCRAM user name as sent (`=2C` for `,`, `=3D` for `=`), decoded. */
const decodeName = (name: string) => name.replace(/=2C/g, ',').replace(/=3D/g, '=')

const payloadText = (payload: unknown) => Buffer.from((payload as Binary).buffer).toString('utf8')

export interface AuthServer extends WireServer {
  /** The logins that succeeded, as `mechanism db.user`. */
  authenticated: string[]
  /** Every MONGODB-AWS second step received. */
  awsSteps: AwsStep[]
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex')
const hmac256 = (key: Buffer | string, data: string) =>
  createHmac('sha256', key).update(data, 'utf8').digest()

/** The STS request every driver signs (the MONGODB-AWS specification). */
const STS_HOST = 'sts.amazonaws.com'
const STS_BODY = 'Action=GetCallerIdentity&Version=2011-06-15'
const AWS_AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([a-z0-9-]+)\/sts\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/

/**
 * Checks the SigV4 signature of the STS GetCallerIdentity request the client signed, as AWS would:
 * the headers it lists are the ones the specification defines, with the values this fake knows.
 */
function checkAwsSignature(identity: AwsIdentity, step: AwsStep, serverNonce: Buffer): string | undefined {
  const match = AWS_AUTHORIZATION.exec(step.authorization)
  if (!match) return 'malformed Authorization'
  const [, accessKeyId, day, region, signedHeaders, signature] = match as unknown as string[]
  if (accessKeyId !== identity.accessKeyId) return 'unknown access key'
  if (!/^\d{8}T\d{6}Z$/.test(step.date) || step.date.slice(0, 8) !== day) return 'bad X-Amz-Date'
  if (step.sessionToken !== identity.sessionToken) return 'bad session token'
  const known: Record<string, string | undefined> = {
    'content-length': String(STS_BODY.length),
    'content-type': 'application/x-www-form-urlencoded',
    host: STS_HOST,
    'x-amz-date': step.date,
    'x-amz-security-token': step.sessionToken,
    'x-mongodb-gs2-cb-flag': 'n',
    'x-mongodb-server-nonce': serverNonce.toString('base64'),
  }
  const headers = signedHeaders!.split(';')
  for (const required of ['host', 'x-amz-date', 'x-mongodb-gs2-cb-flag', 'x-mongodb-server-nonce']) {
    if (!headers.includes(required)) return `${required} not signed`
  }
  if (identity.sessionToken !== undefined && !headers.includes('x-amz-security-token')) {
    return 'x-amz-security-token not signed'
  }
  if (headers.some((name) => known[name] === undefined)) return 'unknown signed header'
  const canonical = [
    'POST',
    '/',
    '',
    ...headers.map((name) => `${name}:${known[name]}`),
    '',
    signedHeaders,
    sha256(STS_BODY),
  ].join('\n')
  const scope = `${day}/${region}/sts/aws4_request`
  const toSign = ['AWS4-HMAC-SHA256', step.date, scope, sha256(canonical)].join('\n')
  let key = hmac256(`AWS4${identity.secretAccessKey}`, day!)
  for (const part of [region!, 'sts', 'aws4_request']) key = hmac256(key, part)
  return createHmac('sha256', key).update(toSign).digest('hex') === signature ? undefined : 'wrong signature'
}

/** The AWS credentials the fake's STS accepts (the client reads them from its environment). */
export interface AwsIdentity {
  accessKeyId: string
  secretAccessKey: string
  sessionToken?: string
}

/** The MONGODB-AWS second step as a driver sent it, for the tests to compare the drivers' shapes. */
export interface AwsStep {
  /** The payload's fields (`a`, `d`, `t`), in order. */
  fields: string[]
  authorization: string
  date: string
  sessionToken: string | undefined
  /** Why the fake refused it; `undefined` when the signature was right. */
  refused: string | undefined
}

export interface AuthServerOptions {
  users?: AuthUser[]
  aws?: AwsIdentity
  /** The access tokens MONGODB-OIDC logins may present. */
  oidcTokens?: string[]
  /** Answers the commands that are not part of a login (default `{ ok: 1 }`). */
  answer?: (command: Document) => WireReply | Promise<WireReply>
}

export async function startAuthServer(options: AuthServerOptions): Promise<AuthServer> {
  const credentials = new Map<string, Map<ScramMechanism, ScramCredential>>()
  const passwords = new Map<string, string>()
  for (const { user, password, db = 'admin', mechanisms = SCRAM_MECHANISMS } of options.users ?? []) {
    const byMechanism = new Map<ScramMechanism, ScramCredential>()
    for (const mechanism of mechanisms) byMechanism.set(mechanism, scramCredential(mechanism, user, password))
    credentials.set(`${db}.${user}`, byMechanism)
    passwords.set(`${db}.${user}`, password)
  }
  const conversations = new Map<number, Conversation>()
  const authenticated: string[] = []
  const awsSteps: AwsStep[] = []
  /** The server nonce of each MONGODB-AWS conversation. */
  const awsNonces = new Map<number, Buffer>()
  let nextConversationId = 1

  /** saslStart: mongod's first reply, or its refusal. */
  const start = (command: Document, db: string): Document => {
    const mechanism = command.mechanism as string
    const text = payloadText(command.payload)
    if (mechanism === 'PLAIN') {
      // `authzid NUL authcid NUL password`; PLAIN users live in $external on a real server, this
      // fake takes them from any database.
      const [, user = '', password] = text.split('\0')
      if (passwords.get(`${db}.${user}`) !== password) return AUTHENTICATION_FAILED
      authenticated.push(`PLAIN ${db}.${user}`)
      return { conversationId: nextConversationId++, done: true, payload: new Binary(Buffer.alloc(0)), ok: 1 }
    }
    if (mechanism === 'MONGODB-OIDC') {
      // The machine workflow's only step: `{ jwt }` in saslStart (or in hello, speculatively).
      const { jwt } = BSON.deserialize((command.payload as Binary).buffer) as { jwt?: unknown }
      const isJwt = typeof jwt === 'string' && /^[\w-]+\.[\w-]+\.[\w-]*$/.test(jwt)
      if (db !== '$external' || !isJwt || !options.oidcTokens?.includes(jwt)) return AUTHENTICATION_FAILED
      authenticated.push(`MONGODB-OIDC ${jwt}`)
      return { conversationId: nextConversationId++, done: true, payload: new Binary(Buffer.alloc(0)), ok: 1 }
    }
    if (mechanism === 'MONGODB-AWS') {
      const { r, p } = BSON.deserialize((command.payload as Binary).buffer) as { r?: Binary; p?: unknown }
      if (db !== '$external' || r?.buffer.length !== 32 || p !== 110 || !options.aws)
        return AUTHENTICATION_FAILED
      const serverNonce = Buffer.concat([Buffer.from(r.buffer), randomBytes(32)])
      const conversationId = nextConversationId++
      awsNonces.set(conversationId, serverNonce)
      const payload = BSON.serialize({ s: new Binary(serverNonce), h: STS_HOST })
      return { conversationId, done: false, payload: new Binary(Buffer.from(payload)), ok: 1 }
    }
    if (mechanism !== 'SCRAM-SHA-1' && mechanism !== 'SCRAM-SHA-256') {
      return {
        ok: 0,
        errmsg: `Received authentication for mechanism ${mechanism} which is not enabled`,
        code: 334,
        codeName: 'MechanismUnavailable',
      }
    }
    if (!text.startsWith('n,,')) return { ok: 0, errmsg: 'Incorrect SCRAM client|server nonce', code: 17 }
    const clientFirstBare = text.slice(3)
    const fields = attributes(clientFirstBare)
    const user = decodeName(fields.get('n') ?? '')
    const byMechanism = credentials.get(`${db}.${user}`)
    if (byMechanism === undefined) return AUTHENTICATION_FAILED
    const credential = byMechanism.get(mechanism)
    if (credential === undefined) {
      return {
        ok: 0,
        errmsg: `Unable to use ${mechanism} based authentication for user without any ${mechanism} credentials registered`,
        code: 334,
        codeName: 'MechanismUnavailable',
      }
    }
    const nonce = `${fields.get('r') ?? ''}${randomBytes(24).toString('base64')}`
    const serverFirst = `r=${nonce},s=${credential.salt.toString('base64')},i=${credential.iterations}`
    const conversationId = nextConversationId++
    conversations.set(conversationId, {
      mechanism,
      credential,
      clientFirstBare,
      serverFirst,
      nonce,
      skipEmptyExchange: command.options?.skipEmptyExchange === true,
      proven: false,
    })
    return { conversationId, done: false, payload: new Binary(Buffer.from(serverFirst)), ok: 1 }
  }

  /** saslContinue: checks the proof, then sends the server's signature. */
  const proceed = (command: Document, db: string): Document => {
    const id = Number(command.conversationId)
    const serverNonce = awsNonces.get(id)
    if (serverNonce !== undefined && options.aws) {
      awsNonces.delete(id)
      const payload = BSON.deserialize((command.payload as Binary).buffer)
      const step: AwsStep = {
        fields: Object.keys(payload),
        authorization: String(payload.a),
        date: String(payload.d),
        sessionToken: payload.t === undefined ? undefined : String(payload.t),
        refused: undefined,
      }
      step.refused = checkAwsSignature(options.aws, step, serverNonce)
      awsSteps.push(step)
      if (step.refused !== undefined) return AUTHENTICATION_FAILED
      authenticated.push(`MONGODB-AWS ${options.aws.accessKeyId}`)
      return { conversationId: id, done: true, payload: new Binary(Buffer.alloc(0)), ok: 1 }
    }
    const conversation = conversations.get(id)
    if (conversation === undefined) {
      return { ok: 0, errmsg: 'No SASL session state found', code: 17, codeName: 'ProtocolError' }
    }
    if (conversation.proven) {
      conversations.delete(id)
      return { conversationId: id, done: true, payload: new Binary(Buffer.alloc(0)), ok: 1 }
    }
    const clientFinal = payloadText(command.payload)
    const proofAt = clientFinal.lastIndexOf(',p=')
    const withoutProof = clientFinal.slice(0, proofAt)
    const fields = attributes(clientFinal)
    const { mechanism, credential } = conversation
    if (proofAt < 0 || fields.get('r') !== conversation.nonce || fields.get('c') !== 'biws' || !credential) {
      conversations.delete(id)
      return AUTHENTICATION_FAILED
    }
    const authMessage = `${conversation.clientFirstBare},${conversation.serverFirst},${withoutProof}`
    const signature = hmac(mechanism, credential.storedKey, authMessage)
    const proof = Buffer.from(fields.get('p') ?? '', 'base64')
    const clientKey = Buffer.from(proof.map((byte, i) => byte ^ (signature[i] ?? 0)))
    const storedKey = createHash(hash(mechanism)).update(clientKey).digest()
    if (proof.length !== signature.length || !timingSafeEqual(storedKey, credential.storedKey)) {
      conversations.delete(id)
      return AUTHENTICATION_FAILED
    }
    const user = decodeName(attributes(conversation.clientFirstBare).get('n') ?? '')
    authenticated.push(`${mechanism} ${db}.${user}`)
    const serverSignature = hmac(mechanism, credential.serverKey, authMessage).toString('base64')
    const done = conversation.skipEmptyExchange
    if (done) conversations.delete(id)
    else conversation.proven = true
    return { conversationId: id, done, payload: new Binary(Buffer.from(`v=${serverSignature}`)), ok: 1 }
  }

  const server = await startWireServer({
    hello(command) {
      const reply = helloReply(false)
      if (typeof command.saslSupportedMechs === 'string') {
        const mechanisms = credentials.get(command.saslSupportedMechs)
        if (mechanisms !== undefined) reply.saslSupportedMechs = [...mechanisms.keys()]
      }
      const speculative = command.speculativeAuthenticate as Document | undefined
      if (speculative?.saslStart !== undefined) {
        // mongod answers the first step inside hello; a refusal is not an error there: the
        // reply just has no speculativeAuthenticate and the driver starts over with saslStart.
        const { ok, ...first } = start(speculative, String(speculative.db))
        if (ok === 1) reply.speculativeAuthenticate = first
      }
      return reply
    },
    answer(command) {
      if (command.saslStart !== undefined) return start(command, String(command.$db))
      if (command.saslContinue !== undefined) return proceed(command, String(command.$db))
      return options.answer?.(command) ?? { ok: 1 }
    },
  })
  return Object.assign(server, { authenticated, awsSteps })
}

/** What `loginAndPing` needs of a client class, either driver's. */
export interface LoginClient {
  on(event: string, listener: (event: unknown) => void): unknown
  connect(): Promise<unknown>
  db(name: string): { command(command: Document): Promise<unknown> }
  close(): Promise<void>
}

/**
 * Logs in as a user's script does (connect, then a `ping`) with `Client` (the official driver's or
 * rumongo's MongoClient), and closes: the error it failed with, if any, and the command events
 * named in `listen` (with `monitorCommands`), in order.
 */
export async function loginAndPing(
  Client: new (uri: string, options: Document) => LoginClient,
  uri: string,
  options: Document = {},
  listen: string[] = ['commandStarted'],
): Promise<{ error: (Error & Document) | undefined; events: unknown[] }> {
  const events: unknown[] = []
  let error: (Error & Document) | undefined
  try {
    const client = new Client(uri, { monitorCommands: true, ...options })
    for (const name of listen) client.on(name, (event) => events.push(event))
    try {
      await client.connect()
      await client.db('x').command({ ping: 1 })
    } finally {
      await client.close()
    }
  } catch (caught) {
    error = caught as Error & Document
  }
  return { error, events }
}
