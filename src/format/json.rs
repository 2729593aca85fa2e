//! BSON to JSON text off the JS thread: what `findJson` returns and `pipeJson` writes.
//!
//! Each format is byte for byte what the official driver's documents give in JavaScript:
//! - `Relaxed`: `EJSON.stringify(documents, { relaxed: true })` (`{"$oid": ...}`, `{"$date": ...}`,
//!   numbers as JSON numbers, non-finite doubles as `{"$numberDouble": "NaN"}`, ...);
//! - `Plain`: `JSON.stringify(documents)` (ObjectId as its hex string, Date as its ISO string,
//!   Binary as base64, non-finite doubles as `null`, ...).
//!
//! A document holding something whose JS rendering follows js-bson's own rules rather than a
//! format's (regex, code, symbol, DBPointer, undefined, binary subtype 2, `$`-prefixed keys that
//! may make a DBRef, integer-like keys that JS objects reorder, invalid UTF-8, nesting deeper than
//! `MAX_DEPTH`, malformed bytes) is deferred: its place in the text is recorded and the JS side
//! renders it from js-bson's decode, so the output stays exact, errors included.

use std::sync::atomic::{AtomicUsize, Ordering};

use base64::{engine::general_purpose::STANDARD as BASE64, Engine};
use rayon::prelude::*;

mod scan;

use crate::handover::text_buffer;
use crate::raw::{
    cstring_end, document_length, fixed, is_safe_integer, promoted_int64, size_at, word_at, Malformed, ARRAY,
    BINARY, BOOLEAN, DATE, DECIMAL128, DOCUMENT, DOUBLE, HIGHS, INT32, INT64, MAX_DEPTH, MAX_KEY, MIN_KEY,
    NULL, OBJECT_ID, ONES, STRING, TIMESTAMP,
};

/// The largest time value (ms) of a valid JS `Date`.
const MAX_JS_TIME: i64 = 8_640_000_000_000_000;
/// The first instant of year 10000: relaxed EJSON writes dates from 1970 up to it as ISO strings.
const RELAXED_DATE_LIMIT: i64 = 253_402_300_800_000;
const MILLIS_PER_DAY: i64 = 86_400_000;
const HEX: &[u8; 16] = b"0123456789abcdef";
/// Each byte's two lowercase hex digits.
static HEX_PAIRS: [[u8; 2]; 256] = {
    let mut table = [[0; 2]; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = [HEX[byte >> 4], HEX[byte & 15]];
        byte += 1;
    }
    table
};
/// The two decimal digits of 0 to 99.
static DIGIT_PAIRS: [[u8; 2]; 100] = {
    let mut table = [[0; 2]; 100];
    let mut value = 0;
    while value < 100 {
        table[value] = [b'0' + (value / 10) as u8, b'0' + (value % 10) as u8];
        value += 1;
    }
    table
};

/// Which JavaScript rendering of the official driver's documents to reproduce.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum JsonFormat {
    Relaxed,
    Plain,
}

/// A batch as JSON text: its documents separated by commas, without the enclosing brackets, in
/// parts (one per unit of parallel work) that concatenate to the whole text.
pub struct JsonBatch {
    pub parts: Vec<Vec<u8>>,
    /// The BSON of the documents JS renders itself, back to back.
    pub deferred_bson: Vec<u8>,
    /// Per deferred document, three numbers: where its JSON goes in the concatenated text, and
    /// its offset and length in `deferred_bson`.
    pub deferred: Vec<u32>,
}

/// A document the JS side renders.
struct Deferred;

impl From<Malformed> for Deferred {
    fn from(_: Malformed) -> Self {
        Deferred
    }
}

type Step<T = ()> = Result<T, Deferred>;

/// Documents per unit of parallel work: large batches (a getMore returns up to 16 MiB) are
/// transcoded on every rayon thread. The parts stay apart: joining them would copy (and fault in)
/// every byte of the text a second time.
const CHUNK_BYTES: usize = 1 << 20;

/// Transcodes `documents` (each well framed: the bson crate checked their lengths), read where
/// they are in the server's reply: only deferred documents are copied.
pub fn transcode(documents: &[&[u8]], format: JsonFormat) -> JsonBatch {
    let mut chunks = Vec::new();
    let (mut first, mut bytes) = (0, 0);
    for (index, document) in documents.iter().enumerate() {
        bytes += document.len();
        if bytes >= CHUNK_BYTES {
            chunks.push(&documents[first..=index]);
            (first, bytes) = (index + 1, 0);
        }
    }
    if first < documents.len() || chunks.is_empty() {
        chunks.push(&documents[first..]);
    }
    if chunks.len() == 1 {
        return transcode_part(chunks[0], format, false);
    }
    let parts: Vec<JsonBatch> = chunks
        .par_iter()
        .enumerate()
        .map(|(index, chunk)| transcode_part(chunk, format, index > 0))
        .collect();
    gather(parts)
}

/// A batch of one part. `after_another`: the part follows another, so its text starts with the
/// comma between them.
fn transcode_part(documents: &[&[u8]], format: JsonFormat, after_another: bool) -> JsonBatch {
    transcode_checked(documents, format, after_another, Utf8Check::Batched).unwrap_or_else(|| {
        // Some document holds invalid UTF-8 (rare: js-bson renders it, or throws): written again
        // with each string checked, to find which.
        transcode_checked(documents, format, after_another, Utf8Check::EachString)
            .expect("each string checked as it is written")
    })
}

/// `transcode_part` with strings' UTF-8 checked as `utf8` says; `None` when a batched check
/// finds invalid UTF-8 in the text.
fn transcode_checked(
    documents: &[&[u8]],
    format: JsonFormat,
    after_another: bool,
    utf8: Utf8Check,
) -> Option<JsonBatch> {
    let bytes = documents.iter().map(|document| document.len()).sum::<usize>();
    let mut writer = Writer {
        out: text_buffer(expected_text_bytes(bytes)),
        format,
        floats: ryu_js::Buffer::new(),
        integers: itoa::Buffer::new(),
        keys: KeySets::default(),
        utf8,
        checked_to: 0,
        unchecked_non_ascii: false,
    };
    let (mut deferred, mut deferred_bson) = (Vec::new(), Vec::new());
    for (index, document) in documents.iter().enumerate() {
        if index > 0 || after_another {
            writer.out.push(b',');
        }
        let mark = writer.out.len();
        if writer.document(document, 0).is_err() {
            writer.out.truncate(mark);
            deferred.extend([mark, deferred_bson.len(), document.len()].map(|number| number as u32));
            deferred_bson.extend_from_slice(document);
        }
        if writer.out.len() - writer.checked_to >= UTF8_CHECK_BYTES && !writer.check_utf8() {
            return None;
        }
    }
    if !writer.check_utf8() {
        return None;
    }
    record_expansion(bytes, writer.out.len());
    Some(JsonBatch {
        parts: vec![writer.out],
        deferred_bson,
        deferred,
    })
}

/// How the UTF-8 of strings (keys and values) is checked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Utf8Check {
    /// Each string holding a non-ASCII byte, as it is written.
    EachString,
    /// The text written, some kilobytes at a time, once a string with a non-ASCII byte is in it:
    /// one call to the validator for many strings instead of one per string. Every string in the
    /// text sits between quotes and its escapes are ASCII, and UTF-8 text split at ASCII bytes is
    /// valid exactly when each piece is: the text is valid exactly when every string is.
    Batched,
}

/// Text bytes written between batched UTF-8 checks: the validator's fixed cost (a fifth of a
/// short string's, per call) spread over many strings, and the text still in cache when read again.
const UTF8_CHECK_BYTES: usize = 16 * 1024;

/// Text bytes per 1,024 BSON bytes of the last part transcoded (any format, any thread): the
/// next part's buffer is sized from it. A fixed guess either wastes memory on string-heavy
/// documents (about as long in JSON as in BSON) or falls short on number-heavy ones (1.6 times as
/// long), whose buffer then grows by a copy into fresh pages.
static TEXT_PER_KIB: AtomicUsize = AtomicUsize::new(1536);

/// The capacity for the text of `bytes` of BSON: the last part's expansion and an eighth more.
fn expected_text_bytes(bytes: usize) -> usize {
    let per_kib = TEXT_PER_KIB.load(Ordering::Relaxed);
    (bytes / 1024 + 1) * (per_kib + per_kib / 8)
}

fn record_expansion(bson_bytes: usize, text_bytes: usize) {
    // Small parts say little about the next ones.
    if bson_bytes >= 64 * 1024 {
        TEXT_PER_KIB.store(text_bytes * 1024 / bson_bytes, Ordering::Relaxed);
    }
}

/// The one-part batches as one batch: deferred documents' positions moved to the concatenated text.
fn gather(parts: Vec<JsonBatch>) -> JsonBatch {
    let mut batch = JsonBatch {
        parts: Vec::with_capacity(parts.len()),
        deferred_bson: Vec::new(),
        deferred: Vec::new(),
    };
    let mut text_base = 0;
    for part in parts {
        let bson_base = batch.deferred_bson.len() as u32;
        batch.deferred.extend(
            part.deferred
                .chunks_exact(3)
                .flat_map(|entry| [entry[0] + text_base, entry[1] + bson_base, entry[2]]),
        );
        batch.deferred_bson.extend_from_slice(&part.deferred_bson);
        text_base += part.parts.iter().map(|text| text.len() as u32).sum::<u32>();
        batch.parts.extend(part.parts);
    }
    batch
}

struct Writer {
    out: Vec<u8>,
    format: JsonFormat,
    floats: ryu_js::Buffer,
    integers: itoa::Buffer,
    keys: KeySets,
    utf8: Utf8Check,
    /// `out[..checked_to]` is known to be valid UTF-8 (`Utf8Check::Batched`).
    checked_to: usize,
    /// A string with a non-ASCII byte was written after `checked_to`.
    unchecked_non_ascii: bool,
}

impl Writer {
    /// Checks the text written since the last check when a non-ASCII string is in it; false if
    /// it is not valid UTF-8.
    fn check_utf8(&mut self) -> bool {
        let valid = !self.unchecked_non_ascii || is_utf8(&self.out[self.checked_to..]);
        self.checked_to = self.out.len();
        self.unchecked_non_ascii = false;
        valid
    }

    /// Notes `text`, a string with a non-ASCII byte: checked now (`Utf8Check::EachString`; an
    /// invalid one defers the document) or with the text around it.
    #[inline(always)]
    fn non_ascii_string(&mut self, text: &[u8]) -> Step {
        match self.utf8 {
            Utf8Check::Batched => self.unchecked_non_ascii = true,
            Utf8Check::EachString if !is_utf8(text) => return Err(Deferred),
            Utf8Check::EachString => {}
        }
        Ok(())
    }

    fn document(&mut self, document: &[u8], depth: usize) -> Step {
        self.out.push(b'{');
        let keys = self.keys.open(depth);
        let mut position = 4;
        loop {
            let tag = *document.get(position).ok_or(Deferred)?;
            if tag == 0 {
                self.keys.close(keys, depth)?;
                return self.close(b'}', position, document);
            }
            let key_start = position + 1;
            let key_end = cstring_end(document, key_start)?;
            let key = &document[key_start..key_end];
            // EJSON.stringify refuses any object with a `_bsontype` field (it takes it for a BSON
            // value of another library version): js-bson's rendering gives the same error.
            if key.first() == Some(&b'$')
                || is_array_index(key)
                || (self.format == JsonFormat::Relaxed && key == b"_bsontype")
            {
                return Err(Deferred);
            }
            self.keys.add(key_hash_in(document, key_start, key_end));
            self.key(document, key_start, key_end, position > 4)?;
            // Strings (most values) are written here, without the call to `value`.
            position = match tag {
                STRING => self.string_value(document, key_end + 1)?,
                _ => self.value(tag, document, key_end + 1, depth)?,
            };
        }
    }

    /// Writes `"key":` for `bytes[start..end]`, after a comma unless `first`. A key of up to 8
    /// bytes needing no escape nor check (most keys) is one 16-byte write of its word between
    /// the punctuation, cut to its length.
    #[inline(always)]
    fn key(&mut self, bytes: &[u8], start: usize, end: usize, comma: bool) -> Step {
        let length = end - start;
        match word_at(bytes, start) {
            Some(word) if length <= 8 && window_flags(&word.to_le_bytes(), length) == (false, false) => {
                let quoted = u128::from(b'"')
                    | u128::from(word & low_bytes(length)) << 8
                    | u128::from(u16::from_le_bytes(*b"\":")) << (8 + 8 * length);
                let text = if comma {
                    u128::from(b',') | quoted << 8
                } else {
                    quoted
                };
                put_cut(
                    &mut self.out,
                    &text.to_le_bytes(),
                    usize::from(comma) + length + 3,
                );
            }
            _ => {
                if comma {
                    self.out.push(b',');
                }
                self.string_in(bytes, start, end)?;
                self.out.push(b':');
            }
        }
        Ok(())
    }

    fn array(&mut self, array: &[u8], depth: usize) -> Step {
        self.out.push(b'[');
        let mut position = 4;
        loop {
            let tag = *array.get(position).ok_or(Deferred)?;
            if tag == 0 {
                return self.close(b']', position, array);
            }
            if position > 4 {
                self.out.push(b',');
            }
            // Array keys are indices; js-bson ignores them too.
            let value_start = cstring_end(array, position + 1)? + 1;
            position = self.value(tag, array, value_start, depth)?;
        }
    }

    /// Ends a document or array at its terminating zero byte, which must be its last byte.
    fn close(&mut self, bracket: u8, position: usize, bytes: &[u8]) -> Step {
        if position + 1 != bytes.len() {
            return Err(Deferred);
        }
        self.out.push(bracket);
        Ok(())
    }

    /// Writes the string value at `start`; returns where it ends.
    #[inline(always)]
    fn string_value(&mut self, bytes: &[u8], start: usize) -> Step<usize> {
        let end = string_end(bytes, start)?;
        self.string_in(bytes, start + 4, end - 1)?;
        Ok(end)
    }

    /// Writes the value of type `tag` starting at `start`; returns where it ends.
    fn value(&mut self, tag: u8, bytes: &[u8], start: usize, depth: usize) -> Step<usize> {
        let relaxed = self.format == JsonFormat::Relaxed;
        Ok(match tag {
            DOUBLE => {
                self.double(f64::from_le_bytes(fixed(bytes, start)?));
                start + 8
            }
            STRING => self.string_value(bytes, start)?,
            DOCUMENT | ARRAY => {
                let length = document_length(bytes, start)?;
                if depth >= MAX_DEPTH {
                    return Err(Deferred);
                }
                let nested = &bytes[start..start + length];
                if tag == DOCUMENT {
                    self.document(nested, depth + 1)?
                } else {
                    self.array(nested, depth + 1)?
                }
                start + length
            }
            BINARY => {
                let size = size_at(bytes, start)?;
                let subtype = *bytes.get(start + 4).ok_or(Deferred)?;
                let data = bytes.get(start + 5..start + 5 + size).ok_or(Deferred)?;
                // Subtype 2 nests a second length that js-bson checks and strips; js-bson refuses to
                // render an invalid vector (subtype 9) as Extended JSON: the error is its own.
                if subtype == 2 || (subtype == 9 && relaxed && !is_valid_vector(data)) {
                    return Err(Deferred);
                }
                self.binary(subtype, data);
                start + 5 + size
            }
            OBJECT_ID => {
                let id: [u8; 12] = fixed(bytes, start)?;
                self.wrapped(relaxed, b"{\"$oid\":", |writer| {
                    // Built on the stack and written in one fixed-size copy.
                    let mut text = [b'"'; 26];
                    for (index, byte) in id.into_iter().enumerate() {
                        text[1 + 2 * index..3 + 2 * index].copy_from_slice(&HEX_PAIRS[usize::from(byte)]);
                    }
                    writer.out.extend_from_slice(&text);
                });
                start + 12
            }
            BOOLEAN => {
                match bytes.get(start) {
                    Some(0) => self.out.extend_from_slice(b"false"),
                    Some(1) => self.out.extend_from_slice(b"true"),
                    _ => return Err(Deferred),
                }
                start + 1
            }
            DATE => {
                self.date(i64::from_le_bytes(fixed(bytes, start)?));
                start + 8
            }
            NULL => {
                self.out.extend_from_slice(b"null");
                start
            }
            INT32 => {
                self.integer(i32::from_le_bytes(fixed(bytes, start)?).into());
                start + 4
            }
            TIMESTAMP => {
                let increment = u32::from_le_bytes(fixed(bytes, start)?);
                let time = u32::from_le_bytes(fixed(bytes, start + 4)?);
                self.timestamp(time, increment);
                start + 8
            }
            INT64 => {
                self.int64(i64::from_le_bytes(fixed(bytes, start)?));
                start + 8
            }
            DECIMAL128 => {
                let decimal = bson::Decimal128::from_bytes(fixed(bytes, start)?);
                self.out.extend_from_slice(b"{\"$numberDecimal\":\"");
                self.out.extend_from_slice(decimal.to_string().as_bytes());
                self.out.extend_from_slice(b"\"}");
                start + 16
            }
            MIN_KEY | MAX_KEY => {
                let key: &[u8] = if tag == MIN_KEY {
                    b"{\"$minKey\":1}"
                } else {
                    b"{\"$maxKey\":1}"
                };
                // JSON.stringify of js-bson's MinKey / MaxKey: an object without enumerable fields.
                self.out.extend_from_slice(if relaxed { key } else { b"{}" });
                start
            }
            _ => return Err(Deferred),
        })
    }

    /// Writes `value` inside `{prefix ... }` in relaxed EJSON, bare in plain JSON.
    fn wrapped(&mut self, relaxed: bool, prefix: &[u8], value: impl FnOnce(&mut Self)) {
        if relaxed {
            self.out.extend_from_slice(prefix);
            value(self);
            self.out.push(b'}');
        } else {
            value(self);
        }
    }

    /// A JSON string of `bytes[start..end]`: a key or a string's text, followed in `bytes` by its
    /// zero byte and mostly by more fields. A short one is checked and copied as a window of 8, 16,
    /// 32 or 64 bytes from `start`: fixed-size work, without a loop or a `memcpy` call.
    #[inline(always)]
    fn string_in(&mut self, bytes: &[u8], start: usize, end: usize) -> Step {
        let length = end - start;
        let done = match length {
            0..=8 => self.short_string::<8>(bytes, start, length),
            9..=16 => self.short_string::<16>(bytes, start, length),
            17..=32 => self.short_string::<32>(bytes, start, length),
            33..=48 => self.short_string::<48>(bytes, start, length),
            49..=64 => self.short_string::<64>(bytes, start, length),
            65..=96 => self.short_string::<96>(bytes, start, length),
            _ => None,
        };
        done.unwrap_or_else(|| self.string(&bytes[start..], length))
    }

    /// Writes the string of `length <= N` bytes at `start` if its window fits in `bytes` (`None`
    /// if not): copied with the window when it needs no escaping, else escaped as the window's
    /// flags say, without a second look at its bytes.
    #[inline(always)]
    fn short_string<const N: usize>(&mut self, bytes: &[u8], start: usize, length: usize) -> Option<Step> {
        let window = bytes
            .get(start..start + N)
            .and_then(|window| <&[u8; N]>::try_from(window).ok())?;
        let (escapes, non_ascii) = window_flags(window, length);
        Some(self.flagged_string(&bytes[start..], window, length, escapes, non_ascii))
    }

    /// Writes the first `length` bytes of `window` (the start of `rest`), flagged as holding a
    /// byte to escape and a non-ASCII byte as `escapes` and `non_ascii` say.
    #[inline(always)]
    fn flagged_string<const N: usize>(
        &mut self,
        rest: &[u8],
        window: &[u8; N],
        length: usize,
        escapes: bool,
        non_ascii: bool,
    ) -> Step {
        if non_ascii {
            self.non_ascii_string(&window[..length])?;
        }
        if escapes {
            self.escaped(rest, length);
            return Ok(());
        }
        self.out.reserve(N + 2);
        self.out.push(b'"');
        put_cut(&mut self.out, window, length);
        self.out.push(b'"');
        Ok(())
    }

    /// A JSON string of the first `length` bytes of `bytes` (a BSON string's text, and the bytes
    /// after it); invalid UTF-8 defers the document.
    fn string(&mut self, bytes: &[u8], length: usize) -> Step {
        let text = &bytes[..length];
        let (escapes, non_ascii) = escapes_and_non_ascii(text);
        if non_ascii {
            self.non_ascii_string(text)?;
        }
        if escapes {
            self.escaped(bytes, length);
            return Ok(());
        }
        // Printable ASCII or UTF-8 without a byte to escape, copied as is.
        self.out.reserve(text.len() + 2);
        self.out.push(b'"');
        self.out.extend_from_slice(text);
        self.out.push(b'"');
        Ok(())
    }

    /// A JSON string of the first `length` bytes of `bytes`, valid UTF-8 (or checked later),
    /// escaped as `JSON.stringify` escapes it (U+2028/2029 stay raw, which JSON allows). Sixteen
    /// bytes at a time: each block is written whole and the text cut back to its first byte to
    /// escape (fixed-size copies, no `memcpy` call per escape); the bytes after the string are
    /// read, never written.
    fn escaped(&mut self, bytes: &[u8], length: usize) {
        self.out.reserve(length + 2);
        self.out.push(b'"');
        let mut index = 0;
        while index < length {
            let block = block_at(bytes, index);
            let first = scan::scan(&block).first_escape.min(length - index);
            put_cut(&mut self.out, &block, first);
            index += first;
            if first < scan::BLOCK && index < length {
                self.escape(bytes[index]);
                index += 1;
            }
        }
        self.out.push(b'"');
    }

    /// The escape of a byte JSON escapes (control, quote, backslash).
    #[inline(always)]
    fn escape(&mut self, byte: u8) {
        let escape = ESCAPES[usize::from(byte)];
        if escape == b'u' {
            self.out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 15)],
            ]);
        } else {
            self.out.extend_from_slice(&[b'\\', escape]);
        }
    }

    fn hex_byte(&mut self, byte: u8) {
        self.out.extend_from_slice(&HEX_PAIRS[usize::from(byte)]);
    }

    fn integer(&mut self, value: i64) {
        if value < 0 {
            self.out.push(b'-');
        }
        self.decimal(value.unsigned_abs());
    }

    /// The decimal digits of `value`, written in place: a fixed-size zeroed window is appended
    /// (plain stores, where appending a formatted number of variable length calls `memcpy`), its
    /// digits written two at a time from the end, the rest cut off.
    fn decimal(&mut self, value: u64) {
        const MAX_DIGITS: usize = 20;
        let length = value.checked_ilog10().unwrap_or(0) as usize + 1;
        let start = self.out.len();
        self.out.extend_from_slice(&[0; MAX_DIGITS]);
        write_digits(&mut self.out[start..start + length], value);
        self.out.truncate(start + length);
    }

    /// A finite number as JavaScript prints it.
    fn number(&mut self, value: f64) {
        if is_safe_integer(value) {
            // Also turns -0 into "0", as JavaScript does.
            self.integer(value as i64);
        } else if let Some((scaled, decimals)) = few_decimals(value) {
            self.fixed_point(scaled, decimals);
        } else {
            self.out
                .extend_from_slice(self.floats.format_finite(value).as_bytes());
        }
    }

    /// `scaled / 10^decimals` with exactly `decimals` digits after the point.
    fn fixed_point(&mut self, scaled: i64, decimals: u32) {
        if scaled < 0 {
            self.out.push(b'-');
        }
        let power = 10_u64.pow(decimals);
        let (whole, mut fraction) = (scaled.unsigned_abs() / power, scaled.unsigned_abs() % power);
        self.decimal(whole);
        // `decimals` (at most MAX_FEW_DECIMALS) digits, zeros first.
        let start = self.out.len();
        self.out.extend_from_slice(b".000");
        for place in (1..=decimals as usize).rev() {
            self.out[start + place] = b'0' + (fraction % 10) as u8;
            fraction /= 10;
        }
        // No point without decimals (`few_decimals` gives at least one: its values are not integers).
        self.out
            .truncate(start + if decimals == 0 { 0 } else { 1 + decimals as usize });
    }

    fn double(&mut self, value: f64) {
        if value.is_finite() {
            self.number(value);
        } else if self.format == JsonFormat::Plain {
            self.out.extend_from_slice(b"null");
        } else {
            let name: &[u8] = if value.is_nan() {
                b"NaN"
            } else if value > 0.0 {
                b"Infinity"
            } else {
                b"-Infinity"
            };
            self.out.extend_from_slice(b"{\"$numberDouble\":\"");
            self.out.extend_from_slice(name);
            self.out.extend_from_slice(b"\"}");
        }
    }

    /// js-bson promotes an int64 within +-2^53 to a number and keeps a `Long` otherwise, which
    /// relaxed EJSON writes as the nearest number and `JSON.stringify` as its fields.
    fn int64(&mut self, value: i64) {
        if promoted_int64(value).is_some() {
            self.integer(value);
        } else if self.format == JsonFormat::Relaxed {
            self.number(value as f64);
        } else {
            self.out.extend_from_slice(b"{\"high\":");
            self.integer((value >> 32) as i32 as i64);
            self.out.extend_from_slice(b",\"low\":");
            self.integer(value as i32 as i64);
            self.out.extend_from_slice(b",\"unsigned\":false}");
        }
    }

    fn timestamp(&mut self, time: u32, increment: u32) {
        if self.format == JsonFormat::Relaxed {
            self.out.extend_from_slice(b"{\"$timestamp\":{\"t\":");
            self.integer(time.into());
            self.out.extend_from_slice(b",\"i\":");
            self.integer(increment.into());
            self.out.extend_from_slice(b"}}");
        } else {
            // Timestamp.toJSON: the unsigned 64-bit value as a decimal string.
            self.out.extend_from_slice(b"{\"$timestamp\":\"");
            self.decimal((u64::from(time) << 32) | u64::from(increment));
            self.out.extend_from_slice(b"\"}");
        }
    }

    fn binary(&mut self, subtype: u8, data: &[u8]) {
        let relaxed = self.format == JsonFormat::Relaxed;
        // js-bson decodes a 16-byte subtype 4 as a UUID, whose toJSON is its dashed hex form.
        if !relaxed && subtype == 4 && data.len() == 16 {
            self.out.push(b'"');
            for (index, &byte) in data.iter().enumerate() {
                if matches!(index, 4 | 6 | 8 | 10) {
                    self.out.push(b'-');
                }
                self.hex_byte(byte);
            }
            self.out.push(b'"');
            return;
        }
        if relaxed {
            self.out.extend_from_slice(b"{\"$binary\":{\"base64\":");
        }
        self.out.push(b'"');
        let start = self.out.len();
        self.out.resize(start + data.len().div_ceil(3) * 4, 0);
        let written = BASE64
            .encode_slice(data, &mut self.out[start..])
            .expect("the buffer was sized for the base64 text");
        self.out.truncate(start + written);
        self.out.push(b'"');
        if relaxed {
            self.out.extend_from_slice(b",\"subType\":\"");
            self.hex_byte(subtype);
            self.out.extend_from_slice(b"\"}}");
        }
    }

    /// js-bson makes a `Date` of the int64 converted to a number; a time beyond a JS Date's range
    /// makes an invalid Date.
    fn date(&mut self, millis: i64) {
        let valid = (-MAX_JS_TIME..=MAX_JS_TIME).contains(&millis);
        match self.format {
            JsonFormat::Plain if valid => {
                self.out.push(b'"');
                self.iso_date(millis, true);
                self.out.push(b'"');
            }
            JsonFormat::Plain => self.out.extend_from_slice(b"null"),
            JsonFormat::Relaxed if (0..RELAXED_DATE_LIMIT).contains(&millis) => {
                self.out.extend_from_slice(b"{\"$date\":\"");
                self.iso_date(millis, millis % 1000 != 0);
                self.out.extend_from_slice(b"\"}");
            }
            JsonFormat::Relaxed => {
                self.out.extend_from_slice(b"{\"$date\":{\"$numberLong\":\"");
                if valid {
                    self.integer(millis);
                } else {
                    self.out.extend_from_slice(b"NaN");
                }
                self.out.extend_from_slice(b"\"}}");
            }
        }
    }

    /// `Date.prototype.toISOString` of a valid time (`with_millis: false` drops the `.sss` part).
    fn iso_date(&mut self, millis: i64, with_millis: bool) {
        let days = millis.div_euclid(MILLIS_PER_DAY);
        let in_day = millis.rem_euclid(MILLIS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        if (0..=9999).contains(&year) {
            // The common case, built on the stack and written in one fixed-size copy.
            let mut text = *b"0000-00-00T00:00:00.000Z";
            let mut put = |at: usize, value: i64| {
                text[at..at + 2].copy_from_slice(&DIGIT_PAIRS[value as usize]);
            };
            put(0, year / 100);
            put(2, year % 100);
            put(5, month);
            put(8, day);
            put(11, in_day / 3_600_000);
            put(14, in_day / 60_000 % 60);
            put(17, in_day / 1000 % 60);
            put(21, in_day % 100);
            text[20] = b'0' + (in_day % 1000 / 100) as u8;
            if with_millis {
                self.out.extend_from_slice(&text);
            } else {
                text[19] = b'Z';
                self.out.extend_from_slice(&text[..20]);
            }
            return;
        }
        self.out.push(if year < 0 { b'-' } else { b'+' });
        self.padded(year.abs(), 6);
        self.out.push(b'-');
        self.padded(month, 2);
        self.out.push(b'-');
        self.padded(day, 2);
        self.out.push(b'T');
        self.padded(in_day / 3_600_000, 2);
        self.out.push(b':');
        self.padded(in_day / 60_000 % 60, 2);
        self.out.push(b':');
        self.padded(in_day / 1000 % 60, 2);
        if with_millis {
            self.out.push(b'.');
            self.padded(in_day % 1000, 3);
        }
        self.out.push(b'Z');
    }

    /// A non-negative number in at least `width` digits.
    fn padded(&mut self, value: i64, width: usize) {
        let digits = self.integers.format(value);
        for _ in digits.len()..width {
            self.out.push(b'0');
        }
        self.out.extend_from_slice(digits.as_bytes());
    }
}

/// Decimals `few_decimals` finds: prices, rates and measures mostly have two.
const MAX_FEW_DECIMALS: u32 = 3;
/// Magnitudes `few_decimals` handles: below it a double's spacing is far under 10^-3, so at most one
/// decimal of up to `MAX_FEW_DECIMALS` places reads back as a given double.
const FEW_DECIMALS_LIMIT: f64 = 1e9;

/// A non-integer `value` that reads back from a decimal of at most `MAX_FEW_DECIMALS` places, as
/// (that decimal times 10^places, places), places as few as can be; None for other values.
///
/// JavaScript prints the shortest decimal that reads back as the value (what `ryu_js` computes
/// in general): for such a value, that is this one (a decimal with more places, or another one
/// with as few, would need a double spacing near 10^-3). One multiplication and one division
/// check it, where the shortest-decimal search costs several times more.
fn few_decimals(value: f64) -> Option<(i64, u32)> {
    const SCALE: f64 = 1000.0; // 10^MAX_FEW_DECIMALS
    if value.abs() >= FEW_DECIMALS_LIMIT {
        return None;
    }
    // Rounded half away from zero (a cast truncates); `f64::round` is a libm call.
    let mut scaled = (value * SCALE + 0.5_f64.copysign(value)) as i64;
    // IEEE division rounds correctly: the quotient is the double nearest to the decimal, which is
    // what reading the decimal back gives.
    if scaled as f64 / SCALE != value {
        return None;
    }
    let mut decimals = MAX_FEW_DECIMALS;
    while decimals > 0 && scaled % 10 == 0 {
        scaled /= 10;
        decimals -= 1;
    }
    Some((scaled, decimals))
}

/// Finds documents with a repeated key, which JS objects hold once (the last value at the first
/// position): such documents are deferred. Each document's keys are hashed; a document whose key
/// hashes equal the last duplicate-free document's at its depth needs no check, so a batch of
/// same-shaped documents costs one comparison per key. A hash collision only defers a document.
#[derive(Default)]
struct KeySets {
    /// The key hashes of the documents being written, innermost last.
    hashes: Vec<u64>,
    /// Per depth (the first few), the key hashes of the last duplicate-free document.
    known: Vec<Vec<u64>>,
    sorted: Vec<u64>,
}

/// Depths whose last key set is remembered; deeper documents are always checked.
const KNOWN_KEY_DEPTHS: usize = 8;

impl KeySets {
    /// Starts a document; returns where its hashes begin.
    fn open(&mut self, depth: usize) -> usize {
        if depth == 0 {
            // A deferred document may have left its hashes behind.
            self.hashes.clear();
        }
        self.hashes.len()
    }

    fn add(&mut self, hash: u64) {
        self.hashes.push(hash);
    }

    /// Ends the document whose hashes begin at `start`: deferred if a key repeats.
    fn close(&mut self, start: usize, depth: usize) -> Step {
        let hashes = &self.hashes[start..];
        let known = self.known.get(depth).is_some_and(|known| known == hashes);
        if !known {
            if has_repeat(hashes, &mut self.sorted) {
                return Err(Deferred);
            }
            if depth < KNOWN_KEY_DEPTHS {
                self.known.resize_with(self.known.len().max(depth + 1), Vec::new);
                self.known[depth].clear();
                self.known[depth].extend_from_slice(hashes);
            }
        }
        self.hashes.truncate(start);
        Ok(())
    }
}

fn has_repeat(hashes: &[u64], sorted: &mut Vec<u64>) -> bool {
    if hashes.len() <= 16 {
        return hashes
            .iter()
            .enumerate()
            .any(|(index, hash)| hashes[index + 1..].contains(hash));
    }
    sorted.clear();
    sorted.extend_from_slice(hashes);
    sorted.sort_unstable();
    sorted.windows(2).any(|pair| pair[0] == pair[1])
}

const KEY_HASH_MULTIPLIER: u64 = 0x517c_c1b7_2722_0a95;

/// A 64-bit hash of a key, eight bytes at a time.
fn key_hash(key: &[u8]) -> u64 {
    let mut hash = key.len() as u64;
    let mut words = key.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().expect("chunks of 8 bytes"));
        hash = (hash.rotate_left(5) ^ word).wrapping_mul(KEY_HASH_MULTIPLIER);
    }
    // Shifted in byte by byte: a copy into a zeroed word would call memcpy for every key.
    let last = words
        .remainder()
        .iter()
        .rev()
        .fold(0u64, |word, &byte| (word << 8) | u64::from(byte));
    (hash.rotate_left(5) ^ last).wrapping_mul(KEY_HASH_MULTIPLIER)
}

/// `key_hash` of `bytes[start..end]`; a key under 8 bytes is hashed from one word read at `start`
/// (its bytes, the others masked to zero: the word `key_hash` builds byte by byte).
fn key_hash_in(bytes: &[u8], start: usize, end: usize) -> u64 {
    let length = end - start;
    match word_at(bytes, start) {
        Some(word) if length < 8 => {
            let key = word & low_bytes(length);
            ((length as u64).rotate_left(5) ^ key).wrapping_mul(KEY_HASH_MULTIPLIER)
        }
        _ => key_hash(&bytes[start..end]),
    }
}

/// Escape per byte: 0 for none, `u` for `\u00XX`, else the letter after the backslash.
static ESCAPES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = b'u';
        byte += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0A] = b'n';
    table[0x0C] = b'f';
    table[0x0D] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// Appends the first `length` (at most `N`) bytes of `bytes` with one copy of all `N`: a
/// fixed-size copy is a few vector moves, where `extend_from_slice` of a slice is a call (LLVM
/// does not inline it in the large functions that write strings).
#[inline(always)]
fn put_cut<const N: usize>(out: &mut Vec<u8>, bytes: &[u8; N], length: usize) {
    assert!(length <= N);
    out.reserve(N);
    let start = out.len();
    for (slot, &byte) in out.spare_capacity_mut()[..N].iter_mut().zip(bytes) {
        slot.write(byte);
    }
    // SAFETY: `length <= N` and the first `N` bytes of the spare capacity were just written.
    unsafe { out.set_len(start + length) };
}

/// The sixteen bytes of `bytes` from `index` (below its length), padded with spaces (never
/// escaped) where `bytes` ends first: the string's last block, when the document ends with it.
#[inline(always)]
fn block_at(bytes: &[u8], index: usize) -> [u8; scan::BLOCK] {
    if let Ok(block) = fixed(bytes, index) {
        return block;
    }
    let mut padded = [b' '; 2 * scan::BLOCK];
    // The last block of `bytes` (or all of it) copied to the front, read from `index`.
    let base = bytes.len().saturating_sub(scan::BLOCK).min(index);
    let tail = &bytes[base..];
    if tail.len() == scan::BLOCK {
        padded[..scan::BLOCK].copy_from_slice(tail);
    } else {
        padded[..tail.len()].copy_from_slice(tail);
    }
    fixed(&padded, index - base).expect("a block within the padded copy")
}

/// Where the BSON string at `start` ends: its text is `start + 4` up to the zero byte before that.
fn string_end(bytes: &[u8], start: usize) -> Step<usize> {
    let size = size_at(bytes, start)?;
    let end = start + 4 + size;
    match (size, bytes.get(end.wrapping_sub(1))) {
        (1.., Some(0)) => Ok(end),
        _ => Err(Deferred),
    }
}

/// A mask of the low `count` (at most 8) bytes of a word.
fn low_bytes(count: usize) -> u64 {
    u64::MAX.checked_shr(64 - 8 * count as u32).unwrap_or(0)
}

/// Whether `text` has a byte JSON escapes (control, quote, backslash), and whether it has a
/// non-ASCII byte (UTF-8 to validate), sixteen bytes at a time (see `scan`): the last block
/// overlaps the one before it, and text under sixteen bytes is scanned padded with spaces.
fn escapes_and_non_ascii(text: &[u8]) -> (bool, bool) {
    let block_at = |at: usize| fixed::<{ scan::BLOCK }>(text, at).expect("a block within the text");
    let Some(last) = text.len().checked_sub(scan::BLOCK) else {
        let mut block = [b' '; scan::BLOCK];
        block[..text.len()].copy_from_slice(text);
        let found = scan::scan(&block);
        return (found.first_escape < scan::BLOCK, found.non_ascii);
    };
    let (mut escapes, mut non_ascii) = (false, false);
    let mut at = 0;
    loop {
        let found = scan::scan(&block_at(at.min(last)));
        escapes |= found.first_escape < scan::BLOCK;
        non_ascii |= found.non_ascii;
        if at >= last {
            return (escapes, non_ascii);
        }
        at += scan::BLOCK;
    }
}

/// Whether a window's first `length` bytes hold a byte JSON escapes, and whether they hold a
/// non-ASCII byte: sixteen bytes at a time (see `scan`), a word for a window of 8. The flags of
/// the bytes after them are masked off (in a word, their borrows go up, away from the string's
/// bytes).
#[inline(always)]
fn window_flags<const N: usize>(window: &[u8; N], length: usize) -> (bool, bool) {
    if N < scan::BLOCK {
        let word = u64::from_le_bytes(window[..8].try_into().expect("a window of 8 bytes"));
        let mask = low_bytes(length);
        return (escape_flags(word) & mask != 0, word & HIGHS & mask != 0);
    }
    scan::window_flags(window, length)
}

/// The high bit of each byte of a little-endian word that JSON escapes (control, quote,
/// backslash), in a few operations without branches. A byte below 0x20 borrows from the next one
/// up when 0x20 is taken from it, as do a quote or backslash when 1 is taken from it xored with
/// itself: a flag may be false only above a true one, so the lowest is exact. `& !word` drops
/// non-ASCII bytes, whose high bit is set in each of the three terms.
#[inline(always)]
fn escape_flags(word: u64) -> u64 {
    (word.wrapping_sub(ONES * 0x20)
        | (word ^ (ONES * u64::from(b'"'))).wrapping_sub(ONES)
        | (word ^ (ONES * u64::from(b'\\'))).wrapping_sub(ONES))
        & !word
        & HIGHS
}

/// Whether `text` is valid UTF-8: simdutf8's AVX2 or SSE4.2 code where the CPU has them, at every
/// length (its usual entry point hands text under 64 bytes, most strings here, to std's byte by
/// byte check, which took a fifth of the time of a batch of short non-ASCII strings); std's
/// elsewhere.
fn is_utf8(text: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use simdutf8::basic::imp::x86::{avx2, sse42};
        // SAFETY: each SIMD implementation runs only where the CPU has its instructions.
        if std::is_x86_feature_detected!("avx2") {
            return unsafe { avx2::validate_utf8(text) }.is_ok();
        }
        if std::is_x86_feature_detected!("sse4.2") {
            return unsafe { sse42::validate_utf8(text) }.is_ok();
        }
    }
    std::str::from_utf8(text).is_ok()
}

/// Writes the decimal digits of `value` into `digits`, exactly as many as it has; four at a time
/// in 32-bit arithmetic, as itoa does.
fn write_digits(digits: &mut [u8], value: u64) {
    let mut end = digits.len();
    let mut value = value;
    while value > u64::from(u32::MAX) {
        let mut low = (value % 100_000_000) as u32;
        value /= 100_000_000;
        for _ in 0..4 {
            digits[end - 2..end].copy_from_slice(&DIGIT_PAIRS[(low % 100) as usize]);
            low /= 100;
            end -= 2;
        }
    }
    let mut value = value as u32;
    while value >= 10_000 {
        let low = value % 10_000;
        value /= 10_000;
        digits[end - 4..end - 2].copy_from_slice(&DIGIT_PAIRS[(low / 100) as usize]);
        digits[end - 2..end].copy_from_slice(&DIGIT_PAIRS[(low % 100) as usize]);
        end -= 4;
    }
    if value >= 100 {
        digits[end - 2..end].copy_from_slice(&DIGIT_PAIRS[(value % 100) as usize]);
        value /= 100;
        end -= 2;
    }
    if value >= 10 {
        digits[end - 2..end].copy_from_slice(&DIGIT_PAIRS[value as usize]);
    } else {
        digits[end - 1] = b'0' + value as u8;
    }
}

/// Whether JS treats `key` as an array index, which objects enumerate first, in numeric order.
fn is_array_index(key: &[u8]) -> bool {
    match key {
        [b'0'] => true,
        [b'1'..=b'9', rest @ ..] if rest.len() < 10 && rest.iter().all(u8::is_ascii_digit) => {
            std::str::from_utf8(key)
                .ok()
                .and_then(|digits| digits.parse::<u64>().ok())
                .is_some_and(|index| index < u64::from(u32::MAX))
        }
        _ => false,
    }
}

/// The proleptic Gregorian (year, month, day) of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Whether js-bson's `validateBinaryVector` (bson 7, run by `Binary.toExtendedJSON`) accepts the
/// data of a subtype 9 binary: its first byte is the element type, its second the padding.
fn is_valid_vector(data: &[u8]) -> bool {
    const INT8: u8 = 0x03;
    const FLOAT32: u8 = 0x27;
    const PACKED_BIT: u8 = 0x10;
    let Some(&kind) = data.first() else {
        return true;
    };
    // js-bson reads a missing padding byte as `undefined`, which is not 0.
    let padding = data.get(1).copied();
    match kind {
        INT8 => padding == Some(0),
        FLOAT32 => padding == Some(0) && (data.len() - 2).is_multiple_of(4),
        PACKED_BIT => match padding {
            Some(padding) => padding <= 7 && !(padding != 0 && data.len() == 2),
            None => true,
        },
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer() -> Writer {
        Writer {
            out: Vec::new(),
            format: JsonFormat::Plain,
            floats: ryu_js::Buffer::new(),
            integers: itoa::Buffer::new(),
            keys: KeySets::default(),
            utf8: Utf8Check::EachString,
            checked_to: 0,
            unchecked_non_ascii: false,
        }
    }

    /// A BSON document of string fields, from raw bytes (invalid UTF-8 included).
    fn string_document(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut bytes = vec![0; 4];
        for (key, value) in fields {
            bytes.push(STRING);
            bytes.extend_from_slice(key);
            bytes.push(0);
            bytes.extend_from_slice(&(value.len() as i32 + 1).to_le_bytes());
            bytes.extend_from_slice(value);
            bytes.push(0);
        }
        bytes.push(0);
        let length = bytes.len() as i32;
        bytes[..4].copy_from_slice(&length.to_le_bytes());
        bytes
    }

    /// The text and deferred documents of one part, as (text, deferred).
    fn part_of(documents: &[Vec<u8>], utf8: Option<Utf8Check>) -> (String, Vec<u32>) {
        let documents: Vec<&[u8]> = documents.iter().map(Vec::as_slice).collect();
        let batch = match utf8 {
            Some(utf8) => transcode_checked(&documents, JsonFormat::Plain, false, utf8).unwrap(),
            None => transcode_part(&documents, JsonFormat::Plain, false),
        };
        (String::from_utf8(batch.parts.concat()).unwrap(), batch.deferred)
    }

    /// A string with one byte (or sequence) at each position of the first 16-byte blocks, in a
    /// value and in a key: valid UTF-8 written as `JSON.stringify` writes it, invalid UTF-8 (a
    /// stray continuation byte, a truncated sequence, a surrogate, an overlong form) deferring
    /// the document, in the batched check as in the check of each string.
    #[test]
    fn a_non_ascii_byte_anywhere_in_a_string_is_checked() {
        let pieces: [&[u8]; 10] = [
            "é".as_bytes(),
            "日".as_bytes(),
            "\u{2028}".as_bytes(),
            b"\x80",
            b"\xff",
            b"\xe6\x97",
            b"\xed\xa0\x80",
            b"\xc0\xaf",
            b"\x01",
            b"\"",
        ];
        for length in 0..100 {
            for position in 0..=length {
                for piece in pieces {
                    let mut text = vec![b'x'; length];
                    text.splice(position..position, piece.iter().copied());
                    let expected = std::str::from_utf8(&text)
                        .ok()
                        .map(|text| serde_json::to_string(text).unwrap());
                    // The text as a value, as the first key and as a later key.
                    for place in 0..3 {
                        // Keys are cstrings: no zero byte in them.
                        if place > 0 && text.contains(&0) {
                            continue;
                        }
                        let document = match place {
                            0 => string_document(&[(b"k", &text)]),
                            1 => string_document(&[(&text, b"v")]),
                            _ => string_document(&[(b"a", b"b"), (&text, b"v")]),
                        };
                        let wanted = match &expected {
                            Some(json) => (
                                match place {
                                    0 => format!("{{\"k\":{json}}}"),
                                    1 => format!("{{{json}:\"v\"}}"),
                                    _ => format!("{{\"a\":\"b\",{json}:\"v\"}}"),
                                },
                                vec![],
                            ),
                            None => (String::new(), vec![0, 0, document.len() as u32]),
                        };
                        let documents = [document];
                        for utf8 in [Some(Utf8Check::EachString), None] {
                            assert_eq!(part_of(&documents, utf8), wanted, "{text:?} {place}");
                        }
                    }
                }
            }
        }
    }

    /// Batches of documents of random strings, some of them invalid UTF-8, over many batched
    /// checks: the same text and the same deferred documents as with each string checked.
    #[test]
    fn batched_utf8_checks_defer_what_checks_of_each_string_defer() {
        const PIECES: [&[u8]; 9] = [
            b"ab",
            b"\"",
            b"\n",
            "é".as_bytes(),
            "🎉".as_bytes(),
            "\u{2029}".as_bytes(),
            b"\xff",
            b"\xe6\x97",
            b"\x80",
        ];
        let mut random = pseudo_random(7);
        for invalid_one_in in [0, 1, 3, 50, 2000] {
            let mut documents = Vec::new();
            for _ in 0..3000 {
                let mut next = || random.next().unwrap();
                let mut strings = Vec::new();
                for _ in 0..4 {
                    let mut text = Vec::new();
                    for _ in 0..next() % 30 {
                        // Invalid pieces (the last three) only in one document in `invalid_one_in`.
                        let choices = if invalid_one_in > 0 && next() % invalid_one_in == 0 {
                            9
                        } else {
                            6
                        };
                        text.extend_from_slice(PIECES[(next() % choices) as usize]);
                    }
                    strings.push(text);
                }
                let keys: [&[u8]; 2] = [b"a", &strings[0]];
                documents.push(string_document(&[
                    (keys[0], &strings[1]),
                    (
                        if strings[0].is_empty() { &b"b"[..] } else { keys[1] },
                        &strings[2],
                    ),
                    (b"c", &strings[3]),
                ]));
            }
            let batched = part_of(&documents, None);
            let each = part_of(&documents, Some(Utf8Check::EachString));
            assert_eq!(batched, each, "{invalid_one_in}");
            if invalid_one_in == 0 || invalid_one_in >= 50 {
                assert!(batched.0.len() > 4 * UTF8_CHECK_BYTES, "{invalid_one_in}");
            }
            assert_eq!(batched.1.is_empty(), invalid_one_in == 0, "{invalid_one_in}");
        }
    }

    /// What `Writer::number` writes for `value`.
    fn number_text(value: f64) -> String {
        let mut writer = writer();
        writer.number(value);
        String::from_utf8(writer.out).unwrap()
    }

    /// Strings (some short, some long) of bytes JSON escapes or that need UTF-8 validation, with
    /// bytes after their zero byte that would need escaping too: the short-string window must
    /// look at the string's own bytes only. serde_json escapes valid UTF-8 as `JSON.stringify`.
    #[test]
    fn strings_are_escaped_as_json_stringify_escapes_them() {
        const PIECES: [&[u8]; 12] = [
            b"a",
            b"key",
            b"\"",
            b"\\",
            b"\n",
            b"\x01",
            b"\x1f",
            b"\x7f",
            "é".as_bytes(),
            "\u{2028}".as_bytes(),
            "🎉".as_bytes(),
            b"\xff",
        ];
        let mut random = pseudo_random(3);
        for _ in 0..100_000 {
            let mut next = || random.next().unwrap();
            let pieces = next() % 60;
            let mut text = Vec::new();
            for _ in 0..pieces {
                text.extend_from_slice(PIECES[(next() % 12) as usize]);
            }
            let mut bytes = text.clone();
            bytes.push(0);
            for _ in 0..next() % 40 {
                bytes.push(if next() % 2 == 0 { b'"' } else { 0x01 });
            }
            let mut writer = writer();
            let written = writer.string_in(&bytes, 0, text.len()).map(|()| writer.out);
            let expected = std::str::from_utf8(&text)
                .ok()
                .map(|text| serde_json::to_vec(text).unwrap());
            assert_eq!(written.ok(), expected, "{:?}", String::from_utf8_lossy(&text));
        }
    }

    /// Integers are written digit pairs at a time into a fixed window: the same text as itoa
    /// (which wrote them until 2026-11), at every length and both signs.
    #[test]
    fn integers_print_as_itoa() {
        let mut values = vec![
            0,
            1,
            -1,
            9,
            10,
            99,
            100,
            i64::MAX,
            i64::MIN,
            u32::MAX as i64,
            u32::MAX as i64 + 1,
        ];
        for power in 1..19 {
            let at = 10_i64.pow(power);
            values.extend([at - 1, at, at + 1, -at + 1, -at, -at - 1]);
        }
        values.extend(
            pseudo_random(5)
                .take(100_000)
                .map(|bits| (bits as i64) >> (bits % 64)),
        );
        for value in values {
            let mut signed = writer();
            signed.integer(value);
            assert_eq!(
                signed.out,
                itoa::Buffer::new().format(value).as_bytes(),
                "{value}"
            );
            let mut unsigned = writer();
            unsigned.decimal(value.unsigned_abs());
            assert_eq!(
                unsigned.out,
                itoa::Buffer::new().format(value.unsigned_abs()).as_bytes()
            );
        }
    }

    /// Dates of years 0 to 9999 are built in a fixed window: the same text as the general path
    /// (`Date.prototype.toISOString`, field by field), with and without milliseconds.
    #[test]
    fn dates_print_as_iso_strings() {
        const YEAR_10000: i64 = 253_402_300_800_000;
        const YEAR_0: i64 = -62_167_219_200_000;
        let mut times = vec![
            0,
            -1,
            1,
            999,
            1000,
            YEAR_0,
            YEAR_0 - 1,
            YEAR_10000 - 1,
            YEAR_10000,
        ];
        times.extend(
            pseudo_random(6)
                .take(100_000)
                .map(|bits| YEAR_0 - 1000 + (bits % (YEAR_10000 - YEAR_0 + 2000) as u64) as i64),
        );
        for millis in times {
            for with_millis in [true, false] {
                let mut writer = writer();
                writer.iso_date(millis, with_millis);
                let (year, month, day) = civil_from_days(millis.div_euclid(MILLIS_PER_DAY));
                let in_day = millis.rem_euclid(MILLIS_PER_DAY);
                let year = match year {
                    0..=9999 => format!("{year:04}"),
                    _ => format!("{}{:06}", if year < 0 { '-' } else { '+' }, year.abs()),
                };
                let mut expected = format!(
                    "{year}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
                    in_day / 3_600_000,
                    in_day / 60_000 % 60,
                    in_day / 1000 % 60
                );
                if with_millis {
                    expected += &format!(".{:03}", in_day % 1000);
                }
                expected.push('Z');
                assert_eq!(String::from_utf8(writer.out).unwrap(), expected, "{millis}");
            }
        }
    }

    /// ObjectIds and UUIDs are written from a table of hex pairs: lowercase hex of every byte.
    #[test]
    fn hex_pairs_are_lowercase_hex() {
        for byte in 0..=255u8 {
            let mut writer = writer();
            writer.hex_byte(byte);
            assert_eq!(writer.out, format!("{byte:02x}").as_bytes());
        }
    }

    /// The word-at-a-time escape tests agree with the byte table for words of any bytes: a word
    /// is flagged exactly when one of its bytes needs escaping (and, for the first, validating).
    #[test]
    fn escape_flags_agree_with_the_byte_table() {
        let mut random = pseudo_random(7);
        for _ in 0..200_000 {
            let mut next = || random.next().unwrap();
            // Bytes drawn mostly from those near the edges of the tests (0x1f/0x20, '"', '\\', 0x7f/0x80).
            const EDGES: [u8; 10] = [0x00, 0x1f, 0x20, 0x21, b'"', b'#', b'\\', 0x7f, 0x80, 0xff];
            let bytes: [u8; 8] = std::array::from_fn(|_| {
                let draw = next();
                if draw % 4 == 0 {
                    draw as u8
                } else if draw % 4 == 1 {
                    EDGES[(draw >> 8) as usize % 10]
                } else {
                    b'a'
                }
            });
            let word = u64::from_le_bytes(bytes);
            let escapes = bytes.iter().any(|&byte| ESCAPES[usize::from(byte)] != 0);
            assert_eq!(escape_flags(word) != 0, escapes, "{bytes:?}");
            // A window of 8 (`window_flags`): its first `length` bytes only.
            for length in 0..=8 {
                let text = &bytes[..length];
                let expected = (
                    text.iter().any(|&byte| ESCAPES[usize::from(byte)] != 0),
                    text.iter().any(|&byte| byte >= 0x80),
                );
                assert_eq!(window_flags(&bytes, length), expected, "{bytes:?} {length}");
            }
        }
    }

    /// A deterministic stream of 64-bit values (splitmix64).
    fn pseudo_random(seed: u64) -> impl Iterator<Item = u64> {
        let mut state = seed;
        std::iter::repeat_with(move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        })
    }

    /// Keys are hashed and their ends found a word at a time when they are short: the same
    /// results as byte by byte, whatever bytes follow them.
    #[test]
    fn keys_read_a_word_at_a_time_read_as_byte_by_byte() {
        let mut random = pseudo_random(4);
        for _ in 0..100_000 {
            let mut next = || random.next().unwrap();
            let length = (next() % 20) as usize;
            let mut bytes: Vec<u8> = (0..length).map(|_| (next() % 255) as u8 + 1).collect();
            bytes.push(0);
            bytes.extend((0..next() % 12).map(|_| next() as u8));
            assert_eq!(cstring_end(&bytes, 0).ok(), Some(length));
            assert_eq!(
                key_hash_in(&bytes, 0, length),
                key_hash(&bytes[..length]),
                "{bytes:?}"
            );
        }
    }

    /// ryu_js prints numbers as JavaScript does: the short-decimal path must agree with it.
    fn assert_prints_as_javascript(value: f64) {
        let expected = if is_safe_integer(value) {
            (value as i64).to_string()
        } else {
            ryu_js::Buffer::new().format_finite(value).to_string()
        };
        assert_eq!(number_text(value), expected, "{value:e} ({:#x})", value.to_bits());
    }

    #[test]
    fn numbers_with_few_decimals_print_as_javascript() {
        for (index, bits) in pseudo_random(1).take(400_000).enumerate() {
            // Decimals of 0 to 6 places (around the fast path's limit of 3), of every magnitude
            // the fast path takes and some beyond it, and their neighbouring doubles.
            let places = (bits % 7) as i32;
            let digits = (bits >> 8) % 10_u64.pow(1 + (index % 15) as u32);
            let sign = if bits >> 63 == 1 { -1.0 } else { 1.0 };
            let value = sign * digits as f64 / 10_f64.powi(places);
            assert_prints_as_javascript(value);
            assert_prints_as_javascript(f64::from_bits(value.to_bits() + 1));
            assert_prints_as_javascript(f64::from_bits(value.to_bits().saturating_sub(1)));
        }
    }

    #[test]
    fn arbitrary_doubles_print_as_javascript() {
        for bits in pseudo_random(2).take(200_000) {
            let value = f64::from_bits(bits);
            if value.is_finite() {
                assert_prints_as_javascript(value);
            }
            // Doubles of everyday magnitudes with every mantissa.
            assert_prints_as_javascript(f64::from_bits(0x3f00_0000_0000_0000 + bits % (0x0500u64 << 52)));
        }
        for value in [
            0.001,
            -0.001,
            0.5,
            0.05,
            0.005,
            999_999_999.999,
            1e9 - 0.5,
            0.1 + 0.2,
            1.005,
            2.675,
        ] {
            assert_prints_as_javascript(value);
        }
    }
}
