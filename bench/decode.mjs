// Decode-only micro bench: the same raw BSON batches turned into JS documents by
//   - js-bson `BSON.deserialize` per document (what the official driver does),
//   - `JSON.parse` of the equivalent JSON (ObjectId and Date as strings), one string per batch,
//   - rumongo: `encodeTestBatch` (Rust side: the batch as it crosses from Rust; run synchronously
//     here, off the main thread in real queries) and `createDecoder().decodeBatch` (JS side).
// No network: documents are fetched once from a server (--uri) or generated locally.
//
//   node --expose-gc bench/decode.mjs [--quick] [--uri <mongodb uri> --db <db>]
//
// Part of `npm run bench` (run.mjs forks it and gets the report over IPC); runnable alone.
import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { BSON } from 'mongodb'
import { GENERATORS, wide45Projection } from './lib/datasets.mjs'
import { formatCount, median, runAndReport } from './lib/report.mjs'

const require = createRequire(import.meta.url)
// One rayon thread: the Rust rates below are per core (a real query splits batches over 1 MiB
// across every core). Read by the addon when its thread pool starts, on first use.
process.env.RAYON_NUM_THREADS = '1'

/** Server replies carry at most 16 MiB of documents: batches are cut the same way. */
const BATCH_BYTES = 16 * 1024 * 1024

/** What is decoded: wide45 whole and projected to 9 fields (as the server would send it), tweets. */
const DATASETS = [
  { id: 'wide45-45', dataset: 'wide45', fieldCount: 45 },
  { id: 'wide45-9', dataset: 'wide45', fieldCount: 9 },
  { id: 'tweets', dataset: 'tweets' },
]

const SIZES = {
  quick: { documents: 20_000, warmups: 1, runs: 3 },
  full: { documents: 100_000, warmups: 1, runs: 5 },
}

/** Documents with their BSON types kept (Int32, Double, Long wrappers), so re-serializing is exact. */
async function fetchDocuments({ uri, db }, { dataset, fieldCount }, count) {
  if (!uri) {
    const projection = dataset === 'wide45' ? wide45Projection(fieldCount) : undefined
    return Array.from({ length: count }, (_, n) => {
      const document = GENERATORS[dataset](n)
      return projection
        ? Object.fromEntries(Object.keys(projection).map((field) => [field, document[field]]))
        : document
    })
  }
  const { MongoClient } = await import('mongodb')
  const client = await MongoClient.connect(uri)
  try {
    const projection = dataset === 'wide45' ? wide45Projection(fieldCount) : undefined
    return await client
      .db(db)
      .collection(dataset)
      .find({}, { projection, limit: count, promoteValues: false })
      .toArray()
  } finally {
    await client.close()
  }
}

/**
 * The inputs of every decoder for one dataset, prepared untimed: per batch, the `{ batch: [...] }`
 * reply document (encodeTestBatch's input), the documents' BSON back to back, and the JSON text.
 */
function prepareBatches(documents) {
  const batches = []
  let current = []
  let currentBytes = 0
  const flush = () => {
    if (current.length === 0) return
    const reply = Buffer.from(BSON.serialize({ batch: current }))
    const bytes = Buffer.concat(current.map((document) => BSON.serialize(document)))
    const json = JSON.stringify(current.map((document) => BSON.deserialize(BSON.serialize(document))))
    batches.push({ count: current.length, reply, bytes, json })
    current = []
    currentBytes = 0
  }
  for (const document of documents) {
    const size = BSON.calculateObjectSize(document)
    if (currentBytes + size > BATCH_BYTES) flush()
    current.push(document)
    currentBytes += size
  }
  flush()
  return batches
}

/** js-bson per document over the concatenated BSON, as the official driver decodes a batch. */
function deserializeEachDocument(batches) {
  const results = []
  for (const { bytes } of batches) {
    for (let offset = 0; offset < bytes.length;) {
      const length = bytes.readInt32LE(offset)
      results.push(BSON.deserialize(bytes.subarray(offset, offset + length)))
      offset += length
    }
  }
  return results
}

const totalLength = (arrays) => arrays.reduce((sum, array) => sum + array.length, 0)

/**
 * The decoders: `run(batches, state)` is timed, `count(result)` is not. `state` carries rumongo's
 * encoded batches from its encode step to its decode step.
 */
function decoders() {
  const { encodeTestBatch } = require('../dist/native.cjs')
  const { createDecoder } = require('../dist/format/index.js')
  const { DEFAULT_BSON_OPTIONS } = require('../dist/bson.js')
  if (typeof encodeTestBatch !== 'function')
    throw new Error(
      'dist/native.cjs has no encodeTestBatch: rebuild with the test hooks (npm run build:test)',
    )
  const decoder = createDecoder(DEFAULT_BSON_OPTIONS)
  return [
    {
      id: 'js-bson',
      label: 'js-bson deserialize per doc (official driver)',
      run: (batches) => deserializeEachDocument(batches),
      count: (documents) => documents.length,
    },
    {
      id: 'json',
      label: 'JSON.parse per batch',
      run: (batches) => batches.map(({ json }) => JSON.parse(json)),
      count: totalLength,
    },
    {
      id: 'rumongo-encode',
      label: 'rumongo encode (Rust, encodeTestBatch)',
      note: 'off the main thread in real queries',
      run: (batches, state) => (state.encoded = batches.map(({ reply }) => encodeTestBatch(reply, 'tape'))),
      count: (encoded) => encoded.reduce((sum, batch) => sum + batch.count, 0),
    },
    {
      id: 'rumongo-decode',
      label: 'rumongo decode (JS, decodeBatch)',
      run: (batches, state) => state.encoded.map((batch) => decoder.decodeBatch(batch)),
      count: totalLength,
    },
    {
      id: 'js-bson-stringify',
      label: 'js-bson deserialize + JSON.stringify per doc',
      note: 'what findJson replaces',
      run: (batches) => deserializeEachDocument(batches).map((document) => JSON.stringify(document)),
      count: (texts) => texts.length,
    },
    ...['relaxedJson', 'plainJson'].map((output) => ({
      id: `rumongo-${output}`,
      label: `rumongo BSON to JSON (Rust, ${output === 'relaxedJson' ? 'relaxed EJSON' : 'plain'})`,
      note: 'one core; off the main thread in findJson / pipeJson',
      run: (batches) => batches.map(({ reply }) => encodeTestBatch(reply, output)),
      count: (encoded) => encoded.reduce((sum, batch) => sum + batch.count, 0),
    })),
  ]
}

/**
 * Times each decoder over the batches, runs interleaved so drift hits every decoder alike. Between
 * runs the event loop turns once: Node frees the memory of Buffers made by native code (rumongo's
 * outputs) in a later turn, never inside a synchronous loop, where every run would write into
 * freshly mapped pages as no real program does.
 */
async function measureDataset(batches, documentCount, { warmups, runs }) {
  const state = {}
  const all = decoders()
  const times = new Map(all.map((decoder) => [decoder.id, []]))
  for (let index = 0; index < warmups + runs; index++) {
    for (const decoder of all) {
      globalThis.gc?.()
      await new Promise((resolve) => setImmediate(resolve))
      const start = performance.now()
      const result = decoder.run(batches, state)
      const elapsed = performance.now() - start
      const count = decoder.count(result)
      if (count !== documentCount)
        throw new Error(`${decoder.id} produced ${count} documents, expected ${documentCount}`)
      if (index >= warmups) times.get(decoder.id).push(elapsed)
    }
  }
  return all.map(({ id, label, note }) => ({ id, label, note, times: times.get(id) }))
}

/** One table row per (dataset, decoder). */
function rowsFor(dataset, documentCount, bsonBytes, jsonBytes, measured) {
  return measured.map(({ id, label, note, times }) => {
    const ms = median(times)
    return {
      dataset: dataset.id,
      documents: documentCount,
      bsonMB: bsonBytes / 1e6,
      decoder: id,
      label,
      medianMs: ms,
      minMs: Math.min(...times),
      maxMs: Math.max(...times),
      mbPerSecond: bsonBytes / 1e6 / (ms / 1000),
      docsPerSecond: documentCount / (ms / 1000),
      msPer100k: (ms * 100_000) / documentCount,
      notes: id === 'json' ? `${(jsonBytes / 1e6).toFixed(1)} MB of JSON` : (note ?? ''),
    }
  })
}

function markdown(rows, source) {
  const header = [
    'dataset',
    'docs',
    'BSON MB',
    'decoder',
    'median ms',
    'spread min–max',
    'MB/s (BSON)',
    'docs/s',
    'main-thread ms / 100k docs',
    'notes',
  ]
  const lines = rows.map((row) => [
    row.dataset,
    formatCount(row.documents),
    row.bsonMB.toFixed(1),
    row.label,
    row.medianMs.toFixed(1),
    `${row.minMs.toFixed(1)}–${row.maxMs.toFixed(1)}`,
    row.mbPerSecond.toFixed(0),
    `${(row.docsPerSecond / 1e6).toFixed(2)}M`,
    row.msPer100k.toFixed(0),
    row.notes,
  ])
  return [
    '## Decode only (no network, main thread)',
    '',
    `Documents from ${source}; batches cut at 16 MiB like server replies. Every decoder is synchronous on the main thread here.`,
    '',
    ...[header, header.map(() => '---'), ...lines].map((cells) => `| ${cells.join(' | ')} |`),
  ].join('\n')
}

async function main() {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      uri: { type: 'string' },
      db: { type: 'string', default: 'bench' },
    },
  })
  const sizes = SIZES[values.quick ? 'quick' : 'full']
  const source = values.uri
    ? `the server at ${values.uri} (db ${values.db})`
    : 'the local generators (bench/lib/datasets.mjs)'
  const rows = []
  for (const dataset of DATASETS) {
    const batches = prepareBatches(await fetchDocuments(values, dataset, sizes.documents))
    const bsonBytes = batches.reduce((sum, batch) => sum + batch.bytes.length, 0)
    const jsonBytes = batches.reduce((sum, batch) => sum + Buffer.byteLength(batch.json), 0)
    rows.push(
      ...rowsFor(
        dataset,
        sizes.documents,
        bsonBytes,
        jsonBytes,
        await measureDataset(batches, sizes.documents, sizes),
      ),
    )
  }
  return { ok: true, markdown: markdown(rows, source), data: { source, ...sizes, rows } }
}

await runAndReport(main)
