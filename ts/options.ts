/**
 * Operation options: the official driver's names and types, validated in one table per operation,
 * then split into the command options sent to Rust (as BSON) and the BSON decode options.
 * @module
 */
import type { Document } from 'bson'
import { isBSONOptionName, resolveBSONOptions, type BSONOptions, type ResolvedBSONOptions } from './bson.js'
import { MongoInvalidArgumentError } from './errors.js'
import {
  ReadPreference,
  type ReadConcern,
  type ReadConcernLevel,
  type ReadPreferenceMode,
} from './read_preference.js'
import { checkSession, type ClientSession } from './session.js'
import { checkAcyclic, describe, isPlainObject, jsonForMessage } from './validate.js'

/** One sort direction, as the official driver accepts it. */
export type SortDirection = 1 | -1 | 'asc' | 'desc' | 'ascending' | 'descending' | { readonly $meta: string }

/**
 * A sort: `{ a: 1, b: -1 }`, `'a'`, `['a', 'b']`, `['a', -1]`, `[['a', 1], ['b', -1]]` or a Map;
 * readonly arrays and tuples (`as const`) too. The official driver's type, so the same call sites
 * compile: it also admits a bare direction (`1`), which both drivers reject when the query runs.
 */
export type Sort =
  | string
  | Exclude<SortDirection, { readonly $meta: string }>
  | ReadonlyArray<string>
  | { readonly [key: string]: SortDirection }
  | ReadonlyMap<string, SortDirection>
  | ReadonlyArray<readonly [string, SortDirection]>
  | readonly [string, SortDirection]

/** An index name or key pattern. */
export type Hint = string | Document

/** A read preference mode, or an object with `mode` (the official driver's `ReadPreference` fits). */
export type ReadPreferenceLike =
  | ReadPreferenceMode
  | { mode: ReadPreferenceMode; tags?: Document[]; maxStalenessSeconds?: number; hedge?: Document }

/** A read concern level, `{ level }` or a `ReadConcern` (the official driver's type). */
export type ReadConcernLike = ReadConcern | { level: ReadConcernLevel } | ReadConcernLevel

/**
 * How `timeoutMS` bounds a cursor: `cursorLifetime` (the default) gives the command and every
 * getMore one deadline, so `toArray()` completes within `timeoutMS`; `iteration` gives each read
 * of a new batch `timeoutMS` of its own.
 */
export const CursorTimeoutMode = Object.freeze({
  ITERATION: 'iteration',
  LIFETIME: 'cursorLifetime',
} as const)
export type CursorTimeoutMode = (typeof CursorTimeoutMode)[keyof typeof CursorTimeoutMode]

/** Collation options, sent to the server as given. */
export interface CollationOptions {
  locale: string
  caseLevel?: boolean
  caseFirst?: string
  strength?: number
  numericOrdering?: boolean
  alternate?: string
  maxVariable?: string
  backwards?: boolean
  normalization?: boolean
}

/** Options every read operation accepts. */
export interface ReadOperationOptions extends BSONOptions {
  /** Server-side time limit in milliseconds. */
  maxTimeMS?: number
  /**
   * Client-side time limit in milliseconds for the whole operation (server selection, connection
   * checkout, a retry, the server's work; for a cursor see `timeoutMode`). Overrides the client's
   * `timeoutMS`; `0` means no limit. Fails with `MongoOperationTimeoutError`. Without `maxTimeMS`,
   * it is also sent to the server as `maxTimeMS` (not by `distinct`, nor by a cursor in
   * `iteration` mode).
   */
  timeoutMS?: number
  /** Any value, attached to the operation in the server's logs and profiler. */
  comment?: unknown
  readPreference?: ReadPreferenceLike
  readConcern?: ReadConcernLike
  /** A session of rumongo's `client.startSession()` the read runs in (causal or snapshot reads). */
  session?: ClientSession
}

/** Options of `find` and `findOne`: every FindOptions field of the official driver. */
export interface FindOptions extends ReadOperationOptions {
  timeoutMode?: CursorTimeoutMode
  /** The cursor yields the server's plan instead of the documents (see `FindCursor.explain`). */
  explain?: boolean | string | { verbosity: string | boolean; maxTimeMS?: number }
  projection?: Document
  sort?: Sort
  /** Maximum number of documents; a negative value returns at most one batch. */
  limit?: number
  skip?: number
  batchSize?: number
  hint?: Hint
  collation?: CollationOptions
  let?: Document
  allowDiskUse?: boolean
  min?: Document
  max?: Document
  returnKey?: boolean
  showRecordId?: boolean
  noCursorTimeout?: boolean
  /** Return only the first batch and close the cursor. */
  singleBatch?: boolean
  allowPartialResults?: boolean
  /** A tailable cursor (capped collections): it stays open at the end of the data. */
  tailable?: boolean
  /** With `tailable`: each getMore waits up to `maxAwaitTimeMS` for new data. */
  awaitData?: boolean
  /** With `tailable` and `awaitData`: the `maxTimeMS` of each getMore. */
  maxAwaitTimeMS?: number
}

/** Options of `aggregate`. */
export interface AggregateOptions extends ReadOperationOptions {
  timeoutMode?: CursorTimeoutMode
  /** The cursor yields the server's plan instead of the documents. */
  explain?: boolean | string | { verbosity: string | boolean; maxTimeMS?: number }
  allowDiskUse?: boolean
  batchSize?: number
  collation?: CollationOptions
  hint?: Hint
  let?: Document
  maxAwaitTimeMS?: number
}

/** Options of `countDocuments`. */
export interface CountDocumentsOptions extends ReadOperationOptions {
  skip?: number
  limit?: number
  hint?: Hint
  collation?: CollationOptions
}

/** Options of `estimatedDocumentCount`. */
export type EstimatedDocumentCountOptions = ReadOperationOptions

/** Options of `distinct`. */
export interface DistinctOptions extends ReadOperationOptions {
  hint?: Hint
  collation?: CollationOptions
}

export type OptionKind =
  | 'integer'
  | 'boolean'
  | 'document'
  | 'sort'
  | 'hint'
  | 'any'
  | 'readPreference'
  | 'readConcern'
  | 'timeoutMode'
  | 'explain'
  | 'session'

/**
 * One operation's options, declared once: each option's kind (its type and validation, see
 * `normalizeOption`) and where it goes. Every option in `options` is sent to Rust, which takes
 * exactly these keys and rejects any other (src/options.rs `finish`), except those in `local`,
 * which the TypeScript layer acts on itself. `__tests__/option_schema.test.ts` checks the two
 * sides agree.
 */
export interface OperationSpec {
  name: string
  options: Readonly<Record<string, OptionKind>>
  /** Options acted on here and never sent to Rust (`explain`: the cursor runs an explain command). */
  local?: readonly string[]
  /** Official driver options rumongo does not implement: rejected, never silently ignored. */
  unsupported: readonly string[]
}

const READ_OPTIONS = {
  maxTimeMS: 'integer',
  timeoutMS: 'integer',
  comment: 'any',
  readPreference: 'readPreference',
  readConcern: 'readConcern',
  session: 'session',
} as const satisfies Record<string, OptionKind>

const NOT_ON_READ_PATH = ['signal', 'fieldsAsRaw', 'checkKeys']

/** What to do instead of a refused operation option (else: leave it out, or use the official driver). */
const REFUSED_OPTION_HINTS: Readonly<Record<string, string>> = {
  signal: 'bound the read with timeoutMS instead (or close() its cursor)',
  fieldsAsRaw: 'use raw: true for whole documents',
  checkKeys: 'it concerns writes: leave it out',
  oplogReplay: 'servers ignore it since MongoDB 4.4: leave it out',
  explain: 'run the explain command with db.command({ explain: ... }), or this read with the official driver',
  bypassDocumentValidation:
    'it concerns $out and $merge, which rumongo does not run: run this aggregate with the official driver',
  writeConcern:
    'it concerns $out and $merge, which rumongo does not run: run this aggregate with the official driver',
  out: 'rumongo does not write: run this aggregate with the official driver',
}

export const FIND: OperationSpec = {
  name: 'find',
  options: {
    ...READ_OPTIONS,
    projection: 'document',
    sort: 'sort',
    limit: 'integer',
    skip: 'integer',
    batchSize: 'integer',
    hint: 'hint',
    collation: 'document',
    let: 'document',
    allowDiskUse: 'boolean',
    min: 'document',
    max: 'document',
    returnKey: 'boolean',
    showRecordId: 'boolean',
    noCursorTimeout: 'boolean',
    singleBatch: 'boolean',
    allowPartialResults: 'boolean',
    timeoutMode: 'timeoutMode',
    explain: 'explain',
    tailable: 'boolean',
    awaitData: 'boolean',
    maxAwaitTimeMS: 'integer',
  },
  local: ['explain'],
  unsupported: [...NOT_ON_READ_PATH, 'oplogReplay'],
}

export const AGGREGATE: OperationSpec = {
  name: 'aggregate',
  options: {
    ...READ_OPTIONS,
    allowDiskUse: 'boolean',
    batchSize: 'integer',
    collation: 'document',
    hint: 'hint',
    let: 'document',
    maxAwaitTimeMS: 'integer',
    timeoutMode: 'timeoutMode',
    explain: 'explain',
  },
  local: ['explain'],
  unsupported: [...NOT_ON_READ_PATH, 'bypassDocumentValidation', 'writeConcern', 'out'],
}

export const COUNT_DOCUMENTS: OperationSpec = {
  name: 'countDocuments',
  options: { ...READ_OPTIONS, skip: 'integer', limit: 'integer', hint: 'hint', collation: 'document' },
  unsupported: [...NOT_ON_READ_PATH, 'explain'],
}

export const COUNT: OperationSpec = {
  name: 'count',
  options: { ...READ_OPTIONS, skip: 'integer', limit: 'integer', hint: 'hint', collation: 'document' },
  unsupported: [...NOT_ON_READ_PATH, 'explain'],
}

export const ESTIMATED_DOCUMENT_COUNT: OperationSpec = {
  name: 'estimatedDocumentCount',
  options: READ_OPTIONS,
  unsupported: [...NOT_ON_READ_PATH, 'explain'],
}

export const DISTINCT: OperationSpec = {
  name: 'distinct',
  options: { ...READ_OPTIONS, hint: 'hint', collation: 'document' },
  unsupported: [...NOT_ON_READ_PATH, 'explain'],
}

/** What an operation sends to Rust and how it decodes the reply. */
export interface ResolvedOperationOptions {
  /** Command options, named as the server and the official driver name them. */
  command: Document
  bson: ResolvedBSONOptions
}

/** Validates `options` for `spec` and splits them; unknown keys are ignored, as the official driver does. */
export function resolveOperationOptions(
  spec: OperationSpec,
  options: unknown,
  parent: ResolvedBSONOptions,
): ResolvedOperationOptions {
  if (options === undefined || options === null) return { command: {}, bson: parent }
  if (!isPlainObject(options)) {
    throw new MongoInvalidArgumentError(`${spec.name} options must be an object, got ${describe(options)}`)
  }
  const command: Document = {}
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined || isBSONOptionName(key)) continue
    if (spec.unsupported.includes(key)) {
      const hint = REFUSED_OPTION_HINTS[key] ?? 'leave it out, or run this read with the official driver'
      throw new MongoInvalidArgumentError(
        `rumongo does not support the ${spec.name} option "${key}": ${hint}`,
      )
    }
    const kind = spec.options[key]
    if (kind !== undefined) command[key] = normalizeOption(spec.name, key, kind, value)
    if (kind === 'readPreference') {
      // The official driver reads `hedge`, `readPreferenceTags` and `maxStalenessSeconds` beside a
      // mode, and a plain object's hedge only from beside it (ReadPreference.fromOptions).
      command[key] = normalizeReadPreference(ReadPreference.fromOptions(options))
    }
  }
  return { command, bson: resolveBSONOptions(options, parent) }
}

/** Validates and normalizes one option value, as a cursor builder method sets it. */
export function normalizeOperationOption(spec: OperationSpec, key: string, value: unknown): unknown {
  const kind = spec.options[key]
  if (kind === undefined) throw new Error(`no option ${key} in ${spec.name}`)
  return value === undefined ? undefined : normalizeOption(spec.name, key, kind, value)
}

function normalizeOption(operation: string, key: string, kind: OptionKind, value: unknown): unknown {
  const fail = (expected: string): never => {
    throw new MongoInvalidArgumentError(
      `${operation} option "${key}" must be ${expected}, got ${describe(value)}`,
    )
  }
  switch (kind) {
    case 'any':
      return value
    case 'integer':
      return Number.isSafeInteger(value) ? value : fail('an integer')
    case 'boolean':
      return typeof value === 'boolean' ? value : fail('a boolean')
    case 'document':
      if (!isPlainObject(value)) return fail('an object')
      checkAcyclic(value)
      return value
    case 'hint':
      if (typeof value === 'string') return value
      if (!isPlainObject(value)) return fail('an index name or key object')
      checkAcyclic(value)
      return value
    case 'sort':
      return formatSort(value)
    case 'readPreference':
      return normalizeReadPreference(value) ?? fail('a read preference mode or { mode }')
    case 'readConcern':
      return normalizeReadConcern(value) ?? fail('a read concern level or { level }')
    case 'timeoutMode':
      return value === 'cursorLifetime' || value === 'iteration'
        ? value
        : fail("'cursorLifetime' or 'iteration'")
    case 'explain':
      return typeof value === 'boolean' || typeof value === 'string' || isPlainObject(value)
        ? value
        : fail('a boolean, a verbosity or { verbosity, maxTimeMS }')
    case 'session':
      // Sent as the number the native side knows it by (`ClientSession.toBSON`).
      return checkSession(operation, value)
  }
}

function sortDirection(value: unknown): 1 | -1 | { $meta: string } {
  if (value === 1 || value === 'asc' || value === 'ascending') return 1
  if (value === -1 || value === 'desc' || value === 'descending') return -1
  if (isPlainObject(value) && typeof value.$meta === 'string') {
    // The official driver sends the object as given: one that contains itself cannot be sent.
    checkAcyclic(value)
    return { $meta: value.$meta }
  }
  throw new MongoInvalidArgumentError(`Invalid sort direction: ${jsonForMessage(value)}`)
}

/** The official driver's sort forms (its `formatSort`), as one ordered key document. */
export function formatSort(sort: unknown): Document | undefined {
  if (sort === undefined || sort === null) return undefined
  let entries: Iterable<readonly [unknown, unknown]>
  if (typeof sort === 'string') entries = [[sort, 1]]
  else if (typeof sort !== 'object') throw new MongoInvalidArgumentError(`Invalid sort: ${describe(sort)}`)
  else if (sort instanceof Map) entries = sort
  else if (!Array.isArray(sort)) entries = Object.entries(sort)
  else if (Array.isArray(sort[0])) entries = sort
  else if (sort.length === 2 && isSortDirection(sort[1])) entries = [sort as [unknown, unknown]]
  else entries = sort.map((key) => [key, 1] as const)
  const formatted: Document = {}
  for (const [key, direction] of entries) formatted[String(key)] = sortDirection(direction)
  return Object.keys(formatted).length > 0 ? formatted : undefined
}

function isSortDirection(value: unknown): boolean {
  try {
    sortDirection(value)
    return true
  } catch {
    return false
  }
}

const READ_PREFERENCE_MODES = ['primary', 'primaryPreferred', 'secondary', 'secondaryPreferred', 'nearest']

function normalizeReadPreference(value: unknown): Document | undefined {
  if (typeof value === 'string') return READ_PREFERENCE_MODES.includes(value) ? { mode: value } : undefined
  if (!isPlainObject(value) || !READ_PREFERENCE_MODES.includes(value.mode)) return undefined
  const normalized: Document = { mode: value.mode }
  if (Array.isArray(value.tags) && value.tags.length > 0) normalized.tagSets = value.tags
  if (typeof value.maxStalenessSeconds === 'number' && value.maxStalenessSeconds >= 0) {
    normalized.maxStalenessSeconds = value.maxStalenessSeconds
  }
  if (isPlainObject(value.hedge)) normalized.hedge = value.hedge
  return normalized
}

function normalizeReadConcern(value: unknown): Document | undefined {
  if (typeof value === 'string') return { level: value }
  if (isPlainObject(value) && typeof value.level === 'string') return { level: value.level }
  return undefined
}
