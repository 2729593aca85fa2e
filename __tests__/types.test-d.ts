// Type-level tests of the public API (run by vitest's typecheck): results are typed like the
// official driver's.
import { describe, expectTypeOf, it } from 'vitest'
import type { RecordBatch, Table } from 'apache-arrow'
import {
  MongoClient,
  ObjectId,
  type CommandStartedEvent,
  type ConnectionCheckedOutEvent,
  type AggregationCursor,
  type ArrowCursor,
  type Collection,
  type Document,
  type FindCursor,
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
