// Model: Mongoose read-path parity (.lean() and hydrated .toObject()) with schema projection pushdown.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import mongoose, { Schema, type Connection } from 'mongoose'
import {
  Model,
  MongoClient,
  MongoInvalidArgumentError,
  MongoNotConnectedError,
  ObjectId,
  type Document,
  type ModelOptions,
} from 'rumongo'
import { expectIdentical, uniqueDbName, uri } from './setup/helpers.js'

const USER_COUNT = 60
/** A stored field the schema does not declare: the model must never read it. */
const EXTRA_FIELD = 'blob'

const userSchema = new Schema({
  name: String,
  age: Number,
  joined: Date,
  password: { type: String, select: false },
  address: { city: String, zip: String },
  orders: [new Schema({ sku: String, qty: Number, at: Date })],
  tags: [String],
  friend: Schema.Types.ObjectId,
})

let connection: Connection
let client: MongoClient
let dbName: string
let MongooseUser: mongoose.Model<any>
let User: Model

const CITIES = ['Paris', 'Lyon', 'Oslo', 'Lima']

beforeAll(async () => {
  dbName = uniqueDbName('model')
  connection = await mongoose.createConnection(uri, { dbName }).asPromise()
  client = await MongoClient.connect(uri)
  MongooseUser = connection.model('User', userSchema, 'users')
  await MongooseUser.insertMany(
    Array.from({ length: USER_COUNT }, (_, i) => ({
      name: `user ${String(i).padStart(2, '0')}`,
      age: 18 + ((i * 7) % 50),
      joined: new Date(Date.UTC(2020, i % 12, 1 + (i % 28))),
      password: `secret ${i}`,
      address: { city: CITIES[i % CITIES.length], zip: String(10000 + i) },
      orders: Array.from({ length: i % 3 }, (_, j) => ({
        sku: `sku-${i}-${j}`,
        qty: j + 1,
        at: new Date(i * 1e9),
      })),
      tags: i % 2 ? ['a', 'b'] : [],
      friend: i % 5 ? new ObjectId() : undefined,
    })),
  )
  // Written behind Mongoose's back, as legacy data or another service would.
  await connection.collection('users').updateMany({}, { $set: { [EXTRA_FIELD]: 'x'.repeat(2000) } })
  User = Model.fromMongoose(MongooseUser, client)
})

afterAll(async () => {
  await connection?.dropDatabase()
  await connection?.close()
  await client?.close()
})

/** Mongoose results without the stored field the schema does not declare. */
function withoutExtra<T>(result: T): T {
  if (Array.isArray(result)) return result.map(withoutExtra) as T
  if (result === null || typeof result !== 'object') return result
  const { [EXTRA_FIELD]: _extra, ...rest } = result as Document
  return rest as T
}

/** Hydrated Mongoose documents turned plain, without the undeclared field. */
function hydrated(result: any): unknown {
  if (Array.isArray(result)) return result.map(hydrated)
  return result === null ? null : withoutExtra(result.toObject())
}

/**
 * Keys in sorted order, deeply: hydration builds nested paths (`address`) before the others, so a
 * hydrated document's key order is Mongoose's, not the stored one (`.lean()` keeps the stored order).
 */
function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys)
  if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype)
    return value
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortedKeys((value as Document)[key])]),
  )
}

/** Asserts equality with hydrated Mongoose results: same values and types, any key order. */
function expectSameAsHydrated(actual: unknown, documents: unknown): void {
  expectIdentical(sortedKeys(actual), sortedKeys(hydrated(documents)))
}

describe('Model.fromMongoose', () => {
  it('reads nested paths and subdocument arrays, and leaves select: false out', () => {
    expect(User.fields).toEqual([
      '__v',
      'address.city',
      'address.zip',
      'age',
      'friend',
      'joined',
      'name',
      'orders',
      'tags',
    ])
    expect(User.collection.collectionName).toBe('users')
    expect(User.collection.dbName).toBe(dbName)
    expect(User.projection).not.toHaveProperty('password')
  })

  it('expands a subdocument array field by field when it hides a field', () => {
    const Invoice = connection.model(
      'Invoice',
      new Schema({
        lines: [new Schema({ sku: String, cost: { type: Number, select: false } })],
        owner: new Schema({ name: String }),
      }),
    )
    expect(Model.fromMongoose(Invoice, client).fields).toEqual(['__v', 'lines._id', 'lines.sku', 'owner'])
  })

  it('keeps the discriminator key and filters a discriminator model on its value', async () => {
    const Base = connection.model('Event', new Schema({ title: String }), 'events')
    const Click = Base.discriminator('Click', new Schema({ x: Number }))
    await Base.create({ title: 'plain' })
    await Click.create({ title: 'click', x: 3 })
    const Events = Model.fromMongoose(Base, client)
    const Clicks = Model.fromMongoose(Click, client)
    expect(Events.fields).toContain('__t')
    expectIdentical(await Events.find().sort('title'), await Base.find().sort('title').lean())
    expectIdentical(await Clicks.find(), await Click.find().lean())
    expect(await Clicks.countDocuments()).toBe(1)
  })
})

describe('parity with Mongoose', () => {
  it('find: equals .lean() and hydrated .toObject()', async () => {
    const filter = { age: { $gte: 30 } }
    const actual = await User.find(filter).sort({ age: -1, name: 1 })
    expect(actual.length).toBeGreaterThan(10)
    expectIdentical(actual, withoutExtra(await MongooseUser.find(filter).sort({ age: -1, name: 1 }).lean()))
    expectSameAsHydrated(actual, await MongooseUser.find(filter).sort({ age: -1, name: 1 }))
  })

  it('sort, limit, skip, select and lean chained', async () => {
    const actual = await User.find({ age: { $gte: 18 } })
      .sort('-age name')
      .limit(20)
      .skip(5)
      .select('name age')
      .lean()
    const expected = await MongooseUser.find({ age: { $gte: 18 } })
      .sort('-age name')
      .limit(20)
      .skip(5)
      .select('name age')
      .lean()
    expect(actual).toHaveLength(20)
    expectIdentical(actual, expected)
  })

  it('find(filter, null, options), as in Mongoose', async () => {
    const actual = await User.find({ age: { $lt: 40 } }, null, { sort: { name: 1 }, limit: 7, skip: 2 })
    const expected = await MongooseUser.find({ age: { $lt: 40 } }, null, {
      sort: { name: 1 },
      limit: 7,
      skip: 2,
    })
    expectSameAsHydrated(actual, expected)
  })

  // Mongoose's signatures: find(filter, projection, options), findOne and findById alike.
  const PROJECTIONS: [string, any][] = [
    ['an exclusion object', { address: 0, orders: 0 }],
    ['an inclusion object', { name: 1 }],
    ['an inclusion string', 'name age'],
    ['an exclusion string', '-tags -friend'],
    ['an array of paths', ['name', 'joined']],
    ['a select: false field added', '+password'],
    ['_id left out', { _id: 0, name: 1 }],
    ['null', null],
  ]

  it.each(PROJECTIONS)('find(filter, projection, options) with %s', async (_case, projection) => {
    const filter = { age: { $gte: 30 } }
    const options = { sort: 'name', limit: 9, skip: 1, lean: true }
    const actual = await User.find(filter, projection, options)
    const expected = await MongooseUser.find(filter, projection, options).lean()
    expect(actual).toHaveLength(9)
    expectIdentical(actual, withoutExtra(expected))
  })

  it.each(PROJECTIONS)('findOne and findById with %s', async (_case, projection) => {
    const filter = { name: 'user 12' }
    expectIdentical(
      await User.findOne(filter, projection),
      withoutExtra(await MongooseUser.findOne(filter, projection).lean()),
    )
    const { _id: id } = (await MongooseUser.findOne(filter, { _id: 1 }).lean())!
    expectIdentical(
      await User.findById(id, projection, { maxTimeMS: 5_000 }),
      withoutExtra(await MongooseUser.findById(id, projection, { maxTimeMS: 5_000 }).lean()),
    )
  })

  it('findById(undefined) and findById(null) look for a null _id, as in Mongoose', async () => {
    expect(await MongooseUser.findById(undefined).lean()).toBeNull()
    expect(await User.findById(undefined)).toBeNull()
    expect(await User.findById(null)).toBeNull()
  })

  it('findById casts to the schema _id type: a String _id is looked up as given', async () => {
    const Tag = connection.model('Tag', new Schema({ _id: String, label: String }), 'tags')
    const ids = ['aaaaaaaaaaaaaaaaaaaaaaaa', 'short-id']
    await Tag.create(ids.map((id) => ({ _id: id, label: `label of ${id}` })))
    const Tags = Model.fromMongoose(Tag, client)
    for (const id of ids) {
      const expected = await Tag.findById(id).lean()
      expect(expected).not.toBeNull()
      expectIdentical(await Tags.findById(id), expected)
    }
  })

  it('refuses find options given as the projection, instead of dropping them', () => {
    for (const call of [
      () => User.find({}, { sort: { name: 1 }, limit: 7 } as any),
      () => User.findOne({}, { projection: { name: 1 } } as any),
      () => User.findById(new ObjectId(), { raw: true } as any),
    ]) {
      expect(call).toThrow(MongoInvalidArgumentError)
      expect(call).toThrow(/the second argument is the projection, as in Mongoose/)
    }
  })

  it('estimatedDocumentCount(options) passes its options on', async () => {
    expect(await User.estimatedDocumentCount({ maxTimeMS: 5_000 })).toBe(USER_COUNT)
    await expect(User.estimatedDocumentCount({ maxTimeMS: 'soon' } as any)).rejects.toBeInstanceOf(
      MongoInvalidArgumentError,
    )
  })

  it.each([
    ['inclusion string', 'name address.city'],
    ['exclusion string', '-age -orders'],
    ['_id excluded', 'name -_id'],
    ['_id alone', '_id'],
    ['_id kept in an exclusion', '_id -age'],
    ['a parent of schema paths', 'address'],
    ['a path inside a subdocument array', 'orders.sku'],
    ['a select: false field added', '+password'],
    ['object inclusion', { name: 1, joined: 1 }],
    ['object exclusion', { tags: 0, friend: 0 }],
  ] as const)('select: %s', async (_case, selection) => {
    const sort = { name: 1 } as const
    const actual = await User.find({})
      .sort(sort)
      .select(selection as any)
    const expected = await MongooseUser.find({})
      .sort(sort)
      .select(selection as any)
      .lean()
    expectIdentical(actual, withoutExtra(expected))
  })

  it('where(path) comparisons', async () => {
    const actual = await User.find()
      .where('age')
      .gte(30)
      .lt(50)
      .where('address.city')
      .in(['Paris', 'Oslo'])
      .sort('name')
    const expected = await MongooseUser.find()
      .where('age')
      .gte(30)
      .lt(50)
      .where('address.city')
      .in(['Paris', 'Oslo'])
      .sort('name')
      .lean()
    expect(actual.length).toBeGreaterThan(0)
    expectIdentical(actual, withoutExtra(expected))
    const exact = await User.find().where('name').equals('user 07')
    expectIdentical(exact, withoutExtra(await MongooseUser.find().where('name').equals('user 07').lean()))
  })

  it('findOne, findById (hex string and ObjectId)', async () => {
    const one = await User.findOne({ name: 'user 12' })
    expectIdentical(one, withoutExtra(await MongooseUser.findOne({ name: 'user 12' }).lean()))
    expectSameAsHydrated(one, await MongooseUser.findOne({ name: 'user 12' }))
    const id = (one as Document)._id as ObjectId
    expectIdentical(
      await User.findById(id.toHexString()),
      withoutExtra(await MongooseUser.findById(id.toHexString()).lean()),
    )
    expectIdentical(
      await User.findById(id).select('age'),
      await MongooseUser.findById(id).select('age').lean(),
    )
    expect(await User.findById(new ObjectId())).toBeNull()
    expect(await User.findOne({ name: 'nobody' }).exec()).toBeNull()
  })

  it('countDocuments, distinct, exists', async () => {
    const filter = { 'address.city': 'Lyon' }
    expect(await User.countDocuments(filter)).toBe(await MongooseUser.countDocuments(filter))
    expect(await User.countDocuments().exec()).toBe(USER_COUNT)
    expectIdentical(
      (await User.distinct('address.city')).sort(),
      (await MongooseUser.distinct('address.city')).sort(),
    )
    expectIdentical(await User.distinct('age', filter), await MongooseUser.distinct('age', filter))
    expectIdentical(await User.exists({ name: 'user 03' }), await MongooseUser.exists({ name: 'user 03' }))
    expect(await User.exists({ name: 'nobody' })).toBeNull()
  })

  it('cursor() streams the same documents', async () => {
    const streamed: Document[] = []
    for await (const document of User.find({ age: { $gt: 40 } })
      .sort('name')
      .batchSize(4)
      .cursor()) {
      streamed.push(document)
    }
    expectIdentical(streamed, await User.find({ age: { $gt: 40 } }).sort('name'))
  })
})

describe('Model.fromMongoose before Mongoose connects', () => {
  it('reads the database Mongoose connects to, not the default one', async () => {
    // The usual order: models are made at import time, mongoose.connect() runs later.
    const late = new mongoose.Mongoose()
    const LateUser = late.model('User', userSchema, 'users')
    const Late = Model.fromMongoose(LateUser, client)
    expect(() => Late.find()).toThrow(MongoNotConnectedError)
    expect(() => Late.find()).toThrow(/connect Mongoose/)
    await late.connect(uri, { dbName })
    try {
      expect(Late.collection.dbName).toBe(dbName)
      const expected = withoutExtra(await LateUser.find().sort('name').lean())
      expect(expected).toHaveLength(USER_COUNT)
      expectIdentical(await Late.find().sort('name'), expected)
      expect(await Late.countDocuments()).toBe(USER_COUNT)
    } finally {
      await late.disconnect()
    }
  })
})

describe('Model.define', () => {
  it('projects to the listed fields', async () => {
    const Users = Model.define(client.db(dbName).collection('users'), { name: 1, age: 1, 'address.city': 1 })
    expect(Users.projection).toEqual({ 'address.city': 1, age: 1, name: 1 })
    const actual = await Users.find({ age: { $gte: 18 } }, null, { sort: { age: -1, name: 1 }, limit: 20 })
    const expected = await MongooseUser.find({ age: { $gte: 18 } })
      .sort({ age: -1, name: 1 })
      .limit(20)
      .select('name age address.city')
      .lean()
    expectIdentical(actual, expected)
    const withoutId = Model.define(client.db(dbName).collection('users'), ['name', 'address'])
    expect(Object.keys((await withoutId.findOne({}, '-_id'))!)).toEqual(['name', 'address'])
  })

  it('rejects empty and malformed field lists', () => {
    const users = client.db(dbName).collection('users')
    expect(() => Model.define(users, {})).toThrow(MongoInvalidArgumentError)
    expect(() => Model.define(users, { name: 0 })).toThrow(MongoInvalidArgumentError)
    expect(() => Model.define(users, ['$where'])).toThrow(MongoInvalidArgumentError)
  })
})

describe('projection pushdown', () => {
  it('never returns a stored field the schema does not declare', async () => {
    const all = await User.find({})
    expect(all).toHaveLength(USER_COUNT)
    for (const document of all) expect(document).not.toHaveProperty(EXTRA_FIELD)
    expect(await client.db(dbName).collection('users').findOne({})).toHaveProperty(EXTRA_FIELD)
  })

  it('the server sends fewer bytes: raw batches of the model vs an unprojected find', async () => {
    const totalBytes = (documents: unknown[]) =>
      documents.reduce<number>((sum, document) => sum + (document as Uint8Array).byteLength, 0)
    const projected = totalBytes(await User.find({}, null, { raw: true }))
    const unprojected = totalBytes(await client.db(dbName).collection('users').find({}, { raw: true }))
    const sameProjection = totalBytes(
      await client.db(dbName).collection('users').find({}, { raw: true, projection: User.projection }),
    )
    expect(projected).toBe(sameProjection)
    expect(unprojected - projected).toBeGreaterThanOrEqual(USER_COUNT * 2000)
  })
})

describe('errors', () => {
  it('selecting or reading a field outside the schema', () => {
    expect(() => User.find().select('blob')).toThrow(MongoInvalidArgumentError)
    expect(() => User.find().select('name blob')).toThrow(/'blob' is not a field of this model's schema/)
    expect(() => User.find({}, { blob: 1 })).toThrow(MongoInvalidArgumentError)
    expect(() => User.find({}, null, { projection: { blob: 1 } })).toThrow(MongoInvalidArgumentError)
    expect(() => User.find().select('-blob')).toThrow(MongoInvalidArgumentError)
    expect(() => User.find().select('name -age')).toThrow(/mix inclusion and exclusion/)
    expect(() => User.distinct('blob')).toThrow(MongoInvalidArgumentError)
  })

  it('a bad id', () => {
    expect(() => User.findById('64b7')).toThrow(MongoInvalidArgumentError)
    expect(() => User.findById('zzzzzzzzzzzzzzzzzzzzzzzz')).toThrow(MongoInvalidArgumentError)
  })

  it('a comparison without where()', () => {
    expect(() => User.find().gte(3)).toThrow(/must follow where/)
  })
})

describe('sanitizeFilter', () => {
  it.each([
    ['an operator under a path', { password: { $ne: null } }],
    ['inside $and and $or', { $and: [{ name: { $gt: '' } }], $or: [{ age: { $in: [1] } }, { age: 3 }] }],
    ['$eq alone is kept', { name: { $eq: 'Ada' } }],
    ['plain values are kept', { name: 'Ada', age: 3, tags: ['a'] }],
    ['inside $nor, nested logical operators', { $nor: [{ $or: [{ a: { $exists: true } }] }] }],
    ['an operator beside $eq', { name: { $eq: 'Ada', $ne: 'Bob' } }],
    ['an array of filters', [{ a: { $gt: 1 } }, { b: 2 }]],
    ['another top-level operator', { $comment: { $gt: 1 }, a: 1 }],
    ['a nested document without operators', { address: { city: 'Paris', zip: { code: '75' } } }],
    [
      'arrays and BSON values under a path',
      { tags: [{ $gt: 1 }], id: new ObjectId('64b7f0c2a1b2c3d4e5f60718') },
    ],
  ])('%s: same as Mongoose', (_case, filter) => {
    const expected = mongoose.sanitizeFilter(structuredClone(filter))
    const input = structuredClone(filter)
    expect(Model.sanitizeFilter(input as Document)).toEqual(expected)
    expect(input).toEqual(filter)
  })

  it.each([
    ['$where', { $where: 'true' }],
    ['$expr', { $expr: { $gt: ['$a', 1] } }],
    ['$jsonSchema', { $jsonSchema: {} }],
    ['$text', { $text: { $search: 'x' } }],
    ['$where inside $or', { $or: [{ a: 1 }, { $where: 'true' }] }],
  ])('refuses %s, as Mongoose does', (_case, filter) => {
    expect(() => mongoose.sanitizeFilter(structuredClone(filter))).toThrow(/not allowed with sanitizeFilter/)
    expect(() => Model.sanitizeFilter(structuredClone(filter))).toThrow(MongoInvalidArgumentError)
    expect(() => Model.sanitizeFilter(structuredClone(filter))).toThrow(/not allowed with sanitizeFilter/)
  })

  it('leaves trusted values alone: Model.trusted and mongoose.trusted', () => {
    const ours = { age: Model.trusted({ $gt: 18 }), $expr: Model.trusted({ $eq: ['$a', '$b'] }) }
    expect(Model.sanitizeFilter(ours)).toEqual({ age: { $gt: 18 }, $expr: { $eq: ['$a', '$b'] } })
    const theirs = { age: mongoose.trusted({ $gt: 18 }) }
    expect(Model.sanitizeFilter(theirs).age).toBe(theirs.age)
    expect(mongoose.sanitizeFilter({ ...theirs }).age).toBe(theirs.age)
    // The mark is not a field: it is not serialized.
    expect(Object.keys(ours.age)).toEqual(['$gt'])
  })

  it('keeps a "__proto__" key from JSON input a field, never a prototype', () => {
    const sanitized = Model.sanitizeFilter(JSON.parse('{"__proto__": {"$ne": 1}, "a": 1}'))
    expect(Object.getPrototypeOf(sanitized)).toBe(Object.prototype)
    expect(Object.keys(sanitized)).toEqual(['__proto__', 'a'])
    expect(Object.getOwnPropertyDescriptor(sanitized, '__proto__')?.value).toEqual({ $eq: { $ne: 1 } })
  })

  it('rejects code and expression operators wherever they would run when asked', () => {
    const strict = { rejectUnsafeOperators: true }
    expect(() => Model.sanitizeFilter({ $where: 'true' }, strict)).toThrow(MongoInvalidArgumentError)
    expect(() => Model.sanitizeFilter({ $or: [{ $expr: { $gt: ['$a', 1] } }] }, strict)).toThrow(/\$expr/)
    // Trusted values skip sanitizing, but not this check.
    const trusted = { $and: Model.trusted([{ $where: 'true' }]) }
    expect(Model.sanitizeFilter(trusted)).toEqual({ $and: [{ $where: 'true' }] })
    expect(() => Model.sanitizeFilter(trusted, strict)).toThrow(/\$where/)
    // Wrapped in $eq, an operator is a literal value the server never evaluates.
    expect(Model.sanitizeFilter({ name: { $where: 'true' } }, strict)).toEqual({
      name: { $eq: { $where: 'true' } },
    })
  })

  const codeOperators: [string, Document][] = [
    ['$function', { $function: { body: 'function() { return true }', args: [], lang: 'js' } }],
    ['$accumulator', { $accumulator: { init: 'function() {}', accumulate: 'function() {}', lang: 'js' } }],
  ]

  it.each(codeOperators)(
    '%s: kept as Mongoose keeps it, refused with rejectUnsafeOperators',
    (name, operator) => {
      const strict = { rejectUnsafeOperators: true }
      const unsafe = new RegExp(`\\${name}`)
      for (const filter of [operator, { $or: [operator] }]) {
        expect(Model.sanitizeFilter(structuredClone(filter))).toEqual(
          mongoose.sanitizeFilter(structuredClone(filter)),
        )
        expect(() => Model.sanitizeFilter(structuredClone(filter), strict)).toThrow(MongoInvalidArgumentError)
        expect(() => Model.sanitizeFilter(structuredClone(filter), strict)).toThrow(unsafe)
      }
      // Under a path it becomes a literal ($eq) the server never runs; trusted, it stays code.
      expect(Model.sanitizeFilter({ a: operator }, strict)).toEqual(mongoose.sanitizeFilter({ a: operator }))
      expect(() => Model.sanitizeFilter({ a: Model.trusted({ ...operator }) }, strict)).toThrow(unsafe)
      expect(() => Model.sanitizeFilter({ $and: Model.trusted([{ a: operator }]) }, strict)).toThrow(unsafe)
    },
  )

  /** A model whose collection records the filter each find would send, instead of sending it. */
  function recordingModel(options: ModelOptions = {}) {
    const sent: Document[] = []
    const collection = {
      find(filter: Document) {
        sent.push(filter)
        return {}
      },
    }
    return { model: Model.define(collection as never, ['name', 'age'], options), sent }
  }

  it('as a model option: the whole filter is sanitized when the query runs, where() conditions too', () => {
    const { model, sent } = recordingModel({ sanitizeFilter: true })
    const input = { name: { $ne: 'user 01' } }
    const chained = (query: any) =>
      query
        .where('age')
        .gte(60)
        .where('name', { $ne: 'Bob' })
        .where({ address: { $exists: true }, tags: 'a' })
        .where('friend')
        .equals({ $gt: '' })
    chained(model.find(input)).cursor()
    // Mongoose sanitizes the query's conditions as a whole when it runs (Query#_castConditions).
    const conditions = chained(MongooseUser.find(structuredClone(input))).getFilter()
    expect(sent[0]).toEqual(mongoose.sanitizeFilter(structuredClone(conditions)))
    expect(sent[0]).toMatchObject({ age: { $eq: { $gte: 60 } }, friend: { $eq: { $gt: '' } } })
    // Trusted conditions stay operators.
    model
      .find()
      .where({ age: Model.trusted({ $gte: 60 }) })
      .cursor()
    expect(sent[1]).toEqual({ age: { $gte: 60 } })
  })

  it('as a model option on the server: injected operators match literally, refused ones reject', async () => {
    const Safe = Model.define(client.db(dbName).collection('users'), ['name', 'age'], {
      sanitizeFilter: true,
      rejectUnsafeOperators: true,
    })
    expect(await User.countDocuments({ name: { $ne: 'user 01' } })).toBe(USER_COUNT - 1)
    expect(await Safe.countDocuments({ name: { $ne: 'user 01' } })).toBe(0)
    expect(await Safe.find({ name: { $ne: 'user 01' } })).toEqual([])
    expect(await User.find().where('name').equals({ $ne: 'user 01' })).toHaveLength(USER_COUNT - 1)
    expect(await Safe.find().where('name').equals({ $ne: 'user 01' })).toEqual([])
    expect(await Safe.find().where({ name: { $ne: 'user 01' } })).toEqual([])
    expect(
      (await Safe.find().where({ age: Model.trusted({ $gte: 60 }) })).every((user) => user.age >= 60),
    ).toBe(true)
    await expect(Safe.find({ $where: 'true' })).rejects.toThrow(MongoInvalidArgumentError)
    await expect(Safe.find().where({ $where: 'true' })).rejects.toThrow(MongoInvalidArgumentError)
    await expect(Safe.findOne().where({ $expr: Model.trusted({ $eq: [1, 1] }) })).rejects.toThrow(/\$expr/)
    expect(() => Safe.countDocuments({ $where: 'true' })).toThrow(MongoInvalidArgumentError)
  })

  it('where(object) keeps a "__proto__" key from JSON input a field, never a prototype', () => {
    const { model, sent } = recordingModel()
    model.find().where(JSON.parse('{"__proto__": {"$ne": 1}, "a": 1}')).cursor()
    model.find().where('__proto__').equals(JSON.parse('{"$ne": 1}')).cursor()
    model.find().where('__proto__').gt(1).cursor()
    model.find(JSON.parse('{"__proto__": {"$ne": 1}}')).cursor()
    for (const filter of sent) {
      expect(Object.getPrototypeOf(filter)).toBe(Object.prototype)
      expect(Object.keys(filter)).toContain('__proto__')
    }
    expect(Object.getOwnPropertyDescriptor(sent[2], '__proto__')?.value).toEqual({ $gt: 1 })
    expect(() => model.find().where(42 as never)).toThrow(MongoInvalidArgumentError)
  })
})
