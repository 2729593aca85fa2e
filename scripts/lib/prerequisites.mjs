// The tools `npm run build`, `npm run demo` and `npm test` need on a fresh machine (README, "Try
// it"): a missing one is named with where to get it, instead of failing later in a tool of its own
// ("Internal Error: cargo metadata failed to run", "spawnSync go ENOENT").
import { spawnSync } from 'node:child_process'

export const RUST = {
  command: 'cargo',
  what: 'Rust (cargo), to build the native addon',
  install: 'install it from https://rustup.rs',
}
export const GO = {
  command: 'go',
  what: 'Go, to build the embedded dev server (devdb/)',
  install: 'install it from https://go.dev/dl, or set MONGODB_URI to a MongoDB server of yours',
}

/** Throws an Error naming `tool` and how to get it unless `tool.command version` runs. */
export function requireTool(tool) {
  const probe = spawnSync(tool.command, [tool.command === 'go' ? 'version' : '--version'], {
    stdio: 'ignore',
  })
  if (probe.error === undefined && probe.status === 0) return
  const error = new Error(
    `This needs ${tool.what}, but \`${tool.command}\` is not on PATH: ${tool.install}, open a new ` +
      'shell, and run the command again.',
  )
  error.code = 'RUMONGO_MISSING_TOOL'
  throw error
}
