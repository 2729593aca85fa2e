// Fake deployments on loopback ports, built from `startWireServer` with its `hello` option: a
// replica set (members with tags, elections with electionId/setVersion, lastWrite for staleness,
// polling hello: no topologyVersion, so drivers check every heartbeatFrequencyMS), a group of
// mongos, and a load balancer (hello with serviceId). Every server answers find with documents that
// name it (`served`), so a test sees which server served each read, and logs every command it
// answered with the connection it came on (load-balancer pinning). A server can be stopped (its
// port refuses connections), hung (nothing it receives is answered any more, hello included) or,
// in a replica set, demoted or replaced by an election; or it can close each connection at its first
// request, hello included (a proxy whose server is gone).
//
//   const rs = await startReplicaSet({ members: [{ tags: { dc: 'ny' } }, { lagSeconds: 300 }] })
//   const client = await MongoClient.connect(rs.uri('readPreference=secondary'))
//   rs.elect(rs.members[1]!); await rs.members[0]!.stop()
//
// A replica-set member that is not primary refuses a primary read (NotPrimaryNoSecondaryOk).
//   await rs.close()
import { Long, ObjectId, Timestamp, type Document } from 'bson'
import {
  CLOSE_CONNECTION,
  helloReply,
  startWireServer,
  type WireContext,
  type WireReply,
  type WireServer,
} from './wire_server.js'

/** A command a fake server answered (the handshake, `ping`, `endSessions`, `killCursors` aside). */
export interface LoggedCommand {
  name: string
  command: Document
  /** The connection it came on (1, 2, ... in the order they opened on this server). */
  connection: number
  /** The cursor a find opened (its id, as getMore names it), when it has documents left. */
  cursor?: bigint
}

/** How a fake server answers find and getMore (other commands get `{ ok: 1 }`). */
export interface ServeOptions {
  /** Documents each find's cursor returns in all (default 1): `{ n, served }`, `served` the server's address. */
  documents?: number
  /** Documents a batch (default: all in the first). */
  batchSize?: number
  /** Answers a command in place of the default (return `undefined` for the default). */
  answer?: (
    command: Document,
    server: FakeServer,
    context: WireContext,
  ) => WireReply | Promise<WireReply> | undefined
}

const NEVER = new Promise<never>(() => {})

/** One fake server of a deployment: a replica-set member, a mongos or a load balancer. */
export class FakeServer {
  /** Every command answered, in order. */
  readonly log: LoggedCommand[] = []
  #state: 'up' | 'stopped' | 'hung' | 'closing' = 'up'
  #cursors = new Map<bigint, { next: number }>()
  #nextCursorId = 100n

  private constructor(
    readonly wire: WireServer,
    private readonly serve: ServeOptions,
  ) {}

  /** Starts a server answering the handshake with `hello()`. */
  static async start(hello: (command: Document, context: WireContext) => Document, serve: ServeOptions = {}) {
    let server: FakeServer | undefined
    const wire = await startWireServer({
      hello: (command, context) => {
        if (server!.#state === 'hung') return NEVER
        return server!.#state === 'closing' ? CLOSE_CONNECTION : hello(command, context)
      },
      answer: (command, context) => server!.#answer(command, context),
    })
    server = new FakeServer(wire, serve)
    return server
  }

  /** `host:port`, as in `hosts` and the connection string. */
  get address(): string {
    return this.wire.address
  }

  /** The commands named `name` it answered. */
  received(name: string): LoggedCommand[] {
    return this.log.filter((entry) => entry.name === name)
  }

  /** Closes its port and every connection: it refuses connections from now on (a crashed server). */
  async stop(): Promise<void> {
    this.#state = 'stopped'
    await this.wire.stop()
  }

  /** Answers nothing from now on, hello included (a hung server: connections stay open). */
  hang(): void {
    this.#state = 'hung'
  }

  /**
   * Closes each connection at its first request from now on, hello included (a proxy whose
   * server is gone): drivers see the connection closed by the server, not refused.
   */
  closeEachConnection(): void {
    this.#state = 'closing'
  }

  get stopped(): boolean {
    return this.#state === 'stopped'
  }

  #answer(command: Document, context: WireContext): WireReply | Promise<WireReply> {
    if (this.#state === 'hung') return NEVER
    if (this.#state === 'closing') return CLOSE_CONNECTION
    const name = Object.keys(command)[0]!
    const entry: LoggedCommand = { name, command, connection: context.connection }
    this.log.push(entry)
    const scripted = this.serve.answer?.(command, this, context)
    if (scripted !== undefined) return scripted
    if (name === 'find') {
      const id = this.#nextCursorId++
      this.#cursors.set(id, { next: 0 })
      const reply = this.#batch(id, 'firstBatch')
      if (this.#cursors.has(id)) entry.cursor = id
      return reply
    }
    if (name === 'getMore') {
      const id = BigInt(String(command.getMore))
      if (!this.#cursors.has(id)) {
        return { ok: 0, code: 43, codeName: 'CursorNotFound', errmsg: `cursor id ${id} not found` }
      }
      return this.#batch(id, 'nextBatch')
    }
    return { ok: 1 }
  }

  #batch(id: bigint, key: 'firstBatch' | 'nextBatch'): Document {
    const total = this.serve.documents ?? 1
    const cursor = this.#cursors.get(id)!
    const documents: Document[] = []
    while (documents.length < (this.serve.batchSize ?? total) && cursor.next < total) {
      documents.push({ n: cursor.next++, served: this.address })
    }
    const more = cursor.next < total
    if (!more) this.#cursors.delete(id)
    return { cursor: { id: Long.fromBigInt(more ? id : 0n), ns: 'db.items', [key]: documents }, ok: 1 }
  }
}

/**
 * Query options every fake deployment's connection string starts with: quick checks, and a
 * selection timeout that a loaded machine's late heartbeat cannot reach.
 */
const QUICK = 'heartbeatFrequencyMS=500&serverSelectionTimeoutMS=10000'

/**
 * `mongodb://<servers>/?<query>`, the query's parts joined in order; an option given again
 * replaces the earlier one (drivers refuse an option twice), but for `readPreferenceTags`.
 */
function connectionString(servers: FakeServer[], query: string[]): string {
  const hosts = servers.map((server) => server.address).join(',')
  const options = new Map<string, string>()
  for (const part of query.join('&').split('&')) {
    if (part === '') continue
    const name = part.split('=')[0]!.toLowerCase()
    // readPreferenceTags is the one option given several times (one tag set each).
    const key = name === 'readpreferencetags' ? `${name}#${options.size}` : name
    options.delete(key) // the last one given, in its place
    options.set(key, part)
  }
  return `mongodb://${hosts}/?${[...options.values()].join('&')}`
}

export interface MemberOptions {
  /** The member's tags (read preference tag sets match them). */
  tags?: Record<string, string>
  /** How far its last write is behind now, in seconds (maxStalenessSeconds reads it). Default 0. */
  lagSeconds?: number
}

export interface ReplicaSetOptions extends ServeOptions {
  /** Default `rs0`. */
  setName?: string
  /** The members; the first one starts as the primary. */
  members: MemberOptions[]
  /** Fields added to each hello reply of a member (a mongod's `$clusterTime`, ...). */
  helloFields?: () => Document
}

/** A member of a fake replica set. */
export interface Member extends FakeServer {
  readonly tags: Record<string, string>
  lagSeconds: number
}

/** A fake replica set: primary, secondaries and elections as its members' hello reports them. */
export interface ReplicaSet {
  readonly setName: string
  readonly members: Member[]
  /** The primary the members report, if any. */
  readonly primary: Member | undefined
  /**
   * A connection string naming every member with `replicaSet`, quick checks
   * (heartbeatFrequencyMS=500, serverSelectionTimeoutMS=10000) and `query` appended (its options
   * replace those).
   */
  uri(query?: string): string
  /** `member` wins an election: it reports itself primary under a new electionId, the others follow. */
  elect(member: Member): void
  /** The primary steps down and no member is primary until the next `elect`. */
  stepDown(): void
}

export async function startReplicaSet(options: ReplicaSetOptions): Promise<ReplicaSet> {
  const setName = options.setName ?? 'rs0'
  const setVersion = 1
  let term = 1
  let primary: FakeServer | undefined
  const members: Member[] = []
  const helloOf =
    (member: Member) =>
    (_: Document, context: WireContext): Document => {
      const isPrimary = member === primary
      const lastWriteDate = new Date(Date.now() - member.lagSeconds * 1000)
      const opTime = {
        ts: new Timestamp({ t: Math.floor(lastWriteDate.getTime() / 1000), i: 1 }),
        t: Long.fromNumber(term),
      }
      return {
        ...helloReply(false),
        ismaster: isPrimary,
        isWritablePrimary: isPrimary,
        secondary: !isPrimary,
        setName,
        setVersion,
        ...(isPrimary ? { electionId: electionId(term) } : {}),
        hosts: members.map((each) => each.address),
        ...(primary ? { primary: primary.address } : {}),
        me: member.address,
        tags: member.tags,
        lastWrite: { opTime, lastWriteDate, majorityOpTime: opTime, majorityWriteDate: lastWriteDate },
        connectionId: context.connection,
        ...options.helloFields?.(),
      }
    }
  // A member that is not primary refuses a primary read, as a real secondary does (drivers then
  // check the set again and retry on the primary once there is one).
  const serve: ServeOptions = {
    ...options,
    answer: (command, server, context) => {
      const scripted = options.answer?.(command, server, context)
      if (scripted !== undefined || server === primary || command.find === undefined) return scripted
      if ((command.$readPreference?.mode ?? 'primary') !== 'primary') return undefined
      return {
        ok: 0,
        code: 13435,
        codeName: 'NotPrimaryNoSecondaryOk',
        errmsg: 'not primary and secondaryOk=false',
      }
    },
  }
  for (const spec of options.members) {
    let member: Member | undefined
    const server = await FakeServer.start((command, context) => helloOf(member!)(command, context), serve)
    member = Object.assign(server, { tags: spec.tags ?? {}, lagSeconds: spec.lagSeconds ?? 0 }) as Member
    members.push(member)
  }
  primary = members[0]
  return {
    setName,
    members,
    get primary() {
      return primary as Member | undefined
    },
    uri: (query = '') => connectionString(members, [`replicaSet=${setName}`, QUICK, query]),
    elect(member) {
      term += 1
      primary = member
    },
    stepDown() {
      primary = undefined
    },
  }
}

/** The electionId of `term`, as a server writes it (an ObjectId counting up). */
function electionId(term: number): ObjectId {
  return new ObjectId(`7fffffff${term.toString(16).padStart(16, '0')}`)
}

/** Several fake mongos of one sharded cluster. */
export interface MongosGroup {
  readonly servers: FakeServer[]
  /** A connection string naming every mongos, with quick checks and `query` appended (as `ReplicaSet.uri`). */
  uri(query?: string): string
}

export async function startMongos(count: number, serve: ServeOptions = {}): Promise<MongosGroup> {
  const servers: FakeServer[] = []
  for (let i = 0; i < count; i++) {
    servers.push(
      await FakeServer.start(
        (_, context) => ({ ...helloReply(true), connectionId: context.connection }),
        serve,
      ),
    )
  }
  return { servers, uri: (query = '') => connectionString(servers, [QUICK, query]) }
}

export interface LoadBalancerOptions extends ServeOptions {
  /** The serviceId its hello reports to a `loadBalanced` handshake; `null`: none (a misconfigured proxy). */
  serviceId?: ObjectId | null
}

/** A fake load balancer in front of a sharded cluster. */
export interface LoadBalancer extends FakeServer {
  readonly serviceId: ObjectId | null
  /** The handshakes it received (each connection's first hello). */
  readonly handshakes: Document[]
  /** A connection string with `loadBalanced=true` and `query` appended. */
  uri(query?: string): string
}

export async function startLoadBalancer(options: LoadBalancerOptions = {}): Promise<LoadBalancer> {
  const serviceId = options.serviceId === undefined ? new ObjectId() : options.serviceId
  const handshakes: Document[] = []
  const server = await FakeServer.start((command, context) => {
    handshakes.push(command)
    return {
      ...helloReply(true),
      ...(command.loadBalanced === true && serviceId !== null ? { serviceId } : {}),
      connectionId: context.connection,
    }
  }, options)
  return Object.assign(server, {
    serviceId,
    handshakes,
    uri: (query = '') =>
      connectionString([server], ['loadBalanced=true', 'serverSelectionTimeoutMS=10000', query]),
  }) as LoadBalancer
}
