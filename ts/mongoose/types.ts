/**
 * The parts of Mongoose the plugin touches, as structural types: rumongo loads no copy of Mongoose,
 * so the plugin works with whichever copy calls it.
 * @module
 */

/** What a schema plugin receives: a Mongoose `Schema` (an EventEmitter). */
export interface MongooseSchemaEvents {
  on(event: 'init', listener: (model: MongooseModelHandle) => void): unknown
}

/** A compiled Mongoose model, as the schema's `init` event passes it. */
export interface MongooseModelHandle {
  collection: MongooseNativeCollection
}

/**
 * Mongoose's `NativeCollection` (lib/drivers/node-mongodb-native/collection.js): it wraps the
 * official driver's `Collection`, which `_getCollection()` returns, and runs every driver method
 * on what that returns (after Mongoose's buffering, debug printing and operation events).
 */
export interface MongooseNativeCollection {
  name: string
  conn: MongooseConnectionLike
  _getCollection(): OfficialCollectionLike | null
}

/** A Mongoose connection (or a `useDb()` child, which has its `_parent`). */
export interface MongooseConnectionLike {
  /** The Mongoose instance the connection belongs to. */
  base?: object
  _parent?: MongooseConnectionLike
  /** What `openUri()` gave the official `MongoClient`: the connection string and its options. */
  _connectionString?: string
  _connectionOptions?: Record<string, unknown>
  /** The official driver's client (shared by a connection and its `useDb()` children). */
  client?: object | null
  /** Mongoose's `ConnectionStates`: 1 is connected. */
  readyState?: number
  once(event: 'close', listener: () => void): unknown
  /** `'open'`: each time `openUri()` connected the official driver (again after a close). */
  on(event: 'open', listener: () => void): unknown
}

/** The official driver's `Collection`: the plugin only needs its namespace and its methods. */
export interface OfficialCollectionLike {
  dbName: string
  collectionName: string
  [method: string]: unknown
}
