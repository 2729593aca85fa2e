// Seeded random documents of every BSON type and nesting depth, for differential tests.
import {
  Binary,
  BSONRegExp,
  BSONSymbol,
  Code,
  DBRef,
  Decimal128,
  Double,
  Int32,
  Long,
  MaxKey,
  MinKey,
  ObjectId,
  Timestamp,
  UUID,
  type Document,
} from 'mongodb'

/** A small deterministic PRNG (mulberry32). */
function generator(seed: number) {
  let state = seed >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (max: number) => Math.floor(next() * max)
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!
  return { next, int, pick }
}

const ALPHABETS = [
  'abcdefghijklmnopqrstuvwxyz0123456789 _-',
  'éüñßø',
  '日本語中文한국어',
  '🎉😀👍🏽',
  '\u0000\u0001\n\t"\\\u2028',
]
const KEYS = [
  'a',
  'b',
  'name',
  'value',
  '_id',
  'n',
  'x.y',
  '',
  '0',
  '12',
  'ключ',
  '__proto__',
  'constructor',
  'toString',
]

export function randomDocuments(seed: number, count: number): Document[] {
  const random = generator(seed)
  const string = () => {
    const length = random.int(20)
    let text = ''
    for (let i = 0; i < length; i++) text += [...random.pick(ALPHABETS)][random.int(5)] ?? 'a'
    return text
  }
  const scalar = (): unknown => {
    switch (random.int(22)) {
      case 0:
        return new Double(
          random.pick([0, -0, 1.5, -2.25, 1e308, 5e-324, NaN, Infinity, -Infinity, random.next()]),
        )
      case 1:
        return new Int32(random.int(2 ** 32) - 2 ** 31)
      case 2:
        return Long.fromBits(random.int(2 ** 32) | 0, random.int(2 ** 32) | 0)
      case 3:
        return Long.fromNumber(random.int(2 ** 53) * random.pick([1, -1]))
      case 4:
        return random.pick([
          Long.fromString('9007199254740992'),
          Long.fromString('-9007199254740992'),
          Long.fromString('9007199254740993'),
        ])
      case 5:
        return new Date(random.pick([0, -1, 8.64e15, -8.64e15, random.int(2 ** 42)]))
      case 6:
        return random.next() < 0.5
      case 7:
        return null
      case 8:
        return new ObjectId(Buffer.from(Array.from({ length: 12 }, () => random.int(256))))
      case 9:
        return new Binary(
          Buffer.from(Array.from({ length: random.int(20) }, () => random.int(256))),
          random.pick([0, 1, 3, 5, 128]),
        )
      case 10:
        return new UUID()
      case 11:
        return Decimal128.fromString(
          random.pick(['0', '-0', '1.5E+10', 'NaN', 'Infinity', '123456789.123456789']),
        )
      case 12:
        return new Timestamp({ t: random.int(2 ** 32), i: random.int(2 ** 32) })
      case 13:
        return new BSONRegExp(string().replaceAll('\u0000', ''), random.pick(['', 'i', 'ims', 'x']))
      case 14:
        return new Code(string())
      case 15:
        return random.pick([new MinKey(), new MaxKey()])
      case 16:
        return new BSONSymbol(string())
      case 17:
        return new DBRef('coll', new ObjectId(), random.next() < 0.5 ? 'db' : undefined)
      default:
        return string()
    }
  }
  const value = (depth: number): unknown => {
    const roll = random.int(10)
    if (depth < 6 && roll === 0) return document(depth + 1)
    if (depth < 6 && roll === 1) return Array.from({ length: random.int(6) }, () => value(depth + 1))
    return scalar()
  }
  const document = (depth: number): Document => {
    const result: Document = {}
    const fields = random.int(depth === 0 ? 12 : 5)
    for (let i = 0; i < fields; i++) {
      const key = random.next() < 0.7 ? random.pick(KEYS) : `k${random.int(50)}`
      Object.defineProperty(result, key, {
        value: value(depth),
        enumerable: true,
        writable: true,
        configurable: true,
      })
    }
    return result
  }
  return Array.from({ length: count }, () => document(0))
}
