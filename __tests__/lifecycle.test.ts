// Process and module lifecycle: exits without close(), ESM/CommonJS share one copy, worker threads.
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { describe, expect, it } from 'vitest'
import { MongoClient } from 'rumongo'
import { uniqueDbName, uri } from './setup/helpers.js'

const run = promisify(execFile)
const root = fileURLToPath(new URL('..', import.meta.url))

/** Runs `source` as a child Node process in the repo root; resolves with its stdout and run time. */
async function runChild(source: string, type: 'commonjs' | 'module') {
  const started = Date.now()
  const { stdout } = await run(process.execPath, [`--input-type=${type}`, '-e', source], {
    cwd: root,
    env: { ...process.env, MONGODB_URI: uri },
    timeout: 20_000,
  })
  return { stdout: stdout.trim(), elapsed: Date.now() - started }
}

describe('process lifecycle', () => {
  it('exits promptly when the script never calls close(), with an open cursor', async () => {
    const { stdout, elapsed } = await runChild(
      `const { MongoClient } = require('rumongo')
       MongoClient.connect(process.env.MONGODB_URI).then(async (client) => {
         const cursor = client.db('lifecycle').collection('none').find({}, { batchSize: 1 })
         console.log(JSON.stringify(await cursor.toArray()))
         client.db('lifecycle').collection('none').find({}).next() // left pending on purpose
       })`,
      'commonjs',
    )
    expect(stdout).toBe('[]')
    expect(elapsed).toBeLessThan(5_000)
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
    const dbName = uniqueDbName('worker')
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
           parentPort.postMessage('connected')
           for (;;) {
             const cursor = client.db('lifecycle').collection('none').find({})
             await cursor.hasNext()
             await cursor.close()
           }
         })`,
        { eval: true, workerData: { uri, entry: `${root}/dist/index.js` } },
      )
      await new Promise((resolve) => worker.once('message', resolve))
      await worker.terminate()
    }
    const client = await MongoClient.connect(uri)
    expect(await client.db('lifecycle').collection('none').find({}).toArray()).toEqual([])
    await client.close()
  })
})
