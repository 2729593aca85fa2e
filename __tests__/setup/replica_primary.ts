// A fake replica-set primary (the one member of a `startReplicaSet` set, topology.ts): it answers
// the handshake as the primary of set `rs0` (with `logicalSessionTimeoutMinutes`, so drivers use
// sessions) and, as a mongod does, puts
// `$clusterTime` and `operationTime` in every reply; the cluster time advances by one with every
// command a test scripts (the handshake and monitoring checks do not advance it, so both drivers
// see the same times whatever their monitoring does). Snapshot reads get `atClusterTime`.
import { Binary, Long, Timestamp, type Document } from 'bson'
import { startReplicaSet } from './topology.js'
import type { WireReply, WireServer } from './wire_server.js'

/** The seconds part of every cluster time the fake gives. */
export const CLUSTER_SECONDS = 1_800_000_000

/** The `$clusterTime` document of cluster time `increment`, with a signature as a mongod signs it. */
export function clusterTimeOf(increment: number): Document {
  return {
    clusterTime: new Timestamp({ t: CLUSTER_SECONDS, i: increment }),
    signature: { hash: new Binary(Buffer.alloc(20)), keyId: Long.fromNumber(0) },
  }
}

export interface ReplicaPrimaryOptions {
  /**
   * The reply to a scripted command (all but the handshake, `ping`, `endSessions`,
   * `killCursors`), without the times: they are added.
   */
  answer: (command: Document) => WireReply | Promise<WireReply>
}

/** Starts a primary of `rs0`; connect with `server.uri` (the set is discovered from its hello). */
export async function startReplicaPrimary(options: ReplicaPrimaryOptions): Promise<WireServer> {
  let increment = 1
  const withTimes = (reply: Document, command: Document): Document => {
    const time = new Timestamp({ t: CLUSTER_SECONDS, i: increment })
    const snapshot = command.readConcern?.level === 'snapshot'
    if (snapshot && reply.cursor) reply.cursor.atClusterTime = command.readConcern.atClusterTime ?? time
    if (snapshot && !reply.cursor) reply.atClusterTime = command.readConcern.atClusterTime ?? time
    return { ...reply, operationTime: time, $clusterTime: clusterTimeOf(increment) }
  }
  const set = await startReplicaSet({
    members: [{}],
    helloFields: () => ({
      operationTime: new Timestamp({ t: CLUSTER_SECONDS, i: increment }),
      $clusterTime: clusterTimeOf(increment),
    }),
    async answer(command) {
      increment += 1
      const reply = await options.answer(command)
      if (reply === null || typeof reply !== 'object' || 'bytes' in reply) return reply
      return withTimes(reply, command)
    },
  })
  return set.members[0]!.wire
}
