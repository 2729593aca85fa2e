// The embedded FerretDB dev server (devdb/): built on first use, started, stopped.
//
// CLI:     npm run devdb -- --port <port> --dir <data dir>   (foreground; prints "devdb ready <uri> (data in <dir>)")
//          [--tls-cert <pem> --tls-key <pem> [--tls-ca <pem>]]   (a TLS listener; with a CA, client certificates required)
// Library: const server = await startDevdb(); server.uri; await server.stop()
//          startDevdb({ tls: { certFile, keyFile, caFile } }): server.uri ends in `?tls=true`
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { GO, requireTool } from './lib/prerequisites.mjs'
import { isFresh, serveInForeground, startServer } from './lib/server_process.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const sourceDir = join(root, 'devdb')
const binary = join(root, 'build', 'devdb')

/** Builds build/devdb with `go build` when it is missing or older than its sources. */
export function ensureDevdbBinary() {
  if (
    isFresh(
      binary,
      ['main.go', 'go.mod', 'go.sum'].map((file) => join(sourceDir, file)),
    )
  )
    return binary
  requireTool(GO)
  console.error(
    'devdb: building the embedded FerretDB server (go build; the first build downloads modules)...',
  )
  execFileSync('go', ['build', '-o', binary, '.'], { cwd: sourceDir, stdio: ['ignore', 2, 'inherit'] })
  return binary
}

/** A free TCP port on the loopback interface. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/**
 * Starts the dev server and resolves once it accepts connections.
 * Without `dir`, data goes to a fresh temporary directory removed by `stop()`.
 */
export async function startDevdb({ port, dir, tls, timeoutMs = 60_000 } = {}) {
  ensureDevdbBinary()
  port ??= await freePort()
  const dataDir = dir ?? mkdtempSync(join(tmpdir(), 'rumongo-devdb-'))
  const args = ['--port', String(port), '--dir', dataDir, ...tlsArgs(tls)]
  const server = await startServer('devdb', binary, args, timeoutMs)
  if (dir !== undefined) return { ...server, dataDir }
  return {
    ...server,
    dataDir,
    async stop() {
      await server.stop()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** The devdb flags of a TLS listener: `{ certFile, keyFile, caFile? }` (none without `tls`). */
function tlsArgs(tls) {
  if (!tls) return []
  const args = ['--tls-cert', tls.certFile, '--tls-key', tls.keyFile]
  return tls.caFile ? [...args, '--tls-ca', tls.caFile] : args
}

async function main() {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '27017' },
      dir: { type: 'string', default: join(root, '.devdb-data') },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'tls-ca': { type: 'string' },
    },
  })
  const tls = values['tls-cert']
    ? { certFile: values['tls-cert'], keyFile: values['tls-key'], caFile: values['tls-ca'] }
    : undefined
  const server = await startDevdb({ port: Number(values.port), dir: values.dir, tls })
  serveInForeground(server, `devdb ready ${server.uri} (data in ${server.dataDir})`)
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main()
