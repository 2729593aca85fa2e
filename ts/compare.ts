/**
 * Exact comparison of query results, as shadow mode needs it: values and types (class and BSON
 * type), key order, `NaN` equal to itself, `-0` different from `0`. Reports the first difference.
 * @module
 */
import { MongoInvalidArgumentError } from './errors.js'
import { bsonTypeOf, describe } from './validate.js'

/** Options of `firstDifference`. */
export interface CompareOptions {
  /** Objects with the same keys in a different order are equal. Default `false`. */
  ignoreKeyOrder?: boolean
}

/**
 * Why two values differ: `type` (class, BSON type or `typeof`), `value` (same type), `missing` (a
 * key only one side has; the other side's value is `undefined`), `length` (an array is longer: the
 * path is the first index past the shorter one), `keyOrder` (same keys in another order: `a` and
 * `b` are the two key lists).
 */
export type DifferenceReason = 'type' | 'value' | 'missing' | 'length' | 'keyOrder'

/** The first difference found, depth first, in document order. */
export interface Difference {
  /** Where the values differ: `$` is the root, then `.key` and `[index]` (`$[3].customer.name`). */
  path: string
  reason: DifferenceReason
  /** The first value's part at `path`. */
  a: unknown
  /** The second value's part at `path`. */
  b: unknown
}

/**
 * The first difference between `a` and `b`, or `undefined` when they are identical in value, type
 * and (unless `ignoreKeyOrder`) key order. Never throws on ordinary query results.
 * @throws MongoInvalidArgumentError on bad options, or on values nested deeper than the stack allows
 * (cyclic ones included).
 */
export function firstDifference(
  a: unknown,
  b: unknown,
  options: CompareOptions = {},
): Difference | undefined {
  if (typeof options !== 'object' || options === null) {
    throw new MongoInvalidArgumentError(`firstDifference options must be an object, got ${describe(options)}`)
  }
  const { ignoreKeyOrder = false } = options
  if (typeof ignoreKeyOrder !== 'boolean') {
    throw new MongoInvalidArgumentError(`ignoreKeyOrder must be a boolean, got ${describe(ignoreKeyOrder)}`)
  }
  try {
    return compare(a, b, '$', ignoreKeyOrder)
  } catch (error) {
    // Recursion keeps the common case fast; a stack overflow is reported as what it means here.
    if (!(error instanceof RangeError)) throw error
    throw new MongoInvalidArgumentError('firstDifference: the values are nested too deeply (or cyclic)', {
      cause: error,
    })
  }
}

/**
 * The type of a value as the comparison sees it: `typeof` for primitives (`'null'` for null), else
 * the constructor name, with the BSON type when it differs (`'UUID/Binary'`).
 */
export function typeName(value: unknown): string {
  if (value === null) return 'null'
  if (typeof value !== 'object') return typeof value
  const prototype: unknown = Object.getPrototypeOf(value)
  const constructorName =
    prototype === null ? 'Object (null prototype)' : ((prototype as object).constructor?.name ?? 'Object')
  const bsonType = bsonTypeOf(value)
  return bsonType === undefined || bsonType === constructorName
    ? constructorName
    : `${constructorName}/${bsonType}`
}

/**
 * `value` with every leaf replaced by its type name, keeping object keys and array lengths: a
 * shape that can be logged without the data.
 */
export function redactValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactValue)
  if (isRecord(value)) {
    return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, redactValue(child)]))
  }
  return typeName(value)
}

function compare(a: unknown, b: unknown, path: string, ignoreKeyOrder: boolean): Difference | undefined {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) {
    if (typeName(a) !== typeName(b)) return { path, reason: 'type', a, b }
    return Object.is(a, b) ? undefined : { path, reason: 'value', a, b }
  }
  if (typeName(a) !== typeName(b)) return { path, reason: 'type', a, b }
  if (Array.isArray(a)) return compareArrays(a, b as unknown[], path, ignoreKeyOrder)
  const same = sameLeaf(a, b)
  if (same !== undefined) return same ? undefined : { path, reason: 'value', a, b }
  return compareObjects(a as Record<string, unknown>, b as Record<string, unknown>, path, ignoreKeyOrder)
}

function compareArrays(a: unknown[], b: unknown[], path: string, ignoreKeyOrder: boolean) {
  const common = Math.min(a.length, b.length)
  for (let index = 0; index < common; index++) {
    const difference = compare(a[index], b[index], `${path}[${index}]`, ignoreKeyOrder)
    if (difference) return difference
  }
  if (a.length === b.length) return undefined
  return { path: `${path}[${common}]`, reason: 'length' as const, a: a[common], b: b[common] }
}

function compareObjects(
  a: Record<string, unknown>,
  b: Record<string, unknown>,
  path: string,
  ignoreKeyOrder: boolean,
): Difference | undefined {
  const aKeys = Object.keys(a)
  const bKeys = Object.keys(b)
  for (const key of aKeys) {
    if (!Object.hasOwn(b, key))
      return { path: childPath(path, key), reason: 'missing', a: a[key], b: undefined }
  }
  for (const key of bKeys) {
    if (!Object.hasOwn(a, key))
      return { path: childPath(path, key), reason: 'missing', a: undefined, b: b[key] }
  }
  if (!ignoreKeyOrder && aKeys.some((key, index) => key !== bKeys[index])) {
    return { path, reason: 'keyOrder', a: aKeys, b: bKeys }
  }
  for (const key of aKeys) {
    const difference = compare(a[key], b[key], childPath(path, key), ignoreKeyOrder)
    if (difference) return difference
  }
  return undefined
}

/**
 * Whether two objects of the same type are equal, for types compared as a whole (dates, bytes,
 * BSON values); `undefined` for objects compared key by key. Code and DBRef compare their parts.
 */
function sameLeaf(a: object, b: object): boolean | undefined {
  if (a instanceof Date) return Object.is(a.getTime(), (b as Date).getTime())
  if (a instanceof RegExp) return a.source === (b as RegExp).source && a.flags === (b as RegExp).flags
  if (ArrayBuffer.isView(a)) return sameBytes(bytesOf(a), bytesOf(b as ArrayBufferView))
  const bsonType = bsonTypeOf(a)
  if (bsonType === undefined) return undefined
  const x = a as any
  const y = b as any
  switch (bsonType) {
    case 'ObjectId':
      return x.toHexString() === y.toHexString()
    case 'Binary':
      return x.sub_type === y.sub_type && sameBytes(binaryBytes(x), binaryBytes(y))
    case 'Long':
    case 'Timestamp':
      return x.toString() === y.toString() && x.unsigned === y.unsigned
    case 'Decimal128':
      return sameBytes(x.bytes, y.bytes)
    case 'Double':
    case 'Int32':
      return Object.is(x.valueOf(), y.valueOf())
    case 'BSONRegExp':
      return x.pattern === y.pattern && x.options === y.options
    case 'BSONSymbol':
      return x.valueOf() === y.valueOf()
    case 'MinKey':
    case 'MaxKey':
      return true
    case 'Code':
      return x.code === y.code && compare(x.scope, y.scope, '$', false) === undefined
    case 'DBRef':
      return (
        compare(
          { collection: x.collection, oid: x.oid, db: x.db, fields: x.fields },
          { collection: y.collection, oid: y.oid, db: y.db, fields: y.fields },
          '$',
          false,
        ) === undefined
      )
    default:
      return undefined
  }
}

function bytesOf(view: ArrayBufferView): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength)
}

function binaryBytes(binary: { buffer: Uint8Array; position: number }): Uint8Array {
  return binary.buffer.subarray(0, binary.position)
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let index = 0; index < a.length; index++) if (a[index] !== b[index]) return false
  return true
}

function isRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false
  const prototype: unknown = Object.getPrototypeOf(value)
  return prototype === Object.prototype || prototype === null
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/

function childPath(path: string, key: string): string {
  return IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`
}
