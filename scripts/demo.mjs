// `npm run demo`: starts the embedded server (or uses MONGODB_URI), seeds a sample shop with the
// official driver, runs the same reads through the official driver and rumongo, and prints the
// results side by side with timings and whether they are identical (values and types).
import { performance } from 'node:perf_hooks'
import { isDeepStrictEqual } from 'node:util'
import { MongoClient as OfficialClient, ObjectId } from 'mongodb'
import { MongoClient } from 'rumongo'
import { startDevdb } from './devdb.mjs'

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

/** Runs `query` on a collection of each driver, timing wall and client CPU. */
async function compare(name, query, collections) {
  const measured = {}
  for (const [driver, collection] of Object.entries(collections)) {
    await query(collection) // warm-up: connection, JIT
    const cpu = process.cpuUsage()
    const started = performance.now()
    const result = await query(collection)
    const wall = performance.now() - started
    const { user, system } = process.cpuUsage(cpu)
    measured[driver] = { result, wall, cpu: (user + system) / 1000 }
  }
  const { official, rumongo } = measured
  const size = Array.isArray(official.result)
    ? `${official.result.length} docs`
    : typeof official.result === 'string'
      ? `${Buffer.byteLength(official.result)} bytes of JSON`
      : JSON.stringify(official.result)
  return {
    query: name,
    result: size.length > 38 ? `${size.slice(0, 35)}...` : size,
    'official ms (cpu)': `${official.wall.toFixed(1)} (${official.cpu.toFixed(1)})`,
    'rumongo ms (cpu)': `${rumongo.wall.toFixed(1)} (${rumongo.cpu.toFixed(1)})`,
    identical: isDeepStrictEqual(official.result, rumongo.result) ? 'yes' : 'NO',
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
    console.table(rows)
    const sample = await collections.rumongo.findOne({ _id: someId })
    console.log('\none order as rumongo returns it (same types as the official driver):')
    console.dir(sample, { depth: 4 })
    console.log(
      '\nNote: the embedded FerretDB spends ~80 µs per document on the server side, so wall times are\n' +
        'server-bound here; client cost is measured by `npm run bench` against the replay server.',
    )
    if (rows.some((row) => row.identical !== 'yes')) process.exitCode = 1
  } finally {
    await official.db(dbName).dropDatabase()
    await Promise.all([official.close(), rumongo.close()])
    await server?.stop()
  }
}

await main()
