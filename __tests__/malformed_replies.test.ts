// Malformed replies from the server (setup/malformed_replies.ts): an OP_MSG whose lengths, flags or
// sections are wrong, an OP_COMPRESSED whose details are, a wrong op code, in place of a find's
// reply or of its getMore's. Each driver reads a collection of 4 documents (2 a batch) from its
// own fake server with the same script, then reads it again on the same client (the malformed
// reply is sent once). The official driver is the oracle: the same error class and message, or
// the same documents. Where it crashes (an endless loop that runs the process out of memory),
// hangs, or fails by accident (a TypeError), rumongo's own typed error is pinned instead, with the
// reason. Either way the next read gets every document, and close() settles.
import { describe, expect, it } from 'vitest'
import { BSON, BSONError, type Document } from 'bson'
import { MongoClient as OfficialClient } from 'mongodb'
import { MongoClient, MongoError } from 'rumongo'
import {
  CHECKSUM_PRESENT,
  CURSOR_TOTAL,
  EXHAUST_ALLOWED,
  MORE_TO_COME,
  OP_COMPRESSED,
  OP_MSG,
  OP_QUERY,
  OP_REPLY,
  frame,
  kind0,
  kind1,
  opCompressedBody,
  opMsgBody,
  startMalformedServer,
  zlibBomb,
  type CompressedParts,
  type Target,
} from './setup/malformed_replies.js'

/** A read that takes longer has hung (the healthy ones take milliseconds). */
const NO_HANG_MS = 5_000

type Bytes = (requestId: number, reply: Document) => Buffer

/** An OP_MSG of `flags` whose sections and trailing bytes `parts` makes from the healthy reply. */
const opMsg =
  (flags: number, parts: (reply: Document) => Uint8Array[], length?: (size: number) => number): Bytes =>
  (requestId, reply) => {
    const body = opMsgBody(flags, ...parts(reply))
    return frame(requestId, OP_MSG, body, length?.(16 + body.length))
  }

/** The healthy reply's body section with its length field set to `length(size)`. */
const bodyWithLength = (length: (size: number) => number) => (reply: Document) => {
  const section = kind0(reply)
  section.writeInt32LE(length(section.length - 1), 1)
  return [section]
}

/**
 * An OP_COMPRESSED message wrapping the OP_MSG body `sections` makes (default: the healthy reply's
 * body alone), with the details `parts` gives for that OP_MSG body.
 */
const compressed =
  (
    parts: (inner: Buffer) => CompressedParts = () => ({}),
    sections: (reply: Document) => Uint8Array[] = (reply) => [kind0(reply)],
  ): Bytes =>
  (requestId, reply) => {
    const inner = opMsgBody(0, ...sections(reply))
    return frame(requestId, OP_COMPRESSED, opCompressedBody(inner, parts(inner)))
  }

const SEQUENCE = kind1('extra', [{ a: 1 }])

interface Outcome {
  documents?: number
  error?: { name: string; message: string; bson: boolean; range: boolean }
}

/**
 * Whether `error` is one the caller can tell apart: a MongoError (rumongo's carry a `code`),
 * js-bson's BSONError (typed by its class), or an error with a `code`.
 */
const typed = (error: unknown) =>
  error instanceof MongoError ||
  BSONError.isBSONError(error) ||
  (error as { code?: unknown }).code !== undefined

/** A find of every document, as `Outcome`; a read still pending after NO_HANG_MS is a failure. */
async function read(client: MongoClient | OfficialClient): Promise<Outcome> {
  let timer: NodeJS.Timeout | undefined
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the read hung (no answer in ${NO_HANG_MS} ms)`)), NO_HANG_MS)
  })
  try {
    const find = client.db('test').collection('items').find({}, { batchSize: 2 }).toArray()
    return { documents: (await Promise.race([find, hung])).length }
  } catch (caught) {
    const error = caught as Error
    if (error.message.startsWith('the read hung')) throw error
    const { name, message } = error
    if (client instanceof MongoClient) expect(typed(error), `untyped: ${name}: ${message}`).toBe(true)
    return {
      error: { name, message, bson: BSONError.isBSONError(error), range: error instanceof RangeError },
    }
  } finally {
    clearTimeout(timer)
  }
}

/** What a driver makes of `bytes` in place of the `target` reply, and what its next read gets. */
async function readTwice(Client: typeof MongoClient | typeof OfficialClient, target: Target, bytes: Bytes) {
  const server = await startMalformedServer({ target, bytes })
  const client = new Client(server.uri, { serverSelectionTimeoutMS: 2_000 })
  try {
    await client.connect()
    const first = await read(client)
    const next = await read(client)
    return { first, next }
  } finally {
    await client.close()
    await server.stop()
  }
}

const TARGETS: Target[] = ['find', 'getMore']

/** Layouts both drivers read the same way: the official driver's outcome is the expected one. */
const AS_THE_OFFICIAL_DRIVER: Record<string, Bytes> = {
  // Point 2 and 3: a document sequence (kind 1) anywhere: MongoRuntimeError "OP_MSG Payload Type
  // 1 detected unsupported protocol" (rumongo: invalid UTF-8, a network error retried, before the
  // body; accepted after it).
  'a document sequence before the body': opMsg(0, (r) => [SEQUENCE, kind0(r)]),
  'a document sequence after the body': opMsg(0, (r) => [kind0(r), SEQUENCE]),
  'a document sequence alone': opMsg(0, () => [SEQUENCE]),
  'a document sequence whose size is past the end': opMsg(0, (r) => [
    kind0(r),
    kind1('extra', [{ a: 1 }], 1000),
  ]),
  'a document sequence whose size is too small': opMsg(0, (r) => [kind0(r), kind1('extra', [{ a: 1 }], 6)]),
  // Point 1: a body longer than the message: BSONOffsetError "Parsed documentSize ..." (rumongo:
  // BSONError "document length incorrect").
  'a body that says it is longer than the message': opMsg(
    0,
    bodyWithLength((size) => size + 100),
  ),
  // Point 1: the official driver's walk goes on inside the body and reads past the end:
  // RangeError (rumongo: BSONError "document too short").
  'a body that says it is 4 bytes long': opMsg(
    0,
    bodyWithLength(() => 4),
  ),
  'a body that says it is 0 bytes long': opMsg(
    0,
    bodyWithLength(() => 0),
  ),
  'a body 3 bytes shorter than it says': opMsg(
    0,
    bodyWithLength((size) => size - 3),
  ),
  // A section length, or the flags, past the message's end: the official driver's `readInt32LE`
  // RangeError (rumongo: MongoRuntimeError "The server indicated that the reply would be N bytes
  // long, but it instead was M", or for the header alone a network error, retried).
  'trailing bytes without the checksum flag': opMsg(0, (r) => [kind0(r), Buffer.alloc(4)]),
  'one trailing byte': opMsg(0, (r) => [kind0(r), Buffer.alloc(1)]),
  'a section kind without its section': opMsg(0, () => [Buffer.from([0])]),
  'a message of the header alone': (requestId) => frame(requestId, OP_MSG, Buffer.alloc(0)),
  // Both read the first body (rumongo refused a second one).
  'two bodies': opMsg(0, (r) => [kind0(r), kind0({ ok: 1 })]),
  // An unknown section kind is one byte skipped (rumongo read it as a document sequence).
  'an unknown section kind before the body': opMsg(0, (r) => [Buffer.from([2]), kind0(r)]),
  'an unknown section kind after the body': opMsg(0, (r) => [
    kind0(r),
    Buffer.from([2]),
    BSON.serialize({ a: 1 }),
  ]),
  // MongoParseError "Message size cannot be negative: -1" (rumongo: "a length out of range").
  'a negative message length': opMsg(
    0,
    (r) => [kind0(r)],
    () => -1,
  ),
  // OP_COMPRESSED: MongoDecompressionError for an unknown compressor and a wrong uncompressed size
  // (rumongo: MongoRuntimeError, MongoParseError for a negative size); details cut short: the
  // official driver's RangeError (rumongo: a network error, retried).
  'an unknown compressor': compressed(() => ({ compressorId: 9 })),
  'an uncompressed size 1 byte too long': compressed((inner) => ({ uncompressedSize: inner.length + 1 })),
  'a negative uncompressed size': compressed(() => ({ uncompressedSize: -5 })),
  'an uncompressed size over maxMessageSizeBytes': compressed(() => ({ uncompressedSize: 60_000_000 })),
  'compression details cut short': (requestId) => frame(requestId, OP_COMPRESSED, Buffer.alloc(3)),
  'a compressed document sequence before the body': compressed(undefined, (r) => [SEQUENCE, kind0(r)]),
  'a compressed document sequence after the body': compressed(undefined, (r) => [kind0(r), SEQUENCE]),
  // Already read alike before: a guard.
  'the body alone': opMsg(0, (r) => [kind0(r)]),
  'the body and a checksum': opMsg(CHECKSUM_PRESENT, (r) => [kind0(r), Buffer.alloc(4, 7)]),
  'the checksum flag without a checksum': opMsg(CHECKSUM_PRESENT, (r) => [kind0(r)]),
  'unknown required flag bits (2 and 15)': opMsg((1 << 2) | (1 << 15), (r) => [kind0(r)]),
  'moreToCome on a reply': opMsg(MORE_TO_COME, (r) => [kind0(r)]),
  'exhaustAllowed on a reply': opMsg(EXHAUST_ALLOWED, (r) => [kind0(r)]),
  'a zlib-compressed reply': compressed(),
  'a reply through the noop compressor': compressed(() => ({ compressorId: 0 })),
}

describe('a malformed reply reads as the official driver reads it', () => {
  for (const [layout, bytes] of Object.entries(AS_THE_OFFICIAL_DRIVER)) {
    it(layout, async () => {
      for (const target of TARGETS) {
        const official = await readTwice(OfficialClient, target, bytes)
        const rumongo = await readTwice(MongoClient, target, bytes)
        expect({ target, ...rumongo }).toEqual({ target, ...official })
        expect(rumongo.next).toEqual({ documents: CURSOR_TOTAL })
      }
    })
  }
})

interface Refusal {
  bytes: Bytes
  /** rumongo's error (the official driver has no usable one here: `why`). */
  error: { name: string; message: string | RegExp }
  /** The official driver's error, where running it is safe (no crash, no hang). */
  official?: { name: string; message: string | RegExp }
  why: string
}

/** Layouts the official driver crashes, hangs or fails by accident on: rumongo's own typed error. */
const REFUSED: Record<string, Refusal> = {
  'a body that says it is -1 bytes long': {
    bytes: opMsg(
      0,
      bodyWithLength(() => -1),
    ),
    error: { name: 'BSONOffsetError', message: 'BSON size cannot be negative. offset: 0' },
    why: "the official driver's section walk steps back forever: the process runs out of memory",
  },
  'a message length of 0': {
    bytes: opMsg(
      0,
      (r) => [kind0(r)],
      () => 0,
    ),
    error: { name: 'MongoParseError', message: /a length out of range/ },
    why: 'the official driver reads empty messages forever: the process runs out of memory',
  },
  'a message length 4 bytes short': {
    bytes: opMsg(
      0,
      (r) => [kind0(r)],
      (size) => size - 4,
    ),
    error: {
      name: 'BSONOffsetError',
      message: /^Parsed documentSize \(\d+ bytes\) does not match input length/,
    },
    why: "the official driver reads the reply's last 4 bytes (zeros) as the next message's length 0",
  },
  'a message length of 8': {
    bytes: opMsg(
      0,
      (r) => [kind0(r)],
      () => 8,
    ),
    error: { name: 'MongoParseError', message: /a length out of range/ },
    why: "the official driver throws a RangeError, then reads the reply's other bytes as the next reply and hangs",
  },
  'a message length over maxMessageSizeBytes': {
    bytes: opMsg(
      0,
      (r) => [kind0(r)],
      () => 60_000_000,
    ),
    error: { name: 'MongoRuntimeError', message: /Message length 60000000 over maximum 48000000$/ },
    why: 'the official driver waits for 60 MB that never come',
  },
  'the flags alone': {
    bytes: opMsg(0, () => []),
    error: {
      name: 'MongoRuntimeError',
      message: /an OP_MSG response must contain exactly one payload type 0 section$/,
    },
    official: { name: 'TypeError', message: "Cannot read properties of undefined (reading 'length')" },
    why: 'the official driver reads the length of a body it did not find',
  },
  'an OP_REPLY': {
    bytes: (requestId, reply) => frame(requestId, OP_REPLY, opMsgBody(0, kind0(reply))),
    error: { name: 'MongoRuntimeError', message: /Invalid op code, expected 2013 or 2012 and got 1$/ },
    official: { name: 'BSONOffsetError', message: /^Parsed documentSize \(\d+ bytes\)/ },
    why: "the official driver reads an OP_MSG's bytes as an OP_REPLY's",
  },
  'an OP_QUERY': {
    bytes: (requestId, reply) => frame(requestId, OP_QUERY, opMsgBody(0, kind0(reply))),
    error: { name: 'MongoRuntimeError', message: /Invalid op code, expected 2013 or 2012 and got 2004$/ },
    official: { name: 'BSONOffsetError', message: /^Parsed documentSize \(\d+ bytes\)/ },
    why: "the official driver reads any op code but OP_MSG's as an OP_REPLY's",
  },
  'an unknown op code': {
    bytes: (requestId, reply) => frame(requestId, 9999, opMsgBody(0, kind0(reply))),
    error: { name: 'MongoRuntimeError', message: /Invalid wire protocol opcode: 9999$/ },
    official: { name: 'BSONOffsetError', message: /^Parsed documentSize \(\d+ bytes\)/ },
    why: "the official driver reads any op code but OP_MSG's as an OP_REPLY's",
  },
  'a compressed OP_REPLY': {
    bytes: compressed(() => ({ originalOpCode: OP_REPLY })),
    error: {
      name: 'MongoRuntimeError',
      message: /The original opcode of the compressed message must be 2013, but was 1$/,
    },
    official: { name: 'BSONOffsetError', message: /^Parsed documentSize \(\d+ bytes\)/ },
    why: "the official driver reads an OP_MSG's bytes as an OP_REPLY's",
  },
  'bytes that are not zlib': {
    bytes: compressed(() => ({ compressed: Buffer.from('not zlib at all') })),
    error: { name: 'MongoDecompressionError', message: /^Could not decompress message with zlib: / },
    official: { name: 'Error', message: 'incorrect header check' },
    why: "the official driver throws node:zlib's plain Error (rumongo: a network error, retried, that cleared the pool)",
  },
  'bytes that are not snappy': {
    bytes: compressed(() => ({ compressorId: 1, compressed: Buffer.from('x'.repeat(20)) })),
    error: { name: 'MongoDecompressionError', message: /^Could not decompress message with snappy: / },
    why: 'the official driver needs the optional `snappy` package (MongoMissingDependencyError without it)',
  },
  'bytes that are not zstd': {
    bytes: compressed(() => ({ compressorId: 3, compressed: Buffer.from('x'.repeat(20)) })),
    error: { name: 'MongoDecompressionError', message: /^Could not decompress message with zstd: / },
    why: 'the official driver needs `@mongodb-js/zstd` or Node.js 22.15 (MongoMissingDependencyError without them)',
  },
}

describe('a malformed reply the official driver crashes or hangs on is refused with a typed error', () => {
  for (const [layout, refusal] of Object.entries(REFUSED)) {
    it(`${layout} (${refusal.why})`, async () => {
      for (const target of TARGETS) {
        const rumongo = await readTwice(MongoClient, target, refusal.bytes)
        expect(rumongo.first.error, target).toMatchObject(refusal.error)
        expect(rumongo.next, target).toEqual({ documents: CURSOR_TOTAL })
        if (refusal.official) {
          const official = await readTwice(OfficialClient, target, refusal.bytes)
          expect(official.first.error, target).toMatchObject(refusal.official)
        }
      }
    })
  }
})

describe('a compressed reply is decompressed no further than the size it declares', () => {
  it('1 GiB of zeros in 1 MB of zlib, said to be the size of the reply, fails without being inflated', async () => {
    // The official driver inflates it all (1 GiB here; a 48 MB reply would be 48 GiB), then
    // fails on its checksum: not run. The crate inflated it all too.
    const bomb = zlibBomb(1024)
    const before = process.resourceUsage().maxRSS
    for (const target of TARGETS) {
      const bytes = compressed((inner) => ({ compressed: bomb, uncompressedSize: inner.length }))
      const rumongo = await readTwice(MongoClient, target, bytes)
      expect(rumongo.first.error, target).toMatchObject({
        name: 'MongoDecompressionError',
        message: 'Message body and message header must be the same length',
      })
      expect(rumongo.next, target).toEqual({ documents: CURSOR_TOTAL })
    }
    // The process's peak memory (kilobytes): inflating the bomb would raise it by 1 GiB at least.
    expect((process.resourceUsage().maxRSS - before) / 1024).toBeLessThan(256)
  })
})
