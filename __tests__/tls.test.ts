// TLS for real: the embedded server's own TLS listener (devdb --tls-cert/--tls-key/--tls-ca) with
// certificates made by openssl for this run, and both drivers side by side on the same servers: the
// TLS options, each way a handshake fails (class, message and Node.js's `code`), client
// certificates (RSA, EC, an encrypted key) and MONGODB-X509 over TLS (a TLS front on the fake wire
// server: the embedded server has no X.509 authentication). docs/tls.md says what differs and why.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as official from 'mongodb'
import * as rumongo from 'rumongo'
// @ts-expect-error: a plain ESM script without types
import { startDevdb } from '../scripts/devdb.mjs'
import { KEY_PASSWORD, makeCertificates, type Certificates } from './setup/certificates.js'
import { startTlsWireServer, type TlsWireServer } from './setup/tls_server.js'

type Driver = typeof official
const DRIVERS = [
  ['official', official],
  ['rumongo', rumongo as unknown as Driver],
] as const

interface Devdb {
  uri: string
  port: number
  stop(): Promise<void>
}

let certs: Certificates
/** Embedded servers on TLS listeners, by the certificate they present. */
let plain: Devdb // the server certificate, no client certificate asked
let clientAuth: Devdb // the same, and every client must present a certificate the test CA signed
let expired: Devdb
let otherName: Devdb // valid for other.example only
let version1: Devdb // X.509 v1 (no extensions), CN=localhost
let selfSigned: Devdb // a self-signed certificate, not a CA
let selfSignedCa: Devdb // the CA's own certificate
let chain: Devdb // the server certificate and the CA's
beforeAll(async () => {
  certs = makeCertificates()
  ;[plain, clientAuth, expired, otherName, version1, selfSigned, selfSignedCa, chain] = await Promise.all([
    startDevdb({ tls: certs.server }),
    startDevdb({ tls: { ...certs.server, caFile: certs.ca } }),
    startDevdb({ tls: certs.expired }),
    startDevdb({ tls: certs.otherName }),
    startDevdb({ tls: certs.version1 }),
    startDevdb({ tls: certs.selfSigned }),
    startDevdb({ tls: certs.selfSignedCa }),
    startDevdb({ tls: certs.chain }),
  ])
})
afterAll(async () => {
  await Promise.all(
    [plain, clientAuth, expired, otherName, version1, selfSigned, selfSignedCa, chain].map((server) =>
      server?.stop(),
    ),
  )
  certs?.remove()
})

/** What connecting and running `ping` gave: success, or the error's class, message and causes. */
type Outcome = { ok: true } | { error: string; message: string; cause?: string; code?: unknown }

/**
 * What Node 24's TLS errors (not Node 20's) add to a certificate-chain failure. It names a Node flag
 * for Node's own CA store, which rumongo does not read (rustls with `tlsCAFile` or the Mozilla
 * roots), so rumongo does not repeat it (docs/tls.md): the comparison leaves it out.
 */
const NODE_SYSTEM_CA_HINT = '; if the root CA is installed locally, try running Node.js with --use-system-ca'

/**
 * OpenSSL's text without what changes from run to run: the thread id it starts with and the source
 * file and line in the middle (`80BC...:error:0A000418:SSL routines:...:../ssl/record/rec_layer_s3.c:1601:SSL alert number 48\n`),
 * and without Node's `--use-system-ca` hint.
 */
const stable = (message: string) =>
  message
    .replace(NODE_SYSTEM_CA_HINT, '')
    .replace(/^[0-9A-F]+:(?=error:)/, '')
    .replace(/:[^:]+\.c:\d+:/, ':')
    .replace(/\n$/, '')

async function attempt(driver: Driver, uri: string, options: object = {}): Promise<Outcome> {
  const client = new driver.MongoClient(uri, { serverSelectionTimeoutMS: 5000, ...options })
  try {
    await client.db('admin').command({ ping: 1 })
    return { ok: true }
  } catch (error) {
    const { cause } = error as { cause?: { code?: unknown; cause?: { code?: unknown } } }
    return {
      error: (error as Error).constructor.name,
      message: stable((error as Error).message),
      ...(cause ? { cause: cause.constructor.name, code: cause.cause?.code ?? cause.code } : {}),
    }
  } finally {
    await client.close()
  }
}

/** Both drivers' outcomes, connecting at the same time. */
async function both(uri: string, options: object = {}) {
  const [officialOutcome, rumongoOutcome] = await Promise.all(
    DRIVERS.map(([, driver]) => attempt(driver, uri, options)),
  )
  return { official: officialOutcome!, rumongo: rumongoOutcome! }
}

const at = (server: Devdb, query: string, host = '127.0.0.1') =>
  `mongodb://${host}:${server.port}/?tls=true&${query}`
const selectionFailure = (message: string, code?: string) => ({
  error: 'MongoServerSelectionError',
  message,
  cause: 'MongoNetworkError',
  code,
})

describe('TLS to the embedded server: options that connect', () => {
  const cases: [string, () => string, object?][] = [
    ['tlsCAFile', () => at(plain, `tlsCAFile=${certs.ca}`)],
    ['tlsCAFile, the host by name', () => at(plain, `tlsCAFile=${certs.ca}`, 'localhost')],
    [
      'tlsAllowInvalidCertificates with a CA that did not sign it',
      () => at(plain, `tlsCAFile=${certs.otherCa}&tlsAllowInvalidCertificates=true`),
    ],
    ['tlsInsecure without a CA', () => at(plain, 'tlsInsecure=true')],
    [
      'tlsAllowInvalidHostnames for a certificate of another name',
      () => at(otherName, `tlsCAFile=${certs.ca}&tlsAllowInvalidHostnames=true`),
    ],
    [
      'tlsAllowInvalidHostnames in the client options',
      () => at(otherName, `tlsCAFile=${certs.ca}`),
      { tlsAllowInvalidHostnames: true },
    ],
    [
      'tlsAllowInvalidCertificates for an expired certificate',
      () => at(expired, `tlsCAFile=${certs.ca}&tlsAllowInvalidCertificates=true`),
    ],
    [
      'tlsAllowInvalidHostnames=false with the right name',
      () => at(plain, `tlsCAFile=${certs.ca}&tlsAllowInvalidHostnames=false`),
    ],
    [
      'a client certificate (RSA)',
      () => at(clientAuth, `tlsCAFile=${certs.ca}&tlsCertificateKeyFile=${certs.clientRsa}`),
    ],
    [
      'a client certificate (EC)',
      () => at(clientAuth, `tlsCAFile=${certs.ca}&tlsCertificateKeyFile=${certs.clientEc}`),
    ],
    [
      'a client certificate whose key is encrypted, tlsCertificateKeyFilePassword in the URI',
      () =>
        at(
          clientAuth,
          `tlsCAFile=${certs.ca}&tlsCertificateKeyFile=${certs.clientEncrypted}&tlsCertificateKeyFilePassword=${KEY_PASSWORD}`,
        ),
    ],
    [
      'tlsCertificateKeyFilePassword in the client options',
      () => at(clientAuth, `tlsCAFile=${certs.ca}&tlsCertificateKeyFile=${certs.clientEncrypted}`),
      { tlsCertificateKeyFilePassword: KEY_PASSWORD },
    ],
    [
      'a password with a key that is not encrypted',
      () =>
        at(
          clientAuth,
          `tlsCAFile=${certs.ca}&tlsCertificateKeyFile=${certs.clientRsa}&tlsCertificateKeyFilePassword=unused`,
        ),
    ],
  ]
  it.each(cases)('%s', async (_, uri, options) => {
    expect(await both(uri(), options)).toEqual({ official: { ok: true }, rumongo: { ok: true } })
  })

  it('reads through TLS as without it', async () => {
    const uri = at(plain, `tlsCAFile=${certs.ca}`)
    const writer = await official.MongoClient.connect(uri)
    await writer
      .db('tls_test')
      .collection('items')
      .insertMany([{ a: 'x' }, { a: 'y' }])
    await writer.close()
    const results = await Promise.all(
      DRIVERS.map(async ([, driver]) => {
        const client = await driver.MongoClient.connect(uri)
        try {
          return await client
            .db('tls_test')
            .collection('items')
            .find({}, { projection: { _id: 0 } })
            .toArray()
        } finally {
          await client.close()
        }
      }),
    )
    expect(results[0]).toEqual([{ a: 'x' }, { a: 'y' }])
    expect(results[1]).toEqual(results[0])
  })
})

describe('TLS to the embedded server: failures', () => {
  const cases: [string, () => string, Outcome, object?][] = [
    [
      'a CA that did not sign the server certificate',
      () => at(plain, `tlsCAFile=${certs.otherCa}`),
      selectionFailure('unable to verify the first certificate', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'),
    ],
    [
      'no tlsCAFile: the system CAs did not sign it',
      () => at(plain, ''),
      selectionFailure('unable to verify the first certificate', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'),
    ],
    [
      'a self-signed server certificate',
      () => at(selfSigned, `tlsCAFile=${certs.otherCa}`),
      selectionFailure('self-signed certificate', 'DEPTH_ZERO_SELF_SIGNED_CERT'),
    ],
    [
      'a chain ending in a root the client does not trust',
      () => at(chain, `tlsCAFile=${certs.otherCa}`),
      selectionFailure('self-signed certificate in certificate chain', 'SELF_SIGNED_CERT_IN_CHAIN'),
    ],
    [
      'tlsAllowInvalidHostnames does not allow an unknown CA',
      () => at(plain, `tlsCAFile=${certs.otherCa}&tlsAllowInvalidHostnames=true`),
      selectionFailure('unable to verify the first certificate', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'),
    ],
    [
      'an expired server certificate',
      () => at(expired, `tlsCAFile=${certs.ca}`),
      selectionFailure('certificate has expired', 'CERT_HAS_EXPIRED'),
    ],
    [
      'tlsAllowInvalidHostnames does not allow an expired certificate',
      () => at(expired, `tlsCAFile=${certs.ca}&tlsAllowInvalidHostnames=true`),
      selectionFailure('certificate has expired', 'CERT_HAS_EXPIRED'),
    ],
    [
      'a certificate for another name, reached by IP address',
      () => at(otherName, `tlsCAFile=${certs.ca}`),
      selectionFailure(
        "Hostname/IP does not match certificate's altnames: IP: 127.0.0.1 is not in the cert's list: ",
        'ERR_TLS_CERT_ALTNAME_INVALID',
      ),
    ],
    [
      'a certificate for another name, reached by host name',
      () => at(otherName, `tlsCAFile=${certs.ca}`, 'localhost'),
      selectionFailure(
        "Hostname/IP does not match certificate's altnames: Host: localhost. is not in the cert's altnames: DNS:other.example",
        'ERR_TLS_CERT_ALTNAME_INVALID',
      ),
    ],
    [
      'a server requiring a client certificate, none given',
      () => at(clientAuth, `tlsCAFile=${certs.ca}`),
      selectionFailure(
        'error:0A00045C:SSL routines:ssl3_read_bytes:tlsv13 alert certificate required:SSL alert number 116',
        'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED',
      ),
    ],
    [
      'a client certificate signed by a CA the server does not trust',
      () => at(clientAuth, `tlsCAFile=${certs.ca}&tlsCertificateKeyFile=${certs.untrustedClient}`),
      selectionFailure(
        'error:0A000418:SSL routines:ssl3_read_bytes:tlsv1 alert unknown ca:SSL alert number 48',
        'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA',
      ),
    ],
  ]
  it.each(cases)('%s', async (_, uri, expected, options) => {
    const outcomes = await both(uri(), options)
    expect(outcomes.official).toEqual(expected)
    expect(outcomes.rumongo).toEqual(outcomes.official)
  })

  it('a TLS client on a server that closes the connection during the handshake', async () => {
    const { createServer } = await import('node:net')
    const server = createServer((socket) => socket.on('data', () => socket.end()))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as { port: number }
    try {
      const outcomes = await both(`mongodb://127.0.0.1:${port}/?tls=true&tlsCAFile=${certs.ca}`)
      expect(outcomes.official).toEqual(
        selectionFailure(
          'Client network socket disconnected before secure TLS connection was established',
          'ECONNRESET',
        ),
      )
      expect(outcomes.rumongo).toEqual(outcomes.official)
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

describe('TLS options rumongo cannot honour as the official driver does (docs/tls.md)', () => {
  it('an X.509 v1 server certificate (no extensions): the official driver connects, rumongo says why it refuses', async () => {
    const outcomes = await both(at(version1, `tlsCAFile=${certs.ca}`, 'localhost'))
    expect(outcomes.official).toEqual({ ok: true })
    expect(outcomes.rumongo).toEqual(
      selectionFailure(
        "unsupported certificate version: the server's certificate is X.509 v1 (no extensions), which rustls does not accept; reissue it as v3 with a subjectAltName",
      ),
    )
  })

  it('a self-signed CA certificate as the server certificate, trusted through tlsCAFile: the official driver connects, rumongo refuses', async () => {
    // WebPKI refuses a CA certificate as an end entity (CaUsedAsEndEntity) even when it is the trust
    // anchor; OpenSSL accepts it. docs/tls.md says so.
    const outcomes = await both(at(selfSignedCa, `tlsCAFile=${certs.ca}&tlsAllowInvalidHostnames=true`))
    expect(outcomes.official).toEqual({ ok: true })
    expect(outcomes.rumongo).toMatchObject({ error: 'MongoServerSelectionError', cause: 'MongoNetworkError' })
  })

  it('a wrong key password: both refuse, and neither shows the password', async () => {
    const uri = at(clientAuth, `tlsCAFile=${certs.ca}&tlsCertificateKeyFile=${certs.clientEncrypted}`)
    const outcomes = await both(uri, { tlsCertificateKeyFilePassword: `${KEY_PASSWORD}-wrong` })
    expect(outcomes.official).toEqual({
      error: 'MongoServerSelectionError',
      message: 'error:1C800064:Provider routines::bad decrypt',
      cause: 'MongoError',
      code: 'ERR_OSSL_BAD_DECRYPT',
    })
    expect(outcomes.rumongo).toMatchObject({ error: 'MongoParseError' })
    for (const outcome of Object.values(outcomes)) expect(JSON.stringify(outcome)).not.toContain(KEY_PASSWORD)
  })
})

describe('MONGODB-X509 over TLS (a TLS front on the fake wire server)', () => {
  let server: TlsWireServer
  beforeAll(async () => {
    server = await startTlsWireServer({
      ...certs.server,
      caFile: certs.ca,
      // As a mongod: the user is the client certificate's subject, given or not in the command.
      answer: (command) => {
        if (Object.keys(command)[0] !== 'authenticate') return { ok: 1 }
        const subject = server.clientSubjects.at(-1)
        if (command.mechanism === 'MONGODB-X509' && (command.user ?? subject) === subject) {
          return { dbname: '$external', user: subject, ok: 1 }
        }
        return { ok: 0, code: 18, codeName: 'AuthenticationFailed', errmsg: 'Authentication failed.' }
      },
    })
  })
  afterAll(() => server?.stop())

  /** Each driver in turn (the fake knows the user by the last certificate): its outcome and what it sent to log in. */
  async function login(query: string, userinfo = '') {
    const uri = `mongodb://${userinfo}${server.address}/?directConnection=true&tls=true&tlsCAFile=${certs.ca}&authMechanism=MONGODB-X509&${query}`
    const sent: Record<string, { outcome: Outcome; speculative: unknown[]; authenticate: unknown[] }> = {}
    for (const [name, driver] of DRIVERS) {
      const before = server.commands.length
      const outcome = await attempt(driver, uri)
      const commands = server.commands.slice(before)
      const unique = (values: unknown[]) => [...new Set(values.map((value) => JSON.stringify(value)))].sort()
      sent[name] = {
        outcome,
        speculative: unique(commands.map((command) => command.speculativeAuthenticate).filter(Boolean)),
        authenticate: unique(commands.filter((command) => 'authenticate' in command)),
      }
    }
    return sent
  }

  it('the certificate subject as the user, not named in the URI', async () => {
    const { official: o, rumongo: r } = await login(`tlsCertificateKeyFile=${certs.clientRsa}`)
    expect(o!.outcome).toEqual({ ok: true })
    expect(o!.authenticate).toEqual([
      JSON.stringify({ authenticate: 1, mechanism: 'MONGODB-X509', $db: '$external' }),
    ])
    expect(r).toEqual(o)
  })

  it('the user named in the URI (the subject, percent-encoded)', async () => {
    const user = encodeURIComponent(certs.clientSubject)
    const { official: o, rumongo: r } = await login(`tlsCertificateKeyFile=${certs.clientEc}`, `${user}@`)
    expect(o!.outcome).toEqual({ ok: true })
    expect(o!.authenticate).toEqual([
      JSON.stringify({
        authenticate: 1,
        mechanism: 'MONGODB-X509',
        user: certs.clientSubject,
        $db: '$external',
      }),
    ])
    expect(r).toEqual(o)
  })

  it('a user that is not the subject: the server refuses (code 18)', async () => {
    const { official: o, rumongo: r } = await login(
      `tlsCertificateKeyFile=${certs.clientRsa}`,
      'CN=someone-else@',
    )
    expect(o!.outcome).toEqual({ error: 'MongoServerError', message: 'Authentication failed.' })
    expect(r).toEqual(o)
  })
})
