// The native addon's loader (dist/native.cjs, from scripts/native-loader.cjs) on platforms this
// machine is not: each case runs in a child process whose platform, arch and libc detection are
// faked before the loader runs, so the error a user on that platform would see is the one checked.
import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const loader = join(root, 'dist', 'native.cjs')
const { platforms } = createRequire(import.meta.url)(join(root, 'scripts', 'platforms.cjs')) as {
  platforms: { triple: string }[]
}
const scratch = mkdtempSync(join(tmpdir(), 'rumongo-loader-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

interface Outcome {
  loaded?: string[]
  name?: string
  code?: string
  message?: string
}

/** Requires `file` in a Node whose process.platform/arch and /usr/bin/ldd (libc) are replaced. */
function loadAs(
  file: string,
  fake?: { platform: string; arch: string; glibc: boolean; noLdd?: boolean },
): Outcome {
  const preload = join(scratch, 'fake-platform.cjs')
  writeFileSync(
    preload,
    fake === undefined
      ? ''
      : `Object.defineProperty(process, 'platform', { value: ${JSON.stringify(fake.platform)} })
Object.defineProperty(process, 'arch', { value: ${JSON.stringify(fake.arch)} })
const fs = require('node:fs')
const readFileSync = fs.readFileSync
fs.readFileSync = (file, ...rest) => {
  if (file !== '/usr/bin/ldd') return readFileSync(file, ...rest)
  if (${fake.noLdd === true}) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' })
  return ${fake.glibc ? "'# glibc ldd'" : "'exec /lib/ld-musl-x86_64.so.1 --list'"}
}
const getReport = process.report.getReport.bind(process.report)
process.report.getReport = () => {
  const report = getReport()
  ${fake.glibc ? "report.header.glibcVersionRuntime = '2.17'" : 'delete report.header.glibcVersionRuntime'}
  return report
}
`,
  )
  const script = `try {
  console.log(JSON.stringify({ loaded: Object.keys(require(${JSON.stringify(file)})) }))
} catch (e) {
  console.log(JSON.stringify({ name: e.name, code: e.code, message: e.message }))
}`
  const child = spawnSync(process.execPath, ['--require', preload, '-e', script], { encoding: 'utf8' })
  expect(child.stderr).toBe('')
  return JSON.parse(child.stdout) as Outcome
}

describe('native loader', () => {
  it('loads the addon built from source on this machine', () => {
    expect(loadAs(loader).loaded).toEqual(expect.arrayContaining(['NativeClient', 'NativeCursor']))
  })

  it('names an unsupported platform, lists the supported ones and says how to build from source', () => {
    for (const fake of [
      { platform: 'linux', arch: 'riscv64', glibc: true, triple: 'linux-riscv64-gnu' },
      { platform: 'freebsd', arch: 'x64', glibc: false, triple: 'freebsd-x64' },
      { platform: 'win32', arch: 'arm64', glibc: false, triple: 'win32-arm64-msvc' },
    ]) {
      const outcome = loadAs(loader, fake)
      expect(outcome.code).toBe('RUMONGO_UNSUPPORTED_PLATFORM')
      expect(outcome.name).toBe('RumongoNativeError')
      expect(outcome.message).toContain(`this platform (${fake.triple}, Node ${process.version})`)
      for (const { triple } of platforms) expect(outcome.message).toContain(triple)
      expect(outcome.message).toContain('npm install && npm run build && npm pack')
      expect(outcome.message).not.toContain('package-lock')
    }
  })

  it('tells a supported platform whose package was not installed which package to install', () => {
    const version = (createRequire(import.meta.url)(join(root, 'package.json')) as { version: string })
      .version
    for (const fake of [
      { platform: 'linux', arch: 'x64', glibc: false, triple: 'linux-x64-musl' },
      { platform: 'linux', arch: 'arm64', glibc: true, triple: 'linux-arm64-gnu' },
      // No /usr/bin/ldd (distroless images): Node's report tells glibc from musl.
      { platform: 'linux', arch: 'arm64', glibc: false, noLdd: true, triple: 'linux-arm64-musl' },
      { platform: 'linux', arch: 'arm64', glibc: true, noLdd: true, triple: 'linux-arm64-gnu' },
      { platform: 'darwin', arch: 'arm64', glibc: false, triple: 'darwin-arm64' },
      { platform: 'win32', arch: 'x64', glibc: false, triple: 'win32-x64-msvc' },
    ]) {
      const outcome = loadAs(loader, fake)
      expect(outcome.code).toBe('RUMONGO_NATIVE_PACKAGE_MISSING')
      expect(outcome.message).toContain(`npm install rumongo-${fake.triple}@${version}`)
    }
  })

  it('says which binary failed to load and what it needs', () => {
    // A copy of the loader next to an addon file that is not a shared library, as a binary built
    // for a newer glibc fails on an older one.
    const dist = join(scratch, 'pkg', 'dist')
    mkdirSync(dist, { recursive: true })
    copyFileSync(join(root, 'package.json'), join(scratch, 'pkg', 'package.json'))
    copyFileSync(loader, join(dist, 'native.cjs'))
    copyFileSync(join(root, 'dist', 'platforms.cjs'), join(dist, 'platforms.cjs'))
    writeFileSync(join(dist, 'rumongo.linux-x64-gnu.node'), 'not an ELF file')
    const outcome = loadAs(join(dist, 'native.cjs'), { platform: 'linux', arch: 'x64', glibc: true })
    expect(outcome.code).toBe('RUMONGO_NATIVE_LOAD_FAILED')
    expect(outcome.message).toContain(
      `${join(dist, 'rumongo.linux-x64-gnu.node')} did not load on linux-x64-gnu`,
    )
    expect(outcome.message).toContain('(it needs glibc >= 2.17)')
  })
})
