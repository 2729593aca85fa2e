// Bad input to every public function: wrong types, missing arguments, a closed client, a closed
// cursor. Each is a typed error with a stable `code` (ErrorCode), thrown or rejected, never a crash.
// One table row per public method and bad input; a panic in the addon is an error too.
import { createRequire } from 'node:module'
import { Writable, type Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MongoClient as OfficialClient } from 'mongodb'
import {
  ErrorCode,
  isLazyDocument,
  materialize,
  Model,
  MongoClient,
  MongoCursorExhaustedError,
  MongoCursorInUseError,
  MongoError,
  MongoInvalidArgumentError,
  MongoNotConnectedError,
  MongoParseError,
  MongoRuntimeError,
  firstDifference,
  mongoosePlugin,
  ObjectId,
  shadow,
  type Collection,
  type FindCursor,
  type ShadowCollection,
  type ShadowCursor,
} from 'rumongo'
import { uniqueDbName, uri } from './setup/helpers.js'

// The test-only native entry that panics on request (src/task.rs), and the error translation.
const require = createRequire(import.meta.url)
const { testPanic, encodeTestBatch } = require('../dist/native.cjs')
const { callNative, callNativeSync } = require('../dist/errors.js')

const dbName = uniqueDbName('bad_input')
let client: MongoClient
let closedClient: MongoClient
let items: Collection
let closedItems: Collection
let closedCursor: FindCursor
let killedCursor: FindCursor
let model: Model
/** Served by rumongo, never compared: its errors are rumongo's (served by the official driver, the official driver's). */
let shadowed: ShadowCollection
let closedShadowCursor: ShadowCursor
let killedShadowCursor: ShadowCursor

beforeAll(async () => {
  const official = await OfficialClient.connect(uri)
  await official
    .db(dbName)
    .collection('items')
    .insertMany([{ a: 1 }, { a: 2 }, { a: 3 }])
  await official.close()
  client = await MongoClient.connect(uri)
  items = client.db(dbName).collection('items')
  model = Model.define(items, ['a'])
  closedClient = await MongoClient.connect(uri)
  closedItems = closedClient.db(dbName).collection('items')
  await closedClient.close()
  closedCursor = items.find({})
  await closedCursor.next()
  await closedCursor.close()
  killedCursor = items.find({}, { batchSize: 1 })
  await killedCursor.next()
  await killedCursor.close()
  shadowed = shadow(items, items, { serve: 'rumongo', sampleRate: 0 })
  closedShadowCursor = shadowed.find({})
  await closedShadowCursor.next()
  await closedShadowCursor.close()
  killedShadowCursor = shadowed.find({}, { batchSize: 1 })
  await killedShadowCursor.next()
  await killedShadowCursor.close()
})

afterAll(async () => {
  const official = await OfficialClient.connect(uri)
  await official.db(dbName).dropDatabase()
  await official.close()
  await client.close()
})

type ErrorClass = new (...args: any[]) => MongoError
const INVALID: [ErrorClass, string] = [MongoInvalidArgumentError, ErrorCode.InvalidArgument]
const PARSE: [ErrorClass, string] = [MongoParseError, ErrorCode.Parse]
const NOT_CONNECTED: [ErrorClass, string] = [MongoNotConnectedError, ErrorCode.NotConnected]
const EXHAUSTED: [ErrorClass, string] = [MongoCursorExhaustedError, ErrorCode.CursorExhausted]
const IN_USE: [ErrorClass, string] = [MongoCursorInUseError, ErrorCode.CursorInUse]
const RUNTIME: [ErrorClass, string] = [MongoRuntimeError, ErrorCode.Runtime]

const any = (value: unknown) => value as never
const started = () => {
  const cursor = items.find({})
  void cursor.hasNext()
  return cursor
}
/** Reads `stream` to its end; rejects with the error it emits. */
const drain = (stream: Readable) =>
  pipeline(stream, new Writable({ objectMode: true, write: (_, __, done) => done() }))
/** A client whose `close()` is called while its `connect()` is running. */
const closedWhileConnecting = () => {
  const connecting = new MongoClient(uri)
  const connected = connecting.connect()
  void connecting.close()
  return connected
}
const cyclic: Record<string, unknown> = { a: 1 }
cyclic.self = cyclic
const startedAggregate = () => {
  const cursor = items.aggregate([])
  void cursor.hasNext()
  return cursor
}

/** [public method, bad input, call, expected error]. */
const TABLE: [string, string, () => unknown, [ErrorClass, string]][] = [
  // MongoClient
  ['new MongoClient', 'no uri', () => new MongoClient(any(undefined)), PARSE],
  ['new MongoClient', 'a number uri', () => new MongoClient(any(42)), PARSE],
  ['new MongoClient', 'an empty uri', () => new MongoClient(''), PARSE],
  ['new MongoClient', 'an http uri', () => new MongoClient('http://localhost'), PARSE],
  ['new MongoClient', 'null options', () => new MongoClient(uri, any(null)), INVALID],
  ['new MongoClient', 'string options', () => new MongoClient(uri, any('x')), INVALID],
  ['new MongoClient', 'a string BSON option', () => new MongoClient(uri, any({ raw: 'yes' })), INVALID],
  [
    'new MongoClient',
    'a non-boolean monitorCommands',
    () => new MongoClient(uri, any({ monitorCommands: 1 })),
    PARSE,
  ],
  ['new MongoClient', 'a non-boolean tracing', () => new MongoClient(uri, any({ tracing: 'yes' })), INVALID],
  [
    'new MongoClient',
    'an unsupported option',
    () => new MongoClient(uri, any({ autoEncryption: {} })),
    INVALID,
  ],
  ['MongoClient.connect', 'a number uri', () => MongoClient.connect(any(42)), PARSE],
  ['MongoClient.connect', 'a bad option value', () => MongoClient.connect(`${uri}?maxPoolSize=x`), PARSE],
  ['client.connect', 'close() while connecting', closedWhileConnecting, NOT_CONNECTED],
  ['client.db', 'a number name', () => client.db(any(5)), INVALID],
  ['client.db', 'an empty name', () => client.db(''), INVALID],
  ['client.db', 'a name with a dot', () => client.db('a.b'), INVALID],
  ['client.db', 'a string BSON option', () => client.db('x', any({ promoteLongs: 1 })), INVALID],
  ['client.db', 'non-object options', () => client.db('x', any(5)), INVALID],
  // Db
  ['db.collection', 'no name', () => client.db('x').collection(any(undefined)), INVALID],
  ['db.collection', 'a number name', () => client.db('x').collection(any(5)), INVALID],
  ['db.collection', 'non-object options', () => client.db('x').collection('c', any('raw')), INVALID],
  // Collection
  ['find', 'a number filter', () => items.find(any(5)), INVALID],
  ['find', 'a null filter', () => items.find(any(null)), INVALID],
  ['find', 'a function filter', () => items.find(any(() => 1)), INVALID],
  ['find', 'non-object options', () => items.find({}, any('x')), INVALID],
  ['find', 'a NaN limit', () => items.find({}, { limit: NaN }), INVALID],
  ['find', 'a string projection', () => items.find({}, any({ projection: 'a' })), INVALID],
  ['find', 'a number collation', () => items.find({}, any({ collation: 5 })), INVALID],
  ['find', 'a number readConcern', () => items.find({}, any({ readConcern: 5 })), INVALID],
  ['find', 'a negative maxTimeMS (native check)', () => items.find({}, { maxTimeMS: -1 }).toArray(), INVALID],
  [
    'find',
    'a huge batchSize (native check)',
    () => items.find({}, { batchSize: 2 ** 40 }).toArray(),
    INVALID,
  ],
  ['find', 'a closed client', () => closedItems.find({}).toArray(), NOT_CONNECTED],
  ['findOne', 'a number filter', () => items.findOne(any(5)), INVALID],
  ['findOne', 'a closed client', () => closedItems.findOne({}), NOT_CONNECTED],
  ['findLazy', 'a string filter', () => items.findLazy(any('a')), INVALID],
  ['findLazy', 'a string limit', () => items.findLazy({}, any({ limit: '1' })), INVALID],
  ['findLazy', 'a closed client', () => closedItems.findLazy({}), NOT_CONNECTED],
  ['findCursor', 'a number filter', () => items.findCursor(any(5)), INVALID],
  ['findCursor', 'a negative prefetch', () => items.findCursor({}, { prefetch: -1 }), INVALID],
  ['findCursor', 'a string lazy', () => items.findCursor({}, any({ lazy: 'yes' })), INVALID],
  ['findCursor', 'a closed client', () => closedItems.findCursor({}).nextBatch(), NOT_CONNECTED],
  ['findJson', 'a string filter', () => items.findJson(any('a')), INVALID],
  ['findJson', 'an unknown format', () => items.findJson({}, any({ format: 'xml' })), INVALID],
  ['findJson', 'a decode option JSON ignores', () => items.findJson({}, { useBigInt64: true }), INVALID],
  ['findJson', 'a closed client', () => closedItems.findJson({}), NOT_CONNECTED],
  ['pipeJson', 'no destination', () => items.pipeJson({}, {}, any(undefined)), INVALID],
  ['pipeJson', 'a string destination', () => items.pipeJson({}, {}, any('out.json')), INVALID],
  ['pipeJson', 'a null filter', () => items.pipeJson(any(null), {}, process.stdout), INVALID],
  ['aggregate', 'a non-array pipeline', () => items.aggregate(any({})), INVALID],
  ['aggregate', 'a null stage', () => items.aggregate(any([null])), INVALID],
  ['aggregate', 'non-object options', () => items.aggregate([], any(7)), INVALID],
  ['aggregate', 'a closed client', () => closedItems.aggregate([]).toArray(), NOT_CONNECTED],
  ['countDocuments', 'a string filter', () => items.countDocuments(any('x')), INVALID],
  [
    'countDocuments',
    'a negative limit (native check)',
    () => items.countDocuments({}, { limit: -1 }),
    INVALID,
  ],
  ['countDocuments', 'a closed client', () => closedItems.countDocuments({}), NOT_CONNECTED],
  ['estimatedDocumentCount', 'non-object options', () => items.estimatedDocumentCount(any(1)), INVALID],
  [
    'estimatedDocumentCount',
    'a string maxTimeMS',
    () => items.estimatedDocumentCount(any({ maxTimeMS: 'x' })),
    INVALID,
  ],
  ['estimatedDocumentCount', 'a closed client', () => closedItems.estimatedDocumentCount(), NOT_CONNECTED],
  ['distinct', 'no key', () => items.distinct(any(undefined)), INVALID],
  ['distinct', 'an object key', () => items.distinct(any({ a: 1 })), INVALID],
  ['distinct', 'a number filter', () => items.distinct('a', any(1)), INVALID],
  ['distinct', 'a closed client', () => closedItems.distinct('a'), NOT_CONNECTED],
  // FindCursor builders
  ['cursor.filter', 'a number', () => items.find().filter(any(5)), INVALID],
  ['cursor.sort', 'a number', () => items.find().sort(any(5)), INVALID],
  ['cursor.sort', 'a bad direction', () => items.find().sort(any({ a: 2 })), INVALID],
  ['cursor.limit', 'a string', () => items.find().limit(any('1')), INVALID],
  ['cursor.skip', 'a fraction', () => items.find().skip(1.5), INVALID],
  ['cursor.batchSize', 'a string', () => items.find().batchSize(any('1')), INVALID],
  ['cursor.project', 'a string', () => items.find().project(any('a')), INVALID],
  ['cursor.hint', 'a number', () => items.find().hint(any(5)), INVALID],
  ['cursor.min', 'a number', () => items.find().min(any(5)), INVALID],
  ['cursor.max', 'an array', () => items.find().max(any([1])), INVALID],
  ['cursor.returnKey', 'a string', () => items.find().returnKey(any('yes')), INVALID],
  ['cursor.showRecordId', 'a number', () => items.find().showRecordId(any(1)), INVALID],
  ['cursor.maxTimeMS', 'a string', () => items.find().maxTimeMS(any('1')), INVALID],
  ['cursor.collation', 'a string', () => items.find().collation(any('fr')), INVALID],
  ['cursor.allowDiskUse', 'a string', () => items.find().allowDiskUse(any('yes')), INVALID],
  ['cursor.map', 'a non-function', () => items.find().map(any('x')), INVALID],
  ['cursor.forEach', 'a non-function', () => items.find().forEach(any(null)), INVALID],
  ['cursor.limit', 'a started cursor', () => started().limit(1), IN_USE],
  ['cursor.map', 'a started cursor', () => started().map((x) => x), IN_USE],
  ['cursor.next', 'a cursor closed while open on the server', () => killedCursor.next(), EXHAUSTED],
  ['cursor.tryNext', 'a cursor closed while open on the server', () => killedCursor.tryNext(), EXHAUSTED],
  ['cursor.nextBatch', 'a cursor closed while open on the server', () => killedCursor.nextBatch(), EXHAUSTED],
  ['cursor.prefetch', 'a string', () => items.find().prefetch(any('2')), INVALID],
  ['cursor.prefetch', 'a started cursor', () => started().prefetch(2), IN_USE],
  ['cursor.sort', 'a closed cursor', () => closedCursor.sort({ a: 1 }), IN_USE],
  ['cursor.readBufferedDocuments', 'a negative count', () => started().readBufferedDocuments(-1), INVALID],
  [
    'cursor.readBufferedDocuments',
    'a string count',
    () => items.find().readBufferedDocuments(any('2')),
    INVALID,
  ],
  // AggregationCursor builders
  ['aggregate.addStage', 'a number', () => items.aggregate().addStage(any(1)), INVALID],
  ['aggregate.addStage', 'a $out stage', () => items.aggregate().addStage({ $out: 'x' }), INVALID],
  ['aggregate.match', 'a number', () => items.aggregate().match(any(1)), INVALID],
  ['aggregate.project', 'a string', () => items.aggregate().project(any('a')), INVALID],
  ['aggregate.sort', 'a string', () => items.aggregate().sort(any('a')), INVALID],
  ['aggregate.skip', 'a string', () => items.aggregate().skip(any('1')), INVALID],
  ['aggregate.limit', 'a negative number', () => items.aggregate().limit(-1), INVALID],
  ['aggregate.group', 'a number', () => items.aggregate().group(any(1)), INVALID],
  ['aggregate.unwind', 'a number', () => items.aggregate().unwind(any(1)), INVALID],
  ['aggregate.lookup', 'a string', () => items.aggregate().lookup(any('x')), INVALID],
  ['aggregate.map', 'a non-function', () => items.aggregate().map(any(1)), INVALID],
  ['aggregate.addStage', 'a started cursor', () => startedAggregate().addStage({ $match: {} }), IN_USE],
  // Lazy documents
  ['materialize', 'a plain object', () => materialize(any({ a: 1 })), INVALID],
  ['materialize', 'undefined', () => materialize(any(undefined)), INVALID],
  // Model
  ['Model.define', 'no collection', () => Model.define(any(undefined), ['a']), INVALID],
  ['Model.define', 'a string collection', () => Model.define(any('items'), ['a']), INVALID],
  ['Model.define', 'no fields', () => Model.define(items, any(undefined)), INVALID],
  ['Model.define', 'a number field', () => Model.define(items, any([5])), INVALID],
  ['Model.define', 'a $ field', () => Model.define(items, ['$where']), INVALID],
  ['Model.define', 'non-object options', () => Model.define(items, ['a'], any(5)), INVALID],
  ['Model.fromMongoose', 'not a model', () => Model.fromMongoose(any({}), client), INVALID],
  ['Model.sanitizeFilter', 'an unsafe operator', () => Model.sanitizeFilter({ $where: 'x' }), INVALID],
  ['Model.sanitizeFilter', 'null options', () => Model.sanitizeFilter({}, any(null)), INVALID],
  ['Model.trusted', 'a frozen object', () => Model.trusted(Object.freeze({ $gt: 1 })), INVALID],
  ['model.find', 'a number filter', () => model.find(any(5)), INVALID],
  ['model.find', 'a number projection', () => model.find({}, any(5)), INVALID],
  ['model.find', 'number options', () => model.find({}, null, any(5)), INVALID],
  ['model.find', 'options as the projection', () => model.find({}, any({ limit: 1 })), INVALID],
  ['model.find', 'a bad selection', () => model.find().select(any(5)), INVALID],
  ['model.find', 'a string limit', () => model.find().limit(any('x')).exec(), INVALID],
  ['model.findById', 'a short hex string', () => model.findById('abc'), INVALID],
  ['model.findById', 'a bad projection', () => model.findById(new ObjectId(), any(true)), INVALID],
  ['model.countDocuments', 'a string filter', () => model.countDocuments(any('x')), INVALID],
  ['model.distinct', 'a number field', () => model.distinct(any(5)), INVALID],
  ['model.equals', 'no where()', () => model.find().equals(1), INVALID],
  ['model.where', 'a number', () => model.find().where(any(5)), INVALID],
  // shadow
  ['shadow', 'no collections', () => shadow(any(undefined), any(undefined)), INVALID],
  ['shadow', 'null options', () => shadow(items, items, any(null)), INVALID],
  ['shadow', 'a bad sampleRate', () => shadow(items, items, { sampleRate: 2 }), INVALID],
  ['shadow', 'a string serve', () => shadow(items, items, any({ serve: 'both' })), INVALID],
  ['shadow', 'a non-function onMismatch', () => shadow(items, items, any({ onMismatch: 5 })), INVALID],
  ['shadow', 'a non-function onError', () => shadow(items, items, any({ onError: 'log' })), INVALID],
  ['shadow', 'a string ignoreKeyOrder', () => shadow(items, items, any({ ignoreKeyOrder: 'yes' })), INVALID],
  ['shadow', 'a string redact', () => shadow(items, items, any({ redact: 'yes' })), INVALID],
  // mongoosePlugin
  ['mongoosePlugin', 'null options', () => mongoosePlugin(any(null)), INVALID],
  [
    'mongoosePlugin',
    'a client that is not a rumongo MongoClient',
    () => mongoosePlugin(any({ client: {} })),
    INVALID,
  ],
  ['mongoosePlugin', 'a non-function onFallback', () => mongoosePlugin(any({ onFallback: 'log' })), INVALID],
  ['ShadowCollection.find', 'a number filter', () => shadowed.find(any(5)), INVALID],
  ['ShadowCollection.findOne', 'a number filter', () => shadowed.findOne(any(5)), INVALID],
  ['ShadowCollection.aggregate', 'a non-array pipeline', () => shadowed.aggregate(any({})), INVALID],
  ['ShadowCollection.countDocuments', 'a string filter', () => shadowed.countDocuments(any('x')), INVALID],
  [
    'ShadowCollection.estimatedDocumentCount',
    'number options',
    () => shadowed.estimatedDocumentCount(any(1)),
    INVALID,
  ],
  ['ShadowCollection.distinct', 'no key', () => shadowed.distinct(any(undefined)), INVALID],
  ['ShadowCursor.sort', 'a number', () => shadowed.find().sort(5), INVALID],
  ['ShadowCursor.limit', 'a string', () => shadowed.find().limit(any('1')), INVALID],
  ['ShadowCursor.skip', 'a fraction', () => shadowed.find().skip(1.5), INVALID],
  ['ShadowCursor.project', 'a string', () => shadowed.find().project(any('a')), INVALID],
  ['ShadowCursor.batchSize', 'a string', () => shadowed.find().batchSize(any('1')), INVALID],
  ['ShadowCursor.limit', 'a closed cursor', () => closedShadowCursor.limit(1), IN_USE],
  [
    'ShadowCursor.next',
    'a cursor closed while open on the server',
    () => killedShadowCursor.next(),
    EXHAUSTED,
  ],
  // firstDifference
  ['firstDifference', 'null options', () => firstDifference(1, 2, any(null)), INVALID],
  [
    'firstDifference',
    'a string ignoreKeyOrder',
    () => firstDifference(1, 2, any({ ignoreKeyOrder: 'yes' })),
    INVALID,
  ],
  ['firstDifference', 'cyclic values', () => firstDifference(cyclic, { a: 1, self: cyclic }), INVALID],
]

/** Runs `call` and returns what it threw or rejected with (or fails the test when it succeeded). */
async function failureOf(call: () => unknown): Promise<unknown> {
  try {
    await call()
  } catch (error) {
    return error
  }
  throw new Error('expected an error, the call succeeded')
}

describe('bad input: one row per public method and bad input', () => {
  it.each(TABLE)('%s with %s', async (_method, _input, call, [type, code]) => {
    const error = await failureOf(call)
    expect(error).toBeInstanceOf(type)
    expect(error).toBeInstanceOf(MongoError)
    expect((error as MongoError).code).toBe(code)
    expect((error as Error).message).not.toMatch(/rumongo-error:/)
    // A value is named once and readably: never "got undefined undefined" or "got number 5".
    expect((error as Error).message).not.toMatch(/got (undefined|null|string|number|boolean|function) /)
  })

  it.each([
    [
      'new MongoClient()',
      () => new MongoClient(any(undefined)),
      'connection string must be a string, got undefined',
    ],
    [
      'collection.distinct()',
      () => items.distinct(any(undefined)),
      'distinct key must be a string, got undefined',
    ],
    [
      'db.collection(5)',
      () => client.db('x').collection(any(5)),
      'collection name must be a non-empty string, got a number (5)',
    ],
    [
      "find('x')",
      () => items.find(any('x')),
      'Query filter must be a plain object or ObjectId, got a string ("x")',
    ],
    ['client.db(name, 5)', () => client.db('x', any(5)), 'options must be an object, got a number (5)'],
  ])('%s names the value it got', async (_call, call, message) => {
    expect(((await failureOf(call)) as Error).message).toBe(message)
  })

  it('documented behaviour, not errors: clone, rewind and connect on a closed cursor or client', async () => {
    // A cursor closed once its server cursor was done reads on what it holds, then ends quietly
    // (null), as in the official driver (compared in cursor_events.test.ts).
    expect((await closedCursor.next())?.a).toBe(2)
    expect((await closedCursor.tryNext())?.a).toBe(3)
    expect(await closedCursor.next()).toBeNull()
    await drain(closedCursor.stream())
    expect((await closedShadowCursor.next())?.a).toBe(2)
    await drain(closedShadowCursor.stream())
    expect(await closedShadowCursor.next()).toBeNull()
    // A closed cursor's clone() and rewind() run the query again, as in the official driver.
    expect(await closedCursor.clone().toArray()).toHaveLength(3)
    const rewound = items.find({})
    await rewound.next()
    await rewound.close()
    await rewound.rewind()
    expect(await rewound.toArray()).toHaveLength(3)
    // close() is idempotent, and connect() after close() connects again.
    const reopened = await MongoClient.connect(uri)
    await reopened.close()
    await reopened.close()
    await expect(reopened.db(dbName).collection('items').countDocuments({})).rejects.toBeInstanceOf(
      MongoNotConnectedError,
    )
    await reopened.connect()
    expect(await reopened.db(dbName).collection('items').countDocuments({})).toBe(3)
    await reopened.close()
  })

  it('the client still works after every row', async () => {
    expect(await items.countDocuments({})).toBe(3)
    expect(isLazyDocument((await items.findLazy({}))[0])).toBe(true)
    expect(await closedCursor.toArray()).toEqual([])
    expect(await closedCursor.hasNext()).toBe(false)
    expect(await items.findOne(new ObjectId())).toBeNull()
  })
})

describe('a panic in the addon is an error, not an abort', () => {
  it.each(['sync', 'async', 'decoder'])(
    'a panic in the %s part rejects with MongoRuntimeError',
    async (place) => {
      const error = await failureOf(() => callNative(() => testPanic(place)))
      expect(error).toBeInstanceOf(MongoRuntimeError)
      expect((error as MongoError).code).toBe(ErrorCode.Runtime)
      // and the process goes on: the addon still answers
      expect(await items.countDocuments({})).toBe(3)
    },
  )

  it('an argument the addon cannot convert is a MongoRuntimeError (a rumongo bug, not user input)', async () => {
    const error = await failureOf(() => callNativeSync(() => encodeTestBatch(any('not a buffer'), 'tape')))
    expect(error).toBeInstanceOf(MongoRuntimeError)
    const [type, code] = RUNTIME
    expect(error).toBeInstanceOf(type)
    expect((error as MongoError).code).toBe(code)
  })
})
