// Decomposes the populate rows of bench/mongoose_plugin.mjs (1,000 parents x 10 orders): one side
// per process, on a replay server started by hand with the bench's parents loaded
// (`npm run replay -- --port <port> --load parents=<file>`, the file as bench/lib/mongoose_plugin.mjs
// writes it; `node bench/mongoose_populate_profile.mjs --write-parents <file>` writes it too).
//
//   node --expose-gc bench/mongoose_populate_profile.mjs <uri> <plain|plugin|null> <lean|hydrated> [out.cpuprofile]
//
// Sides: `plain` Mongoose alone, `plugin` with mongoosePlugin(), `null` Mongoose on an infinitely
// fast driver (each find returns documents js-bson decoded BEFORE the measured runs): what is left is
// Mongoose's own work and its garbage, the floor no driver layer can go under.
//
// Prints the median wall time of the parents' read alone, the children's read alone (the `$in` query
// populate sends) and the whole populate, and CPU ms per populate run; with an output file, CPU-profiles
// RUNS populate runs (node:inspector, the format of `node --cpu-prof`): read it with
// bench/lib/cpuprofile_table.mjs. Under `valgrind --tool=callgrind --instr-atstart=no` with
// CALLGRIND=1 (and --expose-gc) it runs WARMUPS (3) warm-ups, then counts the instructions of RUNS populate
// runs only: before each, uncounted, the null driver decodes that run's documents and a full GC
// leaves every side the same clean heap (the null driver's documents then old, as if pre-tenured;
// with NULL_YOUNG=1 decoded after the GC, young as the documents a driver hands over).
import { execFileSync } from 'node:child_process'
import { Session } from 'node:inspector/promises'
import { writeFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { BSON } from 'bson'
import { mongooseSchema } from './lib/datasets.mjs'
import { parentSchema, writeParents } from './lib/mongoose_plugin.mjs'

if (process.argv[2] === '--write-parents') {
  writeParents(process.argv[3])
  process.exit(0)
}
const [uri, side, mode, out] = process.argv.slice(2)
const RUNS = Number(process.env.RUNS ?? 5)
const callgrind = process.env.CALLGRIND === '1'
const youngNullDocuments = process.env.NULL_YOUNG === '1'
const { default: mongoose } = await import('mongoose')
const { mongoosePlugin } = side === 'plugin' ? await import(process.env.RUMONGO ?? 'rumongo') : {}
const plugin = side === 'plugin' ? mongoosePlugin() : undefined
const instance = new mongoose.Mongoose()
if (plugin) instance.plugin(plugin)
const connection = await instance
  .createConnection(uri, { dbName: 'bench', autoCreate: false, autoIndex: false })
  .asPromise()
// The schemas of bench/mongoose_plugin.mjs.
const Orders = connection.model('orders', mongooseSchema(instance, 'orders'), 'orders')
const Parents = connection.model('parents', parentSchema(instance), 'parents')
const withMode = (query) => (mode === 'lean' ? query.lean() : query)

/**
 * Decodes the null driver's documents for `reads` more reads of the named models (a no-op on other
 * sides). Called before each measured run, outside it, so that the heap holds one run's documents
 * (decoding every run's copies up front left hundreds of MB alive, which made each run's full GCs
 * cost more than the populate itself: the null side's wall then read 142 ms against 90 with the plugin).
 */
let prepareNullReads = (reads) => reads

const ids = (await Parents.find({}).lean().exec()).flatMap((parent) => parent.children)
if (side === 'null') await nullDriver()
const parentsRead = () => withMode(Parents.find({})).exec()
parentsRead.reads = ['parents']
const childrenRead = () => withMode(Orders.find({ _id: { $in: ids } })).exec()
childrenRead.reads = ['orders']
const populate = () => withMode(Parents.find({}).populate('children')).exec()
populate.reads = ['parents', 'orders']

/** Every find of both models returns documents decoded before the measured runs. */
async function nullDriver() {
  const encoded = async (Model, filter) =>
    (await Model.collection.collection.find(filter).toArray()).map((document) => BSON.serialize(document))
  const bytes = { parents: await encoded(Parents, {}), orders: await encoded(Orders, { _id: { $in: ids } }) }
  const copies = { parents: [], orders: [] }
  prepareNullReads = (reads, names = ['parents', 'orders']) => {
    for (const name of names) {
      for (let k = 0; k < reads; k++) copies[name].push(bytes[name].map((each) => BSON.deserialize(each)))
    }
  }
  for (const [name, Model] of [
    ['parents', Parents],
    ['orders', Orders],
  ]) {
    const fake = { find: () => ({ toArray: async () => copies[name].pop() }) }
    Model.collection._getCollection = () => fake
  }
}

async function median(op) {
  const times = []
  for (let k = 0; k < RUNS; k++) {
    prepareNullReads(1, op.reads)
    globalThis.gc?.()
    const started = performance.now()
    await op()
    times.push(performance.now() - started)
  }
  return times.sort((a, b) => a - b)[times.length >> 1]
}

async function main() {
  if (callgrind) {
    const instructions = (state) => execFileSync('callgrind_control', ['-i', state, String(process.pid)])
    // Enough warm-ups that the optimizing compiler is done before counting starts.
    const warmups = Number(process.env.WARMUPS ?? 3)
    prepareNullReads(warmups)
    for (let k = 0; k < warmups; k++) await populate()
    for (let k = 0; k < RUNS; k++) {
      // NULL_YOUNG=1: the null driver's documents decoded after the GC, young as a driver's are.
      if (!youngNullDocuments) prepareNullReads(1)
      globalThis.gc?.()
      if (youngNullDocuments) prepareNullReads(1)
      instructions('on')
      await populate()
      instructions('off')
    }
    return { side, mode, runs: RUNS }
  }
  for (const op of [parentsRead, childrenRead, populate]) {
    prepareNullReads(1, op.reads)
    await op() // warm-up
  }
  const phases = {
    parentsMs: await median(parentsRead),
    childrenMs: await median(childrenRead),
    populateMs: await median(populate),
  }
  const session = new Session()
  if (out) {
    session.connect()
    await session.post('Profiler.enable')
    await session.post('Profiler.setSamplingInterval', { interval: 100 })
  }
  // The profiled runs follow each other without a GC between them: their null documents are decoded first.
  prepareNullReads(RUNS, populate.reads)
  globalThis.gc?.()
  if (out) await session.post('Profiler.start')
  const cpuBefore = process.cpuUsage()
  for (let k = 0; k < RUNS; k++) await populate()
  const cpu = process.cpuUsage(cpuBefore)
  if (out) writeFileSync(out, JSON.stringify((await session.post('Profiler.stop')).profile))
  return { side, mode, runs: RUNS, ...phases, cpuMsPerPopulate: (cpu.user + cpu.system) / 1000 / RUNS }
}

const report = await main()
console.log(
  JSON.stringify({ ...report, served: plugin?.stats().served, fallbacks: plugin?.stats().fallbacks }),
)
await connection.close()
await plugin?.close()
process.exit(0)
