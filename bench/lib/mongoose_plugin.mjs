// The "Mongoose plugin" rows: an unchanged Mongoose application with and without
// `mongoose.plugin(mongoosePlugin())`, in one process, alternated run by run (bench/mongoose_plugin.mjs),
// on a replay server of its own that also serves `parents` (1,000 documents of 10 child `orders`
// ids each, loaded from a file written here) for the populate rows.
import { fork } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { BSON, ObjectId } from 'bson'
import { replayObjectId } from './datasets.mjs'

const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..')
const root = join(benchDir, '..')

export const PARENTS = 1000
export const CHILDREN_PER_PARENT = 10
const TIMEOUT_MS = 15 * 60_000

/**
 * In table order. `goal`: the speed-up (without / with, wall time) the plugin aims at; lean rows
 * also aim at main-thread busy time <= 0.3x.
 */
export const MONGOOSE_WORKLOADS = [
  {
    id: 'lean-orders-10k',
    label: 'find().lean(), orders 10k',
    kind: 'find',
    dataset: 'orders',
    n: 10_000,
    lean: true,
    goal: 4,
  },
  {
    id: 'lean-orders-100k',
    label: 'find().lean(), orders 100k',
    kind: 'find',
    dataset: 'orders',
    n: 100_000,
    lean: true,
    goal: 4,
  },
  {
    id: 'lean-wide45-10k',
    label: 'find().lean(), wide45 10k',
    kind: 'find',
    dataset: 'wide45',
    n: 10_000,
    lean: true,
    goal: 4,
  },
  {
    id: 'lean-wide45-100k',
    label: 'find().lean(), wide45 100k',
    kind: 'find',
    dataset: 'wide45',
    n: 100_000,
    lean: true,
    goal: 4,
  },
  {
    id: 'hydrated-orders-10k',
    label: 'find() hydrated, orders 10k',
    kind: 'find',
    dataset: 'orders',
    n: 10_000,
    goal: 1.5,
  },
  {
    id: 'hydrated-wide45-10k',
    label: 'find() hydrated, wide45 10k',
    kind: 'find',
    dataset: 'wide45',
    n: 10_000,
    goal: 1.5,
  },
  {
    id: 'findById-serial',
    label: '1,000 serial findById() (hydrated), orders',
    kind: 'findById',
    dataset: 'orders',
    n: 1000,
    goal: 1,
  },
  {
    id: 'populate',
    label: `find().populate(), ${PARENTS.toLocaleString('en-US')} parents x ${CHILDREN_PER_PARENT} orders`,
    kind: 'populate',
    dataset: 'parents',
    goal: 3,
  },
  {
    id: 'populate-lean',
    label: 'the same, .lean()',
    kind: 'populate',
    dataset: 'parents',
    lean: true,
    goal: 3,
  },
]

const ROUNDS = { quick: 3, full: 7 }

/** The parents' schema of the populate rows: `children` refers to `orders`. */
export function parentSchema(mongoose) {
  return new mongoose.Schema(
    {
      _id: mongoose.Schema.Types.ObjectId,
      n: Number,
      name: String,
      children: [{ type: mongoose.Schema.Types.ObjectId, ref: 'orders' }],
    },
    { versionKey: false, autoIndex: false, autoCreate: false },
  )
}

/** Parent `p`'s children are orders `10p..10p+9`: consecutive, as the replay server's `$in` needs. */
export function writeParents(path) {
  const documents = Array.from({ length: PARENTS }, (_, p) =>
    BSON.serialize({
      _id: new ObjectId(`70000000${p.toString(16).padStart(16, '0')}`),
      n: p,
      name: `parent ${p}`,
      children: Array.from({ length: CHILDREN_PER_PARENT }, (_, k) =>
        replayObjectId(p * CHILDREN_PER_PARENT + k),
      ),
    }),
  )
  writeFileSync(path, Buffer.concat(documents))
}

function runChild(config) {
  return new Promise((resolve) => {
    const child = fork(join(benchDir, 'mongoose_plugin.mjs'), [JSON.stringify(config)], {
      execArgv: ['--expose-gc', '--max-old-space-size=8192'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    let report
    const timer = setTimeout(() => {
      report ??= { ok: false, error: `killed after ${TIMEOUT_MS / 1000} s` }
      child.kill('SIGKILL')
    }, TIMEOUT_MS)
    child.once('message', (message) => (report ??= message))
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      resolve(report ?? { ok: false, error: `exited (code ${code}, signal ${signal}) without a report` })
    })
  })
}

/** Measures the rows `--filter` selects (by id or label); resolves `{ rows, served }` or `{ error }`. */
export async function measureMongoosePlugin({ quick, filter }, progress) {
  const workloads = MONGOOSE_WORKLOADS.filter(
    (workload) => !filter || `mongoose-plugin ${workload.id} ${workload.label}`.includes(filter),
  )
  if (workloads.length === 0) return undefined
  const dir = mkdtempSync(join(tmpdir(), 'rumongo-bench-mongoose-'))
  const parents = join(dir, 'parents.bson')
  writeParents(parents)
  const { startReplay } = await import(pathToFileURL(join(root, 'scripts', 'replay.mjs')).href)
  const server = await startReplay({ docs: 1_000_000, load: { parents } })
  try {
    const rounds = ROUNDS[quick ? 'quick' : 'full']
    const report = await runChild({
      uri: server.uri,
      db: 'bench',
      rounds,
      workloads: workloads.map((w) => w.id),
    })
    if (!report.ok) {
      progress(`mongoose plugin rows FAILED\n${report.error}`)
      return { error: report.error, rounds }
    }
    return { rows: report.rows, served: report.served, rounds }
  } finally {
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

const ms = (value) => (value >= 100 ? value.toFixed(0) : value.toFixed(1))
const times = (value) => `${value.toFixed(2)}x`

/** The "Mongoose plugin" section. */
export function mongoosePluginSection(result) {
  const heading = '## Mongoose plugin: replay'
  if (result.error) return `${heading}\n\nFAILED: ${result.error.split('\n')[0]}`
  const columns = [
    'workload',
    'without ms',
    'with plugin ms',
    'speed-up',
    'goal',
    'main-thread busy ms without',
    'with plugin',
    'busy ratio',
    'CPU ms without',
    'with plugin',
  ]
  const lines = result.rows.map((row) => {
    const workload = MONGOOSE_WORKLOADS.find((candidate) => candidate.id === row.workload)
    const speedUp = row.plain.wallMs / row.plugin.wallMs
    const busy = row.plugin.busyMs / row.plain.busyMs
    const goal = `>= ${workload.goal}x${workload.lean && workload.kind === 'find' ? ', busy <= 0.3x' : ''}`
    return [
      workload.label,
      ms(row.plain.wallMs),
      ms(row.plugin.wallMs),
      times(speedUp),
      goal,
      ms(row.plain.busyMs),
      ms(row.plugin.busyMs),
      times(busy),
      ms(row.plain.cpuMs),
      ms(row.plugin.cpuMs),
    ]
  })
  return [
    heading,
    '',
    `The same Mongoose ${'application'} in one process, twice: without and with \`mongoose.plugin(mongoosePlugin())\` ` +
      `(Mongoose models, casting, hydration unchanged). Per row: one warm-up run each, then ${result.rounds} runs each, ` +
      `alternated (the first side swapped every round); medians. Every result is checked on both sides; the plugin ` +
      `served all ${result.served.toLocaleString('en-US')} reads (no fallback). Speed-up: wall time without / with; ` +
      'busy ratio: main-thread busy with / without (lower is better).',
    '',
    ...[columns, columns.map(() => '---'), ...lines].map((cells) => `| ${cells.join(' | ')} |`),
  ].join('\n')
}
