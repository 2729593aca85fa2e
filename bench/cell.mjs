// Measures one benchmark cell (target x workload x N x path) in a fresh process, so the peak RSS
// and the heap state belong to this cell alone. Started by run.mjs with `child_process.fork`:
//
//   node --expose-gc bench/cell.mjs '<cell JSON>'
//
// The cell JSON: { target: { uri, db }, pathId, workload, n, query, runs, warmups }.
// Reports over IPC one message { ok: true, runs: [RunMetrics], firstRun: RunMetrics, peakRssMb }
// or { ok: false, error }.
// Run by hand (no IPC) it prints the same message as JSON.
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { topLevelFields } from './lib/datasets.mjs'
import { pathById } from './lib/paths.mjs'

/** The event-loop delay histogram's sampling interval (ms), as the task asks for. */
const DELAY_RESOLUTION_MS = 10

/**
 * @typedef {object} RunMetrics
 * @property {number} wallMs
 * @property {number} cpuMs        Process CPU (user + system, every thread: JS, libuv, Rust).
 * @property {number} busyMs       Main-thread time not idle in the event loop.
 * @property {number} elu          busyMs / (busy + idle), 0..1.
 * @property {number} maxDelayMs   Worst event-loop delay beyond the sampling interval.
 */

/** Runs the cell's queries once (all `concurrency` of them at once) and measures that run. */
async function measureRun(session, cell) {
  const queries = Array.from({ length: cell.workload.concurrency }, () => cell.query)
  // No forced gc() between runs: V8 runs slower for a while after a full collection (+1.3 ms on a
  // 1k-document find here, for every library), and a collection outside the timed window would
  // hide the GC cost of the libraries that allocate the most. Runs pay their GC as a server does.
  const delay = monitorEventLoopDelay({ resolution: DELAY_RESOLUTION_MS })
  delay.enable()
  const loopBefore = performance.eventLoopUtilization()
  const cpuBefore = process.cpuUsage()
  const start = performance.now()

  const results = await Promise.all(queries.map((query) => session.run(query)))

  const wallMs = performance.now() - start
  const cpu = process.cpuUsage(cpuBefore)
  const loop = performance.eventLoopUtilization(loopBefore)
  // A loop blocked until the very end reports its delay on the next tick: let that tick land.
  await sleep(2 * DELAY_RESOLUTION_MS)
  delay.disable()
  const metrics = {
    wallMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    busyMs: loop.active,
    elu: loop.utilization,
    // Each sample is the full interval between ticks; what exceeds the interval is the delay.
    maxDelayMs: delay.count > 0 ? Math.max(0, delay.max / 1e6 - DELAY_RESOLUTION_MS) : 0,
  }
  return { metrics, results }
}

/** Throws unless the run returned N documents per query with the expected top-level fields. */
function verify(session, cell, results) {
  const expectedFields = topLevelFields(cell.workload.dataset, cell.workload.fieldCount).toSorted().join(',')
  for (const result of results) {
    const { count, firstDocument } = session.summarize(result)
    if (count !== cell.n) throw new Error(`returned ${count} documents, expected ${cell.n}`)
    if (firstDocument === undefined) continue
    const fields = Object.keys(firstDocument).toSorted().join(',')
    if (fields !== expectedFields)
      throw new Error(`first document has fields [${fields}], expected [${expectedFields}]`)
  }
}

/**
 * Warm-up runs: at least `cell.warmups`, and more for small results, until about this many
 * documents went through (capped at {@link MAX_WARMUPS}). A server runs its queries thousands of
 * times: what it sees is the JIT-compiled steady state, which one warm-up run over 1k documents
 * does not reach for any library. Every library of a cell gets the same count.
 */
const WARMUP_DOCUMENTS = 200_000
const MAX_WARMUPS = 20

/** How many warm-up runs a cell gets (same for every library of a workload and N). */
function warmupsFor(cell) {
  const perRun = cell.n * cell.workload.concurrency
  return Math.max(cell.warmups, Math.min(MAX_WARMUPS, Math.ceil(WARMUP_DOCUMENTS / perRun)))
}

/** Warm-up runs (measured, checked, discarded but the first), then the measured runs. */
async function measureCell(cell) {
  const session = await pathById(cell.pathId).open(cell.target)
  try {
    const warmups = warmupsFor(cell)
    const runs = []
    let firstRun
    for (let index = 0; index < warmups + cell.runs; index++) {
      const { metrics, results } = await measureRun(session, cell)
      verify(session, cell, results)
      firstRun ??= metrics
      if (index >= warmups) runs.push(metrics)
    }
    return { runs, firstRun }
  } finally {
    await session.close()
  }
}

async function main() {
  const cell = JSON.parse(process.argv[2])
  let report
  try {
    const { runs, firstRun } = await measureCell(cell)
    // maxRSS is in KiB and covers the whole process life: this cell's peak.
    report = { ok: true, runs, firstRun, peakRssMb: process.resourceUsage().maxRSS / 1024 }
  } catch (error) {
    report = { ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) }
  }
  if (process.send) {
    await new Promise((resolve) => process.send(report, resolve))
    process.disconnect()
  } else {
    console.log(JSON.stringify(report))
  }
  // Drivers can keep timers alive for a while after close(); the cell is done.
  process.exit(report.ok ? 0 : 1)
}

await main()
