// Type-level tests of the public API (run by vitest's typecheck): results are typed like the
// official driver's, and filters, sorts and projections are as strict as its: each call site is
// written twice, against rumongo's Collection and the official driver's, and an `@ts-expect-error`
// stands on both or on neither (an unused one fails the check, so the official driver's error is
// verified too).
import { describe, expectTypeOf, it } from 'vitest'
import type { RecordBatch, Table } from 'apache-arrow'
import type { Collection as OfficialCollection } from 'mongodb'
import mongoose, { Schema, model as mongooseModel, type Model as MongooseModel, type Types } from 'mongoose'
import {
  Binary,
  BSONRegExp,
  Decimal128,
  Long,
  Model,
  MongoClient,
  mongoosePlugin,
  ObjectId,
  type CommandStartedEvent,
  type ConnectionCheckedOutEvent,
  type AggregationCursor,
  type ArrowCursor,
  type Collection,
  type Document,
  type Filter,
  type FindCursor,
  type SortDirection,
  type WithId,
} from 'rumongo'

interface Order {
  status: 'paid' | 'pending'
  total: number
  at: Date
}

declare const client: MongoClient
const orders = client.db('shop').collection<Order>('orders')

describe('public types', () => {
  it('types Arrow reads: a Table, IPC bytes with { as: "ipc" }, a cursor of record batches', () => {
    expectTypeOf(orders.findArrow({})).resolves.toEqualTypeOf<Table>()
    expectTypeOf(orders.findArrow({}, { schema: { total: 'double' } })).resolves.toEqualTypeOf<Table>()
    expectTypeOf(orders.findArrow({}, { as: 'ipc' })).resolves.toEqualTypeOf<Buffer>()
    expectTypeOf(orders.aggregateArrow([], { as: 'ipc' })).resolves.toEqualTypeOf<Buffer>()
    expectTypeOf(orders.findArrowCursor({})).toEqualTypeOf<ArrowCursor>()
    expectTypeOf(orders.findArrowCursor({}).next()).resolves.toEqualTypeOf<RecordBatch | null>()
    // @ts-expect-error: not a DSL type name
    void orders.findArrow({}, { schema: { total: 'float' } })
  })

  it('types collections and results by schema', () => {
    expectTypeOf(orders).toEqualTypeOf<Collection<Order>>()
    expectTypeOf(orders.find({ status: 'paid' })).toEqualTypeOf<FindCursor<WithId<Order>>>()
    expectTypeOf(orders.find({})).resolves.toEqualTypeOf<WithId<Order>[]>()
    expectTypeOf(orders.find({}).toArray()).resolves.toEqualTypeOf<WithId<Order>[]>()
    expectTypeOf(orders.findOne({})).resolves.toEqualTypeOf<WithId<Order> | null>()
    expectTypeOf<WithId<Order>['_id']>().toEqualTypeOf<ObjectId>()
    expectTypeOf<WithId<{ _id: string; a: number }>['_id']>().toEqualTypeOf<string>()
  })

  it('types cursor transforms, projections and aggregations', () => {
    expectTypeOf(orders.find({}).map((order) => order.total)).toEqualTypeOf<FindCursor<number>>()
    expectTypeOf(orders.find({}).project<{ total: number }>({ total: 1 })).toEqualTypeOf<
      FindCursor<{ total: number }>
    >()
    expectTypeOf(orders.aggregate<{ _id: string; n: number }>([])).toEqualTypeOf<
      AggregationCursor<{ _id: string; n: number }>
    >()
    expectTypeOf(orders.countDocuments()).resolves.toBeNumber()
    expectTypeOf(orders.distinct<string>('status')).resolves.toEqualTypeOf<string[]>()
    expectTypeOf(client.db().collection('any').find()).toEqualTypeOf<FindCursor<WithId<Document>>>()
  })

  it('accepts the official option shapes', () => {
    orders.find(
      {},
      { sort: { at: -1 }, limit: 5, projection: { total: 1 }, readPreference: 'secondaryPreferred' },
    )
    orders
      .find({})
      .sort('at', -1)
      .sort([['at', 'desc']])
      .skip(1)
      .batchSize(10)
    // @ts-expect-error: limit takes a number
    orders.find({}, { limit: '5' })
  })

  it('types monitoring listeners by event name, as the official driver', () => {
    client.on('commandStarted', (event) => {
      expectTypeOf(event).toEqualTypeOf<CommandStartedEvent>()
      expectTypeOf(event.command).toEqualTypeOf<Document>()
    })
    client.once('connectionCheckedOut', (event) => {
      expectTypeOf(event).toEqualTypeOf<ConnectionCheckedOutEvent>()
      expectTypeOf(event.connectionId).toEqualTypeOf<number | '<monitor>'>()
    })
    expectTypeOf(client.on('commandFailed', () => {})).toEqualTypeOf<MongoClient>()
  })
})

interface User {
  name: string
  age: number
  status: 'active' | 'banned'
  tags: string[]
  address: { city: string; zip: number }
  scores: { subject: string; score: number }[]
  joined: Date
  balance: Decimal128
  visits: Long
  nickname?: string
}

declare const users: Collection<User>
declare const officialUsers: OfficialCollection<User>
const someId = new ObjectId()

describe('filters as strict as the official driver', () => {
  it('accepts what the official driver accepts', () => {
    // Field values, nested keys in dot notation (unchecked in both), unknown fields.
    users.find({ name: 'Ada', age: 36, status: 'active', nickname: 'ada' })
    officialUsers.find({ name: 'Ada', age: 36, status: 'active', nickname: 'ada' })
    users.find({ 'address.city': 'Paris', 'address.zip': { $gt: 75000 }, 'scores.score': { $gte: 90 } })
    officialUsers.find({
      'address.city': 'Paris',
      'address.zip': { $gt: 75000 },
      'scores.score': { $gte: 90 },
    })
    users.find({ address: { city: 'Paris', zip: 75001 } })
    officialUsers.find({ address: { city: 'Paris', zip: 75001 } })
    users.find({ notInTheSchema: 1 })
    officialUsers.find({ notInTheSchema: 1 })
    // Comparison and element operators.
    users.find({ age: { $in: [18, 21] }, joined: { $gte: new Date(), $lt: new Date() } })
    officialUsers.find({ age: { $in: [18, 21] }, joined: { $gte: new Date(), $lt: new Date() } })
    users.find({ age: { $nin: [1, 2] as const, $ne: 3, $exists: true, $type: 'int', $mod: [2, 0] } })
    officialUsers.find({ age: { $nin: [1, 2] as const, $ne: 3, $exists: true, $type: 'int', $mod: [2, 0] } })
    users.find({ age: { $not: { $gt: 65 } }, status: { $in: ['active', 'banned'] } })
    officialUsers.find({ age: { $not: { $gt: 65 } }, status: { $in: ['active', 'banned'] } })
    // $and, $or, $nor, and the other top-level operators.
    users.find({ $and: [{ age: { $gte: 18 } }, { $or: [{ status: 'active' }, { name: 'root' }] }] })
    officialUsers.find({ $and: [{ age: { $gte: 18 } }, { $or: [{ status: 'active' }, { name: 'root' }] }] })
    users.find({
      $nor: [{ tags: 'spam' }],
      $text: { $search: 'ada' },
      $comment: 'why',
      $expr: { $gt: ['$a', 1] },
    })
    officialUsers.find({
      $nor: [{ tags: 'spam' }],
      $text: { $search: 'ada' },
      $comment: 'why',
      $expr: { $gt: ['$a', 1] },
    })
    // Regular expressions on strings.
    users.find({ name: /^ad/i, status: { $regex: '^act', $options: 'i' }, nickname: new BSONRegExp('a') })
    officialUsers.find({
      name: /^ad/i,
      status: { $regex: '^act', $options: 'i' },
      nickname: new BSONRegExp('a'),
    })
    users.find({ name: { $not: /^x/ } })
    officialUsers.find({ name: { $not: /^x/ } })
    // ObjectId `_id`s.
    users.find({ _id: someId })
    officialUsers.find({ _id: someId })
    users.find({ _id: { $in: [someId, ObjectId.createFromHexString('0'.repeat(24))] } })
    officialUsers.find({ _id: { $in: [someId, ObjectId.createFromHexString('0'.repeat(24))] } })
    // Arrays: an element, the whole array, element match, size, all.
    users.find({ tags: 'admin', scores: { $elemMatch: { score: { $gt: 90 } } } })
    officialUsers.find({ tags: 'admin', scores: { $elemMatch: { score: { $gt: 90 } } } })
    users.find({ tags: ['a', 'b'] })
    officialUsers.find({ tags: ['a', 'b'] })
    users.find({ tags: { $all: ['a', 'b'], $size: 2 } })
    officialUsers.find({ tags: { $all: ['a', 'b'], $size: 2 } })
    users.find({ tags: /adm/, scores: { subject: 'math', score: 1 } })
    officialUsers.find({ tags: /adm/, scores: { subject: 'math', score: 1 } })
    // js-bson values.
    users.find({ balance: Decimal128.fromString('1.5'), visits: { $gt: Long.fromNumber(3) } })
    officialUsers.find({ balance: Decimal128.fromString('1.5'), visits: { $gt: Long.fromNumber(3) } })
    users.find({ age: { $bitsAllSet: new Binary(Buffer.from([1])), $bitsAnyClear: [0, 3] } })
    officialUsers.find({ age: { $bitsAllSet: new Binary(Buffer.from([1])), $bitsAnyClear: [0, 3] } })
    // Every read that takes a filter.
    void users.findOne({ age: { $gt: 1 } })
    void officialUsers.findOne({ age: { $gt: 1 } })
    void users.countDocuments({ age: 1 })
    void officialUsers.countDocuments({ age: 1 })
    void users.distinct('name', { age: 1 })
    void officialUsers.distinct('name', { age: 1 })
  })

  it('rejects what the official driver rejects', () => {
    // @ts-expect-error: age is a number
    users.find({ age: 'eighteen' })
    // @ts-expect-error: age is a number
    officialUsers.find({ age: 'eighteen' })
    // @ts-expect-error: name is a string
    users.find({ name: 5 })
    // @ts-expect-error: name is a string
    officialUsers.find({ name: 5 })
    // @ts-expect-error: not one of the status values
    users.find({ status: 'deleted' })
    // @ts-expect-error: not one of the status values
    officialUsers.find({ status: 'deleted' })
    // @ts-expect-error: joined is a Date
    users.find({ joined: '2024-01-01' })
    // @ts-expect-error: joined is a Date
    officialUsers.find({ joined: '2024-01-01' })
    // @ts-expect-error: an operator's value has the field's type
    users.find({ age: { $gt: 'x' } })
    // @ts-expect-error: an operator's value has the field's type
    officialUsers.find({ age: { $gt: 'x' } })
    // @ts-expect-error: $in takes the field's values
    users.find({ age: { $in: ['18'] } })
    // @ts-expect-error: $in takes the field's values
    officialUsers.find({ age: { $in: ['18'] } })
    // @ts-expect-error: $exists takes a boolean
    users.find({ age: { $exists: 'yes' } })
    // @ts-expect-error: $exists takes a boolean
    officialUsers.find({ age: { $exists: 'yes' } })
    // @ts-expect-error: not a BSON type name
    users.find({ age: { $type: 'integer' } })
    // @ts-expect-error: not a BSON type name
    officialUsers.find({ age: { $type: 'integer' } })
    // @ts-expect-error: $regex on a number
    users.find({ age: { $regex: '1' } })
    // @ts-expect-error: $regex on a number
    officialUsers.find({ age: { $regex: '1' } })
    // @ts-expect-error: $size on a string
    users.find({ name: { $size: 2 } })
    // @ts-expect-error: $size on a string
    officialUsers.find({ name: { $size: 2 } })
    // @ts-expect-error: $mod on a string
    users.find({ name: { $mod: [2, 0] } })
    // @ts-expect-error: $mod on a string
    officialUsers.find({ name: { $mod: [2, 0] } })
    // @ts-expect-error: an array of strings holds no number
    users.find({ tags: 5 })
    // @ts-expect-error: an array of strings holds no number
    officialUsers.find({ tags: 5 })
    // @ts-expect-error: an ObjectId is a value, not a string
    users.find({ name: someId })
    // @ts-expect-error: an ObjectId is a value, not a string
    officialUsers.find({ name: someId })
    // @ts-expect-error: the default _id is an ObjectId, not its hex string
    users.find({ _id: '0123456789abcdef01234567' })
    // @ts-expect-error: the default _id is an ObjectId, not its hex string
    officialUsers.find({ _id: '0123456789abcdef01234567' })
    // @ts-expect-error: conditions inside $and are checked
    users.find({ $and: [{ age: 'x' }] })
    // @ts-expect-error: conditions inside $and are checked
    officialUsers.find({ $and: [{ age: 'x' }] })
    // @ts-expect-error: conditions inside $or are checked
    users.find({ $or: [{ status: 'active' }, { name: 1 }] })
    // @ts-expect-error: conditions inside $or are checked
    officialUsers.find({ $or: [{ status: 'active' }, { name: 1 }] })
    // @ts-expect-error: $nor takes an array
    users.find({ $nor: { age: 1 } })
    // @ts-expect-error: $nor takes an array
    officialUsers.find({ $nor: { age: 1 } })
    // @ts-expect-error: $text needs $search
    users.find({ $text: { $language: 'en' } })
    // @ts-expect-error: $text needs $search
    officialUsers.find({ $text: { $language: 'en' } })
    // @ts-expect-error: findOne checks its filter
    void users.findOne({ age: 'x' })
    // @ts-expect-error: findOne checks its filter
    void officialUsers.findOne({ age: 'x' })
    // @ts-expect-error: countDocuments checks its filter
    void users.countDocuments({ age: 'x' })
    // @ts-expect-error: countDocuments checks its filter
    void officialUsers.countDocuments({ age: 'x' })
    // @ts-expect-error: distinct checks its filter
    void users.distinct('name', { age: 'x' })
    // @ts-expect-error: distinct checks its filter
    void officialUsers.distinct('name', { age: 'x' })
    // @ts-expect-error: count checks its filter
    void users.count({ age: 'x' })
    // @ts-expect-error: count checks its filter
    void officialUsers.count({ age: 'x' })
  })

  it('lets through what the official driver lets through', () => {
    // An object value may be read as an operator document, whose unknown keys are not checked:
    // a RegExp on a number, a nested document with wrong field types.
    users.find({ age: /1/ })
    officialUsers.find({ age: /1/ })
    users.find({ address: { city: 1 } })
    officialUsers.find({ address: { city: 1 } })
    users.find({ age: { $unknownOperator: 'x' } })
    officialUsers.find({ age: { $unknownOperator: 'x' } })
  })

  it('types a declared _id, required or optional, as the official driver does', () => {
    const byString = client.db().collection<{ _id: string; n: number }>('s')
    const officialByString = {} as OfficialCollection<{ _id: string; n: number }>
    byString.find({ _id: 'a', n: 1 })
    officialByString.find({ _id: 'a', n: 1 })
    // @ts-expect-error: this _id is a string
    byString.find({ _id: someId })
    // @ts-expect-error: this _id is a string
    officialByString.find({ _id: someId })
    const byOptionalNumber = client.db().collection<{ _id?: number; n: number }>('o')
    const officialByOptionalNumber = {} as OfficialCollection<{ _id?: number; n: number }>
    byOptionalNumber.find({ _id: { $gt: 5 } })
    officialByOptionalNumber.find({ _id: { $gt: 5 } })
    // @ts-expect-error: this _id is a number
    byOptionalNumber.find({ _id: someId })
    // @ts-expect-error: this _id is a number
    officialByOptionalNumber.find({ _id: someId })
    expectTypeOf<WithId<{ _id?: number; n: number }>['_id']>().toEqualTypeOf<number>()
  })

  it("checks rumongo's own reads the same way", () => {
    // @ts-expect-error: age is a number
    void users.findArrow({ age: 'eighteen' })
    // @ts-expect-error: age is a number
    void users.findJson({ age: 'eighteen' })
    // @ts-expect-error: age is a number
    void users.findLazy({ age: 'eighteen' })
    // @ts-expect-error: age is a number
    users.findCursor({ age: 'eighteen' })
    void users.findArrow(someId)
    users.find(someId)
    expectTypeOf<{ age: 'eighteen' }>().not.toMatchTypeOf<Filter<User>>()
    expectTypeOf<{ age: { $gte: 18 }; 'address.city': 'Paris' }>().toMatchTypeOf<Filter<User>>()
  })

  it('accepts any filter on an untyped collection, but an ObjectId _id', () => {
    const untyped = client.db().collection('any')
    const officialUntyped = {} as OfficialCollection
    untyped.find({ age: 'eighteen', 'a.b': { $gt: 1 }, $or: [{ x: 1 }] })
    officialUntyped.find({ age: 'eighteen', 'a.b': { $gt: 1 }, $or: [{ x: 1 }] })
    // @ts-expect-error: an undeclared _id is an ObjectId (declare the schema for another type)
    untyped.find({ _id: 5 })
    // @ts-expect-error: an undeclared _id is an ObjectId (declare the schema for another type)
    officialUntyped.find({ _id: 5 })
  })
})

describe('results typed as the official driver types them', () => {
  it('types documents, find<T>, findOne<T> and distinct by the schema', async () => {
    expectTypeOf(await users.findOne({})).toEqualTypeOf(await officialUsers.findOne({}))
    expectTypeOf(await users.find({}).toArray()).toEqualTypeOf(await officialUsers.find({}).toArray())
    expectTypeOf(users.find<{ name: string }>({}, { projection: { name: 1 } })).toEqualTypeOf<
      FindCursor<{ name: string }>
    >()
    expectTypeOf(await users.find<{ name: string }>({}).toArray()).toEqualTypeOf(
      await officialUsers.find<{ name: string }>({}).toArray(),
    )
    expectTypeOf(await users.findOne<{ name: string }>({ age: 1 })).toEqualTypeOf(
      await officialUsers.findOne<{ name: string }>({ age: 1 }),
    )
    expectTypeOf(await users.distinct('tags')).toEqualTypeOf<string[]>()
    expectTypeOf(await users.distinct('tags')).toEqualTypeOf(await officialUsers.distinct('tags'))
    expectTypeOf(await users.distinct('nickname', { age: 1 })).toEqualTypeOf(
      await officialUsers.distinct('nickname', { age: 1 }),
    )
    expectTypeOf(await users.distinct('_id')).toEqualTypeOf<ObjectId[]>()
    expectTypeOf(await users.distinct('address.city')).toEqualTypeOf<any[]>()
    expectTypeOf(await officialUsers.distinct('address.city')).toEqualTypeOf<any[]>()
    // @ts-expect-error: find<T> takes a document type
    users.find<number>({})
    // @ts-expect-error: find<T> takes a document type
    officialUsers.find<number>({})
  })
})

describe('sorts and projections as strict as the official driver', () => {
  it('accepts the official sort forms, readonly ones included', () => {
    users.find({}, { sort: { age: -1, name: 'asc', score: { $meta: 'textScore' } } })
    officialUsers.find({}, { sort: { age: -1, name: 'asc', score: { $meta: 'textScore' } } })
    users.find(
      {},
      {
        sort: [
          ['age', 'desc'],
          ['name', 1],
        ] as const,
      },
    )
    officialUsers.find(
      {},
      {
        sort: [
          ['age', 'desc'],
          ['name', 1],
        ] as const,
      },
    )
    users.find({}, { sort: ['age', -1] as const })
    officialUsers.find({}, { sort: ['age', -1] as const })
    users.find({}, { sort: ['age', 'name'] as const })
    officialUsers.find({}, { sort: ['age', 'name'] as const })
    users.find({}, { sort: new Map<string, SortDirection>([['age', -1]]) })
    officialUsers.find({}, { sort: new Map<string, SortDirection>([['age', -1]]) })
    users.find({}).sort('age', -1).sort({ age: 'descending' })
    officialUsers.find({}).sort('age', -1).sort({ age: 'descending' })
    // A bare direction type-checks in both (and both reject it when the query runs).
    users.find({}, { sort: 1 })
    officialUsers.find({}, { sort: 1 })
  })

  it('rejects what the official driver rejects', () => {
    // @ts-expect-error: not a direction
    users.find({}, { sort: { age: 2 } })
    // @ts-expect-error: not a direction
    officialUsers.find({}, { sort: { age: 2 } })
    // @ts-expect-error: not a direction
    users.find({}).sort({ age: 'up' })
    // @ts-expect-error: not a direction
    officialUsers.find({}).sort({ age: 'up' })
    // @ts-expect-error: not a direction
    users.find({}).sort('age', 2)
    // @ts-expect-error: not a direction
    officialUsers.find({}).sort('age', 2)
  })

  it('takes projections as documents', () => {
    users.find({}, { projection: { name: 1, _id: 0, 'address.city': 1 } })
    officialUsers.find({}, { projection: { name: 1, _id: 0, 'address.city': 1 } })
    users.find({}).project<{ name: string }>({ name: 1 })
    officialUsers.find({}).project<{ name: string }>({ name: 1 })
    // @ts-expect-error: a projection is a document
    users.find({}, { projection: 'name' })
    // @ts-expect-error: a projection is a document
    officialUsers.find({}, { projection: 'name' })
    // @ts-expect-error: a projection is a document
    users.find({}).project('name')
    // @ts-expect-error: a projection is a document
    officialUsers.find({}).project('name')
  })
})

describe('Model types', () => {
  it('types a model from its Mongoose model: filters by the raw document, results as lean()', async () => {
    interface RawUser {
      name: string
      age: number
      friend?: Types.ObjectId
    }
    const Users = Model.fromMongoose({} as MongooseModel<RawUser>, client)
    const users = await Users.find({ age: { $gte: 18 } })
    expectTypeOf(users[0].name).toEqualTypeOf<string>()
    expectTypeOf(users[0]._id).toEqualTypeOf<Types.ObjectId>()
    // @ts-expect-error: name is a string
    const c: number = users[0].name
    void c
    expectTypeOf(await Users.findById(someId)).toEqualTypeOf<(typeof users)[number] | null>()
    expectTypeOf(await Users.findOne({ name: 'Ada' }).exec()).toEqualTypeOf<(typeof users)[number] | null>()
    for await (const user of Users.find().cursor()) expectTypeOf(user.age).toEqualTypeOf<number>()
    // @ts-expect-error: age is a number (rumongo sends filters as given: Mongoose would cast '18')
    void Users.find({ age: '18' })
    // @ts-expect-error: countDocuments checks its filter
    void Users.countDocuments({ name: 5 })
    void Users.find({ friend: someId, 'address.city': 'Paris' })
  })

  it('types a model from a schema-inferred Mongoose model, and an untyped one as before', async () => {
    const schema = new Schema({ name: { type: String, required: true }, age: Number, tags: [String] })
    const Inferred = Model.fromMongoose(mongooseModel('Inferred', schema), client)
    const [doc] = await Inferred.find()
    expectTypeOf(doc.name).toEqualTypeOf<string>()
    expectTypeOf(doc.tags).toEqualTypeOf<string[]>()
    expectTypeOf(doc.__v).toEqualTypeOf<number>()
    // @ts-expect-error: not a schema field
    void doc.other
    const Untyped = Model.fromMongoose({} as MongooseModel<any>, client)
    expectTypeOf(Untyped).toEqualTypeOf<Model>()
    expectTypeOf(await Untyped.find()).toEqualTypeOf<WithId<Document>[]>()
  })

  it('types Model.define from its field list', async () => {
    const byList = await Model.define(users, ['name', 'address.city', 'scores.score']).find()
    expectTypeOf(byList[0]).toEqualTypeOf<{
      _id: ObjectId
      name: string
      address: { city: string }
      scores: { score: number }[]
    }>()
    // @ts-expect-error: age is not in the field list
    void byList[0].age
    const byObject = await Model.define(users, { name: 1, nickname: true, _id: 0 }).findOne()
    expectTypeOf(byObject).toEqualTypeOf<{ name: string; nickname?: string } | null>()
    // @ts-expect-error: name is a string
    const n: number = byList[0].name
    void n
    // A list the compiler does not know reads the whole schema.
    const fields: string[] = ['name']
    expectTypeOf(await Model.define(users, fields).find()).toEqualTypeOf<WithId<User>[]>()
    // An untyped collection: the listed fields, of any type.
    const [loose] = await Model.define(client.db().collection('users'), ['name', 'address.city']).find()
    expectTypeOf(loose.name).toBeAny()
    expectTypeOf(loose.address.city).toBeAny()
    // @ts-expect-error: not in the field list
    void loose.age
    // A typo in the field list.
    // @ts-expect-error: not a field of User
    Model.define(users, ['nmae'])
    // @ts-expect-error: not a field of User
    Model.define(users, { nmae: 1 })
    Model.define(users, ['_id', 'address.city', 'address.anything'])
    // Filters are the collection's.
    // @ts-expect-error: age is a number
    void Model.define(users, ['name']).find({ age: 'eighteen' })
  })
})

describe('mongoosePlugin', () => {
  it("is what Mongoose's plugin() and Schema.plugin() take", () => {
    const plugin = mongoosePlugin({
      client: new MongoClient('mongodb://localhost'),
      onFallback: (f) => void f.reason,
    })
    mongoose.plugin(plugin)
    new Schema({ a: String }).plugin(plugin)
    expectTypeOf(plugin.stats().fallbacksByReason.session).toEqualTypeOf<number | undefined>()
    expectTypeOf(plugin.close()).toEqualTypeOf<Promise<void>>()
  })
})
