// The release workflow (.github/workflows/release.yml) cannot run here (no GitHub Actions): this
// checks what can be checked without running it. It parses; its build matrix covers every platform
// of scripts/platforms.cjs once, on a runner of that platform's OS; exactly one job uploads the
// main tarball (the build jobs once all uploaded their own copy, and merging the artifacts made
// them overwrite each other); and every script, npm script and `needs` it names exists.
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const { platforms } = require('../scripts/platforms.cjs') as {
  platforms: { triple: string; os: string }[]
}
const pkg = require('../package.json') as { version: string; scripts: Record<string, string> }

interface Step {
  uses?: string
  run?: string
  with?: Record<string, unknown>
}
interface Job {
  'runs-on': string
  needs?: string | string[]
  strategy?: { matrix: { include?: Record<string, string>[]; [key: string]: unknown } }
  steps: Step[]
}
const workflow = parse(readFileSync(join(root, '.github', 'workflows', 'release.yml'), 'utf8')) as {
  jobs: Record<string, Job>
}

/** The RegExp of a glob as @actions/glob reads an upload-artifact path: `*`, `?` and `[...]`. */
function globRegExp(glob: string): RegExp {
  const source = glob.replace(/\[[^\]]+\]|[*?]|[^*?[]+/g, (part) => {
    if (part === '*') return '[^/]*'
    if (part === '?') return '[^/]'
    if (part.startsWith('[')) return part
    return part.replace(/[.+^${}()|\\]/g, '\\$&')
  })
  return new RegExp(`^${source}$`)
}

const uploads = Object.entries(workflow.jobs).flatMap(([id, job]) =>
  job.steps
    .filter((step) => step.uses?.startsWith('actions/upload-artifact@'))
    .map((step) => ({ id, job, name: String(step.with?.name), path: String(step.with?.path) })),
)

describe('release workflow', () => {
  it('builds every platform once, on a runner of its OS', () => {
    const include = workflow.jobs.build.strategy?.matrix.include ?? []
    const built = include.flatMap(({ host, triples }) =>
      triples.split(',').map((triple) => ({ host, triple })),
    )
    expect(built.map(({ triple }) => triple).sort()).toEqual(platforms.map((p) => p.triple).sort())
    const runnerOs = { linux: 'ubuntu', darwin: 'macos', win32: 'windows' } as Record<string, string>
    for (const { host, triple } of built) {
      const platform = platforms.find((p) => p.triple === triple)
      expect(host, triple).toMatch(new RegExp(`^${runnerOs[platform?.os ?? '']}-`))
    }
  })

  it('uploads the main tarball from one job only, and each job its own artifact', () => {
    const mainTarball = `packages/rumongo-${pkg.version}.tgz`
    const platformTarballs = platforms.map((p) => `packages/rumongo-${p.triple}-${pkg.version}.tgz`)
    const mainUploads = uploads.filter(({ path }) => globRegExp(path).test(mainTarball))
    expect(mainUploads.map(({ id }) => id)).toEqual(['main'])
    // One job instance packs it: a matrix would upload it once per entry.
    expect(mainUploads[0]?.job.strategy).toBeUndefined()
    for (const tarball of platformTarballs) {
      expect(uploads.filter(({ path }) => globRegExp(path).test(tarball)).map(({ id }) => id)).toEqual([
        'build',
      ])
    }
    // A matrix job's artifact name differs per entry, or the uploads would collide.
    for (const { job, name } of uploads) if (job.strategy) expect(name).toContain('${{')
    expect(new Set(uploads.map(({ name }) => name)).size).toBe(uploads.length)
  })

  it('packs with `--only` lists that name the main package or platforms that exist', () => {
    const onlyLists = Object.values(workflow.jobs).flatMap((job) =>
      job.steps.flatMap((step) => [...(step.run ?? '').matchAll(/npm run package -- --only (\S+)/g)]),
    )
    expect(onlyLists.length).toBeGreaterThan(0)
    const include = workflow.jobs.build.strategy?.matrix.include ?? []
    const names = onlyLists.flatMap(([, list]) =>
      list === '${{' ? include.flatMap(({ triples }) => triples.split(',')) : list.split(','),
    )
    for (const name of names) expect([...platforms.map((p) => p.triple), 'main']).toContain(name)
  })

  it('names only scripts, npm scripts and jobs that exist', () => {
    const jobs = Object.keys(workflow.jobs)
    for (const job of Object.values(workflow.jobs)) {
      for (const need of [job.needs ?? []].flat()) expect(jobs).toContain(need)
      for (const { run } of job.steps) {
        for (const [, file] of (run ?? '').matchAll(/\b(scripts\/[\w./-]+)/g)) {
          expect(existsSync(join(root, file)), file).toBe(true)
        }
        for (const [, script] of (run ?? '').matchAll(/npm run ([\w:-]+)/g)) {
          expect(Object.keys(pkg.scripts)).toContain(script)
        }
      }
    }
  })
})
