// The benchmark replay server (bench/replay/): built on first use, started, stopped.
//
// CLI:     npm run replay -- --port <port> [--docs <n>] [--replica-set <members>] [--load <name>=<path>]...
//          (foreground; prints "replay ready <uri>")
// Library: const server = await startReplay(); server.uri; await server.stop()
import { execFileSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { isFresh, serveInForeground, startServer } from './lib/server_process.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const sourceDir = join(root, 'bench', 'replay')
const binary = join(root, 'target', 'release', 'rumongo-replay')

/** Builds the server with `cargo build --release` when it is missing or older than its sources. */
export function ensureReplayBinary() {
  const sources = [
    join(sourceDir, 'Cargo.toml'),
    ...readdirSync(join(sourceDir, 'src')).map((file) => join(sourceDir, 'src', file)),
  ]
  if (isFresh(binary, sources)) return binary
  console.error('replay: building the replay server (cargo build --release -p rumongo-replay)...')
  // stdout too goes to stderr: a CLI caller's stdout carries only the ready line.
  execFileSync('cargo', ['build', '--release', '-p', 'rumongo-replay'], {
    cwd: root,
    stdio: ['ignore', 2, 'inherit'],
  })
  return binary
}

/**
 * Starts the replay server and resolves once it accepts connections. Without `port`, the server
 * picks a free one. `docs` is the number of documents of each generated collection (1,000,000 by
 * default); `load` maps collection names to files of concatenated BSON documents served as is.
 * `replicaSet`: that many members of replica set `rs` (the uri lists them all, `?replicaSet=rs`).
 */
export async function startReplay({ port = 0, docs, replicaSet, load = {}, timeoutMs = 300_000 } = {}) {
  ensureReplayBinary()
  const args = ['--port', String(port)]
  if (docs !== undefined) args.push('--docs', String(docs))
  if (replicaSet !== undefined) args.push('--replica-set', String(replicaSet))
  for (const [name, path] of Object.entries(load)) args.push('--load', `${name}=${path}`)
  return startServer('replay', binary, args, timeoutMs)
}

async function main() {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '27017' },
      docs: { type: 'string' },
      'replica-set': { type: 'string' },
      load: { type: 'string', multiple: true, default: [] },
    },
  })
  const load = Object.fromEntries(values.load.map((entry) => entry.split(/=(.*)/s).slice(0, 2)))
  const replicaSet = values['replica-set'] === undefined ? undefined : Number(values['replica-set'])
  const server = await startReplay({ port: Number(values.port), docs: values.docs, replicaSet, load })
  serveInForeground(server, `replay ready ${server.uri}`)
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main()
