// Lazy documents (findLazy): Proxy semantics, every BSON type through a lazy field, laziness of
// nested documents and arrays, parity with the official driver, BSON options, read-only errors.
import { createRequire } from 'node:module'
import { inspect } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  Binary,
  BSON,
  BSONError,
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
  type Collection as OfficialCollection,
  type Document,
} from 'mongodb'
import {
  isLazyDocument,
  materialize,
  MongoInvalidArgumentError,
  type Collection,
  type LazyDocument,
} from 'rumongo'
import {
  BSON_OPTION_CASES,
  connectBoth,
  expectIdentical,
  officialDeserializeOptions,
  uniqueDbName,
  type Drivers,
} from './setup/helpers.js'
import { orderDocuments, typedDocuments } from './setup/data.js'

// Internal entry points of the built package: a lazy document over given bytes, and the defaults.
const require = createRequire(import.meta.url)
const { lazyDocument } = require('../dist/format/lazy.js') as {
  lazyDocument(bytes: Uint8Array, options: Document, offset?: number): LazyDocument<any>
}
const { DEFAULT_BSON_OPTIONS } = require('../dist/bson.js')

/** A lazy document over `BSON.serialize(document)`, and what js-bson (the official driver) decodes. */
function lazyAndExpected(document: Document, overrides: Document = {}) {
  const options = { ...DEFAULT_BSON_OPTIONS, ...overrides }
  const bytes = BSON.serialize(document)
  return {
    lazy: lazyDocument(bytes, options) as LazyDocument<any>,
    expected: BSON.deserialize(bytes, officialDeserializeOptions(options)),
    bytes,
    options,
  }
}

/** Same JSON.stringify outcome: the same text, or the same error (a bigint cannot be serialized). */
function expectSameJson(actual: unknown, expected: unknown): void {
  const json = (value: unknown) => {
    try {
      return JSON.stringify(value)
    } catch (error) {
      return `throws ${String(error)}`
    }
  }
  expect(json(actual)).toBe(json(expected))
}

/** Every BSON type, including those the embedded server cannot store. */
function everyType(): Document {
  const withProto = JSON.parse('{"__proto__": {"polluted": true}, "ok": 1}')
  return {
    _id: new ObjectId('65a1b2c3d4e5f60718293a4b'),
    double: new Double(1.5),
    wholeDouble: new Double(2),
    negativeZero: new Double(-0),
    nan: new Double(NaN),
    infinity: new Double(Infinity),
    negativeInfinity: new Double(-Infinity),
    string: 'plain',
    utf8: 'ünïcødé 日本 🎉',
    longUtf8: 'ünïcødé 日本 🎉 '.repeat(10),
    replacementChar: 'a \ufffd stored on purpose',
    empty: '',
    int32: new Int32(-2147483648),
    int32Max: new Int32(2147483647),
    long: Long.fromNumber(42),
    longMax: Long.MAX_VALUE,
    longMin: Long.MIN_VALUE,
    longEdge: Long.fromString('9007199254740992'),
    longNegativeEdge: Long.fromString('-9007199254740992'),
    longBeyond: Long.fromString('9007199254740993'),
    longNegativeBeyond: Long.fromString('-9007199254740993'),
    longNegative: Long.fromNumber(-5),
    decimal: Decimal128.fromString('1234.5678901234567890123456789012'),
    decimalNaN: Decimal128.fromString('NaN'),
    date: new Date(Date.UTC(1969, 11, 31, 23, 59, 59, 999)),
    farDate: new Date(8.64e15),
    flagTrue: true,
    flagFalse: false,
    nothing: null,
    undefinedValue: undefined,
    regex: new BSONRegExp('^a.*z$', 'imsx'),
    binary: new Binary(Buffer.from('generic bytes')),
    emptyBinary: new Binary(Buffer.alloc(0)),
    uuid: new UUID('01234567-89ab-4cde-8f01-23456789abcd'),
    md5: new Binary(Buffer.alloc(16, 7), Binary.SUBTYPE_MD5),
    code: new Code('function () { return 1 }'),
    codeWithScope: new Code('function () { return x }', { x: 1 }),
    symbol: new BSONSymbol('sym'),
    timestamp: new Timestamp({ t: 4294967295, i: 4294967295 }),
    minKey: new MinKey(),
    maxKey: new MaxKey(),
    dbref: new DBRef('other', new ObjectId('65a1b2c3d4e5f60718293a4c'), 'db', { extra: 1 }),
    dbrefInArray: [new DBRef('other', 1)],
    notDbref: { $ref: 1, $id: 2 },
    dollarKeys: { $ref: 'x', $id: 1, $other: 2 },
    nestedArrays: [[1, [2, [3, []]]], [], [[]]],
    arrayOfDocs: [{ a: 1 }, { b: [{ c: new Decimal128('0.1') }] }],
    proto: withProto,
    numericKeys: { b: 1, '10': 2, '2': 3, a: 4, '-1': 5, '01': 6 },
    deep: deepNested(40),
  }
}

function deepNested(depth: number): Document {
  let value: Document = { leaf: true }
  for (let level = 0; level < depth; level++) value = { level, child: value, list: [level, [level]] }
  return value
}

describe('every BSON type through a lazy field (bytes from BSON.serialize)', () => {
  it.each([['defaults', {}], ...BSON_OPTION_CASES])('matches js-bson (%s)', (_, overrides) => {
    const { lazy, expected } = lazyAndExpected(everyType(), overrides)
    // Field by field first (each read on its own), then the whole document recursively.
    for (const key of Object.keys(expected)) expectIdentical(lazy[key], expected[key])
    expectIdentical(lazy, expected)
    expectIdentical(lazy.toObject(), expected)
    expectSameJson(lazy, expected)
  })

  it('turns DBRef-like embedded documents into DBRef as js-bson does', () => {
    const { lazy } = lazyAndExpected(everyType())
    expect(lazy.dbref).toBeInstanceOf(DBRef)
    expect(lazy.dbrefInArray[0]).toBeInstanceOf(DBRef)
    expect(lazy.notDbref).not.toBeInstanceOf(DBRef)
    expect(lazy.dollarKeys).not.toBeInstanceOf(DBRef)
  })

  it('keeps a stored "__proto__" key as an own field without touching prototypes', () => {
    const { lazy } = lazyAndExpected(everyType())
    expect(Object.keys(lazy.proto)).toEqual(['__proto__', 'ok'])
    expect(lazy.proto.__proto__.polluted).toBe(true)
    expect(Object.getPrototypeOf(lazy.proto)).toBe(Object.prototype)
    expect(({} as Document).polluted).toBeUndefined()
  })

  it('orders integer-like keys first, as a plain object does', () => {
    const { lazy, expected } = lazyAndExpected(everyType())
    expect(Object.keys(lazy.numericKeys)).toEqual(Object.keys(expected.numericKeys))
    expect(Object.keys(lazy.numericKeys)).toEqual(['2', '10', 'b', 'a', '-1', '01'])
  })

  it('keeps the last value of a duplicated key at the first position, as js-bson does', () => {
    // { a: 1, b: 2, a: 3 } cannot be built from an object: patch the key "c" into "a".
    const bytes = Buffer.from(BSON.serialize({ a: 1, b: 2, c: 3 }))
    bytes[bytes.indexOf(Buffer.from('c\0'))] = 'a'.charCodeAt(0)
    const lazy = lazyDocument(bytes, DEFAULT_BSON_OPTIONS)
    const expected = BSON.deserialize(bytes)
    expect(Object.keys(lazy)).toEqual(['a', 'b'])
    expectIdentical(lazy, expected)
  })

  it('reads many documents of a few shapes from one buffer (shared shapes, offsets)', () => {
    const documents = Array.from({ length: 300 }, (_, n) =>
      n % 3 === 0
        ? { n, s: `x${n}`, sub: { a: n } }
        : n % 3 === 1
          ? { n, t: n * 2 }
          : { s: 'y', n, sub: [{ a: 1 }] },
    )
    const parts = documents.map((document) => Buffer.from(BSON.serialize(document)))
    const batch = Buffer.concat(parts)
    let offset = 0
    for (const [index, part] of parts.entries()) {
      const lazy = lazyDocument(batch, DEFAULT_BSON_OPTIONS, offset)
      expectIdentical(lazy, documents[index])
      offset += part.length
    }
  })
})

describe('strings and UTF-8 validation', () => {
  /** `{ s: <text> }` with the byte at `at` of the text replaced by `byte`. */
  function withBadByte(text: string, at: number, byte = 0xff): Buffer {
    const bytes = Buffer.from(BSON.serialize({ s: text, ok: 1 }))
    bytes[bytes.indexOf(Buffer.from(text)) + at] = byte
    return bytes
  }

  it.each([
    ['short', 'abcdef'],
    ['long', 'abcdefghijklmnopqrstuvwxyz0123456789'],
  ])('throws BSONError on invalid UTF-8 when validating (%s string)', (_, text) => {
    const bytes = withBadByte(text, 2)
    expect(() => BSON.deserialize(bytes)).toThrow(BSONError)
    const lazy = lazyDocument(bytes, DEFAULT_BSON_OPTIONS)
    expect(() => lazy.s).toThrow(BSONError)
    expect(() => lazy.s).toThrow('Invalid UTF-8 string in BSON document')
    expect(lazy.ok).toBe(1) // other fields still read
  })

  it('decodes invalid UTF-8 with replacement characters when not validating', () => {
    const bytes = withBadByte('abcdefghijklmnopqrstuvwxyz', 3)
    const options = { ...DEFAULT_BSON_OPTIONS, enableUtf8Validation: false }
    const lazy = lazyDocument(bytes, options)
    const expected = BSON.deserialize(bytes, officialDeserializeOptions(options))
    expect(lazy.s).toBe(expected.s)
    expect(lazy.s).toContain('\ufffd')
  })
})

describe('Proxy semantics', () => {
  const source = () => ({
    _id: new ObjectId('65a1b2c3d4e5f60718293a4b'),
    n: 7,
    name: 'seven',
    customer: { address: { city: 'Lyon', zip: '69001' }, tags: ['a', 'b'] },
    items: [
      { sku: 'a', qty: 1 },
      { sku: 'b', qty: 2 },
    ],
    at: new Date(1_700_000_000_000),
  })

  it('reads like a plain object: keys, entries, spread, in, for...in, JSON, toEqual', () => {
    const { lazy, expected } = lazyAndExpected(source())
    expect(Object.keys(lazy)).toEqual(Object.keys(expected))
    expect(Reflect.ownKeys(lazy)).toEqual(Reflect.ownKeys(expected))
    expectIdentical(Object.fromEntries(Object.entries(lazy)), expected)
    expectIdentical({ ...lazy }, expected)
    expect(Object.assign({}, lazy)).toEqual(expected)
    expect('n' in lazy).toBe(true)
    expect('missing' in lazy).toBe(false)
    expect('hasOwnProperty' in lazy).toBe(true)
    const forIn: string[] = []
    for (const key in lazy) forIn.push(key)
    expect(forIn).toEqual(Object.keys(expected))
    expectSameJson(lazy, expected)
    expect(JSON.stringify(lazy, null, 2)).toBe(JSON.stringify(expected, null, 2))
    expect(lazy).toEqual(expected)
    expect(expected).toEqual(lazy)
    expect(lazy.missing).toBeUndefined()
    expect(Object.prototype.hasOwnProperty.call(lazy, 'n')).toBe(true)
    expect(Object.hasOwn(lazy, 'toObject')).toBe(false)
    expect(Object.getOwnPropertyDescriptor(lazy, 'n')).toMatchObject({ value: 7, enumerable: true })
    expect(Object.getPrototypeOf(lazy)).toBe(Object.prototype)
    expect(lazy.constructor).toBe(Object)
    expect(String(lazy)).toBe('[object Object]')
    expect(Array.isArray(lazy)).toBe(false)
    expect(isLazyDocument(lazy)).toBe(true)
    expect(isLazyDocument(expected)).toBe(false)
    expect(isLazyDocument(lazy.customer)).toBe(true)
  })

  it('formats with util.inspect / console.log as the plain document', () => {
    const { lazy, expected } = lazyAndExpected(source())
    expect(inspect(lazy)).toBe(inspect(expected))
    expect(inspect(lazy, { depth: 0 })).toBe(inspect(expected, { depth: 0 }))
    expect(inspect([lazy, { inner: lazy.customer }])).toBe(inspect([expected, { inner: expected.customer }]))
    expect(inspect(lazy, { showProxy: true })).toContain('Proxy')
  })

  it('toObject() is the plain document, not a key; materialize() works with a stored "toObject"', () => {
    const { lazy, expected } = lazyAndExpected(source())
    expect(Object.keys(lazy)).not.toContain('toObject')
    expect('toObject' in lazy).toBe(true) // like an inherited method
    const plain = lazy.toObject()
    expect(isLazyDocument(plain)).toBe(false)
    expectIdentical(plain, expected)
    expect(lazy.toObject()).not.toBe(plain) // a fresh, mutable copy each call
    plain.n = 8
    expect(lazy.n).toBe(7)
    expectIdentical(structuredClone(lazy.toObject()), structuredClone(expected))
    expectIdentical(lazy.customer.toObject(), expected.customer)
    expectIdentical(materialize(lazy), expected)

    const stored = lazyAndExpected({ toObject: 'stored field', n: 1 })
    expect(stored.lazy.toObject).toBe('stored field') // the stored field wins
    expectIdentical(materialize(stored.lazy), stored.expected)
    expect(() => materialize({} as LazyDocument)).toThrow(MongoInvalidArgumentError)
  })

  it('is read-only: assignment, delete, defineProperty, freeze throw a TypeError', () => {
    const { lazy } = lazyAndExpected(source())
    expect(() => {
      lazy.n = 8
    }).toThrow(/read-only/)
    expect(() => {
      lazy.added = 1
    }).toThrow(TypeError)
    expect(() => {
      delete lazy.n
    }).toThrow(TypeError)
    expect(() => Object.defineProperty(lazy, 'n', { value: 1 })).toThrow(TypeError)
    expect(() => Object.setPrototypeOf(lazy, null)).toThrow(TypeError)
    expect(() => Object.freeze(lazy)).toThrow(TypeError)
    expect(() => {
      lazy.customer.address.city = 'Paris'
    }).toThrow(TypeError)
    expect(() => lazy.items.push({})).toThrow(TypeError)
    expect(Object.isFrozen(lazy.items)).toBe(true)
    expect(lazy.n).toBe(7)
    expect(() => structuredClone(lazy)).toThrow() // a Proxy cannot be cloned: use toObject()
  })

  it('is lazy and caches: nested documents are views, arrays are real arrays built once', () => {
    const { lazy, expected } = lazyAndExpected(source())
    expect(lazy.customer).toBe(lazy.customer)
    expect(lazy.customer.address).toBe(lazy.customer.address)
    expect(lazy.customer.address.city).toBe('Lyon')
    expect(lazy._id).toBe(lazy._id)
    expect(lazy.at).toBe(lazy.at)
    const items = lazy.items
    expect(items).toBe(lazy.items)
    expect(Array.isArray(items)).toBe(true)
    expect(items.length).toBe(2)
    expect(items[1].sku).toBe('b')
    expect(isLazyDocument(items[0])).toBe(true)
    expect(items.map((item: Document) => item.qty)).toEqual([1, 2])
    expect([...items].map((item) => item.sku)).toEqual(['a', 'b'])
    expect(lazy.customer.tags).toEqual(['a', 'b'])
    expectIdentical(items, expected.items)
  })

  it('does not parse fields that are not read', () => {
    // A field js-bson would refuse (invalid UTF-8) does not matter until it is read.
    const bytes = Buffer.from(BSON.serialize({ bad: 'abcdef', good: 1 }))
    bytes[bytes.indexOf(Buffer.from('abcdef'))] = 0xff
    const lazy = lazyDocument(bytes, DEFAULT_BSON_OPTIONS)
    expect(lazy.good).toBe(1)
    // Key listing and `in` do not decode values (Object.keys does: it asks for each descriptor).
    expect(Reflect.ownKeys(lazy)).toEqual(['bad', 'good'])
    expect('bad' in lazy).toBe(true)
    expect(() => lazy.bad).toThrow(BSONError)
    expect(() => Object.keys(lazy)).toThrow(BSONError)
  })
})

describe('findLazy against the server', () => {
  let drivers: Drivers
  let dbName: string
  const official = (name: string): OfficialCollection => drivers.official.db(dbName).collection(name)
  const rumongo = (name: string, options?: Document): Collection =>
    drivers.rumongo.db(dbName).collection(name, options)

  beforeAll(async () => {
    drivers = await connectBoth()
    dbName = uniqueDbName('lazy')
    await official('typed').insertMany(typedDocuments())
    await official('orders').insertMany(orderDocuments(600))
  })

  afterAll(async () => {
    await drivers.official.db(dbName).dropDatabase()
    await drivers.close()
  })

  it('returns what find returns, across batches, with filter and options', async () => {
    const filter = { status: 'paid' }
    const options = { sort: { at: -1 }, batchSize: 37 } as const
    const lazy = await rumongo('orders').findLazy(filter, options)
    const expected = await official('orders').find(filter, options).toArray()
    expect(lazy.length).toBe(200)
    expectIdentical(lazy, expected)
    expectIdentical(
      lazy.map((document) => document.toObject()),
      expected,
    )
    expectSameJson(lazy, expected)
    let total = 0
    for (const document of lazy) total += document.total
    expect(total).toBe(expected.reduce((sum, document) => sum + document.total, 0))
    expect(lazy[0]!.customer.name).toBe(expected[0]!.customer.name)
  })

  it('accepts projection, skip, limit and an ObjectId filter like find', async () => {
    const options = { projection: { n: 1, customer: 1 }, skip: 5, limit: 10, sort: { n: 1 } }
    expectIdentical(
      await rumongo('orders').findLazy({}, options),
      await official('orders').find({}, options).toArray(),
    )
    const [first] = await official('orders').find({}, { limit: 1 }).toArray()
    expectIdentical(await rumongo('orders').findLazy(first!._id), [first])
    expect(await rumongo('orders').findLazy({ n: -1 })).toEqual([])
  })

  it.each([['defaults', {}], ...BSON_OPTION_CASES])(
    'matches the official driver on every stored type (%s)',
    async (_, options) => {
      const lazy = await rumongo('typed').findLazy({}, { ...options, sort: { index: 1 } })
      const expected = await official('typed')
        .find({}, { ...options, sort: { index: 1 } })
        .toArray()
      expectIdentical(lazy, expected)
      expectIdentical(
        lazy.map((document) => document.toObject()),
        expected,
      )
      expectSameJson(lazy, expected)
    },
  )

  it('inherits BSON options from the collection, operation options winning', async () => {
    const collection = rumongo('typed', { promoteValues: false })
    const [inherited] = await collection.findLazy({ index: 3 })
    expect(inherited!.int32).toBeInstanceOf(Int32)
    const [overridden] = await collection.findLazy({ index: 3 }, { promoteValues: true })
    expect(overridden!.int32).toBe(-2000)
  })

  it('numbers shapes per batch: documents whose keys differ, extend or cut short the last ones', async () => {
    const variants = [{ a: 1 }, { a: 1, b: 'x' }, { a: 1, b: 'x', c: [1] }, { b: 2 }, { a: 1, b: 'y' }, {}]
    await official('shapes').insertMany(
      Array.from({ length: 60 }, (_, n) => ({ _id: n, ...variants[(n * 7) % variants.length] })),
    )
    for (const batchSize of [1, 7, 100]) {
      const lazy = await rumongo('shapes').findLazy({}, { sort: { _id: 1 }, batchSize })
      const expected = await official('shapes')
        .find({}, { sort: { _id: 1 } })
        .toArray()
      expectIdentical(lazy, expected)
      expect(lazy.map((document) => Object.keys(document))).toEqual(expected.map(Object.keys))
    }
  })

  it('returns the same value object on every read, before and after many fields were read', async () => {
    const [document] = await rumongo('typed').findLazy({ index: 0 })
    const keys = Object.keys(document!)
    expect(keys.length).toBeGreaterThan(8) // past the sparse cache, into one slot per field
    const first = keys.map((key) => document![key])
    const second = keys.map((key) => document![key])
    second.forEach((value, position) => expect(value).toBe(first[position]))
  })

  it('keeps a lazy cursor lazy through clone(), with its builder options', async () => {
    const cursor = rumongo('orders').findCursor({}, { lazy: true }).sort({ n: -1 }).limit(3)
    const clone = cursor.clone()
    const expected = await official('orders')
      .find({}, { sort: { n: -1 }, limit: 3 })
      .toArray()
    for (const documents of [await cursor.toArray(), await clone.toArray()]) {
      expect(documents.every(isLazyDocument)).toBe(true)
      expectIdentical(documents, expected)
    }
  })

  it('ignores raw: true (documents are lazy views over raw BSON already)', async () => {
    const [document] = await rumongo('orders').findLazy({ n: 1 }, { raw: true })
    expect(isLazyDocument(document)).toBe(true)
    expect(document!.n).toBe(1)
  })
})
