// Which JS Arrow library wraps rumongo's IPC bytes faster: apache-arrow or @uwdata/flechette.
// Builds 100k wide45 documents into Arrow IPC with rumongo's encoder (as findArrow does, in record
// batches of ~16 MiB of BSON, held in Rust as one IPC stream), then times each library reading the
// stream (the one Buffer findArrow hands over, no copy) and summing one int32 and one double column, and reading every string of one
// utf8 column. Usage: node bench/arrow_readers.mjs [rows]
import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'
import { BSON } from 'bson'
import * as arrow from 'apache-arrow'
import * as flechette from '@uwdata/flechette'
import { wide45Document } from './lib/datasets.mjs'

const require = createRequire(import.meta.url)
// The test hook `encodeTestBatch` (a `build:test` build): raw batches as a cursor hands them over.
const { NativeArrowEncoder, encodeTestBatch } = require('../dist/native.cjs')

const rows = Number(process.argv[2] ?? 100_000)
const RECORD_BATCH_BSON = 16 * 1024 * 1024

// Raw batches (handles the encoder takes) as findArrow gathers them: ~16 MiB of BSON each.
const parts = []
const counts = []
let current = []
let bytes = 0
for (let n = 0; n < rows; n++) {
  const document = wide45Document(n)
  current.push(document)
  bytes += BSON.calculateObjectSize(document)
  if (bytes >= RECORD_BATCH_BSON || n === rows - 1) {
    parts.push(encodeTestBatch(BSON.serialize({ batch: current }), 'arrowRaw').rawBatch)
    counts.push(current.length)
    current = []
    bytes = 0
  }
}
const encoder = new NativeArrowEncoder({ objectIdHex: false, mismatchError: false })
let recordBatches = 0
for (let i = 0; i < parts.length; i++)
  recordBatches += (await encoder.encode([parts[i]], [counts[i]], true, true)).recordBatches
const ipc = await encoder.finishStream(undefined)
const ipcBytes = ipc.length

function sumValues(dataChunks) {
  let sum = 0
  for (const { values, offset, length } of dataChunks)
    for (let i = offset; i < offset + length; i++) sum += values[i]
  return sum
}

const readers = {
  'apache-arrow': {
    open: () => arrow.tableFromIPC(ipc),
    sum: (table, name) => sumValues(table.getChild(name).data),
    strings: (table, name) => {
      let length = 0
      for (const text of table.getChild(name)) length += text.length
      return length
    },
  },
  flechette: {
    open: () => flechette.tableFromIPC(ipc, { useProxy: false }),
    // flechette's batches have no offset: their values start at 0.
    sum: (table, name) =>
      sumValues(table.getChild(name).data.map(({ values, length }) => ({ values, offset: 0, length }))),
    strings: (table, name) => {
      let length = 0
      for (const text of table.getChild(name)) length += text.length
      return length
    },
  },
}

const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]
const time = (work) => {
  const start = performance.now()
  const result = work()
  return [performance.now() - start, result]
}

console.log(`${rows} wide45 rows, ${recordBatches} record batches, ${(ipcBytes / 1e6).toFixed(1)} MB of IPC`)
console.log('| library | wrap ms | sum int32 n + double d01 ms | read utf8 s01 ms | total ms |')
console.log('| --- | --- | --- | --- | --- |')
for (const [name, reader] of Object.entries(readers)) {
  const runs = { wrap: [], sum: [], strings: [] }
  let check
  for (let run = 0; run < 15; run++) {
    const [wrapMs, table] = time(reader.open)
    const [sumMs, sum] = time(() => reader.sum(table, 'n') + reader.sum(table, 'd01'))
    const [stringsMs, length] = time(() => reader.strings(table, 's01'))
    check ??= `${table.numRows} rows, sum ${sum}, ${length} chars`
    if (run >= 5) {
      runs.wrap.push(wrapMs)
      runs.sum.push(sumMs)
      runs.strings.push(stringsMs)
    }
  }
  const [wrap, sum, strings] = [median(runs.wrap), median(runs.sum), median(runs.strings)]
  console.log(
    `| ${name} | ${wrap.toFixed(2)} | ${sum.toFixed(2)} | ${strings.toFixed(2)} | ${(wrap + sum + strings).toFixed(2)} |  (${check})`,
  )
}
