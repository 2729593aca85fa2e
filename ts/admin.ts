/**
 * `Admin`: the `admin` database's read commands, as in the official driver (`db.admin()`).
 * @module
 */
import type { Document } from 'bson'
import type { RunCommandOptions } from './commands.js'
import type { Db } from './db.js'

/** Options of `admin.listDatabases()`. */
export interface ListDatabasesOptions extends RunCommandOptions {
  /** Only the names (no sizes). */
  nameOnly?: boolean
  filter?: Document
  authorizedDatabases?: boolean
  comment?: unknown
}

/** The admin database's commands. Get it with `db.admin()`. */
export class Admin {
  readonly #db: Db

  /** @internal Created by `Db.admin`. */
  constructor(db: Db) {
    this.#db = db
  }

  /** Runs a read-only command on the `admin` database (see `Db.command`). */
  async command(command: Document, options?: RunCommandOptions): Promise<Document> {
    return this.#db.command(command, options)
  }

  /** `{ ok: 1 }` when the server answers. */
  async ping(options?: RunCommandOptions): Promise<Document> {
    return this.command({ ping: 1 }, options)
  }

  /** The server's `buildInfo` (version, ...). */
  async buildInfo(options?: RunCommandOptions): Promise<Document> {
    return this.command({ buildinfo: 1 }, options)
  }

  /** Same as `buildInfo`. */
  async serverInfo(options?: RunCommandOptions): Promise<Document> {
    return this.command({ buildinfo: 1 }, options)
  }

  /** The server's `serverStatus`. */
  async serverStatus(options?: RunCommandOptions): Promise<Document> {
    return this.command({ serverStatus: 1 }, options)
  }

  /** The replica set's status (`replSetGetStatus`). */
  async replSetGetStatus(options?: RunCommandOptions): Promise<Document> {
    return this.command({ replSetGetStatus: 1 }, options)
  }

  /** The databases of the deployment: `{ databases: [{ name, sizeOnDisk, empty }], totalSize, ok }`. */
  async listDatabases(options: ListDatabasesOptions = {}): Promise<Document> {
    const { nameOnly, filter, authorizedDatabases, comment, ...rest } = options ?? {}
    const command: Document = { listDatabases: 1 }
    if (typeof nameOnly === 'boolean') command.nameOnly = nameOnly
    if (filter) command.filter = filter
    if (typeof authorizedDatabases === 'boolean') command.authorizedDatabases = authorizedDatabases
    if (comment !== undefined) command.comment = comment
    return this.command(command, rest)
  }
}
