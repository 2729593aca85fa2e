// One cell of the small-reads family (bench/lib/small_reads.mjs): a (query, library, concurrency)
// in its own process. Started by run.mjs with `child_process.fork`:
//
//   node bench/small.mjs '<cell JSON>'
//
// The cell JSON: { target: { uri, db, kind, collection, docs }, queryId, libraryId, concurrency, warmup,
// queries, roundQueries }. The child connects, runs `warmup` queries and replies
// { type: 'ready', firstQueryUs }; then each { type: 'round' } runs `roundQueries` queries and
// replies { type: 'round', metrics }; { type: 'close' } closes the client and replies
// { type: 'closed', peakRssMb }. Any failure (a wrong result included) replies
// { type: 'error', error } and exits non-zero.
//
// Every query's result is checked: findOne returns the document with the asked _id, a page holds
// the first N documents in _id order, the count is the collection's, distinct the regions there are.
import { on } from 'node:events'
import { readdirSync, readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { expectedRegions, orderId, smallLibraryById, smallQueryById } from './lib/small_reads.mjs'

/** Spreads consecutive queries' _ids over the collection (a prime: coprime with the sizes, 10^k). */
const ID_STRIDE = 7919

/** Sum of voluntary + involuntary context switches of every thread of this process. */
function contextSwitches() {
  let total = 0
  for (const thread of readdirSync('/proc/self/task')) {
    let status
    try {
      status = readFileSync(`/proc/self/task/${thread}/status`, 'utf8')
    } catch {
      continue // the thread ended after the listing
    }
    for (const match of status.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)$/gm))
      total += Number(match[1])
  }
  return total
}

/**
 * The query's timed call and its check, for query number `k` of the process (each findOne asks
 * for another existing _id).
 */
function prepare(cell, operations) {
  const query = smallQueryById(cell.queryId)
  const { docs, kind } = cell.target
  if (query.id === 'findOne-id') {
    const indexes = Array.from({ length: cell.queries }, (_, k) => (k * ID_STRIDE) % docs)
    const ids = indexes.map((index) => orderId(kind, index))
    const hexes = ids.map((id) => id.toHexString())
    return {
      run: (k) => operations.findById(ids[k]),
      check(document, k) {
        if (document?.n !== indexes[k] || document._id?.toHexString() !== hexes[k])
          throw new Error(`findOne({ _id: ${hexes[k]} }) returned ${describe(document)}`)
      },
    }
  }
  if (query.limit !== undefined) {
    const { limit } = query
    return {
      run: () => operations.findPage(limit),
      check(documents) {
        if (!Array.isArray(documents) || documents.length !== limit)
          throw new Error(`find limit ${limit} returned ${describe(documents)}`)
        // n is the index: the first `limit` documents in _id order are n = 0, 1, ...
        for (let n = 0; n < limit; n++) {
          if (documents[n]?.n !== n)
            throw new Error(`find limit ${limit}: document ${n} is ${describe(documents[n])}`)
        }
      },
    }
  }
  if (query.id === 'count') {
    return {
      run: () => operations.count(),
      check(count) {
        if (count !== docs) throw new Error(`countDocuments returned ${describe(count)}, expected ${docs}`)
      },
    }
  }
  if (query.id === 'distinct') {
    const expected = expectedRegions(docs).join(',')
    return {
      run: () => operations.distinct(),
      check(values) {
        // Sorted before comparing: a server may order them differently (mongod sorts them).
        if (!Array.isArray(values) || values.toSorted().join(',') !== expected)
          throw new Error(`distinct returned ${describe(values)}, expected [${expected}]`)
      },
    }
  }
  throw new Error(`no way to run ${query.id}`)
}

function describe(value) {
  try {
    return JSON.stringify(value)?.slice(0, 300) ?? String(value)
  } catch {
    return String(value)
  }
}

/** The value at quantile `q` of sorted `values`. */
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]

/**
 * Runs queries `first..first + count` with `concurrency` in flight: each finishing query starts
 * the next. Every result is checked; latencies (µs) are kept per query.
 */
async function runQueries(query, first, count, concurrency) {
  const latencies = new Float64Array(count)
  let issued = 0
  async function lane() {
    while (issued < count) {
      const slot = issued++
      const started = performance.now()
      const result = await query.run(first + slot)
      latencies[slot] = (performance.now() - started) * 1000
      query.check(result, first + slot)
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane))
  return latencies
}

/** One measured round. */
async function measureRound(query, first, count, concurrency) {
  const switchesBefore = contextSwitches()
  const loopBefore = performance.eventLoopUtilization()
  const cpuBefore = process.cpuUsage()
  const started = performance.now()
  const latencies = await runQueries(query, first, count, concurrency)
  const wallMs = performance.now() - started
  const cpu = process.cpuUsage(cpuBefore)
  const loop = performance.eventLoopUtilization(loopBefore)
  const switches = contextSwitches() - switchesBefore
  latencies.sort()
  return {
    qps: count / (wallMs / 1000),
    p50Us: quantile(latencies, 0.5),
    p99Us: quantile(latencies, 0.99),
    cpuUs: (cpu.user + cpu.system) / count,
    mainUs: (loop.active * 1000) / count,
    switches: switches / count,
  }
}

async function main() {
  const cell = JSON.parse(process.argv[2])
  // An orphaned cell (run.mjs killed) must not keep its connections open.
  process.once('disconnect', () => process.exit(1))
  // Listening from the start queues every request until it is read.
  const inbox = on(process, 'message')
  const send = (message) => new Promise((resolve) => process.send(message, resolve))
  let operations
  try {
    operations = await smallLibraryById(cell.libraryId).open(cell.target)
    const query = prepare(cell, operations)
    // The cold first query (first use of the connection, nothing compiled), then the warm-up.
    const [firstQueryUs] = await runQueries(query, 0, 1, 1)
    await runQueries(query, 1, cell.warmup - 1, cell.concurrency)
    let next = cell.warmup
    await send({ type: 'ready', firstQueryUs })
    for await (const [message] of inbox) {
      if (message.type === 'round') {
        if (next + cell.roundQueries > cell.queries)
          throw new Error('more rounds than the cell was planned for')
        const metrics = await measureRound(query, next, cell.roundQueries, cell.concurrency)
        next += cell.roundQueries
        await send({ type: 'round', metrics })
      } else if (message.type === 'close') {
        await operations.close()
        operations = undefined
        // maxRSS is in KiB and covers the whole process life: this cell's peak.
        await send({ type: 'closed', peakRssMb: process.resourceUsage().maxRSS / 1024 })
        break
      }
    }
    process.disconnect()
    // Drivers can keep timers alive for a while after close(); the cell is done.
    process.exit(0)
  } catch (error) {
    await send({
      type: 'error',
      error: error instanceof Error ? (error.stack ?? error.message) : String(error),
    })
    await operations?.close().catch(() => {})
    process.exit(1)
  }
}

await main()
