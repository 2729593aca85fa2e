// Deterministic test data with every BSON type the embedded server stores.
import { Binary, BSONRegExp, Double, Int32, Long, ObjectId, Timestamp, UUID } from 'mongodb'

/** A fixed ObjectId per index, so both drivers and reruns see the same ids. */
export function objectIdFor(index: number): ObjectId {
  return new ObjectId((0x6500000000000000n + BigInt(index)).toString(16).padStart(24, '0'))
}

/**
 * Documents covering the storable BSON types: ObjectId, strings (ASCII, UTF-8, empty), int32,
 * double, int64 inside and outside +-2^53, dates, booleans, null, Binary (generic, UUID, other
 * subtypes), regex, timestamp, nested documents, arrays of scalars and documents, empty values.
 */
export function typedDocuments(): Record<string, unknown>[] {
  return Array.from({ length: 24 }, (_, i) => ({
    _id: objectIdFor(i),
    index: i,
    name: `item ${i}`,
    unicode: ['héllo wörld', '日本語テキスト', 'emoji 🎉 ok', ''][i % 4],
    int32: new Int32(i * 1000 - 5000),
    double: new Double(i + 0.5),
    wholeDouble: new Double(i),
    smallLong: Long.fromNumber(i * 1_000_000),
    bigLong: Long.fromString(`${9007199254740993n + BigInt(i)}`),
    negativeBigLong: Long.fromString(`${-9007199254740993n - BigInt(i)}`),
    date: new Date(Date.UTC(2024, i % 12, 1 + i, 12, 30, 15, i)),
    flag: i % 2 === 0,
    nothing: null,
    binary: new Binary(Buffer.from([i, 1, 2, 3, 255])),
    uuid: new UUID(`${i.toString(16).padStart(8, '0')}-1234-4567-89ab-0123456789ab`),
    md5: new Binary(Buffer.alloc(16, i), Binary.SUBTYPE_MD5),
    pattern: new BSONRegExp(`^item ${i}$`, 'i'),
    timestamp: new Timestamp({ t: 1_700_000_000 + i, i: i + 1 }),
    nested: { level: 1, inner: { level: 2, tags: ['a', 'b'], at: new Date(1_700_000_000_000 + i) } },
    tags: i % 3 === 0 ? [] : ['red', 'green', 'blue'].slice(0, i % 3),
    items: [
      { sku: `sku-${i}`, qty: new Int32(i % 5), price: new Double(9.99 + i) },
      { sku: `sku-${i + 1}`, qty: new Int32(1), price: new Double(1.25) },
    ],
    mixed: [1, 'two', new Double(3.5), true, null, { four: 4 }, Long.fromNumber(2 ** 40)],
    empty: {},
    region: ['eu', 'us', 'apac'][i % 3],
    ...(i % 4 === 0 ? { optional: `present ${i}` } : {}),
  }))
}

export interface Order {
  _id: ObjectId
  n: number
  status: 'paid' | 'pending' | 'refunded'
  region: string
  total: number
  at: Date
  customer: { name: string; tier: number }
}

/** `count` small order documents, deterministic. */
export function orderDocuments(count: number): Order[] {
  return Array.from({ length: count }, (_, n) => ({
    _id: objectIdFor(100_000 + n),
    n,
    status: (['paid', 'pending', 'refunded'] as const)[n % 3],
    region: ['eu', 'us', 'apac', 'latam'][n % 4]!,
    total: Math.round(((n * 7919) % 100_000) / 10) / 10,
    at: new Date(Date.UTC(2025, 0, 1) + n * 60_000),
    customer: { name: `customer ${n % 97}`, tier: n % 4 },
  }))
}
