// Starts the embedded dev server for the test run unless MONGODB_URI points at a server already.
import { createRequire } from 'node:module'
import { resolve } from 'node:path'
import type { TestProject } from 'vitest/node'
// @ts-expect-error: a plain ESM script without types
import { startDevdb } from '../../scripts/devdb.mjs'
// @ts-expect-error: a plain ESM script without types
import { ensureReplayBinary } from '../../scripts/replay.mjs'

declare module 'vitest' {
  export interface ProvidedContext {
    mongodbUri: string
  }
}

export default async function setup(project: TestProject) {
  // Tests call native hooks the published build leaves out (src/test_hooks.rs).
  // Resolved from the package root (vitest's working directory).
  const native = createRequire(resolve('package.json'))('./dist/native.cjs')
  if (typeof native.testPanic !== 'function') {
    throw new Error('dist/ was built without the test hooks: run `npm run build:test` (or `npm test`)')
  }
  // The replay server is built here, before any test runs: built on first use, its release build
  // (about 2.5 minutes on 2 cores) ran inside the first test's timeout and failed it.
  ensureReplayBinary()
  if (process.env.MONGODB_URI) {
    project.provide('mongodbUri', process.env.MONGODB_URI)
    return
  }
  const server = await startDevdb()
  project.provide('mongodbUri', server.uri)
  return () => server.stop()
}
