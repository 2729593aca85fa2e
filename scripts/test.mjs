// `npm test`: runs vitest (arguments pass through). The package is built by `pretest`; the
// embedded server is started by __tests__/setup/global.ts unless MONGODB_URI is set.
import { spawnSync } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const env = { ...process.env }
if (Number(process.versions.node.split('.')[0]) < 21) {
  const compat = pathToFileURL(join(root, 'scripts', 'node20-compat.mjs')).href
  env.NODE_OPTIONS = `${env.NODE_OPTIONS ?? ''} --import ${compat}`.trim()
}
const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs')
const result = spawnSync(process.execPath, [vitest, 'run', ...process.argv.slice(2)], {
  cwd: root,
  env,
  stdio: 'inherit',
})
process.exit(result.status ?? 1)
