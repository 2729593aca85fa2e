// The shipped declarations type-check on their own: a user's project without `skipLibCheck` (the
// TypeScript default) reads every .d.ts of the package, the native binding's included.
import { execFileSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { expect, it } from 'vitest'

const root = resolve(import.meta.dirname, '..')

/** What `tsc -p project` prints (nothing when the project compiles). */
function typeCheck(project: string, source: string): string {
  writeFileSync(join(project, 'a.ts'), source)
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        types: ['node'],
        typeRoots: [join(root, 'node_modules', '@types')],
      },
      files: ['a.ts'],
    }),
  )
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  try {
    execFileSync(process.execPath, [tsc, '-p', project], { encoding: 'utf8' })
    return ''
  } catch (error) {
    return String((error as { stdout?: string }).stdout ?? error)
  }
}

it('dist/*.d.ts compile under --strict without skipLibCheck', () => {
  const project = mkdtempSync(join(tmpdir(), 'rumongo-dts-'))
  try {
    const entry = JSON.stringify(join(root, 'dist', 'index.js'))
    const output = typeCheck(
      project,
      `import * as rumongo from ${entry}\nexport const client: rumongo.MongoClient | undefined = undefined\n`,
    )
    expect(output).toBe('')
  } finally {
    rmSync(project, { recursive: true, force: true })
  }
}, 120_000)

// apache-arrow is an optional peer dependency: a project without it must still compile rumongo's
// declarations, which name its Table and RecordBatch (they read as `any` there).
it('dist/*.d.ts compile under --strict without skipLibCheck in a project without apache-arrow', () => {
  const project = mkdtempSync(join(tmpdir(), 'rumongo-dts-noarrow-'))
  try {
    // The package as installed: its declarations and package.json, and its one dependency, bson.
    // Copied, not linked: a link resolves to this checkout, whose node_modules has apache-arrow.
    const installed = join(project, 'node_modules', 'rumongo')
    mkdirSync(installed, { recursive: true })
    cpSync(join(root, 'package.json'), join(installed, 'package.json'))
    cpSync(join(root, 'dist'), join(installed, 'dist'), {
      recursive: true,
      filter: (source) => !/\.(node|js|cjs|mjs)$/.test(source),
    })
    symlinkSync(join(root, 'node_modules', 'bson'), join(project, 'node_modules', 'bson'))
    const output = typeCheck(
      project,
      [
        `import { MongoClient } from 'rumongo'`,
        `const orders = new MongoClient('mongodb://localhost').db('shop').collection<{ total: number }>('orders')`,
        `export const ipc: Promise<Buffer> = orders.findArrow({}, { as: 'ipc' })`,
        `export const table = orders.findArrow({})`,
        '',
      ].join('\n'),
    )
    expect(output).toBe('')
  } finally {
    rmSync(project, { recursive: true, force: true })
  }
}, 120_000)
