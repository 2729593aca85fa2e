// Shared test helpers: both drivers on the test server, and deep equality that checks types.
import { setTimeout as sleep } from 'node:timers/promises'
import { expect, inject } from 'vitest'
import { MongoClient as OfficialClient, type Db, type Long } from 'mongodb'
import { MongoClient } from 'rumongo'

export const uri = inject('mongodbUri')

/** A database name unique to this test file and run, so files and reruns never share data. */
export function uniqueDbName(prefix: string): string {
  return `${prefix}_${process.pid}_${Date.now().toString(36)}`
}

export interface Drivers {
  official: OfficialClient
  rumongo: MongoClient
  close(): Promise<void>
}

export async function connectBoth(): Promise<Drivers> {
  const official = await OfficialClient.connect(uri)
  const rumongo = await MongoClient.connect(uri)
  return {
    official,
    rumongo,
    async close() {
      await Promise.all([official.close(), rumongo.close()])
    },
  }
}

function typeName(value: unknown): string {
  if (value === null) return 'null'
  if (typeof value !== 'object') return typeof value
  const bsontype = (value as { _bsontype?: string })._bsontype
  const ctor = Object.getPrototypeOf(value)?.constructor?.name ?? 'null-prototype'
  return bsontype ? `${ctor}/${bsontype}` : ctor
}

/**
 * The first difference between two values, comparing types (class and BSON type), key order,
 * and primitives with Object.is; `undefined` when they are identical in all of these.
 */
export function firstDifference(actual: unknown, expected: unknown, path = '$'): string | undefined {
  const actualType = typeName(actual)
  const expectedType = typeName(expected)
  if (actualType !== expectedType) return `${path}: type ${actualType} !== ${expectedType}`
  if (typeof actual !== 'object' || actual === null) {
    return Object.is(actual, expected) ? undefined : `${path}: ${String(actual)} !== ${String(expected)}`
  }
  if (actual instanceof Date) {
    return Object.is(actual.getTime(), (expected as Date).getTime()) ? undefined : `${path}: date differs`
  }
  if (actual instanceof Uint8Array) {
    return Buffer.compare(actual, expected as Uint8Array) === 0 ? undefined : `${path}: bytes differ`
  }
  if (actual instanceof RegExp) {
    return String(actual) === String(expected) ? undefined : `${path}: ${actual} !== ${expected}`
  }
  const bsontype = (actual as { _bsontype?: string })._bsontype
  if (bsontype !== undefined && !['DBRef', 'Code'].includes(bsontype)) {
    const a = JSON.stringify((actual as { toJSON?: () => unknown }).toJSON?.() ?? actual) + String(actual)
    const b =
      JSON.stringify((expected as { toJSON?: () => unknown }).toJSON?.() ?? expected) + String(expected)
    return a === b ? undefined : `${path}: ${bsontype} ${a} !== ${b}`
  }
  const actualKeys = Reflect.ownKeys(actual)
  const expectedKeys = Reflect.ownKeys(expected as object)
  if (actualKeys.join('\u0000') !== expectedKeys.join('\u0000')) {
    return `${path}: keys [${actualKeys.map(String)}] !== [${expectedKeys.map(String)}]`
  }
  for (const key of actualKeys) {
    const difference = firstDifference(
      (actual as Record<PropertyKey, unknown>)[key],
      (expected as Record<PropertyKey, unknown>)[key],
      `${path}.${String(key)}`,
    )
    if (difference) return difference
  }
  return undefined
}

/** Asserts that `actual` equals `expected` value for value and type for type. */
export function expectIdentical(actual: unknown, expected: unknown): void {
  const difference = firstDifference(actual, expected)
  if (difference) throw new Error(`results differ at ${difference}`)
}

/** One case per BSON decode option that changes results, for `it.each`. */
export const BSON_OPTION_CASES: [string, Record<string, boolean>][] = [
  ['promoteValues: false', { promoteValues: false }],
  ['promoteLongs: false', { promoteLongs: false }],
  ['promoteBuffers: true', { promoteBuffers: true }],
  ['useBigInt64: true', { useBigInt64: true }],
  ['bsonRegExp: true', { bsonRegExp: true }],
  ['enableUtf8Validation: false', { enableUtf8Validation: false }],
]

/**
 * The js-bson options the official driver decodes with under the given BSON options: the
 * reference side of decoder tests, written out here rather than taken from rumongo's code.
 */
export function officialDeserializeOptions(options: Record<string, unknown>) {
  return {
    promoteValues: options.promoteValues as boolean,
    promoteLongs: options.promoteLongs as boolean,
    promoteBuffers: options.promoteBuffers as boolean,
    useBigInt64: options.useBigInt64 as boolean,
    bsonRegExp: options.bsonRegExp as boolean,
    validation: { utf8: options.enableUtf8Validation as boolean },
  }
}

/**
 * `check()` once it returns `expected`, or its last answer after 5 s. A dropped driver cursor is
 * killed by a killCursors sent in the background, so the server sees it shortly after.
 */
export async function settled<T>(check: () => Promise<T>, expected: T): Promise<T> {
  let answer = await check()
  for (const deadline = Date.now() + 5000; answer !== expected && Date.now() < deadline;) {
    await sleep(50)
    answer = await check()
  }
  return answer
}

/** Runs getMore on cursor `id` through `db` (an official driver's): whether the server cursor is still open. */
export async function serverCursorAlive(db: Db, collection: string, id: Long): Promise<boolean> {
  try {
    await db.command({ getMore: id, collection, batchSize: 1 })
    return true
  } catch (error) {
    expect(error).toMatchObject({ code: 43 }) // CursorNotFound
    return false
  }
}
