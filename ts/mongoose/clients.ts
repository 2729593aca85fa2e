/**
 * One rumongo client per Mongoose connection: made from the connection string and options the
 * connection gave the official driver and connected as soon as the connection is open, closed when
 * the connection closes.
 * @module
 */
import { MongoClient } from '../mongo_client.js'
import type { MongooseConnectionLike } from './types.js'

/** Mongoose's `ConnectionStates.connected`. */
const CONNECTED = 1

/** A connection's rumongo client, or why there is none (its reads go to the official driver). */
export type ClientSlot = { client: MongoClient; error?: undefined } | { client?: undefined; error: Error }

export class ConnectionClients {
  readonly #given: MongoClient | undefined
  /**
   * Keyed by the official driver's client: a connection and its `useDb()` children share it (and
   * so share one rumongo client), and a connection opened again has a new one.
   */
  #byOfficialClient = new WeakMap<object, ClientSlot>()
  readonly #owned = new Set<MongoClient>()
  /** Root connections whose `'open'` starts their client. */
  readonly #started = new WeakSet<MongooseConnectionLike>()

  constructor(given?: MongoClient) {
    this.#given = given
  }

  /**
   * Connects the connection's rumongo client in the background as soon as the Mongoose connection
   * is open (at once if it is), as `mongoose.connect()` connected the official driver: else the
   * application's first read would pay client creation, server selection and the handshakes.
   */
  startWhenOpen(connection: MongooseConnectionLike): void {
    if (this.#given) return
    const root = rootOf(connection)
    if (this.#started.has(root) || typeof root.on !== 'function') return
    this.#started.add(root)
    root.on('open', () => this.#start(root))
    if (root.readyState === CONNECTED) this.#start(root)
  }

  clientFor(connection: MongooseConnectionLike): ClientSlot {
    if (this.#given) return { client: this.#given }
    const root = rootOf(connection)
    const official = root.client
    if (official == null) return { error: new Error('the Mongoose connection has no client') }
    let slot = this.#byOfficialClient.get(official)
    if (slot === undefined) {
      slot = this.#make(root)
      this.#byOfficialClient.set(official, slot)
      const { client } = slot
      if (client) {
        this.#owned.add(client)
        root.once('close', () => {
          if (this.#byOfficialClient.get(official)?.client === client) this.#byOfficialClient.delete(official)
          void this.#closeOwned(client)
        })
      }
    }
    return slot
  }

  /** How many clients the plugin made are open (a given one is not counted). */
  get openCount(): number {
    return this.#owned.size
  }

  /** Closes the clients the plugin made (not one it was given); a later read makes a new one. */
  async close(): Promise<void> {
    this.#byOfficialClient = new WeakMap()
    await Promise.all([...this.#owned].map((client) => this.#closeOwned(client)))
  }

  #start(root: MongooseConnectionLike): void {
    // A failed connect is the first read's to meet, as it is without this early start: the client
    // connects again on its next operation. Nothing here may reach the application.
    this.clientFor(root)
      .client?.connect()
      .catch(() => undefined)
  }

  #make(root: MongooseConnectionLike): ClientSlot {
    if (typeof root._connectionString !== 'string') {
      return {
        error: new Error(
          'the Mongoose connection was not opened with a connection string (setClient?): pass mongoosePlugin({ client })',
        ),
      }
    }
    try {
      // A copy: the official driver keeps reading the object Mongoose gave it.
      return { client: new MongoClient(root._connectionString, { ...root._connectionOptions }) }
    } catch (error) {
      // An option rumongo refuses (autoEncryption, a Node socket or TLS option, ...).
      return { error: error as Error }
    }
  }

  async #closeOwned(client: MongoClient): Promise<void> {
    this.#owned.delete(client)
    // Closing is the connection's business: a failure here is not the application's.
    await client.close().catch(() => undefined)
  }
}

/** A `useDb()` child shares its parent's official client, so its rumongo client too. */
function rootOf(connection: MongooseConnectionLike): MongooseConnectionLike {
  let root = connection
  while (root._parent) root = root._parent
  return root
}
