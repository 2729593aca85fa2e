// How a reply's OP_MSG is laid out on the wire (its flags, sections and checksum) against what
// each driver makes of it: the vendored crate reads a reply's body straight into its own buffer
// (vendor/README.md, `Message::read_from_op_msg`), and every other layout parses, or fails, as the
// official driver's parser has it (`Message::read_op_common`).
import { describe, expect, it } from 'vitest'
import { BSON, type Document } from 'bson'
import { MongoClient as OfficialClient } from 'mongodb'
import { MongoClient } from 'rumongo'
import { startWireServer } from './setup/wire_server.js'

const OP_MSG = 2013
const CHECKSUM_PRESENT = 1

/** An OP_MSG answering `responseTo`: its flags, then the given section and trailing bytes. */
function message(responseTo: number, flags: number, ...parts: Uint8Array[]): Buffer {
  const body = Buffer.concat([Buffer.alloc(4), ...parts])
  body.writeUInt32LE(flags, 0)
  const header = Buffer.alloc(16)
  header.writeInt32LE(16 + body.length, 0)
  header.writeInt32LE(responseTo, 8)
  header.writeInt32LE(OP_MSG, 12)
  return Buffer.concat([header, body])
}

const kind0 = (document: Document) => Buffer.concat([Buffer.from([0]), BSON.serialize(document)])

function kind1(identifier: string, documents: Document[]): Buffer {
  const payload = Buffer.concat([Buffer.from(`${identifier}\0`), ...documents.map((d) => BSON.serialize(d))])
  const size = Buffer.alloc(4)
  size.writeInt32LE(4 + payload.length, 0)
  return Buffer.concat([Buffer.from([1]), size, payload])
}

const DOCUMENTS = [{ _id: 1, s: 'x'.repeat(300) }, { _id: 2 }]
const findReply = { cursor: { id: 0n, ns: 'test.items', firstBatch: DOCUMENTS }, ok: 1 }

/** Each layout of the find's reply, and the bytes of its message. */
const LAYOUTS: Record<string, (requestId: number) => Buffer> = {
  'the body alone': (id) => message(id, 0, kind0(findReply)),
  'the body and a checksum': (id) => message(id, CHECKSUM_PRESENT, kind0(findReply), Buffer.alloc(4, 7)),
  'the body and a document sequence': (id) => message(id, 0, kind0(findReply), kind1('extra', [{ a: 1 }])),
  'a document sequence, then the body': (id) => message(id, 0, kind1('extra', [{ a: 1 }]), kind0(findReply)),
  'two bodies': (id) => message(id, 0, kind0(findReply), kind0({ ok: 1 })),
  'a body that says it is longer than the message': (id) => {
    const section = kind0(findReply)
    section.writeInt32LE(section.length + 100, 1)
    return message(id, 0, section)
  },
  'a body that says it is 4 bytes long': (id) => {
    const section = kind0(findReply)
    section.writeInt32LE(4, 1)
    return message(id, 0, section)
  },
  'trailing bytes without the checksum flag': (id) => message(id, 0, kind0(findReply), Buffer.alloc(4)),
  'the flags alone': (id) => message(id, 0),
}

async function findWith(Client: typeof MongoClient | typeof OfficialClient, uri: string) {
  const client = new Client(uri, { serverSelectionTimeoutMS: 2_000 })
  try {
    await client.connect()
    const documents = await client.db('test').collection('items').find({}).toArray()
    return { documents }
  } catch (error) {
    const { name, message, code } = error as Error & { code?: unknown }
    return { error: { name, message, code } }
  } finally {
    await client.close().catch(() => {})
  }
}

/**
 * The one layout rumongo refuses with an error of its own: the official driver fails by accident
 * (a TypeError, reading the length of the body it did not find). Every other layout, malformed or
 * not, reads as the official driver reads it (vendor/README.md, `Message::read_op_common`;
 * malformed_replies.test.ts goes further).
 */
const REFUSED: Record<string, { name: string; message: string }> = {
  'the flags alone': {
    name: 'MongoRuntimeError',
    message:
      'The server returned an invalid reply to a database operation: an OP_MSG response must contain exactly one payload type 0 section',
  },
}

describe('OP_MSG reply layouts', () => {
  for (const [layout, bytes] of Object.entries(LAYOUTS)) {
    it(layout, async () => {
      const server = await startWireServer({
        answer: (command) => (Object.keys(command)[0] === 'find' ? { bytes } : { ok: 1 }),
      })
      try {
        const rumongo = await findWith(MongoClient, server.uri)
        const refused = REFUSED[layout]
        if (refused) {
          expect(rumongo.error).toMatchObject(refused)
          return
        }
        const official = await findWith(OfficialClient, server.uri)
        // The same documents, or the same error class and message (rumongo's MongoErrors also
        // carry a `code`, which the official driver's lack).
        if (official.documents) expect(rumongo).toEqual(official)
        else
          expect(rumongo.error).toMatchObject({
            name: official.error!.name,
            message: official.error!.message,
          })
      } finally {
        await server.stop()
      }
    })
  }
})
