// The shipped declarations type-check on their own: a user's project without `skipLibCheck` (the
// TypeScript default) reads every .d.ts of the package, the native binding's included.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { expect, it } from 'vitest'

const root = resolve(import.meta.dirname, '..')

it('dist/*.d.ts compile under --strict without skipLibCheck', () => {
  const project = mkdtempSync(join(tmpdir(), 'rumongo-dts-'))
  try {
    const entry = JSON.stringify(join(root, 'dist', 'index.js'))
    writeFileSync(
      join(project, 'a.ts'),
      `import * as rumongo from ${entry}\nexport const client: rumongo.MongoClient | undefined = undefined\n`,
    )
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
    let output = ''
    try {
      execFileSync(process.execPath, [tsc, '-p', project], { encoding: 'utf8' })
    } catch (error) {
      output = String((error as { stdout?: string }).stdout ?? error)
    }
    expect(output).toBe('')
  } finally {
    rmSync(project, { recursive: true, force: true })
  }
}, 60_000)
