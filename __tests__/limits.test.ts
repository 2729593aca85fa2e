// Extreme but valid input through every read path: 10,000 levels of nesting (which the native
// stack must survive: the tape hands anything deeper than 100 levels to js-bson), a 15 MB string,
// and a document of the maximum BSON size (16 MiB). Decoded exactly, or a clear error; never a crash.
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EJSON } from 'bson'
import { BSON, MongoClient as OfficialClient, type Document } from 'mongodb'
import { MongoClient, MongoRuntimeError, type LazyDocument } from 'rumongo'
import { rawBatch } from './setup/bson_corpus.js'
import { expectIdentical, uniqueDbName, uri } from './setup/helpers.js'
import { serveDocuments, type ServedReplay } from './setup/replay.js'

const require = createRequire(import.meta.url)
const { encodeTestBatch } = require('../dist/native.cjs')
const { createDecoder } = require('../dist/format/index.js')
const { lazyDocument } = require('../dist/format/lazy.js') as {
  lazyDocument(bytes: Uint8Array, options: Document): LazyDocument<any>
}
const { DEFAULT_BSON_OPTIONS } = require('../dist/bson.js')

const DEPTH = 10_000
type Nesting = 'documents' | 'arrays'

/**
 * `{ a: { a: ... {} } }` or `{ a: [[ ... [] ]] }`, `depth` levels below the top, built byte by byte
 * (js-bson's serializer recurses once per level).
 */
function nested(depth: number, nesting: Nesting): Buffer {
  const type = nesting === 'documents' ? 0x03 : 0x04
  const bytes = Buffer.alloc(8 * depth + 5)
  for (let level = 0; level < depth; level++) {
    const at = 7 * level
    bytes.writeInt32LE(8 * (depth - level) + 5, at)
    bytes[at + 4] = type
    bytes[at + 5] = level === 0 || nesting === 'documents' ? 0x61 : 0x30 // 'a', or the index '0'
    bytes[at + 6] = 0
  }
  bytes.writeInt32LE(5, 7 * depth)
  return bytes
}

/** Walks down `depth` levels without recursion and checks the innermost value is empty. */
function expectNested(value: any, depth: number, nesting: Nesting): void {
  for (let level = 0; level < depth; level++) {
    value = level === 0 || nesting === 'documents' ? value.a : value[0]
    expect(typeof value, `level ${level + 1}`).toBe('object')
  }
  expect(nesting === 'arrays' ? Array.isArray(value) : !Array.isArray(value)).toBe(true)
  expect(Object.keys(value)).toEqual([])
}

const decodeDirect = (bytes: Buffer, tape: boolean) =>
  createDecoder(DEFAULT_BSON_OPTIONS).decodeBatch(
    encodeTestBatch(rawBatch([bytes]), tape ? 'tape' : 'raw'),
  )[0]

describe('10,000 levels of nesting', () => {
  describe.each(['documents', 'arrays'] as const)('of %s', (nesting) => {
    const bytes = nested(DEPTH, nesting)

    it('js-bson (the official driver) decodes it: so does rumongo', () => {
      expectNested(BSON.deserialize(bytes), DEPTH, nesting)
    })

    it('the tape (js-bson below level 100) and the js-bson path', () => {
      const batch = encodeTestBatch(rawBatch([bytes]), 'tape')
      expect(batch.slots).toBeInstanceOf(Float64Array)
      expectNested(decodeDirect(bytes, true), DEPTH, nesting)
      expectNested(decodeDirect(bytes, false), DEPTH, nesting)
    })

    it('a lazy document, field by field and whole', () => {
      const lazy = lazyDocument(bytes, DEFAULT_BSON_OPTIONS)
      expectNested(lazy, DEPTH, nesting)
      expectNested(lazy.toObject(), DEPTH, nesting)
    })
  })

  it('100,000 levels: js-bson (the official driver) decodes it, and so does every direct path', () => {
    for (const nesting of ['documents', 'arrays'] as const) {
      const bytes = nested(100_000, nesting)
      expectNested(BSON.deserialize(bytes), 100_000, nesting)
      expectNested(decodeDirect(bytes, true), 100_000, nesting)
      expectNested(decodeDirect(bytes, false), 100_000, nesting)
      // Field by field (each level a lazy document or array of its own), and whole.
      expectNested(lazyDocument(bytes, DEFAULT_BSON_OPTIONS), 100_000, nesting)
      expectNested(lazyDocument(bytes, DEFAULT_BSON_OPTIONS).toObject(), 100_000, nesting)
    }
  })

  describe('through a find served by the replay server', () => {
    let server: ServedReplay
    let client: MongoClient

    beforeAll(async () => {
      server = await serveDocuments({
        documents: [nested(DEPTH, 'documents')],
        arrays: [nested(DEPTH, 'arrays')],
      })
      client = await MongoClient.connect(server.uri)
    }, 600_000)

    afterAll(async () => {
      await client?.close()
      await server?.stop()
    })

    it.each(['documents', 'arrays'] as const)('of %s: find, raw and findLazy', async (nesting) => {
      const collection = client.db('bench').collection(nesting)
      const [document] = await collection.find({}).toArray()
      expectNested(document, DEPTH, nesting)
      const [raw] = await collection.find({}, { raw: true }).toArray()
      expect(Buffer.compare(Buffer.from(raw as unknown as Uint8Array), nested(DEPTH, nesting))).toBe(0)
      const [lazy] = await collection.findLazy({})
      expectNested(lazy, DEPTH, nesting)
      // JSON: the text JavaScript gives for the decoded document, or the error it raises.
      for (const format of ['relaxed', 'plain'] as const) {
        let expected: string | undefined
        try {
          expected =
            format === 'plain' ? JSON.stringify([document]) : EJSON.stringify([document], { relaxed: true })
        } catch {
          expected = undefined
        }
        const json = collection.findJson({}, { format })
        if (expected === undefined) await expect(json, format).rejects.toThrow()
        else expect((await json).toString(), format).toBe(expected)
      }
    })
  })
})

describe('huge values on the real server', () => {
  const dbName = uniqueDbName('limits')
  let official: OfficialClient
  let client: MongoClient
  /** The maximum BSON document size (mongod's and FerretDB's `maxBsonObjectSize`). */
  const MAX_BSON_SIZE = 16 * 1024 * 1024

  beforeAll(async () => {
    official = await OfficialClient.connect(uri)
    client = await MongoClient.connect(uri)
    const overhead = BSON.calculateObjectSize({ _id: 'max', s: '' })
    const big = official.db(dbName).collection('big')
    // One insert each: a 16 MiB document fills an insert command on its own.
    await big.insertOne({ _id: 'ascii', s: 'x'.repeat(15 * 1024 * 1024) } as Document)
    // 3-byte UTF-8 characters: the tape's UTF-8 text and its UTF-16 offsets.
    await big.insertOne({ _id: 'utf8', s: '€'.repeat(5 * 1024 * 1024), after: 'ok' } as Document)
    await big.insertOne({ _id: 'max', s: 'y'.repeat(MAX_BSON_SIZE - overhead) } as Document)
  }, 120_000)

  afterAll(async () => {
    await official?.db(dbName).dropDatabase()
    await Promise.all([official?.close(), client?.close()])
  })

  it('a 15 MB string, a 15 MB UTF-8 string and a 16 MiB document: find, findOne, findLazy, raw', async () => {
    const expected = await official.db(dbName).collection('big').find({}).toArray()
    expect(BSON.calculateObjectSize(expected[2]!)).toBe(MAX_BSON_SIZE)
    const big = client.db(dbName).collection('big')
    // One document per batch: mongod caps a batch at 16 MiB, FerretDB does not, and its 46 MB reply
    // exceeds the 48 MB message limit it announces, which the Rust driver enforces (below).
    const oneEach = { batchSize: 1 }
    expectIdentical(await big.find({}, oneEach).toArray(), expected)
    expectIdentical(await big.findOne({ _id: 'max' } as Document), expected[2])
    const lazy = await big.findLazy({}, oneEach)
    expect(lazy.map((document) => document.s)).toEqual(expected.map((document) => document.s))
    expectIdentical(
      lazy.map((document) => document.toObject()),
      expected,
    )
    const raw = await big.find({}, { ...oneEach, raw: true }).toArray()
    expect(raw.map((bytes) => (bytes as unknown as Uint8Array).byteLength)).toEqual(
      expected.map((document) => BSON.calculateObjectSize(document)),
    )
    expect((await big.findJson({}, { ...oneEach, format: 'plain' })).toString()).toBe(
      JSON.stringify(expected),
    )
  })

  it("a reply over the server's message size limit is a clear error (FerretDB), or the documents (mongod)", async () => {
    const expected = await official.db(dbName).collection('big').find({}).toArray()
    try {
      expectIdentical(await client.db(dbName).collection('big').find({}).toArray(), expected)
    } catch (error) {
      expect(error).toBeInstanceOf(MongoRuntimeError)
      expect((error as Error).message).toMatch(/over maximum/)
    }
    expect(await client.db(dbName).collection('big').countDocuments({})).toBe(3)
  })

  it('the same documents through the native entry directly', () => {
    const documents = [{ s: 'x'.repeat(15 * 1024 * 1024) }, { s: '€'.repeat(5 * 1024 * 1024), after: 'ok' }]
    const bytes = documents.map((document) => Buffer.from(BSON.serialize(document)))
    for (const tape of [true, false]) {
      expectIdentical(
        createDecoder(DEFAULT_BSON_OPTIONS).decodeBatch(
          encodeTestBatch(rawBatch(bytes), tape ? 'tape' : 'raw'),
        ),
        documents,
      )
    }
  })
})
