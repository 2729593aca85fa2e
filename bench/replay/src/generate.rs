//! The generated datasets: document `k` of each, a deterministic function of `k` (the contract the
//! benchmark suite is written against; README.md lists the fields).

use bson::oid::ObjectId;
use bson::{doc, Bson, DateTime, Document};

/// Distinct documents encoded per dataset; document `i` is pool document `i % POOL_SIZE` with its
/// own `_id` and `n`. A multiple of 3, 4 and 7, so the rules keyed on `n % 3`, `n % 4` and `n % 7`
/// hold for every index, not only inside the pool.
pub const POOL_SIZE: u64 = 4200;

/// Makes document `k` of a dataset.
pub type Generator = fn(u64) -> Document;

/// The generated datasets, by collection name.
pub const DATASETS: [(&str, Generator); 3] = [("wide45", wide45), ("tweets", tweets), ("orders", orders)];

/// The `_id` of document `index`: 0x65 0x00 0x00 0x00, then `index` as a big-endian u64.
pub fn object_id_bytes(index: u64) -> [u8; 12] {
    let mut bytes = [0; 12];
    bytes[0] = 0x65;
    bytes[4..].copy_from_slice(&index.to_be_bytes());
    bytes
}

/// The index of the document whose `_id` is `bytes`, if it is one of [`object_id_bytes`]'s.
pub fn index_of_object_id(bytes: [u8; 12]) -> Option<u64> {
    let (head, index) = bytes.split_at(4);
    (head == [0x65, 0, 0, 0]).then(|| u64::from_be_bytes(index.try_into().unwrap()))
}

/// splitmix64's finalizer: cheap, and every input bit moves every output bit.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The pseudo-random value of field number `field` (< 256) of document `k`. Each dataset uses its
/// own range of field numbers, so their values do not repeat each other.
fn hash(k: u64, field: u64) -> u64 {
    splitmix64(k << 8 | field)
}

/// `h % range` as the small integer types the generators need.
fn pick(h: u64, range: u64) -> usize {
    (h % range) as usize
}

const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789 ";

/// `len` ASCII characters drawn from `ALPHABET`, seeded by `h`.
fn ascii(h: u64, len: usize) -> String {
    (0..len as u64)
        .map(|i| ALPHABET[pick(splitmix64(h ^ i), ALPHABET.len() as u64)] as char)
        .collect()
}

/// A lowercase identifier-like word (no spaces), 6 to 15 characters.
fn handle(h: u64) -> String {
    ascii(h, 6 + pick(h >> 40, 10)).replace(' ', "_")
}

fn date(millis: u64) -> Bson {
    Bson::DateTime(DateTime::from_millis(millis as i64))
}

/// 2023-01-01T00:00:00Z, the base of every generated date.
const EPOCH_2023: u64 = 1_672_531_200_000;

/// `_id` and `n`, the first two fields of every generated document: fixed-size values, so they sit
/// at the same offsets in every pooled document and can be patched per index.
fn head(k: u64) -> Document {
    doc! { "_id": ObjectId::from_bytes(object_id_bytes(k)), "n": k as i32 }
}

/// `wide45`: `_id`, `n`, `s01`..`s14`, `i01`..`i15`, `d01`..`d14`.
pub fn wide45(k: u64) -> Document {
    let mut document = head(k);
    for field in 1..=14 {
        let h = hash(k, field);
        let mut value = ascii(h, 8 + pick(h >> 32, 33));
        // Every 7th document carries a multi-byte character, alternating 2-byte and 3-byte UTF-8.
        if field == 3 && k.is_multiple_of(7) {
            let middle = value.len() / 2;
            value.replace_range(middle..middle + 1, if k.is_multiple_of(14) { "é" } else { "€" });
        }
        document.insert(format!("s{field:02}"), value);
    }
    for field in 1..=15 {
        let h = hash(k, 20 + field);
        document.insert(format!("i{field:02}"), (h % 2_000_001) as i32 - 1_000_000);
    }
    for field in 1..=14 {
        let h = hash(k, 40 + field);
        // A fraction in [0.125, 0.874]: never integral, so every value stays a BSON double in spirit.
        let whole = (h % 2_000_000) as f64 - 1_000_000.0;
        document.insert(
            format!("d{field:02}"),
            whole + 0.125 + ((h >> 40) % 750) as f64 / 1000.0,
        );
    }
    document
}

const WORDS: [&str; 24] = [
    "the",
    "quick",
    "rust",
    "mongo",
    "bench",
    "node",
    "replay",
    "fast",
    "data",
    "cursor",
    "batch",
    "wire",
    "async",
    "tweet",
    "hello",
    "world",
    "open",
    "source",
    "driver",
    "query",
    "café",
    "naïve",
    "日本語",
    "🚀",
];
const LANGS: [&str; 8] = ["en", "en", "en", "es", "ja", "pt", "fr", "de"];
const CITIES: [&str; 6] = ["Berlin", "São Paulo", "Tokyo", "Lagos", "Toronto", "Mumbai"];

/// Words from `WORDS` until `chars` characters, cut at exactly `chars`.
fn sentence(h: u64, chars: usize) -> String {
    let mut text = String::new();
    let mut i = 0;
    while text.chars().count() < chars {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(WORDS[pick(splitmix64(h ^ i), WORDS.len() as u64)]);
        i += 1;
    }
    text.chars().take(chars).collect()
}

/// `tweets`: tweet-like nested documents.
pub fn tweets(k: u64) -> Document {
    let h = |field: u64| hash(k, 64 + field);
    let hashtags: Vec<Bson> = (0..h(10) % 4)
        .map(|i| {
            let word = handle(h(11 + i));
            let start = pick(h(15 + i), 100) as i32;
            let end = start + 1 + word.len() as i32;
            Bson::Document(doc! { "text": word, "indices": [start, end] })
        })
        .collect();
    let urls: Vec<Bson> = (0..h(20) % 3)
        .map(|i| {
            let path = handle(h(21 + i));
            Bson::Document(doc! {
                "url": format!("https://t.co/{}", &path[..6]),
                "expanded_url": format!("https://example.com/{path}"),
            })
        })
        .collect();
    let mentions: Vec<Bson> = (0..h(30) % 3)
        .map(|i| {
            // Below 2^53: the official driver returns these as numbers, unlike `user.id`.
            Bson::Document(
                doc! { "screen_name": handle(h(31 + i)), "id": (h(35 + i) % 1_000_000_000_000) as i64 },
            )
        })
        .collect();
    let location = if h(6) % 3 == 0 {
        Bson::Null
    } else {
        Bson::String(CITIES[pick(h(6) >> 8, 6)].into())
    };
    let mut document = head(k);
    document.extend(doc! {
        "id_str": ((1u64 << 60) + (h(1) >> 8)).to_string(),
        "text": sentence(h(2), 60 + pick(h(2) >> 48, 81)),
        "created_at": date(EPOCH_2023 + k * 61_000 + h(3) % 60_000),
        "lang": LANGS[pick(h(4), 8)],
        "retweet_count": (h(5) % 5000) as i32,
        "favorite_count": ((h(5) >> 32) % 20_000) as i32,
        "user": {
            // Above 2^53: the official driver returns a Long.
            "id": (1_000_000_000_000_000_000 + h(7) % 100_000_000_000_000_000) as i64,
            "name": ascii(h(8), 5 + pick(h(8) >> 40, 16)),
            "screen_name": handle(h(9)),
            "followers_count": ((h(7) >> 40) % 1_000_000) as i32,
            "verified": h(9) % 5 == 0,
            "location": location,
        },
        "entities": { "hashtags": hashtags, "urls": urls, "user_mentions": mentions },
        "geo": Bson::Null,
    });
    document
}

const STATUSES: [&str; 3] = ["paid", "pending", "refunded"];
const REGIONS: [&str; 4] = ["eu", "us", "apac", "latam"];

/// Every label (see [`label`]) repeats every this many documents: a multiple of each label's cycle.
pub const LABEL_PERIOD: u64 = 12;

/// The value of a small string field that cycles with the index (`orders`' `status` and `region`)
/// in document `k` of `dataset`; `None` for every other field.
pub fn label(dataset: &str, field: &str, k: u64) -> Option<&'static str> {
    match (dataset, field) {
        ("orders", "status") => Some(STATUSES[pick(k, 3)]),
        ("orders", "region") => Some(REGIONS[pick(k, 4)]),
        _ => None,
    }
}

/// `orders`: small flat documents with one subdocument.
pub fn orders(k: u64) -> Document {
    let h = |field: u64| hash(k, 128 + field);
    let mut document = head(k);
    document.extend(doc! {
        "status": label("orders", "status", k),
        "region": label("orders", "region", k),
        // Whole units plus 1..99 cents: never integral.
        "total": (h(1) % 100_000) as f64 + (1 + h(1) % 99) as f64 / 100.0,
        "at": date(EPOCH_2023 + k * 3_600_000 + h(2) % 3_600_000),
        "customer": { "name": ascii(h(3), 8 + pick(h(3) >> 40, 12)), "tier": 1 + pick(h(4), 4) as i32 },
    });
    document
}
