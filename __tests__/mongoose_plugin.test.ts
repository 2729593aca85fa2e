// mongoosePlugin: one line routes a Mongoose application's reads through rumongo. Two Mongoose
// instances read the same data, one with the plugin and one without: every result must be the
// same value for value and type for type, and the official driver's command monitoring on the
// plugin's side must show no read command except the fallbacks the plugin counted.
import { once } from 'node:events'
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import mongoose, { Schema, type Connection } from 'mongoose'
import { Long, type Document } from 'bson'
import { MongoClient, MongoInvalidArgumentError, mongoosePlugin, type MongooseFallback } from 'rumongo'
import { expectIdentical, uniqueDbName, uri } from './setup/helpers.js'
import { CLOSE_CONNECTION, helloReply, startWireServer } from './setup/wire_server.js'
import { typedDocuments } from './setup/data.js'

/** The commands a read sends (the official driver's names). */
const READ_COMMANDS = new Set(['find', 'getMore', 'aggregate', 'count', 'distinct'])

interface Side {
  mongoose: mongoose.Mongoose
  connection: Connection
  Author: mongoose.Model<any>
  Book: mongoose.Model<any>
  Event: mongoose.Model<any>
  Click: mongoose.Model<any>
  /** Read commands the official driver sent, by name. */
  reads: string[]
}

const dbName = uniqueDbName('mongoose_plugin')
const fallbacks: MongooseFallback[] = []
const plugin = mongoosePlugin({ onFallback: (fallback) => fallbacks.push(fallback) })
let plain: Side
let routed: Side

/** The same application twice: schemas with getters, virtuals, defaults, refs and discriminators. */
async function application(withPlugin: boolean, options: Record<string, unknown> = {}): Promise<Side> {
  const instance = new mongoose.Mongoose()
  if (withPlugin) instance.plugin(plugin)
  const authorSchema = new Schema(
    {
      name: { type: String, get: (name: string) => name?.toUpperCase() },
      born: Date,
      rating: Number,
      tags: [String],
      address: { city: String, zip: String },
      secret: { type: String, select: false },
    },
    { toObject: { getters: true, virtuals: true }, toJSON: { virtuals: true } },
  )
  authorSchema.virtual('label').get(function (this: any) {
    return `${this.name} (${this.address?.city})`
  })
  authorSchema.virtual('books', { ref: 'Book', localField: '_id', foreignField: 'author' })
  const bookSchema = new Schema({
    title: String,
    pages: Number,
    price: { type: Number, default: 10 },
    author: { type: Schema.Types.ObjectId, ref: 'Author' },
    chapters: [new Schema({ title: String, words: Number })],
    meta: { type: Map, of: Number },
    isbn: Buffer,
  })
  const eventSchema = new Schema({ at: Date, user: String }, { discriminatorKey: 'kind' })
  const connection = await instance
    .createConnection(uri, { dbName, monitorCommands: true, autoIndex: false, ...options })
    .asPromise()
  const reads: string[] = []
  connection.getClient().on('commandStarted', (event) => {
    if (READ_COMMANDS.has(event.commandName)) reads.push(event.commandName)
  })
  const Event = connection.model('Event', eventSchema, 'events')
  return {
    mongoose: instance,
    connection,
    reads,
    Author: connection.model('Author', authorSchema, 'authors'),
    Book: connection.model('Book', bookSchema, 'books'),
    Event,
    Click: Event.discriminator('Click', new Schema({ x: Number, y: Number })),
  }
}

/** A hydrated document as the application sees it: its plain form, JSON, class and state. */
function hydrated(doc: any) {
  if (doc == null) return doc
  return {
    object: doc.toObject(),
    json: JSON.parse(JSON.stringify(doc, (_key, value) => (typeof value === 'bigint' ? `${value}n` : value))),
    model: doc.constructor.modelName,
    isNew: doc.isNew,
    modified: doc.modifiedPaths(),
    populated: Object.keys(doc.$__.populated ?? {}),
  }
}

/** Runs `read` on both sides: identical results, and no read command on the plugin's official driver. */
async function same<T>(read: (side: Side) => Promise<T>, view: (result: T) => unknown = (result) => result) {
  routed.reads.length = 0
  const before = plugin.stats()
  const [expected, actual] = [await read(plain), await read(routed)]
  expectIdentical(view(actual), view(expected))
  expect(routed.reads).toEqual([])
  expect(plugin.stats().fallbacks).toBe(before.fallbacks)
  expect(plugin.stats().served).toBeGreaterThan(before.served)
  return actual
}

beforeAll(async () => {
  plain = await application(false)
  routed = await application(true)
  const authors = await plain.Author.insertMany(
    Array.from({ length: 12 }, (_, i) => ({
      name: `author ${i}`,
      born: new Date(Date.UTC(1950 + i, i % 12, 1)),
      rating: i + 0.5,
      tags: i % 2 ? ['novel', 'poetry'] : ['essay'],
      address: { city: ['Paris', 'Oslo', 'Lima'][i % 3], zip: String(75000 + i) },
      secret: `s${i}`,
    })),
  )
  await plain.Book.insertMany(
    Array.from({ length: 60 }, (_, i) => ({
      title: `book ${String(i).padStart(2, '0')}`,
      pages: 100 + i * 7,
      ...(i % 4 ? { price: i } : {}),
      author: authors[i % authors.length]!._id,
      chapters: Array.from({ length: i % 3 }, (_, j) => ({ title: `chapter ${j}`, words: j * 1000 })),
      meta: { reads: i, likes: i * 2 },
      isbn: Buffer.from(`isbn-${i}`),
    })),
  )
  // A stored document missing the field with a default: hydration applies the default.
  await plain.connection.collection('books').updateOne({ title: 'book 01' }, { $unset: { price: '' } })
  await plain.Event.create({ at: new Date(0), user: 'ann' })
  await plain.Click.create([
    { at: new Date(1000), user: 'bob', x: 1, y: 2 },
    { at: new Date(2000), user: 'cat', x: 3, y: 4 },
  ])
  plugin.resetStats()
  fallbacks.length = 0
})

afterAll(async () => {
  await plain?.connection.dropDatabase()
  await Promise.all([plain?.connection.close(), routed?.connection.close()])
  await plugin.close()
})

beforeEach(() => {
  fallbacks.length = 0
})

describe('mongoosePlugin serves the reads with the results Mongoose gets without it', () => {
  it('find: lean and hydrated', async () => {
    const query = { pages: { $gte: '200' } } // a string, cast by Mongoose
    await same((side) => side.Book.find(query).sort({ title: 1 }).lean())
    await same(
      (side) => side.Book.find(query).sort({ title: -1 }).skip(3).limit(20),
      (docs) => docs.map(hydrated),
    )
    await same((side) =>
      side.Book.find({ title: { $in: ['book 03', 'book 04'] } })
        .read('secondaryPreferred')
        .comment('mongoosePlugin')
        .maxTimeMS(30_000)
        .lean({ versionKey: false }),
    )
    await same(
      (side) => side.Author.find().select('+secret -tags').sort({ _id: 1 }),
      (docs) => docs.map(hydrated),
    )
  })

  it('findOne, findById and exists', async () => {
    const id = (await plain.Book.findOne({ title: 'book 07' }).lean())!._id
    await same((side) => side.Book.findOne({ title: 'book 01' }), hydrated)
    await same((side) => side.Book.findOne({ title: 'book 01' }).lean())
    await same((side) => side.Book.findById(id.toHexString()), hydrated)
    await same((side) => side.Book.findById(id).lean())
    await same((side) => side.Book.findOne({ title: 'none' }))
    await same((side) => side.Book.exists({ pages: { $gt: 300 } }))
    await same((side) => side.Book.exists({ pages: { $gt: 1e9 } }))
  })

  it('countDocuments, estimatedDocumentCount and distinct', async () => {
    await same((side) => side.Book.countDocuments({ price: { $lt: 30 } }))
    await same((side) => side.Book.estimatedDocumentCount())
    await same((side) => side.Book.distinct('author', { pages: { $lt: 200 } }))
    await same((side) => side.Author.distinct('address.city'))
  })

  it('Model.aggregate', async () => {
    await same((side) =>
      side.Book.aggregate([
        { $match: { pages: { $gt: 150 } } },
        { $group: { _id: '$author', pages: { $sum: '$pages' }, books: { $sum: 1 } } },
        { $sort: { _id: 1 } },
      ]),
    )
    await same((side) =>
      side.Book.aggregate().match({ price: 10 }).project({ title: 1, isbn: 1 }).sort('title'),
    )
  })

  it('Query.cursor(), eachAsync and for await', async () => {
    await same(
      async (side) => {
        const docs: any[] = []
        await side.Book.find()
          .sort({ title: 1 })
          .batchSize(7)
          .cursor()
          .eachAsync((doc) => void docs.push(doc))
        return docs
      },
      (docs) => docs.map(hydrated),
    )
    await same(async (side) => {
      const docs: any[] = []
      for await (const doc of side.Book.find({ pages: { $lt: 300 } })
        .sort({ _id: -1 })
        .lean()
        .cursor())
        docs.push(doc)
      return docs
    })
    await same(async (side) => {
      const docs: any[] = []
      for await (const doc of side.Book.aggregate([{ $sort: { title: 1 } }, { $limit: 9 }]).cursor())
        docs.push(doc)
      return docs
    })
  })

  it('QueryCursor: next, rewind, addCursorFlag, close, and an AggregationCursor', async () => {
    await same(async (side) => {
      const cursor = side.Book.find().sort({ title: 1 }).lean().cursor()
      const first = [await cursor.next(), await cursor.next()]
      cursor.rewind()
      const again = [await cursor.next(), await cursor.next()]
      await cursor.close()
      return { first, again, closed: cursor.closed }
    })
    await same(async (side) => {
      const cursor = side.Book.find({ pages: { $lt: 200 } })
        .sort({ title: 1 })
        .lean()
        .cursor()
        .addCursorFlag('noCursorTimeout', false)
        .addCursorFlag('partial', true)
      const docs = []
      for (let doc = await cursor.next(); doc !== null; doc = await cursor.next()) docs.push(doc)
      return docs
    })
    await same(async (side) => {
      const cursor = side.Book.aggregate([{ $sort: { title: -1 } }]).cursor()
      const docs = [await cursor.next(), await cursor.next()]
      await cursor.close()
      return docs
    })
  })

  it("the driver cursor under QueryCursor emits 'close' as the official one does (destroy, close, end, rewind)", async () => {
    await same(async (side) => {
      const seen: string[] = []
      // destroy() (Mongoose's gh-14966): the driver cursor closes and says so.
      const stream: any = await side.Book.find().sort({ title: 1 }).cursor()
      // on() chains: it returns the cursor.
      const chained = stream.cursor.on('close', () => seen.push('destroyed'))
      seen.push(`chained ${chained === stream.cursor}`)
      stream.destroy()
      await once(stream.cursor, 'close')
      seen.push(`closed ${stream.cursor.closed}`)
      // Read to the end: one 'close' once the server has no more, none after; rewind arms it again.
      const cursor: any = side.Book.find({ pages: { $lt: 150 } })
        .sort({ title: 1 })
        .batchSize(3)
        .lean()
        .cursor()
      const docs = [await cursor.next()]
      cursor.cursor.on('close', () => seen.push(`end after ${docs.length}`))
      for (let doc = await cursor.next(); doc !== null; doc = await cursor.next()) docs.push(doc)
      await cursor.next()
      await cursor.close()
      seen.push(`ended ${cursor.cursor.listenerCount('close')}`)
      // close() of a cursor never read: 'close' once, even when closed twice.
      const unread: any = side.Book.find().lean().cursor()
      await once(unread, 'cursor')
      unread.cursor.on('close', () => seen.push('unread closed'))
      await unread.close()
      await unread.cursor.close()
      // rewind() runs the query again: one more 'close' at its end.
      const rewound: any = side.Book.find({ pages: { $lt: 150 } })
        .lean()
        .cursor()
      await once(rewound, 'cursor')
      rewound.cursor.on('close', () => seen.push('run ended'))
      while ((await rewound.next()) !== null);
      rewound.rewind()
      while ((await rewound.next()) !== null);
      await rewound.close()
      return { seen, docs }
    })
  })

  it('populate: paths, virtuals, lean and hydrated', async () => {
    await same(
      (side) =>
        side.Book.find({ pages: { $lt: 250 } })
          .sort({ title: 1 })
          .populate('author'),
      (docs) => docs.map((doc: any) => ({ ...hydrated(doc), author: hydrated(doc.author) })),
    )
    await same((side) => side.Book.find().sort({ title: 1 }).populate('author', 'name born').lean())
    await same(
      (side) =>
        side.Author.find()
          .sort({ _id: 1 })
          .populate({ path: 'books', options: { sort: { title: 1 } } }),
      (docs) => docs.map((doc: any) => ({ ...hydrated(doc), books: doc.books.map(hydrated) })),
    )
  })

  it('discriminators: the base model returns each kind, a discriminator only its own', async () => {
    await same(
      (side) => side.Event.find().sort({ at: 1 }),
      (docs) => docs.map(hydrated),
    )
    await same((side) => side.Click.find().sort({ at: -1 }).lean())
    await same((side) => side.Click.countDocuments())
    await same((side) => side.Click.aggregate([{ $sort: { at: 1 } }]))
  })

  it('every BSON type the server stores, through a schemaless model, lean and hydrated', async () => {
    const stored = plain.connection.collection('typed')
    await stored.insertMany(typedDocuments())
    const schema = new Schema({}, { strict: false })
    const Typed = (side: Side) =>
      side.connection.models.Typed ?? side.connection.model('Typed', schema, 'typed')
    await same((side) => Typed(side).find().sort({ _id: 1 }).lean())
    await same(
      (side) => Typed(side).find().sort({ _id: -1 }),
      (docs) => docs.map((doc: any) => doc.toObject()),
    )
    // Typed paths: Mongoose casts what the driver returned (Int32, Double, Long to BigInt, UUID, Buffer).
    const typedSchema = new Schema({
      index: Number,
      int32: Schema.Types.Int32,
      double: Schema.Types.Double,
      smallLong: BigInt,
      bigLong: BigInt,
      uuid: Schema.Types.UUID,
      binary: Buffer,
      date: Date,
      nested: Schema.Types.Mixed,
      tags: [String],
      // No _id: the stored items have none, and a generated one differs on each side.
      items: [new Schema({ sku: String, qty: Number, price: Number }, { _id: false })],
    })
    await same(
      (side) =>
        (side.connection.models.TypedPaths ?? side.connection.model('TypedPaths', typedSchema, 'typed'))
          .find({ index: { $gte: 3 } })
          .sort({ index: 1 }),
      (docs) => docs.map(hydrated),
    )
  })

  it('errors: a cast error, and a server error with the same class, code and message', async () => {
    const failure = async (side: Side, read: (side: Side) => Promise<unknown>) => {
      const error = (await read(side).then(
        () => expect.unreachable(),
        (error: any) => error,
      )) as any
      return { name: error.name, code: error.code, message: error.message, class: error.constructor.name }
    }
    for (const read of [
      (side: Side) => side.Book.find({ pages: 'many' }),
      (side: Side) => side.Book.find({ pages: { $bogus: 1 } }),
      (side: Side) => side.Book.aggregate([{ $bogus: {} }]),
    ]) {
      expect(await failure(routed, read)).toEqual(await failure(plain, read))
    }
    expect(plugin.stats().fallbacks).toBe(0)
  })
})

describe('mongoosePlugin leaves to the official driver what rumongo cannot serve identically, and counts it', () => {
  /** Runs `read` on both sides: the same result, one counted fallback, and the read it sent. */
  async function fallsBack<T>(
    read: (side: Side) => Promise<T>,
    reason: MongooseFallback['reason'],
    view: (result: T) => unknown = (result) => result,
  ) {
    const before = plugin.stats()
    routed.reads.length = 0
    const expected = await read(plain)
    plain.reads.length = 0
    expectIdentical(view(await read(routed)), view(expected))
    const after = plugin.stats()
    expect(fallbacks.map((fallback) => fallback.reason)).toEqual([reason])
    expect(after.fallbacksByReason[reason]).toBe((before.fallbacksByReason[reason] ?? 0) + 1)
    expect(after.served).toBe(before.served)
    return fallbacks[0]!
  }

  it('session: a read in a session', async () => {
    const session = await routed.connection.startSession()
    const plainSession = await plain.connection.startSession()
    try {
      await fallsBack(
        (side) =>
          side.Book.find({ pages: { $lt: 200 } })
            .sort({ title: 1 })
            .session(side === routed ? session : plainSession)
            .lean(),
        'session',
      )
      expect(routed.reads).toEqual(['find'])
    } finally {
      await Promise.all([session.endSession(), plainSession.endSession()])
    }
  })

  it('option: an option rumongo refuses (signal) goes to the official driver, which accepts it', async () => {
    const fallback = await fallsBack(
      (side) =>
        side.Book.find({ pages: { $lt: 200 } })
          .sort({ title: 1 })
          .setOptions({ signal: new AbortController().signal })
          .lean(),
      'option',
    )
    expect(fallback.method).toBe('find')
    expect(fallback.error).toBeInstanceOf(MongoInvalidArgumentError)
    expect(routed.reads).toEqual(['find'])
  })

  it('option: an aggregate that writes ($out) goes to the official driver, which runs it', async () => {
    const outcome = (side: Side) =>
      side.Book.aggregate([
        { $match: { pages: { $lt: 150 } } },
        { $out: `copy_${side === routed ? 'routed' : 'plain'}` },
      ])
        .then((result) => ({ result }))
        .catch((error: any) => ({ error: `${error.name} ${error.code}: ${error.message}` }))
    expectIdentical(await outcome(routed), await outcome(plain))
    expect(fallbacks).toMatchObject([{ method: 'aggregate', reason: 'option' }])
    expect(fallbacks[0]!.error).toBeInstanceOf(MongoInvalidArgumentError)
  })

  it('explain: a find with explain', async () => {
    await fallsBack(
      (side) => side.Book.find({ pages: 100 }).explain('queryPlanner'),
      'explain',
      (plan: any) => typeof plan,
    )
  })

  it('write: an update, and the reads around it are served', async () => {
    const before = plugin.stats()
    await routed.Book.updateOne({ title: 'book 59' }, { $set: { pages: 1 } })
    expect(fallbacks).toMatchObject([{ method: 'updateOne', reason: 'write', namespace: `${dbName}.books` }])
    expect(plugin.stats().fallbacksByReason.write).toBe((before.fallbacksByReason.write ?? 0) + 1)
    await same((side) => side.Book.findOne({ title: 'book 59' }).lean())
    await plain.Book.updateOne({ title: 'book 59' }, { $set: { pages: 513 } })
  })

  it('watch: a change stream in a session runs on the official driver (served otherwise: mongoose_watch.test.ts)', async () => {
    const session = await routed.connection.startSession()
    const stream = routed.Book.watch([], { session })
    try {
      await vi.waitFor(() => expect(fallbacks).toMatchObject([{ method: 'watch', reason: 'session' }]))
    } finally {
      await stream.close()
      await session.endSession()
    }
  })

  it('method: any other driver method (Model.listIndexes)', async () => {
    await fallsBack((side) => side.Book.listIndexes(), 'method')
    expect(fallbacks).toMatchObject([{ method: 'listIndexes', reason: 'method' }])
  })

  it('client: a connection option rumongo refuses (family) leaves every read of that connection to the official driver', async () => {
    const other = await application(true, { family: 4 })
    try {
      const before = plugin.stats()
      const docs = await other.Book.find().sort({ title: 1 }).lean()
      expectIdentical(docs, await plain.Book.find().sort({ title: 1 }).lean())
      expect(fallbacks).toMatchObject([{ method: 'find', reason: 'client' }])
      expect(plugin.stats().clientError).toMatch(/family/)
      expect(plugin.stats().served).toBe(before.served)
      expect(other.reads).toEqual(['find'])
    } finally {
      await other.connection.close()
    }
  })
})

describe('mongoosePlugin setup', () => {
  it('mongoosePlugin({ client }) reads through the given client', async () => {
    const client = new MongoClient(uri, { monitorCommands: true })
    const commands: string[] = []
    client.on('commandStarted', (event) => commands.push(event.commandName))
    const given = mongoosePlugin({ client })
    const instance = new mongoose.Mongoose()
    instance.plugin(given)
    const connection = await instance.createConnection(uri, { dbName, autoIndex: false }).asPromise()
    try {
      const Book = connection.model('Book', new Schema({ title: String }), 'books')
      expect(await Book.countDocuments()).toBe(60)
      expect(commands).toContain('aggregate')
      expect(given.stats()).toMatchObject({ served: 1, fallbacks: 0 })
    } finally {
      await connection.close()
      await client.close()
    }
  })

  it('the usual order: models first, a query buffered before mongoose.connect(), then the default connection', async () => {
    const own = mongoosePlugin()
    const instance = new mongoose.Mongoose()
    instance.plugin(own)
    const Book = instance.model('Book', new Schema({ title: String, pages: Number }), 'books')
    const pending = Book.find({ pages: { $lt: 150 } }).sort({ title: 1 })
    const queried = pending.exec()
    await instance.connect(uri, { dbName, autoIndex: false })
    try {
      const docs = await queried
      const expected = await plain.Book.find({ pages: { $lt: 150 } })
        .sort({ title: 1 })
        .lean()
      // Fields outside the schema stay in a hydrated document, as they came from the driver.
      expectIdentical(
        docs.map((doc) => doc.toObject()),
        expected,
      )
      expect(own.stats()).toMatchObject({ served: 1, fallbacks: 0, openClients: 1 })
    } finally {
      await instance.disconnect()
    }
    // The connection's rumongo client closed with it.
    expect(own.stats().openClients).toBe(0)
  })

  it('one rumongo client per connection: shared by useDb(), closed with the connection, made again when it reopens', async () => {
    const own = mongoosePlugin()
    const instance = new mongoose.Mongoose()
    instance.plugin(own)
    const schema = new Schema({ title: String })
    const connection = await instance.createConnection(uri, { dbName, autoIndex: false }).asPromise()
    const Book = connection.model('Book', schema, 'books')
    const Other = connection.useDb(`${dbName}_other`).model('Book', schema, 'books')
    expect(await Book.countDocuments()).toBe(60)
    expect(await Other.countDocuments()).toBe(0)
    expect(own.stats()).toMatchObject({ served: 2, fallbacks: 0, openClients: 1 })
    // plugin.close() with the connection open: the next read makes a new client.
    await own.close()
    expect(own.stats().openClients).toBe(0)
    expect(await Book.countDocuments()).toBe(60)
    expect(own.stats()).toMatchObject({ served: 3, fallbacks: 0, openClients: 1 })
    await connection.close()
    expect(own.stats().openClients).toBe(0)
    await connection.openUri(uri, { dbName, autoIndex: false })
    try {
      expect(await Book.countDocuments()).toBe(60)
      expect(own.stats()).toMatchObject({ served: 4, fallbacks: 0, openClients: 1 })
    } finally {
      await connection.close()
    }
    expect(own.stats().openClients).toBe(0)
  })

  it("the connection's rumongo client connects when the connection opens: the first read opens no connection", async () => {
    // Which connection each driver opened (its handshake names the driver) and where finds came.
    const opened = new Map<number, string>()
    const finds: number[] = []
    const server = await startWireServer({
      hello: (command, { connection }) => {
        if (command.client) opened.set(connection, command.client.driver.name)
        return helloReply(false)
      },
      answer: (command, { connection }) => {
        if (!command.find) return { ok: 1 }
        finds.push(connection)
        const firstBatch = [{ _id: 1, title: 'a' }]
        return { cursor: { id: Long.ZERO, ns: `${command.$db}.${command.find}`, firstBatch }, ok: 1 }
      },
    })
    const own = mongoosePlugin()
    const instance = new mongoose.Mongoose()
    instance.plugin(own)
    const Book = instance.model('Book', new Schema({ title: String }), 'books')
    await instance.connect(server.uri, { autoIndex: false, autoCreate: false })
    try {
      // The official driver sends no ping when it connects without credentials: rumongo's connect() does.
      await vi.waitFor(() => expect(server.received('ping')).not.toHaveLength(0), { timeout: 10_000 })
      const openBeforeRead = Math.max(...opened.keys())
      expect(await Book.find().lean()).toEqual([{ _id: 1, title: 'a' }])
      expect(own.stats()).toMatchObject({ served: 1, fallbacks: 0, openClients: 1 })
      // The read went on a connection rumongo had opened before it: no handshake on its path.
      expect(finds).toHaveLength(1)
      expect(finds[0]).toBeLessThanOrEqual(openBeforeRead)
      expect(opened.get(finds[0]!)).not.toBe(opened.get(1))
    } finally {
      await instance.disconnect()
      await server.stop()
    }
    expect(own.stats().openClients).toBe(0)
  })

  it('a background connect that fails raises nothing: the first read fails as it did without it', async () => {
    const rejections: unknown[] = []
    const onRejection = (reason: unknown) => rejections.push(reason)
    process.on('unhandledRejection', onRejection)
    // The server accepts the official driver (Mongoose's connection opens) and shuts rumongo out.
    const rumongoConnections = new Set<number>()
    let officialDriver: string | undefined
    const server = await startWireServer({
      hello: (command: Document, { connection }) => {
        const driver = command.client?.driver.name as string | undefined
        officialDriver ??= driver
        if (driver !== undefined && driver !== officialDriver) rumongoConnections.add(connection)
        return rumongoConnections.has(connection) ? CLOSE_CONNECTION : helloReply(false)
      },
    })
    const own = mongoosePlugin()
    const instance = new mongoose.Mongoose()
    instance.plugin(own)
    const Book = instance.model('Book', new Schema({ title: String }), 'books')
    try {
      await instance.connect(
        `mongodb://${server.address}/?directConnection=true&serverSelectionTimeoutMS=300`,
        {
          autoIndex: false,
          autoCreate: false,
        },
      )
      await expect(Book.find().lean()).rejects.toMatchObject({ name: 'MongoServerSelectionError' })
      expect(rumongoConnections.size).toBeGreaterThan(0)
      expect(own.stats()).toMatchObject({ served: 1, fallbacks: 0 })
      // The background connect failed first (it started first, with the same timeout).
      await new Promise((resolve) => setImmediate(resolve))
      expect(rejections).toEqual([])
    } finally {
      process.off('unhandledRejection', onRejection)
      await instance.disconnect()
      await server.stop()
    }
  })

  it('a Mongoose instance without the plugin is left alone, even when it shares the copy of Mongoose', async () => {
    const before = plugin.stats()
    await plain.Book.find().lean()
    expect(plugin.stats()).toEqual(before)
    expect(plain.reads).toContain('find')
  })

  it('an onFallback listener that throws does not fail the read', async () => {
    const own = mongoosePlugin({
      onFallback: () => {
        throw new Error('listener failure')
      },
    })
    const instance = new mongoose.Mongoose()
    instance.plugin(own)
    const connection = await instance.createConnection(uri, { dbName, autoIndex: false }).asPromise()
    try {
      const Book = connection.model('Book', new Schema({ title: String }), 'books')
      const session = await connection.startSession()
      try {
        expect(await Book.countDocuments({}, { session })).toBe(60)
      } finally {
        await session.endSession()
      }
      expect(own.stats()).toMatchObject({ served: 0, fallbacks: 1, fallbacksByReason: { session: 1 } })
    } finally {
      await connection.close()
    }
  })

  it('bad options fail at once with a typed error', () => {
    expect(() => mongoosePlugin({ client: {} as any })).toThrow(MongoInvalidArgumentError)
    expect(() => mongoosePlugin({ onFallback: 1 as any })).toThrow(MongoInvalidArgumentError)
    expect(() => mongoosePlugin(null as any)).toThrow(MongoInvalidArgumentError)
  })
})
