// The operation option schema (ts/options.ts) against what Rust takes (src/options.rs): every
// option TypeScript sends to Rust is taken by it, and every other option name is refused, so no
// option is dropped silently on either side.
import { createRequire } from 'node:module'
import { BSON } from 'bson'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { uniqueDbName, uri } from './setup/helpers.js'

const require = createRequire(import.meta.url)
const { NativeClient, BatchOutput } = require('../dist/native.cjs')
const options = require('../dist/options.js') as typeof import('../ts/options.js')

type Spec = import('../ts/options.js').OperationSpec
type Kind = import('../ts/options.js').OptionKind

/** A value of each kind, as `normalizeOption` hands it to Rust. */
const SAMPLES: Record<Kind, unknown> = {
  integer: 1,
  boolean: false,
  document: {},
  sort: { _id: 1 },
  hint: '_id_',
  any: 'a comment',
  readPreference: { mode: 'primary' },
  readConcern: { level: 'local' },
  timeoutMode: 'cursorLifetime',
  explain: false,
  // A session number no client has: Rust takes the key and refuses the value.
  session: 999_999,
}

const dbName = uniqueDbName('option_schema')
let client: any

beforeAll(async () => {
  client = await NativeClient.connect(uri)
})

afterAll(async () => {
  await client?.close()
})

/** Each operation whose options go to Rust, with the native call that takes them. */
const OPERATIONS: [Spec, (collection: any, bytes: Buffer) => Promise<unknown>][] = [
  [options.FIND, (c, bytes) => c.find(BSON.serialize({}), bytes, BatchOutput.Raw)],
  [options.AGGREGATE, (c, bytes) => c.aggregate(BSON.serialize({ pipeline: [] }), bytes, BatchOutput.Raw)],
  [options.COUNT_DOCUMENTS, (c, bytes) => c.countDocuments(BSON.serialize({}), bytes)],
  [options.ESTIMATED_DOCUMENT_COUNT, (c, bytes) => c.estimatedDocumentCount(bytes)],
  [options.DISTINCT, (c, bytes) => c.distinct('a', BSON.serialize({}), bytes)],
]

/** Every option name any operation declares or refuses. */
const ALL_NAMES = new Set(
  OPERATIONS.flatMap(([spec]) => [...Object.keys(spec.options), ...spec.unsupported, ...(spec.local ?? [])]),
)

/** Rust's answer to one option: the message it refused it with, or `taken`. */
async function rustAnswer(
  spec: Spec,
  call: (collection: any, bytes: Buffer) => Promise<unknown>,
  key: string,
) {
  const value = key in spec.options ? SAMPLES[spec.options[key]!] : 1
  const collection = client.collection(dbName, 'items')
  try {
    const result = (await call(collection, Buffer.from(BSON.serialize({ [key]: value })))) as any
    await result?.cursor?.close()
    return 'taken'
  } catch (error) {
    const message = String((error as Error).message)
    // Refused as unknown; any other complaint (an invalid sample value) means Rust took the key.
    return message.includes(`does not support the option '${key}'`) ? 'refused' : 'taken'
  }
}

describe('the operation option schema agrees with what Rust takes', () => {
  it.each(OPERATIONS.map(([spec, call]) => [spec.name, spec, call] as const))(
    '%s: Rust takes every option TS sends it and refuses every other',
    async (_name, spec, call) => {
      const sent = Object.keys(spec.options).filter((key) => !spec.local?.includes(key))
      const notSent = [...ALL_NAMES].filter((key) => !sent.includes(key))
      expect(sent.length).toBeGreaterThan(0)
      const answers: Record<string, string> = {}
      for (const key of [...sent, ...notSent]) answers[key] = await rustAnswer(spec, call, key)
      const expected = Object.fromEntries([
        ...sent.map((key) => [key, 'taken']),
        ...notSent.map((key) => [key, 'refused']),
      ])
      expect(answers).toEqual(expected)
    },
  )
})
