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

/** Options of the cursor's command that are not fields of the command itself. */
const NOT_COMMAND_FIELDS = ['readPreference', 'timeoutMS', 'timeoutMode']

/**
 * Runs `explain` of `command` (a find or aggregate built from the cursor's resolved options, named
 * as the server names them) and returns the server's reply decoded with the cursor's BSON options.
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
  for (const [key, value] of Object.entries(resolved)) {
    if (!NOT_COMMAND_FIELDS.includes(key) && value !== undefined) command[key] = value
  }
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
