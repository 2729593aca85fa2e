/**
 * The document types of a `Model`: what `Model.define` reads given its field list, and what
 * `Model.fromMongoose` reads given a Mongoose model. Structural: rumongo's declarations do not
 * import Mongoose's types (a project without Mongoose compiles them).
 * @module
 */
import type { Document } from 'bson'
import type { WithId } from './filter.js'

/** `true` when `T` is `any`. */
type IsAny<T> = 0 extends 1 & T ? true : false

/** Values a projection path stops at: it cannot read inside them. */
type Leaf =
  | string
  | number
  | bigint
  | boolean
  | Date
  | RegExp
  | Uint8Array
  | ((...args: any[]) => any)
  | { _bsontype: string }

/** `'address'` for `'address.city'`. */
type HeadOf<Path extends string> = Path extends `${infer Head}.${string}` ? Head : Path

/** The paths under `Key`: `'city'` for `'address.city'` under `'address'`. */
type PathsUnder<Path extends string, Key extends string> = Path extends `${Key}.${infer Rest}` ? Rest : never

/**
 * `T` narrowed to `Paths` (dotted paths reach into embedded documents and arrays of them), as an
 * inclusion projection returns it. A schema with an index signature (`Document`) has every listed
 * path, of type `any`.
 */
export type Projected<T, Paths extends string> =
  IsAny<T> extends true
    ? { [Key in HeadOf<Paths>]: Key extends Paths ? any : Projected<any, PathsUnder<Paths, Key>> }
    : T extends Leaf
      ? T
      : T extends ReadonlyArray<infer Element>
        ? Projected<Element, Paths>[]
        : string extends keyof T
          ? {
              [Key in HeadOf<Paths>]: Key extends Paths
                ? T[Key & keyof T]
                : Projected<T[Key & keyof T], PathsUnder<Paths, Key>>
            }
          : {
              [Key in keyof T as Key extends HeadOf<Paths> ? Key : never]: Key extends Paths
                ? T[Key]
                : Projected<T[Key], PathsUnder<Paths, Key & string>>
            }

/**
 * The paths a field list may name for `TSchema`: a field, or a dotted path inside one (unchecked
 * past the first segment); any path when the schema has an index signature (`Document`).
 */
export type SchemaPath<TSchema> = string extends keyof TSchema
  ? string
  : (keyof TSchema & string) | `${keyof TSchema & string}.${string}`

/** The paths a `Model.define` field list includes (`_id` aside). */
type ListedPaths<TFields> =
  TFields extends ReadonlyArray<infer Path>
    ? Path & string
    : { [Path in keyof TFields]: TFields[Path] extends 0 | false ? never : Path }[keyof TFields] & string

/**
 * What `Model.define` takes as the field list `TFields` for a `Collection<TSchema>`: `TFields`
 * itself when each path is one of the schema's (or the paths are unknown to the compiler, as in a
 * `string[]`), so that a path the schema lacks (a typo) fails to compile.
 */
export type CheckedFields<TSchema, TFields> =
  string extends ListedPaths<TFields>
    ? unknown
    : TFields extends ReadonlyArray<any>
      ? readonly SchemaPath<WithId<TSchema>>[]
      : { readonly [Path in keyof TFields]: Path extends SchemaPath<WithId<TSchema>> ? TFields[Path] : never }

/** `_id` is read unless the field list says `_id: 0` (or `false`). */
type ReadsId<TFields> = TFields extends { readonly _id: 0 | false } ? never : '_id'

/**
 * The documents a model over a `Collection<TSchema>` reads with the field list `TFields`: the
 * schema narrowed to the listed paths, with `_id` unless the list has `_id: 0`. A list whose paths
 * are not known to the compiler (a `string[]`) reads `WithId<TSchema>`.
 */
export type ModelDocument<TSchema, TFields> =
  string extends ListedPaths<TFields>
    ? WithId<TSchema>
    : Projected<WithId<TSchema>, ListedPaths<TFields> | ReadsId<TFields>>

/** A type Mongoose gave as `any` (an untyped model) reads as a `Document`. */
type DocumentUnlessAny<T> = IsAny<T> extends true ? Document : T extends Document ? T : Document

/**
 * The raw document type of a Mongoose model (its `Model<TRawDocType, ...>`), read from
 * `castObject`, which returns it: `Document` for an untyped model.
 */
export type MongooseRawDocType<TModel> = TModel extends {
  castObject(obj: any, ...rest: any[]): infer Raw
}
  ? DocumentUnlessAny<Raw>
  : Document

/**
 * The documents a model made by `Model.fromMongoose` reads: Mongoose's own lean document type
 * (with `_id`, and `__v` unless the schema turns the version key off), read from the model's
 * Standard Schema output type (Mongoose 9); else `WithId` of its raw document type.
 */
export type MongooseLeanDocument<TModel> = TModel extends {
  readonly '~standard': { readonly types?: { readonly output: infer Lean } | undefined }
}
  ? IsAny<Lean> extends true
    ? WithId<Document>
    : Lean extends Document
      ? Lean
      : WithId<MongooseRawDocType<TModel>>
  : WithId<MongooseRawDocType<TModel>>
