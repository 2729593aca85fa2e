/**
 * BSON options as the official driver resolves them, and the serialization of values sent to Rust.
 * @module
 */
import { BSON, Long, ObjectId, type Document } from 'bson'
import { MongoInvalidArgumentError } from './errors.js'
import { describe, MAX_BSON_DEPTH, tooDeepError } from './validate.js'
import { int32At, skipCString, skipValue } from './format/bson_values.js'

/** How documents are turned into BSON for the server (filters, pipelines, options). */
export interface BSONSerializeOptions {
  /** Skip `undefined` values instead of sending them as null. Default false. */
  ignoreUndefined?: boolean
  /** Send functions as BSON Code. Default false. */
  serializeFunctions?: boolean
}

/** How results are turned into JS values: the official driver's options, same defaults. */
export interface BSONDeserializeOptions {
  /** Return BSON values as their JS equivalents (Int32 -> number, ...). Default true. */
  promoteValues?: boolean
  /** Int64 within +-2^53 as number. Default true. */
  promoteLongs?: boolean
  /** Binary subtype 0 as Buffer. Default false. */
  promoteBuffers?: boolean
  /** Int64 as bigint. Default false. */
  useBigInt64?: boolean
  /** Regular expressions as BSONRegExp instead of RegExp. Default false. */
  bsonRegExp?: boolean
  /** Reject invalid UTF-8 in strings. Default true. */
  enableUtf8Validation?: boolean
  /** Return each document as a Buffer of its BSON. Default false. */
  raw?: boolean
}

export type BSONOptions = BSONSerializeOptions & BSONDeserializeOptions

/** The options after inheritance (operation over collection over db over client), defaults filled. */
export type ResolvedBSONOptions = Required<BSONOptions>

const BSON_OPTION_NAMES = [
  'ignoreUndefined',
  'serializeFunctions',
  'promoteValues',
  'promoteLongs',
  'promoteBuffers',
  'useBigInt64',
  'bsonRegExp',
  'enableUtf8Validation',
  'raw',
] as const satisfies readonly (keyof BSONOptions)[]

/**
 * Decode options that change what a document looks like in JS: outputs that build no JS documents
 * (JSON, Arrow) refuse them instead of ignoring them.
 */
export const DOCUMENT_SHAPING_OPTIONS = [
  'raw',
  'promoteValues',
  'promoteLongs',
  'promoteBuffers',
  'useBigInt64',
  'bsonRegExp',
] as const satisfies readonly (keyof BSONDeserializeOptions)[]

/** True for the option names that belong to BSON, which operations accept next to their own. */
export function isBSONOptionName(name: string): name is keyof BSONOptions {
  return (BSON_OPTION_NAMES as readonly string[]).includes(name)
}

export const DEFAULT_BSON_OPTIONS: ResolvedBSONOptions = {
  ignoreUndefined: false,
  serializeFunctions: false,
  promoteValues: true,
  promoteLongs: true,
  promoteBuffers: false,
  useBigInt64: false,
  bsonRegExp: false,
  enableUtf8Validation: true,
  raw: false,
}

/** Resolves `options` over `parent`, checking each given value is a boolean. */
export function resolveBSONOptions(
  options: Document | undefined,
  parent: ResolvedBSONOptions,
): ResolvedBSONOptions {
  if (options !== undefined && options !== null && typeof options !== 'object') {
    throw new MongoInvalidArgumentError(`options must be an object, got ${describe(options)}`)
  }
  const resolved = { ...parent }
  for (const name of BSON_OPTION_NAMES) {
    const value: unknown = options?.[name]
    if (value === undefined) continue
    if (typeof value !== 'boolean') {
      throw new MongoInvalidArgumentError(`Option "${name}" must be a boolean, got ${describe(value)}`)
    }
    resolved[name] = value
  }
  return resolved
}

/**
 * Serializes a document for the native side, keeping every js-bson type.
 * @throws MongoInvalidArgumentError for a document nested deeper than {@link MAX_BSON_DEPTH} levels.
 */
export function toBSON(document: Document, options: BSONSerializeOptions): Buffer {
  const bytes = BSON.serialize(document, {
    checkKeys: false,
    ignoreUndefined: options.ignoreUndefined ?? false,
    serializeFunctions: options.serializeFunctions ?? false,
  })
  checkDepth(bytes)
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/** The fewest bytes a level of nesting takes (type, empty key, length, terminator). */
const MIN_BYTES_PER_LEVEL = 7

/**
 * Refuses BSON nested deeper than {@link MAX_BSON_DEPTH}, reading it from a list of the open
 * documents' ends (never by recursion). A document too small to hold that many levels is not read.
 */
function checkDepth(bytes: Uint8Array): void {
  if (bytes.length < MAX_BSON_DEPTH * MIN_BYTES_PER_LEVEL) return
  const ends = [bytes.length]
  let at = 4
  while (ends.length > 0) {
    const end = ends[ends.length - 1]!
    if (at >= end - 1) {
      at = ends.pop()!
      continue
    }
    const type = bytes[at]!
    const keyAt = at + 1
    at = skipCString(bytes, keyAt, end)
    if (type === 0x03 || type === 0x04) {
      if (ends.length === MAX_BSON_DEPTH) throw tooDeepError()
      ends.push(at + int32At(bytes, at))
      at += 4
    } else {
      // Code with scope's length covers it whole: its scope is not walked.
      at = skipValue(bytes, type, at, end, keyAt)
    }
  }
}

/** js-bson's deserialize options. */
export type DeserializeOptions = Parameters<typeof BSON.deserialize>[1] & {}

/** The options js-bson decodes results with, as the official driver derives them. */
export function toDeserializeOptions(options: ResolvedBSONOptions): DeserializeOptions {
  return {
    promoteValues: options.promoteValues,
    promoteLongs: options.promoteLongs,
    promoteBuffers: options.promoteBuffers,
    useBigInt64: options.useBigInt64,
    bsonRegExp: options.bsonRegExp,
    validation: { utf8: options.enableUtf8Validation },
  }
}

/** What the native formats' JS decoders (`format/tape.ts`, `format/lazy.ts`) read from an operation's options. */
export interface DecoderOptions {
  promoteValues: boolean
  /** `promoteLongs && promoteValues`: when js-bson turns an int64 into a number. */
  promoteNumbers: boolean
  useBigInt64: boolean
  deserialize: DeserializeOptions
}

export function toDecoderOptions(options: ResolvedBSONOptions): DecoderOptions {
  return {
    promoteValues: options.promoteValues,
    promoteNumbers: options.promoteLongs && options.promoteValues,
    useBigInt64: options.useBigInt64,
    deserialize: toDeserializeOptions(options),
  }
}

/**
 * js-bson's int64 rule, from the value's signed 32-bit halves: a bigint with `useBigInt64`, a
 * number within +-2^53 (inclusive) when promoted, else a `Long`. Its one home on the JS side (on
 * the Rust side: `promoted_int64` in src/raw.rs).
 */
export function int64Value(low: number, high: number, options: DecoderOptions): number | Long | bigint {
  if (options.useBigInt64) return (BigInt(high) << 32n) + BigInt(low >>> 0)
  // Within +-2^53 exactly when the high half is within +-2^21 (2^53 itself: high 2^21, low 0).
  if (options.promoteNumbers && high >= -0x200000 && (high < 0x200000 || (high === 0x200000 && low === 0))) {
    return high * 4294967296 + (low >>> 0)
  }
  return Long.fromBits(low, high)
}

/** An ObjectId from the 12 bytes at `offset`: bson >= 7.3 reads them in place, older 7.x needs a view. */
export const objectIdAt: (bytes: Uint8Array, offset: number) => ObjectId = (() => {
  const probe = new Uint8Array(24)
  probe[23] = 1
  try {
    if (new (ObjectId as any)(probe, 12).toHexString() === '000000000000000000000001') {
      return (bytes, offset) => new (ObjectId as any)(bytes, offset)
    }
  } catch {
    // older bson: fall through
  }
  return (bytes, offset) => new ObjectId(bytes.subarray(offset, offset + 12))
})()
