/**
 * The tape format's decoder: the default way a native batch becomes JS documents.
 *
 * It reads the tape Rust built off the JS thread (layout: src/format/tape.rs): numbers come
 * from one Float64Array, strings are slices of one string per batch, and each document shape gets
 * a generated function that builds the document with a single object literal (one V8 hidden class
 * per shape). Values are exactly js-bson's: rare types and anything Rust could not tape go through
 * js-bson itself.
 * @module
 */
import { BSON, Double, Int32, Long, ObjectId, Timestamp, type Document } from 'bson'
import {
  DEFAULT_BSON_OPTIONS,
  int64Value,
  objectIdAt,
  toDecoderOptions,
  type DecoderOptions,
  type ResolvedBSONOptions,
} from '../bson.js'
import type { DocumentBatch } from '../native.cjs'

const enum Tag {
  Double = 0x01,
  String = 0x02,
  Document = 0x03,
  Array = 0x04,
  ObjectId = 0x07,
  Boolean = 0x08,
  Date = 0x09,
  Null = 0x0a,
  Int32 = 0x10,
  Timestamp = 0x11,
  Int64 = 0x12,
  Fallback = 0xf0,
}

interface Shape {
  k: string[]
  t: Tag[]
}

/** Builds one document of a shape, reading its values from the tape. */
type Builder = (reader: TapeReader) => Document

/** What an area Rust left out reads as. */
const NO_EXTRAS = new Uint8Array(0)

/**
 * The same bytes as a plain Uint8Array. A Buffer the addon makes has a map of its own (Node sets
 * its prototype after creating it), which dies at a full GC when no such Buffer is left: V8 then
 * throws away the optimized code that read ObjectIds out of it ("weak objects"), and the reads
 * after every full GC ran the decoder unoptimized until V8 optimized it again.
 */
function plainBytes(buffer: Buffer): Uint8Array {
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)
}

/**
 * Reads values off one batch's tape; generated builders call its methods.
 * @internal exported for the test that it stays optimized across a full GC
 */
export class TapeReader {
  position = 0
  readonly slots: Float64Array
  readonly latin1: string
  readonly utf16: string
  /** ObjectId bytes, fallback values and untaped documents (see src/format/tape.rs). */
  readonly extras: Uint8Array
  readonly builders: Builder[]
  readonly options: DecoderOptions

  constructor(batch: TapeBatch, builders: Builder[], options: DecoderOptions) {
    this.slots = batch.slots
    // Rust leaves an empty area undefined (src/format/mod.rs).
    this.latin1 = batch.latin1 ? batch.latin1.toString('latin1') : ''
    this.utf16 = batch.utf16 ? batch.utf16.toString('utf16le') : ''
    this.extras = batch.extras ? plainBytes(batch.extras) : NO_EXTRAS
    this.builders = builders
    this.options = options
  }

  number(): number {
    return this.slots[this.position++]!
  }

  string(): string {
    const start = this.slots[this.position]!
    const end = this.slots[this.position + 1]!
    this.position += 2
    return start >= 0 ? this.latin1.slice(start, end) : this.utf16.slice(-start - 1, end)
  }

  objectId(): ObjectId {
    return this.objectIdAt(this.slots[this.position++]!)
  }

  objectIdAt(offset: number): ObjectId {
    return objectIdAt(this.extras, offset)
  }

  /** A Timestamp from its `[increment, seconds]` slots, as js-bson builds it. */
  timestamp(i: number, t: number): Timestamp {
    return new Timestamp({ i, t })
  }

  int64(): number | Long | bigint {
    const at = this.position
    this.position += 2
    return int64Value(this.slots[at]!, this.slots[at + 1]!, this.options)
  }

  document(): Document {
    return this.builders[this.slots[this.position++]!]!(this)
  }

  array(): unknown[] {
    const length = this.slots[this.position++]!
    // Literals for short arrays allocate exactly their length (a growing [] reserves 17 slots).
    switch (length) {
      case 0:
        return []
      case 1:
        return [this.element()]
      case 2:
        return [this.element(), this.element()]
      case 3:
        return [this.element(), this.element(), this.element()]
      case 4:
        return [this.element(), this.element(), this.element(), this.element()]
      default: {
        const array: unknown[] = []
        for (let index = 0; index < length; index++) array.push(this.element())
        return array
      }
    }
  }

  /** An array element: its type tag, then its value. */
  element(): unknown {
    return this.value(this.slots[this.position++]!)
  }

  /** A value of a type known only at run time (array elements). */
  value(tag: Tag): unknown {
    switch (tag) {
      case Tag.Double:
        return this.options.promoteValues ? this.number() : new Double(this.number())
      case Tag.String:
        return this.string()
      case Tag.Document:
        return this.document()
      case Tag.Array:
        return this.array()
      case Tag.ObjectId:
        return this.objectId()
      case Tag.Boolean:
        return this.number() === 1
      case Tag.Date:
        return new Date(this.number())
      case Tag.Null:
        return null
      case Tag.Int32:
        return this.options.promoteValues ? this.number() | 0 : new Int32(this.number())
      case Tag.Int64:
        return this.int64()
      case Tag.Timestamp: {
        const at = this.position
        this.position += 2
        return this.timestamp(this.slots[at]!, this.slots[at + 1]!)
      }
      case Tag.Fallback:
        return this.fallback()
      default:
        throw new Error(`rumongo: unknown tape tag ${tag}`)
    }
  }

  /** A value js-bson decodes: `{ "": value }` in the extras buffer. */
  fallback(): unknown {
    return this.deserializeFromExtras()['']
  }

  /** A top-level document: a shape id, or -1 for one js-bson decodes from `extras`. */
  topLevelDocument(): Document {
    const shape = this.slots[this.position++]!
    return shape >= 0 ? this.builders[shape]!(this) : this.deserializeFromExtras()
  }

  /** Decodes with js-bson the document at the next `[offset, length]` slots of `extras`. */
  private deserializeFromExtras(): Document {
    const offset = this.slots[this.position]!
    const length = this.slots[this.position + 1]!
    this.position += 2
    return BSON.deserialize(this.extras.subarray(offset, offset + length), this.options.deserialize)
  }

  /**
   * One reader kept for the life of the process, so that the maps V8 makes as the constructor adds
   * each field outlive the batches: when a full GC found no reader alive, it freed them and V8
   * dropped the optimized builders, `topLevelDocument`, `array` and `element` with them ("weak
   * objects" deoptimizations: a lean Mongoose populate after a full GC took 651M instructions,
   * 525M with this reader kept and the extras read through `plainBytes`).
   */
  static readonly mapKeeper = new TapeReader(
    { count: 0, slots: new Float64Array(0), shapes: '[]' } as TapeBatch,
    [],
    toDecoderOptions(DEFAULT_BSON_OPTIONS),
  )
}

/**
 * The JS expression that reads one field of type `tag` inside a generated builder, where `r` is the
 * TapeReader, `s` its slots, `A` / `U` its Latin-1 / UTF-16 texts and `p` the position in a local
 * (kept out of the reader while plain values are read; written back around nested reads).
 */
function fieldExpression(tag: Tag, options: DecoderOptions): string {
  const viaReader = (call: string) => `(r.position = p, v = r.${call}, p = r.position, v)`
  switch (tag) {
    case Tag.Double:
      return options.promoteValues ? 's[p++]' : viaReader(`value(${tag})`)
    case Tag.Int32:
      // `| 0`: the slot's float64 as an int32, which V8 stores as a small integer (as js-bson's
      // values are); a float64 stored in a field is a heap number: one more object per field
      // for the garbage collector and for every reader of the value.
      return options.promoteValues ? '(s[p++] | 0)' : viaReader(`value(${tag})`)
    case Tag.String:
      return '(a = s[p], b = s[p + 1], p += 2, a >= 0 ? A.slice(a, b) : U.slice(-a - 1, b))'
    case Tag.ObjectId:
      return 'r.objectIdAt(s[p++])'
    case Tag.Boolean:
      return 's[p++] === 1'
    case Tag.Date:
      return 'new Date(s[p++])'
    case Tag.Null:
      return 'null'
    case Tag.Document:
      // Called here rather than through reader.document(): each field's call site then sees one
      // shape (monomorphic) instead of every shape of the batch.
      return '(r.position = p + 1, v = r.builders[s[p]](r), p = r.position, v)'
    case Tag.Array:
      return viaReader('array()')
    case Tag.Int64:
      return viaReader('int64()')
    case Tag.Timestamp:
      return '(a = s[p], b = s[p + 1], p += 2, r.timestamp(a, b))'
    default:
      return viaReader('fallback()')
  }
}

/** Generated builders by options variant and shape; shared by every cursor. */
const builderCache = new Map<string, Builder>()
const BUILDER_CACHE_LIMIT = 10_000

function builderFor(shape: Shape, options: DecoderOptions, variant: string): Builder {
  const key = variant + JSON.stringify(shape)
  let builder = builderCache.get(key)
  if (builder === undefined) {
    const fields = shape.k.map((name, index) => {
      // A literal "__proto__" key would set the prototype; a computed one defines a field, as js-bson does.
      const property = name === '__proto__' ? '["__proto__"]' : JSON.stringify(name)
      return `${property}: ${fieldExpression(shape.t[index]!, options)}`
    })
    const body = [
      'const s = r.slots, A = r.latin1, U = r.utf16',
      'let p = r.position, a, b, v',
      `const o = { ${fields.join(', ')} }`,
      'r.position = p',
      'return o',
    ]
    builder = new Function('r', body.join('\n')) as Builder
    if (builderCache.size >= BUILDER_CACHE_LIMIT) builderCache.clear()
    builderCache.set(key, builder)
  }
  return builder
}

/**
 * The builders of a batch's shape table (JSON, see src/format/tape.rs) by options variant. The batches of
 * one query mostly carry the same table (shapes are numbered in order of appearance), so this
 * skips parsing it and looking up each shape.
 */
const shapeTableCache = new Map<string, Builder[]>()
/** Characters of shape tables kept: heterogeneous results carry a new table in every batch. */
const SHAPE_TABLE_CACHE_CHARS = 1 << 22
let shapeTableCacheChars = 0

function buildersFor(shapeTable: string, options: DecoderOptions, variant: string): Builder[] {
  const key = variant + shapeTable
  let builders = shapeTableCache.get(key)
  if (builders === undefined) {
    const shapes = JSON.parse(shapeTable) as Shape[]
    builders = shapes.map((shape) => builderFor(shape, options, variant))
    if (shapeTableCacheChars + key.length > SHAPE_TABLE_CACHE_CHARS) {
      shapeTableCache.clear()
      shapeTableCacheChars = 0
    }
    shapeTableCache.set(key, builders)
    shapeTableCacheChars += key.length
  }
  return builders
}

const EMPTY_DOCUMENT = new Uint8Array([5, 0, 0, 0, 0])

/** A batch Rust put on a tape: slots and shapes are there; empty text areas are left out. */
export type TapeBatch = DocumentBatch & Required<Pick<DocumentBatch, 'slots' | 'shapes'>>

/** Whether Rust put the batch on a tape (it does not when js-bson must decide, see src/format/tape.rs). */
export function isTaped(batch: DocumentBatch): batch is TapeBatch {
  return batch.slots != null
}

/** Decodes taped batches with exactly the official driver's values and types for these options. */
export function tapeDecoder(options: ResolvedBSONOptions): (batch: TapeBatch) => Document[] {
  const decoderOptions = toDecoderOptions(options)
  const variant = options.promoteValues ? 'v:' : 'w:'
  return (batch) => {
    // js-bson refuses some option sets (useBigInt64 without promoteLongs) on every document it
    // decodes; the tape never calls it: let it check them, for its own error.
    if (options.useBigInt64) BSON.deserialize(EMPTY_DOCUMENT, decoderOptions.deserialize)
    const builders = buildersFor(batch.shapes, decoderOptions, variant)
    const reader = new TapeReader(batch, builders, decoderOptions)
    const documents: Document[] = []
    for (let index = 0; index < batch.count; index++) documents.push(reader.topLevelDocument())
    return documents
  }
}

/** Reads a taped batch one top-level document per call, with `tapeDecoder`'s values. */
export function tapeReader(options: ResolvedBSONOptions): (batch: TapeBatch) => () => Document {
  const decoderOptions = toDecoderOptions(options)
  const variant = options.promoteValues ? 'v:' : 'w:'
  return (batch) => {
    // As in tapeDecoder: js-bson's own error for the option sets it refuses.
    if (options.useBigInt64) BSON.deserialize(EMPTY_DOCUMENT, decoderOptions.deserialize)
    const reader = new TapeReader(batch, buildersFor(batch.shapes, decoderOptions, variant), decoderOptions)
    return () => reader.topLevelDocument()
  }
}

/**
 * The tape's type tags by name, for the test that checks them against the addon's (`TAPE_TAGS`,
 * src/format/tape.rs). The decoder itself uses the `const enum`, which compiles to literals.
 * @internal
 */
export const TAPE_TAGS = {
  double: Tag.Double,
  string: Tag.String,
  document: Tag.Document,
  array: Tag.Array,
  objectId: Tag.ObjectId,
  boolean: Tag.Boolean,
  date: Tag.Date,
  null: Tag.Null,
  int32: Tag.Int32,
  int64: Tag.Int64,
  timestamp: Tag.Timestamp,
  fallback: Tag.Fallback,
}
