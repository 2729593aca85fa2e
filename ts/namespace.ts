/**
 * `MongoDBNamespace`: a database name with an optional collection name, as the official driver
 * gives it (`cursor.namespace`); `String(namespace)` is `db.collection`.
 * @module
 */
import { MongoRuntimeError } from './errors.js'

export class MongoDBNamespace {
  readonly db: string
  readonly collection: string | undefined

  constructor(db: string, collection?: string) {
    this.db = db
    this.collection = collection === '' ? undefined : collection
  }

  toString(): string {
    return this.collection ? `${this.db}.${this.collection}` : this.db
  }

  withCollection(collection: string): MongoDBNamespace {
    return new MongoDBNamespace(this.db, collection)
  }

  /** `db.collection` split at its first dot (a collection name may hold dots, a database name not). */
  static fromString(namespace?: string): MongoDBNamespace {
    if (typeof namespace !== 'string' || namespace === '') {
      throw new MongoRuntimeError(`Cannot parse namespace from "${namespace}"`)
    }
    const [db, ...collection] = namespace.split('.')
    return new MongoDBNamespace(db!, collection.join('.'))
  }
}
