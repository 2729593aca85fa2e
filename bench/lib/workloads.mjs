// What is measured: workloads (dataset, projection, concurrency) and which result sizes each target
// runs them at. A cell is one (workload, N, path) measured in its own child process.
import { lazyFields, wide45Projection } from './datasets.mjs'

/**
 * @typedef {object} Workload
 * @property {string} id           Short name used in the table and by --filter.
 * @property {'wide45' | 'tweets' | 'orders'} dataset  Collection name (same on every target).
 * @property {number} [fieldCount] wide45 preset: `_id` + the first fieldCount-1 fields.
 * @property {number} concurrency  Queries run at once with Promise.all (1 = a single query).
 * @property {boolean} [reduce]    A reduction (count, total, per region) instead of a document list:
 *   only the reducing paths run it (see `reduces` in paths.mjs).
 * @property {string} [sumColumn]  The Arrow family: the sum of this numeric column, end to end,
 *   through Arrow or JS documents; only the summing paths run it (see `sums` in paths.mjs).
 */

/** @type {Workload[]} In table order. */
export const WORKLOADS = [
  ...[4, 9, 15, 35, 45].map((fieldCount) => ({
    id: `wide45-${fieldCount}`,
    dataset: 'wide45',
    fieldCount,
    concurrency: 1,
  })),
  { id: 'tweets', dataset: 'tweets', concurrency: 1 },
  { id: 'orders', dataset: 'orders', concurrency: 1 },
  { id: 'wide45-45 x10', dataset: 'wide45', fieldCount: 45, concurrency: 10 },
  // The WorkerPool case: 10 reductions at once, main-thread event-loop delay vs reducing on the
  // main thread (the max loop delay column samples a 10 ms heartbeat).
  { id: 'orders reduce x10', dataset: 'orders', concurrency: 10, reduce: true },
  // The Arrow family: one numeric column summed, from the query to the number.
  { id: 'wide45-4 sum', dataset: 'wide45', fieldCount: 4, concurrency: 1, sumColumn: 'n' },
  { id: 'wide45-45 sum', dataset: 'wide45', fieldCount: 45, concurrency: 1, sumColumn: 'n' },
  { id: 'tweets sum', dataset: 'tweets', concurrency: 1, sumColumn: 'retweet_count' },
]

const workload = (id) => {
  const found = WORKLOADS.find((candidate) => candidate.id === id)
  if (!found) throw new Error(`no workload ${id}`)
  return found
}

/** The find each query of a workload sends (empty filter, projection, limit: what replay supports). */
export function queryFor(workload, n, db) {
  return {
    db,
    collection: workload.dataset,
    filter: {},
    projection: workload.dataset === 'wide45' ? wide45Projection(workload.fieldCount) : undefined,
    limit: n,
    lazyFields: lazyFields(workload.dataset, workload.fieldCount),
    sumColumn: workload.sumColumn,
  }
}

/**
 * Every (workload, N) pair of `workloadIds` x `sizes`. `skip` names paths that do not run in these
 * cells, and why (their rows say so).
 */
const grid = (workloadIds, sizes, skip = { paths: [], reason: '' }) =>
  workloadIds.flatMap((id) => sizes.map((n) => ({ workload: workload(id), n, skip })))

const SINGLE_QUERY_WORKLOADS = WORKLOADS.filter((w) => w.concurrency === 1 && !w.sumColumn).map((w) => w.id)

/**
 * The Arrow family's cells. apache-arrow's `tableFromJSON` throws on the tweets documents ("Unable
 * to infer Vector type from input values" inside a nested field), so the official route has no
 * tweets row; rumongo find() + sum is the reference there.
 */
const sumGrid = (sizes) => [
  ...grid(['wide45-4 sum', 'wide45-45 sum'], sizes),
  ...grid(['tweets sum'], sizes, {
    paths: ['official-arrow'],
    reason: 'not measurable: apache-arrow tableFromJSON throws on tweets (cannot infer its nested types)',
  }),
]

/** Documents per reduction in the reduce workload on the replay server. */
const REDUCE_DOCUMENTS = 20_000

/** Documents seeded per collection on devdb / MONGODB_URI (FerretDB serves ~80 µs per document). */
export const SEEDED_DOCUMENTS = 4_000

/**
 * The (workload, N) pairs each kind of target runs. `replay` holds 1M virtual documents per
 * collection and is the wall-time target; seeded servers (devdb, MONGODB_URI) hold
 * SEEDED_DOCUMENTS per collection and are slow server-side, so they run few, small cells. The
 * replica set of replay servers (`replay-rs`) runs the small reads only.
 */
const PLANS = {
  replicaSet: { quick: () => [], full: () => [] },
  replay: {
    quick: () => [
      ...grid(['wide45-4', 'wide45-15', 'wide45-45', 'tweets', 'orders'], [10_000]),
      ...grid(['wide45-45 x10'], [10_000]),
      ...grid(['orders reduce x10'], [REDUCE_DOCUMENTS]),
      ...sumGrid([100_000]),
    ],
    full: () => [
      ...grid(SINGLE_QUERY_WORKLOADS, [1_000, 10_000, 100_000]),
      // 1M for two cells only, without Mongoose (30+ s per run), to keep the full run near 15
      // minutes: wide45-45 at 1M took 71 s per official run (8.9 GB RSS), 10 minutes for two cells.
      ...grid(['wide45-9', 'orders'], [1_000_000], {
        paths: ['mongoose', 'mongoose-lean'],
        reason: 'skipped at 1M to keep the full run near 15 min (see 100k)',
      }),
      ...grid(['wide45-45 x10'], [10_000]),
      ...grid(['orders reduce x10'], [REDUCE_DOCUMENTS]),
      ...sumGrid([100_000, 1_000_000]),
    ],
  },
  seeded: {
    quick: () => grid(['wide45-9', 'wide45-45', 'orders', 'wide45-45 x10', 'orders reduce x10'], [1_000]),
    full: () => [
      ...grid(['wide45-9', 'wide45-45', 'orders'], [1_000, SEEDED_DOCUMENTS]),
      ...grid(['wide45-45 x10', 'orders reduce x10'], [1_000]),
    ],
  },
}

/** The (workload, N) pairs for a target kind ('replay', 'replicaSet' or 'seeded'), in table order. */
export function planFor(targetKind, quick) {
  const pairs = PLANS[targetKind][quick ? 'quick' : 'full']()
  return pairs.sort((a, b) => WORKLOADS.indexOf(a.workload) - WORKLOADS.indexOf(b.workload) || a.n - b.n)
}

/** Datasets seeded on devdb / MONGODB_URI (the replay server brings its own). */
export const SEEDED_DATASETS = ['wide45', 'orders']
