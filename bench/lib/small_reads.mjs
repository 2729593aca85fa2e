// The "small reads" family: the per-operation cost of the commonest calls of a Node service
// (findOne by _id, a page of 20 or 100, a count, a distinct) at 1, 32 and 256 queries in flight.
//
// Each (query, library, concurrency) cell is its own child process (bench/small.mjs) that connects
// and warms up, then runs one round of queries each time it is asked. The libraries of a (query,
// concurrency) group take turns round by round, in a rotated order, so machine drift hits them
// alike; the table reports the median of the rounds.
import { fork } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { addonProfile, distFingerprint } from './addon.mjs'
import { mongooseSchema, objectIdFor, orderDocument, replayObjectId, topLevelFields } from './datasets.mjs'
import { MONITORED } from './paths.mjs'
import { median, referenceGroup } from './report.mjs'

const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..')

/** The dataset every small read targets: small flat documents, `n` equal to the index. */
const DATASET = 'orders'
/**
 * The collection of the small reads on a seeded server (devdb, MONGODB_URI), seeded by
 * targets.mjs: a small one, because the embedded FerretDB's cost per findOne by _id grows with the
 * collection (measured here: ~1 ms with 100 documents, ~9 ms with 4,000).
 */
export const SEEDED_SMALL_READS = { collection: 'orders_small', dataset: DATASET, docs: 100 }
/** The field of `distinct`. */
const DISTINCT_FIELD = 'region'
/** A child that says nothing for this long (warm-up, a round, closing) is killed and reported. */
const MESSAGE_TIMEOUT_MS = 5 * 60_000
const CHILD_EXEC_ARGV = ['--max-old-space-size=4096']

/**
 * @typedef {object} SmallQuery
 * @property {string} id      Stable name (--filter, the JSON output).
 * @property {string} label   The table's "query" column.
 * @property {number} [limit] Documents of a find page.
 */

/** @type {SmallQuery[]} In table order. */
export const SMALL_QUERIES = [
  { id: 'findOne-id', label: 'findOne({ _id })' },
  { id: 'find-20', label: 'find({}, { sort: { _id: 1 }, limit: 20 })', limit: 20 },
  { id: 'find-100', label: 'find({}, { sort: { _id: 1 }, limit: 100 })', limit: 100 },
  { id: 'count', label: 'countDocuments({})' },
  { id: 'distinct', label: `distinct('${DISTINCT_FIELD}')` },
]

/**
 * A library's way to run each query kind against the orders collection. `open` returns the
 * operations; a missing operation means the library has no row for that query.
 *
 * @typedef {object} SmallLibrary
 * @property {string} id
 * @property {string} label
 * @property {string[]} queries   The query ids it runs.
 * @property {number[]} [concurrencies] The concurrencies it runs at (default: all of the plan's).
 * @property {(target: { uri: string, db: string, collection: string }) => Promise<{
 *   findById: (id: unknown) => Promise<any>,
 *   findPage: (limit: number) => Promise<any[]>,
 *   count?: () => Promise<number>,
 *   distinct?: () => Promise<unknown[]>,
 *   close: () => Promise<void>,
 * }>} open
 */

const SORT_BY_ID = { _id: 1 }
const ALL_QUERIES = SMALL_QUERIES.map((query) => query.id)

/** @type {SmallLibrary[]} In table order; `official` first (the 1.00x reference). */
export const SMALL_LIBRARIES = [
  {
    id: 'official',
    label: 'mongodb',
    queries: ALL_QUERIES,
    async open({ uri, db, collection, monitored = false }) {
      const { MongoClient } = await import('mongodb')
      const client = await MONITORED.connect(MongoClient, uri, monitored)
      const orders = client.db(db).collection(collection)
      return {
        findById: (id) => orders.findOne({ _id: id }),
        findPage: (limit) => orders.find({}, { sort: SORT_BY_ID, limit }).toArray(),
        count: () => orders.countDocuments({}),
        distinct: () => orders.distinct(DISTINCT_FIELD),
        close: () => client.close(),
      }
    },
  },
  {
    id: 'rumongo',
    label: 'rumongo',
    queries: ALL_QUERIES,
    async open({ uri, db, collection, monitored = false }) {
      const { MongoClient } = await import('rumongo')
      const client = await MONITORED.connect(MongoClient, uri, monitored)
      const orders = client.db(db).collection(collection)
      return {
        findById: (id) => orders.findOne({ _id: id }),
        findPage: (limit) => orders.find({}, { sort: SORT_BY_ID, limit }).toArray(),
        count: () => orders.countDocuments({}),
        distinct: () => orders.distinct(DISTINCT_FIELD),
        close: () => client.close(),
      }
    },
  },
  {
    id: 'mongoose-lean',
    label: 'mongoose .lean()',
    queries: ALL_QUERIES,
    async open({ uri, db, collection }) {
      const { default: mongoose } = await import('mongoose')
      // No autoCreate/autoIndex: the replay server answers reads only.
      const connection = await mongoose
        .createConnection(uri, { dbName: db, autoCreate: false, autoIndex: false })
        .asPromise()
      const Order = connection.model(DATASET, mongooseSchema(mongoose, DATASET), collection)
      return {
        findById: (id) => Order.findById(id).lean().exec(),
        findPage: (limit) => Order.find({}).sort(SORT_BY_ID).limit(limit).lean().exec(),
        count: () => Order.countDocuments({}).exec(),
        distinct: () => Order.distinct(DISTINCT_FIELD).exec(),
        close: () => connection.close(),
      }
    },
  },
  {
    id: 'rumongo-model',
    label: 'rumongo Model',
    queries: ['findOne-id', 'find-20', 'find-100'],
    async open({ uri, db, collection }) {
      const { Model, MongoClient } = await import('rumongo')
      const client = await MongoClient.connect(uri)
      // Defined once, as an app would; the dataset's fields are its schema.
      const Order = Model.define(client.db(db).collection(collection), topLevelFields(DATASET))
      return {
        findById: (id) => Order.findById(id).exec(),
        findPage: (limit) => Order.find({}).sort(SORT_BY_ID).limit(limit).exec(),
        close: () => client.close(),
      }
    },
  },
]

/** The official driver and rumongo with a command listener (see MONITORED in paths.mjs). */
for (const id of ['official', 'rumongo']) {
  const plain = SMALL_LIBRARIES.find((library) => library.id === id)
  SMALL_LIBRARIES.push({
    id: `${id}-monitored`,
    label: `${plain.label}, monitored`,
    queries: ['findOne-id', 'find-20'],
    concurrencies: [1, 32],
    open: (target) => plain.open({ ...target, monitored: true }),
  })
}

export function smallLibraryById(id) {
  const library = SMALL_LIBRARIES.find((candidate) => candidate.id === id)
  if (!library) throw new Error(`no small-reads library ${id}`)
  return library
}

export function smallQueryById(id) {
  const query = SMALL_QUERIES.find((candidate) => candidate.id === id)
  if (!query) throw new Error(`no small query ${id}`)
  return query
}

/** The collection the small reads use on a target, and its number of documents. */
export function smallReadsCollection(target) {
  if (target.kind !== 'seeded') return { collection: DATASET, docs: target.docs }
  return { collection: SEEDED_SMALL_READS.collection, docs: SEEDED_SMALL_READS.docs }
}

/** The `_id` of orders document `index` on a target kind ('replay', 'replicaSet' or 'seeded'). */
export function orderId(kind, index) {
  return kind === 'seeded' ? objectIdFor(index) : replayObjectId(index)
}

/**
 * The distinct regions of `docs` orders, sorted: region is `n % 4` of the same four names on both
 * targets (bench/replay/README.md, datasets.mjs `orderDocument`).
 */
export function expectedRegions(docs) {
  const regions = new Set(Array.from({ length: Math.min(docs, 4) }, (_, n) => orderDocument(n).region))
  return [...regions].sort()
}

/**
 * What each target kind runs: warm-up queries, then `rounds` rounds of `roundQueries` each, for
 * these queries and concurrencies. On a seeded server the point is the client's CPU per findOne.
 */
const PLANS = {
  replay: {
    full: { queries: ALL_QUERIES, concurrencies: [1, 32, 256], warmup: 2000, rounds: 3, roundQueries: 2500 },
    quick: { queries: ALL_QUERIES, concurrencies: [1, 32, 256], warmup: 300, rounds: 3, roundQueries: 600 },
  },
  // Three replay members, readPreference=nearest: reads spread over three pools.
  replicaSet: {
    full: {
      queries: ['findOne-id', 'find-20'],
      concurrencies: [32, 256],
      warmup: 2000,
      rounds: 3,
      roundQueries: 2500,
    },
    quick: {
      queries: ['findOne-id', 'find-20'],
      concurrencies: [32, 256],
      warmup: 300,
      rounds: 3,
      roundQueries: 600,
    },
  },
  seeded: {
    full: { queries: ['findOne-id'], concurrencies: [1, 32], warmup: 500, rounds: 3, roundQueries: 1000 },
    quick: { queries: ['findOne-id'], concurrencies: [1, 32], warmup: 200, rounds: 3, roundQueries: 300 },
  },
}

export function smallPlanFor(targetKind, quick) {
  return PLANS[targetKind][quick ? 'quick' : 'full']
}

/** The name --filter matches against. */
export function smallCellName(target, query, concurrency, library) {
  return `${target} small ${query.id} c${concurrency} ${library.id} ${library.label}`
}

/**
 * One cell's child process: started (connect and warm-up), asked for rounds, closed. Every
 * request resolves with the child's reply or rejects with its error (or its silent death).
 */
class SmallCell {
  #child
  #pending
  #exit

  constructor(cell) {
    this.#child = fork(join(benchDir, 'small.mjs'), [JSON.stringify(cell)], {
      execArgv: CHILD_EXEC_ARGV,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    this.#child.on('message', (message) => {
      const pending = this.#pending
      this.#pending = undefined
      if (message.type === 'error') pending?.reject(new Error(message.error))
      else pending?.resolve(message)
    })
    // 'close', not 'exit': 'exit' can come before the child's last messages are read (the cell
    // that replied { type: 'closed' } and exited was reported as exiting without a reply).
    this.#child.once('close', (code, signal) => {
      this.#exit = `exited (code ${code}, signal ${signal})`
      this.#pending?.reject(new Error(`the cell ${this.#exit} without replying`))
      this.#pending = undefined
    })
  }

  /** The child's next message (after sending `request`, if given). */
  #reply(request) {
    if (this.#exit) return Promise.reject(new Error(`the cell ${this.#exit}`))
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending = undefined
        this.#child.kill('SIGKILL')
        reject(new Error(`no reply within ${MESSAGE_TIMEOUT_MS / 1000} s`))
      }, MESSAGE_TIMEOUT_MS)
      const settle = (callback) => (value) => {
        clearTimeout(timer)
        callback(value)
      }
      this.#pending = { resolve: settle(resolve), reject: settle(reject) }
      if (request) this.#child.send(request)
    })
  }

  ready() {
    return this.#reply()
  }

  round() {
    return this.#reply({ type: 'round' })
  }

  /** Closes the client and ends the child; resolves with its peak RSS. */
  async close() {
    const reply = await this.#reply({ type: 'close' })
    return reply.peakRssMb
  }

  kill() {
    if (!this.#exit) this.#child.kill('SIGKILL')
  }
}

/**
 * A cell's numbers over its rounds: the median of each round figure.
 * @param {object[]} rounds  { qps, p50Us, p99Us, cpuUs, mainUs, switches } per round.
 */
function summarizeRounds(rounds) {
  const of = (key) => median(rounds.map((round) => round[key]))
  return {
    qps: of('qps'),
    p50Us: of('p50Us'),
    p99Us: of('p99Us'),
    cpuUs: of('cpuUs'),
    mainUs: of('mainUs'),
    switches: of('switches'),
  }
}

/**
 * Measures the small reads on a started target. Returns the rows (one per cell, in table order),
 * measured, or failed with `error` and `notes`.
 */
export async function measureSmallReads(
  target,
  { quick, filter, distFingerprint: startFingerprint },
  progress,
) {
  const plan = smallPlanFor(target.kind, quick)
  const rows = []
  for (const queryId of plan.queries) {
    const query = smallQueryById(queryId)
    for (const concurrency of plan.concurrencies) {
      const group = SMALL_LIBRARIES.filter(
        (library) =>
          library.queries.includes(query.id) && (library.concurrencies?.includes(concurrency) ?? true),
      )
        .map((library) => ({
          library,
          row: {
            target: target.name,
            query: query.id,
            queryLabel: query.label,
            concurrency,
            libraryId: library.id,
            label: library.label,
            notes: '',
            rounds: [],
          },
        }))
        .filter(
          ({ library }) =>
            !filter || smallCellName(target.name, query, concurrency, library).includes(filter),
        )
      if (group.length === 0) continue
      if (startFingerprint !== undefined && distFingerprint() !== startFingerprint) {
        // Someone rebuilt dist/ since the run started: say so on every row it may affect.
        for (const { row } of group) {
          row.notes = `dist/ rebuilt during the run (now ${addonProfile()})`
          row.distChanged = true
        }
      }
      await measureGroup(target, plan, query, concurrency, group, progress)
      rows.push(...group.map(({ row }) => row))
    }
  }
  return addSmallRatios(rows)
}

/** Starts every library's cell of a group (one at a time), then alternates their rounds. */
async function measureGroup(target, plan, query, concurrency, group, progress) {
  const fail = (entry, error) => {
    entry.row.error = error.message
    entry.row.notes = [`FAILED: ${error.message.split('\n')[0]}`, entry.row.notes].filter(Boolean).join('; ')
    progress(`${smallCellName(target.name, query, concurrency, entry.library)}: FAILED\n${error.message}`)
    entry.cell?.kill()
    entry.cell = undefined
  }
  for (const entry of group) {
    entry.cell = new SmallCell({
      target: { uri: target.uri, db: target.db, kind: target.kind, ...smallReadsCollection(target) },
      queryId: query.id,
      libraryId: entry.library.id,
      concurrency,
      warmup: plan.warmup,
      queries: plan.warmup + plan.rounds * plan.roundQueries,
      roundQueries: plan.roundQueries,
    })
    try {
      entry.row.firstQueryUs = (await entry.cell.ready()).firstQueryUs
    } catch (error) {
      fail(entry, error)
    }
  }
  for (let round = 0; round < plan.rounds; round++) {
    // Rotated each round: no library always runs first (or right after another one's GC).
    const order = [...group.slice(round % group.length), ...group.slice(0, round % group.length)]
    for (const entry of order) {
      if (!entry.cell) continue
      try {
        entry.row.rounds.push((await entry.cell.round()).metrics)
      } catch (error) {
        fail(entry, error)
      }
    }
  }
  for (const entry of group) {
    if (!entry.cell) continue
    try {
      entry.row.peakRssMb = await entry.cell.close()
      entry.row.stats = summarizeRounds(entry.row.rounds)
      progress(
        `${smallCellName(target.name, query, concurrency, entry.library)}: ${Math.round(entry.row.stats.qps)} queries/s`,
      )
    } catch (error) {
      fail(entry, error)
    }
  }
}

/**
 * Ratios to the official driver's row of the same target, query and concurrency (monitored rows:
 * to the official driver monitored the same way).
 */
function addSmallRatios(rows) {
  const key = (row) => `${row.target}|${row.query}|${row.concurrency}|${referenceGroup(row.libraryId)}`
  const official = new Map(
    rows
      .filter((row) => (row.libraryId === 'official' || row.libraryId === 'official-monitored') && row.stats)
      .map((row) => [key(row), row.stats]),
  )
  for (const row of rows) {
    const reference = official.get(key(row))
    if (!row.stats || !reference) continue
    row.ratios = {
      qps: row.stats.qps / reference.qps,
      cpu: row.stats.cpuUs / reference.cpuUs,
      p99: row.stats.p99Us / reference.p99Us,
    }
  }
  return rows
}

const COLUMNS = [
  'query',
  'in flight',
  'library',
  'queries/s',
  'p50 µs',
  'p99 µs',
  'CPU µs/query',
  'main-thread µs/query',
  'ctx switches/query',
  'qps vs official',
  'CPU vs official',
  'p99 vs official',
  'notes',
]

const whole = (value) => Math.round(value).toLocaleString('en-US')
const ratio = (value) => (value === undefined ? 'n/a' : `${value.toFixed(2)}x`)

function rowCells(row) {
  const head = [row.queryLabel, String(row.concurrency), row.label]
  if (!row.stats) return [...head, ...COLUMNS.slice(head.length, -1).map(() => ''), row.notes]
  const { stats, ratios } = row
  return [
    ...head,
    whole(stats.qps),
    whole(stats.p50Us),
    whole(stats.p99Us),
    whole(stats.cpuUs),
    whole(stats.mainUs),
    stats.switches.toFixed(1),
    ratio(ratios?.qps),
    ratio(ratios?.cpu),
    ratio(ratios?.p99),
    row.notes,
  ]
}

/** The "Small reads" section of one target. */
export function smallReadsSection(target, rows, quick) {
  const plan = smallPlanFor(target.kind, quick)
  const lines = [COLUMNS, COLUMNS.map(() => '---'), ...rows.map(rowCells)]
  return [
    `## Small reads: ${target.name}`,
    '',
    `${target.description}. Collection \`${smallReadsCollection(target).collection}\` ` +
      `(${smallReadsCollection(target).docs.toLocaleString('en-US')} documents); per cell: ${plan.warmup} warm-up queries, then ` +
      `${plan.rounds} rounds of ${plan.roundQueries} queries (libraries alternating round by round), medians of the rounds. ` +
      'Ratios: queries/s over the official driver (higher is faster), CPU and p99 over the official driver (lower is better).',
    '',
    ...lines.map((cells) => `| ${cells.join(' | ')} |`),
  ].join('\n')
}
