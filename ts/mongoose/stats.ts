/**
 * What the Mongoose plugin served through rumongo and what it left to the official driver, and why.
 * @module
 */

/** The reads the plugin serves through rumongo (the official driver's method names). */
export const ROUTED_METHODS = [
  'find',
  'findOne',
  'countDocuments',
  'estimatedDocumentCount',
  'distinct',
  'aggregate',
  'watch',
] as const

export type RoutedMethod = (typeof ROUTED_METHODS)[number]

/**
 * Why a call went to the official driver:
 * - `session`: the call runs in a session or a transaction (Mongoose's sessions are the official
 *   driver's, which rumongo cannot join);
 * - `option`: rumongo refuses the call's arguments (an option it does not implement, such as
 *   `oplogReplay`, or a value it validates otherwise): the official driver runs it and answers as usual;
 * - `explain`: a `find` with `explain` (the plan describes the command each driver sent);
 * - `client`: no rumongo client for this connection (see `MongoosePluginStats.clientError`);
 * - `write`: a write (insert, update, replace, delete, findOneAnd*, bulkWrite);
 * - `watch`: not given any more (a change stream, `Model.watch()`, is served through rumongo);
 *   kept so that code matching on it still compiles;
 * - `method`: any other driver method (index management, `count`, `drop`, ...).
 */
export type MongooseFallbackReason =
  'session' | 'option' | 'explain' | 'client' | 'write' | 'watch' | 'method'

/** One call the official driver ran, as `onFallback` reports it. */
export interface MongooseFallback {
  /** The driver method Mongoose called. */
  method: string
  reason: MongooseFallbackReason
  /** The collection's namespace (`db.collection`). */
  namespace: string
  /** For `option` and `client`: rumongo's error, which the application never sees. */
  error?: Error
}

/** Counts since the plugin was created (or since `resetStats()`). */
export interface MongoosePluginStats {
  /** Reads served through rumongo. */
  served: number
  /** Calls the official driver ran. */
  fallbacks: number
  servedByMethod: Partial<Record<RoutedMethod, number>>
  fallbacksByReason: Partial<Record<MongooseFallbackReason, number>>
  fallbacksByMethod: Record<string, number>
  /** Why the last rumongo client could not be made from a connection's options, if it could not. */
  clientError?: string
  /** The rumongo clients the plugin made that are open: one per open Mongoose connection that read. */
  openClients: number
}

type Counts = Omit<MongoosePluginStats, 'openClients'>

export class PluginCounters {
  #stats: Counts = PluginCounters.#empty()
  readonly #onFallback: ((fallback: MongooseFallback) => void) | undefined

  constructor(onFallback?: (fallback: MongooseFallback) => void) {
    this.#onFallback = onFallback
  }

  static #empty(): Counts {
    return { served: 0, fallbacks: 0, servedByMethod: {}, fallbacksByReason: {}, fallbacksByMethod: {} }
  }

  served(method: RoutedMethod): void {
    this.#stats.served++
    this.#stats.servedByMethod[method] = (this.#stats.servedByMethod[method] ?? 0) + 1
  }

  fellBack(fallback: MongooseFallback): void {
    const stats = this.#stats
    stats.fallbacks++
    stats.fallbacksByReason[fallback.reason] = (stats.fallbacksByReason[fallback.reason] ?? 0) + 1
    stats.fallbacksByMethod[fallback.method] = (stats.fallbacksByMethod[fallback.method] ?? 0) + 1
    if (fallback.reason === 'client' && fallback.error) stats.clientError = fallback.error.message
    // A listener's own failure must not become the application's error.
    try {
      this.#onFallback?.(fallback)
    } catch {
      // ignored: reporting is best effort
    }
  }

  snapshot(): Counts {
    const stats = this.#stats
    return {
      ...stats,
      servedByMethod: { ...stats.servedByMethod },
      fallbacksByReason: { ...stats.fallbacksByReason },
      fallbacksByMethod: { ...stats.fallbacksByMethod },
    }
  }

  reset(): void {
    this.#stats = PluginCounters.#empty()
  }
}
