// The BSON corpus (the conformance vectors js-bson and the Rust crate test against) through every
// rumongo decoder: the tape, the js-bson path, raw documents, lazy documents, and a real `find`
// served by the replay server, which serves the corpus bytes untouched.
//
// - Every `valid` case (canonical and degenerate BSON) decodes to exactly what js-bson's
//   `deserialize` (the official driver) returns, values and types.
// - Every `decodeErrors` case surfaces as a JS error, never a crash. Which paths can carry a case
//   depends on its framing (see `CorpusFraming`): a document whose length prefix matches its bytes
//   travels everywhere a document does (inside a batch, inside a server reply, as a lazy document);
//   a document whose length prefix is wrong can only be handed to a decoder as a whole buffer (the
//   native entry's reply, a lazy document over it), and inside a batch it breaks the batch's own
//   framing, which must fail just as cleanly. The replay server splits its files by length prefix,
//   so it serves only the first kind.
// - With `raw: true` (no decoding), each broken document gives what the official driver gives: its
//   bytes when only a value is broken, an error when its element framing is (both drivers walk the
//   top-level elements of each raw document).
//
// To add a decode path, add one line to DIRECT_DECODERS below: it then runs every case, valid and
// invalid. The JSON output (findJson) is checked the same way against JSON.stringify /
// EJSON.stringify of js-bson's decode, below the decoders.
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EJSON } from 'bson'
import { BSON, MongoClient as OfficialClient, type Document } from 'mongodb'
import { BSONError, isLazyDocument, MongoClient, MongoError, type LazyDocument } from 'rumongo'
import {
  corpusDecodeErrors,
  corpusValidCases,
  rawBatch,
  type CorpusDecodeError,
  type CorpusValidCase,
} from './setup/bson_corpus.js'
import { BSON_OPTION_CASES, expectIdentical, officialDeserializeOptions } from './setup/helpers.js'
import { serveDocuments, type ServedReplay } from './setup/replay.js'

// Internal entry points of the built package: the native batch encoder and the decoders.
const require = createRequire(import.meta.url)
const { encodeTestBatch } = require('../dist/native.cjs')
const { createDecoder } = require('../dist/format/index.js')
const { lazyDocument } = require('../dist/format/lazy.js') as {
  lazyDocument(bytes: Uint8Array, options: Document): LazyDocument<any>
}
const { DEFAULT_BSON_OPTIONS } = require('../dist/bson.js')
const { batchJson } = require('../dist/format/json.js')

const JSON_FORMATS = ['relaxed', 'plain'] as const
type JsonFormat = (typeof JSON_FORMATS)[number]
/** What JavaScript gives for js-bson's decode (the official driver's documents) in each JSON format. */
const stringify = {
  relaxed: (documents: Document[]) => EJSON.stringify(documents, { relaxed: true }),
  plain: (documents: Document[]) => JSON.stringify(documents),
}
/** The JSON array findJson builds from these documents' bytes, through the native transcoder. */
const findJsonText = (documents: Buffer[], format: JsonFormat) => {
  const batch = encodeTestBatch(rawBatch(documents), format === 'plain' ? 'plainJson' : 'relaxedJson')
  return `[${Buffer.concat(batchJson(format, DEFAULT_BSON_OPTIONS)(batch)).toString()}]`
}
/** The official rendering of `documents` in `format`, or null where JavaScript itself throws. */
const officialJson = (documents: Document[], format: JsonFormat) => {
  try {
    return stringify[format](documents)
  } catch {
    return null
  }
}

const VALID = corpusValidCases()
const DECODE_ERRORS = corpusDecodeErrors()
const WELL_FRAMED_ERRORS = DECODE_ERRORS.filter((error) => error.framing === 'document')

/** Reads every field of a lazy document (recursively), which decodes all of it. */
function readAll(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(readAll)
  if (!isLazyDocument(value)) return value
  const plain: Document = {}
  for (const key of Reflect.ownKeys(value)) plain[key as string] = readAll((value as Document)[key as string])
  return plain
}

/** One document's bytes -> its decoded value, through one rumongo decode path. */
type DirectDecoder = (bytes: Buffer, options: Document) => unknown

/** The decode paths that take bytes directly (no server), each run on every corpus case. */
const DIRECT_DECODERS: [string, DirectDecoder][] = [
  [
    'tape',
    (bytes, options) => createDecoder(options).decodeBatch(encodeTestBatch(rawBatch([bytes]), 'tape'))[0],
  ],
  [
    'js-bson path',
    (bytes, options) => createDecoder(options).decodeBatch(encodeTestBatch(rawBatch([bytes]), 'raw'))[0],
  ],
  ['lazy', (bytes, options) => readAll(lazyDocument(bytes, options))],
]

/**
 * Where rumongo legitimately differs from js-bson on the corpus. A lazy document is a view of the
 * document at an offset of its batch (whose framing the native side checked): it reads the bytes its
 * length prefix covers and never looks past them, where the next document of the batch starts. So
 * bytes after a well-formed envelope, which js-bson's `deserialize` of the whole buffer rejects, are
 * not its concern; inside a batch (and from a server) the same bytes are an error, tested below.
 */
const LAZY_READS_THE_ENVELOPE = ['top: Stated length less than byte count, with garbage after envelope']

/** What the official driver decodes. */
const official = (bytes: Uint8Array, options: Document) =>
  BSON.deserialize(bytes, officialDeserializeOptions(options))

describe('valid corpus cases decode exactly as js-bson', () => {
  it.each([['defaults', {}], ...BSON_OPTION_CASES])('every direct decoder (%s)', (_, overrides) => {
    const options = { ...DEFAULT_BSON_OPTIONS, ...overrides }
    for (const [path, decode] of DIRECT_DECODERS) {
      for (const valid of VALID) {
        let expected: unknown
        try {
          expected = official(valid.bson, options)
        } catch (error) {
          // js-bson refuses it under these options (useBigInt64 without promoteValues, ...): so must we.
          expect(() => decode(valid.bson, options), `${path}: ${valid.name}`).toThrow()
          continue
        }
        try {
          expectIdentical(decode(valid.bson, options), expected)
        } catch (error) {
          throw new Error(`${path}: ${valid.name}: ${(error as Error).message}`)
        }
      }
    }
  })

  it('the tape takes every valid case (no fallback of the whole batch to js-bson)', () => {
    const batch = encodeTestBatch(rawBatch(VALID.map((valid) => valid.bson)), 'tape')
    expect(batch.slots).toBeInstanceOf(Float64Array)
    expect(batch.count).toBe(VALID.length)
    expectIdentical(
      createDecoder(DEFAULT_BSON_OPTIONS).decodeBatch(batch),
      VALID.map((valid) => official(valid.bson, DEFAULT_BSON_OPTIONS)),
    )
  })

  it('raw: true hands back every document byte for byte', () => {
    const decoder = createDecoder({ ...DEFAULT_BSON_OPTIONS, raw: true })
    const documents = decoder.decodeBatch(encodeTestBatch(rawBatch(VALID.map((valid) => valid.bson)), 'raw'))
    expect(documents.map((bytes: Buffer) => Buffer.from(bytes).toString('hex'))).toEqual(
      VALID.map((valid) => valid.bson.toString('hex')),
    )
  })
})

describe('decodeErrors corpus cases are JS errors, never a crash', () => {
  it('js-bson (the reference) rejects every one of them', () => {
    for (const error of DECODE_ERRORS) {
      expect(() => official(error.bson, DEFAULT_BSON_OPTIONS), error.name).toThrow()
    }
  })

  it.each(DIRECT_DECODERS)('%s: each case alone', (path, decode) => {
    for (const error of DECODE_ERRORS) {
      if (path === 'lazy' && LAZY_READS_THE_ENVELOPE.includes(error.name)) {
        // Documented difference: the document its length prefix delimits, as js-bson decodes it.
        const envelope = error.bson.subarray(0, error.bson.readInt32LE(0))
        expectIdentical(decode(error.bson, DEFAULT_BSON_OPTIONS), official(envelope, DEFAULT_BSON_OPTIONS))
        continue
      }
      expect(() => decode(error.bson, DEFAULT_BSON_OPTIONS), `${path}: ${error.name}`).toThrow()
    }
  })

  it('a broken document between good ones fails the batch, on the tape and off it', () => {
    const good = VALID[0]!.bson
    for (const error of DECODE_ERRORS) {
      for (const tape of [true, false]) {
        const decode = () =>
          createDecoder(DEFAULT_BSON_OPTIONS).decodeBatch(
            encodeTestBatch(rawBatch([good, error.bson, good]), tape ? 'tape' : 'raw'),
          )
        expect(decode, `${error.name} (tape: ${tape})`).toThrow()
      }
    }
  })

  it('a broken top-level document handed whole to the native entry is an error', () => {
    for (const error of DECODE_ERRORS) {
      for (const tape of [true, false]) {
        expect(() => encodeTestBatch(error.bson, tape ? 'tape' : 'raw'), error.name).toThrow()
      }
    }
  })
})

describe('JSON output (findJson / pipeJson) of the corpus', () => {
  it.each(JSON_FORMATS)(
    'valid cases: what JavaScript gives for the official documents, or its error (%s)',
    (format) => {
      let rendered = 0
      for (const valid of VALID) {
        const expected = officialJson([official(valid.bson, DEFAULT_BSON_OPTIONS)], format)
        if (expected === null) {
          // EJSON has no form for some values (a JS RegExp with flag g): an error, never other text.
          expect(() => findJsonText([valid.bson], format), valid.name).toThrow()
          continue
        }
        expect(findJsonText([valid.bson], format), valid.name).toBe(expected)
        rendered++
      }
      expect(rendered).toBeGreaterThan(VALID.length - 10)
    },
  )

  it.each(JSON_FORMATS)('decodeErrors: an error alone and between good documents (%s)', (format) => {
    const good = VALID[0]!.bson
    for (const error of DECODE_ERRORS) {
      expect(() => findJsonText([error.bson], format), error.name).toThrow()
      expect(() => findJsonText([good, error.bson, good], format), error.name).toThrow()
    }
  })
})

describe('through a find served by the replay server', () => {
  let server: ServedReplay
  let client: MongoClient
  /** Collection name per case: `valid` holds all valid cases, `e<N>` one broken document each. */
  const collectionOf = new Map<CorpusDecodeError, string>()

  beforeAll(async () => {
    const collections: Record<string, Uint8Array[]> = {
      valid: VALID.map((valid: CorpusValidCase) => valid.bson),
    }
    WELL_FRAMED_ERRORS.forEach((error, index) => {
      collectionOf.set(error, `e${index}`)
      collections[`e${index}`] = [error.bson]
    })
    server = await serveDocuments(collections)
    client = await MongoClient.connect(server.uri)
  }, 600_000)

  afterAll(async () => {
    await client?.close()
    await server?.stop()
  })

  it('valid cases: find, findLazy and raw equal js-bson', async () => {
    const collection = client.db('bench').collection('valid')
    const expected = VALID.map((valid) => official(valid.bson, DEFAULT_BSON_OPTIONS))
    expectIdentical(await collection.find({}, { batchSize: 300 }).toArray(), expected)
    expectIdentical(readAll(await collection.findLazy({}, { batchSize: 300 })), expected)
    const raw = await collection.find({}, { raw: true }).toArray()
    expect(raw.map((bytes) => Buffer.from(bytes as unknown as Uint8Array).toString('hex'))).toEqual(
      VALID.map((valid) => valid.bson.toString('hex')),
    )
    for (const format of JSON_FORMATS) {
      const expectedJson = officialJson(expected, format)
      const json = collection.findJson({}, { format, batchSize: 300 })
      if (expectedJson === null) await expect(json, format).rejects.toThrow()
      else expect((await json).toString(), format).toBe(expectedJson)
    }
  })

  it('decodeErrors with a well-framed document: find, findLazy, findOne, findJson and findArrow reject with typed errors', async () => {
    expect(WELL_FRAMED_ERRORS.length).toBeGreaterThan(40)
    const typed = (name: string) => (error: unknown) => {
      expect(error instanceof BSONError || error instanceof MongoError, `${name}: ${error}`).toBe(true)
      expect((error as Error).message, name).not.toMatch(/^rumongo-error:/)
    }
    for (const error of WELL_FRAMED_ERRORS) {
      const collection = client.db('bench').collection(collectionOf.get(error)!)
      const reads: (() => Promise<unknown>)[] = [
        () => collection.find({}).toArray(),
        () => collection.findOne({}),
        () => collection.findLazy({}).then((documents) => readAll(documents)),
        () => collection.findJson({}),
        () => collection.findJson({}, { format: 'plain' }),
        // Arrow builds no column for some types (code, symbol, ...): their values are checked all
        // the same.
        () => collection.findArrow({}),
        () => collection.findArrow({}, { schema: { _id: 'utf8' }, projection: undefined }),
      ]
      for (const read of reads) {
        await read().then(() => expect.fail(`${error.name}: decoded`), typed(error.name))
      }
    }
    // The client is still usable after all of them.
    expect(await client.db('bench').collection('valid').estimatedDocumentCount()).toBe(VALID.length)
  })

  it("raw: true: the official driver's outcome per broken document (its bytes, or an error for broken framing)", async () => {
    const official = await OfficialClient.connect(server.uri)
    const outcome = async (read: () => Promise<unknown[]>) => {
      try {
        return (await read()).map((bytes) => Buffer.from(bytes as Uint8Array).toString('hex')).join()
      } catch (error) {
        return error instanceof BSONError || error instanceof MongoError ? 'error' : `untyped ${error}`
      }
    }
    let handedBack = 0
    try {
      for (const error of WELL_FRAMED_ERRORS) {
        const name = collectionOf.get(error)!
        const ours = await outcome(() =>
          client.db('bench').collection(name).find({}, { raw: true }).toArray(),
        )
        const theirs = await outcome(() =>
          official.db('bench').collection(name).find({}, { raw: true }).toArray(),
        )
        expect(ours, error.name).toBe(theirs)
        if (ours === error.bson.toString('hex')) handedBack++
      }
    } finally {
      await official.close()
    }
    // Both kinds occur: broken values are handed back, broken element framing is an error.
    expect(handedBack).toBeGreaterThan(10)
    expect(handedBack).toBeLessThan(WELL_FRAMED_ERRORS.length - 10)
  })
})
