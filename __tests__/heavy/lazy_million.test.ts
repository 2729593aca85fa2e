// 1M lazy documents under Node's default heap: documents share their batch's buffer, so memory
// stays bounded. Runs only with `npm run test:heavy` (excluded from `npm test`).
import { afterAll, beforeAll, expect, it } from 'vitest'
import { MongoClient } from 'rumongo'
// @ts-expect-error: a plain ESM script without types
import { startReplay } from '../../scripts/replay.mjs'

const COUNT = 1_000_000
/** Heap used while all 1M documents are held and two fields of each were read (measured ~250 MB). */
const HEAP_LIMIT_MB = 512

let server: { uri: string; stop(): Promise<void> }
let client: MongoClient

beforeAll(async () => {
  server = await startReplay()
  client = await MongoClient.connect(server.uri)
})

afterAll(async () => {
  await client?.close()
  await server?.stop()
})

it('reads 1M small lazy documents within a bounded heap', { timeout: 600_000 }, async () => {
  const started = performance.now()
  const documents = await client.db('bench').collection('orders').findLazy({}, { limit: COUNT })
  expect(documents.length).toBe(COUNT)
  let peakHeap = process.memoryUsage().heapUsed
  let paid = 0
  let sum = 0
  for (let index = 0; index < documents.length; index++) {
    const document = documents[index]!
    if (document.status === 'paid') paid++
    sum += document.n
    if (index % 100_000 === 0) peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)
  }
  const memory = process.memoryUsage()
  peakHeap = Math.max(peakHeap, memory.heapUsed)
  const seconds = (performance.now() - started) / 1000
  console.log(
    `1M lazy documents: ${seconds.toFixed(1)} s, peak heap used ${(peakHeap / 2 ** 20).toFixed(0)} MB, ` +
      `array buffers ${(memory.arrayBuffers / 2 ** 20).toFixed(0)} MB`,
  )
  expect(sum).toBe((COUNT * (COUNT - 1)) / 2)
  expect(paid).toBeGreaterThan(COUNT / 4)
  expect(peakHeap / 2 ** 20).toBeLessThan(HEAP_LIMIT_MB)
})
