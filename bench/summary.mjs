// `node bench/summary.mjs`: the "Where it stands" table at the top of BENCHMARKS.md, made from the
// results files in bench/results/. Each row is one read path on one workload, taken from the newest
// full-mode run (`npm run bench`: 5 measured runs per cell, a `--filter` run included) that measured
// both rumongo's row and the row it is compared with, so a run of one family (`--filter sum`)
// refreshes that family's rows and leaves the others at their last full measurement. Only the block
// between the two markers is rewritten: the entries below them are history and never touched.
// `npm run bench` (full mode) runs it at its end.
//
//   node bench/summary.mjs [--print]   (--print: write the block to stdout, leave BENCHMARKS.md alone)
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const benchDir = dirname(fileURLToPath(import.meta.url))
const resultsDir = join(benchDir, 'results')
const benchmarksFile = join(benchDir, '..', 'BENCHMARKS.md')
const START =
  '<!-- where-it-stands:start (made by `node bench/summary.mjs` from bench/results/; edit the script, not this block) -->'
const END = '<!-- where-it-stands:end -->'

const OFFICIAL = 'mongodb find().toArray()'
const OFFICIAL_JSON = 'mongodb JSON.stringify(toArray())'

/**
 * The rows of the table, in order. `section` is the results file's section (`Target: <name>` for
 * the cells, `Small reads: <name>`), `match` the columns that pick rumongo's row and `baseline` the
 * library of the row it is compared with (same section and other columns).
 */
const ROWS = [
  { path: '`find()`', section: 'Target: replay', match: { workload: 'wide45-45', N: '10k' } },
  { path: '`find()`', section: 'Target: replay', match: { workload: 'wide45-45', N: '100k' } },
  {
    path: '`find()`, 10 at once',
    section: 'Target: replay',
    match: { workload: 'wide45-45 x10', N: '10x10k' },
  },
  {
    path: '`findCursor()` stream',
    section: 'Target: replay',
    match: { workload: 'wide45-9', N: '1M', library: 'rumongo findCursor() stream' },
  },
  {
    path: '`findLazy()`, 2 fields read',
    section: 'Target: replay',
    match: { workload: 'wide45-45', N: '100k', library: 'rumongo findLazy()' },
  },
  {
    path: '`findJson()`',
    section: 'Target: replay',
    match: { workload: 'wide45-45', N: '100k', library: 'rumongo findJson()' },
    baseline: OFFICIAL_JSON,
  },
  {
    path: '`pipeJson()`',
    section: 'Target: replay',
    match: { workload: 'wide45-9', N: '1M', library: 'rumongo pipeJson()' },
    baseline: OFFICIAL_JSON,
  },
  ...['100k', '1M'].map((N) => ({
    path: '`findArrow()`, one column summed',
    section: 'Target: replay',
    match: { workload: 'wide45-45 sum', N, library: 'rumongo findArrow()' },
    baseline: 'mongodb toArray() + apache-arrow tableFromJSON',
  })),
  {
    path: '`Model.find()`',
    section: 'Target: replay',
    match: { workload: 'wide45-45', N: '100k', library: 'rumongo Model.find()' },
    baseline: 'mongoose find().lean()',
  },
  {
    path: '`WorkerPool.reduce()`',
    section: 'Target: replay',
    match: { workload: 'orders reduce x10', N: '10x20k', library: 'rumongo WorkerPool.reduce()' },
    baseline: 'mongodb find().toArray() + reduce',
  },
  { path: '`find()`', section: 'Target: devdb', match: { workload: 'wide45-45', N: '4k' } },
  ...['1', '32'].map((inFlight) => ({
    path: `\`findOne({ _id })\`, ${inFlight} in flight`,
    section: 'Small reads: replay',
    match: { query: 'findOne({ _id })', 'in flight': inFlight, library: 'rumongo' },
    rows: '1',
    baseline: 'mongodb',
  })),
  {
    path: '`find()` of 20, 32 in flight',
    section: 'Small reads: replay',
    match: { query: 'find({}, { sort: { _id: 1 }, limit: 20 })', 'in flight': '32', library: 'rumongo' },
    rows: '20',
    baseline: 'mongodb',
  },
]

/** What the workload and target columns say, for a reader who has not read bench/README.md. */
const WORKLOADS = {
  'wide45-9': 'wide45, 9 of 45 fields',
  'wide45-45': 'wide45, 45 fields',
  'wide45-45 x10': 'wide45, 45 fields, 10 queries at once',
  'wide45-45 sum': 'wide45, 45 fields',
  'orders reduce x10': 'orders, 10 reductions at once',
}
const SERVERS = { replay: 'replay', devdb: 'FerretDB' }

/** A results file: its heading's facts and its sections' tables (rows as column -> text). */
function parseResults(file) {
  const text = readFileSync(join(resultsDir, file), 'utf8')
  const lines = text.split('\n')
  const field = (prefix) =>
    lines
      .find((line) => line.startsWith(prefix))
      ?.slice(prefix.length)
      .trim()
  const dateLine = field('- date:') ?? ''
  const sections = new Map()
  let section
  for (const line of lines) {
    if (line.startsWith('## ')) {
      section = { title: line.slice(3).trim(), header: undefined, rows: [] }
      sections.set(section.title, section)
    } else if (section && line.startsWith('|')) {
      const cells = line
        .slice(1, line.lastIndexOf('|'))
        .split('|')
        .map((cell) => cell.trim())
      if (!section.header) section.header = cells
      else if (!cells.every((cell) => /^-+$/.test(cell))) {
        section.rows.push(Object.fromEntries(section.header.map((name, i) => [name, cells[i] ?? ''])))
      }
    }
  }
  return {
    file,
    full: lines[0]?.includes('(full run)') ?? false,
    release: (field('- rumongo:') ?? '').startsWith('release build'),
    machine: field('- machine:'),
    node: lines.find((line) => line.startsWith('- node '))?.slice(2),
    date: dateLine.slice(0, 10),
    commit: /commit (\w+)/.exec(dateLine)?.[1] ?? '?',
    sections,
  }
}

const number = (text) => (text === undefined || text === '' ? NaN : Number(text.replace(/,/g, '')))

/** A row measured and trustworthy: a number in its first measured column, no failure or rebuild note. */
function usable(row, column) {
  return row && Number.isFinite(number(row[column])) && !/FAILED|rebuilt during the run/.test(row.notes ?? '')
}

/** The newest full run holding `spec`'s row and its baseline, with both rows, or undefined. */
function measure(spec, runs) {
  const small = spec.section.startsWith('Small reads')
  const column = small ? 'queries/s' : 'wall median (ms)'
  const match = { library: 'rumongo find()', ...spec.match }
  const baselineMatch = { ...match, library: spec.baseline ?? OFFICIAL }
  const find = (rows, wanted) =>
    rows.find((row) => Object.entries(wanted).every(([name, value]) => row[name] === value))
  for (const run of runs) {
    const rows = run.sections.get(spec.section)?.rows ?? []
    const rumongo = find(rows, match)
    const baseline = find(rows, baselineMatch)
    if (usable(rumongo, column) && usable(baseline, column)) return { run, rumongo, baseline, small }
  }
  return undefined
}

/** 3 significant digits, thousands separated: 2725 -> '2,725', 3.634 -> '3.63'. */
const formatNumber = (value) =>
  value >= 1000 ? Math.round(value).toLocaleString('en-US') : String(Number(value.toPrecision(3)))
const formatRatio = (ratio) => `${ratio.toFixed(ratio >= 10 ? 1 : 2)}x`

function tableRow(spec, measured) {
  const target = spec.section.split(': ')[1]
  const workload = spec.match.workload ?? 'orders'
  const where = `${WORKLOADS[workload] ?? workload} (${SERVERS[target] ?? target})`
  const rows = spec.rows ?? spec.match.N
  const baseline = `\`${spec.baseline ?? OFFICIAL}\``
  if (!measured) return [spec.path, where, rows, baseline, 'not measured yet', '', '', '']
  const { run, rumongo, baseline: reference, small } = measured
  const speed = small
    ? number(rumongo['queries/s']) / number(reference['queries/s'])
    : number(reference['wall median (ms)']) / number(rumongo['wall median (ms)'])
  const busyColumn = small ? 'main-thread µs/query' : 'main-thread busy ms'
  const busy = `${formatNumber(number(rumongo[busyColumn]))} vs ${formatNumber(number(reference[busyColumn]))} ${small ? 'µs a query' : 'ms'}`
  return [spec.path, where, rows, baseline, formatRatio(speed), busy, run.date, `\`${run.commit}\``]
}

/** The block between the markers (markers included). */
export function summaryBlock() {
  const runs = readdirSync(resultsDir)
    .filter((file) => file.endsWith('.md'))
    .sort()
    .reverse()
    .map(parseResults)
    .filter((run) => run.full && run.release)
  const measured = ROWS.map((spec) => measure(spec, runs))
  const header = [
    'read path',
    'workload (server)',
    'rows',
    'compared with',
    'speed',
    'main-thread busy: rumongo vs that',
    'measured',
    'commit',
  ]
  const table = [header, header.map(() => '---'), ...ROWS.map((spec, i) => tableRow(spec, measured[i]))]
    .map((cells) => `| ${cells.join(' | ')} |`)
    .join('\n')
  const sources = [...new Set(measured.filter(Boolean).map(({ run }) => run))]
    .sort((a, b) => a.file.localeCompare(b.file))
    .map((run) => `- \`bench/results/${run.file}\`: ${run.machine}; ${run.node}`)
  return [
    START,
    '## Where it stands',
    '',
    table,
    '',
    "Speed: the compared row's median wall time over rumongo's (queries a second over theirs for the",
    'in-flight rows); higher is faster. Main-thread busy: event-loop active time of a run (of a query',
    'for the in-flight rows), what a read takes from every other request of the process. The replay',
    "server answers from memory, so its wall times are the client's; FerretDB spends ~80 µs a",
    "document, so there the wall times are the server's and the main-thread time is the point.",
    'Workloads and columns: `bench/README.md`; `pipeArrow()` and `shadow()` are not in the bench. Each',
    'row comes from the newest full-mode run (5 measured runs a cell) that measured it and what it is',
    'compared with; ratios are taken within one run, and the runs may be on different machines:',
    '',
    ...sources,
    END,
  ].join('\n')
}

/** Rewrites the block between the markers in BENCHMARKS.md; returns what it did, for a log line. */
export function updateSummary() {
  const text = readFileSync(benchmarksFile, 'utf8')
  const start = text.indexOf(START)
  const end = text.indexOf(END)
  if (start < 0 || end < start) {
    throw new Error(`BENCHMARKS.md has no "${START}" ... "${END}" block to rewrite`)
  }
  writeFileSync(benchmarksFile, text.slice(0, start) + summaryBlock() + text.slice(end + END.length))
  return 'BENCHMARKS.md: "Where it stands" rewritten'
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv.includes('--print')) console.log(summaryBlock())
  else console.error(`summary: ${updateSummary()}`)
}
