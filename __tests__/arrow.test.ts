// findArrow / aggregateArrow / their cursors / pipeArrow: query results as Apache Arrow, built in
// Rust from the raw BSON, checked column by column against the official driver's documents.
import { execFileSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { availableParallelism } from 'node:os'
import { Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as arrow from 'apache-arrow'
import { tableFromIPC as flechetteTableFromIPC } from '@uwdata/flechette'
import {
  BSON,
  Decimal128,
  Double,
  Int32,
  Long,
  MongoClient as OfficialClient,
  ObjectId,
  type Document,
} from 'mongodb'
import {
  MongoArrowTypeMismatchError,
  MongoClient,
  MongoInvalidArgumentError,
  MongoOperationTimeoutError,
  type ArrowSchemaSpec,
  type Collection,
} from 'rumongo'
import { objectIdFor, typedDocuments } from './setup/data.js'
import { connectBoth, serverCursorAlive, settled, uniqueDbName, uri, type Drivers } from './setup/helpers.js'
import { serveDocuments, type ServedReplay } from './setup/replay.js'

// The native encoder and a test batch, to hand it what JS can hold (src/format/arrow.rs's RawBatch).
const requireCjs = createRequire(import.meta.url)
const { NativeArrowEncoder, encodeTestBatch, BatchOutput } = requireCjs('../dist/native.cjs')
const { callNative } = requireCjs('../dist/errors.js')

const dbName = uniqueDbName('arrow')
let drivers: Drivers

/** Every column type the typed documents hold, in the schema DSL. */
const TYPED_SCHEMA: ArrowSchemaSpec = {
  _id: 'objectId',
  index: 'int32',
  name: 'utf8',
  unicode: 'utf8',
  int32: 'int32',
  double: 'double',
  wholeDouble: 'double',
  smallLong: 'int64',
  bigLong: 'int64',
  negativeBigLong: 'int64',
  date: 'timestamp',
  flag: 'bool',
  binary: 'binary',
  uuid: 'binary',
  md5: 'binary',
  nested: { level: 'int32', inner: { level: 'int32', tags: ['utf8'], at: 'timestamp' } },
  tags: ['utf8'],
  items: [{ sku: 'utf8', qty: 'int32', price: 'double' }],
  region: 'utf8',
  optional: 'utf8',
}

/** Mixed types in one field: what each mode does with the values that do not fit. */
const MIXED = [
  { n: 0, v: new Int32(1) },
  { n: 1, v: 'two' },
  { n: 2, v: new Int32(3) },
  { n: 3, v: new Double(4.5) },
  { n: 4, v: Long.fromNumber(5) },
  { n: 5, v: Long.fromString('9007199254740993') },
  { n: 6 },
  { n: 7, v: null },
  { n: 8, v: { nested: 1 } },
]

beforeAll(async () => {
  drivers = await connectBoth()
  const db = drivers.official.db(dbName)
  await db.collection('typed').insertMany(typedDocuments())
  await db.collection('mixed').insertMany(MIXED.map((document) => ({ ...document })))
  await db
    .collection('many')
    .insertMany(
      Array.from({ length: 2500 }, (_, n) => ({ _id: n, n, price: new Double(n / 4), label: `row ${n}` })),
    )
})

afterAll(async () => {
  await drivers.official.db(dbName).dropDatabase()
  await drivers.close()
})

const ours = (name: string): Collection => drivers.rumongo.db(dbName).collection(name)
const theirs = (name: string) => drivers.official.db(dbName).collection(name)

/** The official driver's value as the Arrow column of `type` must hold it. */
function expectedCell(value: unknown, type: string): unknown {
  if (value === undefined || value === null) return null
  switch (type) {
    case 'int64':
      return BigInt(String(value))
    case 'timestamp':
      return (value as Date).getTime()
    case 'objectId':
      return Buffer.from((value as ObjectId).id).toString('hex')
    case 'objectIdHex':
      return (value as ObjectId).toHexString()
    case 'binary':
      return Buffer.from((value as { buffer: Uint8Array }).buffer).toString('hex')
    default:
      return value
  }
}

/** A cell read from apache-arrow, in `expectedCell`'s terms. */
function actualCell(value: unknown, type: string): unknown {
  if (value === null || value === undefined) return null
  if (type === 'timestamp') return Number(value)
  if (value instanceof Uint8Array) return Buffer.from(value).toString('hex')
  return value
}

/** A struct or list cell as plain JS, comparable with the official driver's value. */
function plain(value: unknown): unknown {
  if (value === null || value === undefined) return null
  if (value instanceof Uint8Array) return Buffer.from(value).toString('hex')
  if (typeof value === 'bigint') return value
  if (value instanceof arrow.Vector) return [...value].map(plain)
  if (typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return plain((value as { toJSON(): unknown }).toJSON())
  }
  if (Array.isArray(value)) return value.map(plain)
  if (typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Document).map(([key, inner]) => [key, plain(inner)]))
  }
  return value
}

describe('findArrow: every type against the official driver', () => {
  it('a given schema: each column equals the official values, row by row', async () => {
    const table = await ours('typed').findArrow({}, { schema: TYPED_SCHEMA, sort: { index: 1 } })
    const expected = await theirs('typed')
      .find({}, { sort: { index: 1 } })
      .toArray()
    expect(table.numRows).toBe(expected.length)
    expect(table.schema.fields.map((field) => field.name)).toEqual(Object.keys(TYPED_SCHEMA))
    for (const [name, type] of Object.entries(TYPED_SCHEMA)) {
      if (typeof type !== 'string') continue
      const column = table.getChild(name)!
      expect(column.length, name).toBe(expected.length)
      for (let row = 0; row < expected.length; row++) {
        expect(actualCell(column.get(row), type), `${name}[${row}]`).toEqual(
          expectedCell(expected[row][name], type),
        )
      }
    }
    expect(String(table.schema.fields.find((field) => field.name === 'date')!.type)).toBe(
      'Timestamp<MILLISECOND, UTC>',
    )
    expect(table.schema.fields[0].metadata.get('ARROW:extension:name')).toBe('rumongo.objectid')
  })

  it('nested documents are structs and arrays lists, equal to the official values', async () => {
    const table = await ours('typed').findArrow({}, { schema: TYPED_SCHEMA, sort: { index: 1 } })
    const expected = await theirs('typed')
      .find({}, { sort: { index: 1 } })
      .toArray()
    const nested = table.getChild('nested')!
    const tags = table.getChild('tags')!
    const items = table.getChild('items')!
    for (let row = 0; row < expected.length; row++) {
      const want = expected[row]
      const inner = nested.get(row)!.inner
      expect(nested.get(row)!.level).toBe(want.nested.level)
      expect(inner.level).toBe(want.nested.inner.level)
      expect(Number(inner.at)).toBe(want.nested.inner.at.getTime())
      expect(plain(inner.tags)).toEqual(want.nested.inner.tags)
      expect(plain(tags.get(row))).toEqual(want.tags)
      expect(plain(items.get(row))).toEqual(
        want.items.map((item: Document) => ({ sku: item.sku, qty: item.qty, price: item.price })),
      )
    }
  })

  it('a missing field is null, and so is a BSON null', async () => {
    const table = await ours('typed').findArrow(
      {},
      { schema: { index: 'int32', optional: 'utf8', nothing: 'utf8', absent: 'double' }, sort: { index: 1 } },
    )
    const expected = await theirs('typed')
      .find({}, { sort: { index: 1 } })
      .toArray()
    for (let row = 0; row < expected.length; row++) {
      expect(table.getChild('optional')!.get(row)).toBe(expected[row].optional ?? null)
      expect(table.getChild('nothing')!.get(row)).toBeNull()
      expect(table.getChild('absent')!.get(row)).toBeNull()
    }
    expect(table.getChild('absent')!.nullCount).toBe(expected.length)
  })

  it('objectIdHex holds the hex string', async () => {
    const table = await ours('typed').findArrow({}, { schema: { _id: 'objectIdHex' }, sort: { index: 1 } })
    const expected = await theirs('typed')
      .find({}, { sort: { index: 1 } })
      .toArray()
    expect(table.getChild('_id')!.toArray()).toEqual(expected.map((document) => document._id.toHexString()))
  })

  it('Decimal128 is a 16-byte extension column holding the BSON bytes (replay server)', async () => {
    const values = ['1.5', '-0.000001', '12345678901234567890.1234', 'NaN']
    const documents = values.map((value, n) => BSON.serialize({ n, d: Decimal128.fromString(value) }))
    const served: ServedReplay = await serveDocuments({ decimals: documents })
    const client = await MongoClient.connect(served.uri)
    try {
      // The replay server takes no projection: inferred, then given with no projection sent.
      const collection = client.db('bench').collection('decimals')
      const inferred = await collection.findArrow({})
      expect(String(inferred.schema.fields[1].type)).toBe('FixedSizeBinary[16]')
      const given = await collection.findArrow({}, { schema: { d: 'decimal128' }, projection: undefined })
      for (const table of [inferred, given]) {
        const field = table.schema.fields.find((field) => field.name === 'd')!
        expect(field.metadata.get('ARROW:extension:name')).toBe('rumongo.decimal128')
        const cells = [...table.getChild('d')!].map(
          (bytes) => new Decimal128(Buffer.from(bytes as Uint8Array)),
        )
        expect(cells.map(String)).toEqual(values)
      }
    } finally {
      await client.close()
      await served.stop()
    }
  })
})

describe('repeated keys (replay server)', () => {
  it("a repeated key's last value wins, as in the official driver's documents", async () => {
    // { n, v: 1, tags: ['a'], sub: { x: 1 }, v: 2, tags: ['b', 'c'], sub: { x: 2 } }, built by hand:
    // js-bson never writes a key twice.
    const element = (value: Document) => BSON.serialize(value).subarray(4, -1)
    const repeated = (n: number) => {
      const body = Buffer.concat([
        element({ n }),
        element({ v: new Int32(1) }),
        element({ tags: ['a'] }),
        element({ sub: { x: new Int32(1) } }),
        element({ v: new Int32(2 + n) }),
        element({ tags: ['b', 'c'] }),
        element({ sub: { x: new Int32(2) } }),
      ])
      const document = Buffer.alloc(body.length + 5)
      document.writeInt32LE(document.length, 0)
      body.copy(document, 4)
      return document
    }
    const served = await serveDocuments({ repeated: [repeated(0), repeated(1)] })
    const client = await MongoClient.connect(served.uri)
    const official = await OfficialClient.connect(served.uri)
    try {
      const expected = await official.db('bench').collection('repeated').find({}).toArray()
      const table = await client
        .db('bench')
        .collection('repeated')
        .findArrow({}, { schema: { v: 'int32', tags: ['utf8'], sub: { x: 'int32' } }, projection: undefined })
      expect([...table.getChild('v')!]).toEqual(expected.map((document) => document.v))
      expect([...table.getChild('tags')!].map((tags) => plain(tags))).toEqual(
        expected.map((document) => document.tags),
      )
      expect(plain(table.getChild('sub')!.get(1))).toEqual(expected[1].sub)
      expect(table.numRows).toBe(2)
    } finally {
      await Promise.all([client.close(), official.close()])
      await served.stop()
    }
  })
})

describe('schema inference', () => {
  it('infers PyMongoArrow-style: fields in order of first appearance, typed by their first value', async () => {
    const table = await ours('typed').findArrow({}, { sort: { index: 1 } })
    const types = Object.fromEntries(table.schema.fields.map((field) => [field.name, String(field.type)]))
    expect(types).toMatchObject({
      _id: 'FixedSizeBinary[12]',
      index: 'Int32',
      name: 'Utf8',
      double: 'Float64',
      bigLong: 'Int64',
      date: 'Timestamp<MILLISECOND, UTC>',
      flag: 'Bool',
      nothing: 'Null',
      binary: 'Binary',
      tags: 'List<Utf8>',
      items: 'List<Struct<{sku:Utf8, qty:Int32, price:Float64}>>',
      optional: 'Utf8',
    })
    // Regular expressions and timestamps have no column type: left out, as PyMongoArrow does.
    expect(types.pattern).toBeUndefined()
    expect(types.timestamp).toBeUndefined()
    // A field first seen in a later document comes last.
    expect(table.schema.fields.at(-1)!.name).toBe('optional')
    const expected = await theirs('typed')
      .find({}, { sort: { index: 1 } })
      .toArray()
    for (const name of ['index', 'name', 'double', 'flag']) {
      expect([...table.getChild(name)!], name).toEqual(expected.map((document) => document[name]))
    }
    expect([...table.getChild('bigLong')!]).toEqual(
      expected.map((document) => BigInt(String(document.bigLong))),
    )
  })

  it("objectId: 'hex' infers ObjectIds as hex strings", async () => {
    const table = await ours('typed').findArrow({}, { objectId: 'hex', sort: { index: 1 }, limit: 2 })
    expect(table.getChild('_id')!.get(0)).toBe(objectIdFor(0).toHexString())
  })

  it('an empty result: no rows; a given schema keeps its columns', async () => {
    const inferred = await ours('typed').findArrow({ index: -1 })
    expect(inferred.numRows).toBe(0)
    expect(inferred.numCols).toBe(0)
    const given = await ours('typed').findArrow({ index: -1 }, { schema: { index: 'int32', name: 'utf8' } })
    expect(given.numRows).toBe(0)
    expect(given.schema.fields.map((field) => String(field.type))).toEqual(['Int32', 'Utf8'])
  })
})

describe('type mismatches', () => {
  it("'null' (default): values that do not fit are null and counted per column", async () => {
    const cursor = ours('mixed').findArrowCursor({}, { schema: { n: 'int32', v: 'int32' }, sort: { n: 1 } })
    const batches = []
    for await (const batch of cursor) batches.push(batch)
    const table = new arrow.Table(batches)
    // int64 5 fits an int32; 'two', 4.5, 2^53+1 and a document do not.
    expect([...table.getChild('v')!]).toEqual([1, null, 3, null, 5, null, null, null, null])
    expect(cursor.typeMismatches).toEqual({ v: 4 })

    const table2 = await ours('mixed').findArrow({}, { schema: { v: 'double' }, sort: { n: 1 } })
    expect([...table2.getChild('v')!]).toEqual([1, null, 3, 4.5, 5, null, null, null, null])
    expect(JSON.parse(table2.schema.metadata.get('rumongo.typeMismatches')!)).toEqual({ v: 3 })
  })

  it("'error': the first value that does not fit fails the read with a typed error", async () => {
    const read = ours('mixed').findArrow(
      {},
      { schema: { v: 'int32' }, sort: { n: 1 }, onTypeMismatch: 'error' },
    )
    await expect(read).rejects.toBeInstanceOf(MongoArrowTypeMismatchError)
    await expect(read).rejects.toMatchObject({
      code: 'ERR_ARROW_TYPE_MISMATCH',
      path: 'v',
      row: 1,
      expected: 'int32',
      found: 'string',
      message: "Arrow column 'v' expects int32, but document 1 of the results holds a string",
    })
  })

  it('inference widens numbers over the batch; other types are mismatches, a number no column holds fails', async () => {
    const cursor = ours('mixed').findArrowCursor({ n: { $ne: 5 } }, { sort: { n: 1 } })
    const table = new arrow.Table(await collect(cursor))
    expect(String(table.schema.fields.find((field) => field.name === 'v')!.type)).toBe('Float64')
    expect([...table.getChild('v')!]).toEqual([1, null, 3, 4.5, 5, null, null, null])
    expect(cursor.typeMismatches).toEqual({ v: 2 })
    // 2^53 + 1 (an int64) beside doubles: no Arrow column holds both exactly (see arrow_inference).
    await expect(ours('mixed').findArrow({}, { sort: { n: 1 } })).rejects.toMatchObject({
      code: 'ERR_ARROW_TYPE_MISMATCH',
      path: 'v',
      row: 5,
      expected: 'double',
      found: 'long',
    })
  })

  it('a mismatch inside a list or struct is counted under its path', async () => {
    const table = await ours('typed').findArrow({}, { schema: { mixed: ['int32'] }, sort: { index: 1 } })
    const first = [...(table.getChild('mixed')!.get(0) as arrow.Vector)]
    // [1, 'two', 3.5, true, null, { four: 4 }, 2^40]
    expect(first).toEqual([1, null, null, null, null, null, null])
    expect(JSON.parse(table.schema.metadata.get('rumongo.typeMismatches')!)).toEqual({ 'mixed[]': 5 * 24 })
  })
})

describe('projection from the schema', () => {
  it('a given schema becomes the projection; _id only when listed', async () => {
    const commands: Document[] = []
    const monitored = await MongoClient.connect(uri, { monitorCommands: true })
    monitored.on('commandStarted', (event) => commands.push(event.command))
    try {
      const collection = monitored.db(dbName).collection('typed')
      await collection.findArrow({}, { schema: { index: 'int32', nested: { level: 'int32' } } })
      expect(commands.at(-1)!.projection).toEqual({ index: 1, nested: 1, _id: 0 })
      await collection.findArrow({}, { schema: { _id: 'objectId', index: 'int32' } })
      expect(commands.at(-1)!.projection).toEqual({ _id: 1, index: 1 })
      // The caller's own projection wins.
      await collection.findArrow({}, { schema: { index: 'int32' }, projection: { index: 1, name: 1 } })
      expect(commands.at(-1)!.projection).toEqual({ index: 1, name: 1 })
      await collection.aggregateArrow([{ $match: {} }], { schema: { index: 'int32' } })
      expect(commands.at(-1)!.pipeline).toEqual([{ $match: {} }, { $project: { index: 1, _id: 0 } }])
    } finally {
      await monitored.close()
    }
  })

  it('aggregateArrow builds the pipeline results', async () => {
    const table = await ours('many').aggregateArrow(
      [{ $match: { n: { $lt: 100 } } }, { $group: { _id: null, total: { $sum: '$price' } } }],
      { schema: { total: 'double' } },
    )
    const [expected] = await theirs('many')
      .aggregate([{ $match: { n: { $lt: 100 } } }, { $group: { _id: null, total: { $sum: '$price' } } }])
      .toArray()
    expect(table.getChild('total')!.get(0)).toBe(expected.total)
  })
})

describe('streaming', () => {
  it('a cursor yields one record batch per server batch, of one schema', async () => {
    const cursor = ours('many').findArrowCursor({}, { sort: { n: 1 }, batchSize: 1000 })
    const sizes: number[] = []
    let sum = 0
    for await (const batch of cursor) {
      sizes.push(batch.numRows)
      for (const price of batch.getChild('price')!) sum += price as number
    }
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(2500)
    expect(sizes.length).toBeGreaterThanOrEqual(3)
    expect(sum).toBe(Array.from({ length: 2500 }, (_, n) => n / 4).reduce((a, b) => a + b, 0))
    expect(cursor.closed).toBe(true)
  })

  it('rowsPerBatch gathers server batches', async () => {
    const cursor = ours('many').findArrowCursor({}, { sort: { n: 1 }, batchSize: 100, rowsPerBatch: 1000 })
    const sizes = (await collect(cursor)).map((batch) => batch.numRows)
    expect(sizes).toEqual([1000, 1000, 500])
  })

  it('leaving a for await early kills the server cursor', async () => {
    const cursor = ours('many').findArrowCursor({}, { sort: { n: 1 }, batchSize: 100 })
    let id = cursor.id
    for await (const _ of cursor) {
      id = cursor.id
      break
    }
    expect(cursor.closed).toBe(true)
    expect(id!.isZero()).toBe(false)
    // Killed, its id reads 0, as a find cursor's (and the official cursor's).
    expect(cursor.id!.isZero()).toBe(true)
    expect(await settled(() => cursorAlive(id!, 'many'), false)).toBe(false)
  })

  it('a type mismatch error kills the server cursor', async () => {
    const cursor = ours('mixed').findArrowCursor(
      {},
      { schema: { v: 'bool' }, onTypeMismatch: 'error', sort: { n: 1 }, batchSize: 2 },
    )
    await expect(cursor.next()).rejects.toBeInstanceOf(MongoArrowTypeMismatchError)
    expect(cursor.closed).toBe(true)
    expect(await settled(() => cursorAlive(cursor.id!, 'mixed'), false)).toBe(false)
  })

  it('pipeArrow writes one IPC stream that apache-arrow and flechette read', async () => {
    const chunks: Buffer[] = []
    const destination = new Writable({
      highWaterMark: 1024,
      write(chunk, _encoding, done) {
        chunks.push(chunk)
        setImmediate(done)
      },
    })
    const written = await ours('many').pipeArrow(
      {},
      { sort: { n: 1 }, batchSize: 500, rowsPerBatch: 500, schema: { n: 'int32', label: 'utf8' } },
      destination,
    )
    const bytes = Buffer.concat(chunks)
    expect(written).toMatchObject({ rows: 2500, batches: 5, bytes: bytes.length })
    expect(destination.writableFinished).toBe(true)
    const table = arrow.tableFromIPC(bytes)
    expect(table.numRows).toBe(2500)
    expect(table.batches.length).toBe(5)
    expect(table.getChild('label')!.get(2499)).toBe('row 2499')
    const flechette = flechetteTableFromIPC(bytes)
    expect(flechette.numRows).toBe(2500)
    expect(flechette.getChild('n').at(1234)).toBe(1234)
  })

  it('a query that fails rejects pipeArrow with the destination untouched', async () => {
    let wrote = false
    const destination = new Writable({
      write(_chunk, _encoding, done) {
        wrote = true
        done()
      },
    })
    await expect(ours('many').pipeArrow({ $bogus: 1 }, {}, destination)).rejects.toMatchObject({
      name: 'MongoServerError',
    })
    expect(wrote).toBe(false)
    expect(destination.writableEnded).toBe(false)
  })
})

describe('streaming over the replay server', () => {
  let served: ServedReplay
  let client: MongoClient
  beforeAll(async () => {
    served = await serveDocuments({}, { docs: 100_000 })
    client = await MongoClient.connect(served.uri)
  })
  afterAll(async () => {
    await client?.close()
    await served?.stop()
  })

  it('a slow reader holds back the getMores: a few server batches ahead, whatever the result size', async () => {
    const getMores: number[] = []
    const monitored = await MongoClient.connect(served.uri, { monitorCommands: true })
    monitored.on('commandStarted', (event) => {
      if (event.commandName === 'getMore') getMores.push(Date.now())
    })
    try {
      const cursor = monitored
        .db('bench')
        .collection('wide45')
        .findArrowCursor({}, { limit: 100_000, batchSize: 2000 })
      let rows = 0
      let batches = 0
      let ipcBytes = 0
      let mostAhead = 0
      for (let batch; (batch = await cursor.nextIPC()) !== null;) {
        batches++
        ipcBytes += batch.length
        rows += arrow.tableFromIPC(batch).numRows
        await sleep(5) // a slow reader: fetching must wait for it
        // Server batches fetched (the find's, then each getMore's) beyond those read.
        mostAhead = Math.max(mostAhead, 1 + getMores.length - batches)
      }
      expect(rows).toBe(100_000)
      expect(batches).toBeGreaterThanOrEqual(50)
      expect(ipcBytes).toBeGreaterThan(50 * 1024 * 1024)
      // The default prefetch (2) and the record batch built ahead: never the whole result.
      expect(mostAhead).toBeLessThanOrEqual(4)
    } finally {
      await monitored.close()
    }
  })

  it('findArrow asks for ~4 MiB server batches once the document size is known (find: ~512 KiB); a batchSize given is kept', async () => {
    const batchSizes: number[] = []
    const monitored = await MongoClient.connect(served.uri, { monitorCommands: true })
    monitored.on('commandStarted', (event) => {
      if (event.commandName === 'find') batchSizes.push(event.command.batchSize)
    })
    try {
      // A projection of its own (every field but d14), so that no other test taught this query's
      // document size.
      const fields = ['_id', 'n', ...[...Array(14)].map((_, i) => `s${String(i + 1).padStart(2, '0')}`)]
      fields.push(...[...Array(15)].map((_, i) => `i${String(i + 1).padStart(2, '0')}`))
      fields.push(...[...Array(13)].map((_, i) => `d${String(i + 1).padStart(2, '0')}`))
      const options = { limit: 20_000, projection: Object.fromEntries(fields.map((name) => [name, 1])) }
      const wide = monitored.db('bench').collection('wide45')
      expect((await wide.findArrow({}, options)).numRows).toBe(20_000)
      // Unknown size: 2,000 documents, as a find's first read.
      expect(batchSizes).toEqual([2000])
      await wide.find({}, options).next()
      const table = await wide.findArrow({}, options)
      expect(table.numRows).toBe(20_000)
      const [, found, bulk] = batchSizes
      // ~810-byte documents: ~640 per find batch, 8 times as many per findArrow batch.
      expect(found).toBeGreaterThan(500)
      expect(found).toBeLessThan(800)
      expect(Math.abs(bulk / found - 8)).toBeLessThan(0.05)
      await wide.findArrow({}, { ...options, batchSize: 700 })
      expect(batchSizes.at(-1)).toBe(700)
    } finally {
      await monitored.close()
    }
  })

  it('pipeArrow and pipeJson hold only the parts being written, not all they wrote', async () => {
    // A child process with --expose-gc: the sink collects garbage after every part and records the
    // most external memory (where Buffers live) alive at once. Each pipe writes ~190-290 MB in all.
    const large = await serveDocuments({}, { docs: 300_000 })
    const script = `
      const { Writable } = require('node:stream')
      const { MongoClient } = require(${JSON.stringify(require.resolve('rumongo'))})
      ;(async () => {
        const client = await MongoClient.connect(${JSON.stringify(large.uri)})
        const wide = client.db('bench').collection('wide45')
        const out = {}
        for (const method of ['pipeArrow', 'pipeJson']) {
          let most = 0
          let written = 0
          const sink = new Writable({
            write(chunk, _encoding, done) {
              written += chunk.length
              gc()
              most = Math.max(most, process.memoryUsage().external)
              setImmediate(done)
            },
          })
          await wide[method]({}, { limit: 300000 }, sink)
          out[method] = { most, written }
        }
        await client.close()
        console.log(JSON.stringify(out))
      })()
    `
    let out: Record<string, { most: number; written: number }>
    try {
      out = JSON.parse(execFileSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' }))
    } finally {
      await large.stop()
    }
    const MB = 1024 * 1024
    // pipeArrow writes ~13 MB record batches (one written, one built ahead, one being freed);
    // pipeJson a server batch's JSON at a time.
    expect(out.pipeArrow!.written).toBeGreaterThan(150 * MB)
    expect(out.pipeArrow!.most).toBeLessThan(60 * MB)
    expect(out.pipeJson!.written).toBeGreaterThan(250 * MB)
    expect(out.pipeJson!.most).toBeLessThan(30 * MB)
  })

  it('a large findArrow is built in parallel record batches, equal to the official documents', async () => {
    const wide = client.db('bench').collection('wide45')
    const table = await wide.findArrow({}, { limit: 20_000 })
    expect(table.numRows).toBe(20_000)
    // ~16 MB of BSON, one encode: a record batch per core, of at least 4 MiB, built in parallel.
    expect(table.batches.length).toBeGreaterThanOrEqual(Math.min(availableParallelism(), 2))
    expect(table.batches.length).toBeLessThanOrEqual(4)
    const official = await OfficialClient.connect(served.uri)
    try {
      const expected = await official
        .db('bench')
        .collection('wide45')
        .find({}, { limit: 20_000, projection: { n: 1, s01: 1, d14: 1, _id: 0 } })
        .toArray()
      for (const name of ['n', 's01', 'd14']) {
        expect([...table.getChild(name)!], name).toEqual(expected.map((document) => document[name]))
      }
    } finally {
      await official.close()
    }
    // Mismatches counted over every record batch of the read.
    const mismatched = await wide.findArrow(
      {},
      { limit: 20_000, schema: { s01: 'int32' }, projection: undefined },
    )
    expect(JSON.parse(mismatched.schema.metadata.get('rumongo.typeMismatches')!)).toEqual({ s01: 20_000 })
  })

  /** Server cursors open on the replay server. */
  const openCursors = async () => {
    const { metrics } = await client.db('admin').command({ serverStatus: 1 })
    return Number(metrics.cursor.open.total)
  }
  /** A Writable that accepts `accepted` chunks, then never calls back: a reader that stopped. */
  const stalled = (accepted = 1) =>
    new Writable({
      highWaterMark: 1024,
      write(_chunk, _encoding, done) {
        if (accepted-- > 0) done()
      },
    })
  const pipeOptions = { limit: 100_000, batchSize: 1000, rowsPerBatch: 1000 }

  it('pipeArrow: timeoutMS bounds the whole call, a reader that stopped included', async () => {
    const before = await openCursors()
    const started = Date.now()
    const destination = stalled()
    const wide = client.db('bench').collection('wide45')
    await expect(wide.pipeArrow({}, { ...pipeOptions, timeoutMS: 300 }, destination)).rejects.toThrow(
      MongoOperationTimeoutError,
    )
    expect(Date.now() - started).toBeLessThan(3000)
    expect(destination.destroyed).toBe(true)
    await expect.poll(openCursors, { timeout: 5000 }).toBe(before)
  })

  it('pipeArrow: a destination destroyed, failed or ended by other code mid-stream rejects, cursor killed', async () => {
    const before = await openCursors()
    const wide = client.db('bench').collection('wide45')
    for (const end of [
      (destination: Writable) => destination.destroy(new Error('disk full')),
      (destination: Writable) => destination.destroy(),
    ]) {
      const destination = stalled(3)
      const piped = wide.pipeArrow({}, pipeOptions, destination)
      await sleep(300)
      end(destination)
      await expect(piped).rejects.toThrow(/disk full|Premature close/)
      await expect.poll(openCursors, { timeout: 5000 }).toBe(before)
    }
    let writes = 0
    const endedElsewhere: Writable = new Writable({
      write(_chunk, _encoding, done) {
        if (++writes === 2) endedElsewhere.end()
        setImmediate(done)
      },
    })
    await expect(wide.pipeArrow({}, pipeOptions, endedElsewhere)).rejects.toThrow()
    await expect.poll(openCursors, { timeout: 5000 }).toBe(before)
  })

  it('pipeArrow: a destination already ended, or already piped into, rejects at once without a query', async () => {
    const commands: string[] = []
    const monitored = await MongoClient.connect(served.uri, { monitorCommands: true })
    monitored.on('commandStarted', (event) => commands.push(event.commandName))
    try {
      const wide = monitored.db('bench').collection('wide45')
      const ended = new Writable({ write: (_chunk, _encoding, done) => done() })
      ended.end()
      await expect(wide.pipeArrow({}, pipeOptions, ended)).rejects.toThrow(MongoInvalidArgumentError)
      expect(commands).not.toContain('find')
      let received = 0
      const destination = new Writable({
        write(chunk: Buffer, _encoding, done) {
          received += chunk.length
          setImmediate(done)
        },
      })
      const first = wide.pipeArrow({}, { limit: 5000, batchSize: 1000 }, destination)
      await expect(wide.pipeArrow({}, { limit: 5000 }, destination)).rejects.toThrow(
        MongoInvalidArgumentError,
      )
      const written = await first
      expect(written.rows).toBe(5000)
      expect(written.bytes).toBe(received)
      expect(commands.filter((name) => name === 'find')).toHaveLength(1)
    } finally {
      await monitored.close()
    }
  })

  it('pipeArrow into a destination that fails mid-stream rejects and kills the cursor', async () => {
    let writes = 0
    const destination = new Writable({
      write(_chunk, _encoding, done) {
        done(++writes === 3 ? new Error('the client went away') : undefined)
      },
    })
    const commands: Document[] = []
    const monitored = await MongoClient.connect(served.uri, { monitorCommands: true })
    monitored.on('commandStarted', (event) => commands.push(event.command))
    try {
      await expect(
        monitored
          .db('bench')
          .collection('wide45')
          .pipeArrow({}, { limit: 100_000, batchSize: 1000, rowsPerBatch: 1000 }, destination),
      ).rejects.toThrow('the client went away')
      expect(destination.destroyed).toBe(true)
      expect(await settled(async () => commands.some((command) => 'killCursors' in command), true)).toBe(true)
    } finally {
      await monitored.close()
    }
  })
})

describe('IPC bytes', () => {
  it("{ as: 'ipc' } is one IPC stream that apache-arrow and flechette read, equal to the table", async () => {
    const options = { sort: { n: 1 }, schema: { n: 'int32', price: 'double', label: 'utf8' } } as const
    const bytes = await ours('many').findArrow({}, { ...options, as: 'ipc' })
    expect(Buffer.isBuffer(bytes)).toBe(true)
    const table = await ours('many').findArrow({}, options)
    const read = arrow.tableFromIPC(bytes)
    expect(read.numRows).toBe(2500)
    expect([...read.getChild('price')!]).toEqual([...table.getChild('price')!])
    const flechette = flechetteTableFromIPC(bytes)
    expect(flechette.getChild('label').toArray()).toEqual([...table.getChild('label')!])
  })
})

describe('IPC bytes: type mismatches', () => {
  it("{ as: 'ipc' } carries the mismatch counts in its schema metadata, as the table does", async () => {
    const options = { sort: { n: 1 }, schema: { n: 'int32', v: 'int32' } } as const
    const table = await ours('mixed').findArrow({}, options)
    const counts = table.schema.metadata.get('rumongo.typeMismatches')
    expect(JSON.parse(counts!)).toEqual({ v: 4 })
    const bytes = await ours('mixed').findArrow({}, { ...options, as: 'ipc' })
    expect(arrow.tableFromIPC(bytes).schema.metadata.get('rumongo.typeMismatches')).toBe(counts)
    expect(flechetteTableFromIPC(bytes).schema.metadata?.get('rumongo.typeMismatches')).toBe(counts)
    // The values are the table's: the schema message changed, not the record batches.
    expect([...arrow.tableFromIPC(bytes).getChild('v')!]).toEqual([...table.getChild('v')!])
    // No mismatch, no key.
    const clean = await ours('mixed').findArrow({}, { sort: { n: 1 }, schema: { n: 'int32' }, as: 'ipc' })
    expect(arrow.tableFromIPC(clean).schema.metadata.has('rumongo.typeMismatches')).toBe(false)
  })
})

describe('bad input', () => {
  it.each([
    ['an unknown type name', { a: 'float' }, "Arrow schema: field 'a' has an unknown type 'float'"],
    ['a list of two types', { a: ['utf8', 'int32'] }, "field 'a' is a list: write its item type as [type]"],
    ['a nested unknown type', { a: { b: ['nope'] } }, "field 'a.b[]' has an unknown type 'nope'"],
    ['a number as a type', { a: 1 }, "field 'a' has no valid type, got a number"],
  ])('%s', async (_, schema, message) => {
    const read = ours('typed').findArrow({}, { schema: schema as ArrowSchemaSpec })
    await expect(read).rejects.toBeInstanceOf(MongoInvalidArgumentError)
    await expect(read).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' })
    await expect(read).rejects.toThrow(message)
  })

  it('a schema that is not an object, and bad options', async () => {
    for (const options of [
      { schema: 'utf8' },
      { schema: ['utf8'] },
      { onTypeMismatch: 'ignore' },
      { objectId: 'string' },
      { rowsPerBatch: 0 },
      { as: 'json' },
      { raw: true },
      { explain: true },
    ]) {
      await expect(
        ours('typed').findArrow({}, options as never),
        JSON.stringify(options),
      ).rejects.toMatchObject({
        code: 'ERR_INVALID_ARGUMENT',
      })
    }
  })

  it('an apache-arrow Schema is read as the DSL; a type rumongo does not build is refused', async () => {
    const schema = new arrow.Schema([
      new arrow.Field('index', new arrow.Int32()),
      new arrow.Field('name', new arrow.Utf8()),
      new arrow.Field('date', new arrow.TimestampMillisecond('UTC')),
      new arrow.Field('tags', new arrow.List(new arrow.Field('item', new arrow.Utf8()))),
      new arrow.Field('nested', new arrow.Struct([new arrow.Field('level', new arrow.Int32())])),
    ])
    const table = await ours('typed').findArrow({}, { schema, sort: { index: 1 } })
    expect(table.schema.fields.map((field) => String(field.type))).toEqual([
      'Int32',
      'Utf8',
      'Timestamp<MILLISECOND, UTC>',
      'List<Utf8>',
      'Struct<{level:Int32}>',
    ])
    expect(table.getChild('name')!.get(3)).toBe('item 3')
    const unsupported = new arrow.Schema([new arrow.Field('f', new arrow.Float32())])
    await expect(ours('typed').findArrow({}, { schema: unsupported })).rejects.toMatchObject({
      name: 'MongoInvalidArgumentError',
      code: 'ERR_INVALID_ARGUMENT',
      message: expect.stringContaining("field 'f' has type Float32, which rumongo does not build"),
    })
  })

  it('raw batches reach JS as handles, not Buffers: the encoder takes each once and refuses anything else', async () => {
    const documents = [{ n: 1 }, { n: 2 }, { n: 3 }]
    const batch = encodeTestBatch(BSON.serialize({ batch: documents }), BatchOutput.ArrowRaw)
    // No bytes V8 would count as external memory: the BSON stays in Rust until encoded.
    expect(batch.documents).toBeUndefined()
    expect(Buffer.isBuffer(batch.rawBatch)).toBe(false)
    expect(batch).toMatchObject({ count: 3, documentBytes: BSON.calculateObjectSize(documents[0]) * 3 })
    const encoder = new NativeArrowEncoder({ objectIdHex: false, mismatchError: false })
    const encode = (parts: unknown[]) =>
      callNative(() =>
        encoder.encode(
          parts,
          parts.map(() => 3),
          false,
          false,
        ),
      )
    // A call refused for a bad part, or for a part given twice, leaves the good parts unspent.
    await expect(encode([batch.rawBatch, {}])).rejects.toBeInstanceOf(MongoInvalidArgumentError)
    await expect(encode([batch.rawBatch, batch.rawBatch])).rejects.toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
      message: 'encode: this raw batch was already encoded',
    })
    const encoded = await encode([batch.rawBatch])
    expect([...arrow.tableFromIPC(encoded.ipc).getChild('n')!]).toEqual([1, 2, 3])

    // Encoding took the bytes out of the handle: it is spent, not encoded twice.
    const again = encode([batch.rawBatch])
    await expect(again).rejects.toBeInstanceOf(MongoInvalidArgumentError)
    await expect(again).rejects.toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
      message: 'encode: this raw batch was already encoded',
    })
    // Bytes, objects or numbers are not raw batches (an External of another type neither).
    for (const forged of [BSON.serialize(documents[0]), {}, 7, null]) {
      const refused = encode([forged])
      await expect(refused).rejects.toBeInstanceOf(MongoInvalidArgumentError)
      await expect(refused).rejects.toMatchObject({
        code: 'ERR_INVALID_ARGUMENT',
        message: 'encode: parts must be raw batches of an Arrow cursor',
      })
    }
  })

  it('without apache-arrow installed: a typed error with a code; IPC bytes still work', () => {
    // A child process where resolving 'apache-arrow' fails as it does when it is not installed.
    const script = `
      const Module = require('node:module')
      const resolve = Module._resolveFilename
      Module._resolveFilename = function (request, ...rest) {
        if (request === 'apache-arrow') throw Object.assign(new Error("Cannot find module 'apache-arrow'"), { code: 'MODULE_NOT_FOUND' })
        return resolve.call(this, request, ...rest)
      }
      const { MongoClient } = require(${JSON.stringify(require.resolve('rumongo'))})
      ;(async () => {
        const client = await MongoClient.connect(${JSON.stringify(uri)})
        const collection = client.db(${JSON.stringify(dbName)}).collection('many')
        const out = {}
        try { await collection.findArrow({}) } catch (error) {
          out.error = { name: error.name, code: error.code, dependencyName: error.dependencyName, message: error.message }
        }
        out.ipcBytes = (await collection.findArrow({}, { as: 'ipc', schema: { n: 'int32' } })).length
        await client.close()
        console.log(JSON.stringify(out))
      })()
    `
    const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }))
    expect(out.error).toEqual({
      name: 'MongoMissingDependencyError',
      code: 'ERR_MISSING_DEPENDENCY',
      dependencyName: 'apache-arrow',
      message:
        "findArrow needs the optional dependency 'apache-arrow': npm install apache-arrow (or ask for { as: 'ipc' } bytes)",
    })
    expect(out.ipcBytes).toBeGreaterThan(2500 * 4)
  })
})

/** Every item of an async iterable (Node 20 has no Array.fromAsync). */
async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = []
  for await (const item of items) all.push(item)
  return all
}

/** Whether the server cursor `id` on `collection` is still open. */
const cursorAlive = (id: Long, collection: string) =>
  serverCursorAlive(drivers.official.db(dbName), collection, id)
