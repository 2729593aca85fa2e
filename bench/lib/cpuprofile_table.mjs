// Self time per function of CPU profiles (node --cpu-prof, or bench/mongoose_populate_profile.mjs),
// in ms per run, grouped by where the code lives (mongoose, bson, mongodb, rumongo, GC, ...); with
// two profiles, side by side (e.g. without and with the plugin).
//
//   node bench/lib/cpuprofile_table.mjs <runs> <a.cpuprofile> [b.cpuprofile] [--top <n>]
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

/** Microseconds of self time per function (name, file, line), most first. */
export function selfTimes(profile) {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
  const functions = new Map()
  for (let k = 0; k < profile.samples.length; k++) {
    // A sample lasts until the next one.
    const micros = profile.timeDeltas[k + 1] ?? 0
    const { callFrame } = nodes.get(profile.samples[k])
    const key = `${callFrame.functionName || '(anonymous)'} ${shortUrl(callFrame.url)}:${callFrame.lineNumber + 1}`
    const entry = functions.get(key) ?? { key, url: callFrame.url, name: callFrame.functionName, micros: 0 }
    entry.micros += micros
    functions.set(key, entry)
  }
  return [...functions.values()].sort((a, b) => b.micros - a.micros)
}

function shortUrl(url) {
  return /node_modules\/(.*)$/.exec(url)?.[1] ?? /\/(dist\/.*)$/.exec(url)?.[1] ?? url
}

/** Where a function's code lives: the innermost package (Mongoose has its own copy of mongodb). */
export function group({ url, name }) {
  if (name === '(garbage collector)') return 'GC'
  if (name === '(idle)' || name === '(program)') return name
  const pkg = /.*node_modules\/([^/]+)\//.exec(url)?.[1]
  if (pkg === 'bson' || pkg === 'mongodb') return pkg
  if (['mongoose', 'mpath', 'kareem', 'sift', 'mquery'].includes(pkg)) return 'mongoose'
  if (pkg === undefined && url.includes('/dist/')) return 'rumongo'
  if (url.startsWith('node:')) return 'node'
  // Native functions (napi, builtins) and code made by new Function (rumongo's tape builders).
  if (url === '') return 'native, builtins, generated'
  return 'other'
}

function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string', default: '30' } },
  })
  const [runs, ...files] = positionals
  const perRun = (micros) => (micros / 1000 / Number(runs)).toFixed(1).padStart(8)
  const sides = files.map(
    (file) => new Map(selfTimes(JSON.parse(readFileSync(file, 'utf8'))).map((e) => [e.key, e])),
  )
  const keys = [...new Set(sides.flatMap((side) => [...side.keys()]))]
  const micros = (side, key) => side.get(key)?.micros ?? 0
  const groups = new Map()
  for (const key of keys) {
    const name = group(sides.find((side) => side.has(key)).get(key))
    const sums = groups.get(name) ?? sides.map(() => 0)
    sides.forEach((side, k) => (sums[k] += micros(side, key)))
    groups.set(name, sums)
  }
  console.log(`ms per run: ${files.join(' | ')}`)
  for (const [name, sums] of [...groups].sort((a, b) => Math.max(...b[1]) - Math.max(...a[1]))) {
    console.log(`${sums.map(perRun).join('')}  ${name}`)
  }
  console.log(
    'total'.padStart(8 * sides.length) +
      '\n' +
      sides.map((side) => perRun([...side.values()].reduce((sum, e) => sum + e.micros, 0))).join(''),
  )
  const byMax = keys.sort(
    (a, b) => Math.max(...sides.map((s) => micros(s, b))) - Math.max(...sides.map((s) => micros(s, a))),
  )
  for (const key of byMax.slice(0, Number(values.top))) {
    const entry = sides.find((side) => side.has(key)).get(key)
    console.log(
      `${sides.map((side) => perRun(micros(side, key))).join('')}  ${group(entry).padEnd(10)} ${key}`,
    )
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main()
