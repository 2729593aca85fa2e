/**
 * `Admin`: the `admin` database's read commands, as in the official driver (`db.admin()`).
 * @module
 */
import type { Document } from 'bson'
import type { RunCommandOptions } from './commands.js'

/** Options of `admin.listDatabases()`. */
export interface ListDatabasesOptions extends RunCommandOptions {
  /** Only the names (no sizes). */
  nameOnly?: boolean
  filter?: Document
  authorizedDatabases?: boolean
  comment?: unknown
}

/**
 * What `Admin` runs its commands on: the `admin` database's `Db`. Declared here rather than
 * imported, so that admin.ts does not depend on db.ts, which creates it.
 * @internal
 */
export interface CommandRunner {
  command(command: Document, options?: RunCommandOptions): Promise<Document>
}

/** The admin database's commands. Get it with `db.admin()`. */
export class Admin {
  readonly #db: CommandRunner

  /** @internal Created by `Db.admin`. */
  constructor(db: CommandRunner) {
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
