// The benchmark datasets: field lists, projections, and deterministic generators for the servers we
// seed ourselves (devdb, MONGODB_URI) and for the decode bench when no replay server is around.
// The replay server serves the same shapes from its own generator; values differ, shapes do not.
import { Double, Int32, Long, ObjectId } from 'mongodb'

const pad2 = (i) => String(i).padStart(2, '0')
const numbered = (prefix, count) => Array.from({ length: count }, (_, i) => `${prefix}${pad2(i + 1)}`)

const WIDE45_STRINGS = numbered('s', 14)
const WIDE45_INTS = numbered('i', 15)
const WIDE45_DOUBLES = numbered('d', 14)

/** wide45's 45 top-level fields, in document order. */
export const WIDE45_FIELDS = ['_id', 'n', ...WIDE45_STRINGS, ...WIDE45_INTS, ...WIDE45_DOUBLES]

/**
 * The projection for a wide45 preset of `fieldCount` fields: `_id` plus the first `fieldCount - 1`
 * fields in order. All 45 fields means no projection at all (what users send when they want
 * everything), not an inclusion of every field.
 */
export function wide45Projection(fieldCount) {
  if (fieldCount >= WIDE45_FIELDS.length) return undefined
  return Object.fromEntries(WIDE45_FIELDS.slice(0, fieldCount).map((field) => [field, 1]))
}

/** The top-level field names a document of `dataset` has under `fieldCount` (undefined: all). */
export function topLevelFields(dataset, fieldCount) {
  if (dataset === 'wide45') return WIDE45_FIELDS.slice(0, fieldCount ?? WIDE45_FIELDS.length)
  if (dataset === 'tweets') {
    return [
      '_id',
      'n',
      'id_str',
      'text',
      'created_at',
      'lang',
      'retweet_count',
      'favorite_count',
      'user',
      'entities',
      'geo',
    ]
  }
  if (dataset === 'orders') return ['_id', 'n', 'status', 'region', 'total', 'at', 'customer']
  throw new Error(`unknown dataset ${dataset}`)
}

/**
 * The two fields the lazy path reads per document: `n` plus, on wide45, the last projected field (so
 * a lazy reader has to reach past every other field), elsewhere a string a user would display.
 */
export function lazyFields(dataset, fieldCount) {
  if (dataset === 'wide45') return ['n', WIDE45_FIELDS[(fieldCount ?? WIDE45_FIELDS.length) - 1]]
  if (dataset === 'tweets') return ['n', 'text']
  if (dataset === 'orders') return ['n', 'status']
  throw new Error(`unknown dataset ${dataset}`)
}

/** A fixed ObjectId per index, so reseeding and reruns see the same ids. */
export function objectIdFor(n) {
  return new ObjectId((0x6600000000000000n + BigInt(n)).toString(16).padStart(24, '0'))
}

/** The `_id` of the replay server's document `index`: 65000000, then the index as 16 hex digits. */
export function replayObjectId(index) {
  return new ObjectId(`65000000${index.toString(16).padStart(16, '0')}`)
}

/** A cheap deterministic hash of (n, salt) in [0, 2^32). */
function mix(n, salt) {
  let x = Math.imul(n ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(salt + 1, 0xc2b2ae35)
  x = Math.imul(x ^ (x >>> 15), 0x2c1b3c6d)
  return (x ^ (x >>> 13)) >>> 0
}

const WORDS = [
  'alpha',
  'bravo',
  'charlie',
  'delta',
  'echo',
  'foxtrot',
  'golf',
  'hotel',
  'india',
  'juliet',
  'kilo',
  'lima',
]

/** A short ASCII string of 8..28 characters (about 18 on average, like typical API records). */
function shortString(n, salt) {
  const h = mix(n, salt)
  const length = 8 + (h % 21)
  return `${WORDS[h % WORDS.length]}-${n}-${(h >>> 8).toString(36)}`.padEnd(length, '.').slice(0, length)
}

/** wide45 document number `n`: 1 ObjectId, 15 int32 (`n` and i01..i15), 14 strings, 14 doubles. */
export function wide45Document(n) {
  const document = { _id: objectIdFor(n), n: new Int32(n) }
  WIDE45_STRINGS.forEach((field, i) => (document[field] = shortString(n, i)))
  WIDE45_INTS.forEach((field, i) => (document[field] = new Int32(mix(n, 100 + i) % 1_000_000)))
  // Double() keeps whole values stored as doubles, as the replay server stores them.
  WIDE45_DOUBLES.forEach((field, i) => (document[field] = new Double((mix(n, 200 + i) % 1_000_000) / 100)))
  return document
}

const TWEET_TEXTS = [
  'Shipping the new release today, benchmarks look good',
  'Quelle belle journée pour écrire du Rust et du TypeScript',
  'データベースのベンチマークを実行中です',
  'Reading the changelog so you do not have to 🎉',
]

/** Tweet-like document number `n`: nested user and entities, arrays of subdocuments, null geo. */
export function tweetDocument(n) {
  const h = mix(n, 7)
  const userId = h % 5_000_000
  return {
    _id: objectIdFor(n),
    n: new Int32(n),
    id_str: String(1_700_000_000_000_000_000n + BigInt(n)),
    text: `${TWEET_TEXTS[n % TWEET_TEXTS.length]} #${WORDS[h % WORDS.length]} https://t.co/${(h >>> 4).toString(36)}`,
    created_at: new Date(Date.UTC(2025, 0, 1) + n * 1000),
    lang: ['en', 'fr', 'ja', 'en'][n % 4],
    retweet_count: new Int32(h % 5000),
    favorite_count: new Int32((h >>> 3) % 20000),
    user: {
      // Beyond 2^53, as snowflake ids are: the drivers return a Long, Mongoose casts it to bigint.
      id: Long.fromBigInt(1_000_000_000_000_000_000n + BigInt(userId)),
      name: `User ${userId % 100_000}`,
      screen_name: `user_${(userId % 100_000).toString(36)}`,
      followers_count: new Int32((h >>> 5) % 1_000_000),
      verified: h % 7 === 0,
      location: ['Paris', 'Tokyo', 'New York', ''][h % 4],
    },
    entities: {
      hashtags: Array.from({ length: h % 3 }, (_, i) => ({
        text: WORDS[(h + i) % WORDS.length],
        indices: [new Int32(10 * i), new Int32(10 * i + 6)],
      })),
      urls: Array.from({ length: (h >>> 2) % 2 }, (_, i) => ({
        url: `https://t.co/${(h + i).toString(36)}`,
        expanded_url: `https://example.com/posts/${n}/${i}`,
      })),
      user_mentions: Array.from({ length: (h >>> 4) % 3 }, (_, i) => ({
        screen_name: `friend_${(h >>> i) % 1000}`,
        id: Long.fromNumber(20_000_000_000 + ((h >>> i) % 1_000_000)),
      })),
    },
    geo: null,
  }
}

/** Small order document number `n`. */
export function orderDocument(n) {
  return {
    _id: objectIdFor(n),
    n: new Int32(n),
    status: ['paid', 'pending', 'refunded'][n % 3],
    region: ['eu', 'us', 'apac', 'latam'][n % 4],
    total: new Double(Math.round((n * 7919) % 100_000) / 100),
    at: new Date(Date.UTC(2025, 0, 1) + n * 60_000),
    customer: { name: `customer ${n % 97}`, tier: new Int32(n % 4) },
  }
}

/** The generator of each dataset, by name. */
export const GENERATORS = { wide45: wide45Document, tweets: tweetDocument, orders: orderDocument }

/**
 * Mongoose schemas matching the datasets. Takes the mongoose module so only Mongoose cells load it.
 * Subdocument schemas have `_id: false` because the data has no subdocument ids.
 */
export function mongooseSchema(mongoose, dataset) {
  const { Schema } = mongoose
  const options = { versionKey: false, autoIndex: false, autoCreate: false }
  if (dataset === 'wide45') {
    const definition = { _id: Schema.Types.ObjectId, n: Number }
    for (const field of WIDE45_STRINGS) definition[field] = String
    for (const field of [...WIDE45_INTS, ...WIDE45_DOUBLES]) definition[field] = Number
    return new Schema(definition, options)
  }
  if (dataset === 'tweets') {
    const sub = (definition) => new Schema(definition, { _id: false })
    return new Schema(
      {
        _id: Schema.Types.ObjectId,
        n: Number,
        id_str: String,
        text: String,
        created_at: Date,
        lang: String,
        retweet_count: Number,
        favorite_count: Number,
        user: {
          id: Schema.Types.BigInt,
          name: String,
          screen_name: String,
          followers_count: Number,
          verified: Boolean,
          location: String,
        },
        entities: {
          hashtags: [sub({ text: String, indices: [Number] })],
          urls: [sub({ url: String, expanded_url: String })],
          user_mentions: [sub({ screen_name: String, id: Number })],
        },
        geo: Schema.Types.Mixed,
      },
      options,
    )
  }
  if (dataset === 'orders') {
    return new Schema(
      {
        _id: Schema.Types.ObjectId,
        n: Number,
        status: String,
        region: String,
        total: Number,
        at: Date,
        customer: { name: String, tier: Number },
      },
      options,
    )
  }
  throw new Error(`unknown dataset ${dataset}`)
}
