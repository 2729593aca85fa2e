/**
 * One rumongo client per Mongoose connection: made on first use from the connection string and
 * options the connection gave the official driver, closed when the connection closes.
 * @module
 */
import { MongoClient } from '../mongo_client.js'
import type { MongooseConnectionLike } from './types.js'

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

  constructor(given?: MongoClient) {
    this.#given = given
  }

  clientFor(connection: MongooseConnectionLike): ClientSlot {
    if (this.#given) return { client: this.#given }
    let root = connection
    while (root._parent) root = root._parent
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
