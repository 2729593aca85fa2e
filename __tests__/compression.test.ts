// Wire compression (OP_COMPRESSED): the replay server answers as mongod does (it picks the first
// compressor the client lists that it supports, then compresses every reply to a compressed
// request) and counts the bytes through each compressor in serverStatus().network.compression.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MongoClient as OfficialClient } from 'mongodb'
import { MongoClient } from 'rumongo'
// @ts-expect-error: a plain ESM script without types
import { startReplay } from '../scripts/replay.mjs'
import { expectIdentical } from './setup/helpers.js'

const COMPRESSORS = ['zstd', 'snappy', 'zlib'] as const
type Counters = Record<string, { compressor: { bytesIn: number; bytesOut: number } }>

let server: { uri: string; stop(): Promise<void> }
let expected: unknown[]

beforeAll(async () => {
  server = await startReplay({ docs: 3000 })
  // The reference: the official driver, uncompressed.
  const official = await OfficialClient.connect(server.uri)
  expected = await official.db('bench').collection('tweets').find({}).toArray()
  await official.close()
}, 600_000) // the first run builds the server

afterAll(() => server?.stop())

/** The bytes each compressor has compressed so far (its input). */
async function compressedBytes(client: MongoClient): Promise<Record<string, number>> {
  const status = await client.db('admin').admin().serverStatus()
  const counters = status.network.compression as Counters
  return Object.fromEntries(COMPRESSORS.map((name) => [name, Number(counters[name]!.compressor.bytesIn)]))
}

/** What a find through `uri` returns, and the bytes each compressor compressed meanwhile. */
async function readThrough(uri: string, options: object = {}) {
  const client = await MongoClient.connect(uri, options)
  try {
    const before = await compressedBytes(client)
    const documents = await client.db('bench').collection('tweets').find({}).toArray()
    const after = await compressedBytes(client)
    const used = Object.fromEntries(COMPRESSORS.map((name) => [name, after[name]! - before[name]!]))
    return { documents, used }
  } finally {
    await client.close()
  }
}

describe('compression', () => {
  it.each(COMPRESSORS)(
    'negotiates %s from the connection string and reads the same documents',
    async (name) => {
      const { documents, used } = await readThrough(`${server.uri}?compressors=${name}`)
      expectIdentical(documents, expected)
      for (const other of COMPRESSORS) {
        if (other === name) expect(used[other]).toBeGreaterThan(1_000_000)
        else expect(used[other]).toBe(0)
      }
    },
  )

  it('takes compressors and zlibCompressionLevel from the options, first listed first', async () => {
    const { documents, used } = await readThrough(server.uri, {
      compressors: ['snappy', 'zstd'],
      zlibCompressionLevel: 9,
    })
    expectIdentical(documents, expected)
    expect(used.snappy).toBeGreaterThan(1_000_000)
    expect(used.zstd).toBe(0)
  })

  it('compresses nothing without compressors', async () => {
    const { documents, used } = await readThrough(server.uri)
    expectIdentical(documents, expected)
    expect(used).toEqual({ zstd: 0, snappy: 0, zlib: 0 })
  })
})
