// The read paths compared side by side: one entry per (library, method). A cell runs one path.
//
// To add a path: append an entry to PATHS. `open(target)` connects once per cell and returns a
// session whose `run(query)` is the timed part (it must do all the work a user would, e.g. read the
// fields) and whose `summarize(result)` runs after the clock stops and returns `{ count }` (plus
// `firstDocument` when the result holds plain documents, so their top-level fields are checked).
// A path with `feature` runs only once rumongo has that feature; until then its rows read
// "skipped: not implemented yet".
import { once } from 'node:events'
import { Writable } from 'node:stream'
import { mongooseSchema, topLevelFields } from './datasets.mjs'

/**
 * @typedef {object} Query
 * @property {string} db
 * @property {string} collection
 * @property {object} filter
 * @property {object} [projection]
 * @property {number} limit
 * @property {number} [batchSize]
 * @property {[string, string]} lazyFields  The two fields a lazy reader touches per document.
 *
 * @typedef {object} Summary
 * @property {number} count
 * @property {object} [firstDocument]  A plain object, when the result holds documents.
 *
 * @typedef {object} Session
 * @property {(query: Query) => Promise<unknown>} run   Timed: everything the user pays for.
 * @property {(result: unknown) => Summary} summarize   Untimed: how many documents came back.
 * @property {() => Promise<void>} close
 *
 * @typedef {object} Path
 * @property {string} id         Stable name (cells, --filter, the JSON output).
 * @property {string} label      The table's "library" column.
 * @property {string} [feature]  The rumongo feature it needs (see detectRumongoFeatures).
 * @property {string} [note]     Shown in the notes column.
 * @property {boolean} [reduces] Runs the reduce workloads (and only them): `run` returns a reduction.
 * @property {boolean} [sums]    Runs the sum workloads (the Arrow family, and only them): `run`
 *   returns `{ count, sum }` of `query.sumColumn`.
 * @property {string[]} [workloads] Runs these workloads only (a variant measured on a few of them).
 * @property {(target: { uri: string, db: string }) => Promise<Session>} open
 */

/** The find options every library sends, without the undefined ones. */
function findOptions({ projection, limit, batchSize }) {
  return Object.fromEntries(
    Object.entries({ projection, limit, batchSize }).filter(([, value]) => value !== undefined),
  )
}

/** Summary of an array of documents (plain, or Mongoose documents turned plain). */
function summarizeArray(documents) {
  const first = documents[0]
  return {
    count: documents.length,
    firstDocument: typeof first?.toObject === 'function' ? first.toObject() : first,
  }
}

/** Summary of a result that reports its own count (streaming and reducing paths). */
function summarizeCounted(result) {
  if (typeof result?.count !== 'number')
    throw new Error(`the path reported no document count: ${String(result)}`)
  if (result.missingFields > 0)
    throw new Error(`${result.missingFields} documents lacked a field the path read`)
  return { count: result.count }
}

/** Visits each document of an array or async iterable (for-await over an array costs a microtask each). */
async function forEachDocument(documents, visit) {
  if (Symbol.asyncIterator in documents) for await (const document of documents) visit(document)
  else for (const document of documents) visit(document)
}

/**
 * A findLazy path that reads `fieldsOf(document, query)` of every document: how much of the lazy
 * advantage is left as more fields are read.
 */
function lazyPath(id, label, note, fieldsOf) {
  return rumongoPath({
    id,
    label,
    feature: 'findLazy',
    note,
    async run(collection, query) {
      let count = 0
      let missingFields = 0
      await forEachDocument(await collection.findLazy(query.filter, findOptions(query)), (document) => {
        for (const field of fieldsOf(document, query)) if (document[field] === undefined) missingFields++
        count++
      })
      return { count, missingFields }
    },
  })
}

/**
 * The reduction of the reduce workloads: count, total and count per region of orders. It uses only
 * its arguments, so WorkerPool can rebuild it from its source in a worker.
 */
function reduceOrders(totals, order) {
  totals.count++
  totals.total += order.total
  totals.byRegion[order.region] = (totals.byRegion[order.region] ?? 0) + 1
  if (order.total === undefined || order.region === undefined) totals.missingFields++
  return totals
}

const emptyTotals = () => ({ count: 0, total: 0, byRegion: {}, missingFields: 0 })

/**
 * What an APM agent's command listener does: `monitorCommands: true` and one `commandSucceeded`
 * listener that reads the command's name and duration (not its reply).
 */
export const MONITORED = {
  options: { monitorCommands: true },
  listen(client) {
    const seen = { commands: 0, ms: 0 }
    client.on('commandSucceeded', (event) => {
      seen.commands += event.commandName.length > 0 ? 1 : 0
      seen.ms += event.duration
    })
    return seen
  },
  note: 'monitorCommands: true, one commandSucceeded listener reading commandName and duration; ratio vs the official driver with the same listener',
  workloads: ['orders', 'wide45-45'],
  /** A path's note and workloads when monitored (nothing otherwise). */
  describe: (monitored) => (monitored ? { note: MONITORED.note, workloads: MONITORED.workloads } : {}),
  /** `MongoClient.connect(uri)`, with the options and listener when monitored. */
  async connect(MongoClient, uri, monitored) {
    const client = await MongoClient.connect(uri, monitored ? MONITORED.options : {})
    if (monitored) MONITORED.listen(client)
    return client
  },
}

const official = officialFind('official', 'mongodb find().toArray()', false)

/** The official driver's find, with or without a command listener (see MONITORED). */
function officialFind(id, label, monitored) {
  return {
    id,
    label,
    ...MONITORED.describe(monitored),
    async open({ uri }) {
      const { MongoClient } = await import('mongodb')
      const client = await MONITORED.connect(MongoClient, uri, monitored)
      return {
        run: (query) =>
          client.db(query.db).collection(query.collection).find(query.filter, findOptions(query)).toArray(),
        summarize: summarizeArray,
        close: () => client.close(),
      }
    },
  }
}

/**
 * The official driver's ways to answer with JSON: the whole array stringified, or its cursor
 * streamed document by document into a socket-like sink (what an HTTP handler would do).
 */
const officialJsonPaths = [
  {
    id: 'official-json',
    label: 'mongodb JSON.stringify(toArray())',
    note: 'the reference for findJson / pipeJson',
    async open({ uri }) {
      const { MongoClient } = await import('mongodb')
      const client = await MongoClient.connect(uri)
      return {
        run: async (query) =>
          JSON.stringify(
            await client
              .db(query.db)
              .collection(query.collection)
              .find(query.filter, findOptions(query))
              .toArray(),
          ),
        summarize: (text) => summarizeArray(JSON.parse(text)),
        close: () => client.close(),
      }
    },
  },
  {
    id: 'official-json-stream',
    label: 'mongodb cursor, JSON.stringify per doc',
    note: 'into a discarding Writable',
    async open({ uri }) {
      const { MongoClient } = await import('mongodb')
      const client = await MongoClient.connect(uri)
      return {
        async run(query) {
          const sink = discardingSink()
          const cursor = client
            .db(query.db)
            .collection(query.collection)
            .find(query.filter, findOptions(query))
          let count = 0
          sink.write('[')
          for await (const document of cursor) {
            const text = (count++ === 0 ? '' : ',') + JSON.stringify(document)
            if (!sink.write(text)) await once(sink, 'drain')
          }
          sink.end(']')
          return { count, bytes: sink.bytesReceived }
        },
        summarize: summarizeCounted,
        close: () => client.close(),
      }
    },
  },
]

/** Mongoose `Model.find()`, hydrated into documents or `.lean()`. */
function mongoosePath(lean) {
  return {
    id: lean ? 'mongoose-lean' : 'mongoose',
    label: lean ? 'mongoose find().lean()' : 'mongoose find() hydrated',
    async open({ uri, db }) {
      const { default: mongoose } = await import('mongoose')
      // No autoCreate/autoIndex: the replay server answers reads only.
      const connection = await mongoose
        .createConnection(uri, { dbName: db, autoCreate: false, autoIndex: false })
        .asPromise()
      const models = new Map()
      const modelFor = (dataset) => {
        if (!models.has(dataset))
          models.set(dataset, connection.model(dataset, mongooseSchema(mongoose, dataset), dataset))
        return models.get(dataset)
      }
      return {
        run(query) {
          const find = modelFor(query.collection).find(query.filter, query.projection).limit(query.limit)
          if (query.batchSize !== undefined) find.batchSize(query.batchSize)
          return (lean ? find.lean() : find).exec()
        },
        summarize: summarizeArray,
        close: () => connection.close(),
      }
    },
  }
}

/** A rumongo path: `run(collection, query)` gets the rumongo collection the query names. */
function rumongoPath({ run, summarize = summarizeCounted, monitored = false, ...description }) {
  return {
    ...description,
    ...MONITORED.describe(monitored),
    async open({ uri }) {
      const { MongoClient } = await import('rumongo')
      const client = await MONITORED.connect(MongoClient, uri, monitored)
      return {
        run: (query) => run(client.db(query.db).collection(query.collection), query),
        summarize,
        close: () => client.close(),
      }
    },
  }
}

/** A sink standing in for a socket: takes every chunk, keeps none. */
function discardingSink() {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      sink.bytesReceived += chunk.length
      done()
    },
  })
  sink.bytesReceived = 0
  return sink
}

/**
 * The Arrow family: `query.sumColumn` summed end to end. The official route builds JS documents and
 * then an apache-arrow table from them; rumongo's either builds documents (find) or only the Arrow
 * columns (findArrow, built in Rust). The Arrow sums read the column's value buffers, as analytics
 * code does.
 */
const SUM_PATHS = [
  {
    id: 'official-arrow',
    label: 'mongodb toArray() + apache-arrow tableFromJSON',
    sums: true,
    async open({ uri }) {
      const [{ MongoClient }, arrow] = await Promise.all([import('mongodb'), import('apache-arrow')])
      const client = await MongoClient.connect(uri)
      return {
        run: async (query) => {
          const documents = await client
            .db(query.db)
            .collection(query.collection)
            .find(query.filter, findOptions(query))
            .toArray()
          return sumArrowColumn(arrow.tableFromJSON(documents), query.sumColumn)
        },
        summarize: summarizeCounted,
        close: () => client.close(),
      }
    },
  },
  rumongoPath({
    id: 'rumongo-sum',
    label: 'rumongo find() + sum',
    sums: true,
    note: 'JS documents, no Arrow',
    run: async (collection, query) => {
      const documents = await collection.find(query.filter, findOptions(query))
      let sum = 0
      for (const document of documents) sum += document[query.sumColumn]
      return { count: documents.length, sum }
    },
  }),
  rumongoPath({
    id: 'rumongo-arrow',
    label: 'rumongo findArrow()',
    feature: 'findArrow',
    sums: true,
    note: 'Arrow built in Rust, schema inferred',
    run: async (collection, query) =>
      sumArrowColumn(await collection.findArrow(query.filter, findOptions(query)), query.sumColumn),
  }),
]

/** The sum of a numeric column of an apache-arrow table, over its chunks' value buffers. */
function sumArrowColumn(table, name) {
  let sum = 0
  for (const data of table.getChild(name).data) {
    const { values, offset, length } = data
    for (let index = offset; index < offset + length; index++) sum += Number(values[index])
  }
  return { count: table.numRows, sum }
}

/** @type {Path[]} In table order; `official` first (the 1.00x reference). */
export const PATHS = [
  official,
  ...officialJsonPaths,
  mongoosePath(false),
  mongoosePath(true),
  rumongoPath({
    id: 'rumongo',
    label: 'rumongo find()',
    // Awaiting the cursor collects every document, as the official toArray() does.
    run: async (collection, query) => await collection.find(query.filter, findOptions(query)),
    summarize: summarizeArray,
  }),
  officialFind('official-monitored', 'mongodb find().toArray(), monitored', true),
  rumongoPath({
    id: 'rumongo-monitored',
    label: 'rumongo find(), monitored',
    monitored: true,
    run: async (collection, query) => await collection.find(query.filter, findOptions(query)),
    summarize: summarizeArray,
  }),
  {
    id: 'rumongo-model',
    label: 'rumongo Model.find()',
    feature: 'model',
    note: 'schema projection pushed down',
    async open({ uri }) {
      const { Model, MongoClient } = await import('rumongo')
      const client = await MongoClient.connect(uri)
      // One model per collection, defined once as an app would; the dataset's fields are its schema.
      const models = new Map()
      const modelFor = ({ db, collection }) => {
        const key = `${db}.${collection}`
        if (!models.has(key))
          models.set(key, Model.define(client.db(db).collection(collection), topLevelFields(collection)))
        return models.get(key)
      }
      return {
        run(query) {
          const find = modelFor(query).find(query.filter).limit(query.limit)
          if (query.projection !== undefined) find.select(query.projection)
          if (query.batchSize !== undefined) find.batchSize(query.batchSize)
          return find.exec()
        },
        summarize: summarizeArray,
        close: () => client.close(),
      }
    },
  },
  lazyPath('rumongo-lazy', 'rumongo findLazy()', 'reads 2 fields per doc', (_, query) => query.lazyFields),
  lazyPath('rumongo-lazy-10', 'rumongo findLazy() 10 fields', 'reads 10 fields per doc', (document) =>
    Reflect.ownKeys(document).slice(0, 10),
  ),
  lazyPath('rumongo-lazy-all', 'rumongo findLazy() all fields', 'reads every field', (document) =>
    Reflect.ownKeys(document),
  ),
  rumongoPath({
    id: 'rumongo-cursor',
    label: 'rumongo findCursor() stream',
    feature: 'findCursor',
    async run(collection, query) {
      let count = 0
      const cursor = collection.findCursor(query.filter, findOptions(query))
      // Iterate the cursor itself: awaiting a thenable cursor would collect an array instead.
      await forEachDocument(Symbol.asyncIterator in cursor ? cursor : await cursor, () => count++)
      return { count }
    },
  }),
  rumongoPath({
    id: 'rumongo-json',
    label: 'rumongo findJson()',
    feature: 'findJson',
    note: "format 'plain': the bytes of JSON.stringify(toArray())",
    run: (collection, query) => collection.findJson(query.filter, { ...findOptions(query), format: 'plain' }),
    summarize(result) {
      if (typeof result?.count === 'number') return { count: result.count }
      if (typeof result !== 'string' && !Buffer.isBuffer(result)) {
        throw new Error(`findJson returned ${typeof result}; teach bench/lib/paths.mjs to count it`)
      }
      return summarizeArray(JSON.parse(result.toString()))
    },
  }),
  rumongoPath({
    id: 'rumongo-pipe',
    label: 'rumongo pipeJson()',
    feature: 'pipeJson',
    note: "format 'plain', into a discarding Writable",
    async run(collection, query) {
      const sink = discardingSink()
      const { count } = await collection.pipeJson(
        query.filter,
        { ...findOptions(query), format: 'plain' },
        sink,
      )
      return { count, bytes: sink.bytesReceived }
    },
  }),
  {
    id: 'official-reduce',
    label: 'mongodb find().toArray() + reduce',
    reduces: true,
    note: 'reduced on the main thread',
    async open({ uri }) {
      const { MongoClient } = await import('mongodb')
      const client = await MongoClient.connect(uri)
      return {
        run: async (query) =>
          (
            await client
              .db(query.db)
              .collection(query.collection)
              .find(query.filter, findOptions(query))
              .toArray()
          ).reduce(reduceOrders, emptyTotals()),
        summarize: summarizeCounted,
        close: () => client.close(),
      }
    },
  },
  rumongoPath({
    id: 'rumongo-reduce',
    label: 'rumongo find() + reduce',
    reduces: true,
    note: 'reduced on the main thread',
    run: async (collection, query) =>
      (await collection.find(query.filter, findOptions(query))).reduce(reduceOrders, emptyTotals()),
  }),
  {
    id: 'rumongo-pool',
    label: 'rumongo WorkerPool.reduce()',
    feature: 'WorkerPool.reduce',
    reduces: true,
    note: 'reduced in worker threads (default size)',
    async open({ uri }) {
      const { WorkerPool } = await import('rumongo')
      const pool = await WorkerPool.create({ uri })
      return {
        run: (query) =>
          pool.reduce(
            query.db,
            query.collection,
            query.filter,
            findOptions(query),
            reduceOrders,
            emptyTotals(),
          ),
        summarize: summarizeCounted,
        close: () => pool.close(),
      }
    },
  },
  ...SUM_PATHS,
]

/** The path with this id. */
export function pathById(id) {
  const path = PATHS.find((candidate) => candidate.id === id)
  if (!path) throw new Error(`no path ${id}`)
  return path
}

/**
 * The rumongo features present in the built package (dist/), detected on an unconnected client so
 * new paths light up as soon as they are built.
 */
export async function detectRumongoFeatures() {
  const rumongo = await import('rumongo')
  const client = new rumongo.MongoClient('mongodb://127.0.0.1:9')
  const collection = client.db('bench').collection('probe')
  const features = new Set(
    ['findLazy', 'findCursor', 'findJson', 'pipeJson', 'findArrow'].filter(
      (name) => typeof collection[name] === 'function',
    ),
  )
  if (typeof rumongo.WorkerPool?.prototype?.reduce === 'function') features.add('WorkerPool.reduce')
  if (typeof rumongo.Model?.define === 'function') features.add('model')
  await client.close()
  return features
}
