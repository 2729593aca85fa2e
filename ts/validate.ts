/**
 * Argument validation shared by the public API: how a value is described in an error message, and
 * the checks several entry points make (a filter, a plain object, a function, a name, a count, a
 * timeout), each failing with `MongoInvalidArgumentError` as the official driver does.
 * @module
 */
import type { Document } from 'bson'
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

/** A filter must be a plain object; an ObjectId means `{ _id: id }` (as in the official driver). */
export function checkFilter(filter: unknown): Document {
  if (isPlainObject(filter)) return filter
  if (typeof filter === 'object' && filter !== null && (filter as Document)._bsontype === 'ObjectId') {
    return { _id: filter }
  }
  throw new MongoInvalidArgumentError(
    `Query filter must be a plain object or ObjectId, got ${describe(filter)}`,
  )
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
