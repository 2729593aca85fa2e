// A new user's application code, written against the official driver's types, compiles the same
// against rumongo's: __tests__/fixtures/first_hour/app.ts is compiled once importing 'mongodb' and
// once importing 'rumongo', as an ES module (.mts) and as CommonJS (.cts, where the import becomes
// `require`; plus a file in `import x = require()` form), under each module resolution a project
// may use, with `strict` and `exactOptionalPropertyTypes`. Its `@ts-expect-error` lines are errors
// in both (an unused one fails).
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const root = resolve(import.meta.dirname, '..')
const app = readFileSync(join(root, '__tests__', 'fixtures', 'first_hour', 'app.ts'), 'utf8')
const DRIVERS = ['mongodb', 'rumongo'] as const

/** The app importing `driver` instead of the official driver. */
function appFor(driver: (typeof DRIVERS)[number]): string {
  const rewritten = app.replace(/from 'mongodb'/g, `from '${driver}'`)
  if (!rewritten.includes(`from '${driver}'`)) throw new Error('app.ts no longer imports mongodb')
  return rewritten
}

let project: string

beforeAll(() => {
  // A project whose node_modules has both drivers as installed packages: rumongo is this checkout
  // (its package.json `exports` and dist/), the official driver and @types/node are this checkout's.
  project = mkdtempSync(join(tmpdir(), 'rumongo-first-hour-'))
  mkdirSync(join(project, 'node_modules'))
  symlinkSync(root, join(project, 'node_modules', 'rumongo'))
  symlinkSync(join(root, 'node_modules', 'mongodb'), join(project, 'node_modules', 'mongodb'))
  symlinkSync(join(root, 'node_modules', '@types'), join(project, 'node_modules', '@types'))
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'first-hour', private: true }))
  for (const driver of DRIVERS) {
    for (const extension of ['mts', 'cts'])
      writeFileSync(join(project, `app-${driver}.${extension}`), appFor(driver))
    // CommonJS's own form: `import x = require()`, the whole module as a namespace.
    writeFileSync(
      join(project, `require-${driver}.cts`),
      [
        `import driver = require('${driver}')`,
        `export const client: driver.MongoClient = new driver.MongoClient('mongodb://127.0.0.1')`,
        `export const users: driver.Collection<{ name: string }> = client.db('app').collection('users')`,
        `export const found: Promise<driver.WithId<{ name: string }> | null> = users.findOne({ name: 'Ada' })`,
        `export const isServerError = (error: unknown) => error instanceof driver.MongoServerError`,
        '',
      ].join('\n'),
    )
  }
})

afterAll(() => rmSync(project, { recursive: true, force: true }))

/** What `tsc` prints for the project under these module settings (nothing when it compiles). */
function typeCheck(module: string, moduleResolution: string): string {
  const config = `tsconfig.${moduleResolution}.json`
  writeFileSync(
    join(project, config),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        exactOptionalPropertyTypes: true,
        noEmit: true,
        skipLibCheck: true,
        target: 'es2022',
        lib: ['es2023', 'esnext.disposable'],
        module,
        moduleResolution,
        types: ['node'],
      },
      files: DRIVERS.flatMap((driver) => [`app-${driver}.mts`, `app-${driver}.cts`, `require-${driver}.cts`]),
    }),
  )
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  try {
    execFileSync(process.execPath, [tsc, '-p', join(project, config)], { encoding: 'utf8', cwd: project })
    return ''
  } catch (error) {
    return String((error as { stdout?: string }).stdout ?? error)
  }
}

describe("the official driver's typical application code compiles against rumongo", () => {
  it.each([
    ['nodenext', 'nodenext'],
    ['node16', 'node16'],
    ['preserve', 'bundler'],
  ])(
    'module %s, moduleResolution %s: ESM import and CommonJS require',
    (module, moduleResolution) => {
      expect(typeCheck(module, moduleResolution)).toBe('')
    },
    120_000,
  )
})
