// Values the embedded server cannot store (Decimal128, MinKey/MaxKey, Code, NaN/Infinity, nested
// arrays, ...) still decode exactly like the official driver: the batch goes through the same native
// encoder a server reply goes through, then through the decoder every read path uses.
import { createRequire } from 'node:module'
import { setFlagsFromString } from 'node:v8'
import { describe, expect, it } from 'vitest'
import {
  Binary,
  BSON,
  BSONRegExp,
  BSONSymbol,
  Code,
  DBRef,
  Decimal128,
  Double,
  Int32,
  Long,
  MaxKey,
  MinKey,
  ObjectId,
  Timestamp,
  UUID,
  type Document,
} from 'mongodb'
import { BSON_OPTION_CASES, expectIdentical, officialDeserializeOptions } from './setup/helpers.js'
import { randomDocuments } from './setup/random_documents.js'

// Internal modules of the built package: the decoder seam, below the public API.
const require = createRequire(import.meta.url)
const { encodeTestBatch, tapeTags } = require('../dist/native.cjs')
const { TAPE_TAGS } = require('../dist/format/tape.js')
const { createDecoder } = require('../dist/format/index.js')
const { DEFAULT_BSON_OPTIONS } = require('../dist/bson.js')

function deepNested(depth: number): Document {
  let value: Document = { leaf: true }
  for (let level = 0; level < depth; level++) value = { level, child: value, list: [level, [level]] }
  return value
}

/** Documents with every BSON type, including those FerretDB does not store. */
function everyTypeDocuments(): Document[] {
  const withProto = JSON.parse('{"__proto__": {"polluted": true}, "ok": 1}')
  return [
    {
      _id: new ObjectId('65a1b2c3d4e5f60718293a4b'),
      double: new Double(1.5),
      wholeDouble: new Double(2),
      negativeZero: new Double(-0),
      nan: new Double(NaN),
      infinity: new Double(Infinity),
      negativeInfinity: new Double(-Infinity),
      string: 'plain',
      utf8: 'ünïcødé 日本 🎉',
      empty: '',
      int32: new Int32(-2147483648),
      int32Max: new Int32(2147483647),
      long: Long.fromNumber(42),
      longMax: Long.MAX_VALUE,
      longMin: Long.MIN_VALUE,
      longEdge: Long.fromString('9007199254740992'),
      longBeyond: Long.fromString('9007199254740993'),
      decimal: Decimal128.fromString('1234.5678901234567890123456789012'),
      decimalNaN: Decimal128.fromString('NaN'),
      date: new Date(Date.UTC(1969, 11, 31, 23, 59, 59, 999)),
      farDate: new Date(8.64e15),
      flagTrue: true,
      flagFalse: false,
      nothing: null,
      regex: new BSONRegExp('^a.*z$', 'imsx'),
      binary: new Binary(Buffer.from('generic bytes')),
      emptyBinary: new Binary(Buffer.alloc(0)),
      uuid: new UUID('01234567-89ab-4cde-8f01-23456789abcd'),
      md5: new Binary(Buffer.alloc(16, 7), Binary.SUBTYPE_MD5),
      userDefined: new Binary(Buffer.from([1, 2, 3]), Binary.SUBTYPE_USER_DEFINED),
      code: new Code('function () { return 1 }'),
      codeWithScope: new Code('function () { return x }', { x: 1 }),
      symbol: new BSONSymbol('sym'),
      timestamp: new Timestamp({ t: 4294967295, i: 4294967295 }),
      minKey: new MinKey(),
      maxKey: new MaxKey(),
      dbref: new DBRef('other', new ObjectId('65a1b2c3d4e5f60718293a4c'), 'db', { extra: 1 }),
      nestedArrays: [[1, [2, [3, []]]], [], [[]]],
      arrayOfDocs: [{ a: 1 }, { b: [{ c: new Decimal128('0.1') }] }],
      proto: withProto,
      deep: deepNested(60),
    },
    {},
    { onlyId: new ObjectId('65a1b2c3d4e5f60718293a4d') },
  ]
}

function encodeAsServerBatch(documents: Document[], tape = true) {
  return encodeTestBatch(Buffer.from(BSON.serialize({ batch: documents })), tape ? 'tape' : 'raw')
}

/** What the official driver does with a document's bytes under the same options. */
function officialDecode(documents: Document[], options: Document): Document[] {
  return documents.map((document) =>
    BSON.deserialize(BSON.serialize(document), officialDeserializeOptions(options)),
  )
}

describe('batch decoding', () => {
  it.each([['defaults', {}], ...BSON_OPTION_CASES])(
    'decodes every BSON type like the official driver (%s)',
    (_, overrides) => {
      const options = { ...DEFAULT_BSON_OPTIONS, ...overrides }
      const documents = everyTypeDocuments()
      const batch = encodeAsServerBatch(documents)
      expect(batch.slots).toBeInstanceOf(Float64Array) // the tape path, not the js-bson fallback
      const decoded = createDecoder(options).decodeBatch(batch)
      expectIdentical(decoded, officialDecode(documents, options))
      expect(Object.getPrototypeOf(decoded[0].proto)).toBe(Object.prototype)
      expect(({} as Document).polluted).toBeUndefined()
      // the js-bson path (batches that are not taped) gives the same documents
      expectIdentical(createDecoder(options).decodeBatch(encodeAsServerBatch(documents, false)), decoded)
    },
  )

  it('decodes documents whose shapes take turns at each depth, more of them than the tape remembers per depth', () => {
    // The tape remembers a few recent shapes per depth (src/format/tape.rs, RECENT_SHAPES) before
    // it hashes a signature: 13 shapes in turn at depth 0 and 11 at depth 1 (other lengths and
    // types under the same keys too) keep replacing the remembered ones.
    const documents = Array.from({ length: 600 }, (_, n) => {
      const inner: Document = { [`inner${n % 11}`]: n % 3 === 0 ? `text ${n}` : n, shared: n }
      if (n % 5 === 0) inner.extra = [n, { deeper: n % 2 === 0 }]
      return { [`top${n % 13}`]: n, shared: n % 2 === 0 ? 'even' : n * 0.5, inner, [`sub${n % 7}`]: { n } }
    })
    const options = { ...DEFAULT_BSON_OPTIONS }
    const batch = encodeAsServerBatch(documents)
    expect(batch.slots).toBeInstanceOf(Float64Array)
    expectIdentical(createDecoder(options).decodeBatch(batch), officialDecode(documents, options))
  })

  it("reads the tape with the addon's own type tags (one definition, src/format/tape.rs)", () => {
    // The JS decoder inlines the tags as literals: this is what keeps the two sides in step.
    expect(TAPE_TAGS).toEqual(tapeTags())
    expect(Object.keys(TAPE_TAGS)).toHaveLength(12)
  })

  it('gives int32 values as small integers, as js-bson does (not a heap number per field)', () => {
    // Same value either way; but a float64 stored in a field is a heap-allocated number: one more
    // object per int32 field for the garbage collector (Mongoose's populate of 10,000 documents
    // spent most of its GC time there) and for every reader of the value.
    setFlagsFromString('--allow-natives-syntax')
    const isSmi = new Function('value', 'return %IsSmi(value)') as (value: unknown) => boolean
    // Keys no other test uses: V8 shares a field's representation by every object of a shape.
    const documents = [0, 1, 2].map((k) => ({
      smiCheckTop: new Int32(k - 1),
      smiCheckSub: { smiCheckNested: new Int32(1000 * k) },
      smiCheckList: [new Int32(k), new Int32(-7), 'text'],
    }))
    const smallIntegers = (decoded: Document[]) =>
      decoded.flatMap((document) => [
        isSmi(document.smiCheckTop),
        isSmi(document.smiCheckSub.smiCheckNested),
        isSmi(document.smiCheckList[0]),
        isSmi(document.smiCheckList[1]),
      ])
    const decoded = createDecoder(DEFAULT_BSON_OPTIONS).decodeBatch(encodeAsServerBatch(documents))
    expectIdentical(decoded, officialDecode(documents, DEFAULT_BSON_OPTIONS))
    expect(smallIntegers(officialDecode(documents, DEFAULT_BSON_OPTIONS))).not.toContain(false)
    expect(smallIntegers(decoded)).not.toContain(false)
  })

  it('returns raw BSON per document with raw: true', () => {
    const documents = everyTypeDocuments()
    // raw: true cursors ask for raw batches (a taped batch carries no BSON copy).
    const decoded = createDecoder({ ...DEFAULT_BSON_OPTIONS, raw: true }).decodeBatch(
      encodeAsServerBatch(documents, false),
    )
    expect(decoded.map((bytes: Buffer) => Buffer.from(bytes).toString('hex'))).toEqual(
      documents.map((document) => Buffer.from(BSON.serialize(document)).toString('hex')),
    )
  })

  it('decodes an empty batch and a large batch', () => {
    const decoder = createDecoder(DEFAULT_BSON_OPTIONS)
    expect(decoder.decodeBatch(encodeAsServerBatch([]))).toEqual([])
    const many = Array.from({ length: 5000 }, (_, n) => ({ n, text: `row ${n}`.repeat(n % 7) }))
    expectIdentical(
      decoder.decodeBatch(encodeAsServerBatch(many)),
      officialDecode(many, DEFAULT_BSON_OPTIONS),
    )
  })

  it('decodes strings on both sides of the one-byte (Latin-1) boundary, alone and mixed', () => {
    const texts = [
      '\u0080',
      'é',
      'ÿ',
      'déjà vu ÿ',
      '\u0100',
      'Ā and é',
      '日本',
      '🎉',
      'a\u0000b',
      'x'.repeat(300),
    ]
    const documents = texts.map((text, n) => ({
      n,
      text,
      list: [text, 'ascii', text + '🎉'],
      nested: { text },
    }))
    const batch = encodeAsServerBatch(documents)
    expect(batch.slots).toBeInstanceOf(Float64Array)
    const decoded = createDecoder(DEFAULT_BSON_OPTIONS).decodeBatch(batch)
    expectIdentical(decoded, officialDecode(documents, DEFAULT_BSON_OPTIONS))
    expect(decoded.map((document: Document) => document.text)).toEqual(texts)
  })

  it('rejects invalid UTF-8 by default and decodes it when validation is off', () => {
    const bytes = Buffer.from(BSON.serialize({ batch: [{ s: 'abc' }] }))
    bytes[bytes.indexOf('abc')] = 0xff
    const batch = encodeTestBatch(bytes, 'tape')
    expect(batch.slots).toBeUndefined() // js-bson decides, exactly as for the official driver
    expect(() => createDecoder(DEFAULT_BSON_OPTIONS).decodeBatch(batch)).toThrow(/UTF-8/i)
    const [document] = createDecoder({ ...DEFAULT_BSON_OPTIONS, enableUtf8Validation: false }).decodeBatch(
      batch,
    )
    expect(document.s).toBe('\ufffdbc')
  })

  it('reports a batch with a non-document element as an error, not a crash', () => {
    expect(() => encodeTestBatch(Buffer.from(BSON.serialize({ batch: [1, 2] })), 'tape')).toThrow(
      /not a document/,
    )
    expect(() => encodeTestBatch(Buffer.from([1, 2, 3]), 'tape')).toThrow()
  })
})

describe('differential fuzzing against js-bson', () => {
  it.each([
    ['defaults', {}],
    ['promoteValues: false', { promoteValues: false }],
    ['promoteLongs: false', { promoteLongs: false }],
    ['useBigInt64: true', { useBigInt64: true }],
    ['promoteBuffers + bsonRegExp', { promoteBuffers: true, bsonRegExp: true }],
  ])('decodes thousands of random documents exactly (%s)', (_, overrides) => {
    const options = { ...DEFAULT_BSON_OPTIONS, ...overrides }
    const decoder = createDecoder(options)
    for (let seed = 1; seed <= 40; seed++) {
      const documents = randomDocuments(seed, 100)
      const batch = encodeAsServerBatch(documents)
      expect(batch.slots).toBeInstanceOf(Float64Array)
      expectIdentical(decoder.decodeBatch(batch), officialDecode(documents, options))
    }
  })
})
