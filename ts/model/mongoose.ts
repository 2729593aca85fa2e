/**
 * What `Model.fromMongoose` reads from a Mongoose model: structural types (rumongo does not load
 * Mongoose) and the schema's visible and `select: false` paths.
 * @module
 */

/** What `Model.fromMongoose` reads from a Mongoose model (structural: rumongo does not load Mongoose). */
export interface MongooseModelLike {
  schema: MongooseSchemaLike
  collection: { collectionName: string }
  /** The model's connection: its `name` (the database) is set once Mongoose connects. */
  db: { name?: string }
  discriminators?: Record<string, { schema: MongooseSchemaLike }> | null
  baseModelName?: string
}

export interface MongooseSchemaLike {
  paths: Record<string, MongooseSchemaTypeLike>
  options?: { discriminatorKey?: string }
  discriminatorMapping?: { key: string; value: unknown; isRoot: boolean }
}

export interface MongooseSchemaTypeLike {
  /** The type's name: `'ObjectId'`, `'String'`, ... */
  instance?: string
  options?: { select?: boolean }
  /** Set on subdocuments and document arrays. */
  schema?: MongooseSchemaLike
}

/**
 * The visible and `select: false` paths of a Mongoose schema. A subdocument or document array is
 * read whole unless it hides some of its fields: projecting an array's fields one by one may move the
 * array to the end of the document on some servers (FerretDB), unlike Mongoose's results. A schema
 * nested in itself (Mongoose's recursive schemas, a tree of comments) is read whole where it
 * recurs: its paths have no end to list.
 */
export function collectSchemaPaths(
  schema: MongooseSchemaLike,
  prefix: string,
  visible: string[],
  hidden: string[],
  enclosing: ReadonlySet<MongooseSchemaLike> = new Set([schema]),
) {
  for (const [name, type] of Object.entries(schema.paths)) {
    // Map values (`meta.$*`) are covered by the map's own path.
    if (name.includes('$')) continue
    const path = prefix + name
    const nested = type.schema
    if (type.options?.select === false) {
      hidden.push(path)
    } else if (nested && !enclosing.has(nested) && hidesFields(nested)) {
      collectSchemaPaths(nested, `${path}.`, visible, hidden, new Set([...enclosing, nested]))
    } else {
      visible.push(path)
    }
  }
}

/** Whether `schema` or a schema nested in it has a `select: false` path (each schema looked at once). */
export function hidesFields(schema: MongooseSchemaLike): boolean {
  const seen = new Set<MongooseSchemaLike>([schema])
  const pending = [schema]
  while (pending.length > 0) {
    for (const type of Object.values(pending.pop()!.paths)) {
      if (type.options?.select === false) return true
      if (type.schema !== undefined && !seen.has(type.schema)) {
        seen.add(type.schema)
        pending.push(type.schema)
      }
    }
  }
  return false
}
