/**
 * The official driver's structured log for the command component: `MONGODB_LOG_COMMAND` /
 * `MONGODB_LOG_ALL` (or `mongodbLogComponentSeverities`) at `debug` or `trace` log every command's
 * start, success and failure with the official messages and fields, to `MONGODB_LOG_PATH` /
 * `mongodbLogPath` (stderr by default), documents as relaxed Extended JSON cut at
 * `MONGODB_LOG_MAX_DOCUMENT_LENGTH` / `mongodbLogMaxDocumentLength` (1000) characters.
 * @module
 */
import { inspect } from 'node:util'
import { EJSON, type Document } from 'bson'
import type { CommandEvent, CommandLog } from './events.js'
import { describeThrown } from './validate.js'

/** The official driver's severity levels, most severe first. */
const SEVERITIES = [
  'off',
  'emergency',
  'alert',
  'critical',
  'error',
  'warn',
  'notice',
  'info',
  'debug',
  'trace',
]

/** The severity command events are logged at. */
const COMMAND_SEVERITY = 'debug'

const DEFAULT_MAX_DOCUMENT_LENGTH = 1000

/** A log record: `t` (time), `c` (component), `s` (severity), `message` and the event's fields. */
export type Log = Record<string, any>

/** Where logs go: an object with a `write(log)` method (a promise it returns is awaited in order). */
export interface MongoDBLogWritable {
  write(log: Log): PromiseLike<unknown> | unknown
}

/** Per-component log severities, as the official driver's `mongodbLogComponentSeverities`. */
export interface LogComponentSeveritiesClientOptions {
  command?: string
  topology?: string
  serverSelection?: string
  connection?: string
  client?: string
  default?: string
}

/** The client options of the structured log. */
export interface LoggingOptions {
  mongodbLogPath?: 'stderr' | 'stdout' | MongoDBLogWritable
  mongodbLogComponentSeverities?: LogComponentSeveritiesClientOptions
  mongodbLogMaxDocumentLength?: number
}

function parseSeverity(value: unknown): string | null {
  const severity = typeof value === 'string' ? value.toLowerCase() : null
  return severity !== null && SEVERITIES.includes(severity) ? severity : null
}

function parseUnsignedInteger(value: unknown): number | null {
  const parsed = typeof value === 'string' ? Number.parseInt(value, 10) : NaN
  return Number.isInteger(parsed) && parsed >= 0 ? parsed : null
}

function stdio(stream: NodeJS.WriteStream): MongoDBLogWritable {
  return {
    write: (log: Log) =>
      new Promise((resolve, reject) => {
        const line = inspect(log, { compact: true, breakLength: Infinity })
        stream.write(`${line}\n`, 'utf-8', (error) => (error ? reject(error) : resolve(true)))
      }),
  }
}

function destination(path: LoggingOptions['mongodbLogPath'], env: NodeJS.ProcessEnv): MongoDBLogWritable {
  if (typeof path === 'string' && /^stderr$/i.test(path)) return stdio(process.stderr)
  if (typeof path === 'string' && /^stdout$/i.test(path)) return stdio(process.stdout)
  if (typeof path === 'object' && typeof path?.write === 'function') return path
  if (env.MONGODB_LOG_PATH && /^stdout$/i.test(env.MONGODB_LOG_PATH)) return stdio(process.stdout)
  return stdio(process.stderr)
}

/** `value` as relaxed Extended JSON, cut at `maxLength` characters (0: no limit) with "...". */
function stringifyWithMaxLength(value: unknown, maxLength: number): string {
  let text: string
  try {
    text = EJSON.stringify(value as Document, { relaxed: true })
  } catch (error) {
    text = `Extended JSON serialization failed with: ${(error as Error).message}`
  }
  if (maxLength === 0 || text.length <= maxLength) return text
  // Do not cut a surrogate pair in two.
  let cut = maxLength
  if (text.charCodeAt(cut - 1) !== text.codePointAt(cut - 1)) cut--
  return cut === 0 ? '' : `${text.slice(0, cut)}...`
}

/** Writes one client's command log. */
export class CommandLogger implements CommandLog {
  readonly #destination: MongoDBLogWritable
  readonly #maxDocumentLength: number
  #pending: PromiseLike<unknown> | null = null
  #halted = false

  private constructor(destination: MongoDBLogWritable, maxDocumentLength: number) {
    this.#destination = destination
    this.#maxDocumentLength = maxDocumentLength
  }

  /** The command logger the options and environment ask for, or `null` when the component is off. */
  static resolve(options: LoggingOptions, env: NodeJS.ProcessEnv = process.env): CommandLogger | null {
    const severities = options.mongodbLogComponentSeverities
    const defaultSeverity = parseSeverity(severities?.default) ?? parseSeverity(env.MONGODB_LOG_ALL) ?? 'off'
    const command =
      parseSeverity(severities?.command) ?? parseSeverity(env.MONGODB_LOG_COMMAND) ?? defaultSeverity
    if (command === 'off' || SEVERITIES.indexOf(command) < SEVERITIES.indexOf(COMMAND_SEVERITY)) return null
    const maxDocumentLength =
      options.mongodbLogMaxDocumentLength ??
      parseUnsignedInteger(env.MONGODB_LOG_MAX_DOCUMENT_LENGTH) ??
      DEFAULT_MAX_DOCUMENT_LENGTH
    return new CommandLogger(destination(options.mongodbLogPath, env), maxDocumentLength)
  }

  log(event: CommandEvent): void {
    if (this.#halted) return
    const log: Log = {}
    log.t = new Date()
    log.c = 'command'
    log.s = COMMAND_SEVERITY
    log.commandName = event.commandName
    log.requestId = event.requestId
    log.driverConnectionId = event.connectionId
    const separator = event.address.lastIndexOf(':')
    log.serverHost = event.address.slice(0, separator).replace(/^\[(.*)\]$/, '$1')
    log.serverPort = Number(event.address.slice(separator + 1))
    if (event.serviceId) log.serviceId = event.serviceId.toHexString()
    log.databaseName = event.databaseName
    log.serverConnectionId = event.serverConnectionId
    if (event.name === 'commandStarted') {
      log.message = 'Command started'
      log.command = stringifyWithMaxLength(event.command, this.#maxDocumentLength)
      log.databaseName = event.databaseName
    } else if (event.name === 'commandSucceeded') {
      log.message = 'Command succeeded'
      log.durationMS = event.duration
      log.reply = stringifyWithMaxLength(event.reply, this.#maxDocumentLength)
    } else {
      log.message = 'Command failed'
      log.durationMS = event.duration
      log.failure = event.failure?.message ?? '(redacted)'
    }
    this.#write(log)
  }

  /** Writes in order; a destination that fails halts this client's log (reported once). */
  #write(log: Log): void {
    const write = () => this.#destination.write(log)
    const halt = (error: unknown) => {
      this.#halted = true
      process.emitWarning(
        `rumongo: the MongoDB log destination failed, logging is halted: ${describeThrown(error)}`,
      )
    }
    try {
      const result = this.#pending ? this.#pending.then(write) : write()
      if (result && typeof (result as PromiseLike<unknown>).then === 'function') {
        const pending: PromiseLike<unknown> = (result as PromiseLike<unknown>).then(
          () => {
            if (this.#pending === pending) this.#pending = null
          },
          (error: unknown) => halt(error),
        )
        this.#pending = pending
      }
    } catch (error) {
      halt(error)
    }
  }
}
