/**
 * `mongoosePlugin()`: one line routes an existing Mongoose application's reads through rumongo.
 * Mongoose keeps casting, middleware, `populate`, `lean`, hydration, virtuals and getters: only the
 * driver calls under them change hands.
 * @module
 */
import { MongoInvalidArgumentError } from '../errors.js'
import { MongoClient } from '../mongo_client.js'
import { describe, isPlainObject } from '../validate.js'
import { ConnectionClients } from './clients.js'
import { Router } from './routing.js'
import { PluginCounters, type MongooseFallback, type MongoosePluginStats } from './stats.js'
import type { MongooseModelHandle } from './types.js'

export interface MongoosePluginOptions {
  /**
   * The rumongo client every read goes through (the caller closes it). Without it, the plugin makes
   * one per Mongoose connection from the connection string and options Mongoose gave the official
   * driver, connected as soon as the connection is open, and closes it with the connection.
   */
  client?: MongoClient
  /** Called with each call the official driver ran instead of rumongo, and why. */
  onFallback?: (fallback: MongooseFallback) => void
}

/** A Mongoose plugin: pass it to `mongoose.plugin()`. */
export interface MongoosePlugin {
  /** What Mongoose calls with each schema. */
  (schema: { on(event: 'init', listener: (model: any) => void): unknown }): void
  /** What was served through rumongo and what the official driver ran, and why. */
  stats(): MongoosePluginStats
  resetStats(): void
  /** Closes the rumongo clients the plugin made (closing the Mongoose connection does too). */
  close(): Promise<void>
}

/**
 * A Mongoose plugin that serves the reads Mongoose makes through the official driver (`find`,
 * `findOne`, `countDocuments`, `estimatedDocumentCount`, `distinct`, `aggregate`: every query,
 * `findById`, `exists`, `populate`, `Query.cursor()`, `Model.aggregate()`) from rumongo, with the
 * same arguments. A call rumongo cannot serve identically (in a session or transaction, with an
 * option rumongo refuses, a write, `watch`) runs on the official driver as before.
 *
 * Install it on the application's Mongoose instance before its models are compiled:
 * `mongoose.plugin(mongoosePlugin())`. It imports nothing from Mongoose.
 */
export function mongoosePlugin(options: MongoosePluginOptions = {}): MongoosePlugin {
  if (!isPlainObject(options)) {
    throw new MongoInvalidArgumentError(`mongoosePlugin options must be an object, got ${describe(options)}`)
  }
  const { client, onFallback } = options
  if (client !== undefined && !(client instanceof MongoClient)) {
    throw new MongoInvalidArgumentError(
      `mongoosePlugin option "client" must be a rumongo MongoClient, got ${describe(client)}`,
    )
  }
  if (onFallback !== undefined && typeof onFallback !== 'function') {
    throw new MongoInvalidArgumentError(
      `mongoosePlugin option "onFallback" must be a function, got ${describe(onFallback)}`,
    )
  }
  const clients = new ConnectionClients(client)
  const counters = new PluginCounters(onFallback)
  const router = new Router(clients, counters)
  const plugin = (schema: Parameters<MongoosePlugin>[0]) => {
    // Mongoose emits `init` with each model compiled from the schema, before it can run a query.
    schema.on('init', (model: MongooseModelHandle) => router.install(model))
  }
  return Object.assign(plugin, {
    stats: (): MongoosePluginStats => ({ ...counters.snapshot(), openClients: clients.openCount }),
    resetStats: () => counters.reset(),
    close: () => clients.close(),
  })
}
