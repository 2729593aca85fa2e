//! The tape: a server batch pre-decoded off the JS thread into numbers and string areas, so that
//! JavaScript builds each document with one generated object literal per document shape.
//!
//! Layout (read by `ts/format/tape.ts`; the tags are `TapeTags`):
//! - `slots` (f64): per document its shape id then its field values, in field order. Per type:
//!   double, int32, date (ms), bool (0/1): 1 slot; string: 2 slots `[start, end]` in the Latin-1
//!   text (start >= 0; strings whose characters all fit in one byte: JS makes one-byte strings of
//!   them) or the UTF-16LE text (`[-(start + 1), end]`, in UTF-16 units; JS turns it into a string
//!   with a plain copy, where decoding UTF-8 would cost ~2.4x as much on Node 20); ObjectId:
//!   1 slot, the offset of its 12 bytes in `extras`; int64: 2 slots `[low, high]` (signed 32-bit
//!   halves); Timestamp: 2 slots `[increment, seconds]` (unsigned 32-bit: a change event's
//!   `clusterTime`, a reply's `operationTime`); null: no slot; embedded
//!   document: its shape id then its values; array: its length then per element a type tag and the
//!   element's slots; anything else: `FALLBACK`, 2 slots `[offset, length]` of a standalone BSON
//!   document `{ "": value }` in `extras` that JS decodes with js-bson, so rare types (Decimal128,
//!   Binary, regex, code, MinKey/MaxKey, DBRef-like documents, ...) stay exact.
//!   A top-level document that cannot be taped is shape `-1` followed by `[offset, length]` of a
//!   copy of the document in `extras`. So a taped batch needs no copy of the batch's BSON.
//! - `shapes`: JSON `[{ "k": [keys], "t": [types] }]`, indexed by shape id.
//!
//! The tape is all or nothing: when a batch holds anything js-bson would reject or repair (invalid
//! UTF-8, a bad boolean, a truncated document), no tape is produced and JS decodes the BSON with
//! js-bson, which yields exactly the official driver's value or error.

use std::collections::HashMap;

use napi_derive::napi;

use crate::raw::{
    cstring_end, document_length, fixed, value_length, Malformed, Parsed, ARRAY, BOOLEAN, DATE, DOCUMENT,
    DOUBLE, INT32, INT64, MAX_DEPTH, NULL, OBJECT_ID, STRING, TIMESTAMP,
};

/// Type tag of a value decoded by js-bson from `extras`.
pub const FALLBACK: u8 = 0xF0;

/// The tape's type tags (a shape's `t`, an array element's tag): the BSON type byte of each type
/// the tape carries, and `FALLBACK`. `ts/format/tape.ts` inlines them as literals (a `const enum`,
/// which its decode loops need); `__tests__/decode.test.ts` checks its copy against this one.
#[napi(object, object_from_js = false)]
pub struct TapeTags {
    pub double: u8,
    pub string: u8,
    pub document: u8,
    pub array: u8,
    pub object_id: u8,
    pub boolean: u8,
    pub date: u8,
    pub null: u8,
    pub int32: u8,
    pub int64: u8,
    pub timestamp: u8,
    pub fallback: u8,
}

#[napi(catch_unwind)]
pub fn tape_tags() -> TapeTags {
    TapeTags {
        double: DOUBLE,
        string: STRING,
        document: DOCUMENT,
        array: ARRAY,
        object_id: OBJECT_ID,
        boolean: BOOLEAN,
        date: DATE,
        null: NULL,
        int32: INT32,
        int64: INT64,
        timestamp: TIMESTAMP,
        fallback: FALLBACK,
    }
}

/// A batch on the tape.
pub struct Tape {
    pub slots: Vec<f64>,
    pub latin1: Vec<u8>,
    pub utf16: Vec<u8>,
    pub extras: Vec<u8>,
    shapes: Vec<Shape>,
    shape_ids: HashMap<Vec<u8>, usize>,
    /// The last shapes seen at each depth, most recent first: a batch's documents mostly repeat
    /// a few shapes at each depth, which saves hashing. Several, not one: the documents inside a
    /// change event (`_id`, `fullDocument`, `ns`, `documentKey`) take turns at depth 1, and with
    /// one remembered each was hashed (SipHash over its signature) for every event.
    recent_shapes: Vec<Vec<(Vec<u8>, usize)>>,
    /// Signature buffers to reuse: a fresh one per document grew through several reallocations.
    spare_signatures: Vec<Vec<u8>>,
}

/// Shapes remembered per depth (see `Tape::recent_shapes`).
const RECENT_SHAPES: usize = 8;

struct Shape {
    keys: Vec<String>,
    types: Vec<u8>,
}

/// Why a document is not taped.
enum Untaped {
    /// Bytes js-bson would reject or repair: the whole batch goes to js-bson.
    Batch(Malformed),
    /// A `$`-prefixed key: js-bson may make a DBRef of this document, so it decodes this one.
    DollarKey,
}

impl From<Malformed> for Untaped {
    fn from(error: Malformed) -> Self {
        Untaped::Batch(error)
    }
}

/// Lengths of the tape's buffers, to undo a document that turned out to need js-bson.
struct Mark {
    slots: usize,
    latin1: usize,
    utf16: usize,
    extras: usize,
}

impl Tape {
    /// Puts `documents` (each framed by the bson crate or a `document_length` check) on a tape.
    pub fn encode(documents: &[&[u8]]) -> Parsed<Tape> {
        let bytes: usize = documents.iter().map(|document| document.len()).sum();
        let mut tape = Tape {
            slots: Vec::with_capacity(bytes / 8),
            latin1: Vec::with_capacity(bytes / 2),
            utf16: Vec::new(),
            extras: Vec::new(),
            shapes: Vec::new(),
            shape_ids: HashMap::new(),
            recent_shapes: Vec::new(),
            spare_signatures: Vec::new(),
        };
        for document in documents {
            let mark = tape.mark();
            match tape.document(document, 0) {
                Ok(()) => {}
                Err(Untaped::Batch(error)) => return Err(error),
                Err(Untaped::DollarKey) => {
                    tape.undo(mark);
                    let offset = tape.extras.len();
                    tape.extras.extend_from_slice(document);
                    tape.slots.extend([-1.0, offset as f64, document.len() as f64]);
                }
            }
        }
        Ok(tape)
    }

    /// The shape table as JSON, for the JS decoder.
    pub fn shapes_json(&self) -> String {
        let shapes: Vec<_> = self
            .shapes
            .iter()
            .map(|shape| serde_json::json!({ "k": shape.keys, "t": shape.types }))
            .collect();
        serde_json::Value::Array(shapes).to_string()
    }

    fn mark(&self) -> Mark {
        Mark {
            slots: self.slots.len(),
            latin1: self.latin1.len(),
            utf16: self.utf16.len(),
            extras: self.extras.len(),
        }
    }

    fn undo(&mut self, mark: Mark) {
        self.slots.truncate(mark.slots);
        self.latin1.truncate(mark.latin1);
        self.utf16.truncate(mark.utf16);
        self.extras.truncate(mark.extras);
    }

    /// Tapes one document; pushes its shape id first.
    fn document(&mut self, document: &[u8], depth: usize) -> Result<(), Untaped> {
        let shape_slot = self.slots.len();
        self.slots.push(0.0);
        let mut signature = self.spare_signatures.pop().unwrap_or_default();
        signature.clear();
        let mut position = 4;
        loop {
            let tag = *document.get(position).ok_or(Malformed)?;
            if tag == 0 {
                if position + 1 != document.len() {
                    return Err(Malformed.into());
                }
                break;
            }
            if document.get(position + 1) == Some(&b'$') {
                return Err(Untaped::DollarKey);
            }
            let key_end = cstring_end(document, position + 1)?;
            let key = &document[position + 1..key_end];
            let value_start = key_end + 1;
            let (stored_tag, value_end) = self.value(tag, document, value_start, depth)?;
            signature.extend_from_slice(key);
            signature.push(0);
            signature.push(stored_tag);
            position = value_end;
        }
        let shape = self.shape_id(signature, depth)?;
        self.slots[shape_slot] = shape as f64;
        Ok(())
    }

    /// Tapes one value; returns the tag it was stored as and where the value ends.
    fn value(&mut self, tag: u8, bytes: &[u8], start: usize, depth: usize) -> Parsed<(u8, usize)> {
        let end = match tag {
            DOUBLE => {
                self.slots.push(f64::from_le_bytes(fixed(bytes, start)?));
                start + 8
            }
            STRING => self.string(bytes, start)?,
            INT32 => {
                self.slots.push(i32::from_le_bytes(fixed(bytes, start)?).into());
                start + 4
            }
            INT64 => {
                let low = i32::from_le_bytes(fixed(bytes, start)?);
                let high = i32::from_le_bytes(fixed(bytes, start + 4)?);
                // JS applies js-bson's int64 rule to the two halves (`int64Value`, `ts/bson.ts`).
                self.slots.extend([f64::from(low), f64::from(high)]);
                start + 8
            }
            TIMESTAMP => {
                let increment = u32::from_le_bytes(fixed(bytes, start)?);
                let seconds = u32::from_le_bytes(fixed(bytes, start + 4)?);
                self.slots.extend([f64::from(increment), f64::from(seconds)]);
                start + 8
            }
            DATE => {
                // As js-bson: the int64 converted to the nearest double.
                self.slots.push(i64::from_le_bytes(fixed(bytes, start)?) as f64);
                start + 8
            }
            BOOLEAN => match bytes.get(start) {
                Some(&flag @ (0 | 1)) => {
                    self.slots.push(flag.into());
                    start + 1
                }
                _ => return Err(Malformed),
            },
            NULL => start,
            OBJECT_ID => {
                let id = fixed::<12>(bytes, start)?;
                self.slots.push(self.extras.len() as f64);
                self.extras.extend_from_slice(&id);
                start + 12
            }
            DOCUMENT => {
                let length = document_length(bytes, start)?;
                let document = &bytes[start..start + length];
                if depth >= MAX_DEPTH {
                    return self.fallback(tag, document, start + length);
                }
                let mark = self.mark();
                match self.document(document, depth + 1) {
                    Ok(()) => {}
                    Err(Untaped::Batch(error)) => return Err(error),
                    Err(Untaped::DollarKey) => {
                        self.undo(mark);
                        return self.fallback(tag, document, start + length);
                    }
                }
                start + length
            }
            ARRAY => {
                let length = document_length(bytes, start)?;
                if depth >= MAX_DEPTH {
                    return self.fallback(tag, &bytes[start..start + length], start + length);
                }
                self.array(&bytes[start..start + length], depth + 1)?;
                start + length
            }
            _ => {
                let length = value_length(tag, bytes, start)?;
                return self.fallback(tag, &bytes[start..start + length], start + length);
            }
        };
        Ok((tag, end))
    }

    fn array(&mut self, array: &[u8], depth: usize) -> Parsed<()> {
        let length_slot = self.slots.len();
        self.slots.push(0.0);
        let mut count = 0usize;
        let mut position = 4;
        loop {
            let tag = *array.get(position).ok_or(Malformed)?;
            if tag == 0 {
                if position + 1 != array.len() {
                    return Err(Malformed);
                }
                break;
            }
            // Array keys are indices; js-bson ignores them too.
            let value_start = cstring_end(array, position + 1)? + 1;
            let tag_slot = self.slots.len();
            self.slots.push(0.0);
            let (stored_tag, value_end) = self.value(tag, array, value_start, depth)?;
            self.slots[tag_slot] = stored_tag.into();
            position = value_end;
            count += 1;
        }
        self.slots[length_slot] = count as f64;
        Ok(())
    }

    /// A string: validated UTF-8 into the Latin-1 or the UTF-16 text, with its JS (UTF-16) offsets.
    fn string(&mut self, bytes: &[u8], start: usize) -> Parsed<usize> {
        let size = i32::from_le_bytes(fixed(bytes, start)?);
        let begin = start + 4;
        let size = usize::try_from(size).map_err(|_| Malformed)?;
        if size == 0 || begin + size > bytes.len() || bytes[begin + size - 1] != 0 {
            return Err(Malformed);
        }
        let text = &bytes[begin..begin + size - 1];
        let (from, to) = if text.is_ascii() {
            let from = self.latin1.len();
            self.latin1.extend_from_slice(text);
            (from as f64, self.latin1.len() as f64)
        } else {
            let text = std::str::from_utf8(text).map_err(|_| Malformed)?;
            // Reserved up front (a character never takes fewer UTF-8 bytes than Latin-1 bytes or
            // UTF-16 units): an unreserved extend from these iterators grows byte by byte.
            if text.chars().all(|char| u32::from(char) <= 0xFF) {
                let from = self.latin1.len();
                self.latin1.reserve(text.len());
                self.latin1.extend(text.chars().map(|char| u32::from(char) as u8));
                (from as f64, self.latin1.len() as f64)
            } else {
                let from = self.utf16.len() / 2;
                self.utf16.reserve(2 * text.len());
                for unit in text.encode_utf16() {
                    self.utf16.extend_from_slice(&unit.to_le_bytes());
                }
                (-(from as f64) - 1.0, (self.utf16.len() / 2) as f64)
            }
        };
        self.slots.extend([from, to]);
        Ok(begin + size)
    }

    /// Copies a value as a standalone `{ "": value }` document into `extras`; `end` is where the
    /// value ends in its source.
    fn fallback(&mut self, tag: u8, value: &[u8], end: usize) -> Parsed<(u8, usize)> {
        let offset = self.extras.len();
        let length = 4 + 1 + 1 + value.len() + 1;
        let length_field = i32::try_from(length).map_err(|_| Malformed)?;
        self.extras.extend_from_slice(&length_field.to_le_bytes());
        self.extras.extend_from_slice(&[tag, 0]);
        self.extras.extend_from_slice(value);
        self.extras.push(0);
        self.slots.extend([offset as f64, length as f64]);
        Ok((FALLBACK, end))
    }

    fn shape_id(&mut self, signature: Vec<u8>, depth: usize) -> Parsed<usize> {
        if let Some(recent) = self.recent_shapes.get(depth) {
            if let Some((_, id)) = recent.iter().find(|(seen, _)| *seen == signature) {
                let id = *id;
                self.spare_signatures.push(signature);
                return Ok(id);
            }
        }
        let id = match self.shape_ids.get(&signature) {
            Some(&id) => id,
            None => self.new_shape(&signature)?,
        };
        if self.recent_shapes.len() <= depth {
            self.recent_shapes.resize_with(depth + 1, Vec::new);
        }
        let recent = &mut self.recent_shapes[depth];
        if recent.len() == RECENT_SHAPES {
            if let Some((replaced, _)) = recent.pop() {
                self.spare_signatures.push(replaced);
            }
        }
        recent.insert(0, (signature, id));
        Ok(id)
    }

    fn new_shape(&mut self, signature: &[u8]) -> Parsed<usize> {
        let mut keys = Vec::new();
        let mut types = Vec::new();
        let mut rest = signature;
        while let Some(nul) = rest.iter().position(|&byte| byte == 0) {
            // Keys are not validated by js-bson (lossy); keep the tape for exact ones only.
            keys.push(
                std::str::from_utf8(&rest[..nul])
                    .map_err(|_| Malformed)?
                    .to_owned(),
            );
            types.push(rest[nul + 1]);
            rest = &rest[nul + 2..];
        }
        let id = self.shapes.len();
        self.shapes.push(Shape { keys, types });
        self.shape_ids.insert(signature.to_vec(), id);
        Ok(id)
    }
}
