/**
 * Filter sanitizing (`Model.sanitizeFilter`, `Model.trusted`), as Mongoose's `sanitizeFilter`.
 * @module
 */
import type { Document } from 'bson'
import { MongoInvalidArgumentError } from '../errors.js'
import { defineField } from './query.js'
import { isPlainObject } from '../validate.js'

/** Operators that run code or arbitrary expressions on the server. */
export const UNSAFE_OPERATORS = new Set(['$where', '$function', '$accumulator', '$expr'])
/** Operators Mongoose's `sanitizeFilter` always refuses. */
export const SANITIZE_REFUSED = new Set(['$where', '$expr', '$jsonSchema', '$text'])
/** Operators whose values are lists of filters. */
export const LOGICAL_OPERATORS = new Set(['$and', '$or', '$nor'])

/** The mark `Model.trusted()` sets. */
export const TRUSTED = Symbol('rumongo.trusted')
/** The description of the symbol `mongoose.trusted()` sets (a private symbol of Mongoose's). */
export const MONGOOSE_TRUSTED = 'mongoose#trustedSymbol'

export function isTrusted(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false
  if ((value as { [TRUSTED]?: boolean })[TRUSTED] === true) return true
  return Object.getOwnPropertySymbols(value).some(
    (symbol) => symbol.description === MONGOOSE_TRUSTED && (value as Record<symbol, unknown>)[symbol],
  )
}

/** As Mongoose's `sanitizeFilter` (lib/helpers/query/sanitizeFilter.js), on a copy. */
export function sanitize(filter: unknown): unknown {
  if (Array.isArray(filter)) return filter.map(sanitize)
  if (!isPlainObject(filter)) return filter
  const sanitized: Document = {}
  for (const [key, value] of Object.entries(filter)) {
    let result = value
    if (isTrusted(value)) result = value
    else if (LOGICAL_OPERATORS.has(key)) result = sanitize(value)
    else if (SANITIZE_REFUSED.has(key)) {
      throw new MongoInvalidArgumentError(`${key} is not allowed with sanitizeFilter`)
    } else if (hasOperatorKeys(value) && !isOnlyEq(value)) result = { $eq: value }
    defineField(sanitized, key, result)
  }
  return sanitized
}

export function hasOperatorKeys(value: unknown): boolean {
  return typeof value === 'object' && value !== null && Object.keys(value).some((key) => key.startsWith('$'))
}

/** Already a literal match: wrapping it again would change nothing but the server's reading. */
export function isOnlyEq(value: object): boolean {
  const keys = Object.keys(value)
  return keys.length === 1 && keys[0] === '$eq'
}

/**
 * Throws on an unsafe operator anywhere but inside `$eq` (whose value is a literal, never evaluated),
 * trusted values included: the option is a second line of defence behind sanitizing.
 */
export function rejectUnsafeOperators(value: unknown): void {
  if (Array.isArray(value)) {
    for (const item of value) rejectUnsafeOperators(item)
    return
  }
  if (!isPlainObject(value)) return
  for (const [key, child] of Object.entries(value)) {
    if (UNSAFE_OPERATORS.has(key)) {
      throw new MongoInvalidArgumentError(`the operator ${key} is not allowed in a sanitized filter`)
    }
    if (key !== '$eq') rejectUnsafeOperators(child)
  }
}
