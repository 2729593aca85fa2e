// The servers a run measures against: the replay server (client-bound, the main target) and a real
// server (the embedded FerretDB dev server, or the one at MONGODB_URI), seeded here.
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { GENERATORS } from './datasets.mjs'
import { SEEDED_SMALL_READS } from './small_reads.mjs'
import { SEEDED_DATASETS, SEEDED_DOCUMENTS } from './workloads.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const REPLAY_SCRIPT = join(root, 'scripts', 'replay.mjs')
/** Virtual documents per collection of the replay server. */
const REPLAY_DOCUMENTS = 1_000_000
/** Members of the replay replica set (target `replay-rs`). */
const REPLICA_SET_MEMBERS = 3

/**
 * @typedef {object} Target
 * @property {string} name         'replay', 'replay-rs' or 'devdb'.
 * @property {'replay' | 'replicaSet' | 'seeded'} kind  Which plan it runs (see workloads.mjs).
 * @property {string} description  One line for the report.
 * @property {string} uri
 * @property {string} db
 * @property {number} docs         Documents per collection.
 * @property {() => Promise<void>} stop
 */

/** True once the replay server's launcher exists (another engineer is writing it). */
export function replayAvailable() {
  return existsSync(REPLAY_SCRIPT)
}

/**
 * The target names a run measures. Default: replay and the real server; in --quick mode replay
 * only, plus MONGODB_URI's server when set (the embedded server is too slow for a quick run).
 * Without a replay server yet, the default falls back to the real server and says so.
 */
export function chooseTargets(option, quick) {
  if (option === 'replay' || option === 'replay-rs' || option === 'devdb') return [option]
  if (option !== 'all' && option !== undefined)
    throw new Error(`--target must be replay, replay-rs, devdb or all, got ${option}`)
  const wanted =
    quick && !process.env.MONGODB_URI ? ['replay', 'replay-rs'] : ['replay', 'replay-rs', 'devdb']
  if (replayAvailable()) return wanted
  console.error('bench: scripts/replay.mjs does not exist yet: measuring the real server (devdb) only')
  return ['devdb']
}

/** Starts (or connects to) a target and makes its data ready. */
export async function startTarget(name) {
  if (name === 'replay') return startReplayTarget()
  if (name === 'replay-rs') return startReplicaSetTarget()
  if (name === 'devdb') return startSeededTarget()
  throw new Error(`unknown target ${name}`)
}

async function startReplayTarget() {
  if (!replayAvailable())
    throw new Error('the replay target needs scripts/replay.mjs, which does not exist yet')
  const { startReplay } = await import(pathToFileURL(REPLAY_SCRIPT).href)
  const server = await startReplay({ docs: REPLAY_DOCUMENTS })
  return {
    name: 'replay',
    kind: 'replay',
    description: `replay server (${server.uri}): pre-encoded documents, ${REPLAY_DOCUMENTS.toLocaleString('en-US')} virtual docs per collection; wall time is the client's`,
    uri: server.uri,
    db: 'bench',
    docs: REPLAY_DOCUMENTS,
    stop: () => server.stop(),
  }
}

async function startReplicaSetTarget() {
  if (!replayAvailable()) throw new Error('the replay-rs target needs scripts/replay.mjs')
  const { startReplay } = await import(pathToFileURL(REPLAY_SCRIPT).href)
  const server = await startReplay({ docs: REPLAY_DOCUMENTS, replicaSet: REPLICA_SET_MEMBERS })
  const uri = `${server.uri}&readPreference=nearest`
  return {
    name: 'replay-rs',
    kind: 'replicaSet',
    description: `replay servers as a ${REPLICA_SET_MEMBERS}-member replica set (${uri}), every member serving the replay target's documents; wall time is the client's`,
    uri,
    db: 'bench',
    docs: REPLAY_DOCUMENTS,
    stop: () => server.stop(),
  }
}

async function startSeededTarget() {
  const external = process.env.MONGODB_URI
  const server = external ? { uri: external, stop: async () => {} } : await startDevdbServer()
  // A database of our own on a user's server, so seeding never drops anything of theirs.
  const db = external ? 'rumongo_bench' : 'bench'
  await seed(server.uri, db)
  return {
    name: 'devdb',
    kind: 'seeded',
    description: external
      ? `server at MONGODB_URI, database ${db}, ${SEEDED_DOCUMENTS} docs per collection`
      : `embedded FerretDB dev server (~80 µs/doc server-side), ${SEEDED_DOCUMENTS} docs per collection: ` +
        'wall time is mostly the server; compare CPU ms and main-thread busy ms',
    uri: server.uri,
    db,
    docs: SEEDED_DOCUMENTS,
    stop: () => server.stop(),
  }
}

async function startDevdbServer() {
  const { startDevdb } = await import(pathToFileURL(join(root, 'scripts', 'devdb.mjs')).href)
  return startDevdb()
}

/** The seeded collections: SEEDED_DOCUMENTS per dataset, and the small reads' own. */
const SEEDED_COLLECTIONS = [
  ...SEEDED_DATASETS.map((dataset) => ({ collection: dataset, dataset, docs: SEEDED_DOCUMENTS })),
  SEEDED_SMALL_READS,
]

/** Inserts the generated documents of every seeded collection, unless they are there already. */
async function seed(uri, dbName) {
  const { MongoClient } = await import('mongodb')
  const client = await MongoClient.connect(uri)
  try {
    for (const { collection: name, dataset, docs } of SEEDED_COLLECTIONS) {
      const collection = client.db(dbName).collection(name)
      const last = await collection.findOne({ n: docs - 1 })
      if ((await collection.countDocuments()) === docs && last !== null) continue
      const started = performance.now()
      await collection.drop().catch(() => {})
      for (let from = 0; from < docs; from += 1000) {
        const count = Math.min(1000, docs - from)
        await collection.insertMany(Array.from({ length: count }, (_, i) => GENERATORS[dataset](from + i)))
      }
      console.error(
        `bench: seeded ${dbName}.${name} with ${docs} docs in ${Math.round(performance.now() - started)} ms`,
      )
    }
  } finally {
    await client.close()
  }
}
