//! Raw BSON: the type tags, how long each value is, where a cstring ends, how a document's
//! elements are walked, the limits every format shares and the one error for bytes that are not
//! BSON. Every batch format (`format/`) reads the server's bytes through these; none keeps a table
//! of its own.

use crate::error::{Error, Result};

pub const DOUBLE: u8 = 0x01;
pub const STRING: u8 = 0x02;
pub const DOCUMENT: u8 = 0x03;
pub const ARRAY: u8 = 0x04;
pub const BINARY: u8 = 0x05;
pub const UNDEFINED: u8 = 0x06;
pub const OBJECT_ID: u8 = 0x07;
pub const BOOLEAN: u8 = 0x08;
pub const DATE: u8 = 0x09;
pub const NULL: u8 = 0x0A;
pub const REGEX: u8 = 0x0B;
pub const DB_POINTER: u8 = 0x0C;
pub const CODE: u8 = 0x0D;
pub const SYMBOL: u8 = 0x0E;
pub const CODE_WITH_SCOPE: u8 = 0x0F;
pub const INT32: u8 = 0x10;
pub const TIMESTAMP: u8 = 0x11;
pub const INT64: u8 = 0x12;
pub const DECIMAL128: u8 = 0x13;
pub const MIN_KEY: u8 = 0xFF;
pub const MAX_KEY: u8 = 0x7F;

/// Documents nested deeper than this are left to js-bson (which has no recursion limit), so the
/// native stack stays small.
pub const MAX_DEPTH: usize = 100;

/// js-bson promotes an int64 to a number when it is within +-2^53 (inclusive).
const SAFE_INTEGER_LIMIT: i64 = 1 << 53;

/// The number js-bson gives for an int64 with `promoteLongs` (its default), or `None` when it
/// keeps a `Long` (outside +-2^53). The one home of that rule on the Rust side; `ts/bson.ts`
/// holds the JS one.
#[inline]
pub fn promoted_int64(value: i64) -> Option<f64> {
    (-SAFE_INTEGER_LIMIT..=SAFE_INTEGER_LIMIT)
        .contains(&value)
        .then_some(value as f64)
}

/// Whether a double is an integer js-bson and JavaScript print without a fraction (within +-2^53).
#[inline]
pub fn is_safe_integer(value: f64) -> bool {
    // A cast instead of `fract()`, which is a libm call.
    value.abs() <= SAFE_INTEGER_LIMIT as f64 && value as i64 as f64 == value
}

/// Bytes that are not well-formed BSON, or not BSON a format decodes itself: the format then
/// leaves the batch or document to js-bson, or (reading the framing) fails the read.
#[derive(Debug, Clone, Copy)]
pub struct Malformed;

pub type Parsed<T> = std::result::Result<T, Malformed>;

pub const ONES: u64 = 0x0101_0101_0101_0101;
pub const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each zero byte of `word` set; the lowest one is exact (a false flag can only
/// follow a zero byte).
#[inline]
pub fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & HIGHS
}

/// The eight bytes at `start` as a little-endian word, if there are eight.
#[inline]
pub fn word_at(bytes: &[u8], start: usize) -> Option<u64> {
    fixed(bytes, start).ok().map(u64::from_le_bytes)
}

#[inline]
pub fn fixed<const N: usize>(bytes: &[u8], start: usize) -> Parsed<[u8; N]> {
    bytes
        .get(start..start + N)
        .and_then(|slice| slice.try_into().ok())
        .ok_or(Malformed)
}

/// The non-negative int32 at `start` (a length or size field).
#[inline]
pub fn size_at(bytes: &[u8], start: usize) -> Parsed<usize> {
    usize::try_from(i32::from_le_bytes(fixed(bytes, start)?)).map_err(|_| Malformed)
}

/// The declared length of the document at `start`, checked against the bytes available.
#[inline]
pub fn document_length(bytes: &[u8], start: usize) -> Parsed<usize> {
    let length = size_at(bytes, start)?;
    if length < 5 || start + length > bytes.len() || bytes[start + length - 1] != 0 {
        return Err(Malformed);
    }
    Ok(length)
}

/// Where the cstring at `start` ends (its zero byte); one word read for one under 8 bytes (most
/// keys), else a byte search.
#[inline]
pub fn cstring_end(bytes: &[u8], start: usize) -> Parsed<usize> {
    if let Some(zeros) = word_at(bytes, start).map(zero_bytes) {
        if zeros != 0 {
            return Ok(start + (zeros.trailing_zeros() / 8) as usize);
        }
    }
    bytes
        .get(start..)
        .and_then(|rest| rest.iter().position(|&byte| byte == 0))
        .map(|nul| start + nul)
        .ok_or(Malformed)
}

/// The length of the value of type `tag` at `start`, as its framing declares it (the one table
/// of value lengths), checked against the bytes available; an unknown type is `Malformed`. The
/// contents are not checked (a string's UTF-8, a nested document's own framing).
#[inline]
pub fn value_length(tag: u8, bytes: &[u8], start: usize) -> Parsed<usize> {
    let length = match tag {
        DOUBLE | DATE | TIMESTAMP | INT64 => 8,
        INT32 => 4,
        OBJECT_ID => 12,
        DECIMAL128 => 16,
        BOOLEAN => 1,
        UNDEFINED | NULL | MIN_KEY | MAX_KEY => 0,
        // Two cstrings: pattern and flags.
        REGEX => {
            let pattern_end = cstring_end(bytes, start)?;
            cstring_end(bytes, pattern_end + 1)? + 1 - start
        }
        // Length-prefixed as a whole.
        DOCUMENT | ARRAY | CODE_WITH_SCOPE => size_at(bytes, start)?,
        // A string: its size (which counts its zero byte) after the int32.
        STRING | CODE | SYMBOL => 4 + size_at(bytes, start)?,
        // Size, subtype, bytes.
        BINARY => 4 + 1 + size_at(bytes, start)?,
        // A string, then an ObjectId.
        DB_POINTER => 4 + size_at(bytes, start)? + 12,
        _ => return Err(Malformed),
    };
    if start + length > bytes.len() {
        return Err(Malformed);
    }
    Ok(length)
}

/// The elements of a document whose length prefix and terminator are checked (`document_length`),
/// for a format that reads values as it walks (Arrow): each element's type tag, key and value bytes
/// (exactly the value's framed length, see `value_length`), or `Malformed` where the framing breaks,
/// after which the walk ends. Keys are bytes: a format compares them with its own names.
pub fn elements(document: &[u8]) -> Elements<'_> {
    Elements {
        body: &document[..document.len() - 1],
        at: 4,
    }
}

pub struct Elements<'a> {
    /// The document without its terminator: no element may reach it.
    body: &'a [u8],
    at: usize,
}

/// One element: type tag, key, value bytes.
pub type Element<'a> = (u8, &'a [u8], &'a [u8]);

impl<'a> Elements<'a> {
    #[inline]
    fn element(&mut self) -> Parsed<Element<'a>> {
        let body = self.body;
        let tag = body[self.at];
        let key_start = self.at + 1;
        let key_end = cstring_end(body, key_start)?;
        let value_start = key_end + 1;
        // A zero type byte is the terminator's place, which the body excludes.
        let length = match tag {
            0 => return Err(Malformed),
            _ => value_length(tag, body, value_start)?,
        };
        self.at = value_start + length;
        Ok((tag, &body[key_start..key_end], &body[value_start..self.at]))
    }
}

impl<'a> Iterator for Elements<'a> {
    type Item = Parsed<Element<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.body.len() {
            return None;
        }
        let element = self.element();
        if element.is_err() {
            self.at = self.body.len();
        }
        Some(element)
    }
}

/// Whether `tag` is a type BSON defines.
fn is_type(tag: u8) -> bool {
    matches!(tag, DOUBLE..=DECIMAL128 | MIN_KEY | MAX_KEY)
}

/// Walks the top-level elements of one BSON document, checking their framing as js-bson's
/// `parseToElements` does (the official driver's reply parser): a document whose element framing
/// is broken fails the read in both drivers, while broken values (invalid UTF-8, a bad boolean) are
/// left to whoever decodes them. Calls `on_element` with each element's type byte offset and key.
/// The document's length prefix and terminator are checked by the caller.
pub fn walk_elements(document: &[u8], mut on_element: impl FnMut(usize, &[u8])) -> Result<()> {
    let malformed = |message| Err(Error::MalformedBson(message));
    // Index of the document's terminator; no element may reach it.
    let end = document.len() - 1;
    let elements = &document[..end];
    let mut at = 4;
    loop {
        let type_at = at;
        let tag = document[at];
        at += 1;
        if tag == 0 {
            return if at == document.len() {
                Ok(())
            } else {
                malformed("invalid 0x00 type byte")
            };
        }
        let Some(key_end) = elements
            .get(at..)
            .and_then(|rest| rest.iter().position(|&byte| byte == 0))
            .map(|nul| at + nul)
        else {
            return malformed("null terminator not found");
        };
        on_element(type_at, &document[at..key_end]);
        at = key_end + 1;
        match value_length(tag, elements, at) {
            Ok(length) => at += length,
            Err(Malformed) if !is_type(tag) => return malformed("invalid type byte"),
            Err(Malformed) => return malformed("value reports length larger than document"),
        }
    }
}

#[cfg(test)]
mod tests {
    use bson::{
        doc, spec::BinarySubtype, Binary, DateTime, Decimal128, JavaScriptCodeWithScope, Regex, Timestamp,
    };

    use super::*;

    #[test]
    fn walks_every_type_with_the_crates_framing() {
        let document = doc! {
            "double": 1.5, "string": "text", "document": { "a": 1 }, "array": [1, "two"],
            "binary": Binary { subtype: BinarySubtype::Generic, bytes: vec![1, 2, 3] },
            "undefined": bson::Bson::Undefined, "objectId": bson::oid::ObjectId::new(), "boolean": true,
            "date": DateTime::from_millis(1), "null": bson::Bson::Null,
            "regex": Regex { pattern: "a+".try_into().unwrap(), options: "i".try_into().unwrap() },
            "code": bson::Bson::JavaScriptCode("f()".into()), "symbol": bson::Bson::Symbol("s".into()),
            "codeWithScope": JavaScriptCodeWithScope { code: "g()".into(), scope: doc! { "x": 1 } },
            "int32": 7, "timestamp": Timestamp { time: 1, increment: 2 }, "int64": 1i64 << 40,
            "decimal128": Decimal128::from_bytes([0; 16]),
            "minKey": bson::Bson::MinKey, "maxKey": bson::Bson::MaxKey,
        };
        let bytes = document.to_vec().unwrap();
        let mut keys = Vec::new();
        let mut starts = Vec::new();
        walk_elements(&bytes, |type_at, key| {
            keys.push(String::from_utf8(key.to_vec()).unwrap());
            starts.push(type_at);
        })
        .unwrap();
        assert_eq!(keys, document.keys().cloned().collect::<Vec<_>>());
        // Each value's length is what separates it from the next element (or the terminator).
        starts.push(bytes.len() - 1);
        for (index, key) in keys.iter().enumerate() {
            let value_at = starts[index] + 1 + key.len() + 1;
            let length = value_length(bytes[starts[index]], &bytes, value_at).unwrap();
            assert_eq!(value_at + length, starts[index + 1], "{key}");
        }
    }

    #[test]
    fn elements_frame_each_value_and_stop_at_broken_framing() {
        let document = doc! { "a": 1, "b": "text", "c": { "d": [1.5] }, "e": bson::Bson::Null };
        let bytes = document.to_vec().unwrap();
        let walked: Vec<_> = elements(&bytes).map(|element| element.unwrap()).collect();
        let keys: Vec<&[u8]> = walked.iter().map(|(_, key, _)| *key).collect();
        assert_eq!(keys, [&b"a"[..], b"b", b"c", b"e"]);
        assert_eq!(walked[0], (INT32, &b"a"[..], &1i32.to_le_bytes()[..]));
        assert_eq!(walked[1].2, b"\x05\0\0\0text\0");
        assert_eq!(walked[3], (NULL, &b"e"[..], &[][..]));
        let mut broken = bytes.clone();
        broken[14] = 200; // the string's size runs past the document
        let walked: Vec<_> = elements(&broken).collect();
        assert!(matches!(walked[..], [Ok(_), Err(Malformed)]));
    }

    #[test]
    fn refuses_broken_framing_with_js_bsons_messages() {
        let mut bytes = doc! { "a": "text" }.to_vec().unwrap();
        let message = |bytes: &[u8]| match walk_elements(bytes, |_, _| {}) {
            Err(Error::MalformedBson(message)) => message,
            other => panic!("{other:?}"),
        };
        bytes[7] = 200; // the string's size runs past the document
        assert_eq!(message(&bytes), "value reports length larger than document");
        bytes[4] = 0x42; // a type BSON does not define
        assert_eq!(message(&bytes), "invalid type byte");
        assert_eq!(promoted_int64(1 << 53), Some(9_007_199_254_740_992.0));
        assert_eq!(promoted_int64((1 << 53) + 1), None);
        assert_eq!(promoted_int64(-(1 << 53)), Some(-9_007_199_254_740_992.0));
    }
}
