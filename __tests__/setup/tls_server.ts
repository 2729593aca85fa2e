// A TLS front for the fake wire server (wire_server.ts), for what the embedded server cannot show
// over TLS: MONGODB-X509 authentication, which FerretDB does not implement. It terminates TLS with
// the given certificate (asking for and verifying a client certificate when given a CA), records
// the subject of each client certificate, and pipes the plain bytes to a wire server whose `answer`
// sees the `authenticate` commands.
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { connect, type AddressInfo, type Socket } from 'node:net'
import { createServer, type TLSSocket } from 'node:tls'
import { startWireServer, type WireServer, type WireServerOptions } from './wire_server.js'

export interface TlsWireServerOptions extends WireServerOptions {
  certFile: string
  keyFile: string
  /** Clients must present a certificate this CA signed (as a mongod with `--tlsCAFile`). */
  caFile?: string
}

export interface TlsWireServer extends WireServer {
  /** The subject of each client certificate presented, in RFC 2253 order (`CN=...,O=...`). */
  clientSubjects: string[]
}

/** The subject of a peer certificate as MONGODB-X509 names its user: RFC 2253, most specific first. */
function rfc2253(subject: Record<string, string | string[]>): string {
  return Object.entries(subject)
    .reverse()
    .map(([key, value]) => `${key}=${Array.isArray(value) ? value.join('+') : value}`)
    .join(',')
}

export async function startTlsWireServer(options: TlsWireServerOptions): Promise<TlsWireServer> {
  const wire = await startWireServer(options)
  const clientSubjects: string[] = []
  const sockets = new Set<Socket>()
  const server = createServer(
    {
      cert: readFileSync(options.certFile),
      key: readFileSync(options.keyFile),
      ...(options.caFile
        ? { ca: readFileSync(options.caFile), requestCert: true, rejectUnauthorized: true }
        : {}),
    },
    (tls: TLSSocket) => {
      const peer = tls.getPeerCertificate()
      if (peer && peer.subject)
        clientSubjects.push(rfc2253(peer.subject as unknown as Record<string, string>))
      const [host, port] = wire.address.split(':')
      const plain = connect(Number(port), host)
      for (const socket of [tls, plain]) {
        sockets.add(socket)
        socket.on('close', () => sockets.delete(socket))
        socket.on('error', () => {
          tls.destroy()
          plain.destroy()
        })
      }
      tls.pipe(plain).pipe(tls)
    },
  )
  server.on('tlsClientError', () => {})
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = `127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    ...wire,
    uri: `mongodb://${address}/?directConnection=true&tls=true&serverSelectionTimeoutMS=5000`,
    address,
    clientSubjects,
    async stop() {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
      await wire.stop()
    },
  }
}
