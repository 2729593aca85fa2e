// `npm run bench`: the side-by-side benchmark suite. Runs every cell (target x workload x N x path)
// in its own child process (bench/cell.mjs), the small reads of each target (bench/small.mjs, see
// bench/lib/small_reads.mjs), then the decode micro bench (bench/decode.mjs), prints
// a markdown table per target and writes bench/results/<date-time>.md (kept) and .json (raw data);
// a full run then refreshes BENCHMARKS.md's "Where it stands" table (bench/summary.mjs).
//
//   node bench/run.mjs [--quick] [--target replay|replay-rs|devdb|all] [--filter <substring>]
//
// See bench/README.md for what each column means.
import { fork } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { addonProfile, distFingerprint } from './lib/addon.mjs'
import { detectRumongoFeatures, PATHS } from './lib/paths.mjs'
import {
  addRatios,
  describeMachine,
  formatCount,
  machineMarkdown,
  markdownTable,
  summarizeRuns,
} from './lib/report.mjs'
import { measureSmallReads, smallReadsSection } from './lib/small_reads.mjs'
import { measureMongoosePlugin, mongoosePluginSection } from './lib/mongoose_plugin.mjs'
import { updateSummary } from './summary.mjs'
import { chooseTargets, startTarget } from './lib/targets.mjs'
import { planFor, queryFor } from './lib/workloads.mjs'

const benchDir = dirname(fileURLToPath(import.meta.url))

/** Runs per cell: at least 1 warm-up (more for small N, see cell.mjs), then >= 5 measured (3 in --quick). */
const RUNS = { quick: { warmups: 1, runs: 3 }, full: { warmups: 1, runs: 5 } }
/** A cell that takes longer than this is killed and reported as failed. */
const CELL_TIMEOUT_MS = 10 * 60_000
/** Children get a large heap: 1M documents, or 10 concurrent results, outgrow the default one. */
const CHILD_EXEC_ARGV = ['--expose-gc', '--max-old-space-size=16384']

function parseOptions() {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      target: { type: 'string', default: 'all' },
      filter: { type: 'string' },
    },
  })
  return values
}

/**
 * Forks `script` with `args` and resolves with the single message it sends back. A child that
 * exits without reporting, or runs past the timeout, becomes `{ ok: false, error }`.
 */
function runChild(script, args, timeoutMs = CELL_TIMEOUT_MS) {
  return new Promise((resolve) => {
    const child = fork(join(benchDir, script), args, {
      execArgv: CHILD_EXEC_ARGV,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    let report
    const timer = setTimeout(() => {
      report ??= { ok: false, error: `killed after ${timeoutMs / 1000} s` }
      child.kill('SIGKILL')
    }, timeoutMs)
    child.once('message', (message) => (report ??= message))
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      resolve(report ?? { ok: false, error: `exited (code ${code}, signal ${signal}) without a report` })
    })
  })
}

/** The rows of one target: measured, skipped (feature missing) or failed, in table order. */
async function measureTarget(
  target,
  { quick, filter, features, distFingerprint: startFingerprint },
  progress,
) {
  const { warmups, runs } = RUNS[quick ? 'quick' : 'full']
  const rows = []
  for (const { workload, n, skip } of planFor(target.kind, quick)) {
    for (const path of PATHS) {
      // Reduce workloads run the reducing paths only, sum workloads (Arrow) the summing paths
      // only; the other workloads, the other paths.
      if (Boolean(path.reduces) !== Boolean(workload.reduce)) continue
      if (Boolean(path.sums) !== Boolean(workload.sumColumn)) continue
      if (path.workloads && !path.workloads.includes(workload.id)) continue
      const row = {
        target: target.name,
        workload: workload.id,
        n,
        concurrency: workload.concurrency,
        pathId: path.id,
        label: path.label,
        notes: path.note ?? '',
      }
      const name = `${target.name} ${workload.id} ${formatCount(n)} ${path.id}`
      if (filter && !`${name} ${path.label}`.includes(filter)) continue
      rows.push(row)
      if (path.feature && !features.has(path.feature)) {
        row.notes = 'skipped: not implemented yet'
        continue
      }
      if (skip.paths.includes(path.id)) {
        row.notes = skip.reason
        continue
      }
      const cell = {
        target: { uri: target.uri, db: target.db },
        pathId: path.id,
        workload,
        n,
        query: queryFor(workload, n, target.db),
        warmups,
        runs,
      }
      if (distFingerprint() !== startFingerprint) {
        // Someone rebuilt dist/ since the run started: say so on every row it may affect.
        row.notes = [`dist/ rebuilt during the run (now ${addonProfile()})`, row.notes]
          .filter(Boolean)
          .join('; ')
        row.distChanged = true
      }
      const report = await runChild('cell.mjs', [JSON.stringify(cell)])
      if (report.ok) {
        Object.assign(row, {
          runs: report.runs,
          firstRun: report.firstRun,
          stats: summarizeRuns(report.runs),
          peakRssMb: report.peakRssMb,
        })
        progress(`${name}: ${row.stats.wallMs.toFixed(1)} ms median`)
      } else {
        row.notes = `FAILED: ${report.error.split('\n')[0]}`
        row.error = report.error
        progress(`${name}: FAILED\n${report.error}`)
      }
    }
  }
  return addRatios(rows)
}

/**
 * The decode micro bench in its own process (documents from the replay server, when given).
 * A failure becomes a FAILED section rather than losing the tables measured before it.
 */
async function measureDecoding({ quick }, replay, progress) {
  const source = replay ? ['--uri', replay.uri, '--db', replay.db] : []
  const report = await runChild('decode.mjs', [...(quick ? ['--quick'] : []), ...source])
  if (report.ok) return report
  progress(`decode bench FAILED\n${report.error}`)
  return {
    ok: false,
    markdown: `## Decode only\n\nFAILED: ${report.error.split('\n')[0]}`,
    error: report.error,
  }
}

/**
 * A bench that runs alone in its own process and needs no target (bench/change_stream.mjs with its
 * own replay server; bench/json_anchor.mjs, which skips the bson-to-json column, saying why, when no
 * local build of it exists). A failure becomes a FAILED section, never a missing one.
 */
async function measureStandalone(script, title, { quick }, progress) {
  const report = await runChild(script, quick ? ['--quick'] : [])
  if (report.ok) return report
  progress(`${script} FAILED\n${report.error}`)
  return {
    ok: false,
    markdown: `## ${title}\n\nFAILED: ${report.error.split('\n')[0]}`,
    error: report.error,
  }
}

/** A target's markdown section. */
function targetSection({ name, description, rows, startError }) {
  const body = startError ? `FAILED to start: ${startError}` : `${description}\n\n${markdownTable(rows)}`
  return `## Target: ${name}\n\n${body}`
}

/**
 * Starts a target, measures its cells, publishes its section, stops it. A target that fails to
 * start is reported with `startError`, so the other target's numbers are not lost. With
 * `options.decode`, the decode bench runs on the replay server's documents while it is up.
 */
async function runTarget(name, options, { progress, publish }) {
  let target
  try {
    target = await startTarget(name)
  } catch (error) {
    progress(`target ${name} FAILED to start\n${error.stack}`)
    const result = { name, startError: error.message.split('\n')[0], rows: [] }
    publish(targetSection(result))
    return { result }
  }
  try {
    const rows = await measureTarget(target, options, progress)
    const result = { name, description: target.description, rows }
    // A filter that selects none of the target's cells (e.g. --filter small) leaves out its table.
    // So does a target without that family (replay-rs runs the small reads only).
    if (rows.length > 0 || (!options.filter && planFor(target.kind, options.quick).length > 0))
      publish(targetSection(result))
    if (name === 'replay') {
      // Mongoose with and without rumongo's plugin, beside the Model rows (its own replay server).
      result.mongoosePlugin = await measureMongoosePlugin(options, progress)
      if (result.mongoosePlugin) publish(mongoosePluginSection(result.mongoosePlugin))
    }
    result.smallReads = await measureSmallReads(target, options, progress)
    if (result.smallReads.length > 0) publish(smallReadsSection(target, result.smallReads, options.quick))
    const decoding =
      options.decode && name === 'replay' ? await measureDecoding(options, target, progress) : undefined
    return { result, decoding }
  } finally {
    await target.stop()
  }
}

function heading(mode, machine, features, profile) {
  const build = profile === 'release' ? 'release build' : `**${profile} build: not representative**`
  return [
    `# rumongo benchmarks (${mode} run)`,
    '',
    machineMarkdown(machine),
    `- rumongo: ${build}; paths built: ${['find', ...features].join(', ')}`,
    `- per cell: warm-up runs until ~200k documents went through (1 to 20 runs, the same for every library of a workload and N), then ${RUNS[mode].runs} measured runs, each cell in a fresh process; 'first run' is the cold first query of the process`,
  ].join('\n')
}

/** Writes bench/results/<date-time>.md (the printed report) and .json (every run's numbers). */
function writeResults(machine, sections, raw) {
  const stamp = machine.date.replace(/:/g, '-').replace(/\.\d+Z$/, 'Z')
  const resultsDir = join(benchDir, 'results')
  mkdirSync(resultsDir, { recursive: true })
  writeFileSync(join(resultsDir, `${stamp}.md`), `${sections.join('\n\n')}\n`)
  writeFileSync(join(resultsDir, `${stamp}.json`), `${JSON.stringify(raw, null, 2)}\n`)
  return `bench/results/${stamp}.md and .json`
}

async function main() {
  const options = parseOptions()
  const mode = options.quick ? 'quick' : 'full'
  const machine = describeMachine()
  const features = await detectRumongoFeatures()
  const profile = addonProfile()
  const startFingerprint = distFingerprint()
  const sections = []
  const progress = (line) => console.error(`bench: ${line}`)
  const publish = (section) => {
    sections.push(section)
    console.log(`${section}\n`)
  }
  // --filter selects cells; the decode bench runs without a filter or with --filter decode.
  const decode = !options.filter || 'decode'.includes(options.filter)
  publish(heading(mode, machine, features, profile))
  if (profile !== 'release') progress(`WARNING: dist/ holds a ${profile} build; run npm run build first`)

  const targets = []
  let decoding
  for (const name of chooseTargets(options.target, options.quick)) {
    const measured = await runTarget(
      name,
      { ...options, features, decode, distFingerprint: startFingerprint },
      { progress, publish },
    )
    targets.push(measured.result)
    decoding ??= measured.decoding
  }
  if (decode) {
    decoding ??= await measureDecoding(options, undefined, progress)
    publish(decoding.markdown)
  }
  // The JSON side-by-side runs without a filter or with --filter bson-to-json, the change-stream
  // bench with --filter watch.
  const standalone = {}
  for (const [key, filter, script, title] of [
    ['jsonAnchor', 'bson-to-json', 'json_anchor.mjs', 'BSON -> JSON per core'],
    ['changeStreams', 'watch', 'change_stream.mjs', 'Change streams'],
  ]) {
    if (options.filter && !filter.includes(options.filter)) continue
    standalone[key] = await measureStandalone(script, title, options, progress)
    publish(standalone[key].markdown)
  }

  const raw = {
    mode,
    machine,
    addon: profile,
    features: [...features],
    targets,
    decoding: decoding?.data,
    changeStreams: standalone.changeStreams?.data,
    jsonAnchor: standalone.jsonAnchor?.data,
  }
  progress(`results written to ${writeResults(machine, sections, raw)}`)
  // A full run (filtered or not) refreshes the rows it measured in BENCHMARKS.md's "Where it
  // stands", the block between its markers; a failure there loses no result.
  if (mode === 'full') {
    try {
      progress(updateSummary())
    } catch (error) {
      progress(`BENCHMARKS.md's summary not updated: ${error.message}`)
    }
  }
  const rows = targets.flatMap((target) => [...target.rows, ...(target.smallReads ?? [])])
  const failedCells = rows.filter((row) => row.error).length
  if (failedCells > 0) progress(`${failedCells} cell(s) FAILED`)
  if (distFingerprint() !== startFingerprint) {
    progress('WARNING: dist/ was rebuilt during the run (by another process?): rows noting it are suspect')
  }
  const mongooseFailed = targets.some((target) => target.mongoosePlugin?.error)
  if (
    failedCells > 0 ||
    mongooseFailed ||
    targets.some((target) => target.startError) ||
    decoding?.ok === false ||
    Object.values(standalone).some((report) => report.ok === false)
  ) {
    process.exitCode = 1
  }
}

await main()
