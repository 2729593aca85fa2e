/**
 * OpenTelemetry spans for rumongo's commands, the spans `@opentelemetry/instrumentation-mongodb`
 * makes for the official driver (one CLIENT span per command, same name and attributes), when the
 * optional peer dependency `@opentelemetry/api` is installed and a tracer provider is registered.
 *
 * A read's commands run on tokio threads, where the caller's context is unknown: each native call
 * made in a context with an active span is tagged (`traceNextCalls`), its command events come back
 * with the tag and the time they happened, and the spans are made from them under that context.
 * @module
 */
import { createRequire } from 'node:module'
import type { Document } from 'bson'
import { traceNextCalls } from './native.cjs'

/** The parts of `@opentelemetry/api` used here (typed locally: the package is optional). */
interface OpenTelemetryApi {
  trace: {
    getTracerProvider(): { getDelegate?(): object }
    getTracer(name: string, version?: string): Tracer
    getSpan(context: unknown): unknown
  }
  context: { active(): unknown }
  SpanKind: { CLIENT: number }
  SpanStatusCode: { ERROR: number }
}

interface Tracer {
  startSpan(
    name: string,
    options: { kind: number; attributes: Record<string, unknown>; startTime?: number },
    context?: unknown,
  ): Span
}

interface Span {
  setStatus(status: { code: number; message?: string }): void
  end(endTime?: number): void
}

let api: OpenTelemetryApi | null | undefined

/** `@opentelemetry/api` when the application installed it; loaded on first use only. */
function openTelemetry(): OpenTelemetryApi | null {
  if (api === undefined) {
    try {
      api = createRequire(__filename)('@opentelemetry/api') as OpenTelemetryApi
    } catch {
      api = null
    }
  }
  return api
}

/** Whether spans would be recorded: the API is installed and a tracer provider is registered. */
export function tracerProviderRegistered(): boolean {
  const otel = openTelemetry()
  if (!otel) return false
  const provider = otel.trace.getTracerProvider()
  const delegate = provider.getDelegate?.() ?? provider
  return delegate.constructor.name !== 'NoopTracerProvider'
}

/** Connected clients counted while they hold a claim: `start()` takes one, `release()` ends it. */
function clientCount() {
  const counted = { clients: 0, start }
  function start(): { release(): void } {
    counted.clients++
    let released = false
    return {
      release() {
        if (!released) counted.clients--
        released = true
      },
    }
  }
  return counted
}

/** How many connected clients make spans: 0 keeps every native call free of any tracing work. */
const tracing = clientCount()

/** The caller's context of each tagged native call, until its commands' events have come back. */
const contexts = new Map<number, unknown>()
let nextTag = 1
/**
 * Added to the tag of a call whose commands make spans: their events then cross even without a
 * listener (src/events.rs reads the same bit). A tag without it only names the call.
 */
const SPAN_TAG = 0x80000000
/** How long a tag outlives its native call, for command events still in the queue. */
const TAG_GRACE_MS = 10_000

/** Counts a client that makes spans (until `release` is called). */
export const startTracing = tracing.start

/**
 * How many connected clients emit command events to listeners: while one does, every native call
 * is tagged, so that a listener that throws on a command's event fails the call that ran the
 * command, as in the official driver (see `listenerFailure`).
 */
const listening = clientCount()

/** Counts a client whose command events have listeners (until `release` is called). */
export const startListening = listening.start

/** What a command listener threw (anything: `undefined` too). */
export interface ListenerFailure {
  thrown: unknown
}

/** The tagged calls in flight that listeners may fail, with the first failure of each. */
const listenedCalls = new Map<number, ListenerFailure | null>()

/**
 * Records that a listener threw `thrown` on an event of the call tagged `tag`; false when that
 * call has settled already (or was never tagged), so that the caller reports it another way. The
 * first failure stands, as the official driver stops at it, unless `replaces` (a throw while the
 * official driver is already reporting the first one as the command's failure: it propagates
 * instead).
 */
export function recordListenerFailure(tag: number, thrown: unknown, replaces = false): boolean {
  if (!listenedCalls.has(tag)) return false
  if (replaces || listenedCalls.get(tag) === null) listenedCalls.set(tag, { thrown })
  return true
}

/**
 * The failure of a listener on the events of the call tagged `tag`, once the call has settled;
 * the tag is forgotten. Events come through a queue of their own, not the one that settles
 * calls: one turn of the event loop lets those the call sent before it settled be handled first.
 */
export async function listenerFailure(tag: number): Promise<ListenerFailure | null> {
  await new Promise<void>((resolve) => setImmediate(resolve))
  const failure = listenedCalls.get(tag) ?? null
  listenedCalls.delete(tag)
  return failure
}

/** A native call's result, and its tag when listeners may fail it (else 0). */
export interface TaggedCall<T> {
  result: T
  listenedTag: number
}

/**
 * Runs a native call tagged with the caller's context when some client traces and a span is
 * active (`requireParentSpan`, as the instrumentation's default), and, unless `listened` is false,
 * tagged for its listeners' failures while some client has command listeners; untagged otherwise.
 */
export function withCallTag<T>(call: () => T, options = { listened: true }): TaggedCall<T> {
  const context = tracing.clients === 0 ? undefined : activeSpanContext()
  const listened = options.listened && listening.clients > 0
  if (context === undefined && !listened) return { result: call(), listenedTag: 0 }
  const number = nextTag === SPAN_TAG - 1 ? (nextTag = 1) : nextTag++
  const tag = context === undefined ? number : number + SPAN_TAG
  if (context !== undefined) {
    contexts.set(tag, context)
    setTimeout(() => contexts.delete(tag), TAG_GRACE_MS).unref()
  }
  if (listened) listenedCalls.set(tag, null)
  traceNextCalls(tag)
  try {
    return { result: call(), listenedTag: listened ? tag : 0 }
  } catch (error) {
    listenedCalls.delete(tag)
    throw error
  } finally {
    traceNextCalls(0)
  }
}

/** The active context when it has a span (the instrumentation's `requireParentSpan`). */
function activeSpanContext(): unknown {
  const otel = openTelemetry()!
  const context = otel.context.active()
  return otel.trace.getSpan(context) === undefined ? undefined : context
}

/** Command fields the official driver adds when it sends a command (not in the instrumentation's statement). */
const SENT_FIELDS = new Set([
  '$db',
  'lsid',
  '$clusterTime',
  '$readPreference',
  'txnNumber',
  'autocommit',
  'startTransaction',
  'apiVersion',
  'apiStrict',
  'apiDeprecationErrors',
])

/** The instrumentation's default `db.query.text`: the command with every value replaced by "?". */
function statement(command: Document): string {
  const seen = new WeakSet<object>()
  return JSON.stringify(command, (_key, value) => {
    if (typeof value !== 'object' || !value) return '?'
    if (seen.has(value)) return '[Circular]'
    seen.add(value)
    return value
  })
}

/**
 * The collection part of the namespace the official driver sends `command` on, which the
 * instrumentation reports: the collection for a cursor's find, getMore and killCursors, `$cmd`
 * for the other commands (aggregate, count, distinct run on `db.$cmd`).
 */
function namespaceCollection(commandName: string, command: Document): unknown {
  switch (commandName) {
    case 'find':
      return command.find
    case 'getMore':
      return command.collection
    case 'killCursors':
      return command.killCursors
    default:
      return '$cmd'
  }
}

/** What a command event carries for its span. */
interface CommandEventFields {
  trace: number
  time: number
  requestId: number
  commandName: string
  databaseName: string
  address: string
}

/** Makes one client's command spans from its command events. */
export class CommandTracer {
  readonly #tracer: Tracer
  readonly #otel: OpenTelemetryApi
  readonly #spans = new Map<number, Span>()

  constructor() {
    this.#otel = openTelemetry()!
    this.#tracer = this.#otel.trace.getTracer('rumongo')
  }

  started(event: CommandEventFields, command: Document): void {
    if (!contexts.has(event.trace)) return
    const collection = namespaceCollection(event.commandName, command)
    const attributes: Record<string, unknown> = {
      'db.system.name': 'mongodb',
      'db.namespace': event.databaseName,
      'db.operation.name': event.commandName,
    }
    if (typeof collection === 'string') attributes['db.collection.name'] = collection
    const [host, port] = event.address.split(':')
    if (host && port && event.address.split(':').length === 2) {
      attributes['server.address'] = host
      const portNumber = parseInt(port, 10)
      if (!isNaN(portNumber)) attributes['server.port'] = portNumber
    }
    const sent: Document = {}
    for (const [key, value] of Object.entries(command)) if (!SENT_FIELDS.has(key)) sent[key] = value
    attributes['db.query.text'] = statement(event.commandName === 'killCursors' ? sent.cursors : sent)
    const name =
      [attributes['db.operation.name'], attributes['db.collection.name']].filter(Boolean).join(' ') ||
      'mongodb'
    const span = this.#tracer.startSpan(
      name,
      { kind: this.#otel.SpanKind.CLIENT, attributes, startTime: event.time },
      contexts.get(event.trace),
    )
    this.#spans.set(event.requestId, span)
  }

  ended(event: CommandEventFields, failure?: Error): void {
    const span = this.#spans.get(event.requestId)
    if (!span) return
    this.#spans.delete(event.requestId)
    if (failure) span.setStatus({ code: this.#otel.SpanStatusCode.ERROR, message: failure.message })
    span.end(event.time)
  }
}
