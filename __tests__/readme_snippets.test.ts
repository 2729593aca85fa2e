// Every ```js and ```ts block of README.md runs as written against the test server, as a user's
// ES module that imports 'rumongo' as an installed package: a snippet that rots (a renamed method,
// an option rumongo now refuses, a missing import) fails here. A snippet may use the names the
// README leaves to the reader (`READER_NAMES`); they are given to it here, and what it does with
// them is checked. The ```sh blocks are commands (install, build, demo, test) and are not run here.
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { MongoClient as OfficialClient } from 'mongodb'
import ts from 'typescript'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { uri } from './setup/helpers.js'

const root = resolve(import.meta.dirname, '..')
const run = promisify(execFile)

/** The README's code blocks in a language that runs, with their first line number. */
function snippets(): { language: 'js' | 'ts'; line: number; code: string }[] {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  const found = []
  for (const match of readme.matchAll(/^```(js|ts)\n([\s\S]*?)^```$/gm)) {
    const line = readme.slice(0, match.index).split('\n').length
    found.push({ language: match[1] as 'js' | 'ts', line, code: match[2]! })
  }
  return found
}

/**
 * The names the README's snippets use without defining them, which a reader has in their own
 * code: an `_id` as a hex string, a function to handle a document, an HTTP response. A snippet
 * that declares one itself keeps its own. What the snippet does with `handle` and `res` is
 * recorded and printed as its last line, for the test to check.
 */
const READER_NAMES: Record<string, string> = {
  id: `const id = '65f0c0ffee0000000000000a'`,
  handle: `const handle = (doc) => void globalThis.readerHandled.push(doc)`,
  res: `const res = new (await import('node:stream')).PassThrough()
res.on('data', (chunk) => globalThis.readerWritten.push(chunk))`,
}

/** The snippet with the reader's names it does not declare, and its report at exit. */
function withReaderNames(code: string): string {
  const given = Object.entries(READER_NAMES)
    .filter(([name]) => !new RegExp(String.raw`\b(const|let|var|function|class)\s+${name}\b`).test(code))
    .map(([, declaration]) => declaration)
  return `globalThis.readerHandled = []
globalThis.readerWritten = []
process.on('beforeExit', () => {
  const { readerHandled, readerWritten } = globalThis
  const response = Buffer.concat(readerWritten).toString()
  process.stdout.write('\\n' + JSON.stringify({ handled: readerHandled.length, response }))
  process.exit(0)
})
${given.join('\n')}
${code}`
}

const SHOP = 'shop'
let project: string
let official: OfficialClient

beforeAll(async () => {
  // The user's project: 'rumongo' installed (this checkout), nothing else.
  project = mkdtempSync(join(tmpdir(), 'rumongo-readme-'))
  mkdirSync(join(project, 'node_modules'))
  symlinkSync(root, join(project, 'node_modules', 'rumongo'))
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'readme-user', type: 'module' }))
  // The README's sample shop: a few orders of each region and status.
  official = await OfficialClient.connect(uri)
  await official.db(SHOP).dropDatabase()
  await official
    .db(SHOP)
    .collection('orders')
    .insertMany(
      Array.from({ length: 12 }, (_, n) => ({
        status: n % 3 === 0 ? 'pending' : 'paid',
        region: n % 2 === 0 ? 'eu' : 'us',
        total: 10 + n,
        at: new Date(Date.UTC(2026, 0, 1 + n)),
      })),
    )
})

afterAll(async () => {
  await official?.db(SHOP).dropDatabase()
  await official?.close()
  if (project) rmSync(project, { recursive: true, force: true })
})

describe('README.md snippets', () => {
  const blocks = snippets()

  it('has snippets to run', () => {
    expect(blocks.length).toBeGreaterThan(0)
  })

  it.each(blocks.map((block) => [block.line, block] as const))(
    'the block at line %s runs as written',
    async (line, { language, code }) => {
      const source =
        language === 'ts'
          ? ts.transpileModule(code, {
              compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
            }).outputText
          : code
      const file = join(project, `readme-${line}.mjs`)
      writeFileSync(file, withReaderNames(source))
      const { stdout } = await run(process.execPath, [file], {
        cwd: project,
        env: { ...process.env, MONGODB_URI: uri },
        timeout: 60_000,
      })
      const { handled, response } = JSON.parse(stdout.slice(stdout.lastIndexOf('\n') + 1))
      // What the tour does with the reader's names: every 'eu' order handled, and a JSON array of
      // their totals written into the response.
      if (code.includes('handle(')) expect(handled).toBe(6)
      if (code.includes(', res)')) {
        const totals = JSON.parse(response)
        expect(totals).toHaveLength(6)
        for (const order of totals) expect(Object.keys(order).sort()).toEqual(['_id', 'total'])
      }
    },
    90_000,
  )
})
