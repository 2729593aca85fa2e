// Process and module lifecycle: exits without close(), ESM/CommonJS share one copy, worker threads.
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MongoClient as OfficialClient } from 'mongodb'
import { MongoClient } from 'rumongo'
import { uniqueDbName, uri } from './setup/helpers.js'

const run = promisify(execFile)
const root = fileURLToPath(new URL('..', import.meta.url))
/** Large enough that reading it takes many getMores (about a second on the dev server). */
const ITEMS = 10_000
const dbName = uniqueDbName('lifecycle')

beforeAll(async () => {
  const official = await OfficialClient.connect(uri)
  await official
    .db(dbName)
    .collection('items')
    .insertMany(Array.from({ length: ITEMS }, (_, n) => ({ n, label: `item ${n}`, text: 'x'.repeat(100) })))
  await official.close()
})

afterAll(async () => {
  const official = await OfficialClient.connect(uri)
  await official.db(dbName).dropDatabase()
  await official.close()
})

/**
 * Runs `source` as a child Node process in the repo root (`MONGODB_URI` and `DB` set); resolves
 * with its stdout lines, its run time and when it exited.
 */
async function runChild(source: string, type: 'commonjs' | 'module') {
  const started = Date.now()
  const { stdout } = await run(process.execPath, [`--input-type=${type}`, '-e', source], {
    cwd: root,
    env: { ...process.env, MONGODB_URI: uri, DB: dbName },
    timeout: 20_000,
  })
  const exitedAt = Date.now()
  return { stdout: stdout.trim(), lines: stdout.trim().split('\n'), elapsed: exitedAt - started, exitedAt }
}

describe('process lifecycle', () => {
  it('exits within 5 s when the script never calls close(), with a server cursor open and a read pending', async () => {
    const { lines, elapsed } = await runChild(
      `const { MongoClient } = require('rumongo')
       MongoClient.connect(process.env.MONGODB_URI).then(async (client) => {
         const items = client.db(process.env.DB).collection('items')
         const cursor = items.find({}, { batchSize: 5, prefetch: 0 })
         const first = await cursor.next()
         // One batch read of ${ITEMS} documents: the server cursor stays open, never closed.
         console.log(first.n, cursor.id.isZero(), cursor.bufferedCount(), await client.openCursorCount())
         items.find({}).toArray() // left pending on purpose
       })`,
      'commonjs',
    )
    expect(lines).toEqual(['0 false 4 1'])
    expect(elapsed).toBeLessThan(5_000)
  })

  it('keeps the process alive while a read is pending, and only then', async () => {
    // Nothing but the pending reads holds the event loop: the results must still arrive, in the
    // order their reads were started and settled, and the process must exit once they have.
    const { lines, elapsed } = await runChild(
      `const { MongoClient } = require('rumongo')
       const items = new MongoClient(process.env.MONGODB_URI).db(process.env.DB).collection('items')
       items.countDocuments({ n: { $lt: 3 } }).then((n) => console.log('count', n))
       setTimeout(() => {
         items.findOne({ n: 7 }).then((item) => console.log('found', item.n))
         items.find({ n: 1 }).toArray().then(() => Promise.reject(new Error('gone'))).catch((e) => console.log(e.message))
       }, 50)`,
      'commonjs',
    )
    expect(lines.slice().sort()).toEqual(['count 3', 'found 7', 'gone'])
    expect(elapsed).toBeLessThan(5_000)
  })

  it('after close() nothing keeps the loop alive: the script exits by itself, no socket or timer left', async () => {
    const { lines, exitedAt } = await runChild(
      `const { MongoClient } = require('rumongo')
       console.log('started') // stdout's own handle, from here on
       const before = process.getActiveResourcesInfo()
       MongoClient.connect(process.env.MONGODB_URI).then(async (client) => {
         const items = client.db(process.env.DB).collection('items')
         const counts = [
           (await items.find({}, { limit: 3000 }).toArray()).length,
           (await items.findLazy({}, { limit: 3000 })).length,
           (await items.findCursor({}, { batchSize: 100, limit: 3000 }).toArray()).length,
           JSON.parse(await items.findJson({}, { limit: 3000 })).length,
         ]
         const open = items.findCursor({}, { batchSize: 5 })
         await open.next() // a server cursor close() kills
         await client.close()
         // One turn of the loop first: a GC that freed the addon's objects leaves Node-API's
         // finalizer drain queued as an "Immediate" (it runs once, then is gone; 1 run in 20 under
         // load). What keeps a loop alive (a socket, a timer) is still there after it.
         await new Promise((resolve) => setImmediate(resolve))
         const after = process.getActiveResourcesInfo()
         console.log(JSON.stringify({ counts, before, after }))
         console.log(Date.now())
       })`,
      'commonjs',
    )
    const [started, report, closedAt] = lines
    expect(started).toBe('started')
    const { counts, before, after } = JSON.parse(report!)
    expect(counts).toEqual([3000, 3000, 3000, 3000])
    // Only what was there before the client (stdout's pipe): no socket, timer or request of rumongo's.
    expect(after.filter((name: string) => !before.includes(name))).toEqual([])
    expect(after.length).toBeLessThanOrEqual(before.length)
    expect(exitedAt - Number(closedAt)).toBeLessThan(2_000)
  })

  it('loads as ESM and CommonJS with one shared copy of every class and of bson', async () => {
    const { stdout } = await runChild(
      `import { createRequire } from 'node:module'
       import * as esm from 'rumongo'
       const require = createRequire(import.meta.url)
       const cjs = require('rumongo')
       const official = require('mongodb')
       console.log([
         esm.MongoClient === cjs.MongoClient,
         esm.MongoServerError === cjs.MongoServerError,
         esm.ObjectId === cjs.ObjectId,
         esm.ObjectId === official.ObjectId,
         esm.Long === official.Long,
       ].join(','))`,
      'module',
    )
    expect(stdout).toBe('true,true,true,true,true')
  })
})

describe('worker threads', () => {
  it('runs a query in a worker that then exits, and the main thread keeps working', async () => {
    const worker = new Worker(
      `const { parentPort, workerData } = require('node:worker_threads')
       const { MongoClient } = require(workerData.entry)
       MongoClient.connect(workerData.uri).then(async (client) => {
         const count = await client.db(workerData.dbName).collection('none').countDocuments({})
         await client.close()
         parentPort.postMessage(count)
       })`,
      { eval: true, workerData: { uri, dbName, entry: `${root}/dist/index.js` } },
    )
    const exited = new Promise((resolve) => worker.once('exit', resolve))
    const message = await new Promise((resolve, reject) => {
      worker.once('message', resolve)
      worker.once('error', reject)
    })
    expect(message).toBe(0)
    expect(await exited).toBe(0)
    const client = await MongoClient.connect(uri)
    expect(await client.db(dbName).collection('none').countDocuments({})).toBe(0)
    await client.close()
  })

  it('survives terminating workers during in-flight cursor reads', async () => {
    // The addon is loaded in this thread too: objects finalized with a terminated worker must not
    // free memory that native work still running for them uses.
    for (let round = 0; round < 20; round++) {
      const worker = new Worker(
        `const { parentPort, workerData } = require('node:worker_threads')
         const { MongoClient } = require(workerData.entry)
         MongoClient.connect(workerData.uri).then(async (client) => {
           const items = client.db(workerData.dbName).collection('items')
           for (;;) {
             // Small batches: getMores, their encoding and JS decoding run all along the read.
             const cursor = items.find({}, { batchSize: 200 })
             await cursor.next()
             parentPort.postMessage('reading')
             await cursor.toArray()
           }
         })`,
        { eval: true, workerData: { uri, dbName, entry: `${root}/dist/index.js` } },
      )
      await new Promise((resolve) => worker.once('message', resolve))
      // At a different point of the read each round (reading all of it takes about a second).
      await new Promise((resolve) => setTimeout(resolve, (round % 5) * 60))
      await worker.terminate()
    }
    const client = await MongoClient.connect(uri)
    expect(await client.db(dbName).collection('items').countDocuments({})).toBe(ITEMS)
    await client.close()
  })
})
