/**
 * Monitoring events: the official driver's event classes and names, rebuilt from the BSON documents
 * that src/events.rs sends, and the typed event emitter `MongoClient` extends.
 * @module
 */
import { EventEmitter } from 'node:events'
import { deserialize, Long, type Document, type ObjectId } from 'bson'
import { UNLIMITED_POOL_SIZE } from './client_options.js'
import { translateNativeError } from './errors.js'
import { monitoringEventNames } from './native.cjs'
import { recordListenerFailure, startListening, type CommandTracer } from './telemetry.js'
import { describeThrown } from './validate.js'

/** A listener of any event. */
export type GenericListener = (...args: any[]) => void

/** Event names mapped to their listener types. */
export type EventsDescription = Record<string, GenericListener>

/** The events every emitter has. */
export type CommonEvents = 'newListener' | 'removeListener'

/** An `EventEmitter` whose methods know the events' names and listener types, as the official driver's. */
export interface TypedEventEmitter<Events extends EventsDescription> extends EventEmitter {
  addListener<EventKey extends keyof Events>(event: EventKey, listener: Events[EventKey]): this
  addListener(
    event: CommonEvents,
    listener: (eventName: string | symbol, listener: GenericListener) => void,
  ): this
  addListener(event: string | symbol, listener: GenericListener): this
  on<EventKey extends keyof Events>(event: EventKey, listener: Events[EventKey]): this
  on(event: CommonEvents, listener: (eventName: string | symbol, listener: GenericListener) => void): this
  on(event: string | symbol, listener: GenericListener): this
  once<EventKey extends keyof Events>(event: EventKey, listener: Events[EventKey]): this
  once(event: CommonEvents, listener: (eventName: string | symbol, listener: GenericListener) => void): this
  once(event: string | symbol, listener: GenericListener): this
  removeListener<EventKey extends keyof Events>(event: EventKey, listener: Events[EventKey]): this
  removeListener(event: string | symbol, listener: GenericListener): this
  off<EventKey extends keyof Events>(event: EventKey, listener: Events[EventKey]): this
  off(event: string | symbol, listener: GenericListener): this
  prependListener<EventKey extends keyof Events>(event: EventKey, listener: Events[EventKey]): this
  prependListener(event: string | symbol, listener: GenericListener): this
  emit<EventKey extends keyof Events>(
    event: EventKey | symbol,
    ...args: Parameters<Events[EventKey]>
  ): boolean
}

/** Typed event emitter (see the official driver's `TypedEventEmitter`). */
export class TypedEventEmitter<Events extends EventsDescription> extends EventEmitter {
  /** @internal Called after every change to the listeners, by whichever method made it. */
  protected listenersChanged(): void {}
}

/** EventEmitter's methods that add or remove listeners. */
export const LISTENER_CHANGING_METHODS = [
  'addListener',
  'on',
  'once',
  'prependListener',
  'prependOnceListener',
  'removeListener',
  'off',
  'removeAllListeners',
] as const

// Every method that adds or removes listeners reports it (`once` listeners remove themselves
// through `removeListener`). Not the 'newListener'/'removeListener' events: a user's
// `removeAllListeners()` would remove those hooks too.
for (const method of LISTENER_CHANGING_METHODS) {
  const original = EventEmitter.prototype[method] as (...args: unknown[]) => unknown
  Object.defineProperty(TypedEventEmitter.prototype, method, {
    configurable: true,
    writable: true,
    value: function (this: TypedEventEmitter<EventsDescription>, ...args: unknown[]) {
      const result = original.apply(this, args)
      this.listenersChanged()
      return result
    },
  })
}

/** What every monitoring event document from src/events.rs holds; the rest depends on `name`. */
type RawEvent = Document & { name: MonitoringEventName }

/** The monitoring event names, in the bit order of the native listener mask. */
const EVENT_NAMES = monitoringEventNames() as MonitoringEventName[]

const COMMAND_EVENT_NAMES = new Set<string>(['commandStarted', 'commandSucceeded', 'commandFailed'])

/** The commands whose command, reply and failure the official driver replaces with `{}`. */
const SENSITIVE_COMMANDS = new Set([
  'authenticate',
  'saslStart',
  'saslContinue',
  'getnonce',
  'createUser',
  'updateUser',
  'copydbgetnonce',
  'copydbsaslstart',
  'copydb',
])

/** Decodes a command as the official driver holds it: the JS values it serialized. */
function decodeCommand(bytes: Uint8Array, commandName: string): Document {
  if (SENSITIVE_COMMANDS.has(commandName)) return {}
  // Int64 stays a Long, as a Long the user passed in a filter; the crate sends some of its own
  // numeric fields (limit, batchSize, ...) as Int64 where the official driver sends numbers, so
  // those become numbers again. Cursor ids (getMore, killCursors) are Longs in both drivers.
  const command = deserialize(bytes, { promoteLongs: false })
  for (const [key, value] of Object.entries(command)) {
    if (value instanceof Long && key !== 'getMore') command[key] = value.toNumber()
  }
  // The official driver holds a find's sort as a Map (its formatSort).
  if ('find' in command && isPlainObject(command.sort)) command.sort = new Map(Object.entries(command.sort))
  return command
}

function isPlainObject(value: unknown): value is Document {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype
}

/** Decodes a reply as the official driver does (with the default BSON options). */
function decodeReply(bytes: Uint8Array, commandName: string): Document {
  return SENSITIVE_COMMANDS.has(commandName) ? {} : deserialize(bytes)
}

/** The error a failed read rejects with, from its native encoding (see src/error.rs). */
function decodeFailure(encoded: string): Error {
  return translateNativeError(new Error(encoded)) as Error
}

/** A bigint for the server's connection id, as the official driver reports it. */
function serverConnectionId(value: unknown): bigint | null {
  return typeof value === 'number' || value instanceof Long ? BigInt(value.toString()) : null
}

/** An event indicating the start of a given command. */
export class CommandStartedEvent {
  readonly name = 'commandStarted' as const
  address: string
  connectionId?: string | number
  serviceId?: ObjectId
  requestId: number
  databaseName: string
  commandName: string
  command: Document
  serverConnectionId: bigint | null

  /** @internal */
  constructor(raw: RawEvent) {
    this.address = raw.address
    this.connectionId = raw.connectionId
    this.serviceId = raw.serviceId ?? undefined
    this.requestId = raw.requestId
    this.databaseName = raw.databaseName
    this.commandName = raw.commandName
    this.command = raw.decodedCommand ?? decodeCommand(raw.command.buffer, raw.commandName)
    this.serverConnectionId = serverConnectionId(raw.serverConnectionId)
  }
}

/** An event indicating the success of a given command. */
export class CommandSucceededEvent {
  readonly name = 'commandSucceeded' as const
  address: string
  connectionId?: string | number
  serviceId?: ObjectId
  requestId: number
  commandName: string
  /** Milliseconds, from sending the command to reading its reply. */
  duration: number
  reply!: Document
  serverConnectionId: bigint | null
  databaseName: string

  /** @internal */
  constructor(raw: RawEvent) {
    this.address = raw.address
    this.connectionId = raw.connectionId
    this.serviceId = raw.serviceId ?? undefined
    this.requestId = raw.requestId
    this.commandName = raw.commandName
    this.duration = raw.duration
    defineLazyReply(this, raw.reply.buffer, raw.commandName)
    this.serverConnectionId = serverConnectionId(raw.serverConnectionId)
    this.databaseName = raw.databaseName
  }
}

/**
 * Makes `event.reply` decode its bytes on first read, then become the plain data property the
 * official driver's event has, in the same key position: a 10k find's reply is a 10k-document
 * decode that most listeners (APM agents read names and durations) never look at. Reads, writes,
 * `JSON.stringify`, spread and `Object.keys` see what they see on the official event.
 */
function defineLazyReply(event: CommandSucceededEvent, bytes: Uint8Array, commandName: string): void {
  const settle = (value: unknown) => {
    Object.defineProperty(event, 'reply', { value, writable: true, enumerable: true, configurable: true })
  }
  Object.defineProperty(event, 'reply', {
    enumerable: true,
    configurable: true,
    get() {
      const reply = decodeReply(bytes, commandName)
      settle(reply)
      return reply
    },
    set: settle,
  })
}

/** An event indicating the failure of a given command. */
export class CommandFailedEvent {
  readonly name = 'commandFailed' as const
  address: string
  connectionId?: string | number
  serviceId?: ObjectId
  requestId: number
  commandName: string
  /** Milliseconds, from sending the command to its failure. */
  duration: number
  failure: Error
  serverConnectionId: bigint | null
  databaseName: string

  /** @internal */
  constructor(raw: RawEvent) {
    this.address = raw.address
    this.connectionId = raw.connectionId
    this.serviceId = raw.serviceId ?? undefined
    this.requestId = raw.requestId
    this.commandName = raw.commandName
    this.duration = raw.duration
    this.failure = SENSITIVE_COMMANDS.has(raw.commandName) ? ({} as Error) : decodeFailure(raw.failure)
    this.serverConnectionId = serverConnectionId(raw.serverConnectionId)
    this.databaseName = raw.databaseName
  }
}

/** The base of every connection-pool event: when, and which server's pool. */
export abstract class ConnectionPoolMonitoringEvent {
  time: Date
  address: string
  abstract readonly name: string

  /** @internal */
  constructor(raw: RawEvent) {
    this.time = new Date()
    this.address = raw.address
  }
}

/** A connection pool was created. `options` holds the pool options the Rust driver reports. */
export class ConnectionPoolCreatedEvent extends ConnectionPoolMonitoringEvent {
  readonly name = 'connectionPoolCreated' as const
  options: { maxPoolSize?: number; minPoolSize?: number; maxIdleTimeMS?: number }
  /** @internal */
  constructor(raw: RawEvent) {
    super(raw)
    this.options = raw.options
    // `maxPoolSize: 0` (no limit) reaches the Rust driver as its largest pool.
    if (this.options?.maxPoolSize === UNLIMITED_POOL_SIZE) this.options = { ...this.options, maxPoolSize: 0 }
  }
}

/** A connection pool is ready. */
export class ConnectionPoolReadyEvent extends ConnectionPoolMonitoringEvent {
  readonly name = 'connectionPoolReady' as const
}

/** A connection pool was cleared. */
export class ConnectionPoolClearedEvent extends ConnectionPoolMonitoringEvent {
  readonly name = 'connectionPoolCleared' as const
  serviceId?: ObjectId
  interruptInUseConnections?: boolean
  /** @internal */
  constructor(raw: RawEvent) {
    super(raw)
    this.serviceId = raw.serviceId ?? undefined
    this.interruptInUseConnections = raw.interruptInUseConnections
  }
}

/** A connection pool was closed. */
export class ConnectionPoolClosedEvent extends ConnectionPoolMonitoringEvent {
  readonly name = 'connectionPoolClosed' as const
}

/** A connection was created by a pool. */
export class ConnectionCreatedEvent extends ConnectionPoolMonitoringEvent {
  readonly name = 'connectionCreated' as const
  connectionId: number | '<monitor>'
  /** @internal */
  constructor(raw: RawEvent) {
    super(raw)
    this.connectionId = raw.connectionId
  }
}

/** A connection is ready for use (handshake and authentication done). */
export class ConnectionReadyEvent extends ConnectionPoolMonitoringEvent {
  readonly name = 'connectionReady' as const
  connectionId: number | '<monitor>'
  durationMS: number
  /** @internal */
  constructor(raw: RawEvent) {
    super(raw)
    this.connectionId = raw.connectionId
    this.durationMS = raw.durationMS
  }
}

/** A connection was closed. */
export class ConnectionClosedEvent extends ConnectionPoolMonitoringEvent {
  readonly name = 'connectionClosed' as const
  connectionId: number | '<monitor>'
  reason: string
  serviceId?: ObjectId
  error: Error | null
  /** @internal */
  constructor(raw: RawEvent) {
    super(raw)
    this.connectionId = raw.connectionId
    this.reason = raw.reason
    this.serviceId = undefined
    this.error = null
  }
}

/** A request for a connection from the pool started. */
export class ConnectionCheckOutStartedEvent extends ConnectionPoolMonitoringEvent {
  readonly name = 'connectionCheckOutStarted' as const
}

/** A request for a connection from the pool failed. */
export class ConnectionCheckOutFailedEvent extends ConnectionPoolMonitoringEvent {
  readonly name = 'connectionCheckOutFailed' as const
  reason: string
  error?: Error
  durationMS: number
  /** @internal */
  constructor(raw: RawEvent) {
    super(raw)
    this.reason = raw.reason
    this.durationMS = raw.durationMS
  }
}

/** A connection was checked out of the pool. */
export class ConnectionCheckedOutEvent extends ConnectionPoolMonitoringEvent {
  readonly name = 'connectionCheckedOut' as const
  connectionId: number | '<monitor>'
  durationMS: number
  /** @internal */
  constructor(raw: RawEvent) {
    super(raw)
    this.connectionId = raw.connectionId
    this.durationMS = raw.durationMS
  }
}

/** A connection was checked back into the pool. */
export class ConnectionCheckedInEvent extends ConnectionPoolMonitoringEvent {
  readonly name = 'connectionCheckedIn' as const
  connectionId: number | '<monitor>'
  /** @internal */
  constructor(raw: RawEvent) {
    super(raw)
    this.connectionId = raw.connectionId
  }
}

/**
 * A server as the Rust driver describes it: `address`, `type` and, when known, `roundTripTime`,
 * `lastUpdateTime`, `minWireVersion`, `maxWireVersion`, `setName`, `setVersion`, `error`.
 * (The official driver's `ServerDescription` class has more fields.)
 */
export interface ServerDescription {
  address: string
  type: string
  roundTripTime?: number
  lastUpdateTime?: number
  minWireVersion?: number
  maxWireVersion?: number
  setName?: string
  setVersion?: number
  error?: Error
}

/** A deployment as the Rust driver describes it; `servers` is keyed by address. */
export interface TopologyDescription {
  type: string
  servers: Map<string, ServerDescription>
  setName?: string
  maxSetVersion?: number
  maxElectionId?: ObjectId
  compatibilityError?: string
}

function serverDescription(raw: Document): ServerDescription {
  const { error, ...description } = raw
  return error === undefined
    ? (description as ServerDescription)
    : { ...(description as ServerDescription), error: decodeFailure(error) }
}

function topologyDescription(raw: Document): TopologyDescription {
  const servers = new Map<string, ServerDescription>()
  for (const [address, server] of Object.entries(raw.servers as Document)) {
    servers.set(address, serverDescription(server))
  }
  return { ...(raw as TopologyDescription), servers }
}

/** A server's description changed. */
export class ServerDescriptionChangedEvent {
  readonly name = 'serverDescriptionChanged' as const
  topologyId: number
  address: string
  previousDescription: ServerDescription
  newDescription: ServerDescription
  /** @internal */
  constructor(raw: RawEvent, topologyId: number) {
    this.topologyId = topologyId
    this.address = raw.address
    this.previousDescription = serverDescription(raw.previousDescription)
    this.newDescription = serverDescription(raw.newDescription)
  }
}

/** A server was added to the topology. */
export class ServerOpeningEvent {
  readonly name = 'serverOpening' as const
  topologyId: number
  address: string
  /** @internal */
  constructor(raw: RawEvent, topologyId: number) {
    this.topologyId = topologyId
    this.address = raw.address
  }
}

/** A server was removed from the topology. */
export class ServerClosedEvent {
  readonly name = 'serverClosed' as const
  topologyId: number
  address: string
  /** @internal */
  constructor(raw: RawEvent, topologyId: number) {
    this.topologyId = topologyId
    this.address = raw.address
  }
}

/** The topology's description changed. */
export class TopologyDescriptionChangedEvent {
  readonly name = 'topologyDescriptionChanged' as const
  topologyId: number
  previousDescription: TopologyDescription
  newDescription: TopologyDescription
  /** @internal */
  constructor(raw: RawEvent, topologyId: number) {
    this.topologyId = topologyId
    this.previousDescription = topologyDescription(raw.previousDescription)
    this.newDescription = topologyDescription(raw.newDescription)
  }
}

/** A topology was opened. */
export class TopologyOpeningEvent {
  readonly name = 'topologyOpening' as const
  topologyId: number
  /** @internal */
  constructor(_raw: RawEvent, topologyId: number) {
    this.topologyId = topologyId
  }
}

/** A topology was closed. */
export class TopologyClosedEvent {
  readonly name = 'topologyClosed' as const
  topologyId: number
  /** @internal */
  constructor(_raw: RawEvent, topologyId: number) {
    this.topologyId = topologyId
  }
}

/** A monitor's heartbeat (`hello`) started; `connectionId` is the server's address. */
export class ServerHeartbeatStartedEvent {
  readonly name = 'serverHeartbeatStarted' as const
  connectionId: string
  awaited: boolean
  /** @internal */
  constructor(raw: RawEvent) {
    this.connectionId = raw.connectionId
    this.awaited = raw.awaited
  }
}

/** A monitor's heartbeat succeeded. */
export class ServerHeartbeatSucceededEvent {
  readonly name = 'serverHeartbeatSucceeded' as const
  connectionId: string
  duration: number
  reply: Document
  awaited: boolean
  /** @internal */
  constructor(raw: RawEvent) {
    this.connectionId = raw.connectionId
    this.duration = raw.duration
    this.reply = deserialize(raw.reply.buffer)
    this.awaited = raw.awaited
  }
}

/** A monitor's heartbeat failed. */
export class ServerHeartbeatFailedEvent {
  readonly name = 'serverHeartbeatFailed' as const
  connectionId: string
  duration: number
  failure: Error
  awaited: boolean
  /** @internal */
  constructor(raw: RawEvent) {
    this.connectionId = raw.connectionId
    this.duration = raw.duration
    this.failure = decodeFailure(raw.failure)
    this.awaited = raw.awaited
  }
}

const EVENT_CLASSES = {
  commandStarted: CommandStartedEvent,
  commandSucceeded: CommandSucceededEvent,
  commandFailed: CommandFailedEvent,
  connectionPoolCreated: ConnectionPoolCreatedEvent,
  connectionPoolReady: ConnectionPoolReadyEvent,
  connectionPoolCleared: ConnectionPoolClearedEvent,
  connectionPoolClosed: ConnectionPoolClosedEvent,
  connectionCreated: ConnectionCreatedEvent,
  connectionReady: ConnectionReadyEvent,
  connectionClosed: ConnectionClosedEvent,
  connectionCheckOutStarted: ConnectionCheckOutStartedEvent,
  connectionCheckOutFailed: ConnectionCheckOutFailedEvent,
  connectionCheckedOut: ConnectionCheckedOutEvent,
  connectionCheckedIn: ConnectionCheckedInEvent,
  serverOpening: ServerOpeningEvent,
  serverClosed: ServerClosedEvent,
  serverDescriptionChanged: ServerDescriptionChangedEvent,
  topologyOpening: TopologyOpeningEvent,
  topologyClosed: TopologyClosedEvent,
  topologyDescriptionChanged: TopologyDescriptionChangedEvent,
  serverHeartbeatStarted: ServerHeartbeatStartedEvent,
  serverHeartbeatSucceeded: ServerHeartbeatSucceededEvent,
  serverHeartbeatFailed: ServerHeartbeatFailedEvent,
}

/** The name of a monitoring event `MongoClient` emits. */
export type MonitoringEventName = keyof typeof EVENT_CLASSES

/** The events a `MongoClient` emits, with their listener types. */
export type MongoClientEvents = {
  [Name in MonitoringEventName]: (event: InstanceType<(typeof EVENT_CLASSES)[Name]>) => void
}

/** A command monitoring event. */
export type CommandEvent = CommandStartedEvent | CommandSucceededEvent | CommandFailedEvent

/**
 * Where a client's command events are logged (`CommandLogger` in logging.ts, which depends on
 * the events, not the other way round).
 * @internal
 */
export interface CommandLog {
  log(event: CommandEvent): void
}

/**
 * Turns the native event documents of one client into events emitted on it, and keeps the native
 * side told which events have listeners, so that no other event crosses into JS.
 * @internal
 */
export class ClientMonitor {
  readonly #emitter: EventEmitter
  readonly #onMask: (mask: number) => void
  #topologyId = 0
  #lastMask = 0
  /** Makes OpenTelemetry spans from traced command events, while tracing is on. */
  tracer: CommandTracer | null = null
  /** Whether command events are emitted (`monitorCommands`). */
  readonly #monitorCommands: boolean
  /** Writes the structured command log, when it is on: command events then cross for it. */
  readonly #logger: CommandLog | null
  /** How many events crossed from the native client: tests prove none cross without listeners. */
  crossings = 0
  #connected = false
  /** This client's count in `startListening`, while it is connected with command listeners. */
  #listening: { release(): void } | null = null
  /** Commands whose `commandStarted` listener threw: their end events are not emitted. */
  readonly #stoppedCommands = new Set<number>()

  constructor(
    emitter: EventEmitter,
    onMask: (mask: number) => void,
    options: { monitorCommands: boolean; logger: CommandLog | null },
  ) {
    this.#emitter = emitter
    this.#onMask = onMask
    this.#monitorCommands = options.monitorCommands
    this.#logger = options.logger
  }

  /** Whether command events must cross from the native client (emitted or logged). */
  get commandsWanted(): boolean {
    return this.#monitorCommands || this.#logger !== null
  }

  /** Tells the native client which events have listeners now. */
  listenersChanged(): void {
    this.#updateListening()
    const mask = this.mask
    if (mask !== this.#lastMask) {
      this.#lastMask = mask
      this.#onMask(mask)
    }
  }

  /** Which events have listeners, as bits in the native event-name order. */
  get mask(): number {
    let mask = 0
    EVENT_NAMES.forEach((name, bit) => {
      const command = COMMAND_EVENT_NAMES.has(name)
      if (command && this.#logger) mask |= 1 << bit
      if ((!command || this.#monitorCommands) && this.#emitter.listenerCount(name) > 0) mask |= 1 << bit
    })
    return mask
  }

  /** Starts a new topology (one per native connection), numbered as the official driver's. */
  openTopology(): void {
    this.#topologyId = nextTopologyId++
  }

  /** Starts or ends the span of a traced command; keeps what it decoded for the event. */
  #trace(raw: RawEvent): void {
    const tracer = this.tracer
    if (!tracer) return
    const fields = raw as RawEvent & Parameters<CommandTracer['started']>[0]
    if (raw.name === 'commandStarted') {
      raw.decodedCommand = decodeCommand(raw.command.buffer, raw.commandName)
      tracer.started(fields, raw.decodedCommand)
    } else if (raw.name === 'commandFailed') {
      raw.decodedFailure = decodeFailure(raw.failure)
      tracer.ended(fields, raw.decodedFailure)
    } else {
      tracer.ended(fields)
    }
  }

  /**
   * Whether the client is connected: only then do its command listeners make every native call
   * tagged (see `startListening`).
   */
  set connected(connected: boolean) {
    this.#connected = connected
    this.#updateListening()
  }

  #updateListening(): void {
    const listening =
      this.#connected &&
      this.#monitorCommands &&
      [...COMMAND_EVENT_NAMES].some((name) => this.#emitter.listenerCount(name) > 0)
    if (listening && !this.#listening) this.#listening = startListening()
    if (!listening && this.#listening) {
      this.#listening.release()
      this.#listening = null
    }
  }

  /** Receives one native event document (the threadsafe function's JS side). Never throws. */
  readonly receive = (bytes: Buffer): void => {
    this.crossings++
    let raw: RawEvent
    let event: object
    try {
      raw = deserialize(bytes) as RawEvent
    } catch (error) {
      warn('a monitoring event could not be decoded', error)
      return
    }
    if (raw.trace !== undefined) {
      try {
        this.#trace(raw)
      } catch (error) {
        warn('a command span could not be recorded', error)
      }
    }
    // A command event that only crossed for its span.
    if (raw.listened === false) return
    try {
      event = new EVENT_CLASSES[raw.name](raw, this.#topologyId)
    } catch (error) {
      warn('a monitoring event could not be decoded', error)
      return
    }
    const name = (event as { name: MonitoringEventName }).name
    if (COMMAND_EVENT_NAMES.has(name)) {
      this.#commandEvent(event as CommandEvent, typeof raw.trace === 'number' ? raw.trace : 0)
      return
    }
    const failure = emitGuarded(this.#emitter, name, event)
    // What the event describes happened on another thread, out of any call's reach.
    if (failure) warn(`a '${name}' listener threw`, failure.thrown)
  }

  /**
   * Logs and emits a command event. A listener that throws fails the call that ran the command,
   * as in the official driver, which emits inside the command: a throwing `commandStarted`
   * listener stops the command there (no end event follows), a throwing `commandSucceeded`
   * listener turns it into a failure (`commandFailed` with what it threw). What a listener threw
   * after its call settled can only be reported (`process.emitWarning`).
   */
  #commandEvent(event: CommandEvent, tag: number): void {
    if (this.#logger) {
      try {
        this.#logger.log(event)
      } catch (error) {
        warn('the command log failed', error)
      }
    }
    if (!this.#monitorCommands) return
    if (event.name !== 'commandStarted' && this.#stoppedCommands.delete(event.requestId)) return
    const failure = emitGuarded(this.#emitter, event.name, event)
    if (!failure) return
    this.#failCall(tag, event, failure.thrown)
    if (event.name === 'commandStarted') {
      // Bounded: an end event that never crosses (no listener for it) leaves its id here.
      if (this.#stoppedCommands.size >= STOPPED_COMMANDS_KEPT) this.#stoppedCommands.clear()
      this.#stoppedCommands.add(event.requestId)
    } else if (event.name === 'commandSucceeded') {
      const failed = commandFailedFrom(event, failure.thrown)
      const again = emitGuarded(this.#emitter, 'commandFailed', failed)
      // The official driver emits it in its catch block: a throw there propagates instead.
      if (again) this.#failCall(tag, failed, again.thrown, true)
    }
  }

  /**
   * Fails the call tagged `tag` with what a listener threw, or reports it once that call settled.
   * Never a cleanup command's call: the official driver squashes the errors of its killCursors
   * and endSessions (a cursor's or the client's `close()` does not reject for them).
   */
  #failCall(tag: number, event: CommandEvent, thrown: unknown, replaces = false): void {
    const failsCall = !CLEANUP_COMMANDS.has(event.commandName)
    if (!failsCall || !recordListenerFailure(tag, thrown, replaces)) {
      warn(`a '${event.name}' listener threw`, thrown)
    }
  }
}

/** Commands whose failure the official driver squashes: a listener's throw cannot fail their call. */
const CLEANUP_COMMANDS = new Set(['killCursors', 'endSessions'])

/** How many commands stopped by their `commandStarted` listener are remembered (see `#commandEvent`). */
const STOPPED_COMMANDS_KEPT = 1024

/** Emits `event`; what a listener threw (anything, `undefined` too), or null. */
function emitGuarded(emitter: EventEmitter, name: string, event: object): { thrown: unknown } | null {
  try {
    emitter.emit(name, event)
    return null
  } catch (thrown) {
    return { thrown }
  }
}

/** The `commandFailed` the official driver emits when a `commandSucceeded` listener threw `thrown`. */
function commandFailedFrom(succeeded: CommandSucceededEvent, thrown: unknown): CommandFailedEvent {
  const failed = Object.create(CommandFailedEvent.prototype) as CommandFailedEvent
  Object.assign(failed, {
    name: 'commandFailed',
    address: succeeded.address,
    connectionId: succeeded.connectionId,
    serviceId: succeeded.serviceId,
    requestId: succeeded.requestId,
    commandName: succeeded.commandName,
    duration: succeeded.duration,
    failure: thrown,
    serverConnectionId: succeeded.serverConnectionId,
    databaseName: succeeded.databaseName,
  })
  return failed
}

/**
 * Reports what cannot fail a call (a listener of an event no call waits for, a log destination):
 * a process warning, which itself never throws, whatever was thrown (`process.emitWarning` takes
 * only a string or an Error).
 */
function warn(what: string, thrown: unknown): void {
  try {
    process.emitWarning(`rumongo: ${what}: ${describeThrown(thrown)}`)
  } catch {
    // Nothing is left to report to; the process goes on.
  }
}

let nextTopologyId = 0
