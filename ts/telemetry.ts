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

/** How many connected clients make spans: 0 keeps every native call free of any tracing work. */
let tracingClients = 0

/** The caller's context of each tagged native call, until its commands' events have come back. */
const contexts = new Map<number, unknown>()
let nextTag = 1
/** How long a tag outlives its native call, for command events still in the queue. */
const TAG_GRACE_MS = 10_000

/** Counts a client that makes spans (until `release` is called). */
export function startTracing(): { release(): void } {
  tracingClients++
  let released = false
  return {
    release() {
      if (!released) tracingClients--
      released = true
    },
  }
}

/**
 * Runs a native call tagged with the caller's context when some client traces and a span is
 * active (`requireParentSpan`, as the instrumentation's default), untagged otherwise.
 */
export function withTraceTag<T>(call: () => T): T {
  if (tracingClients === 0) return call()
  const otel = openTelemetry()!
  const context = otel.context.active()
  if (otel.trace.getSpan(context) === undefined) return call()
  const tag = nextTag === 0xffffffff ? (nextTag = 1) : nextTag++
  contexts.set(tag, context)
  traceNextCalls(tag)
  try {
    return call()
  } finally {
    traceNextCalls(0)
    setTimeout(() => contexts.delete(tag), TAG_GRACE_MS).unref()
  }
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
