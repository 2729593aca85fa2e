/**
 * `ReadPreference`, `ReadConcern` and the constant tables a read-path user imports, with the
 * official driver's names, validation and messages, so code written for it reads the same.
 * @module
 */
import type { Document } from 'bson'
import { MongoInvalidArgumentError } from './errors.js'

/** The read preference modes. */
export const ReadPreferenceMode = Object.freeze({
  primary: 'primary',
  primaryPreferred: 'primaryPreferred',
  secondary: 'secondary',
  secondaryPreferred: 'secondaryPreferred',
  nearest: 'nearest',
} as const)

export type ReadPreferenceMode = (typeof ReadPreferenceMode)[keyof typeof ReadPreferenceMode]

/** Options of a read preference beyond its mode. */
export interface ReadPreferenceOptions {
  maxStalenessSeconds?: number
  hedge?: Document
}

/** Which members of a deployment a read may go to. */
export class ReadPreference {
  static readonly PRIMARY = ReadPreferenceMode.primary
  static readonly PRIMARY_PREFERRED = ReadPreferenceMode.primaryPreferred
  static readonly SECONDARY = ReadPreferenceMode.secondary
  static readonly SECONDARY_PREFERRED = ReadPreferenceMode.secondaryPreferred
  static readonly NEAREST = ReadPreferenceMode.nearest
  static readonly primary = new ReadPreference(ReadPreferenceMode.primary)
  static readonly primaryPreferred = new ReadPreference(ReadPreferenceMode.primaryPreferred)
  static readonly secondary = new ReadPreference(ReadPreferenceMode.secondary)
  static readonly secondaryPreferred = new ReadPreference(ReadPreferenceMode.secondaryPreferred)
  static readonly nearest = new ReadPreference(ReadPreferenceMode.nearest)

  mode: ReadPreferenceMode
  tags?: Document[]
  hedge?: Document
  maxStalenessSeconds?: number

  constructor(
    mode: ReadPreferenceMode,
    tags?: Document[] | ReadPreferenceOptions,
    options?: ReadPreferenceOptions,
  ) {
    if (!ReadPreference.isValid(mode)) {
      throw new MongoInvalidArgumentError(`Invalid read preference mode ${JSON.stringify(mode)}`)
    }
    if (options == null && typeof tags === 'object' && !Array.isArray(tags)) {
      options = tags
      tags = undefined
    } else if (tags && !Array.isArray(tags)) {
      throw new MongoInvalidArgumentError('ReadPreference tags must be an array')
    }
    this.mode = mode
    this.tags = tags as Document[] | undefined
    this.hedge = options?.hedge
    this.maxStalenessSeconds = undefined
    if (options?.maxStalenessSeconds != null) {
      if (options.maxStalenessSeconds <= 0) {
        throw new MongoInvalidArgumentError('maxStalenessSeconds must be a positive integer')
      }
      this.maxStalenessSeconds = options.maxStalenessSeconds
    }
    if (this.mode === ReadPreference.PRIMARY) {
      if (this.tags && this.tags.length > 0) {
        throw new MongoInvalidArgumentError('Primary read preference cannot be combined with tags')
      }
      if (this.maxStalenessSeconds) {
        throw new MongoInvalidArgumentError(
          'Primary read preference cannot be combined with maxStalenessSeconds',
        )
      }
      if (this.hedge) {
        throw new MongoInvalidArgumentError('Primary read preference cannot be combined with hedge')
      }
    }
  }

  get preference(): ReadPreferenceMode {
    return this.mode
  }

  static fromString(mode: string): ReadPreference {
    return new ReadPreference(mode as ReadPreferenceMode)
  }

  /**
   * The read preference an options object names (`readPreference` as a mode, an object with
   * `mode`, or a ReadPreference; `readPreferenceTags`, `maxStalenessSeconds`), or undefined.
   */
  static fromOptions(options?: Document): ReadPreference | undefined {
    const readPreference = options?.readPreference
    if (readPreference == null) return undefined
    const tags = options!.readPreferenceTags
    if (typeof readPreference === 'string') {
      return new ReadPreference(readPreference as ReadPreferenceMode, tags, {
        maxStalenessSeconds: options!.maxStalenessSeconds,
        hedge: options!.hedge,
      })
    }
    if (readPreference instanceof ReadPreference) return readPreference
    if (typeof readPreference === 'object') {
      const mode = readPreference.mode ?? readPreference.preference
      if (typeof mode === 'string') {
        // The official driver reads a plain object's hedge from the `hedge` option beside it, not
        // from the object; its own ReadPreference (passed here) keeps its hedge.
        const isOfficialReadPreference = typeof readPreference.secondaryOk === 'function'
        return new ReadPreference(mode as ReadPreferenceMode, readPreference.tags ?? tags, {
          maxStalenessSeconds: readPreference.maxStalenessSeconds,
          hedge: isOfficialReadPreference ? readPreference.hedge : options!.hedge,
        })
      }
    }
    throw new MongoInvalidArgumentError(`Invalid read preference: ${String(readPreference)}`)
  }

  static isValid(mode: unknown): boolean {
    return mode === null || Object.values(ReadPreferenceMode).includes(mode as ReadPreferenceMode)
  }

  isValid(mode?: string): boolean {
    return ReadPreference.isValid(typeof mode === 'string' ? mode : this.mode)
  }

  /** True for the modes that may read from a secondary. */
  secondaryOk(): boolean {
    return this.mode !== ReadPreference.PRIMARY
  }

  equals(readPreference: ReadPreference): boolean {
    return readPreference.mode === this.mode
  }

  toJSON(): Document {
    const readPreference: Document = { mode: this.mode }
    if (Array.isArray(this.tags)) readPreference.tags = this.tags
    if (this.maxStalenessSeconds) readPreference.maxStalenessSeconds = this.maxStalenessSeconds
    if (this.hedge) readPreference.hedge = this.hedge
    return readPreference
  }
}

/** The read concern levels. */
export const ReadConcernLevel = Object.freeze({
  local: 'local',
  majority: 'majority',
  linearizable: 'linearizable',
  available: 'available',
  snapshot: 'snapshot',
} as const)

export type ReadConcernLevel = (typeof ReadConcernLevel)[keyof typeof ReadConcernLevel]

/** The consistency and isolation a read asks the server for. */
export class ReadConcern {
  level: ReadConcernLevel | string

  constructor(level: ReadConcernLevel | string) {
    this.level = (ReadConcernLevel as Record<string, string>)[level] ?? level
  }

  /** The read concern an options object names (`readConcern`, or `level`), or undefined. */
  static fromOptions(options?: Document): ReadConcern | undefined {
    if (options == null) return undefined
    const { readConcern } = options
    if (readConcern) {
      if (readConcern instanceof ReadConcern) return readConcern
      if (typeof readConcern === 'string') return new ReadConcern(readConcern)
      if (typeof readConcern === 'object' && readConcern.level) return new ReadConcern(readConcern.level)
    }
    if (options.level) return new ReadConcern(options.level)
    return undefined
  }

  static get MAJORITY(): 'majority' {
    return ReadConcernLevel.majority
  }
  static get AVAILABLE(): 'available' {
    return ReadConcernLevel.available
  }
  static get LINEARIZABLE(): 'linearizable' {
    return ReadConcernLevel.linearizable
  }
  static get SNAPSHOT(): 'snapshot' {
    return ReadConcernLevel.snapshot
  }

  toJSON(): Document {
    return { level: this.level }
  }
}

/** The Stable API versions a client can declare (`serverApi`). */
export const ServerApiVersion = Object.freeze({ v1: '1' } as const)

export type ServerApiVersion = (typeof ServerApiVersion)[keyof typeof ServerApiVersion]

/** The Stable API a client declares: sent with every command. */
export interface ServerApi {
  version: ServerApiVersion
  strict?: boolean
  deprecationErrors?: boolean
}

/** How much `explain` reports. */
export const ExplainVerbosity = Object.freeze({
  queryPlanner: 'queryPlanner',
  queryPlannerExtended: 'queryPlannerExtended',
  executionStats: 'executionStats',
  allPlansExecution: 'allPlansExecution',
} as const)

export type ExplainVerbosity = (typeof ExplainVerbosity)[keyof typeof ExplainVerbosity]

/** `true` (allPlansExecution), `false` (queryPlanner), a verbosity, or `{ verbosity, maxTimeMS }`. */
export type ExplainVerbosityLike =
  ExplainVerbosity | boolean | { verbosity: ExplainVerbosity | boolean; maxTimeMS?: number }
