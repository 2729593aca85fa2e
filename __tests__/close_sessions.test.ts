// close() ends the server sessions the client pooled, as the official driver's does: one
// `endSessions` to the primary (read preference primaryPreferred), unacknowledged
// (`writeConcern: { w: 0 }`, no `lsid` of its own), naming the sessions its reads used; nothing
// when no read took a session (rumongo's connect pings the server, without a session, which the
// official driver does not). Both drivers on a fake replica set (setup/topology.ts); the official
// driver is the oracle for what reaches each member.
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as official from 'mongodb'
import * as rumongo from 'rumongo'
import type { Binary, Document } from 'bson'
import { startReplicaSet, type ReplicaSet } from './setup/topology.js'

type Driver = typeof official

let rs: ReplicaSet
beforeAll(async () => {
  rs = await startReplicaSet({ members: [{}, {}] })
})
afterAll(async () => {
  for (const member of rs.members) await member.stop()
})

const hex = (lsid: Document | undefined) => (lsid?.id as Binary | undefined)?.toString('hex')

/** What `use` makes the driver send at close(): each endSessions by member, its ids as read numbers. */
async function endSessionsAtClose(driver: Driver, use: (client: official.MongoClient) => Promise<void>) {
  const client = new driver.MongoClient(rs.uri())
  await client.connect()
  const before = rs.members.map((member) => member.wire.commands.length)
  await use(client)
  const reads = rs.members.flatMap((member, i) =>
    member.wire.commands.slice(before[i]).filter((command) => command.find !== undefined),
  )
  const sessions = reads.map((read) => hex(read.lsid as Document))
  const atClose = rs.members.map((member) => member.wire.commands.length)
  await client.close()
  // The official driver does not wait for the reply it asked not to get: give the fake a moment.
  await sleep(300)
  return {
    reads: reads.length,
    endSessions: rs.members.flatMap((member, i) =>
      member.wire.commands
        .slice(atClose[i])
        .filter((command) => command.endSessions !== undefined)
        .map(({ endSessions, ...command }) => ({
          member: i,
          // Which read used each session ended (its number, in order).
          ended: (endSessions as Document[]).map((lsid) => sessions.indexOf(hex(lsid))),
          ...command,
        })),
    ),
  }
}

describe('close() ends the pooled sessions', () => {
  const ended = {
    member: 0,
    writeConcern: { w: 0 },
    $db: 'admin',
    $readPreference: { mode: 'primaryPreferred' },
  }
  it.each<[string, (client: official.MongoClient) => Promise<void>, object[]]>([
    ['when no read took a session: none', async () => {}, []],
    [
      'of a read (its implicit session), on the primary',
      async (client) => void (await client.db('db').collection('items').findOne({})),
      [{ ...ended, ended: [0] }],
    ],
    [
      'of an explicit session the user ended',
      async (client) => {
        const session = client.startSession()
        await client.db('db').collection('items').findOne({}, { session })
        await session.endSession()
      },
      [{ ...ended, ended: [0] }],
    ],
  ])('%s, as the official driver', async (_, use, expected) => {
    const officialWire = await endSessionsAtClose(official, use)
    const rumongoWire = await endSessionsAtClose(rumongo as unknown as Driver, use)
    expect(officialWire.endSessions).toEqual(expected)
    expect(rumongoWire).toEqual(officialWire)
  })
})
