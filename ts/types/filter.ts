/**
 * Query filter types: what `find`, `findOne`, `countDocuments`, ... accept for a `Collection<T>`.
 *
 * A user swaps the official driver's import for rumongo's, so a filter must compile exactly where
 * the official driver's does and fail where it fails: `{ age: 'eighteen' }` on a
 * `Collection<{ age: number }>` is an error in both. These types reproduce the behaviour of the
 * official driver's `Filter`, `Condition`, `FilterOperators`, `RootFilterOperators`, `WithId` and
 * `InferIdType` (mongodb/node-mongodb-native `src/mongo_types.ts`, Apache License 2.0); their
 * structure follows those closely, because the same structure is what gives the same errors.
 * `__tests__/types.test-d.ts` type-checks each call site against both drivers.
 *
 * What is checked, as in the official driver: each top-level field's value (the field's type, a
 * regex for a string, an element for an array, or operators on those), `$and` / `$or` / `$nor`
 * recursively. What is not: dotted paths (`'address.city'`) and unknown fields, which take any
 * value, and unknown `$`-operators.
 * @module
 */
import type { Binary, BSONRegExp, BSONType, Document, ObjectId, ObjectIdLike } from 'bson'

/** `_id`'s type for a schema: as declared (required or optional), else ObjectId. */
export type InferIdType<TSchema> = TSchema extends { _id: infer Id }
  ? // An `_id` declared as an empty object type (`{}`, `Record<string, never>`) cannot be matched.
    Record<any, never> extends Id
    ? never
    : Id
  : TSchema extends { _id?: infer Id }
    ? // `_id?: unknown`, or a schema with an index signature (`Document`): the server's default.
      unknown extends Id
      ? ObjectId
      : Id
    : ObjectId

/**
 * `Omit` that keeps a type with an index signature whole (`Omit<Document, '_id'>` would keep only
 * the signature) and is applied to each member of a union separately.
 */
export type EnhancedOmit<TRecordOrUnion, KeyUnion> = string extends keyof TRecordOrUnion
  ? TRecordOrUnion
  : TRecordOrUnion extends any
    ? Pick<TRecordOrUnion, Exclude<keyof TRecordOrUnion, KeyUnion>>
    : never

/** `T` with its `_id`: the declared type, or ObjectId when `T` declares none. */
export type WithId<TSchema> = EnhancedOmit<TSchema, '_id'> & { _id: InferIdType<TSchema> }

/** An array's element type; any other type as it is (the values `distinct` returns for a field). */
export type Flatten<T> = T extends ReadonlyArray<infer Element> ? Element : T

/** A query filter: conditions on `T`'s fields plus the top-level operators (`$and`, `$or`, ...). */
export type Filter<TSchema> = {
  [Field in keyof WithId<TSchema>]?: Condition<WithId<TSchema>[Field]>
} & RootFilterOperators<WithId<TSchema>>

/** A field's condition: a value it may equal (see `AlternativeType`), or operators on such values. */
export type Condition<T> = AlternativeType<T> | FilterOperators<AlternativeType<T>>

/**
 * The values a field of type `T` may be compared with: `T` itself, a regex for a string, and for
 * an array one of its elements (the server matches an array that contains it).
 */
export type AlternativeType<T> =
  T extends ReadonlyArray<infer Element> ? T | RegExpOrString<Element> : RegExpOrString<T>

/** A string may also be matched with a regular expression. */
export type RegExpOrString<T> = T extends string ? BSONRegExp | RegExp | T : T

/** A bit mask of the `$bits*` operators: a number, BinData, or bit positions. */
export type BitwiseFilter = number | Binary | ReadonlyArray<number>

/** The name of a BSON type, as `$type` accepts it (`'string'`, `'objectId'`, ...). */
export type BSONTypeAlias = keyof typeof BSONType

/**
 * A document that is not mistaken for an ObjectId: an ObjectId (or anything with its `id` and
 * `toHexString`) is a value to match, never an operator document.
 */
export type NonObjectIdLikeDocument = { [Key in keyof ObjectIdLike]?: never } & Document

/** The query operators on one field whose values are `TValue`; unknown `$`-operators pass unchecked. */
export interface FilterOperators<TValue> extends NonObjectIdLikeDocument {
  // Comparison
  $eq?: TValue
  $gt?: TValue
  $gte?: TValue
  $in?: ReadonlyArray<TValue>
  $lt?: TValue
  $lte?: TValue
  $ne?: TValue
  $nin?: ReadonlyArray<TValue>
  // Logical
  $not?: TValue extends string ? FilterOperators<TValue> | RegExp : FilterOperators<TValue>
  // Element
  /** `true` matches documents that have the field, also when its value is null. */
  $exists?: boolean
  $type?: BSONType | BSONTypeAlias
  // Evaluation
  $expr?: Record<string, any>
  $jsonSchema?: Record<string, any>
  $mod?: TValue extends number ? [number, number] : never
  $regex?: TValue extends string ? RegExp | BSONRegExp | string : never
  $options?: TValue extends string ? string : never
  // Geospatial
  $geoIntersects?: { $geometry: Document }
  $geoWithin?: Document
  $near?: Document
  $nearSphere?: Document
  $maxDistance?: number
  // Array
  $all?: ReadonlyArray<any>
  $elemMatch?: Document
  $size?: TValue extends ReadonlyArray<any> ? number : never
  // Bitwise
  $bitsAllClear?: BitwiseFilter
  $bitsAllSet?: BitwiseFilter
  $bitsAnyClear?: BitwiseFilter
  $bitsAnySet?: BitwiseFilter
  $rand?: Record<string, never>
}

/** The operators at the top of a filter; any other key is a field (dotted paths unchecked). */
export interface RootFilterOperators<TSchema> extends Document {
  $and?: Filter<TSchema>[]
  $nor?: Filter<TSchema>[]
  $or?: Filter<TSchema>[]
  $text?: {
    $search: string
    $language?: string
    $caseSensitive?: boolean
    $diacriticSensitive?: boolean
  }
  $where?: string | ((this: TSchema) => boolean)
  $comment?: string | Document
}
