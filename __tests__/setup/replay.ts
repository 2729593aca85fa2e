// The replay wire server serving given documents: BSON that FerretDB refuses to store (NaN keys,
// broken UTF-8, 10,000 levels of nesting, ...) reaches the drivers through a real find.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
// @ts-expect-error: a plain ESM script without types
import { startReplay } from '../../scripts/replay.mjs'

export interface ServedReplay {
  uri: string
  /** Stops the server and deletes the files it served. */
  stop(): Promise<void>
}

/**
 * Starts a replay server whose database `bench` has one collection per entry of `collections`,
 * holding exactly those BSON documents in that order, next to the generated benchmark
 * collections of `docs` documents each.
 */
export async function serveDocuments(
  collections: Record<string, Uint8Array[]>,
  { docs = 10 }: { docs?: number } = {},
): Promise<ServedReplay> {
  const dir = mkdtempSync(join(tmpdir(), 'rumongo-replay-'))
  const load: Record<string, string> = {}
  for (const [name, documents] of Object.entries(collections)) {
    load[name] = join(dir, `${name}.bson`)
    writeFileSync(load[name], Buffer.concat(documents))
  }
  let server: { uri: string; stop(): Promise<void> }
  try {
    server = await startReplay({ docs, load })
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  return {
    uri: server.uri,
    async stop() {
      await server.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
