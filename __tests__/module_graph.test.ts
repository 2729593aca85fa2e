// The module graphs have no cycle: on the TypeScript side every import between ts/ files counts
// (`import type` too: a type-only cycle still ties two modules' designs together), on the Rust side
// every `crate::` path between the top-level modules of src/ (`format/` is one module). docs/development.md's
// layout section describes the layers this keeps.
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const root = join(__dirname, '..')

type Graph = Map<string, Set<string>>

/** Every cycle the depth-first walk meets, each as its modules in order, the first repeated last. */
function findCycles(graph: Graph): string[][] {
  const cycles: string[][] = []
  const state = new Map<string, 'open' | 'done'>()
  const path: string[] = []
  const visit = (node: string) => {
    state.set(node, 'open')
    path.push(node)
    for (const next of [...(graph.get(node) ?? [])].sort()) {
      if (state.get(next) === 'open') cycles.push([...path.slice(path.indexOf(next)), next])
      else if (!state.has(next)) visit(next)
    }
    path.pop()
    state.set(node, 'done')
  }
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node)
  return cycles
}

function filesUnder(dir: string, extension: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith(extension) && !name.endsWith('.d.ts'))
    .map((name) => join(dir, name))
}

/** ts/ files and the ts/ files each imports (`import`, `import type`, `export ... from`, `import()`). */
function typescriptGraph(): Graph {
  const dir = join(root, 'ts')
  const files = new Set(filesUnder(dir, '.ts'))
  const graph: Graph = new Map()
  for (const file of files) {
    const imports = ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles
    const targets = new Set<string>()
    for (const { fileName } of imports) {
      if (!fileName.startsWith('.')) continue
      const base = resolve(dirname(file), fileName).replace(/\.js$/, '')
      const target = [`${base}.ts`, join(base, 'index.ts')].find((candidate) => files.has(candidate))
      if (target) targets.add(relative(dir, target))
    }
    graph.set(relative(dir, file), targets)
  }
  return graph
}

/** The names a `use crate::...` statement starting at `at` (after `crate::`) reaches at its top level. */
function usedModules(source: string, at: number): string[] {
  if (source[at] !== '{') return [/^\w+/.exec(source.slice(at))![0]]
  const names: string[] = []
  let depth = 0
  let item = ''
  for (let index = at; index < source.length; index++) {
    const char = source[index]
    if (char === '{') depth++
    if (char === '}') depth--
    if ((char === ',' && depth === 1) || depth === 0) {
      const name = /^\s*(\w+)/.exec(item)?.[1]
      if (name) names.push(name)
      item = ''
      if (depth === 0) break
    } else if (depth >= 1 && !(depth === 1 && char === '{')) {
      item += char
    }
  }
  return names
}

/** src/'s top-level modules and those each one's files name through `crate::`. */
function rustGraph(): Graph {
  const dir = join(root, 'src')
  const graph: Graph = new Map()
  for (const file of filesUnder(dir, '.rs')) {
    const module = relative(dir, file).split(/[/.]/)[0]
    if (module === 'lib') continue
    const source = readFileSync(file, 'utf8').replace(/\/\/.*$/gm, '')
    const targets = graph.get(module) ?? new Set<string>()
    for (const match of source.matchAll(/\bcrate::/g)) {
      for (const name of usedModules(source, match.index + match[0].length)) {
        if (name !== module) targets.add(name)
      }
    }
    graph.set(module, targets)
  }
  return graph
}

describe('module graph', () => {
  it('finds a cycle when there is one (the check itself)', () => {
    const graph: Graph = new Map([
      ['a', new Set(['b'])],
      ['b', new Set(['c'])],
      ['c', new Set(['a'])],
      ['d', new Set(['a'])],
    ])
    expect(findCycles(graph)).toEqual([['a', 'b', 'c', 'a']])
    expect(usedModules('{ error::{Error, Result}, raw::{a, b}, task::spawn };', 0)).toEqual([
      'error',
      'raw',
      'task',
    ])
  })

  it('has no import cycle between ts/ files, type-only imports included', () => {
    const graph = typescriptGraph()
    // The walk sees the imports it must: the entry point reaches the client.
    expect(graph.get('index.ts')).toContain('mongo_client.ts')
    expect(findCycles(graph)).toEqual([])
  })

  it('has no cycle between the Rust modules of src/', () => {
    const graph = rustGraph()
    expect(graph.get('collection')).toContain('client_state')
    expect(findCycles(graph)).toEqual([])
  })
})
