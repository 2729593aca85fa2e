/**
 * Lazy documents (`collection.findLazy`): each document is a read-only `Proxy` over its bytes in
 * the batch's one raw-BSON buffer. A field is parsed the first time it is read, then cached.
 *
 * - The target of every Proxy is a small `LazyTarget` (batch bytes, offset, decode context, shape,
 *   element offsets, values read); one handler object serves all documents.
 * - Top-level documents come indexed: Rust lists every element's offset and numbers each batch's
 *   shapes (`src/format/lazy.rs`), so reading a field is a map lookup and an array read, and a document
 *   costs no JS memory of its own until a field is read.
 * - Embedded documents are indexed on first access with one walk over their element headers.
 *   Documents of the same shape (same keys in the same order) share one key -> position map: the
 *   walk only compares key bytes against the shape seen last at that place, so no key string is
 *   created.
 * - Embedded documents are lazy views over the same bytes; arrays are materialized (frozen) on first
 *   access, their document elements being lazy views.
 * - Values are exactly js-bson's (the official driver's) for the same BSON options: common types are
 *   read from the bytes, rare ones through js-bson from a `{ "": value }` copy.
 * @module
 */
import { inspect } from 'node:util'
import { BSON, BSONError, Double, Int32, type Document } from 'bson'
import {
  int64Value,
  objectIdAt,
  toDecoderOptions,
  type DecoderOptions,
  type ResolvedBSONOptions,
} from '../bson.js'
import { MongoInvalidArgumentError } from '../errors.js'
import { BatchOutput, type DocumentBatch } from '../native.cjs'
import type { BatchFormat } from './index.js'
import { describe } from '../validate.js'
import { bufferUtf8Slice, int32At, skipCString, skipValue, utf8Slice } from './bson_values.js'

/**
 * A read-only lazy view of a document of type `T`: reads like `T` (fields, spread, `Object.keys`,
 * `JSON.stringify`, `for...in`, `in`), parses a field only when it is read. Assigning, deleting or
 * defining a property throws a `TypeError`. `toObject()` returns the plain document `find` returns
 * (a stored field named `toObject` wins: use {@link materialize} then).
 */
export type LazyDocument<T = Document> = Readonly<T> & {
  /** The fully decoded plain document, exactly what `find` returns for it. */
  toObject(): T
}

/** Decode options shared by all documents of one `findLazy` call. */
interface LazyContext extends DecoderOptions {
  validateUtf8: boolean
  /** Shapes by their keys joined with NUL. */
  shapes: Map<string, Shape>
}

/** The keys of documents, in order; shared by every document that has exactly these keys. */
interface Shape {
  /** Every element's key as a C string, concatenated: what a document's key bytes are compared to. */
  keyBytes: Uint8Array
  /** Per element: the byte length of its key (the value starts at offset + 2 + length). */
  keyLengths: Int32Array
  /** Own property keys as a plain object orders them (array indices first), without duplicates. */
  ownKeys: string[]
  /** Key -> element position (the last one for a duplicated key, as js-bson assigns). */
  slots: Map<string, number>
  /** Has `$` keys, all of them `$ref` / `$id` / `$db`: js-bson may turn it into a DBRef. */
  possibleDBRef: boolean
  /** Per element: where documents found under it (directly or in arrays) look for their shape. */
  children: (ShapeHint | undefined)[]
}

/** The shape last seen at one place (the root, or one field of a parent shape). */
interface ShapeHint {
  shape: Shape | null
}

const TARGET = Symbol('rumongo.lazyTarget')

/**
 * What a lazy document's Proxy wraps: the smallest layout (1M documents must fit in the default
 * heap). `util.inspect` formats it (not the Proxy): hence the hook.
 */
class LazyTarget {
  /**
   * Values read so far: `[position, value, position, value, ...]` while few fields are read (most
   * lazy reads touch a handful; a full array per wide document would cost ~10x the memory), then
   * one slot per element (holes until read) once {@link SPARSE_VALUES} fields were read.
   */
  values: unknown[] | null = null
  dense = false

  constructor(
    readonly bytes: Buffer,
    readonly start: number,
    readonly context: LazyContext,
    /** Where an unindexed (embedded) document looks for its shape; null once indexed by Rust. */
    readonly hint: ShapeHint | null,
    /** The document's keys, once indexed. */
    public shape: Shape | null = null,
    /** `offsets[base + position]`: where element `position` starts (its type byte). */
    public offsets: ArrayLike<number> | null = null,
    public base = 0,
  ) {}

  /** Node calls it with the Proxy as `this` (and formats the target when the Proxy is top-level). */
  [inspect.custom](this: LazyTarget | LazyDocument): Document {
    return materializeTarget(
      this instanceof LazyTarget ? this : (this as unknown as { [TARGET]: LazyTarget })[TARGET],
    )
  }
}

function materializeTarget(target: LazyTarget): Document {
  const { bytes, start } = target
  return BSON.deserialize(bytes.subarray(start, start + int32At(bytes, start)), target.context.deserialize)
}

/** The plain document (js-bson's decode of its bytes) behind a lazy document. */
export function materialize<T = Document>(document: LazyDocument<T>): T {
  const target = (document as unknown as { [TARGET]?: LazyTarget } | undefined)?.[TARGET]
  if (!(target instanceof LazyTarget)) {
    throw new MongoInvalidArgumentError(
      `materialize() expects a rumongo lazy document, got ${describe(document)}`,
    )
  }
  return materializeTarget(target) as T
}

/** Whether `value` is a lazy document (top-level or embedded) from `findLazy`. */
export function isLazyDocument(value: unknown): value is LazyDocument {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { [TARGET]?: unknown })[TARGET] instanceof LazyTarget
  )
}

/** `doc.toObject()`: shared by all documents, finds its document through `this`. */
function toObject(this: unknown): Document {
  return materialize(this as LazyDocument)
}

function readOnly(key: PropertyKey): never {
  throw new TypeError(
    `Cannot modify property ${JSON.stringify(String(key))}: rumongo lazy documents are read-only (call toObject() for a mutable copy)`,
  )
}

const handler: ProxyHandler<LazyTarget> = {
  get(target, key, receiver) {
    if (typeof key === 'string') {
      const shape = target.shape ?? buildIndex(target)
      const slot = shape.slots.get(key)
      if (slot !== undefined) return valueAt(target, shape, slot)
      if (key === 'toObject') return toObject
    } else if (key === TARGET) {
      return target
    }
    return Reflect.get(Object.prototype, key, receiver)
  },
  has(target, key) {
    if (typeof key === 'string') {
      const shape = target.shape ?? buildIndex(target)
      if (shape.slots.has(key) || key === 'toObject') return true
    }
    return key in Object.prototype
  },
  ownKeys(target) {
    return (target.shape ?? buildIndex(target)).ownKeys
  },
  getOwnPropertyDescriptor(target, key) {
    if (typeof key !== 'string') return undefined
    const shape = target.shape ?? buildIndex(target)
    const slot = shape.slots.get(key)
    if (slot === undefined) return undefined
    return { value: valueAt(target, shape, slot), writable: false, enumerable: true, configurable: true }
  },
  getPrototypeOf() {
    return Object.prototype
  },
  set: (_target, key) => readOnly(key),
  deleteProperty: (_target, key) => readOnly(key),
  defineProperty: (_target, key) => readOnly(key),
  setPrototypeOf: () => readOnly('__proto__'),
  preventExtensions() {
    throw new TypeError('rumongo lazy documents are read-only and cannot be frozen or sealed')
  },
}

/**
 * The decode context of one operation, from its resolved BSON options.
 * @internal
 */
export function createLazyContext(options: ResolvedBSONOptions): LazyContext {
  if (options.useBigInt64 && !(options.promoteValues && options.promoteLongs)) {
    // js-bson refuses this combination on every document: so does the first field read here.
    throw new BSONError('Must either request bigint or Long for int64 deserialization')
  }
  return {
    ...toDecoderOptions(options),
    validateUtf8: options.enableUtf8Validation,
    shapes: new Map(),
  }
}

/**
 * Turns the batches of one operation into lazy documents. A batch comes with Rust's index
 * (`lazyIndex`: per document its start, shape number, element count and element offsets); its
 * documents share its buffer and index, and documents of one shape share one `Shape`.
 * @internal
 */
export function lazyBatchDecoder(options: ResolvedBSONOptions): (batch: DocumentBatch) => LazyDocument[] {
  const context = createLazyContext(options)
  return (batch) => {
    const { lazyIndex, count } = batch
    if (count === 0) return []
    // A batch with documents has their bytes and index.
    const bytes = batch.documents!
    const index = lazyIndex!
    const shapes: Shape[] = []
    const documents: LazyDocument[] = new Array(count)
    let at = 0
    for (let position = 0; position < count; position++) {
      const start = index[at]!
      const elements = index[at + 2]!
      const shape = (shapes[index[at + 1]!] ??= shapeOf(context, bytes, index, at + 3, elements))
      const target = new LazyTarget(bytes, start, context, null, shape, index, at + 3)
      documents[position] = new Proxy(target, handler) as unknown as LazyDocument
      at += 3 + elements
    }
    return documents
  }
}

/**
 * The lazy format (`findLazy`, `findCursor(..., { lazy: true })`): batches come with Rust's field
 * index and turn into lazy documents. Built from the batch bytes whatever `raw` says.
 * @internal
 */
export const LAZY: BatchFormat = {
  output: () => BatchOutput.Lazy,
  decoder: lazyBatchDecoder,
}

/**
 * A lazy document over `bytes[offset...]` (one BSON document), for tests and internal callers.
 * @internal
 */
export function lazyDocument<T = Document>(
  bytes: Uint8Array,
  options: ResolvedBSONOptions,
  offset = 0,
): LazyDocument<T> {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const target = new LazyTarget(buffer, offset, createLazyContext(options), { shape: null })
  return new Proxy(target, handler) as unknown as LazyDocument<T>
}

let fatalDecoder: InstanceType<typeof TextDecoder> | undefined

/** A BSON string's text, as js-bson decodes it (replacement characters unless validating). */
function readString(bytes: Uint8Array, start: number, end: number, validate: boolean): string {
  const text = bufferUtf8Slice.call(bytes, start, end)
  // js-bson checks only text that holds U+FFFD (invalid bytes decode to it).
  if (validate && text.includes('\ufffd')) {
    fatalDecoder ??= new TextDecoder('utf8', { fatal: true })
    try {
      fatalDecoder.decode(bytes.subarray(start, end))
    } catch (cause) {
      throw new BSONError('Invalid UTF-8 string in BSON document', { cause })
    }
  }
  return text
}

/** Element offsets of the document being indexed (indexing never nests), copied into its index. */
const scratch: number[] = []

/** Walks the document's element headers once: offsets, and its shape (shared when it repeats). */
function buildIndex(target: LazyTarget): Shape {
  const { bytes, start } = target
  const hint = target.hint!
  const size = int32At(bytes, start)
  const end = start + size - 1
  if (size < 5 || end >= bytes.length || bytes[end] !== 0) throw new BSONError('corrupt object bson')
  const offsets = scratch
  let count = 0
  const candidate = hint.shape
  const expected = candidate?.keyBytes
  let matching = expected !== undefined
  let k = 0
  let at = start + 4
  while (at < end) {
    const type = bytes[at]!
    offsets[count++] = at
    const keyAt = at + 1
    at = keyAt
    if (matching) {
      for (;;) {
        const byte = bytes[at]
        if (byte !== expected![k]) {
          matching = false
          at = skipCString(bytes, at, end)
          break
        }
        at++
        k++
        if (byte === 0) break
      }
    } else {
      at = skipCString(bytes, at, end)
    }
    at = skipValue(bytes, type, at, end, keyAt)
  }
  if (at !== end) throw new BSONError('corrupt object bson')
  const shape =
    matching && k === expected!.length ? candidate! : shapeOf(target.context, bytes, offsets, 0, count)
  hint.shape = shape
  target.shape = shape
  target.offsets = offsets.slice(0, count)
  return shape
}

const MAX_SHAPES = 10_000
const ARRAY_INDEX = /^(?:0|[1-9]\d*)$/

/** The shape of the `count` elements at `offsets[base...]` (framing already checked). */
function shapeOf(
  context: LazyContext,
  bytes: Uint8Array,
  offsets: ArrayLike<number>,
  base: number,
  count: number,
): Shape {
  const keys: string[] = []
  const keyLengths = new Int32Array(count)
  for (let position = 0; position < count; position++) {
    const keyAt = offsets[base + position]! + 1
    const keyEnd = skipCString(bytes, keyAt, bytes.length) - 1
    keyLengths[position] = keyEnd - keyAt
    keys.push(utf8Slice(bytes, keyAt, keyEnd))
  }
  const id = keys.join('\u0000')
  let shape = context.shapes.get(id)
  if (shape !== undefined) return shape
  const slots = new Map<string, number>()
  const indices: string[] = []
  const names: string[] = []
  let dollarKeys = 0
  let dbRefKeys = 0
  keys.forEach((key, position) => {
    if (!slots.has(key)) {
      // A plain object lists integer-like keys first, ascending; then the rest in insertion order.
      ;(ARRAY_INDEX.test(key) && Number(key) < 2 ** 32 - 1 ? indices : names).push(key)
    }
    slots.set(key, position)
    if (key.startsWith('$')) {
      dollarKeys++
      if (key === '$ref' || key === '$id' || key === '$db') dbRefKeys++
    }
  })
  indices.sort((a, b) => Number(a) - Number(b))
  const keyBytes = Buffer.from(keys.map((key) => `${key}\u0000`).join(''), 'utf8')
  shape = {
    keyBytes,
    keyLengths,
    ownKeys: [...indices, ...names],
    slots,
    possibleDBRef: dollarKeys > 0 && dollarKeys === dbRefKeys,
    children: [],
  }
  if (context.shapes.size < MAX_SHAPES) context.shapes.set(id, shape)
  return shape
}

/** How many values a document keeps as `[position, value]` pairs before one slot per element. */
const SPARSE_VALUES = 8

/** The value of the element at `position`, decoded once. */
function valueAt(target: LazyTarget, shape: Shape, position: number): unknown {
  const values = target.values
  if (values !== null) {
    if (target.dense) {
      const cached = values[position]
      if (cached !== undefined) return cached
    } else {
      for (let pair = 0; pair < values.length; pair += 2)
        if (values[pair] === position) return values[pair + 1]
    }
  }
  const at = target.offsets![target.base + position]!
  const hint = (shape.children[position] ??= { shape: null })
  const value = decodeValue(target.bytes, target.context, at, at + 2 + shape.keyLengths[position]!, hint)
  if (values === null) {
    target.values = [position, value]
  } else if (target.dense) {
    values[position] = value
  } else if (values.length === 2) {
    // Exactly sized: push() would reserve room for 8 more pairs in every document read twice.
    target.values = [values[0], values[1], position, value]
  } else if (values.length < 2 * SPARSE_VALUES) {
    values.push(position, value)
  } else {
    const dense: unknown[] = new Array(shape.keyLengths.length)
    for (let pair = 0; pair < values.length; pair += 2) dense[values[pair] as number] = values[pair + 1]
    dense[position] = value
    target.values = dense
    target.dense = true
  }
  return value
}

/** Decodes the value of the element whose type byte is at `typeAt` and value at `at`. */
function decodeValue(
  bytes: Buffer,
  context: LazyContext,
  typeAt: number,
  at: number,
  hint: ShapeHint,
): unknown {
  switch (bytes[typeAt]) {
    case 0x01: {
      const value = bytes.readDoubleLE(at)
      return context.promoteValues ? value : new Double(value)
    }
    case 0x02: {
      const size = int32At(bytes, at)
      if (size <= 0 || size > bytes.length - at - 4 || bytes[at + 3 + size] !== 0) {
        throw new BSONError('bad string length in bson')
      }
      return readString(bytes, at + 4, at + 3 + size, context.validateUtf8)
    }
    case 0x03: {
      const target = new LazyTarget(bytes, at, context, hint)
      // js-bson turns a document whose `$` keys are all $ref/$id/$db into a DBRef when it fits.
      if ((target.shape ?? buildIndex(target)).possibleDBRef) {
        return viaJsBson(bytes, context, typeAt, at)
      }
      return new Proxy(target, handler)
    }
    case 0x04:
      return decodeArray(bytes, context, at, hint)
    case 0x07:
      return objectIdAt(bytes, at)
    case 0x08: {
      const byte = bytes[at]
      if (byte !== 0 && byte !== 1) throw new BSONError('illegal boolean type value')
      return byte === 1
    }
    case 0x09:
      return new Date(int32At(bytes, at + 4) * 4294967296 + (int32At(bytes, at) >>> 0))
    case 0x0a:
      return null
    case 0x10: {
      const value = int32At(bytes, at)
      return context.promoteValues ? value : new Int32(value)
    }
    case 0x12:
      return int64Value(int32At(bytes, at), int32At(bytes, at + 4), context)
    default:
      return viaJsBson(bytes, context, typeAt, at)
  }
}

/** An array being decoded: its elements so far, where the next one starts, where it ends. */
interface ArrayFrame {
  array: unknown[]
  at: number
  end: number
}

const arrayFrame = (bytes: Uint8Array, start: number): ArrayFrame => ({
  array: [],
  at: start + 4,
  end: start + int32At(bytes, start) - 1,
})

/**
 * An array's elements, decoded now (documents among them stay lazy), frozen. Arrays nested in it
 * are decoded with an explicit stack, not by recursion: any nesting depth fits in the JS stack.
 */
function decodeArray(
  bytes: Buffer,
  context: LazyContext,
  start: number,
  hint: ShapeHint,
): readonly unknown[] {
  const root = arrayFrame(bytes, start)
  const stack = [root]
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!
    const { at, end } = frame
    if (at >= end) {
      if (at !== end || bytes[end] !== 0) throw new BSONError('corrupt array bson')
      Object.freeze(frame.array)
      stack.pop()
      continue
    }
    const type = bytes[at]!
    const valueAt = skipCString(bytes, at + 1, end)
    if (type === 0x04) {
      const child = arrayFrame(bytes, valueAt)
      frame.array.push(child.array)
      stack.push(child)
    } else {
      frame.array.push(decodeValue(bytes, context, at, valueAt, hint))
    }
    frame.at = skipValue(bytes, type, valueAt, end, at + 1)
  }
  return root.array
}

/** One value through js-bson itself: the element copied into a `{ "": value }` document. */
function viaJsBson(bytes: Buffer, context: LazyContext, typeAt: number, at: number): unknown {
  const type = bytes[typeAt]!
  const valueEnd = skipValue(bytes, type, at, bytes.length, typeAt + 1)
  const size = 4 + 2 + (valueEnd - at) + 1
  const mini = Buffer.allocUnsafe(size)
  mini.writeInt32LE(size, 0)
  mini[4] = type
  mini[5] = 0
  bytes.copy(mini, 6, at, valueEnd)
  mini[size - 1] = 0
  return BSON.deserialize(mini, context.deserialize)['']
}
