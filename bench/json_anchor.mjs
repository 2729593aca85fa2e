// BSON -> JSON side by side: rumongo's transcoder (what findJson / pipeJson run, here through the
// `encodeTestBatch(reply, 'plainJson')` test hook) against zbjornson's bson-to-json (C++, SSE4.2 /
// AVX2 / AVX-512 paths picked at load time), the C++ anchor for this job. Same process, same
// batches, one thread each, rounds interleaved (the order alternates) so a loaded machine's drift
// hits both alike; medians of the rounds and the median of each round's ratio.
//
// bson-to-json is not on the npm registry under its own name and never becomes a dependency of
// rumongo: the row needs a local build of its source (a checkout with `build/Release/bsonToJson.node`),
// found through RUMONGO_BSON_TO_JSON=<checkout dir> or `require('bson-to-json')`. Without one the
// bench says so and measures rumongo alone.
//
//   node --expose-gc bench/json_anchor.mjs [--quick] [--rounds N] [--only rumongo|bson-to-json]
//                                          [--datasets wide45,tweets,...] [--dump DIR]
//
// `--only` times one side (for `perf stat` / valgrind, which see the whole process); `--dump`
// writes each dataset's replies to DIR/<dataset>-<n>.bson (to profile a transcoder outside Node). Part of
// `npm run bench` (run.mjs forks it and gets the report over IPC); runnable alone.
import { mkdirSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { BSON, Double, Int32, Long } from 'mongodb'
import { GENERATORS } from './lib/datasets.mjs'
import { median, runAndReport } from './lib/report.mjs'

const require = createRequire(import.meta.url)
// One rayon thread: the rates are per core, as bson-to-json's (which has one thread).
process.env.RAYON_NUM_THREADS = '1'

/** Batches of 4 MiB, each a `{ batch: [...] }` document as a server reply carries it. */
const BATCH_BYTES = 4 * 1024 * 1024

/** Documents per dataset: up to `documents`, and past that until `bytes` of BSON (small documents). */
const SIZES = {
  quick: { documents: 20_000, bytes: 12e6, rounds: 7 },
  full: { documents: 20_000, bytes: 16e6, rounds: 9 },
}

const ESCAPED_TEXTS = [
  'He said "hello" and left\\n',
  'tab\there, newline\nthere, a quote " and a backslash \\',
  'naïve café, crème brûlée, Ærøskøbing',
  '日本語のテキストと “引用符” と \u0001 制御文字',
  'emoji 🎉🚀 and a path C:\\Users\\x',
  'Line one\r\nLine two\u001f end',
]

/** Strings only, a third of them with bytes to escape, most with non-ASCII text. */
function stringDocument(n) {
  const document = { _id: GENERATORS.orders(n)._id }
  for (let field = 0; field < 12; field++) {
    const text = ESCAPED_TEXTS[(n + field) % ESCAPED_TEXTS.length]
    document[`t${field}`] =
      field % 3 === 0 ? `${text} #${n}` : `${text.replace(/["\\\n\r\t\u0001\u001f]/g, ' ')} ${n}`
  }
  return document
}

/** Numbers only: doubles of many magnitudes and decimals, int32, int64 within 2^53. */
function numberDocument(n) {
  const document = { n: new Int32(n) }
  for (let field = 0; field < 10; field++) {
    const x = Math.imul(n + 1, 2654435761 + field) >>> 0
    document[`d${field}`] = new Double(
      [x / 100, x / 7, x * 1e-9, x * 1e12, -x / 3, Math.sqrt(x)][(field + n) % 6],
    )
    document[`i${field}`] = new Int32((x % 2_000_000) - 1_000_000)
  }
  document.big = Long.fromNumber(n * 1e6 + 123)
  return document
}

const DATASETS = {
  wide45: GENERATORS.wide45,
  tweets: GENERATORS.tweets,
  orders: GENERATORS.orders,
  strings: stringDocument,
  numbers: numberDocument,
}

/** The `{ batch: [...] }` replies of a dataset's documents (see SIZES), cut at BATCH_BYTES. */
function replies(generate, { documents, bytes: minimumBytes }) {
  const result = []
  let current = []
  let bytes = 0
  const flush = () => {
    if (current.length === 0) return
    result.push({ count: current.length, reply: Buffer.from(BSON.serialize({ batch: current })), bytes })
    current = []
    bytes = 0
  }
  let total = 0
  for (let n = 0; n < documents || total < minimumBytes; n++) {
    const document = generate(n)
    const size = BSON.calculateObjectSize(document)
    if (bytes + size > BATCH_BYTES) flush()
    current.push(document)
    bytes += size
    total += size
  }
  flush()
  return result
}

/** bson-to-json's Transcoder, or why it cannot be loaded. */
function loadAnchor() {
  const candidates = [
    process.env.RUMONGO_BSON_TO_JSON &&
      join(process.env.RUMONGO_BSON_TO_JSON, 'build', 'Release', 'bsonToJson.node'),
    'bson-to-json/build/Release/bsonToJson.node',
  ].filter(Boolean)
  const failures = []
  for (const candidate of candidates) {
    try {
      return { Transcoder: require(candidate).Transcoder, from: candidate }
    } catch (error) {
      failures.push(`${candidate}: ${error.message.split('\n')[0]}`)
    }
  }
  return {
    missing:
      'bson-to-json skipped: no local build of its source (set RUMONGO_BSON_TO_JSON to a checkout ' +
      `built with node-gyp; it is not on the npm registry). Tried ${failures.join('; ')}`,
  }
}

const OPEN = Buffer.from('{"batch":')

/** The contenders: `run(batch)` returns the batch's documents as a JSON array text, in pieces. */
function contenders(anchor) {
  const rumongo = (id, { encodeTestBatch }) => {
    if (typeof encodeTestBatch !== 'function')
      throw new Error(`${id}: no encodeTestBatch: build with the test hooks (npm run build:test)`)
    return {
      id,
      run: ({ reply }) => {
        const batch = encodeTestBatch(reply, 'plainJson')
        // Every document must be transcoded natively: a deferred one would be js-bson's work.
        if (batch.jsonDeferred.length !== 0) throw new Error(`${id} deferred a document to JS`)
        return batch.json
      },
      text: (pieces) => Buffer.concat([Buffer.from('['), ...pieces, Buffer.from(']')]),
    }
  }
  const all = [rumongo('rumongo', require('../dist/native.cjs'))]
  // Another build of the addon (another branch's dist/*.node, test hooks in), for a before /
  // after table taken in the same process.
  if (process.env.RUMONGO_BASELINE_NATIVE)
    all.push(rumongo('rumongo-baseline', require(process.env.RUMONGO_BASELINE_NATIVE)))
  if (anchor.Transcoder) {
    const transcoder = new anchor.Transcoder()
    all.push({
      id: 'bson-to-json',
      run: ({ reply }) => [transcoder.transcode(reply)],
      // `{"batch":[...]}`: the array is the same text.
      text: ([whole]) => {
        if (!whole.subarray(0, OPEN.length).equals(OPEN)) throw new Error('bson-to-json: unexpected output')
        return whole.subarray(OPEN.length, whole.length - 1)
      },
    })
  }
  return all
}

/**
 * How the texts differ: identical, identical once rumongo's `Long` objects (JSON.stringify of
 * the official driver's Long beyond 2^53) read as the full numbers bson-to-json writes (its
 * documented exception), or the first difference.
 */
function compareTexts(ours, theirs) {
  if (ours.equals(theirs)) return 'identical'
  const longs = /\{"high":(-?\d+),"low":(-?\d+),"unsigned":false\}/g
  let count = 0
  const normalized = ours.toString().replace(longs, (_, high, low) => {
    count++
    return String((BigInt(high) << 32n) | BigInt(low >>> 0))
  })
  if (normalized === theirs.toString())
    return `identical but ${count} Long beyond 2^53 (bson-to-json: full number)`
  const a = normalized
  const b = theirs.toString()
  let at = 0
  while (at < a.length && a[at] === b[at]) at++
  return `DIFFERENT at ${at}: rumongo ${JSON.stringify(a.slice(at - 20, at + 40))} vs ${JSON.stringify(b.slice(at - 20, at + 40))}`
}

/** The official rendering of the first batch: rumongo's text must equal it byte for byte. */
function officialText({ reply }) {
  return Buffer.from(JSON.stringify(BSON.deserialize(reply).batch))
}

async function measure(batches, all, rounds) {
  const times = new Map(all.map(({ id }) => [id, []]))
  for (let round = 0; round < rounds + 1; round++) {
    const order = round % 2 === 0 ? all : all.toReversed()
    for (const contender of order) {
      // Outputs of earlier rounds are freed first (Node frees native Buffers in a later turn).
      globalThis.gc?.()
      await new Promise((resolve) => setImmediate(resolve))
      const start = performance.now()
      const startCpu = process.cpuUsage()
      const startFaults = process.resourceUsage().minorPageFault
      for (const batch of batches) contender.run(batch)
      const faults = process.resourceUsage().minorPageFault - startFaults
      const { user, system } = process.cpuUsage(startCpu)
      const elapsed = performance.now() - start
      // round 0 warms up
      if (round > 0) times.get(contender.id).push({ wallMs: elapsed, cpuMs: (user + system) / 1000, faults })
    }
  }
  return times
}

async function main() {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      rounds: { type: 'string' },
      only: { type: 'string' },
      datasets: { type: 'string' },
      dump: { type: 'string' },
    },
  })
  const sizes = SIZES[values.quick ? 'quick' : 'full']
  const rounds = Number(values.rounds ?? sizes.rounds)
  const anchor = loadAnchor()
  let all = contenders(anchor)
  if (values.only) all = all.filter(({ id }) => id === values.only)
  const names = values.datasets ? values.datasets.split(',') : Object.keys(DATASETS)
  const rows = []
  for (const name of names) {
    const batches = replies(DATASETS[name], sizes)
    const documents = batches.reduce((sum, batch) => sum + batch.count, 0)
    if (values.dump) {
      mkdirSync(values.dump, { recursive: true })
      batches.forEach(({ reply }, n) => writeFileSync(join(values.dump, `${name}-${n}.bson`), reply))
    }
    const bsonBytes = batches.reduce((sum, batch) => sum + batch.bytes, 0)
    const texts = new Map(all.map((contender) => [contender.id, contender.text(contender.run(batches[0]))]))
    const ours = texts.get('rumongo')
    let outputs = ''
    if (ours) {
      if (!ours.equals(officialText(batches[0])))
        throw new Error(`${name}: rumongo's text is not JSON.stringify of the official documents`)
      outputs = texts.has('bson-to-json') ? compareTexts(ours, texts.get('bson-to-json')) : ''
      if (texts.has('rumongo-baseline') && !ours.equals(texts.get('rumongo-baseline')))
        throw new Error(`${name}: rumongo's text differs from the baseline build's`)
    }
    const times = await measure(batches, all, rounds)
    const theirs = times.get('bson-to-json')
    const rates = (list, key) => list && bsonBytes / 1e6 / (median(list.map((time) => time[key])) / 1000)
    // Each round's own ratio (the pair ran back to back), sorted: the median and the spread.
    const ratios = (ours, key) =>
      ours && theirs && theirs.map((time, i) => time[key] / ours[i][key]).toSorted((a, b) => a - b)
    for (const { id } of all.filter(({ id }) => id !== 'bson-to-json')) {
      rows.push({
        dataset: name,
        contender: id,
        documents,
        batches: batches.length,
        bsonMB: bsonBytes / 1e6,
        rumongo: { cpu: rates(times.get(id), 'cpuMs'), wall: rates(times.get(id), 'wallMs') },
        anchor: { cpu: rates(theirs, 'cpuMs'), wall: rates(theirs, 'wallMs') },
        // Page faults (first touches of fresh output pages, mostly) per MB of BSON, median round.
        faultsPerMB: {
          rumongo: median(times.get(id).map(({ faults }) => faults)) / (bsonBytes / 1e6),
          anchor: theirs && median(theirs.map(({ faults }) => faults)) / (bsonBytes / 1e6),
        },
        cpuRatios: ratios(times.get(id), 'cpuMs'),
        wallRatios: ratios(times.get(id), 'wallMs'),
        outputs: id === 'rumongo' ? outputs : '',
      })
    }
  }
  return { ok: true, markdown: markdown(rows, anchor, rounds), data: { rounds, anchor: anchor.from, rows } }
}

function markdown(rows, anchor, rounds) {
  const rate = (value) => (value === undefined ? '-' : value.toFixed(0))
  const ratio = (list) =>
    list ? `${median(list).toFixed(2)}x (${list[0].toFixed(2)}–${list.at(-1).toFixed(2)})` : '-'
  const header = [
    'dataset',
    'docs',
    'BSON MB',
    'rumongo MB/s CPU (wall)',
    'bson-to-json MB/s CPU (wall)',
    'ratio CPU (min–max)',
    'ratio wall (min–max)',
    'page faults / MB (bson-to-json)',
    'outputs',
  ]
  const lines = rows.map((row) => [
    row.contender === 'rumongo' ? row.dataset : `${row.dataset} (${row.contender})`,
    row.documents,
    row.bsonMB.toFixed(1),
    `${rate(row.rumongo.cpu)} (${rate(row.rumongo.wall)})`,
    `${rate(row.anchor.cpu)} (${rate(row.anchor.wall)})`,
    ratio(row.cpuRatios),
    ratio(row.wallRatios),
    `${row.faultsPerMB.rumongo.toFixed(0)} (${row.faultsPerMB.anchor?.toFixed(0) ?? '-'})`,
    row.outputs,
  ])
  return [
    '## BSON -> JSON per core: rumongo vs bson-to-json',
    '',
    `Plain JSON (\`JSON.stringify\` of the official documents), batches of 4 MiB, one thread each, ${rounds} interleaved rounds after a warm-up. MB of BSON per second of the process's CPU time (user + system: page faults included; robust to a loaded machine, where a thread waits for a core) and of wall time, medians; ratio: the median of each round's bson-to-json time / rumongo time (higher: rumongo faster).`,
    anchor.missing ? `\n${anchor.missing}` : `bson-to-json: ${anchor.from}`,
    '',
    ...[header, header.map(() => '---'), ...lines].map((cells) => `| ${cells.join(' | ')} |`),
  ].join('\n')
}

await runAndReport(main)
