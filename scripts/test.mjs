// `npm test`: runs vitest (arguments pass through). The package is built by `pretest`; the
// embedded server is started by __tests__/setup/global.ts unless MONGODB_URI is set.
// Ends with one plain line "vitest: N passed, N failed[, N skipped][, N files failed]" that CI logs
// can be read by (a file that fails to load runs no test, so it shows only in the last count).
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const env = { ...process.env }
if (Number(process.versions.node.split('.')[0]) < 21) {
  const compat = pathToFileURL(join(root, 'scripts', 'node20-compat.mjs')).href
  env.NODE_OPTIONS = `${env.NODE_OPTIONS ?? ''} --import ${compat}`.trim()
}
const reportDir = mkdtempSync(join(tmpdir(), 'rumongo-test-'))
const report = join(reportDir, 'report.json')
const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs')
const args = [vitest, 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`]
const result = spawnSync(process.execPath, [...args, ...process.argv.slice(2)], {
  cwd: root,
  env,
  stdio: 'inherit',
})
try {
  const { numPassedTests, numFailedTests, numPendingTests, numTodoTests, numFailedTestSuites } = JSON.parse(
    readFileSync(report, 'utf8'),
  )
  const skipped = numPendingTests + numTodoTests
  const counts = [`${numPassedTests} passed`, `${numFailedTests} failed`]
  if (skipped) counts.push(`${skipped} skipped`)
  if (numFailedTestSuites)
    counts.push(`${numFailedTestSuites} file${numFailedTestSuites === 1 ? '' : 's'} failed`)
  console.log(`vitest: ${counts.join(', ')}`)
} catch {
  // No report (vitest failed before running tests): its exit status says what happened.
} finally {
  rmSync(reportDir, { recursive: true, force: true })
}
process.exit(result.status ?? 1)
