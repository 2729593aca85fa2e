/**
 * Query results as Apache Arrow, built in Rust (`src/format/arrow.rs`): the schema a query's columns
 * follow (a small typed DSL or an apache-arrow `Schema`), the projection it becomes, and how Rust's
 * IPC batches become one stream, an apache-arrow `Table`, or bytes written to a `Writable`.
 * @module
 */
import type { Document } from 'bson'
import type * as ApacheArrow from 'apache-arrow'
import { describe } from '../validate.js'
import type { BatchFormat } from './index.js'
import { BatchOutput, MAX_ARROW_NESTING } from '../native.cjs'
import { MongoInvalidArgumentError, MongoMissingDependencyError } from '../errors.js'

/** The column types of an Arrow result, by name (see {@link ArrowSchemaSpec}). */
export type ArrowTypeName =
  | 'int32'
  | 'int64'
  | 'double'
  | 'bool'
  | 'utf8'
  /** BSON dates: `timestamp[ms, UTC]`. */
  | 'timestamp'
  /** 12-byte fixed-size binary with the extension name `rumongo.objectid`. */
  | 'objectId'
  /** The ObjectId's 24 lowercase hex digits, as utf8. */
  | 'objectIdHex'
  /** 16-byte fixed-size binary (the BSON bytes, IEEE 754 BID) with the extension name `rumongo.decimal128`. */
  | 'decimal128'
  | 'binary'

/** A column's type: a name, `[item]` for a list, `{ field: type }` for a struct (nested document). */
export type ArrowTypeSpec = ArrowTypeName | readonly [ArrowTypeSpec] | ArrowSchemaSpec

/**
 * The columns of an Arrow result: `{ price: 'double', tags: ['utf8'], address: { city: 'utf8' } }`.
 * Fields are read from the documents by name; a missing field is null.
 */
export interface ArrowSchemaSpec {
  [field: string]: ArrowTypeSpec
}

/** Options of every Arrow read (`findArrow`, `aggregateArrow`, their cursors, `pipeArrow`). */
export interface ArrowOptions {
  /**
   * The columns: a {@link ArrowSchemaSpec} or an apache-arrow `Schema`, nested at most 32 levels
   * (a top-level column is level 1, a struct's field or a list's item one level below). It
   * becomes the query's projection (its top-level fields; `_id` only when listed) unless the
   * options hold a `projection` key (yours is sent; `projection: undefined` sends none). Without
   * one, the columns are inferred from every document of the first batch (a Table or a pipe: its
   * first ~16 MiB; a cursor: its first record batch) as PyMongoArrow does: every field in order of
   * first appearance, typed by its first non-null value (documents as structs, arrays as lists),
   * except that numeric columns widen over every value seen (int32 -> int64 -> double: JavaScript
   * stores `10` as an int32 and `10.5` as a double); a field only ever null there is a null column,
   * and types no column holds (regex, code, ...) are left out. A document nested deeper than 32
   * levels fails inference with a `MongoInvalidArgumentError`: give a schema that leaves it out.
   */
  schema?: ArrowSchemaSpec | ApacheArrow.Schema
  /**
   * A value whose type does not fit its column: `'null'` (default) stores null and counts it (see
   * `ArrowCursor.typeMismatches`, and the table's schema metadata `rumongo.typeMismatches`);
   * `'error'` fails the read with a {@link MongoArrowTypeMismatchError}. Lossless conversions are
   * not mismatches: int32 into int64, an int64 that fits into int32, ints into double (up to 2^53).
   * An inferred column never nulls a value it would have widened to hold had it seen it in the
   * first batch: a number in a numeric column (a double after a first batch of int32s, an int64
   * beyond 2^53 in a double column, which a double would round) or any value in a column that was
   * only null fails the read with a {@link MongoArrowTypeMismatchError} whatever this option says
   * (the stream's schema cannot change once written; give a schema, e.g. `{ total: 'double' }`).
   */
  onTypeMismatch?: 'null' | 'error'
  /** Inferred ObjectId columns: `'binary'` (default, 12 bytes) or `'hex'` (utf8). */
  objectId?: 'binary' | 'hex'
}

/** A schema as Rust reads it: `[{ name, type }]`, a type being a name, `{ list }` or `{ struct }`. */
export type NativeFields = { name: string; type: NativeType }[]
type NativeType = ArrowTypeName | 'null' | { list: NativeType } | { struct: NativeFields }

const TYPE_NAMES: ReadonlySet<string> = new Set<ArrowTypeName>([
  'int32',
  'int64',
  'double',
  'bool',
  'utf8',
  'timestamp',
  'objectId',
  'objectIdHex',
  'decimal128',
  'binary',
])

/**
 * `schema` (DSL or apache-arrow `Schema`) as Rust reads it; a bad one throws
 * MongoInvalidArgumentError, a circular one or one nested deeper than Rust builds
 * (`MAX_ARROW_NESTING` levels) included: the walk stops there, so no schema exhausts the stack.
 */
export function nativeFields(schema: ArrowSchemaSpec | ApacheArrow.Schema): NativeFields {
  if (isArrowSchema(schema)) return schema.fields.map((field) => fromArrowField(field, field.name, 1))
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    throw new MongoInvalidArgumentError(
      `Arrow schema must be an object of field types or an apache-arrow Schema, got ${describe(schema)}`,
    )
  }
  return specFields(schema, '', 1, [schema])
}

/** The fields of `spec`, at `level`; `within` holds the specs and lists that contain them. */
function specFields(spec: ArrowSchemaSpec, path: string, level: number, within: object[]): NativeFields {
  return Object.entries(spec).map(([name, type]) => {
    const fieldPath = path === '' ? name : `${path}.${name}`
    if (name === '')
      throw new MongoInvalidArgumentError(`Arrow schema: a field with an empty name at '${path}'`)
    return { name, type: specType(type, fieldPath, level, within) }
  })
}

/** The type of the column at `path`, at `level` (see {@link checkLevel}). */
function specType(type: unknown, path: string, level: number, within: object[]): NativeType {
  checkLevel(path, level)
  if (typeof type === 'string') {
    if (TYPE_NAMES.has(type)) return type as ArrowTypeName
    throw new MongoInvalidArgumentError(
      `Arrow schema: field '${path}' has an unknown type '${type}' (expected one of ${[...TYPE_NAMES].join(', ')}, [type] or { field: type })`,
    )
  }
  if (typeof type === 'object' && type !== null && within.includes(type)) {
    throw new MongoInvalidArgumentError(`Arrow schema: field '${path}' contains itself (a circular schema)`)
  }
  if (Array.isArray(type)) {
    if (type.length !== 1) {
      throw new MongoInvalidArgumentError(
        `Arrow schema: field '${path}' is a list: write its item type as [type], got ${type.length} items`,
      )
    }
    return { list: specType(type[0], `${path}[]`, level + 1, [...within, type]) }
  }
  if (typeof type === 'object' && type !== null && Object.getPrototypeOf(type) === Object.prototype) {
    return { struct: specFields(type as ArrowSchemaSpec, path, level + 1, [...within, type]) }
  }
  throw new MongoInvalidArgumentError(
    `Arrow schema: field '${path}' has no valid type, got ${describe(type)}`,
  )
}

/**
 * A column at `level` (a top-level one is at 1, a struct's field or a list's item one below its
 * parent) within what Rust builds: `MAX_ARROW_NESTING` (`src/format/arrow/schema.rs`).
 */
function checkLevel(path: string, level: number): void {
  if (level > MAX_ARROW_NESTING) {
    throw new MongoInvalidArgumentError(
      `Arrow schema: field '${path}' is nested deeper than ${MAX_ARROW_NESTING} levels (each struct or list is one), which rumongo does not build`,
    )
  }
}

function isArrowSchema(value: unknown): value is ApacheArrow.Schema {
  return (
    typeof value === 'object' &&
    value !== null &&
    Array.isArray((value as { fields?: unknown }).fields) &&
    (value as { metadata?: unknown }).metadata instanceof Map
  )
}

const EXTENSION_NAME = 'ARROW:extension:name'

/** An apache-arrow field's type in Rust's terms; a type rumongo does not build throws. */
function fromArrowField(
  field: ApacheArrow.Field,
  path: string,
  level: number,
): { name: string; type: NativeType } {
  return { name: field.name, type: fromArrowType(field, path, level) }
}

/**
 * apache-arrow's `Type` ids (stable in the Arrow format), read from the type itself: the schema may
 * come from either of apache-arrow's builds (CommonJS or ESM), whose classes differ.
 */
const ArrowTypeId = {
  Int: 2,
  Float: 3,
  Binary: 4,
  Utf8: 5,
  Bool: 6,
  Timestamp: 10,
  List: 12,
  Struct: 13,
  FixedSizeBinary: 15,
}
const DOUBLE_PRECISION = 2
const MILLISECOND = 1

function fromArrowType(field: ApacheArrow.Field, path: string, level: number): NativeType {
  checkLevel(path, level)
  const type = field.type as ApacheArrow.DataType & Record<string, any>
  const extension = field.metadata?.get(EXTENSION_NAME)
  switch (type.typeId) {
    case ArrowTypeId.Int:
      if (type.isSigned && type.bitWidth === 32) return 'int32'
      if (type.isSigned && type.bitWidth === 64) return 'int64'
      break
    case ArrowTypeId.Float:
      if (type.precision === DOUBLE_PRECISION) return 'double'
      break
    case ArrowTypeId.Bool:
      return 'bool'
    case ArrowTypeId.Utf8:
      return extension === OBJECT_ID_EXTENSION ? 'objectIdHex' : 'utf8'
    case ArrowTypeId.Timestamp:
      if (type.unit === MILLISECOND && (type.timezone ?? 'UTC') === 'UTC') return 'timestamp'
      break
    case ArrowTypeId.FixedSizeBinary:
      if (type.byteWidth === 12 && extension !== DECIMAL128_EXTENSION) return 'objectId'
      if (type.byteWidth === 16 && extension !== OBJECT_ID_EXTENSION) return 'decimal128'
      break
    case ArrowTypeId.Binary:
      return 'binary'
    case ArrowTypeId.List:
      return { list: fromArrowType(type.children[0], `${path}[]`, level + 1) }
    case ArrowTypeId.Struct:
      return {
        struct: (type.children as ApacheArrow.Field[]).map((child) =>
          fromArrowField(child, `${path}.${child.name}`, level + 1),
        ),
      }
  }
  throw new MongoInvalidArgumentError(
    `Arrow schema: field '${path}' has type ${String(type)}, which rumongo does not build (int32, int64, float64, bool, utf8, timestamp[ms, UTC], fixed_size_binary[12 or 16], binary, list, struct)`,
  )
}

export const OBJECT_ID_EXTENSION = 'rumongo.objectid'
export const DECIMAL128_EXTENSION = 'rumongo.decimal128'

/**
 * The projection a schema becomes: its top-level fields, and `_id: 0` unless it lists `_id`.
 * Nested fields are not projected one by one: a document whose struct field holds something else
 * (a string) must reach the builder to be counted as a mismatch, not vanish as missing.
 */
export function schemaProjection(fields: NativeFields): Document {
  const projection: Document = {}
  for (const { name } of fields) projection[name] = 1
  if (!('_id' in projection)) projection._id = 0
  return projection
}

/**
 * The format of the cursors Arrow reads run: each item is a server batch whose documents' BSON is a
 * `rawBatch` handle (not a Buffer: see `RawBatch` in `src/format/arrow.rs`), which the query's
 * `NativeArrowEncoder` takes and builds into record batches.
 */
export const RAW_BATCHES: BatchFormat = {
  output: () => BatchOutput.ArrowRaw,
  decoder: () => (batch) => [batch],
}

/** Metadata key of a table's type-mismatch counts (JSON `{ path: count }`). */
export const TYPE_MISMATCHES_KEY = 'rumongo.typeMismatches'

type ApacheArrowModule = typeof ApacheArrow

/**
 * The optional peer dependency `apache-arrow`, loaded on first use: the build the application
 * loaded itself (CommonJS, when it `require`d it first), else the ESM build. apache-arrow checks
 * classes with `instanceof`, so a Table must come from the same build as the application's.
 * @throws MongoMissingDependencyError (code `ERR_MISSING_DEPENDENCY`) when it is not installed.
 */
export async function loadApacheArrow(purpose: string): Promise<ApacheArrowModule> {
  let commonJsPath: string
  try {
    commonJsPath = require.resolve('apache-arrow')
  } catch (error) {
    if ((error as NodeJS.ErrnoException)?.code !== 'MODULE_NOT_FOUND') throw error
    throw new MongoMissingDependencyError(
      `${purpose} needs the optional dependency 'apache-arrow': npm install apache-arrow (or ask for { as: 'ipc' } bytes)`,
      { dependencyName: 'apache-arrow', cause: error },
    )
  }
  if (require.cache[commonJsPath]) return require(commonJsPath) as ApacheArrowModule
  return (await import('apache-arrow')) as ApacheArrowModule
}

/** The 8 bytes that end an Arrow IPC stream (a continuation marker and a zero length). */
export const END_OF_STREAM = Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0])

/** Record batches from Rust: a whole IPC stream (schema, record batches, end of stream). */
export interface IpcBatch {
  ipc: Buffer
  /** Length of the schema message at the start of `ipc`. */
  schemaBytes: number
  rows: number
  recordBatches: number
}
