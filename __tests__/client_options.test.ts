// The client surface of a real service: the Atlas snippet (Stable API), the official option table
// (every option works or is refused with the reason, typos refused as the official driver does),
// and `client.options`.
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as official from 'mongodb'
import * as rumongo from 'rumongo'
import { expectIdentical, uniqueDbName, uri } from './setup/helpers.js'
import { startWireServer, type WireServer } from './setup/wire_server.js'

type Driver = typeof official | typeof rumongo
const DRIVERS: [string, Driver][] = [
  ['official', official],
  ['rumongo', rumongo as unknown as Driver],
]
const ATLAS_SERVER_API = { version: '1', strict: true, deprecationErrors: true } as const

/** What `run` gives with each driver: its value, or its error's class, message and code. */
async function outcome(run: (driver: Driver) => unknown): Promise<unknown[]> {
  const outcomes: unknown[] = []
  for (const [, driver] of DRIVERS) {
    try {
      outcomes.push({ value: await run(driver) })
    } catch (error) {
      const { name, message, code } = error as { name: string; message: string; code?: unknown }
      outcomes.push({ error: name, message, code: typeof code === 'number' ? code : undefined })
    }
  }
  return outcomes
}

async function expectSameOutcome(run: (driver: Driver) => unknown): Promise<unknown> {
  const [expected, actual] = await outcome(run)
  expect(actual).toEqual(expected)
  return actual
}

const dbName = uniqueDbName('client_options')

afterAll(async () => {
  const client = await official.MongoClient.connect(uri)
  await client.db(dbName).dropDatabase()
  await client.close()
})

describe('Stable API', () => {
  it('exports ServerApiVersion from the CommonJS and ESM entries, as the official driver', () => {
    const cjs = createRequire(import.meta.url)('rumongo')
    expect(cjs.ServerApiVersion).toEqual(official.ServerApiVersion)
    expect(rumongo.ServerApiVersion).toEqual(official.ServerApiVersion)
    expect(rumongo.ServerApiVersion).toBe(cjs.ServerApiVersion)
  })

  it.each([
    ['the Atlas snippet', { serverApi: ATLAS_SERVER_API }],
    ['a version string', { serverApi: '1' }],
    ['strict: false', { serverApi: { version: '1', strict: false } }],
  ])('runs reads on the embedded server with %s as the official driver does', async (_, options) => {
    const results = await expectSameOutcome(async (driver) => {
      const client = await driver.MongoClient.connect(uri, options as never)
      try {
        const db = client.db(dbName)
        return {
          ping: await db.command({ ping: 1 }),
          found: await db.collection('none').find({}).toArray(),
          count: await db.collection('none').countDocuments({}),
        }
      } finally {
        await client.close()
      }
    })
    expect(results).toEqual({ value: { ping: { ok: 1 }, found: [], count: 0 } })
  })

  it.each([
    ['an unknown version', { serverApi: '2' }],
    ['no version', { serverApi: {} }],
  ])('rejects %s like the official driver', async (_, options) => {
    const actual = await expectSameOutcome((driver) => new driver.MongoClient(uri, options as never))
    expect(actual).toHaveProperty('error', 'MongoParseError')
  })

  it('rejects a non-boolean strict at once (the official driver sends it and the server refuses it)', () => {
    expect(
      () => new rumongo.MongoClient(uri, { serverApi: { version: '1', strict: 'yes' } } as never),
    ).toThrow(
      new rumongo.MongoInvalidArgumentError('serverApi.strict must be a boolean, got a string ("yes")'),
    )
  })

  it('rejects serverApi in the connection string like the official driver', async () => {
    const [, actual] = await outcome(
      (driver) => new driver.MongoClient(`${uri}${uri.includes('?') ? '&' : '?'}serverApi=1`),
    )
    expect(actual).toEqual({
      error: 'MongoParseError',
      message: 'URI cannot contain `serverApi`, it can only be passed to the client',
      code: undefined,
    })
    await expectSameOutcome((driver) => new driver.MongoClient(`${uri}?serverApi=1`))
  })

  describe('on the wire', () => {
    let server: WireServer
    beforeAll(async () => {
      server = await startWireServer({ documents: [{ _id: 1 }] })
    })
    afterAll(() => server?.stop())

    /** The Stable API fields of the commands `driver` sends for a ping and a find. */
    async function apiFields(driver: Driver, options: object) {
      server.commands.length = 0
      const client = await driver.MongoClient.connect(server.uri, options as never)
      await client.db('app').command({ ping: 1 })
      await client.db('app').collection('items').find({}).toArray()
      await client.close()
      const fields = (name: string) =>
        server.received(name).map(({ apiVersion, apiStrict, apiDeprecationErrors }) => ({
          apiVersion,
          apiStrict,
          apiDeprecationErrors,
        }))
      return { ping: fields('ping').at(-1), find: fields('find').at(-1) }
    }

    it.each([
      ['the Atlas snippet', { serverApi: ATLAS_SERVER_API }],
      ['a version string', { serverApi: '1' }],
      ['no serverApi', {}],
    ])('sends the same apiVersion fields as the official driver with %s', async (_, options) => {
      const expected = await apiFields(official, options)
      const actual = await apiFields(rumongo as unknown as Driver, options)
      expect(actual).toEqual(expected)
      if ('serverApi' in options) expect(actual.find?.apiVersion).toBe('1')
    })
  })
})

describe('the client option table', () => {
  it.each([
    ['a misspelled option', (driver: Driver) => new driver.MongoClient(uri, { maxPoolSzie: 5 } as never)],
    [
      'misspelled options in the URI and the object',
      (driver: Driver) => new driver.MongoClient(`${uri}?maxPoolSzie=5&fooBar=1`, { Baz: 1 } as never),
    ],
    [
      'loadBalanced as an object option',
      (driver: Driver) => new driver.MongoClient(uri, { loadBalanced: true } as never),
    ],
    [
      'an unknown compressor',
      (driver: Driver) => new driver.MongoClient(uri, { compressors: ['lz4'] } as never),
    ],
  ])('rejects %s like the official driver', async (_, run) => {
    const actual = await expectSameOutcome(run)
    expect(actual).toHaveProperty('error')
  })

  it('names every unknown option, lower-cased, as the official driver does', async () => {
    const [, actual] = await outcome((driver) => new driver.MongoClient(uri, { maxPoolSzie: 5 } as never))
    expect(actual).toEqual({
      error: 'MongoParseError',
      message: 'option maxpoolszie is not supported',
      code: undefined,
    })
  })

  it.each([
    ['monitorCommands: false', { monitorCommands: false }],
    ['monitorCommands: true', { monitorCommands: true }],
    ['driverInfo', { driverInfo: { name: 'my-service', version: '1.2.3' } }],
    ['write options', { w: 'majority', journal: true, retryWrites: false, wtimeoutMS: 100 }],
    ['compressors in the options', { compressors: ['zstd', 'snappy', 'zlib'], zlibCompressionLevel: 6 }],
    [
      'readConcern and readPreference objects',
      { readConcern: { level: 'local' }, readPreference: 'primary' },
    ],
    ['dbName', { dbName: dbName }],
  ])('accepts %s and reads with it as the official driver does', async (_, options) => {
    const actual = await expectSameOutcome(async (driver) => {
      const client = await driver.MongoClient.connect(uri, options as never)
      try {
        return {
          ping: await client.db().admin().ping(),
          dbName: client.db().databaseName,
          monitorCommands: client.options.monitorCommands,
        }
      } finally {
        await client.close()
      }
    })
    expect(actual).toHaveProperty('value')
  })

  it('accepts compressors and zlibCompressionLevel in the connection string', async () => {
    await expectSameOutcome(async (driver) => {
      const client = await driver.MongoClient.connect(
        `${uri}${uri.includes('?') ? '&' : '?'}compressors=zstd,snappy,zlib&zlibCompressionLevel=4`,
      )
      try {
        return { ping: await client.db().admin().ping(), compressors: client.options.compressors }
      } finally {
        await client.close()
      }
    })
  })

  it.each([
    ['autoEncryption', { autoEncryption: {} }, /client-side field level encryption/],
    ['a Node TLS option', { ca: 'pem' }, /use tlsCAFile/],
    ['a Node socket option', { family: 4 }, /Node socket option/],
    ['a proxy option', { proxyHost: 'localhost' }, /SOCKS5 proxy/],
  ])('refuses %s, which it does not implement, saying why', (_, options, reason) => {
    const run = () => new rumongo.MongoClient(uri, options as never)
    expect(run).toThrow(rumongo.MongoInvalidArgumentError)
    expect(run).toThrow(reason)
    // The official driver knows the option: only rumongo refuses it.
    expect(() => new official.MongoClient(uri, options as never)).not.toThrow(official.MongoParseError)
  })

  it('lists client.options as the official driver does (read-relevant fields)', async () => {
    const url =
      'mongodb://h1,h2:27018/shop?replicaSet=rs&appName=svc&maxPoolSize=7&retryReads=false' +
      '&readPreference=secondary&readPreferenceTags=dc:ny&readConcernLevel=majority' +
      '&compressors=zstd,zlib&serverSelectionTimeoutMS=900'
    const options = { serverApi: '1', promoteValues: false, monitorCommands: true, driverInfo: { name: 'x' } }
    const fields = [
      'hosts',
      'dbName',
      'replicaSet',
      'appName',
      'maxPoolSize',
      'minPoolSize',
      'retryReads',
      'readPreference',
      'readConcern',
      'compressors',
      'zlibCompressionLevel',
      'serverSelectionTimeoutMS',
      'connectTimeoutMS',
      'socketTimeoutMS',
      'heartbeatFrequencyMS',
      'localThresholdMS',
      'directConnection',
      'loadBalanced',
      'serverApi',
      'monitorCommands',
      'driverInfo',
      'promoteValues',
      'raw',
      'enableUtf8Validation',
    ]
    const pick = (client: { options: Record<string, unknown> }) =>
      JSON.parse(JSON.stringify(Object.fromEntries(fields.map((field) => [field, client.options[field]]))))
    const expected = pick(new official.MongoClient(url, options as never))
    const actual = pick(new rumongo.MongoClient(url, options as never))
    expect(actual).toEqual(expected)
    const client = new rumongo.MongoClient(url, options as never)
    expect(client.options.readPreference).toBeInstanceOf(rumongo.ReadPreference)
    expect(client.options.readConcern).toBeInstanceOf(rumongo.ReadConcern)
    expect(String(client.options.hosts[0])).toBe('h1:27017')
    expectIdentical(client.options.monitorCommands, true)
  })
})
