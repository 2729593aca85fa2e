// A fake replica-set primary (the one member of a `startReplicaSet` set, topology.ts) serving a
// scripted change stream: `aggregate` with `$changeStream`
// first opens a cursor at the position its options say (resumeAfter / startAfter token,
// startAtOperationTime, else the script's start), getMores serve the next events a batch at a
// time with a `postBatchResumeToken`, and faults replace chosen answers. The official driver is
// the oracle: tests run both drivers on two servers with the same script and compare.
import { Long, ObjectId, Timestamp, type Document } from 'bson'
import { startReplicaSet } from './topology.js'
import type { WireReply, WireServer } from './wire_server.js'

/** The replica set the fake primary says it belongs to. */
export const SET_NAME = 'rs0'

/** Seconds part of every operation time the fake hands out; the increment is the position. */
const CLOCK_SECONDS = 1_700_000_000

export interface ChangeStreamScript {
  /**
   * The change events, in order, without `_id` (the server gives event `n` the token `ev<n+1>`);
   * an `invalidate` event is the last of its batch and the cursor closes with it (id 0).
   */
  events: Document[]
  /** Events in a getMore's batch (a driver's `batchSize`, when it sends one, wins). */
  batchSize: number
  /** Events in the aggregate's first batch (a real server's is empty; `batchSize` there wins). */
  firstBatchSize?: number
  /** Whether replies carry `postBatchResumeToken` (servers from 4.0.7); default true. */
  postBatchResumeToken?: boolean
  /** Where a stream opened without a resume option starts (default 0). */
  start?: number
  /**
   * The answer to the `count`-th command named `name` (1-based: `aggregate`, `getMore`) in place
   * of the script's, or `undefined` for the script's: an error reply, CLOSE_CONNECTION, ...
   */
  fault?: (name: string, count: number) => WireReply | undefined
  /** How long a getMore with no event waits before its empty batch (default 20 ms). */
  emptyWaitMS?: number
}

export interface ChangeStreamServer extends WireServer {
  /** The aggregates and getMores received, in order. */
  streamCommands(): Document[]
}

/** What the tests use of a change stream, the official driver's or rumongo's (the oracle runs the same code). */
export interface AnyChangeStream {
  next(): Promise<Document>
  tryNext(): Promise<Document | null>
  hasNext(): Promise<boolean>
  bufferedCount(): number
  close(): Promise<void>
  on(event: string, listener: (...args: any[]) => void): unknown
  resumeToken: unknown
  closed: boolean
}

/** The `_id` of event `n` (the position after it). */
export function eventToken(n: number): Document {
  return { _data: `ev${n + 1}` }
}

/**
 * Insert event `n` of the shape a real server sends: `_id` n as an ObjectId, `fullDocument(id)`
 * in namespace `ns` (the fake adds the resume token).
 */
export function insertEvent(
  n: number,
  ns: { db: string; coll: string },
  fullDocument: (id: ObjectId) => Document,
): Document {
  const id = new ObjectId(n.toString(16).padStart(24, '0'))
  return {
    operationType: 'insert',
    clusterTime: new Timestamp({ t: CLOCK_SECONDS, i: n + 1 }),
    wallTime: new Date(CLOCK_SECONDS * 1000 + n),
    fullDocument: fullDocument(id),
    ns,
    documentKey: { _id: id },
  }
}

/** The position a token or operation time stands for (events before it were seen). */
function positionOf(stage: Document, start: number): number {
  const token = stage.startAfter ?? stage.resumeAfter
  if (token !== undefined) {
    const match = /^(?:ev|pb)(\d+)/.exec(String(token._data))
    if (!match) throw new Error(`unknown resume token ${JSON.stringify(token)}`)
    return Number(match[1])
  }
  if (stage.startAtOperationTime instanceof Timestamp) return stage.startAtOperationTime.i
  return start
}

/** Starts the fake primary; the URI connects directly to it. */
export async function startChangeStreamServer(script: ChangeStreamScript): Promise<ChangeStreamServer> {
  const cursors = new Map<bigint, { position: number; ns: string; invalidated?: boolean }>()
  const counts = new Map<string, number>()
  let nextId = 7000n
  let emptyBatches = 0
  const withPbrt = script.postBatchResumeToken ?? true

  /** The next events of a cursor; an `invalidate` event ends the batch and closes the cursor. */
  const batchOf = (cursor: { position: number; invalidated?: boolean }, size: number) => {
    const events: Document[] = []
    while (events.length < size && cursor.position < script.events.length && !cursor.invalidated) {
      const event = script.events[cursor.position]!
      events.push({ _id: eventToken(cursor.position), ...event })
      cursor.position += 1
      cursor.invalidated = event.operationType === 'invalidate'
    }
    return events
  }
  /** The token after a batch: `pb<position>`, plus a count that moves on for each empty batch. */
  const pbrt = (cursor: { position: number }, empty: boolean) =>
    withPbrt
      ? { postBatchResumeToken: { _data: `pb${cursor.position}${empty ? `.${++emptyBatches}` : ''}` } }
      : {}

  const answer = async (command: Document): Promise<WireReply> => {
    const name = Object.keys(command)[0]!
    const count = (counts.get(name) ?? 0) + 1
    counts.set(name, count)
    const fault = script.fault?.(name, count)
    if (fault !== undefined) return fault
    const operationTime = new Timestamp({ t: CLOCK_SECONDS, i: 0 })
    if (name === 'aggregate') {
      const stage = command.pipeline?.[0]?.$changeStream
      if (!stage) return { ok: 0, errmsg: 'not a change stream', code: 2, codeName: 'BadValue' }
      const target = command.aggregate === 1 ? '$cmd.aggregate' : String(command.aggregate)
      const ns = `${command.$db}.${target}`
      const cursor: { position: number; ns: string; invalidated?: boolean } = {
        position: positionOf(stage, script.start ?? 0),
        ns,
      }
      const opened = new Timestamp({ t: CLOCK_SECONDS, i: cursor.position })
      const size = command.cursor?.batchSize ?? script.firstBatchSize ?? 0
      const firstBatch = batchOf(cursor, size)
      const id = (nextId += 1n)
      cursors.set(id, cursor)
      return {
        cursor: {
          firstBatch,
          ...pbrt(cursor, firstBatch.length === 0),
          id: Long.fromBigInt(cursor.invalidated ? 0n : id),
          ns,
        },
        operationTime: opened,
        ok: 1,
      }
    }
    if (name === 'getMore') {
      const id = BigInt(String(command.getMore))
      const cursor = cursors.get(id)
      if (!cursor) {
        return {
          ok: 0,
          errmsg: `cursor id ${id} not found`,
          code: 43,
          codeName: 'CursorNotFound',
          operationTime,
        }
      }
      const nextBatch = batchOf(cursor, command.batchSize ?? script.batchSize)
      if (nextBatch.length === 0) {
        const wait = Math.min(Number(command.maxTimeMS ?? 1000), script.emptyWaitMS ?? 20)
        await new Promise((resolve) => setTimeout(resolve, wait))
      }
      if (cursor.invalidated) cursors.delete(id)
      return {
        cursor: {
          nextBatch,
          ...pbrt(cursor, nextBatch.length === 0),
          id: Long.fromBigInt(cursor.invalidated ? 0n : id),
          ns: cursor.ns,
        },
        operationTime,
        ok: 1,
      }
    }
    return { ok: 1, operationTime }
  }

  const set = await startReplicaSet({ setName: SET_NAME, members: [{}], answer })
  const server = set.members[0]!.wire
  return {
    ...server,
    streamCommands: () =>
      server.commands.filter((command) => {
        const name = Object.keys(command)[0]
        return name === 'aggregate' || name === 'getMore' || name === 'killCursors'
      }),
  }
}
