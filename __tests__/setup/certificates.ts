// Test certificates made with `openssl` at test time in a fresh temporary directory (no key is
// committed, none expires): a CA, server certificates signed by it (valid, expired, for another
// name, X.509 v1 without extensions), a second CA nobody trusts, and client certificates (RSA, EC,
// one with its key encrypted by a password, one signed by the untrusted CA).
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** The password of `clientEncrypted`'s key. Tests check that no message ever shows it. */
export const KEY_PASSWORD = 'pw-Secret-4711'

export interface Certificates {
  dir: string
  /** The CA that signed every certificate below but `untrustedClient`. */
  ca: string
  /** A CA that signed nothing the servers use. */
  otherCa: string
  /** `{ certFile, keyFile }` of server certificates. */
  server: { certFile: string; keyFile: string }
  expired: { certFile: string; keyFile: string }
  otherName: { certFile: string; keyFile: string }
  version1: { certFile: string; keyFile: string }
  /** A self-signed server certificate (not a CA). */
  selfSigned: { certFile: string; keyFile: string }
  /** The CA's own certificate as a server's (what `openssl req -x509` makes: self-signed, CA:TRUE). */
  selfSignedCa: { certFile: string; keyFile: string }
  /** The server certificate followed by the CA's (a chain ending in its root). */
  chain: { certFile: string; keyFile: string }
  /** Certificate and key in one PEM file, as `tlsCertificateKeyFile` takes them. */
  clientRsa: string
  clientEc: string
  clientEncrypted: string
  untrustedClient: string
  /** The subject of the client certificates, as MONGODB-X509 names the user (RFC 2253). */
  clientSubject: string
  remove(): void
}

const openssl = (dir: string, args: string[]) =>
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })

/**
 * `openssl req` arguments for a new unencrypted key `name.key` (RSA 2048 or EC P-256) and, in
 * `out`, a request for `subject` (add `-x509` for a self-signed certificate instead).
 */
function newKey(name: string, subject: string, out: string, keyType = 'rsa'): string[] {
  const keyArgs =
    keyType === 'ec' ? ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'] : ['-newkey', 'rsa:2048']
  return ['req', ...keyArgs, '-nodes', '-keyout', `${name}.key`, '-out', out, '-subj', subject]
}

/** A certificate for `subject` signed by `ca`, with the `extensions` (v3) or none (v1). */
function sign(dir: string, name: string, subject: string, ca: string, extensions?: string, keyType = 'rsa') {
  openssl(dir, newKey(name, subject, `${name}.csr`, keyType))
  const args = [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.pem`,
    '-CAkey',
    `${ca}.key`,
    '-CAcreateserial',
  ]
  if (extensions) {
    writeFileSync(join(dir, `${name}.ext`), extensions)
    args.push('-extfile', `${name}.ext`)
  }
  openssl(dir, [...args, '-days', '3650', '-out', `${name}.pem`])
}

/** A CA certificate and key (`name.pem`, `name.key`). */
function authority(dir: string, name: string, subject: string) {
  openssl(dir, [...newKey(name, subject, `${name}.pem`), '-x509', '-days', '3650'])
}

/** Certificate and key of `name` in one file, as `tlsCertificateKeyFile` takes them. */
function bundle(dir: string, name: string, keyFile = `${name}.key`, file = `${name}-bundle.pem`): string {
  const path = join(dir, file)
  writeFileSync(
    path,
    readFileSync(join(dir, `${name}.pem`), 'utf8') + readFileSync(join(dir, keyFile), 'utf8'),
  )
  return path
}

export function makeCertificates(): Certificates {
  const dir = mkdtempSync(join(tmpdir(), 'rumongo-tls-'))
  const at = (file: string) => join(dir, file)
  authority(dir, 'ca', '/CN=rumongo test CA')
  authority(dir, 'other-ca', '/CN=rumongo untrusted CA')
  const serverNames = 'subjectAltName=DNS:localhost,IP:127.0.0.1\n'
  sign(dir, 'server', '/CN=localhost', 'ca', serverNames)
  sign(dir, 'other-name', '/CN=other.example', 'ca', 'subjectAltName=DNS:other.example\n')
  // v1: `openssl x509 -req` without extensions, the subject's CN the only name.
  sign(dir, 'version1', '/CN=localhost', 'ca')
  // Expired: only `openssl ca` sets past dates (OpenSSL 3.0's x509 and req take only -days > 0).
  openssl(dir, newKey('expired', '/CN=localhost', 'expired.csr'))
  writeFileSync(at('index.txt'), '')
  writeFileSync(at('serial'), '1000\n')
  writeFileSync(at('expired.ext'), serverNames)
  writeFileSync(
    at('ca.cnf'),
    '[ca]\ndefault_ca = test\n[test]\ndatabase = index.txt\nserial = serial\nnew_certs_dir = .\n' +
      'default_md = sha256\npolicy = any\nunique_subject = no\n[any]\ncommonName = supplied\n',
  )
  openssl(dir, [
    'ca',
    '-batch',
    '-config',
    'ca.cnf',
    '-cert',
    'ca.pem',
    '-keyfile',
    'ca.key',
    '-in',
    'expired.csr',
    '-out',
    'expired.pem',
    '-extfile',
    'expired.ext',
    '-startdate',
    '20200101000000Z',
    '-enddate',
    '20200102000000Z',
    '-notext',
  ])
  const clientSubject = '/C=US/O=rumongo/OU=tests/CN=reader'
  const clientUsage = 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n'
  sign(dir, 'client-rsa', clientSubject, 'ca', clientUsage)
  sign(dir, 'client-ec', clientSubject, 'ca', clientUsage, 'ec')
  sign(dir, 'untrusted-client', clientSubject, 'other-ca', clientUsage)
  openssl(dir, [
    'pkcs8',
    '-topk8',
    '-in',
    'client-rsa.key',
    '-out',
    'client-encrypted.key',
    '-v2',
    'aes-256-cbc',
    '-passout',
    `pass:${KEY_PASSWORD}`,
  ])
  openssl(dir, [
    ...newKey('self-signed', '/CN=localhost', 'self-signed.pem'),
    '-x509',
    '-days',
    '3650',
    '-addext',
    'basicConstraints=critical,CA:FALSE',
    '-addext',
    'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ])
  writeFileSync(at('chain.pem'), readFileSync(at('server.pem'), 'utf8') + readFileSync(at('ca.pem'), 'utf8'))
  return {
    dir,
    ca: at('ca.pem'),
    otherCa: at('other-ca.pem'),
    server: { certFile: at('server.pem'), keyFile: at('server.key') },
    expired: { certFile: at('expired.pem'), keyFile: at('expired.key') },
    otherName: { certFile: at('other-name.pem'), keyFile: at('other-name.key') },
    version1: { certFile: at('version1.pem'), keyFile: at('version1.key') },
    selfSigned: { certFile: at('self-signed.pem'), keyFile: at('self-signed.key') },
    selfSignedCa: { certFile: at('ca.pem'), keyFile: at('ca.key') },
    chain: { certFile: at('chain.pem'), keyFile: at('server.key') },
    clientRsa: bundle(dir, 'client-rsa'),
    clientEc: bundle(dir, 'client-ec'),
    clientEncrypted: bundle(dir, 'client-rsa', 'client-encrypted.key', 'client-encrypted-bundle.pem'),
    untrustedClient: bundle(dir, 'untrusted-client'),
    clientSubject: 'CN=reader,OU=tests,O=rumongo,C=US',
    remove: () => rmSync(dir, { recursive: true, force: true }),
  }
}
