// The JSON transcoder (src/format/json.rs) through the test hook: its string scan sixteen bytes at
// a time, and the memory of its text, written into the buffer of a batch JS no longer holds
// (src/handover.rs, TextBuffer), never into one it still holds.
import { createRequire } from 'node:module'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import { BSON } from 'mongodb'

const require = createRequire(import.meta.url)
const { encodeTestBatch, testSpareTextBytes } = require('../dist/native.cjs')

setFlagsFromString('--expose-gc')
const collectGarbage: () => void = runInNewContext('gc')

/** A `{ batch: [...] }` reply of about 3 MB: several parts of text, each kept as a spare once freed. */
function reply(seed: number) {
  const documents = Array.from({ length: 12_000 }, (_, n) => ({
    n: n + seed,
    text: `document ${n} of batch ${seed}, "quoted" and naïve `.repeat(4),
    values: [n * 1.5, -n, seed],
  }))
  return { bytes: BSON.serialize({ batch: documents }), text: JSON.stringify(documents) }
}

const transcode = (bytes: Uint8Array): Buffer[] => encodeTestBatch(bytes, 'plainJson').json

/** Collects garbage until the spares hold something (finalizers run in a later turn), at most 50 times. */
async function sparesAfterCollection(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    collectGarbage()
    await nextTurn()
    if (testSpareTextBytes() > 0) break
  }
  return testSpareTextBytes()
}

describe('JSON text buffers', () => {
  it('are reused for later batches once JS dropped them, never while JS holds them', async () => {
    const first = reply(1)
    const held = transcode(first.bytes)
    expect(held.length).toBeGreaterThan(1)
    // Batches JS drops at once: their buffers become spares, taken by the batches after them.
    for (let round = 0; round < 3; round++) {
      const other = reply(100 + round)
      expect(Buffer.concat(transcode(other.bytes)).toString()).toBe(other.text.slice(1, -1))
      const spare = await sparesAfterCollection()
      expect(spare).toBeGreaterThan(0)
      const next = transcode(other.bytes)
      // The next batch's text went into spare buffers.
      expect(testSpareTextBytes()).toBeLessThan(spare)
      expect(Buffer.concat(next).toString()).toBe(other.text.slice(1, -1))
    }
    // The buffers JS held all along were never written into.
    expect(Buffer.concat(held).toString()).toBe(first.text.slice(1, -1))
  })
})

describe('JSON strings', () => {
  it('are JSON.stringify text at every length, with an escape or a non-ASCII character anywhere', () => {
    // Lengths around the scan's 16-byte blocks, its overlapping last block and the short windows
    // (8 to 96 bytes); each special character at each position of each length.
    const specials = ['"', '\\', '\n', '\u0000', '\u001f', '\u007f', 'é', '日', '🎉', '\u2028']
    const documents = []
    for (let length = 0; length <= 130; length++) {
      documents.push({ text: 'a'.repeat(length) })
      for (const special of specials) {
        for (let at = 0; at < length; at++) {
          documents.push({ text: 'a'.repeat(at) + special + 'b'.repeat(length - at - 1) })
        }
        // Two of them: the scan goes on past the first.
        if (length >= 2) documents.push({ text: special + 'c'.repeat(length - 2) + special })
      }
    }
    const text = Buffer.concat(transcode(BSON.serialize({ batch: documents }))).toString()
    expect(text).toBe(JSON.stringify(documents).slice(1, -1))
  })
})
