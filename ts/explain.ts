/**
 * `cursor.explain()`: the find or aggregate a cursor would run, wrapped in the `explain` command as
 * the official driver wraps it (`{ explain: command, verbosity }`).
 * @module
 */
import type { Document } from 'bson'
import type { ResolvedBSONOptions } from './bson.js'
import { runCommand } from './commands.js'
import type { CursorSource } from './cursor/abstract_cursor.js'
import { MongoInvalidArgumentError } from './errors.js'
import { ExplainVerbosity, type ExplainVerbosityLike } from './read_preference.js'

/** Options of `cursor.explain()` beyond the verbosity. */
export interface ExplainCommandOptions {
  timeoutMS?: number
}

/**
 * The explain of the official driver's `explain(verbosity, options)`: no verbosity means
 * `allPlansExecution` (as `true`), `false` means `queryPlanner`; an object gives `verbosity` and
 * the `maxTimeMS` of the explain itself (or, with only `timeoutMS`, the time limit).
 */
export function resolveExplain(
  verbosity: ExplainVerbosityLike | ExplainCommandOptions | undefined,
  options: ExplainCommandOptions | undefined,
): { verbosity: string; maxTimeMS?: number; timeoutMS?: number } {
  let explain: unknown = verbosity
  let timeoutMS = options?.timeoutMS
  if (typeof verbosity === 'object' && verbosity !== null && options === undefined) {
    if ('timeoutMS' in verbosity) timeoutMS = verbosity.timeoutMS
    explain = 'verbosity' in verbosity ? verbosity : undefined
  }
  let maxTimeMS: number | undefined
  if (typeof explain === 'object' && explain !== null) {
    maxTimeMS = (explain as { maxTimeMS?: number }).maxTimeMS
    explain = (explain as { verbosity?: unknown }).verbosity
  }
  if (explain === undefined || explain === true) explain = ExplainVerbosity.allPlansExecution
  if (explain === false) explain = ExplainVerbosity.queryPlanner
  if (typeof explain !== 'string') {
    throw new MongoInvalidArgumentError(
      `explain verbosity must be a string or a boolean, got ${typeof explain}`,
    )
  }
  return { verbosity: explain, maxTimeMS, timeoutMS }
}

/** The fields of a find command in the order the official driver writes them (`makeFindCommand`). */
const FIND_FIELDS = [
  'sort',
  'projection',
  'hint',
  'skip',
  'limit',
  'singleBatch',
  'batchSize',
  'comment',
  'max',
  'min',
  'returnKey',
  'showRecordId',
  'noCursorTimeout',
  'allowPartialResults',
  'allowDiskUse',
  'let',
  'collation',
  'maxTimeMS',
  'readConcern',
]

/** The find command of a cursor's resolved options, as the official driver builds it. */
export function findCommand(collection: string | undefined, filter: Document, resolved: Document): Document {
  const fields: Document = { ...resolved }
  // A negative limit means one batch of at most |limit| documents.
  if (typeof fields.limit === 'number' && fields.limit < 0) {
    fields.limit = -fields.limit
    fields.singleBatch = true
  }
  // The spec: a batchSize equal to the limit is sent one higher, so the cursor closes itself.
  if (typeof fields.batchSize === 'number' && fields.batchSize === fields.limit) fields.batchSize += 1
  const command: Document = { find: collection, filter }
  for (const key of FIND_FIELDS) if (fields[key] !== undefined) command[key] = fields[key]
  return command
}

/** The aggregate command of a cursor's resolved options, as the official driver builds it. */
export function aggregateCommand(target: string | 1, pipeline: Document[], resolved: Document): Document {
  const command: Document = { aggregate: target, pipeline }
  for (const key of ['allowDiskUse', 'hint', 'let', 'comment']) {
    if (resolved[key] !== undefined) command[key] = resolved[key]
  }
  command.cursor = resolved.batchSize ? { batchSize: resolved.batchSize } : {}
  for (const key of ['collation', 'maxTimeMS', 'readConcern']) {
    if (resolved[key] !== undefined) command[key] = resolved[key]
  }
  return command
}

/**
 * Runs `explain` of `command` (a find or aggregate built by {@link findCommand} or
 * {@link aggregateCommand}) under the cursor's read preference and time limit, and returns the
 * server's reply decoded with the cursor's BSON options.
 */
export async function runExplain(
  source: CursorSource,
  command: Document,
  resolved: Document,
  bson: ResolvedBSONOptions,
  verbosity: ExplainVerbosityLike | ExplainCommandOptions | undefined,
  options: ExplainCommandOptions | undefined,
): Promise<Document> {
  const explain = resolveExplain(verbosity, options)
  const wrapped: Document = { explain: command, verbosity: explain.verbosity }
  if (typeof explain.maxTimeMS === 'number') wrapped.maxTimeMS = explain.maxTimeMS
  const target = { nativeDatabase: () => source.nativeDatabase() }
  const timeoutMS = explain.timeoutMS ?? resolved.timeoutMS
  return runCommand(
    target,
    wrapped,
    { readPreference: resolved.readPreference, timeoutMS },
    { ...bson, raw: false },
  )
}
