// Change-stream bench (issue #35): a `watch()` of 100k scripted insert events (wide45 and orders
// documents as `fullDocument`), in batches of 1,000 (`batchSize`), served by the replay server
// (bench/replay) as a one-member replica set: each stream it opens sees the collection's
// documents inserted in `_id` order, pre-encoded, so its cost is a memcpy per event. Each run is a
// fresh process that opens the stream and iterates it with `for await` until the last event,
// reading one field of each; reported: events per second, main-thread busy time (event-loop
// utilization) and CPU time, official `watch()` vs rumongo's. The headline rows are rumongo's
// default, which sends a getMore only when the official driver would; a second table has
// rumongo's `prefetch: 1` (the next getMore sent while a reply is read) against the same official runs.
//
//   node bench/change_stream.mjs [--quick] [--events <count>]
//
// Part of `npm run bench` (run.mjs forks it and gets the report over IPC); runnable alone.
import { fork } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { median } from './lib/report.mjs'

const self = fileURLToPath(import.meta.url)
const replayScript = join(fileURLToPath(new URL('..', import.meta.url)), 'scripts', 'replay.mjs')
const DATASETS = ['wide45', 'orders']
// `rumongo-prefetch`: rumongo's watch() with `prefetch: 1`.
const DRIVERS = ['official', 'rumongo', 'rumongo-prefetch']
const SIZES = { quick: { events: 20_000, runs: 3 }, full: { events: 100_000, runs: 5 } }
const BATCH = 1_000

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    cell: { type: 'boolean', default: false },
    driver: { type: 'string' },
    dataset: { type: 'string' },
    uri: { type: 'string' },
    events: { type: 'string' },
  },
})

/** One run in this process: the stream read to its `events`-th event. */
async function cell({ driver, dataset, uri, events }) {
  const { MongoClient } = await import(driver === 'official' ? 'mongodb' : 'rumongo')
  const client = new MongoClient(uri)
  await client.connect()
  const options = { batchSize: BATCH, maxAwaitTimeMS: 1000 }
  if (driver === 'rumongo-prefetch') options.prefetch = 1
  const stream = client.db('bench').collection(dataset).watch([], options)
  const total = Number(events)
  let count = 0
  let sum = 0
  const loopBefore = performance.eventLoopUtilization()
  const cpuBefore = process.cpuUsage()
  const start = performance.now()
  for await (const change of stream) {
    sum += change.fullDocument.n
    if (++count === total) break
  }
  const wallMs = performance.now() - start
  const loop = performance.eventLoopUtilization(loopBefore)
  const cpu = process.cpuUsage(cpuBefore)
  await client.close()
  return { wallMs, busyMs: loop.active, cpuMs: (cpu.user + cpu.system) / 1000, count, sum }
}

function runCell(args) {
  return new Promise((resolve) => {
    const child = fork(self, ['--cell', ...args], { execArgv: ['--max-old-space-size=8192'] })
    let report
    child.once('message', (message) => (report = message))
    child.once('exit', (code) => resolve(report ?? { ok: false, error: `cell exited with code ${code}` }))
  })
}

async function main() {
  const size = SIZES[values.quick ? 'quick' : 'full']
  const { runs } = size
  const events = values.events ? Number(values.events) : size.events
  const rows = []
  // The replay server's collections hold `events` documents: the stream's inserts.
  const { startReplay } = await import(pathToFileURL(replayScript).href)
  const server = await startReplay({ docs: events, replicaSet: 1 })
  try {
    for (const dataset of DATASETS) {
      const measured = {}
      for (const driver of DRIVERS) {
        const results = []
        for (let run = 0; run < runs + 1; run++) {
          const report = await runCell([
            '--driver',
            driver,
            '--dataset',
            dataset,
            '--uri',
            server.uri,
            '--events',
            String(events),
          ])
          if (!report.ok) throw new Error(`${driver} ${dataset}: ${report.error}`)
          if (report.count !== events) throw new Error(`${driver} ${dataset}: ${report.count} events`)
          if (run > 0) results.push(report) // the first run warms the JIT and the page cache
        }
        measured[driver] = {
          eventsPerSecond: events / (median(results.map((r) => r.wallMs)) / 1000),
          busyMs: median(results.map((r) => r.busyMs)),
          cpuMs: median(results.map((r) => r.cpuMs)),
          sums: new Set(results.map((r) => r.sum)),
        }
      }
      const { official, rumongo, 'rumongo-prefetch': prefetch } = measured
      for (const other of [rumongo, prefetch]) {
        if ([...official.sums].join() !== [...other.sums].join())
          throw new Error(`${dataset}: the drivers read different events`)
      }
      rows.push({ dataset, official, rumongo, prefetch })
    }
  } finally {
    await server.stop()
  }
  const fmt = (value) => Math.round(value).toLocaleString('en-US')
  const row = (dataset, official, rumongo) =>
    `| ${dataset} | ${fmt(official.eventsPerSecond)} | ${fmt(rumongo.eventsPerSecond)} | ${(rumongo.eventsPerSecond / official.eventsPerSecond).toFixed(2)} | ${fmt(official.busyMs)} | ${fmt(rumongo.busyMs)} | ${(rumongo.busyMs / official.busyMs).toFixed(2)} | ${fmt(official.cpuMs)} | ${fmt(rumongo.cpuMs)} |`
  const header =
    '| dataset | official events/s | rumongo events/s | x | official main-thread busy ms | rumongo busy ms | ratio | official CPU ms | rumongo CPU ms |'
  const lines = [
    `## Change streams (watch(), ${events.toLocaleString('en-US')} insert events, batches of ${BATCH})`,
    '',
    header,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(({ dataset, official, rumongo }) => row(dataset, official, rumongo)),
    '',
    'rumongo with `prefetch: 1` (opt-in: the next getMore is sent while a reply is read), same official runs:',
    '',
    header,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(({ dataset, official, prefetch }) => row(dataset, official, prefetch)),
  ]
  const data = rows.map(({ dataset, official, rumongo, prefetch }) => ({
    dataset,
    official: { ...official, sums: undefined },
    rumongo: { ...rumongo, sums: undefined },
    rumongoPrefetch: { ...prefetch, sums: undefined },
  }))
  return { ok: true, markdown: lines.join('\n'), data }
}

if (values.cell) {
  cell(values).then(
    (result) => process.send({ ok: true, ...result }),
    (error) => process.send({ ok: false, error: String(error?.stack ?? error) }),
  )
} else {
  const report = await main().catch((error) => ({ ok: false, error: String(error?.stack ?? error) }))
  if (process.send) process.send(report)
  else console.log(report.ok ? report.markdown : report.error)
  if (!report.ok) process.exitCode = 1
}
