// `npm test`: runs vitest (arguments pass through). The package is built by `pretest`; the
// embedded server is started by __tests__/setup/global.ts unless MONGODB_URI is set.
// Ends with one plain line "vitest: N passed, N failed[, N skipped][, N files failed to run]" that
// CI logs can be read by.
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
  const { numPassedTests, numFailedTests, numPendingTests, numTodoTests, testResults } = JSON.parse(
    readFileSync(report, 'utf8'),
  )
  const skipped = numPendingTests + numTodoTests
  // A file that fails before its tests run (an import that throws) has no test to count.
  const unrun = testResults.filter(
    (file) => file.status === 'failed' && file.assertionResults.length === 0,
  ).length
  const counts = [`${numPassedTests} passed`, `${numFailedTests} failed`]
  if (skipped) counts.push(`${skipped} skipped`)
  if (unrun) counts.push(`${unrun} file${unrun === 1 ? '' : 's'} failed to run`)
  console.log(`vitest: ${counts.join(', ')}`)
} catch {
  // No report (vitest failed before running tests): its exit status says what happened.
} finally {
  rmSync(reportDir, { recursive: true, force: true })
}
process.exit(result.status ?? 1)
