// Model.watch() through the Mongoose plugin (issue #35): Mongoose wraps the driver's change stream
// in its own ChangeStream, which the plugin now feeds from rumongo's. Two Mongoose instances, one
// with the plugin and one without, each on a fake primary serving the same scripted change stream
// (the embedded server has none): the same events, read as an iterator and as an emitter, the
// same commands on the wire, the plugin's stats count the watch as served, and the official
// client of the plugin's side sends no aggregate.
import { once } from 'node:events'
import { afterEach, describe, expect, it } from 'vitest'
import mongoose, { Schema } from 'mongoose'
import type { Document } from 'bson'
import { mongoosePlugin, type MongooseFallback } from 'rumongo'
import {
  insertEvent,
  startChangeStreamServer,
  type ChangeStreamServer,
} from './setup/change_stream_server.js'
import { expectIdentical } from './setup/helpers.js'

const EVENTS = Array.from({ length: 6 }, (_, n) =>
  insertEvent(n, { db: 'app', coll: 'books' }, (_id) => ({ _id, title: `book ${n}`, pages: 100 + n })),
)

/** The aggregates and getMores a side's server received, as compared across drivers. */
function streamWire(server: ChangeStreamServer): Document[] {
  return server.streamCommands().map((command) => {
    const name = Object.keys(command)[0]!
    if (name === 'aggregate') return { aggregate: command.aggregate, pipeline: command.pipeline }
    return { [name]: true, batchSize: command.batchSize, maxTimeMS: command.maxTimeMS }
  })
}

const opened: Array<{ instance: mongoose.Mongoose; server: ChangeStreamServer }> = []

afterEach(async () => {
  for (const { instance, server } of opened.splice(0)) {
    await instance.disconnect()
    await server.stop()
  }
})

/** A Mongoose application on its own fake primary, with or without the plugin. */
async function application(plugin?: ReturnType<typeof mongoosePlugin>) {
  const server = await startChangeStreamServer({ events: EVENTS, batchSize: 4 })
  const instance = new mongoose.Mongoose()
  if (plugin) instance.plugin(plugin)
  const connection = await instance
    .createConnection(server.uri, {
      dbName: 'app',
      monitorCommands: true,
      autoIndex: false,
      autoCreate: false,
    })
    .asPromise()
  const officialAggregates: string[] = []
  connection.getClient().on('commandStarted', (event) => {
    if (event.commandName === 'aggregate') officialAggregates.push(event.commandName)
  })
  const Book = connection.model('Book', new Schema({ title: String, pages: Number }), 'books')
  opened.push({ instance, server })
  return { server, Book, officialAggregates }
}

describe('Model.watch() with the plugin', () => {
  it('iterator: the same events and wire as the official driver, served by rumongo', async () => {
    const fallbacks: MongooseFallback[] = []
    const plugin = mongoosePlugin({ onFallback: (fallback) => fallbacks.push(fallback) })
    const read = async (side: Awaited<ReturnType<typeof application>>) => {
      const stream = side.Book.watch([], { maxAwaitTimeMS: 50 })
      const events: Document[] = []
      try {
        for (let i = 0; i < EVENTS.length; i++) events.push(await stream.next())
      } finally {
        await stream.close()
      }
      return events
    }
    const plain = await application()
    const routed = await application(plugin)
    const theirs = await read(plain)
    const ours = await read(routed)
    expectIdentical(ours, theirs)
    expect(theirs.map((event) => event.fullDocument.title)).toEqual(EVENTS.map((e) => e.fullDocument.title))
    expect(streamWire(routed.server)).toEqual(streamWire(plain.server))
    expect(plugin.stats().servedByMethod.watch).toBe(1)
    expect(fallbacks).toEqual([])
    expect(routed.officialAggregates).toEqual([])
    expect(plain.officialAggregates).toEqual(['aggregate'])
    await plugin.close()
  })

  it("emitter: Mongoose's 'change' events, hydrated when asked, as without the plugin", async () => {
    const plugin = mongoosePlugin()
    const read = async (side: Awaited<ReturnType<typeof application>>) => {
      const stream = side.Book.watch([], { maxAwaitTimeMS: 50, hydrate: true })
      const events: Document[] = []
      stream.on('change', (change: Document) => events.push(change))
      try {
        while (events.length < EVENTS.length) await once(stream, 'change')
      } finally {
        await stream.close()
      }
      return events.map((event) => ({
        ...event,
        fullDocument: {
          isDocument: event.fullDocument instanceof mongoose.Document,
          plain: event.fullDocument.toObject(),
        },
      }))
    }
    const theirs = await read(await application())
    const ours = await read(await application(plugin))
    expectIdentical(ours, theirs)
    expect(theirs[0]!.fullDocument.isDocument).toBe(true)
    expect(plugin.stats().servedByMethod.watch).toBe(1)
    await plugin.close()
  })
})
