// Turns measured runs into table rows (medians, spread, ratio to the official driver) and markdown.
import { cpus, totalmem } from 'node:os'
import { execFileSync } from 'node:child_process'

/** Median of numbers (mean of the middle two for an even count). */
export function median(values) {
  const sorted = values.toSorted((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/**
 * One cell's numbers from its runs: medians for wall, CPU, busy and ELU (typical run), min/max for
 * the wall spread, the maximum for the loop delay (the worst stall is what users feel).
 */
export function summarizeRuns(runs) {
  const of = (key) => runs.map((run) => run[key])
  return {
    wallMs: median(of('wallMs')),
    wallMinMs: Math.min(...of('wallMs')),
    wallMaxMs: Math.max(...of('wallMs')),
    cpuMs: median(of('cpuMs')),
    busyMs: median(of('busyMs')),
    elu: median(of('elu')),
    maxDelayMs: Math.max(...of('maxDelayMs')),
  }
}

/** The official driver's paths: the reference of list, reduce and sum (Arrow) workloads. */
const OFFICIAL_PATHS = ['official', 'official-reduce', 'official-arrow']

/**
 * The official path a row compares with: a monitored variant (id ending in `-monitored`) with the
 * official driver monitored the same way, every other row with the plain official path.
 */
export const referenceGroup = (id) => (id.endsWith('-monitored') ? 'monitored' : 'plain')

/**
 * Adds `ratio` (official median / this median: 1.00x is the official driver, higher is faster) to
 * every measured row, comparing rows of the same target, workload, N and reference group.
 */
export function addRatios(rows) {
  const key = (row) => `${row.target}|${row.workload}|${row.n}|${referenceGroup(row.pathId)}`
  const official = new Map(
    rows
      .filter(
        (row) => (OFFICIAL_PATHS.includes(row.pathId) || row.pathId === 'official-monitored') && row.stats,
      )
      .map((row) => [key(row), row]),
  )
  for (const row of rows) {
    const reference = official.get(key(row))
    if (row.stats && reference) row.ratio = reference.stats.wallMs / row.stats.wallMs
  }
  return rows
}

/** 1000 -> '1k', 1000000 -> '1M'. */
export function formatCount(n) {
  if (n >= 1_000_000 && n % 1_000_000 === 0) return `${n / 1_000_000}M`
  if (n >= 1000 && n % 1000 === 0) return `${n / 1000}k`
  return String(n)
}

/** Milliseconds with about three significant digits. */
function ms(value) {
  if (value >= 100) return value.toFixed(0)
  if (value >= 10) return value.toFixed(1)
  return value.toFixed(2)
}

const COLUMNS = [
  'workload',
  'N',
  'library',
  'wall median (ms)',
  'spread min–max (ms)',
  'vs official',
  'CPU ms',
  'main-thread busy ms',
  'ELU %',
  'max loop delay ms',
  'peak RSS MB',
  'first run ms',
  'notes',
]

/** The table cells of one row; skipped and failed rows have only their notes. */
function rowCells(row) {
  const size = row.concurrency > 1 ? `${row.concurrency}x${formatCount(row.n)}` : formatCount(row.n)
  const head = [row.workload, size, row.label]
  if (!row.stats) return [...head, ...COLUMNS.slice(head.length, -1).map(() => ''), row.notes]
  const { stats } = row
  return [
    ...head,
    ms(stats.wallMs),
    `${ms(stats.wallMinMs)}–${ms(stats.wallMaxMs)}`,
    row.ratio === undefined ? 'n/a' : `${row.ratio.toFixed(2)}x`,
    ms(stats.cpuMs),
    ms(stats.busyMs),
    (stats.elu * 100).toFixed(0),
    ms(stats.maxDelayMs),
    row.peakRssMb.toFixed(0),
    row.firstRun ? ms(row.firstRun.wallMs) : '',
    row.notes,
  ]
}

/** A markdown table of rows. */
export function markdownTable(rows) {
  const lines = [COLUMNS, COLUMNS.map(() => '---'), ...rows.map(rowCells)]
  return lines.map((cells) => `| ${cells.join(' | ')} |`).join('\n')
}

/** A command's trimmed output, or `fallback` when it cannot run. */
function commandOutput(command, args, fallback) {
  try {
    return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  } catch {
    return fallback
  }
}

/** The machine (and source version) the numbers come from. */
export function describeMachine() {
  const processors = cpus()
  return {
    cores: processors.length,
    cpuModel: processors[0]?.model ?? 'unknown',
    totalMemoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    rustc: commandOutput('rustc', ['--version'], 'rustc not found'),
    commit: commandOutput('git', ['rev-parse', '--short', 'HEAD'], 'unknown'),
    date: new Date().toISOString(),
  }
}

/** The machine as markdown lines. */
export function machineMarkdown(machine) {
  return [
    `- machine: ${machine.cores} cores, ${machine.cpuModel}, ${machine.totalMemoryGiB} GiB`,
    `- node ${machine.node}, ${machine.rustc}`,
    `- date: ${machine.date}, commit ${machine.commit} (plus uncommitted changes, if any)`,
  ].join('\n')
}

/**
 * Runs a bench script's `main` (which resolves to `{ ok, markdown, data }`): forked by run.mjs, its
 * report goes back as one IPC message, then the process is let end (a failure as `{ ok: false,
 * error }`); run by hand, the markdown is printed and a failure thrown.
 */
export async function runAndReport(main) {
  const sendReport = (report) => process.send(report, () => process.disconnect())
  try {
    const report = await main()
    if (process.send) sendReport(report)
    else console.log(report.markdown)
  } catch (error) {
    if (!process.send) throw error
    sendReport({ ok: false, error: error.stack ?? String(error) })
    process.exitCode = 1
  }
}
