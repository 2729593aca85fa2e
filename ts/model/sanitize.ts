/**
 * Filter sanitizing (`Model.sanitizeFilter`, `Model.trusted`), as Mongoose's `sanitizeFilter`.
 * @module
 */
import type { Document } from 'bson'
import { MongoInvalidArgumentError } from '../errors.js'
import { defineField } from './query.js'
import { circularError, isPlainObject, walkDocument } from '../validate.js'

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

/**
 * As Mongoose's `sanitizeFilter` (lib/helpers/query/sanitizeFilter.js), on a copy. It descends into
 * arrays and the lists of `$and`/`$or`/`$nor`, from a list rather than by recursion, so a filter
 * of any depth is sanitized; a filter that contains itself fails as the official driver fails to
 * send it (`BSONError`).
 */
export function sanitize(filter: unknown): unknown {
  let result: unknown
  // Each task sanitizes `source` and hands the copy to `put`; `leave` ends a container's walk.
  type Task = { source: unknown; put: (copy: unknown) => void } | { leave: object }
  const tasks: Task[] = [{ source: filter, put: (copy) => (result = copy) }]
  const ancestors = new Set<object>()
  while (tasks.length > 0) {
    const task = tasks.pop()!
    if ('leave' in task) {
      ancestors.delete(task.leave)
      continue
    }
    const { source, put } = task
    if (!Array.isArray(source) && !isPlainObject(source)) {
      put(source)
      continue
    }
    if (ancestors.has(source)) throw circularError()
    ancestors.add(source)
    tasks.push({ leave: source })
    if (Array.isArray(source)) {
      const copy: unknown[] = new Array(source.length)
      put(copy)
      source.forEach((item, index) => tasks.push({ source: item, put: (value) => (copy[index] = value) }))
      continue
    }
    const sanitized: Document = {}
    put(sanitized)
    for (const [key, value] of Object.entries(source)) {
      if (isTrusted(value)) defineField(sanitized, key, value)
      else if (LOGICAL_OPERATORS.has(key)) {
        // Holds the key's place; the list's copy replaces it.
        defineField(sanitized, key, undefined)
        tasks.push({ source: value, put: (copy) => defineField(sanitized, key, copy) })
      } else if (SANITIZE_REFUSED.has(key)) {
        throw new MongoInvalidArgumentError(`${key} is not allowed with sanitizeFilter`)
      } else {
        defineField(sanitized, key, hasOperatorKeys(value) && !isOnlyEq(value) ? { $eq: value } : value)
      }
    }
  }
  return result
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
 * trusted values included: the option is a second line of defence behind sanitizing. Walked from a
 * list (`walkDocument`), so a filter of any depth is checked.
 */
export function rejectUnsafeOperators(value: unknown): void {
  walkDocument(value, (key, _child, parent) => {
    if (Array.isArray(parent)) return true
    if (UNSAFE_OPERATORS.has(key)) {
      throw new MongoInvalidArgumentError(`the operator ${key} is not allowed in a sanitized filter`)
    }
    return key !== '$eq'
  })
}
