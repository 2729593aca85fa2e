//! The served collections: pre-encoded document pools, projected pools, and raw loaded files.
//!
//! A generated collection virtually holds `--docs` documents but stores only `POOL_SIZE` encoded
//! ones: document `i` is pool document `i % POOL_SIZE`, copied into the reply and patched in place
//! with its own `_id` and `n` (fixed-size values at fixed offsets). So memory stays small and a
//! reply costs a memcpy per document.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use bson::{RawBsonRef, RawDocument};

use crate::generate::{object_id_bytes, Generator, POOL_SIZE};
use crate::wire::{begin_element, ELEMENT_DOCUMENT};

/// The cap on a batch's total document bytes, as mongod's (the first document always goes).
pub const MAX_BATCH_BYTES: usize = 16 * 1024 * 1024;

/// Encoded documents stored back to back.
pub struct Pool {
    bytes: Vec<u8>,
    /// Document `k` is `bytes[starts[k]..starts[k + 1]]`.
    starts: Vec<usize>,
    /// Offsets of the `_id` and `n` values inside every document, when they are patched per index.
    id_at: Option<usize>,
    n_at: Option<usize>,
}

impl Pool {
    /// The pool of a collection that does not exist.
    pub fn empty() -> Pool {
        Pool {
            bytes: Vec::new(),
            starts: vec![0],
            id_at: None,
            n_at: None,
        }
    }

    /// A pool of one computed document, served as it is (an aggregation's result).
    pub fn single(document: &[u8]) -> Pool {
        Pool::from_documents([document], false)
    }

    fn from_documents<'a>(documents: impl IntoIterator<Item = &'a [u8]>, patched: bool) -> Pool {
        let mut pool = Pool::empty();
        for document in documents {
            pool.bytes.extend_from_slice(document);
            pool.starts.push(pool.bytes.len());
        }
        if patched && pool.len() > 0 {
            pool.id_at = value_offset(pool.document(0), "_id");
            pool.n_at = value_offset(pool.document(0), "n");
        }
        pool
    }

    fn len(&self) -> u64 {
        self.starts.len() as u64 - 1
    }

    fn document(&self, k: u64) -> &[u8] {
        &self.bytes[self.starts[k as usize]..self.starts[k as usize + 1]]
    }

    /// Appends document `index`: pool document `index % len` with its own `_id` and `n`.
    pub fn write_document(&self, out: &mut Vec<u8>, index: u64) {
        let at = out.len();
        out.extend_from_slice(self.document(index % self.len()));
        if let Some(id_at) = self.id_at {
            out[at + id_at..at + id_at + 12].copy_from_slice(&object_id_bytes(index));
        }
        if let Some(n_at) = self.n_at {
            out[at + n_at..at + n_at + 4].copy_from_slice(&(index as i32).to_le_bytes());
        }
    }

    /// Appends array elements "0", "1", ... for documents `start..end`, at most `max_docs` of them
    /// and within the batch byte cap; returns the index after the last one written.
    pub fn write_batch(&self, out: &mut Vec<u8>, start: u64, end: u64, max_docs: u64) -> u64 {
        let mut keys = itoa::Buffer::new();
        let mut bytes = 0;
        let mut index = start;
        while index < end && index - start < max_docs {
            let document = self.document(index % self.len());
            if index > start && bytes + document.len() > MAX_BATCH_BYTES {
                break;
            }
            bytes += document.len();
            begin_element(out, ELEMENT_DOCUMENT, keys.format(index - start));
            self.write_document(out, index);
            index += 1;
        }
        index
    }
}

/// Each element's `(key, byte range)` in a valid document: bson's iterator gives the key and the
/// value size, and elements are contiguous (type byte, key, NUL, value).
fn element_ranges(document: &[u8]) -> impl Iterator<Item = (&str, std::ops::Range<usize>)> {
    let raw = RawDocument::from_bytes(document).expect("pool documents are valid BSON");
    let mut at = 4;
    raw.iter_elements().map(move |element| {
        let element = element.expect("pool documents are valid BSON");
        let start = at;
        at += 1 + element.key().len() + 1 + element.size();
        (element.key().as_str(), start..at)
    })
}

/// The offset of `key`'s value inside `document`.
fn value_offset(document: &[u8], key: &str) -> Option<usize> {
    element_ranges(document)
        .find(|(name, _)| *name == key)
        .map(|(_, range)| range.start + 1 + key.len() + 1)
}

/// A supported projection: raw filtering of top-level fields.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Projection {
    /// `{ a: 1, b: 1 }`: these fields, plus `_id` unless `_id: 0`.
    Include { fields: BTreeSet<String>, id: bool },
    /// `{ _id: 0 }` alone: every field but `_id`.
    WithoutId,
}

impl Projection {
    /// `None` for `{}`; an error message for anything but an inclusion of top-level fields.
    pub fn parse(projection: &RawDocument) -> Result<Option<Projection>, String> {
        let unsupported = |key: &str| {
            Err(format!(
                "unsupported projection of '{key}': only top-level inclusions (and _id: 0) are supported"
            ))
        };
        let mut fields = BTreeSet::new();
        let mut id = None;
        for element in projection {
            let (key, value) = element.map_err(|error| error.to_string())?;
            let key = key.as_str();
            let include = match value {
                RawBsonRef::Boolean(flag) => flag,
                RawBsonRef::Int32(number) => number != 0,
                RawBsonRef::Int64(number) => number != 0,
                RawBsonRef::Double(number) => number != 0.0,
                _ => return unsupported(key),
            };
            if key == "_id" {
                id = Some(include);
            } else if include && !key.contains('.') && !key.starts_with('$') {
                fields.insert(key.to_owned());
            } else {
                return unsupported(key);
            }
        }
        Ok(match (fields.is_empty(), id) {
            (true, None) => None,
            (true, Some(false)) => Some(Projection::WithoutId),
            (_, id) => Some(Projection::Include {
                fields,
                id: id.unwrap_or(true),
            }),
        })
    }

    fn keeps(&self, key: &str) -> bool {
        match self {
            Projection::Include { fields, id } => {
                if key == "_id" {
                    *id
                } else {
                    fields.contains(key)
                }
            }
            Projection::WithoutId => key != "_id",
        }
    }

    /// `document` with only the kept top-level fields, bytes copied as they are.
    fn apply(&self, document: &[u8]) -> Vec<u8> {
        let mut projected = vec![0; 4];
        for (key, range) in element_ranges(document) {
            if self.keeps(key) {
                projected.extend_from_slice(&document[range]);
            }
        }
        projected.push(0);
        let length = projected.len() as i32;
        projected[..4].copy_from_slice(&length.to_le_bytes());
        projected
    }
}

/// One collection of database `bench`.
pub struct Collection {
    pub count: u64,
    /// The dataset a generated collection holds (`None` for a loaded one): its documents are known
    /// by index, so `_id` equality and `distinct` of its labels can be answered exactly.
    pub dataset: Option<&'static str>,
    pool: Arc<Pool>,
    /// Generated collections only: the pool filtered by each projection seen so far.
    projected: Option<Mutex<HashMap<Projection, Arc<Pool>>>>,
}

impl Collection {
    /// `docs` virtual documents of `dataset` over a pool of `generate(k)` for k < POOL_SIZE.
    pub fn generated(dataset: &'static str, generate: Generator, docs: u64) -> Collection {
        let documents: Vec<Vec<u8>> = (0..POOL_SIZE.min(docs))
            .map(|k| generate(k).to_vec().expect("generated documents encode"))
            .collect();
        let pool = Pool::from_documents(documents.iter().map(Vec::as_slice), true);
        Collection {
            count: docs,
            dataset: Some(dataset),
            pool: Arc::new(pool),
            projected: Some(Mutex::new(HashMap::new())),
        }
    }

    /// A file of concatenated BSON documents, served as is: only each 4-byte length is read.
    pub fn load(bytes: &[u8]) -> Result<Collection, String> {
        let mut documents = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            let length = rest
                .get(..4)
                .map_or(0, |prefix| i32::from_le_bytes(prefix.try_into().unwrap()));
            let length = usize::try_from(length).unwrap_or(0);
            if length < 4 || length > rest.len() {
                let offset = bytes.len() - rest.len();
                return Err(format!("bad document length {length} at byte {offset}"));
            }
            documents.push(&rest[..length]);
            rest = &rest[length..];
        }
        let pool = Pool::from_documents(documents, false);
        Ok(Collection {
            count: pool.len(),
            dataset: None,
            pool: Arc::new(pool),
            projected: None,
        })
    }

    /// The pool to serve for `projection`, filtered once per distinct projection.
    pub fn pool(&self, projection: Option<&Projection>) -> Result<Arc<Pool>, String> {
        let Some(projection) = projection else {
            return Ok(self.pool.clone());
        };
        let Some(projected) = &self.projected else {
            return Err("projections are not supported on loaded collections".into());
        };
        let mut projected = projected.lock().unwrap();
        let pool = projected.entry(projection.clone()).or_insert_with(|| {
            let documents: Vec<Vec<u8>> = (0..self.pool.len())
                .map(|k| projection.apply(self.pool.document(k)))
                .collect();
            Arc::new(Pool::from_documents(documents.iter().map(Vec::as_slice), true))
        });
        Ok(pool.clone())
    }
}
