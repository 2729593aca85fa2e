// The embedded FerretDB dev server (devdb/): built on first use, started, stopped.
//
// CLI:     npm run devdb -- --port <port> --dir <data dir>   (foreground; prints "ready <uri>")
// Library: const server = await startDevdb(); server.uri; await server.stop()
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const sourceDir = join(root, 'devdb')
const binary = join(root, 'build', 'devdb')

const mtime = (path) => statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? 0

/** Builds build/devdb with `go build` when it is missing or older than its sources. */
export function ensureDevdbBinary() {
  const built = mtime(binary)
  if (built > 0 && ['main.go', 'go.mod', 'go.sum'].every((file) => mtime(join(sourceDir, file)) < built))
    return binary
  console.error(
    'devdb: building the embedded FerretDB server (go build; the first build downloads modules)...',
  )
  execFileSync('go', ['build', '-o', binary, '.'], { cwd: sourceDir, stdio: 'inherit' })
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
export async function startDevdb({ port, dir, timeoutMs = 60_000 } = {}) {
  ensureDevdbBinary()
  port ??= await freePort()
  const temporary = dir === undefined
  const dataDir = dir ?? mkdtempSync(join(tmpdir(), 'rumongo-devdb-'))
  const child = spawn(binary, ['--port', String(port), '--dir', dataDir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const uri = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`devdb did not start within ${timeoutMs} ms`)), timeoutMs)
    let output = ''
    child.stdout.on('data', (chunk) => {
      output += chunk
      const match = /ready (\S+)/.exec(output)
      if (match) {
        clearTimeout(timer)
        resolve(match[1])
      }
    })
    exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`devdb exited with code ${code} before it was ready`))
    })
  })
  return {
    uri,
    port,
    dataDir,
    /** Sends SIGTERM and waits for the server to exit (SIGKILL after 10 s). */
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
        await exited
        clearTimeout(timer)
      }
      if (temporary) rmSync(dataDir, { recursive: true, force: true })
    },
    /** Kills the server abruptly (for fault tests). */
    async kill() {
      child.kill('SIGKILL')
      await exited
    },
  }
}

async function main() {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '27017' },
      dir: { type: 'string', default: join(root, '.devdb-data') },
    },
  })
  const server = await startDevdb({ port: Number(values.port), dir: values.dir })
  console.log(`devdb ready ${server.uri} (data in ${server.dataDir})`)
  const stop = async () => {
    await server.stop()
    process.exit(0)
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main()
