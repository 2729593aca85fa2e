// findJson / pipeJson: JSON text transcoded in Rust, byte for byte what JavaScript gives for the
// official driver's documents (EJSON.stringify relaxed, or JSON.stringify), streamed with backpressure.
import { once } from 'node:events'
import { createServer, get, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EJSON } from 'bson'
import { BSON, Long, MongoClient as OfficialClient, type Document } from 'mongodb'
import { MongoClient, MongoInvalidArgumentError, type Collection, type JsonFormat } from 'rumongo'
import { typedDocuments } from './setup/data.js'
import { randomDocuments } from './setup/random_documents.js'
import { connectBoth, uniqueDbName, type Drivers } from './setup/helpers.js'
import { serveDocuments, type ServedReplay } from './setup/replay.js'

/** What JavaScript gives for the official driver's documents in each format. */
const stringify: Record<JsonFormat, (documents: Document[]) => string> = {
  relaxed: (documents) => EJSON.stringify(documents, { relaxed: true }),
  plain: (documents) => JSON.stringify(documents),
}
const FORMATS: JsonFormat[] = ['relaxed', 'plain']

/**
 * Strings for JSON.stringify's escaping rules. FerretDB's SQLite store refuses control characters
 * (and quotes in keys): the replay server below serves those.
 */
const HARD_STRINGS = [
  '',
  'plain ascii',
  'quote " backslash \\ slash /',
  'line separators \u2028 \u2029',
  'latin é ü ñ, cjk 日本語, emoji 🎉😀👍🏽',
]
/** Every character JSON.stringify escapes, and DEL, which it does not. */
const CONTROL_CHARACTERS = String.fromCharCode(
  ...Array.from({ length: 32 }, (_, code) => code),
  0x22,
  0x5c,
  0x7f,
)

const dbName = uniqueDbName('json')
let drivers: Drivers

beforeAll(async () => {
  drivers = await connectBoth()
  const db = drivers.official.db(dbName)
  await db.collection('typed').insertMany(typedDocuments())
  await db.collection('strings').insertMany(
    HARD_STRINGS.map((text, n) => ({
      n,
      text,
      [`key ${text.replace(/["\\]/g, '')}`]: n,
      nested: { text, list: [text] },
    })),
  )
  await db
    .collection('many')
    .insertMany(
      Array.from({ length: 2500 }, (_, n) => ({ n, label: `doc ${n}`, at: new Date(n * 86_400_000) })),
    )
  await db.collection('numbers').insertMany([
    { n: 0, values: [0, -0, 1.5, -2.25, 1e21, 1e-7, 123456789.123, 2 ** 53, -(2 ** 53), 5e-324] },
    { n: 1, values: [Long.fromString('9007199254740993'), Long.fromString('-9223372036854775808')] },
    {
      n: 2,
      dates: [new Date(0), new Date(1), new Date(-1), new Date(253402300799999), new Date(253402300800000)],
    },
    { n: 3, dates: [new Date(-62198755200000), new Date(8.64e15), new Date(-8.64e15)] },
    { n: 4, '1': 'an index-like key', a: 'JS objects list index keys first' },
  ])
})

afterAll(async () => {
  await drivers?.official.db(dbName).dropDatabase()
  await drivers?.close()
})

const ours = (name: string) => drivers.rumongo.db(dbName).collection(name)
const theirs = (name: string) => drivers.official.db(dbName).collection(name)

describe.each(FORMATS)('findJson, %s format, on the real server', (format) => {
  it.each(['typed', 'strings', 'numbers'])('is byte for byte the official rendering of %s', async (name) => {
    const json = await ours(name).findJson({}, { format, sort: { _id: 1 } })
    expect(json).toBeInstanceOf(Buffer)
    expect(json.toString()).toBe(
      stringify[format](
        await theirs(name)
          .find({}, { sort: { _id: 1 } })
          .toArray(),
      ),
    )
  })

  it('follows filter, projection, sort, skip and limit over many getMores', async () => {
    const options = {
      projection: { label: 1, at: 1 },
      sort: { n: -1 },
      skip: 10,
      limit: 2000,
      batchSize: 150,
    }
    const json = await ours('many').findJson({ n: { $gte: 100 } }, { ...options, format })
    expect(json.toString()).toBe(
      stringify[format](
        await theirs('many')
          .find({ n: { $gte: 100 } }, options)
          .toArray(),
      ),
    )
  })

  it('renders an empty result as []', async () => {
    expect((await ours('many').findJson({ n: -1 }, { format })).toString()).toBe('[]')
  })
})

describe('findJson and pipeJson arguments', () => {
  it('rejects bad options and destinations with typed errors', async () => {
    await expect(ours('many').findJson({}, { format: 'xml' as never })).rejects.toThrow(
      MongoInvalidArgumentError,
    )
    await expect(ours('many').findJson({}, { promoteLongs: false })).rejects.toThrow(/does not apply to JSON/)
    await expect(ours('many').findJson('nope' as never)).rejects.toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
    })
    await expect(ours('many').pipeJson({}, {}, {} as never)).rejects.toThrow(/needs a Writable/)
    // Bad options fail before any byte, the destination untouched: the caller can still answer
    // (an HTTP 400 with the message).
    for (const [filter, options] of [
      [{}, { format: 'xml' }],
      ['nope', {}],
    ] as const) {
      const destination = new Writable({ write: (_chunk, _encoding, done) => done() })
      await expect(ours('many').pipeJson(filter as never, options as never, destination)).rejects.toThrow(
        MongoInvalidArgumentError,
      )
      expect(destination.destroyed).toBe(false)
      expect(destination.writableEnded).toBe(false)
      expect(destination.writableLength).toBe(0)
    }
  })
})

describe('pipeJson into a real HTTP response', () => {
  let server: Server
  let base: string
  const settled: Promise<unknown>[] = []

  beforeAll(async () => {
    server = createServer((request, response) => {
      const url = new URL(request.url!, 'http://localhost')
      const format = url.searchParams.get('format') as JsonFormat
      response.setHeader('content-type', 'application/json')
      settled.push(
        ours('many').pipeJson({ n: { $lt: 1200 } }, { format, sort: { n: 1 }, batchSize: 100 }, response),
      )
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })

  afterAll(() => new Promise((resolve) => server?.close(resolve)))

  it.each(FORMATS)(
    'sends what findJson returns; parsed back it equals the official result (%s)',
    async (format) => {
      const response = await fetch(`${base}/?format=${format}`)
      const body = await response.text()
      const expected = await theirs('many')
        .find({ n: { $lt: 1200 } }, { sort: { n: 1 } })
        .toArray()
      expect(body).toBe(stringify[format](expected))
      const result = await settled.at(-1)
      expect(result).toEqual({ count: 1200, bytes: Buffer.byteLength(body) })
      if (format === 'relaxed') expect(EJSON.parse(body, { relaxed: true })).toEqual(expected)
      else expect(JSON.parse(body)).toEqual(JSON.parse(JSON.stringify(expected)))
    },
  )
})

describe('JSON from arbitrary BSON (replay server serving files)', () => {
  let server: ServedReplay
  let client: MongoClient
  let official: OfficialClient
  let renderable: Document[]

  /** A document nested `depth` levels deep. */
  const nested = (depth: number): Document =>
    depth === 0 ? { leaf: true } : { a: nested(depth - 1), n: depth }

  /** BSON of `{ s: <bytes>, ok: 1 }` where the string holds invalid UTF-8. */
  function invalidUtf8Document(): Buffer {
    const bytes = Buffer.from(BSON.serialize({ s: 'abc', ok: 1 }))
    bytes[bytes.indexOf('abc') + 1] = 0xff
    return bytes
  }

  /** Documents of non-ASCII text (over 16 KiB of JSON: several of the transcoder's batched UTF-8 checks). */
  const nonAsciiDocuments = (count: number, seed: number) =>
    Array.from({ length: count }, (_, n) =>
      BSON.serialize({ n: n + seed, text: `naïve café ${n} 日本語 “${seed}” 🎉`, ['clé']: 'é' }),
    )

  /** BSON of `document` with one byte of the first `marker` (a key or a string) set to 0xff. */
  function withInvalidByte(document: Document, marker: string): Buffer {
    const bytes = Buffer.from(BSON.serialize(document))
    const at = bytes.indexOf(marker)
    if (at === -1) throw new Error(`no ${marker} in the document`)
    bytes[at + 1] = 0xff
    return bytes
  }

  /** BSON of `document` with every key named `from` renamed `to` (same length): repeated keys. */
  function renamedKeys(document: Document, from: string, to: string): Buffer {
    const bytes = Buffer.from(BSON.serialize(document))
    for (let at = bytes.indexOf(`${from}\0`); at !== -1; at = bytes.indexOf(`${from}\0`, at)) {
      bytes.write(to, at)
    }
    return bytes
  }

  beforeAll(async () => {
    // Every BSON type and nesting depth; documents the official EJSON.stringify itself cannot render
    // (a regex flag JS has no ExtendedJSON for) are left out: there is no reference to compare with.
    renderable = randomDocuments(7, 1500).filter((document) => {
      try {
        const decoded = BSON.deserialize(BSON.serialize(document))
        EJSON.stringify(decoded, { relaxed: true })
        return true
      } catch {
        return false
      }
    })
    server = await serveDocuments(
      {
        random: renderable.map((document) => BSON.serialize(document)),
        // Over 1 MiB in one getMore: the transcoder splits it across threads, deferred documents too.
        randomRepeated: Array.from({ length: 6 }, () =>
          renderable.map((document) => BSON.serialize(document)),
        ).flat(),
        deep: [BSON.serialize(nested(150)), BSON.serialize({ shallow: 1 })],
        controls: [
          BSON.serialize({
            [`key ${CONTROL_CHARACTERS.slice(1)}`]: CONTROL_CHARACTERS,
            list: [CONTROL_CHARACTERS],
          }),
        ],
        invalid: [BSON.serialize({ before: 1 }), invalidUtf8Document(), BSON.serialize({ after: 1 })],
        // Invalid UTF-8 in a key, then in a value, each among valid non-ASCII documents.
        invalidAmongNonAscii: [
          ...nonAsciiDocuments(300, 0),
          withInvalidByte({ n: -1, 'kéy with text': 'é' }, 'with'),
          ...nonAsciiDocuments(300, 1000),
          withInvalidByte({ n: -2, text: 'naïve text with an invalid byte' }, 'text with'),
          ...nonAsciiDocuments(300, 2000),
        ],
        // Same-shaped documents, then repeated keys at the top level and inside a nested document.
        repeatedKeys: [
          ...Array.from({ length: 3 }, (_, n) =>
            BSON.serialize({ k1: n, inner: { z1: 'a', z2: 'b' }, k2: n }),
          ),
          renamedKeys({ k1: 1, inner: { z1: 'a', z2: 'b' }, k2: 2 }, 'k2', 'k1'),
          renamedKeys({ k1: 1, inner: { z1: 'a', z2: 'b' }, k2: 2 }, 'z2', 'z1'),
          renamedKeys({ k1: 1, list: [{ z1: 1, z2: 2 }], k2: 2 }, 'z2', 'z1'),
          renamedKeys(
            Object.fromEntries(Array.from({ length: 40 }, (_, n) => [`f${n + 10}`, n])),
            'f49',
            'f10',
          ),
          BSON.serialize({ k1: 5, inner: { z1: 'a', z2: 'b' }, k2: 5 }),
        ],
        bsontypeKeys: [
          BSON.serialize({ n: 1 }),
          // js-bson refuses to serialize such an object: rename a key in its bytes instead.
          renamedKeys({ n: 2, inner: { Xbsontype: 'ObjectId', id: 'x' } }, 'Xbsontype', '_bsontype'),
        ],
      },
      { docs: 20_000 },
    )
    client = await MongoClient.connect(server.uri)
    official = await OfficialClient.connect(server.uri)
  }, 600_000)

  afterAll(async () => {
    await Promise.all([client?.close(), official?.close()])
    await server?.stop()
  })

  const bench = (name: string) => client.db('bench').collection(name) as Collection
  /**
   * js-bson's decode of the served documents. The official driver's own results differ from it only
   * where it has a bug: it returns raw bytes for an embedded document or array whose key is named
   * like an Object.prototype member (`toString`, `constructor`, ...), because it looks the key up
   * in a plain-object `fieldsAsRaw` option. The random documents have such keys on purpose.
   */
  const decoded = (documents: Document[]) =>
    documents.map((document) => BSON.deserialize(BSON.serialize(document)))
  const reference = (name: string, options: Document = {}) =>
    official.db('bench').collection(name).find({}, options).toArray()

  it('keeps enough random documents to mean something', () => {
    expect(renderable.length).toBeGreaterThan(1300)
  })

  it.each(FORMATS)('renders documents of every BSON type byte for byte (%s)', async (format) => {
    const expected = stringify[format](decoded(renderable))
    expect((await bench('random').findJson({}, { format, batchSize: 64 })).toString()).toBe(expected)
    const repeated = stringify[format](Array.from({ length: 6 }, () => decoded(renderable)).flat())
    expect((await bench('randomRepeated').findJson({}, { format })).toString()).toBe(repeated)
  })

  it.each(FORMATS)(
    'escapes every control character, quote and backslash as JSON.stringify (%s)',
    async (format) => {
      const json = (await bench('controls').findJson({}, { format })).toString()
      expect(json).toBe(stringify[format](await reference('controls')))
      expect(json).toContain('\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e')
    },
  )

  it.each(FORMATS)('renders documents nested deeper than the native limit (%s)', async (format) => {
    expect((await bench('deep').findJson({}, { format })).toString()).toBe(
      stringify[format](await reference('deep')),
    )
  })

  it.each(FORMATS)(
    'renders a repeated key as JS holds it: once, last value, first place (%s)',
    async (format) => {
      const official = await reference('repeatedKeys')
      expect(official[3]).toEqual({ k1: 2, inner: { z1: 'a', z2: 'b' } })
      expect(Object.keys(official[3])).toEqual(['k1', 'inner'])
      // The document paths hold them the same way.
      for (const documents of [
        await bench('repeatedKeys').find({}),
        await bench('repeatedKeys').findLazy({}),
      ]) {
        expect(JSON.stringify(documents)).toBe(JSON.stringify(official))
      }
      expect((await bench('repeatedKeys').findJson({}, { format })).toString()).toBe(
        stringify[format](official),
      )
    },
  )

  it('fields named _bsontype: JSON.stringify text, or the official EJSON.stringify error', async () => {
    const official = await reference('bsontypeKeys')
    expect((await bench('bsontypeKeys').findJson({}, { format: 'plain' })).toString()).toBe(
      JSON.stringify(official),
    )
    const ejsonError = (() => {
      try {
        return stringify.relaxed(official)
      } catch (error) {
        return error as Error
      }
    })()
    expect(ejsonError).toBeInstanceOf(Error)
    await expect(bench('bsontypeKeys').findJson({})).rejects.toThrow((ejsonError as Error).message)
  })

  it('invalid UTF-8: the official error by default, its replacement text without validation', async () => {
    const officialError = await reference('invalid').catch((error: unknown) => error)
    expect(officialError).toBeInstanceOf(Error)
    await expect(bench('invalid').findJson({})).rejects.toThrow((officialError as Error).message)
    for (const format of FORMATS) {
      const json = await bench('invalid').findJson({}, { format, enableUtf8Validation: false })
      expect(json.toString()).toBe(
        stringify[format](await reference('invalid', { enableUtf8Validation: false })),
      )
    }
  })

  it('invalid UTF-8 in a key or a value among non-ASCII documents: what the official driver gives', async () => {
    // The transcoder checks the UTF-8 of many strings at once; the documents around the invalid
    // ones stay its own text, the invalid ones render (or fail) as the official driver's.
    for (const enableUtf8Validation of [true, false]) {
      const official = await reference('invalidAmongNonAscii', { enableUtf8Validation }).catch(
        (error: unknown) => error as Error,
      )
      for (const format of FORMATS) {
        const ours = bench('invalidAmongNonAscii').findJson({}, { format, enableUtf8Validation })
        if (official instanceof Error) await expect(ours).rejects.toThrow(official.message)
        else expect((await ours).toString()).toBe(stringify[format](official))
      }
    }
    // Without validation the invalid byte is U+FFFD in the text, as js-bson decodes it.
    const text = (
      await bench('invalidAmongNonAscii').findJson({}, { enableUtf8Validation: false })
    ).toString()
    expect(text).toContain('\uFFFD')
  })

  it('a 20,000-document result streams into a slow Writable, byte for byte', async () => {
    let received = ''
    const slow = new Writable({
      highWaterMark: 64 * 1024,
      write(chunk: Buffer, _encoding, done) {
        received += chunk.toString()
        setImmediate(done)
      },
    })
    const result = await bench('wide45').pipeJson({}, { batchSize: 5000 }, slow)
    expect(result.count).toBe(20_000)
    expect(received).toBe(stringify.relaxed(await reference('wide45', { batchSize: 5000 })))
  })

  it('a client that goes away mid-response closes the cursor and leaves nothing running', async () => {
    const openCursors = async () => {
      const { metrics } = await official.db('admin').command({ serverStatus: 1 })
      return Number(metrics.cursor.open.total)
    }
    const before = await openCursors()
    let piped: Promise<unknown> | undefined
    const http = createServer((_request, response) => {
      piped = bench('wide45').pipeJson({}, { batchSize: 200 }, response)
    })
    http.listen(0, '127.0.0.1')
    await once(http, 'listening')
    try {
      const port = (http.address() as AddressInfo).port
      const response: IncomingMessage = await new Promise((resolve) =>
        get(`http://127.0.0.1:${port}/`, resolve),
      )
      await once(response, 'data')
      response.destroy() // the client goes away after the first bytes
      await expect(piped).rejects.toThrow()
      for (let attempt = 0; attempt < 50 && (await openCursors()) !== before; attempt++) await sleep(100)
      expect(await openCursors()).toBe(before)
    } finally {
      http.closeAllConnections()
      await new Promise((resolve) => http.close(resolve))
    }
  })
})
