// The specifications repository's unified-format CRUD read tests (and the read tests of the
// versioned-API ones), run by the official driver and by rumongo against the test server.
// rumongo must pass every test the official driver passes, except the entries of
// RUMONGO_DIFFERENCES; tests the official driver itself fails here (server limits of the embedded
// FerretDB) are still run by both and listed in the summary: there rumongo must fail exactly as the
// official driver does.
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as official from 'mongodb'
import * as rumongo from 'rumongo'
import { uri } from '../setup/helpers.js'
import { CLOSE_CONNECTION, startWireServer, type WireServer } from '../setup/wire_server.js'
import {
  type Counters,
  failCommand,
  type Driver,
  describeError,
  isReadTest,
  loadFiles,
  match,
  MatchError,
  RunnerError,
  serverInfo,
  TestRun,
  type UnifiedFile,
  type UnifiedTest,
  unmetRequirement,
} from './runner.js'

/**
 * Known differences: "file: test description" → why rumongo fails it and a substring of its
 * failure. An entry whose test rumongo passes (or fails differently) fails the suite: remove it
 * with the fix.
 */
const RUMONGO_DIFFERENCES: Record<string, { reason: string; failure: string }> = {
  // Fails for the official driver too on FerretDB 1.24 (no `let`); differs on a real server.
  'aggregate-let: Aggregate to collection with let option': {
    reason: 'rumongo is read-only: an aggregate with $out is refused (README), the official driver writes it',
    failure: 'MongoInvalidArgumentError code ERR_INVALID_ARGUMENT: rumongo runs read pipelines only',
  },
}

const files = loadFiles(fileURLToPath(new URL('../fixtures/unified', import.meta.url)))
const setup = await official.MongoClient.connect(uri)
const server = await serverInfo(setup, uri)
const counters: Counters = { delegatedWrites: 0 }
const summary = {
  run: 0,
  officialPassed: 0,
  rumongoPassed: 0,
  notReadTests: 0,
  notApplicable: [] as string[],
  officialFailures: [] as string[],
  differences: [] as string[],
}
const started = Date.now()

interface Target {
  uri: string
  /** The official client that loads initialData and reads outcome on that server. */
  setup: official.MongoClient
  setFailPoint?: (failPoint: official.Document) => void
}

/** Why the test failed for this driver, or `undefined` when it passed. A RunnerError propagates. */
async function outcome(
  driver: Driver,
  file: UnifiedFile,
  test: UnifiedTest,
  target: Target = { uri, setup },
) {
  try {
    await new TestRun(driver, target.uri, target.setup, counters, target.setFailPoint).run(file, test)
    return undefined
  } catch (error) {
    if (error instanceof RunnerError) throw error
    return error instanceof MatchError ? error.message : `error ${describeError(error)}`
  }
}

afterAll(async () => {
  await setup.close()
  const lines = [
    `unified CRUD read tests on server ${server.version.join('.')} (${server.topology}):`,
    `  ${summary.run} run; official driver passed ${summary.officialPassed}, rumongo passed ${summary.rumongoPassed}`,
    `  ${summary.notReadTests} write tests of the versioned-API files not run (rumongo is read-only)`,
    `  ${counters.delegatedWrites} writes inside read tests sent through the official driver for rumongo`,
    `  ${summary.notApplicable.length} not applicable:`,
    ...summary.notApplicable.map((line) => `    ${line}`),
    `  official driver fails (server limits), still run by both:`,
    ...summary.officialFailures.map((line) => `    ${line}`),
    `  rumongo differences (RUMONGO_DIFFERENCES):`,
    ...summary.differences.map((line) => `    ${line}`),
    `  ${((Date.now() - started) / 1000).toFixed(1)} s`,
  ]
  console.log(lines.join('\n'))
})

/** The suite's assertion for one test, given why each driver failed it (`undefined`: passed). */
function judge(key: string, officialFailure?: string, rumongoFailure?: string) {
  const known = RUMONGO_DIFFERENCES[key]
  if (known) {
    summary.differences.push(`${key}: ${known.reason} (${rumongoFailure})`)
    expect(rumongoFailure, `${key} is in RUMONGO_DIFFERENCES: remove the entry`).toContain(known.failure)
  } else if (!officialFailure) {
    expect(rumongoFailure, 'rumongo fails where the official driver passes').toBeUndefined()
  } else {
    // Where the server makes the official driver fail, rumongo fails the same way (same
    // error class, code and message; FerretDB prints pointers that differ between runs).
    const stable = (failure?: string) => failure?.replace(/0x[0-9a-f]+/g, '0x…')
    expect(stable(rumongoFailure), 'rumongo fails unlike the official driver').toBe(stable(officialFailure))
  }
}

// Which tests run is decided before vitest collects them, so every `it` below is a test that runs.
const plan: { name: string; file: UnifiedFile; tests: UnifiedTest[] }[] = []
for (const [name, file] of files) {
  const fileUnmet = await unmetRequirement(file.runOnRequirements, server)
  const tests: UnifiedTest[] = []
  for (const test of file.tests) {
    const unmet = fileUnmet ?? (await unmetRequirement(test.runOnRequirements, server))
    if (!isReadTest(test)) summary.notReadTests++
    else if (unmet) summary.notApplicable.push(`${name}: ${test.description} (${unmet})`)
    else tests.push(test)
  }
  if (tests.length) plan.push({ name, file, tests })
}

for (const { name, file, tests } of plan) {
  describe(name, () => {
    for (const test of tests) {
      const key = `${name}: ${test.description}`
      it(test.description, async () => {
        summary.run++
        const officialFailure = await outcome(official, file, test)
        const rumongoFailure = await outcome(rumongo as unknown as Driver, file, test)
        if (!officialFailure) summary.officialPassed++
        if (!rumongoFailure) summary.rumongoPassed++
        if (officialFailure) {
          summary.officialFailures.push(`${key}: ${officialFailure} | rumongo: ${rumongoFailure ?? 'passes'}`)
        }
        judge(key, officialFailure, rumongoFailure)
      })
    }
  })
}

// The runner's own rules, so a lenient matcher cannot make the tests above pass by accident.
describe('unified runner', () => {
  it('matches as the unified format says', () => {
    const root = { root: true }
    const nested = { root: false }
    expect(match({ x: 1 }, { x: 1, y: 2 }, root)).toBeUndefined()
    expect(match({ x: { y: 1 } }, { x: { y: 1, z: 1 } }, root)).toMatch(/unexpected fields z/)
    expect(match([{ x: 1 }], [{ x: 1, y: 1 }], nested)).toMatch(/unexpected fields y/)
    expect(match({ x: 1, y: 1 }, { x: 1 }, root)).toMatch(/\$\.y: missing/)
    expect(match({ n: 1 }, { n: new official.Double(1) }, root)).toBeUndefined()
    expect(match({ n: 1 }, { n: official.Long.fromNumber(1) }, root)).toBeUndefined()
    expect(match({ n: 1 }, { n: 1.5 }, root)).toMatch(/1\.5 !== 1/)
    expect(match([1, 2], [1, 2, 3], nested)).toMatch(/3 elements, expected 2/)
    expect(match({ a: { $$exists: false } }, { a: null }, root)).toMatch(/present/)
    expect(match({ a: { $$exists: true } }, { a: null }, root)).toBeUndefined()
    expect(match({ a: { $$unsetOrMatches: 2 } }, {}, root)).toBeUndefined()
    expect(match({ a: { $$unsetOrMatches: 2 } }, { a: 3 }, root)).toMatch(/3 !== 2/)
    expect(
      match({ a: { $$type: ['int', 'long'] } }, { a: official.Long.fromNumber(5) }, root),
    ).toBeUndefined()
    expect(match({ a: { $$type: 'string' } }, { a: 5 }, root)).toMatch(/expected string/)
    expect(match({ sort: { _id: 1 } }, { sort: new Map([['_id', 1]]) }, root)).toBeUndefined()
    expect(match({ a: 'x' }, { a: 'y' }, root)).toMatch(/"y" !== "x"/)
  })

  it('fails a driver that drops an option (a find without its skip)', async () => {
    class SkiplessClient extends official.MongoClient {
      override db(name?: string, options?: official.DbOptions) {
        const db = super.db(name, options)
        const collection = db.collection.bind(db)
        db.collection = ((collectionName: string, collectionOptions?: official.CollectionOptions) => {
          const coll = collection(collectionName, collectionOptions)
          const find = coll.find.bind(coll)
          coll.find = ((
            filter: official.Filter<official.Document>,
            { skip: _, ...rest }: official.FindOptions = {},
          ) => find(filter, rest)) as typeof coll.find
          return coll
        }) as typeof db.collection
        return db
      }
    }
    const [, file] = files.find(([name]) => name === 'find')!
    const test = file.tests.find(
      ({ description }) => description === 'Find with filter, sort, skip, and limit',
    )!
    const skipless = { ...official, MongoClient: SkiplessClient } as unknown as Driver
    expect(await outcome(official, file, test)).toBeUndefined()
    expect(await outcome(skipless, file, test)).toMatch(/^find result \$\[0\]\._id/)
  })
})

// failCommand fail points, which the embedded FerretDB lacks (configureFailPoint), played by the fake
// wire server standing for a mongod: a command error and a closed connection. Both drivers must pass.
describe('fail points on a fake wire server', () => {
  const withFailPoints = plan.flatMap(({ name, file, tests }) =>
    file.tests
      .filter((test) => test.operations.some((op) => op.name === 'failPoint') && isReadTest(test))
      .map((test) => ({ name, file, test })),
  )
  let server: WireServer
  let fails: ((command: official.Document) => official.Document | 'close' | undefined) | undefined
  beforeAll(async () => {
    server = await startWireServer({
      answer(command) {
        const failed = fails?.(command)
        if (failed === 'close') return CLOSE_CONNECTION
        return failed ?? (Object.keys(command)[0] === 'count' ? { n: 0, ok: 1 } : { ok: 1 })
      },
    })
  })
  afterAll(() => server?.stop())

  async function failure(driver: Driver, file: UnifiedFile, test: UnifiedTest) {
    fails = undefined
    const fake = await official.MongoClient.connect(server.uri)
    const setFailPoint = (failPoint: official.Document) => {
      fails = failCommand(failPoint)
    }
    try {
      return await outcome(driver, file, test, { uri: server.uri, setup: fake, setFailPoint })
    } finally {
      await fake.close()
    }
  }

  it('covers the tests with fail points', () => {
    expect(withFailPoints.map(({ test }) => test.description)).toEqual([
      'estimatedDocumentCount errors correctly--command error',
      'estimatedDocumentCount errors correctly--socket error',
    ])
  })

  for (const { name, file, test } of withFailPoints) {
    it(`${name}: ${test.description}`, async () => {
      const officialFailure = await failure(official, file, test)
      expect(officialFailure, 'the official driver on the fake server').toBeUndefined()
      judge(
        `fake server, ${name}: ${test.description}`,
        officialFailure,
        await failure(rumongo as unknown as Driver, file, test),
      )
    })
  }
})
