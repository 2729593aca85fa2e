// The tape decoder's optimized code survives a full GC. V8 drops optimized code that embeds an
// object the GC freed ("weak objects" deoptimization); the decoder's used to embed maps that die
// with the last batch (TapeReader's, and the addon's Buffers'), so every read after a full GC ran it
// unoptimized again: a lean Mongoose populate after a forced GC took about 16% more instructions.
import { createRequire } from 'node:module'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import { BSON, ObjectId } from 'mongodb'

// Internal modules of the built package: the decoder seam, below the public API.
const require = createRequire(import.meta.url)
const { encodeTestBatch } = require('../dist/native.cjs')
const { TapeReader } = require('../dist/format/tape.js')
const { createDecoder } = require('../dist/format/index.js')
const { DEFAULT_BSON_OPTIONS } = require('../dist/bson.js')

setFlagsFromString('--allow-natives-syntax')
setFlagsFromString('--expose-gc')
const fullGc = runInNewContext('gc') as () => void
const natives = (call: string) => new Function('f', `return ${call}(f)`) as (f: Function) => number
const prepareForOptimization = natives('%PrepareFunctionForOptimization')
const optimizeOnNextCall = natives('%OptimizeFunctionOnNextCall')
const optimizationStatus = natives('%GetOptimizationStatus')
/** V8's OptimizationStatus bit for a function with optimized code (src/runtime/runtime.h). */
const OPTIMIZED = 1 << 4

describe('tape decoder across a full GC', () => {
  it('keeps its optimized document and ObjectId readers when no batch is left alive', () => {
    // Keys no other test uses: the builders are shared by every decoder of the process.
    // The list's ObjectIds are read through `objectIdAt` (a builder may inline the `_id` read).
    const documents = Array.from({ length: 50 }, (_, n) => ({
      _id: new ObjectId(),
      gcProbeN: n,
      gcProbeIds: [new ObjectId(), new ObjectId()],
    }))
    const bytes = Buffer.from(BSON.serialize({ batch: documents }))
    const decoder = createDecoder(DEFAULT_BSON_OPTIONS)
    const decode = () => {
      const decoded = decoder.decodeBatch(encodeTestBatch(bytes, 'tape'))
      expect(decoded[49].gcProbeN).toBe(49)
      expect(decoded[49]._id.toHexString()).toBe(documents[49]._id.toHexString())
      expect(decoded[49].gcProbeIds[1].toHexString()).toBe(documents[49].gcProbeIds[1].toHexString())
    }
    const readers = [TapeReader.prototype.topLevelDocument, TapeReader.prototype.objectIdAt]
    readers.forEach(prepareForOptimization)
    decode()
    decode()
    readers.forEach(optimizeOnNextCall)
    decode()
    const optimized = () => readers.map((reader) => (optimizationStatus(reader) & OPTIMIZED) !== 0)
    expect(optimized()).toEqual([true, true])
    // Every batch, reader and document of the loop above is garbage now.
    fullGc()
    fullGc()
    expect(optimized()).toEqual([true, true])
    decode()
  })
})
