// pipeJson / pipeArrow settle at once when their destination goes away, whatever read is in flight
// (a getMore the server never answers included), and resolve into any writable-like destination,
// one whose end() emits 'finish' before returning included.
import { EventEmitter } from 'node:events'
import { Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import * as arrow from 'apache-arrow'
import { MongoClient, type Collection } from 'rumongo'
import {
  scriptedCursor,
  startWireServer,
  type ScriptedCursorOptions,
  type WireServer,
} from './setup/wire_server.js'

let opened: { server: WireServer; client: MongoClient } | undefined
async function serve(script: ScriptedCursorOptions): Promise<Collection> {
  const server = await startWireServer({ answer: scriptedCursor(script) })
  const client = await MongoClient.connect(server.uri)
  opened = { server, client }
  return client.db('db').collection('items')
}

afterEach(async () => {
  if (!opened) return
  const { server, client } = opened
  opened = undefined
  await client.close()
  await server.stop()
})

/** How `promise` settled within `ms`: its value or error, else 'still pending'. */
async function settledWithin<T>(promise: Promise<T>, ms: number) {
  return Promise.race([
    promise.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    ),
    sleep(ms).then(() => 'still pending' as const),
  ])
}

const pipes = {
  pipeJson: (items: Collection, destination: NodeJS.WritableStream) => items.pipeJson({}, {}, destination),
  pipeArrow: (items: Collection, destination: NodeJS.WritableStream) =>
    items.pipeArrow({}, { rowsPerBatch: 10 }, destination),
}

describe.each(Object.keys(pipes) as (keyof typeof pipes)[])('%s', (method) => {
  const pipe = pipes[method]

  it('rejects at once when its destination closes during a getMore the server never answers', async () => {
    // The find answers 10 documents; every getMore hangs.
    const items = await serve({ total: 100, batchSize: 10, fault: () => new Promise(() => {}) })
    const destination: Writable = new Writable({
      write(_chunk, _encoding, done) {
        done()
        setTimeout(() => destination.destroy(), 50)
      },
    })
    const outcome = await settledWithin(pipe(items, destination), 5000)
    expect(outcome).toMatchObject({ error: { code: 'ERR_STREAM_PREMATURE_CLOSE' } })
  })

  it('rejects at once when its destination fails during a slow getMore (30 s)', async () => {
    const items = await serve({ total: 100, batchSize: 10, getMoreDelayMS: 30_000 })
    const destination: Writable = new Writable({
      write(_chunk, _encoding, done) {
        done()
        setTimeout(() => destination.destroy(new Error('the reader went away')), 50)
      },
    })
    const outcome = await settledWithin(pipe(items, destination), 5000)
    expect(outcome).toMatchObject({ error: { message: 'the reader went away' } })
  })

  it('refuses a writable-like destination without end() before the query', async () => {
    const items = await serve({ total: 100, batchSize: 10 })
    const destination = Object.assign(new EventEmitter(), { write: () => true })
    const outcome = await settledWithin(pipe(items, destination as unknown as NodeJS.WritableStream), 5000)
    expect(outcome).toMatchObject({
      error: { name: 'MongoInvalidArgumentError', code: 'ERR_INVALID_ARGUMENT' },
    })
    expect(opened!.server.received('find')).toHaveLength(0)
  })

  it("resolves into a writable-like destination whose end() emits 'finish' at once", async () => {
    const items = await serve({ total: 100, batchSize: 10 })
    const chunks: Buffer[] = []
    const destination = Object.assign(new EventEmitter(), {
      write(chunk: Buffer) {
        chunks.push(chunk)
        return true
      },
      end() {
        this.emit('finish')
      },
    })
    const outcome = await settledWithin(pipe(items, destination as unknown as NodeJS.WritableStream), 5000)
    expect(outcome).toHaveProperty('value')
    const bytes = Buffer.concat(chunks)
    const rows =
      method === 'pipeJson' ? JSON.parse(bytes.toString()).length : arrow.tableFromIPC(bytes).numRows
    expect(rows).toBe(100)
  })
})
