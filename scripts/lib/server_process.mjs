// Shared by the dev server (devdb.mjs) and the replay server (replay.mjs): run a server binary
// that prints "ready <uri>" once it accepts connections, and stop it cleanly.
import { spawn } from 'node:child_process'
import { statSync } from 'node:fs'

export const mtime = (path) => statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? 0

/** True when `binary` exists and is newer than every file of `sources`. */
export const isFresh = (binary, sources) => {
  const built = mtime(binary)
  return built > 0 && sources.every((file) => mtime(file) < built)
}

/**
 * Spawns `binary args` and resolves once it printed its ready line. Returns `{ uri, port, pid, stop() }`;
 * `stop` sends SIGTERM and waits for the exit (SIGKILL after 10 s). Fault tests signal `pid`
 * themselves (SIGKILL, SIGSTOP / SIGCONT).
 */
export async function startServer(name, binary, args, timeoutMs) {
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'inherit'] })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const uri = await new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name} did not start within ${timeoutMs} ms`)),
      timeoutMs,
    )
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
      reject(new Error(`${name} exited with code ${code} before it was ready`))
    })
  })
  return {
    uri,
    // The first host's (a replica set's uri lists several, which URL does not parse).
    port: Number(/^[a-z+]+:\/\/[^/,]*:(\d+)/.exec(uri)?.[1]),
    pid: child.pid,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
        await exited
        clearTimeout(timer)
      }
    },
  }
}

/**
 * The CLI side: prints `message(server)`, then stops the server on SIGTERM/SIGINT and when this
 * process is orphaned (`npm run` signals only its shell, which can die without passing the signal
 * on), so no server outlives the command.
 */
export function serveInForeground(server, message) {
  console.log(message)
  let stopping
  const stop = () => (stopping ??= server.stop().then(() => process.exit(0)))
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
  const parent = process.ppid
  setInterval(() => process.ppid !== parent && stop(), 250).unref()
}
