/**
 * Option inheritance client -> db -> collection -> operation for `readPreference`, `readConcern`
 * and `timeoutMS`, with the official precedence: the nearest level that sets an option wins.
 * (BSON options inherit the same way, in `bson.ts`.)
 * @module
 */
import type { Document } from 'bson'
import { MongoInvalidArgumentError } from './errors.js'
import {
  ReadConcern,
  ReadPreference,
  type ReadConcernLevel,
  type ReadPreferenceMode,
} from './read_preference.js'
import { describe } from './validate.js'

/** The options a database or collection passes on to its operations. */
export interface InheritableOptions {
  readPreference?:
    | ReadPreferenceMode
    | ReadPreference
    | { mode: ReadPreferenceMode; tags?: Document[]; maxStalenessSeconds?: number }
  readConcern?: ReadConcernLevel | ReadConcern | { level: ReadConcernLevel | string }
  timeoutMS?: number
}

/** The options set at one level, resolved (undefined: the level above decides). */
export interface InheritedOptions {
  readPreference?: ReadPreference
  readConcern?: ReadConcern
  timeoutMS?: number
}

/** The options `options` sets, over those of the level above (`parent`). */
export function resolveInherited(options: Document | undefined, parent: InheritedOptions): InheritedOptions {
  const resolved: InheritedOptions = { ...parent }
  if (options == null) return resolved
  const readPreference = ReadPreference.fromOptions(options)
  if (readPreference !== undefined) resolved.readPreference = readPreference
  if (options.readConcern != null) {
    const readConcern = ReadConcern.fromOptions({ readConcern: options.readConcern })
    if (readConcern === undefined) {
      throw new MongoInvalidArgumentError(
        `readConcern must be a level or { level }, got ${describe(options.readConcern)}`,
      )
    }
    resolved.readConcern = readConcern
  }
  if (options.timeoutMS != null) {
    if (!Number.isSafeInteger(options.timeoutMS) || options.timeoutMS < 0) {
      throw new MongoInvalidArgumentError(
        `timeoutMS must be a non-negative integer, got ${describe(options.timeoutMS)}`,
      )
    }
    resolved.timeoutMS = options.timeoutMS
  }
  return resolved
}

/** An operation's options with what its database and collection set filled in where it sets none. */
export function inheritOptions<T extends Document>(inherited: InheritedOptions, options: T): T {
  if (options === null || typeof options !== 'object') return options
  const merged: Document = { ...options }
  for (const key of ['readPreference', 'readConcern', 'timeoutMS'] as const) {
    if (merged[key] == null && inherited[key] !== undefined) merged[key] = inherited[key]
  }
  return merged as T
}
