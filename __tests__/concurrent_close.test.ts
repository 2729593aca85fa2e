// Closing one cursor early must not touch another read. A getMore rumongo started ahead used to be
// dropped when its cursor closed, which closes its connection: a new connection for every early
// close, and on the embedded FerretDB the end of every cursor opened on that connection, so pipes
// running beside it failed with "cursor id ... not found" (4 to 8 of 40 here). The getMore now
// finishes in the background and its connection goes back to the pool.
import { Writable } from 'node:stream'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { MongoClient } from 'rumongo'
import { connectBoth, uniqueDbName, uri, type Drivers } from './setup/helpers.js'

const dbName = uniqueDbName('concurrent_close')
let drivers: Drivers

beforeAll(async () => {
  drivers = await connectBoth()
  const documents = Array.from({ length: 2000 }, (_, i) => ({ _id: i, name: `item ${i}` }))
  await drivers.official.db(dbName).collection('items').insertMany(documents)
})

afterAll(async () => {
  await drivers.official.db(dbName).dropDatabase()
  await drivers.close()
})

it('pipes whose destination fails, 4 at a time, each reject with its own destination error', async () => {
  const client = await MongoClient.connect(uri, { maxPoolSize: 5 })
  try {
    const items = client.db(dbName).collection('items')
    const outcomes: Record<string, number> = {}
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let k = 0; k < 10; k++) {
          let writes = 0
          const leaving = new Writable({
            write(_chunk, _encoding, done) {
              done(++writes === 3 ? new Error('consumer went away') : undefined)
            },
          })
          const outcome = await items.pipeJson({}, { batchSize: 20 }, leaving).then(
            () => 'completed',
            (error: Error) => error.message,
          )
          outcomes[outcome] = (outcomes[outcome] ?? 0) + 1
        }
      }),
    )
    expect(outcomes).toEqual({ 'consumer went away': 40 })
  } finally {
    await client.close()
  }
})

it('cursors left with break, 4 at a time, leave the reads beside them whole', async () => {
  const client = await MongoClient.connect(uri, { maxPoolSize: 5 })
  try {
    const items = client.db(dbName).collection('items')
    const counts = await Promise.all(
      Array.from({ length: 4 }, async (_, worker) => {
        const counts: number[] = []
        for (let k = 0; k < 10; k++) {
          if ((worker + k) % 2 === 0) {
            let seen = 0
            for await (const _document of items.find({}, { batchSize: 20 })) if (++seen === 30) break
          } else {
            counts.push((await items.find({}, { batchSize: 20 }).toArray()).length)
          }
        }
        return counts
      }),
    )
    expect(counts.flat()).toEqual(Array.from({ length: 20 }, () => 2000))
  } finally {
    await client.close()
  }
})
