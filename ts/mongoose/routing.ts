/**
 * Routes the reads of a Mongoose connection's collections through rumongo. Mongoose runs every
 * driver method on what `NativeCollection.prototype._getCollection()` returns (after its buffering,
 * debug printing and `operation-start`/`operation-end` events): that one method is wrapped so that,
 * for the Mongoose instances the plugin is installed on, it returns a stand-in for the official
 * collection whose reads rumongo serves, with the arguments Mongoose gives the official driver.
 * @module
 */
import { BSONError, type Document } from 'bson'
import type { Collection } from '../collection.js'
import type { MongoClient } from '../mongo_client.js'
import {
  MongoCompatibilityError,
  MongoInvalidArgumentError,
  MongoMissingDependencyError,
  MongoParseError,
} from '../errors.js'
import type { ConnectionClients } from './clients.js'
import {
  ROUTED_METHODS,
  type MongooseFallbackReason,
  type PluginCounters,
  type RoutedMethod,
} from './stats.js'
import type { MongooseModelHandle, MongooseNativeCollection, OfficialCollectionLike } from './types.js'

/** Where each routed method takes its options. */
const OPTIONS_ARGUMENT: Readonly<Record<RoutedMethod, number>> = {
  find: 1,
  findOne: 1,
  countDocuments: 1,
  estimatedDocumentCount: 0,
  distinct: 2,
  aggregate: 1,
  watch: 1,
}

const ROUTED = new Set<string>(ROUTED_METHODS)

const WRITES = new Set([
  'insertOne',
  'insertMany',
  'updateOne',
  'updateMany',
  'replaceOne',
  'deleteOne',
  'deleteMany',
  'findOneAndUpdate',
  'findOneAndDelete',
  'findOneAndReplace',
  'bulkWrite',
])

/** The router of each Mongoose instance (its `base`) the plugin is installed on. */
const routers = new WeakMap<object, Router>()
/** Marks the `NativeCollection` prototype this module wrapped (one per copy of Mongoose). */
const WRAPPED = Symbol('rumongo mongoosePlugin')

export class Router {
  readonly #clients: ConnectionClients
  readonly #counters: PluginCounters
  readonly #standIns = new WeakMap<OfficialCollectionLike, OfficialCollectionLike>()

  constructor(clients: ConnectionClients, counters: PluginCounters) {
    this.#clients = clients
    this.#counters = counters
  }

  /**
   * Called with every model compiled with the plugin (the schema's `init` event): routes the reads
   * of every collection of the model's Mongoose instance (its connections, `useDb()` children,
   * discriminators and the models `populate` reads).
   */
  install(model: MongooseModelHandle): void {
    const collection = model?.collection
    const base = collection?.conn?.base
    if (base == null || typeof collection._getCollection !== 'function') return
    routers.set(base, this)
    this.#clients.startWhenOpen(collection.conn)
    let owner: any = Object.getPrototypeOf(collection)
    while (owner !== null && !Object.hasOwn(owner, '_getCollection')) owner = Object.getPrototypeOf(owner)
    if (owner === null || Object.hasOwn(owner, WRAPPED)) return
    const original = owner._getCollection as () => OfficialCollectionLike | null
    owner._getCollection = function _getCollection(this: MongooseNativeCollection) {
      const official = original.call(this)
      const router = official == null ? undefined : routers.get(this.conn?.base as object)
      return router === undefined ? official : router.#standIn(this, official!)
    }
    Object.defineProperty(owner, WRAPPED, { value: original })
  }

  #standIn(native: MongooseNativeCollection, official: OfficialCollectionLike): OfficialCollectionLike {
    let standIn = this.#standIns.get(official)
    if (standIn === undefined) {
      standIn = this.#makeStandIn(native, official)
      this.#standIns.set(official, standIn)
    }
    return standIn
  }

  /**
   * The official collection with its reads served by rumongo: every other property is the official
   * collection's, and every other method runs on it (and is counted as a fallback).
   */
  #makeStandIn(native: MongooseNativeCollection, official: OfficialCollectionLike): OfficialCollectionLike {
    const namespace = `${official.dbName}.${official.collectionName}`
    // The rumongo collection, made again when the connection's client changes (plugin.close()).
    let made: { client: MongoClient; collection: Collection } | undefined
    const target = (): { collection: Collection } | { error: Error } => {
      const slot = this.#clients.clientFor(native.conn)
      if (slot.error) return { error: slot.error }
      if (made?.client !== slot.client) {
        made = {
          client: slot.client,
          collection: slot.client.db(official.dbName).collection(official.collectionName),
        }
      }
      return made
    }
    const fallBack = (method: string, reason: MongooseFallbackReason, args: unknown[], error?: Error) => {
      this.#counters.fellBack({ method, reason, namespace, ...(error ? { error } : {}) })
      return (official[method] as (...args: unknown[]) => unknown).apply(official, args)
    }
    const read = (method: RoutedMethod, args: unknown[]): unknown => {
      const options = args[OPTIONS_ARGUMENT[method]] as Document | undefined | null
      if (options?.session != null) return fallBack(method, 'session', args)
      if (method === 'find' && options?.explain != null) return fallBack(method, 'explain', args)
      const routed = target()
      if ('error' in routed) return fallBack(method, 'client', args, routed.error)
      let result: unknown
      try {
        result = (routed.collection[method] as (...args: unknown[]) => unknown)(...args)
      } catch (error) {
        // Thrown at the call, before any I/O: rumongo's own checks of the arguments.
        return fallBack(method, 'option', args, error as Error)
      }
      if (!(result instanceof Promise)) {
        this.#counters.served(method)
        // A change stream is Mongoose's to wrap (its ChangeStream) as the official one: no cursor.
        return method === 'watch' ? result : officialCursor(result as object)
      }
      return result.then(
        (value) => {
          this.#counters.served(method)
          return value
        },
        (error) => {
          if (isRefusal(error)) return fallBack(method, 'option', args, error)
          this.#counters.served(method)
          throw error
        },
      )
    }
    const reads = Object.fromEntries(
      ROUTED_METHODS.map((method) => [method, (...args: unknown[]) => read(method, args)]),
    )
    return new Proxy(official, {
      get(collection, key) {
        if (typeof key === 'string' && ROUTED.has(key)) return reads[key]
        const value = Reflect.get(collection, key, collection)
        if (typeof value !== 'function' || typeof key !== 'string' || key in Object.prototype) return value
        const reason: MongooseFallbackReason = WRITES.has(key)
          ? 'write'
          : key === 'watch'
            ? 'watch'
            : 'method'
        return (...args: unknown[]) => fallBack(key, reason, args)
      },
    })
  }
}

/**
 * A rumongo cursor as Mongoose (and the application, through `QueryCursor#cursor`) expects the
 * official one. It is awaitable (it resolves to `toArray()`), the official driver's is not: Mongoose
 * awaits the cursor `find()` returns and calls `toArray()` on it, and its collection wrapper treats
 * a thenable result as the operation's promise. An own `then` of `undefined` hides the method.
 */
function officialCursor(cursor: object): object {
  Object.defineProperty(cursor, 'then', { value: undefined })
  return cursor
}

/**
 * An error rumongo raises on the arguments before any I/O (an option it does not implement, a value
 * it validates otherwise): the official driver runs the call instead, and the application gets its
 * answer, error or not. A server's or the network's error is the same from both drivers: it stays.
 */
function isRefusal(error: unknown): error is Error {
  return (
    error instanceof MongoInvalidArgumentError ||
    error instanceof MongoCompatibilityError ||
    error instanceof MongoParseError ||
    error instanceof MongoMissingDependencyError ||
    error instanceof BSONError
  )
}
