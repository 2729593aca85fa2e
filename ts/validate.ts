/**
 * Argument validation shared by the public API: how a value is described in an error message, and
 * the checks several entry points make (a filter, a plain object, a function, a name, a count, a
 * timeout), each failing with `MongoInvalidArgumentError` as the official driver does.
 * @module
 */
import { BSONError, type Document } from 'bson'
import { MongoInvalidArgumentError } from './errors.js'

/**
 * A short description of a value for error messages: `undefined`, `null`, `a string ("abc")`,
 * `a number (NaN)`, `an array`, `an object (Date)`, `a function (run)`. A string is quoted (so an
 * empty or blank one shows) and cut to 40 characters.
 */
export function describe(value: unknown): string {
  if (value === undefined || value === null) return String(value)
  if (Array.isArray(value)) return 'an array'
  switch (typeof value) {
    case 'object':
      return `an object (${value.constructor?.name ?? 'null prototype'})`
    case 'string':
      return `a string (${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value)})`
    case 'function':
      return `a function (${value.name || 'anonymous'})`
    case 'bigint':
      return `a bigint (${value}n)`
    case 'symbol':
      return `a symbol (${value.description ?? ''})`
    default:
      return `a ${typeof value} (${String(value)})`
  }
}

/**
 * `describe` for a value anything may have thrown, `Error`s as `name: message`: never throws itself
 * (a getter that throws, a revoked Proxy).
 */
export function describeThrown(value: unknown): string {
  try {
    return value instanceof Error ? `${value.name}: ${value.message}` : describe(value)
  } catch {
    return 'a value that cannot be described'
  }
}

/**
 * A value in an error message as the official driver writes it (`JSON.stringify`), or its
 * description when it has no JSON text (a cycle, a bigint, a symbol, too deep for the stack):
 * the message of a bad argument must never become a `TypeError` of its own.
 */
export function jsonForMessage(value: unknown): string {
  try {
    return JSON.stringify(value) ?? describe(value)
  } catch {
    return describe(value)
  }
}

/** A filter must be a plain object; an ObjectId means `{ _id: id }` (as in the official driver). */
export function checkFilter(filter: unknown): Document {
  if (isPlainObject(filter)) return filter
  if (typeof filter === 'object' && bsonTypeOf(filter) === 'ObjectId') {
    return { _id: filter }
  }
  throw new MongoInvalidArgumentError(
    `Query filter must be a plain object or ObjectId, got ${describe(filter)}`,
  )
}

/** A BSON value's type name (`'Timestamp'`, `'Long'`, ...), of either copy of js-bson; else undefined. */
export function bsonTypeOf(value: unknown): string | undefined {
  const bsonType = (value as { _bsontype?: unknown } | null | undefined)?._bsontype
  return typeof bsonType === 'string' ? bsonType : undefined
}

/** True for `{...}` objects (any prototype but arrays, Maps and BSON values). */
export function isPlainObject(value: unknown): value is Document {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof Map) &&
    !('_bsontype' in value)
  )
}

/** The error js-bson (and so the official driver) gives for a document that contains itself. */
export function circularError(): BSONError {
  return new BSONError('Cannot convert circular structure to BSON')
}

/**
 * The deepest nesting of documents and arrays rumongo sends (the outermost document is level 1).
 * Deeper, the native side's parsers (the Rust `bson` crate's, the driver's serializer), which
 * recurse per level, exhaust a thread's stack at a few thousand levels and kill the process;
 * servers refuse far less (MongoDB: 100 levels in a document, 200 in a command), so no query a
 * server answers is refused here.
 */
export const MAX_BSON_DEPTH = 1000

/** The error for a document nested deeper than {@link MAX_BSON_DEPTH}. */
export function tooDeepError(): MongoInvalidArgumentError {
  return new MongoInvalidArgumentError(
    `a document nested deeper than ${MAX_BSON_DEPTH} levels cannot be sent (servers take at most 200)`,
  )
}

/** What a walk descends into: the containers js-bson serializes as documents or arrays. */
function isContainer(value: unknown): value is object {
  return Array.isArray(value) || value instanceof Map || isPlainObject(value)
}

function entriesOf(container: object): [string, unknown][] {
  if (Array.isArray(container)) return container.map((item, index) => [String(index), item])
  if (container instanceof Map) return [...container].map(([key, value]) => [String(key), value])
  return Object.entries(container)
}

/**
 * Calls `visit(key, value, parent)` for every value nested in `root` (object fields, array items,
 * Map entries), a parent before its children, and descends into the value's own fields unless
 * `visit` returns false. Walked from a list, not by recursion. A value that contains one of its
 * own ancestors fails as js-bson fails on it: `BSONError: Cannot convert circular structure to
 * BSON`, the error the official driver gives for it (a value met twice side by side is not
 * circular); one nested deeper than {@link MAX_BSON_DEPTH} fails as `toBSON` would refuse it.
 */
export function walkDocument(
  root: unknown,
  visit: (key: string, value: unknown, parent: object) => boolean | void = () => true,
): void {
  if (!isContainer(root)) return
  const ancestors = new Set<object>([root])
  const stack = [{ container: root, entries: entriesOf(root), next: 0 }]
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]
    if (frame.next === frame.entries.length) {
      ancestors.delete(frame.container)
      stack.pop()
      continue
    }
    const [key, value] = frame.entries[frame.next++]
    if (visit(key, value, frame.container) === false || !isContainer(value)) continue
    if (ancestors.has(value)) throw circularError()
    if (stack.length === MAX_BSON_DEPTH) throw tooDeepError()
    ancestors.add(value)
    stack.push({ container: value, entries: entriesOf(value), next: 0 })
  }
}

/**
 * Throws the official driver's `BSONError` for a document that contains itself (and `toBSON`'s
 * error for one too deep to send), before code that walks it for another purpose (a batch-size
 * key's JSON, a sort) meets the cycle or the depth with an error of its own.
 */
export function checkAcyclic(document: unknown): void {
  walkDocument(document)
}

export function checkFunction(method: string, value: unknown): void {
  if (typeof value !== 'function') {
    throw new MongoInvalidArgumentError(`${method} expects a function, got ${describe(value)}`)
  }
}

export function checkName(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new MongoInvalidArgumentError(`${what} name must be a non-empty string, got ${describe(value)}`)
  }
  return value
}

/** A `timeoutMS` option: a non-negative number of ms (0: no limit). */
export function checkTimeout(value: unknown, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new MongoInvalidArgumentError(`timeoutMS must be a non-negative number, got ${describe(value)}`)
  }
  return value
}

export function checkCount(value: unknown, what: string, fallback: number): number {
  if (value === undefined) return fallback
  if (!Number.isSafeInteger(value) || (value as number) < 1) {
    throw new MongoInvalidArgumentError(`${what} must be a positive integer, got ${describe(value)}`)
  }
  return value as number
}
