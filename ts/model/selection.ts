/**
 * Field selection of a `Model` and its queries: the schema's fields, Mongoose's `select` forms, and
 * the inclusion projection they make.
 * @module
 */
import type { Document } from 'bson'
import { isBSONOptionName } from '../bson.js'
import { MongoInvalidArgumentError } from '../errors.js'
import { FIND } from '../options.js'
import { describe, isPlainObject, jsonForMessage } from '../validate.js'

/**
 * A field selection, in any of Mongoose's `select` forms: `'name age'` (inclusion), `'-age'`
 * (exclusion), `'+password'` (adds a `select: false` field), an array of those strings, or
 * `{ name: 1 }` / `{ age: 0 }`. Every path must be in the schema.
 */
export type Selection = string | readonly string[] | { readonly [path: string]: 0 | 1 | boolean }

/** A schema for `Model.define`: `{ name: 1, 'address.city': 1 }` (`_id: 0` drops `_id`), or a list of paths. */
export type ModelFields = readonly string[] | { readonly [path: string]: 0 | 1 | boolean }

/** The resolved fields of one query: which paths to include, and whether `_id` comes along. */
export interface FieldSet {
  paths: readonly string[]
  includeId: boolean
}

/**
 * Refuses a projection that is find options (`find(filter, { sort, limit })`, the driver's
 * signature): Mongoose reads the second argument as the projection, and so does rumongo.
 */
export function checkNotFindOptions(
  method: string,
  projection: unknown,
  isReadable: (path: string) => boolean,
) {
  if (!isPlainObject(projection)) return
  const option = Object.keys(projection).find(
    (key) => (key in FIND.options || isBSONOptionName(key)) && !isReadable(key),
  )
  if (option !== undefined) {
    throw new MongoInvalidArgumentError(
      `${method}(filter, projection, options): the second argument is the projection, as in Mongoose, ` +
        `and '${option}' is a ${method === 'findOne' ? 'find' : method} option, not a schema field; ` +
        `pass options third: ${method}(filter, null, { ${option}: ... })`,
    )
  }
}

export function checkPath(path: unknown): asserts path is string {
  if (typeof path !== 'string' || path.length === 0 || path.startsWith('$') || path.split('.').includes('')) {
    throw new MongoInvalidArgumentError(`a field path must be a non-empty dotted name, got ${describe(path)}`)
  }
}

/** `path` is `field`, or a path inside it. */
export function isSameOrInside(path: string, field: string): boolean {
  return path === field || path.startsWith(`${field}.`)
}

/**
 * Sorted, unique paths with none inside another: the server rejects `{ a: 1, 'a.b': 1 }` as a
 * path collision, and `a` already brings `a.b`.
 */
export function normalizePaths(paths: readonly string[]): string[] {
  const sorted = [...new Set(paths)].sort()
  return sorted.filter((path) => !sorted.some((other) => other !== path && isSameOrInside(path, other)))
}

export function toProjection({ paths, includeId }: FieldSet): Document {
  const projection: Document = Object.fromEntries(paths.map((path) => [path, 1]))
  // An empty inclusion would mean "everything": ask for the `_id` alone instead.
  if (paths.length === 0 && includeId) projection._id = 1
  if (!includeId) projection._id = 0
  return projection
}

export function notInSchema(path: string, fields: readonly string[]): MongoInvalidArgumentError {
  return new MongoInvalidArgumentError(
    `'${path}' is not a field of this model's schema (fields: ${fields.join(', ')}); ` +
      'add it to the schema to read it',
  )
}

/** Parses a selection into included, excluded and forced (`+path`) paths, plus what it says of `_id`. */
export function parseSelection(selection: Selection): {
  include: string[]
  exclude: string[]
  force: string[]
} {
  const include: string[] = []
  const exclude: string[] = []
  const force: string[] = []
  const add = (token: string, included: boolean) => {
    if (token.startsWith('+')) force.push(token.slice(1))
    else if (token.startsWith('-')) exclude.push(token.slice(1))
    else (included ? include : exclude).push(token)
  }
  if (typeof selection === 'string' || Array.isArray(selection)) {
    const tokens = typeof selection === 'string' ? selection.split(/\s+/) : selection
    for (const token of tokens) if (token !== '') add(String(token), true)
  } else if (isPlainObject(selection)) {
    for (const [path, value] of Object.entries(selection)) add(path, Boolean(value))
  } else {
    throw new MongoInvalidArgumentError(
      `select expects a string, array or object, got ${describe(selection)}`,
    )
  }
  for (const path of [...include, ...exclude, ...force]) checkPath(path)
  return { include, exclude, force }
}

/** The fields left after `selection` narrows `current` (all paths checked against the schema). */
export function applySelection(
  current: FieldSet,
  selection: Selection,
  /** The model's schema fields, and its `select: false` ones. */
  context: { fields: FieldSet; hiddenFields: readonly string[] },
): FieldSet {
  const { include, exclude, force } = parseSelection(selection)
  const schemaFields = context.fields.paths
  const includedFields = include.filter((path) => path !== '_id')
  const excludedFields = exclude.filter((path) => path !== '_id')
  if (includedFields.length > 0 && excludedFields.length > 0) {
    throw new MongoInvalidArgumentError(
      `a selection cannot mix inclusion and exclusion (apart from _id): ${jsonForMessage(selection)}`,
    )
  }
  let paths = [...current.paths]
  // `select('_id')` alone is an inclusion too: the `_id` and nothing else.
  if (include.length > 0 && excludedFields.length === 0) {
    paths = includedFields.flatMap((path) => {
      // A path inside a selected field narrows it; a parent of fields selects those fields.
      const containing = paths.find((field) => isSameOrInside(path, field))
      if (containing) return [path]
      const inside = paths.filter((field) => isSameOrInside(field, path))
      if (inside.length > 0) return inside
      throw notInSchema(path, schemaFields)
    })
  }
  for (const path of excludedFields) {
    if (!schemaFields.some((field) => isSameOrInside(path, field) || isSameOrInside(field, path))) {
      throw notInSchema(path, schemaFields)
    }
    const container = paths.find((field) => field !== path && isSameOrInside(path, field))
    if (container) {
      throw new MongoInvalidArgumentError(
        `cannot exclude '${path}': the schema reads '${container}' whole; select the fields you want instead`,
      )
    }
    paths = paths.filter((field) => !isSameOrInside(field, path))
  }
  for (const path of force) {
    const known = [...schemaFields, ...context.hiddenFields]
    if (!known.some((field) => isSameOrInside(path, field))) throw notInSchema(path, schemaFields)
    paths.push(path)
  }
  let includeId = current.includeId
  if (exclude.includes('_id')) includeId = false
  else if (include.includes('_id')) includeId = true
  return { paths: normalizePaths(paths), includeId }
}
