// Which build of rumongo the cells load. dist/ is shared with everyone working in this checkout: a
// debug build (10x slower to decode) or a rebuild in the middle of a run silently changes the
// numbers, so the run records the build profile and notices when dist/ changes under it.
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const dist = join(root, 'dist')

const sha1 = (path) => createHash('sha1').update(readFileSync(path)).digest('hex')

/** The addon napi-rs copied into dist/. */
function distAddon() {
  const name = readdirSync(dist).find((file) => file.endsWith('.node'))
  if (!name) throw new Error('dist/ has no .node addon: run npm run build')
  return join(dist, name)
}

/**
 * 'release', 'debug' or 'unknown': the cargo profile whose library dist/'s addon is a copy of
 * (napi-rs builds into target/<triple>/<profile>/ or target/<profile>/).
 */
export function addonProfile() {
  const targetDir = join(root, 'target')
  if (!existsSync(targetDir)) return 'unknown'
  const addon = distAddon()
  const { size } = statSync(addon)
  const digest = sha1(addon)
  const targets = [targetDir, ...readdirSync(targetDir).map((name) => join(targetDir, name))]
  for (const profile of ['release', 'debug']) {
    for (const target of targets) {
      const library = join(target, profile, 'librumongo.so')
      if (existsSync(library) && statSync(library).size === size && sha1(library) === digest) return profile
    }
  }
  return 'unknown'
}

/** Names, sizes and mtimes of everything in dist/: changes whenever anyone rebuilds. */
export function distFingerprint() {
  return readdirSync(dist, { recursive: true })
    .map((name) => {
      const { size, mtimeMs } = statSync(join(dist, name))
      return `${name}:${size}:${mtimeMs}`
    })
    .sort()
    .join('\n')
}
