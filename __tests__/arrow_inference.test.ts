// Arrow schema inference (issue #32): numeric columns widen over the first batch instead of
// nulling the numbers that came after an integral first value, a number an inferred column still
// cannot hold fails the read, and no schema (given or inferred, however deep) exhausts a stack.
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as arrow from 'apache-arrow'
import { tableFromIPC as flechetteTableFromIPC } from '@uwdata/flechette'
import { BSON, Double, Int32, Long, type Document } from 'mongodb'
import {
  MongoArrowTypeMismatchError,
  MongoClient,
  MongoInvalidArgumentError,
  type ArrowSchemaSpec,
  type Collection,
} from 'rumongo'
import { orderDocuments } from './setup/data.js'
import { connectBoth, uniqueDbName, type Drivers } from './setup/helpers.js'
import { serveDocuments, type ServedReplay } from './setup/replay.js'

// The native encoder, to encode one batch after another as a cursor does.
const requireCjs = createRequire(import.meta.url)
const { NativeArrowEncoder, encodeTestBatch, BatchOutput, MAX_ARROW_NESTING } =
  requireCjs('../dist/native.cjs')
const { callNative, callNativeSync } = requireCjs('../dist/errors.js')

const dbName = uniqueDbName('arrow_inference')
let drivers: Drivers

/** Numbers as the official driver writes them, field by field (in insertion order). */
const NUMBERS: Document[] = [
  { n: 0, a: new Int32(1), b: new Int32(1), c: Long.fromNumber(5), d: new Int32(7), e: null },
  { n: 1, a: Long.fromNumber(2 ** 40), b: new Double(2.5), c: new Double(0.5), d: new Int32(8) },
  { n: 2, a: new Int32(3), b: new Int32(3), c: Long.fromNumber(-6), e: new Int32(4) },
  { n: 3, e: new Double(4.5), list: [new Int32(1), new Double(2.5)], s: { x: new Int32(1) } },
  { n: 4, list: [Long.fromNumber(3)], s: { x: new Double(1.5) } },
]

beforeAll(async () => {
  drivers = await connectBoth()
  const db = drivers.official.db(dbName)
  // Plain JS numbers: the official driver writes 0, 10, 20 as int32 and 10.5 as double.
  await db.collection('orders').insertMany(orderDocuments(400))
  await db.collection('numbers').insertMany(NUMBERS.map((document) => ({ ...document })))
})

afterAll(async () => {
  await drivers.official.db(dbName).dropDatabase()
  await drivers.close()
})

const ours = (name: string): Collection => drivers.rumongo.db(dbName).collection(name)
const theirs = (name: string) => drivers.official.db(dbName).collection(name)

const typeOf = (table: arrow.Table, name: string) =>
  String(table.schema.fields.find((field) => field.name === name)?.type)

/** An encoder without a schema, as an Arrow read without one makes it. */
function inferringEncoder(options: { schema?: string; mismatchError?: boolean } = {}) {
  const encoder = new NativeArrowEncoder({ objectIdHex: false, mismatchError: false, ...options })
  return (documents: Document[]) => {
    const batch = encodeTestBatch(BSON.serialize({ batch: documents }), BatchOutput.ArrowRaw)
    return callNative(() => encoder.encode([batch.rawBatch], [documents.length], false, false))
  }
}

describe('inferred numeric columns widen over the first batch', () => {
  it('orders written by the official driver: total is a double column, every value the official one', async () => {
    // The field holds int32s and doubles, the first value an int32 (it was inferred int32, and
    // 395 of 400 values were null).
    expect(await theirs('orders').countDocuments({ total: { $type: 'int' } })).toBeGreaterThan(0)
    expect(await theirs('orders').countDocuments({ total: { $type: 'double' } })).toBeGreaterThan(300)
    const official = await theirs('orders')
      .find({}, { sort: { n: 1 } })
      .toArray()
    expect(Number.isInteger(official[0].total)).toBe(true)
    const totals = official.map((document) => document.total)

    const table = await ours('orders').findArrow({}, { sort: { n: 1 } })
    expect(typeOf(table, 'total')).toBe('Float64')
    expect([...table.getChild('total')!]).toEqual(totals)
    expect(table.schema.metadata.get('rumongo.typeMismatches')).toBeUndefined()
    // Nested numbers too: the customer's tier is int32 only, and stays so.
    expect(typeOf(table, 'customer')).toBe('Struct<{name:Utf8, tier:Int32}>')

    // A cursor infers from its first record batch (the first server batch: all its documents).
    const cursor = ours('orders').findArrowCursor({}, { sort: { n: 1 }, batchSize: 200 })
    const batches: arrow.RecordBatch[] = []
    for await (const batch of cursor) batches.push(batch)
    expect([...new arrow.Table(batches).getChild('total')!]).toEqual(totals)
    expect(cursor.typeMismatches).toEqual({})
  })

  it('int32 -> int64 -> double: each field takes the widest type it holds, in lists and structs too', async () => {
    const table = await ours('numbers').findArrow({}, { sort: { n: 1 } })
    expect(
      Object.fromEntries(['a', 'b', 'c', 'd', 'e', 'list', 's'].map((name) => [name, typeOf(table, name)])),
    ).toEqual({
      a: 'Int64',
      b: 'Float64',
      c: 'Float64',
      d: 'Int32',
      e: 'Float64',
      list: 'List<Float64>',
      s: 'Struct<{x:Float64}>',
    })
    const official = await theirs('numbers')
      .find({}, { sort: { n: 1 } })
      .toArray()
    const column = (name: string) => official.map((document) => document[name] ?? null)
    expect([...table.getChild('a')!]).toEqual(
      column('a').map((value) => (value === null ? null : BigInt(value))),
    )
    for (const name of ['b', 'c', 'd', 'e']) expect([...table.getChild(name)!], name).toEqual(column(name))
    expect([...table.getChild('list')!].map((list) => (list ? [...list] : null))).toEqual(column('list'))
    expect([...table.getChild('s')!].map((struct) => (struct ? struct.toJSON() : null))).toEqual(column('s'))
    expect(table.schema.metadata.get('rumongo.typeMismatches')).toBeUndefined()
  })

  it('an int64 beyond 2^53 beside doubles: no column holds both exactly, the read fails (never rounded)', async () => {
    const collection = ours('bigAndDouble')
    await theirs('bigAndDouble').insertMany([
      { n: 0, v: new Double(1.5) },
      { n: 1, v: Long.fromString('9007199254740993') },
    ])
    const read = collection.findArrow({}, { sort: { n: 1 } })
    await expect(read).rejects.toBeInstanceOf(MongoArrowTypeMismatchError)
    await expect(read).rejects.toMatchObject({
      code: 'ERR_ARROW_TYPE_MISMATCH',
      path: 'v',
      row: 1,
      expected: 'double',
      found: 'long',
    })
    // A schema given says what to do with it: 'int64' holds the int64, the double is null and counted.
    const given = await collection.findArrow({}, { sort: { n: 1 }, schema: { v: 'int64' } })
    expect([...given.getChild('v')!]).toEqual([null, 9007199254740993n])
    expect(JSON.parse(given.schema.metadata.get('rumongo.typeMismatches')!)).toEqual({ v: 1 })
  })

  it('a later batch: a number its inferred column cannot hold fails the read, whatever onTypeMismatch says', async () => {
    const encode = inferringEncoder()
    const first = await encode([{ total: 0 }, { total: 10 }, { none: null }])
    expect(JSON.parse(first.schema)).toEqual([
      { name: 'total', type: 'int32' },
      { name: 'none', type: 'null' },
    ])
    // The stream's schema is written: the int32 column cannot widen now.
    const later = await encode([{ total: 20 }, { total: 10.5 }])
    expect(later.ipc ?? null).toBeNull()
    expect(later.typeMismatch).toEqual({ path: 'total', row: 1, expected: 'int32', found: 'double' })
    // A column only null in the first batch would have taken any value.
    expect((await encode([{ none: 'text' }])).typeMismatch).toEqual({
      path: 'none',
      row: 0,
      expected: 'null',
      found: 'string',
    })
    // Values of another type than a column's are nulled and counted, as with a given schema.
    const other = await encode([{ total: 'thirty' }, { total: Long.fromNumber(40) }])
    expect(other.typeMismatch ?? null).toBeNull()
    expect(other.mismatches).toEqual([{ path: 'total', count: 1 }])
    expect([...arrow.tableFromIPC(other.ipc).getChild('total')!]).toEqual([null, 40])

    // A schema given: the double is null and counted, as onTypeMismatch: 'null' promises.
    const given = inferringEncoder({ schema: JSON.stringify([{ name: 'total', type: 'int32' }]) })
    await given([{ total: 0 }])
    const nulled = await given([{ total: 10.5 }])
    expect(nulled.typeMismatch ?? null).toBeNull()
    expect(nulled.mismatches).toEqual([{ path: 'total', count: 1 }])
  })

  it('a later record batch, end to end: the cursor rejects after the rows before it, never a null', async () => {
    // The first record batch (2 rows) holds int32s only; the double comes in the second.
    const later = ours('later')
    await theirs('later').insertMany([
      { n: 0, total: 0 },
      { n: 1, total: 10 },
      { n: 2, total: 20 },
      { n: 3, total: 10.5 },
    ])
    const cursor = later.findArrowCursor({}, { sort: { n: 1 }, batchSize: 2, rowsPerBatch: 2 })
    const rows: unknown[] = []
    let failure: unknown
    try {
      for await (const batch of cursor) rows.push(...[...batch.getChild('total')!])
    } catch (error) {
      failure = error
    }
    expect(rows).toEqual([0, 10])
    expect(failure).toBeInstanceOf(MongoArrowTypeMismatchError)
  })

  it('mixed types in the first batch: numbers widen, a string or document is null and counted', async () => {
    const collection = ours('mixed')
    await theirs('mixed').insertMany([
      { n: 0, v: new Int32(1) },
      { n: 1, v: 'two' },
      { n: 2, v: new Double(3.5) },
      { n: 3, v: Long.fromNumber(4) },
      { n: 4, v: { nested: 1 } },
      { n: 5, v: null },
    ])
    const table = await collection.findArrow({}, { sort: { n: 1 } })
    expect(typeOf(table, 'v')).toBe('Float64')
    expect([...table.getChild('v')!]).toEqual([1, null, 3.5, 4, null, null])
    expect(JSON.parse(table.schema.metadata.get('rumongo.typeMismatches')!)).toEqual({ v: 2 })
  })
})

/**
 * `{ n: 1, a: { a: ... {} } }` or `{ n: 1, a: [[ ... [] ]] }`: `depth` documents (or arrays) below
 * the top, the innermost empty, written in place (js-bson's serializer recurses once per level).
 */
function nested(depth: number, nesting: 'documents' | 'arrays'): Buffer {
  const tag = nesting === 'documents' ? 0x03 : 0x04
  const key = nesting === 'documents' ? 0x61 : 0x30 // 'a', or the index '0'
  // Level k (1 to depth): its length prefix, one element (tag, key, its zero), level k + 1, its
  // terminator; the innermost is 5 bytes.
  const length = (level: number) => 5 + 8 * (depth - level)
  const bytes = Buffer.alloc(length(1) + 15) // zeros: every terminator already in place
  bytes.writeInt32LE(bytes.length, 0)
  bytes.set([0x10, 0x6e, 0, 1, 0, 0, 0, tag, 0x61, 0], 4) // n: int32 1, then a:
  let at = 14
  for (let level = 1; level < depth; level++, at += 7) {
    bytes.writeInt32LE(length(level), at)
    bytes.set([tag, key, 0], at + 4)
  }
  bytes.writeInt32LE(5, at)
  return bytes
}

/** A document of `count` fields `k0`, `k1`, ... (in reverse order with `reversed`), each null or int32 `value`. */
function wide(count: number, value: number | null, reversed: boolean): Buffer {
  const element = value === null ? 9 : 13 // tag, "k" and up to 6 digits, zero; an int32: 4 bytes
  const bytes = Buffer.alloc(count * element + 5)
  let at = 4
  for (let n = 0; n < count; n++) {
    bytes[at++] = value === null ? 0x0a : 0x10
    at += bytes.write(`k${reversed ? count - 1 - n : n}\0`, at, 'latin1')
    if (value !== null) at = bytes.writeInt32LE(value, at)
  }
  bytes[at++] = 0
  bytes.writeInt32LE(at, 0)
  return bytes.subarray(0, at)
}

describe('no stack overflow, no quadratic walk: nesting bounded with a typed error, width linear', () => {
  it(`inference: a document nested deeper than ${MAX_ARROW_NESTING} levels fails at once, however deep; a schema reads it`, async () => {
    expect(MAX_ARROW_NESTING).toBe(32)
    // `depth` levels below the top: field `a` is the column at level 1, so its innermost document
    // is a struct column at level `depth`.
    const documents = (depth: number) => [nested(depth, 'documents')]
    const served: ServedReplay = await serveDocuments({
      fits: documents(MAX_ARROW_NESTING),
      deeper: documents(MAX_ARROW_NESTING + 1),
      deep: documents(1_500),
      deepest: documents(200_000),
      arrays: [nested(1_500, 'arrays')],
      fitsArrays: [nested(MAX_ARROW_NESTING - 1, 'arrays')],
    })
    const client = await MongoClient.connect(served.uri)
    try {
      const collection = (name: string) => client.db('bench').collection(name)
      expect(BSON.deserialize(documents(3)[0])).toEqual({ n: 1, a: { a: { a: {} } } })
      expect(BSON.deserialize(nested(2, 'arrays'))).toEqual({ n: 1, a: [[]] })
      const fits = await collection('fits').findArrow({})
      let type = fits.schema.fields[1].type
      for (let level = 1; level < MAX_ARROW_NESTING; level++) type = type.children[0].type
      expect(String(type)).toBe('Struct<{}>')
      expect(String((await collection('fitsArrays').findArrow({})).schema.fields[1].type)).toBe(
        `${'List<'.repeat(MAX_ARROW_NESTING - 1)}Null${'>'.repeat(MAX_ARROW_NESTING - 1)}`,
      )

      for (const name of ['deeper', 'deep', 'deepest', 'arrays']) {
        const read = collection(name).findArrow({})
        await expect(read, name).rejects.toBeInstanceOf(MongoInvalidArgumentError)
        await expect(read, name).rejects.toMatchObject({
          code: 'ERR_INVALID_ARGUMENT',
          message: expect.stringContaining(
            `Arrow columns nest at most ${MAX_ARROW_NESTING} levels (each struct or list is one), but field 'a`,
          ),
        })
      }
      const error = await collection('deep')
        .findArrow({})
        .catch((error) => error)
      expect(error.message).toContain(
        `'${Array(MAX_ARROW_NESTING + 1)
          .fill('a')
          .join('.')}'`,
      )
      // A schema that leaves the deep part out reads it (still checked, without recursion; the
      // replay server takes no projection).
      const given = await collection('deepest').findArrow(
        {},
        { schema: { n: 'int32', a: { a: 'utf8' } }, projection: undefined },
      )
      expect(given.getChild('n')!.toArray()).toEqual(Int32Array.from([1]))
      expect(JSON.parse(given.schema.metadata.get('rumongo.typeMismatches')!)).toEqual({ 'a.a': 1 })
    } finally {
      await client.close()
      await served.stop()
    }
  })

  it('width: documents of 200,000 fields in two orders are inferred and built in linear time', async () => {
    const count = 200_000
    // Null columns from the first document, typed by the second, whose keys come in reverse order:
    // each key is found by name, not by a scan (which took minutes here: 40,000 fields took 2 s).
    const served: ServedReplay = await serveDocuments({
      wide: [wide(count, null, false), wide(count, 7, true)],
    })
    const client = await MongoClient.connect(served.uri)
    try {
      const started = performance.now()
      const ipc = await client.db('bench').collection('wide').findArrow({}, { as: 'ipc' })
      // Generous: a linear read takes well under a second on an idle machine.
      expect(performance.now() - started).toBeLessThan(20_000)
      // flechette: apache-arrow's tableFromIPC takes time quadratic in the columns (40,000: 15 s).
      const table = flechetteTableFromIPC(ipc)
      expect(table.numCols).toBe(count)
      expect(table.schema.fields[0].type).toMatchObject({ typeId: arrow.Type.Int, bitWidth: 32 })
      for (const name of ['k0', 'k1', `k${count - 1}`])
        expect(table.getChild(name).toArray()).toEqual([null, 7])
    } finally {
      await client.close()
      await served.stop()
    }
  })

  /** `{ a: { a: ... type } }` (or `[[ ... type ]]`), `depth` levels, built without recursion. */
  function deepSpec(depth: number, kind: 'structs' | 'lists'): ArrowSchemaSpec {
    let type: unknown = 'int32'
    for (let level = 1; level < depth; level++) type = kind === 'structs' ? { a: type } : [type]
    return { a: type } as ArrowSchemaSpec
  }

  it(`a schema given: ${MAX_ARROW_NESTING} levels are built, deeper ones (43, 5,000, circular) are a MongoInvalidArgumentError`, async () => {
    const collection = ours('numbers')
    const fits = await collection.findArrow({ n: -1 }, { schema: deepSpec(MAX_ARROW_NESTING, 'structs') })
    expect(fits.schema.fields).toHaveLength(1)
    await collection.findArrow({ n: -1 }, { schema: deepSpec(MAX_ARROW_NESTING, 'lists') })

    const circular: Record<string, unknown> = { n: 'int32' }
    circular.self = { again: circular }
    const list: unknown[] = []
    list.push(list)
    const refused: [ArrowSchemaSpec | arrow.Schema, string][] = [
      [
        deepSpec(MAX_ARROW_NESTING + 1, 'structs'),
        'is nested deeper than 32 levels (each struct or list is one)',
      ],
      [deepSpec(43, 'structs'), 'is nested deeper than 32 levels (each struct or list is one)'],
      [deepSpec(5_000, 'structs'), 'is nested deeper than 32 levels (each struct or list is one)'],
      [deepSpec(5_000, 'lists'), 'is nested deeper than 32 levels (each struct or list is one)'],
      [circular as ArrowSchemaSpec, "field 'self.again' contains itself (a circular schema)"],
      [{ l: list } as unknown as ArrowSchemaSpec, "field 'l[]' contains itself (a circular schema)"],
      [
        deepArrowSchema(MAX_ARROW_NESTING + 1),
        'is nested deeper than 32 levels (each struct or list is one)',
      ],
    ]
    for (const [schema, message] of refused) {
      const read = collection.findArrow({}, { schema })
      await expect(read, message).rejects.toBeInstanceOf(MongoInvalidArgumentError)
      await expect(read, message).rejects.toMatchObject({
        code: 'ERR_INVALID_ARGUMENT',
        message: expect.stringContaining(message),
      })
      expect(() => collection.findArrowCursor({}, { schema }), message).toThrow(MongoInvalidArgumentError)
    }
    await collection.findArrow({ n: -1 }, { schema: deepArrowSchema(MAX_ARROW_NESTING) })

    // The native encoder checks too (its JSON may come from elsewhere than the DSL).
    const json = (depth: number) => {
      let type: unknown = 'int32'
      for (let level = 1; level < depth; level++) type = { struct: [{ name: 'a', type }] }
      return JSON.stringify([{ name: 'a', type }])
    }
    expect(() => inferringEncoder({ schema: json(MAX_ARROW_NESTING) })).not.toThrow()
    for (const depth of [MAX_ARROW_NESTING + 1, 42, 1_000]) {
      let error: unknown
      try {
        callNativeSync(() => inferringEncoder({ schema: json(depth) }))
      } catch (caught) {
        error = caught
      }
      expect(error, String(depth)).toBeInstanceOf(MongoInvalidArgumentError)
      expect((error as MongoInvalidArgumentError).code).toBe('ERR_INVALID_ARGUMENT')
    }
  })
})

/** An apache-arrow Schema with one column of `depth` nested structs around an int32. */
function deepArrowSchema(depth: number): arrow.Schema {
  let type: arrow.DataType = new arrow.Int32()
  for (let level = 1; level < depth; level++) type = new arrow.Struct([new arrow.Field('a', type)])
  return new arrow.Schema([new arrow.Field('a', type)])
}
