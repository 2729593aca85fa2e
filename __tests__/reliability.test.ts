// No stall, no silent loss, no hang: reads that time out in bursts leave the pool usable, and every
// read after a failed one fails instead of skipping documents.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MongoClient as OfficialClient } from 'mongodb'
import { MongoClient, MongoOperationTimeoutError } from 'rumongo'
import { uniqueDbName, uri } from './setup/helpers.js'

const dbName = uniqueDbName('reliability')
let official: OfficialClient

beforeAll(async () => {
  official = await OfficialClient.connect(uri)
  await official
    .db(dbName)
    .collection('items')
    .insertMany(Array.from({ length: 40 }, (_, n) => ({ n, label: `item ${n}` })))
})

afterAll(async () => {
  await official?.db(dbName).dropDatabase()
  await official?.close()
})

describe('a burst of timed-out reads', () => {
  // The crate's pool served one queued checkout per pool event (or 500 ms tick), and the checkout
  // requests of reads that gave up stayed queued: the next read waited 8-31 s.
  it.each([1, 2])('leaves the pool usable at once (maxPoolSize: %i)', async (maxPoolSize) => {
    const client = await MongoClient.connect(uri, { maxPoolSize })
    try {
      const items = client.db(dbName).collection('items')
      const burst = await Promise.allSettled(
        Array.from({ length: 100 }, (_, n) => items.findOne({}, { timeoutMS: 1 + (n % 3) })),
      )
      const failures = burst.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []))
      expect(failures.length).toBeGreaterThan(0)
      for (const failure of failures) expect(failure).toBeInstanceOf(MongoOperationTimeoutError)
      const started = Date.now()
      await expect(items.findOne({ n: 7 }, { timeoutMS: 2000 })).resolves.toMatchObject({ n: 7 })
      expect(Date.now() - started).toBeLessThan(2000)
    } finally {
      await client.close()
    }
  })

  it('of cursor reads (getMores) leaves the pool usable at once', async () => {
    const client = await MongoClient.connect(uri, { maxPoolSize: 1 })
    try {
      const items = client.db(dbName).collection('items')
      const burst = await Promise.allSettled(
        Array.from({ length: 50 }, (_, n) =>
          items.find({}, { batchSize: 3, timeoutMS: 2 + (n % 5), timeoutMode: 'iteration' }).toArray(),
        ),
      )
      expect(burst.some((result) => result.status === 'rejected')).toBe(true)
      const started = Date.now()
      const all = await items.find({}, { batchSize: 3, timeoutMS: 2000 }).toArray()
      expect(all).toHaveLength(40)
      expect(Date.now() - started).toBeLessThan(2000)
    } finally {
      await client.close()
    }
  })
})
