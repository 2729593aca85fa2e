// The Mongoose plugin rows (bench/lib/mongoose_plugin.mjs): one process, two Mongoose instances
// on the same replay server, the same schemas and models, one with `mongoose.plugin(mongoosePlugin())`
// and one without. Each workload runs on both, alternated run by run (the first side swapped each
// round), so machine drift and GC hit both alike. Started by run.mjs with `child_process.fork`:
//
//   node --expose-gc bench/mongoose_plugin.mjs '<JSON { uri, db, rounds, workloads }>'
//
// Replies once with { ok: true, rows } or { ok: false, error }. Every result is checked on both
// sides (count, order, values of `n`, populated children), and the plugin must have served every
// read (no fallback): a row that fails a check fails the run rather than reporting a number.
import { performance } from 'node:perf_hooks'
import { mongooseSchema, replayObjectId } from './lib/datasets.mjs'
import { CHILDREN_PER_PARENT, MONGOOSE_WORKLOADS, PARENTS, parentSchema } from './lib/mongoose_plugin.mjs'

/** One application: its Mongoose instance, connection and models. */
async function application(mongoose, uri, db, plugin) {
  const instance = new mongoose.Mongoose()
  if (plugin) instance.plugin(plugin)
  // No autoCreate/autoIndex: the replay server answers reads only.
  const connection = await instance
    .createConnection(uri, { dbName: db, autoCreate: false, autoIndex: false })
    .asPromise()
  const models = {
    orders: connection.model('orders', mongooseSchema(instance, 'orders'), 'orders'),
    wide45: connection.model('wide45', mongooseSchema(instance, 'wide45'), 'wide45'),
    parents: connection.model('parents', parentSchema(instance), 'parents'),
  }
  return { models, close: () => connection.close() }
}

/** The timed call of a workload and the check of its result. */
function operation(workload, models) {
  const Model = models[workload.dataset]
  switch (workload.kind) {
    case 'find': {
      const query = () => Model.find({}).limit(workload.n)
      return {
        run: () => (workload.lean ? query().lean() : query()).exec(),
        check(documents) {
          if (documents.length !== workload.n) throw new Error(`${documents.length} documents`)
          for (const k of [0, workload.n >> 1, workload.n - 1]) {
            if (documents[k].n !== k) throw new Error(`document ${k} has n ${documents[k].n}`)
          }
          if (!workload.lean && typeof documents[0].$isNew !== 'boolean') throw new Error('not hydrated')
        },
      }
    }
    case 'findById': {
      // Spread over the collection (a prime stride), the same ids on both sides.
      const ids = Array.from({ length: workload.n }, (_, k) => (k * 7919) % 1_000_000)
      return {
        async run() {
          const found = []
          for (const index of ids) found.push(await Model.findById(replayObjectId(index)).exec())
          return found
        },
        check(documents) {
          documents.forEach((document, k) => {
            if (document?.n !== ids[k]) throw new Error(`findById ${ids[k]} returned n ${document?.n}`)
          })
        },
      }
    }
    case 'populate': {
      const query = () => Model.find({}).populate('children')
      return {
        run: () => (workload.lean ? query().lean() : query()).exec(),
        check(parents) {
          if (parents.length !== PARENTS) throw new Error(`${parents.length} parents`)
          for (const parent of [parents[0], parents[PARENTS - 1]]) {
            const children = parent.children.map((child) => child.n)
            const expected = Array.from(
              { length: CHILDREN_PER_PARENT },
              (_, k) => parent.n * CHILDREN_PER_PARENT + k,
            )
            if (children.join() !== expected.join())
              throw new Error(`parent ${parent.n} children ${children}`)
          }
        },
      }
    }
    default:
      throw new Error(`unknown workload kind ${workload.kind}`)
  }
}

/** One measured run: wall, CPU and main-thread busy (event-loop active) time. */
async function measure(op) {
  globalThis.gc?.()
  const loopBefore = performance.eventLoopUtilization()
  const cpuBefore = process.cpuUsage()
  const started = performance.now()
  const result = await op.run()
  const wallMs = performance.now() - started
  const cpu = process.cpuUsage(cpuBefore)
  const loop = performance.eventLoopUtilization(loopBefore)
  op.check(result)
  return { wallMs, cpuMs: (cpu.user + cpu.system) / 1000, busyMs: loop.active }
}

const median = (values) => {
  const sorted = values.toSorted((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

async function main() {
  const { uri, db, rounds, workloads: ids } = JSON.parse(process.argv[2])
  process.once('disconnect', () => process.exit(1))
  const { default: mongoose } = await import('mongoose')
  const { mongoosePlugin } = await import('rumongo')
  const plugin = mongoosePlugin()
  const sides = {
    plain: await application(mongoose, uri, db),
    plugin: await application(mongoose, uri, db, plugin),
  }
  const rows = []
  let report
  try {
    for (const workload of MONGOOSE_WORKLOADS.filter((candidate) => ids.includes(candidate.id))) {
      const ops = {
        plain: operation(workload, sides.plain.models),
        plugin: operation(workload, sides.plugin.models),
      }
      const runs = { plain: [], plugin: [] }
      // Warm-up: one run each (connections, JIT, the plugin's rumongo client).
      for (const side of ['plain', 'plugin']) await measure(ops[side])
      for (let round = 0; round < rounds; round++) {
        const order = round % 2 === 0 ? ['plain', 'plugin'] : ['plugin', 'plain']
        for (const side of order) runs[side].push(await measure(ops[side]))
      }
      const summary = (side) => ({
        wallMs: median(runs[side].map((run) => run.wallMs)),
        cpuMs: median(runs[side].map((run) => run.cpuMs)),
        busyMs: median(runs[side].map((run) => run.busyMs)),
      })
      rows.push({ workload: workload.id, plain: summary('plain'), plugin: summary('plugin'), runs })
      console.error(
        `bench: mongoose-plugin ${workload.id}: ${summary('plain').wallMs.toFixed(1)} -> ${summary('plugin').wallMs.toFixed(1)} ms`,
      )
    }
    const stats = plugin.stats()
    if (stats.fallbacks !== 0)
      throw new Error(`the plugin fell back: ${JSON.stringify(stats.fallbacksByReason)}`)
    report = { ok: true, rows, served: stats.served }
  } catch (error) {
    report = { ok: false, error: error.stack ?? String(error) }
  }
  await sides.plain.close()
  await sides.plugin.close()
  await plugin.close()
  // Drivers can keep timers alive for a while after close(); the measurement is done.
  process.send(report, () => process.exit(report.ok ? 0 : 1))
}

await main()
