// What a user can hand rumongo that it walks or forwards: a timeoutMS of any size, circular and
// deeply nested documents, values BSON has no form for in a Model's filter. Each gives what the
// official driver (or Mongoose, for the Model) gives, or a typed error with a code: never a
// crash, a TypeError of rumongo's own, a server error for rumongo's own option, or a query that
// silently matches everything.
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import mongoose, { Schema, type Connection } from 'mongoose'
import { MongoClient as OfficialClient, type Document } from 'mongodb'
import {
  BSONError,
  Model,
  MongoClient,
  MongoInvalidArgumentError,
  MongoParseError,
  type Collection,
} from 'rumongo'
import { uniqueDbName, uri } from './setup/helpers.js'
import { startWireServer, type WireServer } from './setup/wire_server.js'

let server: WireServer
let official: OfficialClient
let rumongo: MongoClient

beforeAll(async () => {
  server = await startWireServer({ documents: [{ _id: 1, name: 'a' }] })
  official = await OfficialClient.connect(server.uri)
  rumongo = await MongoClient.connect(server.uri)
})

afterAll(async () => {
  await Promise.all([official?.close(), rumongo?.close()])
  await server?.stop()
})

/** How a call failed, comparable across the two drivers. */
async function failure(call: () => Promise<unknown>) {
  try {
    await call()
  } catch (error) {
    return { name: (error as Error).constructor.name, message: (error as Error).message }
  }
  return 'resolved'
}

/** A document nested `depth` levels deep (the outermost counts as one). */
function nested(depth: number): Document {
  let document: Document = { leaf: 1 }
  for (let level = 1; level < depth; level++) document = { a: document }
  return document
}

describe('timeoutMS of any size', () => {
  /** The maxTimeMS of the find each driver sends for `findOne({}, options)`. */
  async function sentMaxTime(client: MongoClient | OfficialClient, options: Document) {
    const before = server.received('find').length
    await client.db('db').collection('items').findOne({}, options)
    return server
      .received('find')
      .slice(before)
      .map((find) => find.maxTimeMS)
  }

  it('2^31 ms and more is enforced by the client alone: no maxTimeMS the server refuses', async () => {
    // The server refuses a maxTimeMS past 2^31 - 1 ("maxTimeMS is out of range"): every read failed.
    for (const timeoutMS of [2 ** 31, 2 ** 40, Number.MAX_SAFE_INTEGER]) {
      expect(await sentMaxTime(rumongo, { timeoutMS })).toEqual([undefined])
      // The official driver 7.x sends none for any timeoutMS (it ignores the option).
      expect(await sentMaxTime(official, { timeoutMS })).toEqual([undefined])
      const client = await MongoClient.connect(server.uri, { timeoutMS })
      try {
        expect(await sentMaxTime(client, {})).toEqual([undefined])
      } finally {
        await client.close()
      }
    }
    // Below, it is still sent (the server stops work the client gave up on).
    const longest = await sentMaxTime(rumongo, { timeoutMS: 2 ** 31 - 1 })
    expect(longest.map(Number)).toEqual([2 ** 31 - 1])
    // A maxTimeMS of the user's own is sent as given, as by the official driver.
    expect((await sentMaxTime(rumongo, { maxTimeMS: 5000, timeoutMS: 2 ** 31 })).map(Number)).toEqual([5000])
  })

  it('values that are no number of milliseconds are typed errors', async () => {
    const items = rumongo.db('db').collection('items')
    for (const timeoutMS of [Infinity, -Infinity, NaN, -1, 1.5, 1e300, '100', null as unknown, 10n]) {
      const error = await items
        .findOne({}, { timeoutMS: timeoutMS as number })
        .catch((caught: unknown) => caught)
      // null is "not set", as every option's null in the official driver.
      if (timeoutMS === null) continue
      expect(error, String(timeoutMS)).toBeInstanceOf(MongoInvalidArgumentError)
      expect((error as MongoInvalidArgumentError).code).toBe('ERR_INVALID_ARGUMENT')
    }
    for (const timeoutMS of [Infinity, NaN, -1, '1e400', 'abc']) {
      const created = () => new MongoClient(server.uri, { timeoutMS: timeoutMS as number })
      const inURI = () =>
        new MongoClient(`${server.uri}${server.uri.includes('?') ? '&' : '?'}timeoutMS=${timeoutMS}`)
      for (const create of [created, inURI]) {
        let error: unknown
        try {
          await create().connect()
        } catch (caught) {
          error = caught
        }
        expect(error, String(timeoutMS)).toSatisfy(
          (caught: unknown) =>
            caught instanceof MongoParseError || caught instanceof MongoInvalidArgumentError,
        )
        expect((error as { code?: string }).code).toMatch(/^ERR_/)
      }
    }
  })
})

describe('circular documents', () => {
  const circular: Document = { a: 1 }
  circular.self = circular
  const circularList: unknown[] = [{ $match: { a: 1 } }]
  circularList.push(circularList)

  type Read = (
    items: Collection | ReturnType<ReturnType<OfficialClient['db']>['collection']>,
  ) => Promise<unknown>
  const reads: [string, Read][] = [
    ['filter', (items) => items.findOne(circular)],
    ['projection', (items) => items.findOne({}, { projection: circular })],
    ['find().project()', (items) => items.find({}).project(circular).toArray()],
    ['hint', (items) => items.findOne({}, { hint: circular })],
    ['let', (items) => items.findOne({}, { let: circular })],
    ['collation', (items) => items.findOne({}, { collation: circular as never })],
    ['comment', (items) => items.findOne({}, { comment: circular })],
    ['max', (items) => items.find({}, { max: circular }).toArray()],
    [
      'a $meta sort',
      (items) => items.findOne({}, { sort: { score: { $meta: 'textScore', circular } } as never }),
    ],
    ['pipeline stage', (items) => items.aggregate([{ $match: circular }]).toArray()],
    ['countDocuments filter', (items) => items.countDocuments(circular)],
    ['distinct filter', (items) => items.distinct('a', circular)],
  ]

  it.each(reads)('%s: the BSONError the official driver gives', async (_, read) => {
    const expected = await failure(() => read(official.db('db').collection('items')))
    const actual = await failure(() => read(rumongo.db('db').collection('items') as Collection))
    expect(expected).toMatchObject({
      name: 'BSONError',
      message: 'Cannot convert circular structure to BSON',
    })
    expect(actual).toEqual(expected)
  })

  it('a sort direction that contains itself: MongoInvalidArgumentError (the official driver: a TypeError from its message)', async () => {
    const items = rumongo.db('db').collection('items')
    for (const sort of [circular, { a: circular }]) {
      const error = await items.findOne({}, { sort: sort as never }).catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(MongoInvalidArgumentError)
      expect((error as Error).message).toBe('Invalid sort direction: an object (Object)')
      expect(
        await failure(() =>
          official
            .db('db')
            .collection('items')
            .findOne({}, { sort: sort as never }),
        ),
      ).toMatchObject({
        name: 'TypeError',
      })
    }
  })
})

describe('deeply nested documents', () => {
  it('up to 1,000 levels are sent as the official driver sends them; deeper is a typed error, never a crash', async () => {
    const items = rumongo.db('db').collection('items')
    const sent = () => server.received('find').at(-1)!.filter
    await items.findOne(nested(1000))
    const received = sent()
    await official.db('db').collection('items').findOne(nested(1000))
    expect(received).toEqual(sent())
    // Deeper, the native side's parsers ran out of stack: the process died (SIGSEGV) at 10,000.
    for (const depth of [1001, 100_000]) {
      const error = await items.findOne(nested(depth)).catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(MongoInvalidArgumentError)
      expect((error as Error).message).toBe(
        'a document nested deeper than 1000 levels cannot be sent (servers take at most 200)',
      )
    }
    await expect(items.aggregate([{ $match: nested(5000) }]).toArray()).rejects.toBeInstanceOf(
      MongoInvalidArgumentError,
    )
    await expect(items.findOne({}, { sort: nested(100_000) as never })).rejects.toBeInstanceOf(
      MongoInvalidArgumentError,
    )
    // A projection is walked before it is sent (its batch-size key): there a RangeError was thrown.
    for (const projection of [nested(1001), nested(100_000)]) {
      await expect(items.findOne({}, { projection })).rejects.toThrow(/nested deeper than 1000 levels/)
    }
  })

  it('a worker thread (a smaller stack) reads with a 1,000-level filter', async () => {
    const source = `
      const { parentPort, workerData } = require('node:worker_threads')
      const { MongoClient } = require(workerData.rumongo)
      let filter = { leaf: 1 }
      for (let level = 1; level < 1000; level++) filter = { a: filter }
      MongoClient.connect(workerData.uri).then(async (client) => {
        const found = await client.db('db').collection('items').findOne(filter)
        await client.close()
        parentPort.postMessage(found)
      })`
    const worker = new Worker(source, {
      eval: true,
      workerData: { uri: server.uri, rumongo: createRequire(import.meta.url).resolve('rumongo') },
    })
    const found = await new Promise((resolve, reject) => {
      worker.once('message', resolve)
      worker.once('error', reject)
      worker.once('exit', (code) => reject(new Error(`worker exited with ${code}`)))
    })
    expect(found).toEqual({ _id: 1, name: 'a' })
    await worker.terminate()
  })
})

describe('Model: user data walked from a list, values BSON drops refused', () => {
  let connection: Connection
  let client: MongoClient
  let MongooseNode: mongoose.Model<any>
  const dbName = uniqueDbName('input_limits')

  // A recursive schema (a tree): Mongoose supports a schema nested in itself.
  const nodeSchema = new Schema({ name: String, secret: { type: String, select: false } })
  nodeSchema.add({ children: [nodeSchema] })

  beforeAll(async () => {
    connection = await mongoose.createConnection(uri, { dbName }).asPromise()
    client = await MongoClient.connect(uri)
    MongooseNode = connection.model('Node', nodeSchema, 'nodes')
    await MongooseNode.insertMany([
      { name: 'root', secret: 's', children: [{ name: 'leaf', secret: 't', children: [] }] },
      { name: 'other', secret: 'u', children: [] },
    ])
  })

  afterAll(async () => {
    await connection?.dropDatabase()
    await connection?.close()
    await client?.close()
  })

  it('a recursive Mongoose schema: its paths are read, the recursion whole', async () => {
    const Node = Model.fromMongoose(MongooseNode, client)
    expect(Node.fields).toEqual(['__v', 'children', 'name'])
    const lean = await MongooseNode.findOne({ name: 'root' }).lean()
    expect(await Node.findOne({ name: 'root' })).toEqual(lean)
  })

  it.each([
    ['a Symbol', Symbol('id')],
    ['a function', () => 1],
  ])('findById with %s: a cast error (Mongoose: CastError), not the first document', async (_, id) => {
    const Node = Model.fromMongoose(MongooseNode, client)
    // (Mongoose takes a function as a callback and refuses it so.)
    if (typeof id === 'symbol')
      await expect(MongooseNode.findById(id)).rejects.toMatchObject({ name: 'CastError' })
    expect(() => Node.findById(id)).toThrow(MongoInvalidArgumentError)
    expect(() => Node.findById(id)).toThrow(
      /^findById expects an ObjectId or 24 hex digits, got a (symbol|function)/,
    )
    // A model over a collection (no schema `_id` type): the same.
    const Plain = Model.define(client.db(dbName).collection('nodes'), ['name'])
    expect(() => Plain.findById(id)).toThrow(MongoInvalidArgumentError)
  })

  it('a filter value BSON has no form for is refused wherever it stands; undefined keeps its meaning', async () => {
    const Node = Model.define(client.db(dbName).collection('nodes'), ['name'])
    const dropped = [Symbol('x'), function where() {}]
    for (const value of dropped) {
      await expect(Node.find({ name: value })).rejects.toThrow(MongoInvalidArgumentError)
      await expect(
        Node.findOne({ $or: [{ name: 'root' }, { name: { $in: ['a', value] } }] }),
      ).rejects.toThrow(/^Cannot cast a (symbol|function) .*at path "1"/)
      await expect(Node.find().where('name').equals(value)).rejects.toThrow(MongoInvalidArgumentError)
      expect(() => Node.countDocuments({ name: value })).toThrow(MongoInvalidArgumentError)
      expect(() => Node.distinct('name', { name: value })).toThrow(MongoInvalidArgumentError)
    }
    // The collection's own methods send what js-bson makes of them, as the official driver's.
    expect(
      await client
        .db(dbName)
        .collection('nodes')
        .countDocuments({ name: Symbol('x') }),
    ).toBe(2)
    // undefined: null unless ignoreUndefined, as the official driver sends it.
    expect(await Node.find({ name: undefined })).toEqual([])
    const ignoring = Model.define(client.db(dbName).collection('nodes', { ignoreUndefined: true }), ['name'])
    expect(await ignoring.countDocuments({ name: undefined })).toBe(2)
    // With serializeFunctions a function is sent (as Code): not refused.
    const sending = Model.define(rumongo.db('db').collection('items', { serializeFunctions: true }), ['name'])
    await sending.find({ name: function where() {} })
    expect(server.received('find').at(-1)!.filter.name._bsontype).toBe('Code')
  })

  it('sanitizeFilter and rejectUnsafeOperators: any depth walked, a circular filter is the BSONError', async () => {
    const Node = Model.define(client.db(dbName).collection('nodes'), ['name'], {
      sanitizeFilter: true,
      rejectUnsafeOperators: true,
    })
    let deep: Document = { name: 'root' }
    for (let level = 0; level < 50_000; level++) deep = { $and: [deep] }
    // Walked (the recursion overflowed the stack: a RangeError without a code), then refused as
    // too deep to send.
    await expect(Node.findOne(deep)).rejects.toThrow(/nested deeper than 1000 levels/)
    expect(() => Model.sanitizeFilter(deep)).not.toThrow()
    const circular: Document = { $or: [] }
    circular.$or.push(circular)
    expect(() => Model.sanitizeFilter(circular)).toThrow(BSONError)
    await expect(Node.findOne(circular)).rejects.toThrow('Cannot convert circular structure to BSON')
    // Trusted (sanitizing keeps it), and nested deep: rejectUnsafeOperators still finds it.
    let unsafe: Document = { name: Model.trusted({ $where: 'true' }) }
    for (let level = 0; level < 450; level++) unsafe = { $and: [unsafe] }
    const Strict = Model.define(client.db(dbName).collection('nodes'), ['name'], {
      sanitizeFilter: true,
      rejectUnsafeOperators: true,
    })
    expect(() => Strict.countDocuments(unsafe)).toThrow(
      'the operator $where is not allowed in a sanitized filter',
    )
  })
})
