// `npm run demo`: starts the embedded server (or uses MONGODB_URI), seeds a sample shop with the
// official driver, runs the same reads through the official driver and rumongo, and prints the
// results side by side: whether they are identical (values and types), and what each read cost the
// client (CPU, event-loop busy time) next to its wall time. Then the same comparison on the replay
// server (bench/replay), which answers at memcpy speed, so the client is what is measured: a large
// find, JSON out, and a burst of concurrent findOne calls (queries/s and p99 latency).
import { performance } from 'node:perf_hooks'
import { isDeepStrictEqual } from 'node:util'
import { MongoClient as OfficialClient, ObjectId } from 'mongodb'
import { MongoClient } from 'rumongo'
import { startDevdb } from './devdb.mjs'
import { startReplay } from './replay.mjs'

const ORDER_COUNT = 5_000
const REGIONS = ['eu', 'us', 'apac', 'latam']
const STATUSES = ['paid', 'paid', 'pending', 'refunded']

function sampleOrders(count) {
  return Array.from({ length: count }, (_, n) => ({
    _id: new ObjectId(),
    number: 100_000 + n,
    status: STATUSES[n % STATUSES.length],
    region: REGIONS[Math.floor(n / 4) % REGIONS.length],
    total: Math.round(((n * 7919) % 50_000) / 10) / 10,
    at: new Date(Date.UTC(2026, 0, 1) + n * 3_600_000),
    customer: { name: `Customer ${n % 311}`, email: `customer${n % 311}@example.com`, tier: n % 4 },
    items: Array.from({ length: 1 + (n % 3) }, (_, i) => ({
      sku: `SKU-${(n + i) % 997}`,
      qty: 1 + i,
      price: 4.5 + i,
    })),
  }))
}

/** Wall time, client CPU (every thread of the process: rumongo's Rust threads included) and
 * event-loop busy time of one call, in milliseconds. */
async function measure(run) {
  const cpu = process.cpuUsage()
  const loop = performance.eventLoopUtilization()
  const started = performance.now()
  const result = await run()
  const wall = performance.now() - started
  const { user, system } = process.cpuUsage(cpu)
  const busy = performance.eventLoopUtilization(loop).active
  return { result, wall, cpu: (user + system) / 1000, busy }
}

/** Measured runs of each query per driver: one run alone can land on a GC or a scheduler hiccup
 * (a findOne once read 63.6 ms of event-loop time instead of ~1 ms), so the table shows medians. */
const ROUNDS = 3

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

const LEGEND = `Each cell: official driver / rumongo, the median of ${ROUNDS} runs (official ÷ rumongo: how many times less rumongo costs).`
const ms = (value) => (value >= 100 ? value.toFixed(0) : value.toFixed(1))
const times = (official, rumongo) => (rumongo > 0 ? `${(official / rumongo).toFixed(1)}x` : '-')

/** Runs `query` on a collection of each driver (after a warm-up run), ROUNDS times in turn: the
 * median wall, CPU and busy time of each driver, and the first run's result. */
async function compare(name, query, collections) {
  const runs = { official: [], rumongo: [] }
  for (const collection of Object.values(collections)) await query(collection) // warm-up: connection, JIT
  for (let round = 0; round < ROUNDS; round++) {
    for (const [driver, collection] of Object.entries(collections)) {
      runs[driver].push(await measure(() => query(collection)))
    }
  }
  const summary = (measured) => ({
    result: measured[0].result,
    wall: median(measured.map((run) => run.wall)),
    cpu: median(measured.map((run) => run.cpu)),
    busy: median(measured.map((run) => run.busy)),
  })
  const official = summary(runs.official)
  const rumongo = summary(runs.rumongo)
  const size = Array.isArray(official.result)
    ? `${official.result.length} docs`
    : typeof official.result === 'string'
      ? `${Buffer.byteLength(official.result)} B of JSON`
      : JSON.stringify(official.result)
  return {
    query: name,
    result: size.length > 30 ? `${size.slice(0, 27)}...` : size,
    'wall ms': `${ms(official.wall)} / ${ms(rumongo.wall)}`,
    'client CPU ms': `${ms(official.cpu)} / ${ms(rumongo.cpu)} (${times(official.cpu, rumongo.cpu)})`,
    'event loop busy ms': `${ms(official.busy)} / ${ms(rumongo.busy)} (${times(official.busy, rumongo.busy)})`,
    identical: isDeepStrictEqual(official.result, rumongo.result) ? 'yes' : 'NO',
  }
}

/** `count` findOne calls by _id, `inFlight` at a time: queries/s and latency percentiles. */
async function burst(findById, ids, inFlight) {
  const latencies = []
  let next = 0
  const worker = async () => {
    while (next < ids.length) {
      const id = ids[next++]
      const started = performance.now()
      const found = await findById(id)
      latencies.push(performance.now() - started)
      if (!found) throw new Error(`demo: findOne found no document for ${id}`)
    }
  }
  const { wall, cpu, busy } = await measure(() => Promise.all(Array.from({ length: inFlight }, worker)))
  latencies.sort((a, b) => a - b)
  const quantile = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]
  return { qps: (ids.length / wall) * 1000, p50: quantile(0.5), p99: quantile(0.99), cpu, busy }
}

/** A value as a reader expects to see it: ObjectId('...'), ISO dates, nested documents indented. */
function readable(value, indent = '') {
  if (value instanceof ObjectId) return `ObjectId('${value.toHexString()}')`
  if (value instanceof Date) return `Date(${value.toISOString()})`
  if (Array.isArray(value)) {
    return `[\n${value.map((item) => `${indent}  ${readable(item, `${indent}  `)}`).join(',\n')}\n${indent}]`
  }
  if (value && typeof value === 'object') {
    const fields = Object.entries(value).map(
      ([key, field]) => `${indent}  ${key}: ${readable(field, `${indent}  `)}`,
    )
    return `{\n${fields.join(',\n')}\n${indent}}`
  }
  return typeof value === 'string' ? `'${value}'` : String(value)
}

/** The replay server's `orders`: `docs` documents the server sends at memcpy speed. */
async function clientBound({ docs = 50_000, burstQueries = 3_000, inFlight = 32 } = {}) {
  console.log(
    `\nOn the replay server (bench/replay), where the server costs ~nothing and the client is the bottleneck:`,
  )
  const replay = await startReplay({ docs })
  const official = await OfficialClient.connect(replay.uri)
  const rumongo = await MongoClient.connect(replay.uri)
  try {
    const collections = {
      official: official.db('bench').collection('orders'),
      rumongo: rumongo.db('bench').collection('orders'),
    }
    const rows = [
      await compare(`find all ${docs} orders`, (c) => c.find({}).toArray(), collections),
      await compare(
        `the same as JSON (findJson)`,
        async (c) =>
          c === collections.rumongo
            ? (await c.findJson({}, { format: 'plain' })).toString()
            : JSON.stringify(await c.find({}).toArray()),
        collections,
      ),
    ]
    console.log(LEGEND)
    console.table(rows)
    // ObjectIds of the replay server's documents: 65000000 then the index as 16 hex digits.
    const ids = Array.from(
      { length: burstQueries },
      (_, n) => new ObjectId(`65000000${((n * 7919) % docs).toString(16).padStart(16, '0')}`),
    )
    const result = {}
    for (const [driver, collection] of Object.entries(collections)) {
      const findById = (id) => collection.findOne({ _id: id })
      await burst(findById, ids.slice(0, 500), inFlight) // warm-up: connections, JIT
      result[driver] = await burst(findById, ids, inFlight)
    }
    const { official: o, rumongo: r } = result
    console.table([
      {
        [`${burstQueries} findOne({ _id }), ${inFlight} in flight`]: 'official',
        'queries/s': o.qps.toFixed(0),
        'p50 ms': ms(o.p50),
        'p99 ms': ms(o.p99),
        'client CPU ms': ms(o.cpu),
        'event loop busy ms': ms(o.busy),
      },
      {
        [`${burstQueries} findOne({ _id }), ${inFlight} in flight`]: 'rumongo',
        'queries/s': `${r.qps.toFixed(0)} (${(r.qps / o.qps).toFixed(1)}x)`,
        'p50 ms': ms(r.p50),
        'p99 ms': `${ms(r.p99)} (${(r.p99 / o.p99).toFixed(2)}x)`,
        'client CPU ms': ms(r.cpu),
        'event loop busy ms': ms(r.busy),
      },
    ])
    return rows
  } finally {
    await Promise.all([official.close(), rumongo.close()])
    await replay.stop()
  }
}

async function main() {
  const server = process.env.MONGODB_URI ? null : await startDevdb()
  const uri = process.env.MONGODB_URI ?? server.uri
  console.log(`server: ${server ? `embedded FerretDB at ${uri}` : 'MONGODB_URI'}`)
  const official = await OfficialClient.connect(uri)
  const rumongo = await MongoClient.connect(uri)
  const dbName = `rumongo_demo_${process.pid}`
  try {
    const orders = sampleOrders(ORDER_COUNT)
    const seeded = performance.now()
    await official.db(dbName).collection('orders').insertMany(orders)
    console.log(
      `seeded ${ORDER_COUNT} orders with the official driver in ${(performance.now() - seeded).toFixed(0)} ms\n`,
    )

    const collections = {
      official: official.db(dbName).collection('orders'),
      rumongo: rumongo.db(dbName).collection('orders'),
    }
    const someId = orders[1234]._id
    const queries = [
      [
        'find paid > 100, newest 50',
        (c) => c.find({ status: 'paid', total: { $gt: 100 } }, { sort: { at: -1 }, limit: 50 }).toArray(),
      ],
      ['find all orders', (c) => c.find({}).toArray()],
      [
        'find eu, projected',
        (c) => c.find({ region: 'eu' }).project({ number: 1, total: 1, at: 1 }).toArray(),
      ],
      ['findOne by _id', (c) => c.findOne({ _id: someId })],
      [
        'aggregate paid by region',
        (c) =>
          c
            .aggregate([
              { $match: { status: 'paid' } },
              { $group: { _id: '$region', n: { $sum: 1 }, revenue: { $sum: '$total' } } },
              { $sort: { _id: 1 } },
            ])
            .toArray(),
      ],
      ['countDocuments paid', (c) => c.countDocuments({ status: 'paid' })],
      ['estimatedDocumentCount', (c) => c.estimatedDocumentCount()],
      ['distinct region', (c) => c.distinct('region', { status: 'paid' })],
      [
        'JSON of eu orders (rumongo findJson)',
        // rumongo transcodes BSON to the bytes of JSON.stringify in Rust; the official driver
        // builds the documents, then stringifies them.
        async (c) =>
          c === collections.rumongo
            ? (await c.findJson({ region: 'eu' }, { sort: { number: 1 }, format: 'plain' })).toString()
            : JSON.stringify(await c.find({ region: 'eu' }, { sort: { number: 1 } }).toArray()),
      ],
      [
        'stream all, sum totals (findCursor)',
        async (c) => {
          let sum = 0
          const cursor =
            c === collections.rumongo ? c.findCursor({}, { batchSize: 500 }) : c.find({}, { batchSize: 500 })
          for await (const order of cursor) sum += order.total
          return Math.round(sum * 100) / 100
        },
      ],
    ]
    const rows = []
    for (const [name, query] of queries) rows.push(await compare(name, query, collections))
    console.log(LEGEND)
    console.table(rows)
    console.log(
      'Wall time here is mostly the embedded FerretDB (~80 µs of server time per document); the client\n' +
        "columns are what each driver cost this process: CPU of all its threads, and the event loop's busy time.",
    )
    const sample = await collections.rumongo.findOne({ _id: someId })
    console.log(
      '\none order as rumongo returns it (the same classes as the official driver: ObjectId, Date, number):',
    )
    console.log(readable(sample))
    rows.push(...(await clientBound()))
    console.log('\nFull benchmarks: `npm run bench` (BENCHMARKS.md).')
    if (rows.some((row) => row.identical !== 'yes')) process.exitCode = 1
  } finally {
    await official.db(dbName).dropDatabase()
    await Promise.all([official.close(), rumongo.close()])
    await server?.stop()
  }
}

await main()
