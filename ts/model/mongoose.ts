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
 * array to the end of the document on some servers (FerretDB), unlike Mongoose's results.
 */
export function collectSchemaPaths(
  schema: MongooseSchemaLike,
  prefix: string,
  visible: string[],
  hidden: string[],
) {
  for (const [name, type] of Object.entries(schema.paths)) {
    // Map values (`meta.$*`) are covered by the map's own path.
    if (name.includes('$')) continue
    const path = prefix + name
    if (type.options?.select === false) {
      hidden.push(path)
    } else if (type.schema && hidesFields(type.schema)) {
      collectSchemaPaths(type.schema, `${path}.`, visible, hidden)
    } else {
      visible.push(path)
    }
  }
}

export function hidesFields(schema: MongooseSchemaLike): boolean {
  return Object.values(schema.paths).some(
    (type) => type.options?.select === false || (type.schema !== undefined && hidesFields(type.schema)),
  )
}
