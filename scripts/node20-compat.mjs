// vitest 5 (the test runner only, not rumongo) calls Map.groupBy / Object.groupBy, which Node 20
// lacks. scripts/test.mjs preloads this file on Node < 21 so the suite runs on every supported Node.
const groupInto = (items, keyOf, add) => {
  let index = 0
  for (const item of items) add(keyOf(item, index++), item)
}
Map.groupBy ??= (items, keyOf) => {
  const groups = new Map()
  groupInto(items, keyOf, (key, item) => (groups.get(key) ?? groups.set(key, []).get(key)).push(item))
  return groups
}
Object.groupBy ??= (items, keyOf) => {
  const groups = Object.create(null)
  groupInto(items, keyOf, (key, item) => (groups[key] ??= []).push(item))
  return groups
}
