//! Columns built from raw BSON documents, walked with `crate::raw` (tags, value lengths, element
//! framing) one value at a time, then finished as Arrow arrays.

use std::{collections::HashMap, sync::Arc};

use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, FixedSizeBinaryArray, Float64Array, Int32Array, Int64Array,
    ListArray, NullArray, RecordBatch, StringArray, StructArray, TimestampMillisecondArray,
};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBufferBuilder, OffsetBuffer, ScalarBuffer};

use super::schema::{arrow_fields, arrow_schema, FieldSpec, Kind, LIST_ITEM};
use crate::{
    error::{Error, Result},
    raw::{self, fixed, Malformed, Parsed},
};

/// What to do with a value whose type does not fit its column.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum OnMismatch {
    /// Null in its place, counted per column.
    Null,
    /// Stop the batch and report it.
    Error,
    /// An inferred schema's `Null`: a value the column would have been inferred to hold had it
    /// been seen first (`Kind::takes_family`: a number in a numeric column, anything in a column
    /// only null so far) stops the batch, as `Error`; a value of another type is null, as `Null`.
    Inferred,
}

/// A value whose type does not fit its column, in `OnMismatch::Error` mode.
#[derive(Debug)]
pub struct TypeMismatch {
    /// The column: `a.b` for a struct's field, `a[]` for a list's items.
    pub path: String,
    /// The document's index in its batch.
    pub row: usize,
    pub expected: &'static str,
    /// The BSON type found, as `$type` names it.
    pub found: &'static str,
}

/// Why appending a document stopped.
enum Stop {
    Mismatch(TypeMismatch),
    /// Bytes that are not BSON (framing, a string's UTF-8, a boolean's byte).
    Malformed,
}

impl From<Malformed> for Stop {
    fn from(_: Malformed) -> Self {
        Stop::Malformed
    }
}

/// Bytes per value a variable-length column is first sized for.
const TEXT_BYTES_GUESS: usize = 32;

/// Largest integer magnitude a double holds exactly: an int64 beyond it does not fit a double column.
const EXACT_DOUBLE_INTEGER: u64 = 1 << 53;

/// What a variable-length column holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variable {
    /// BSON strings (utf8).
    Text,
    /// ObjectIds as 24 hex digits (utf8).
    Hex,
    /// BSON binary (binary).
    Binary,
}

enum Values {
    Null,
    Bool(BooleanBufferBuilder),
    Int32(Vec<i32>),
    Int64(Vec<i64>),
    /// Dates: milliseconds since the epoch.
    Timestamp(Vec<i64>),
    Double(Vec<f64>),
    /// utf8, hex ObjectId and binary columns.
    Bytes {
        holds: Variable,
        offsets: Vec<i32>,
        data: Vec<u8>,
    },
    /// ObjectId (12) and Decimal128 (16) columns: the BSON value's bytes as they are.
    Fixed {
        /// The BSON type the column takes.
        tag: u8,
        width: usize,
        data: Vec<u8>,
    },
    List {
        offsets: Vec<i32>,
        item: Box<Column>,
    },
    Struct(Fields),
}

/// The columns of a struct (or of the batch), with their names as bytes to compare with keys.
struct Fields {
    names: Vec<Box<[u8]>>,
    columns: Vec<Column>,
    /// Each name's index, for a struct of more than `INDEXED_FIELDS` fields: a key that is not
    /// where the last one left off is found without a scan (scanning made a document of N fields in
    /// another order than the schema's take N^2 comparisons). Narrower ones scan, which is faster
    /// than hashing for a few names.
    index: Option<HashMap<Box<[u8]>, usize>>,
}

/// The widest struct whose fields are found by a scan (see `Fields::index`).
const INDEXED_FIELDS: usize = 64;

/// One column being built.
pub struct Column {
    kind: Kind,
    path: String,
    values: Values,
    validity: NullBufferBuilder,
    len: usize,
    mismatches: u64,
}

/// Where the batch's values are read: which document, and what to do with a mismatch.
struct Reading {
    row: usize,
    on_mismatch: OnMismatch,
}

impl Column {
    /// A column for about `rows` values (sized up front: growing the buffers value by value
    /// copied them several times over).
    fn new(kind: &Kind, path: String, rows: usize) -> Self {
        let bytes = |holds| {
            let mut offsets = Vec::with_capacity(rows + 1);
            offsets.push(0);
            Values::Bytes {
                holds,
                offsets,
                // Grown from empty, a column of short strings was reallocated (and copied) a dozen
                // times per batch (~2.5% of building, perf, session 12). A column lives only until
                // its batch is written out.
                data: Vec::with_capacity(rows * TEXT_BYTES_GUESS),
            }
        };
        let fixed = |tag, width| Values::Fixed {
            tag,
            width,
            data: Vec::with_capacity(rows * width),
        };
        let values = match kind {
            Kind::Null => Values::Null,
            Kind::Bool => Values::Bool(BooleanBufferBuilder::new(rows)),
            Kind::Int32 => Values::Int32(Vec::with_capacity(rows)),
            Kind::Int64 => Values::Int64(Vec::with_capacity(rows)),
            Kind::Timestamp => Values::Timestamp(Vec::with_capacity(rows)),
            Kind::Double => Values::Double(Vec::with_capacity(rows)),
            Kind::Utf8 => bytes(Variable::Text),
            Kind::ObjectIdHex => bytes(Variable::Hex),
            Kind::Binary => bytes(Variable::Binary),
            Kind::ObjectId => fixed(raw::OBJECT_ID, 12),
            Kind::Decimal128 => fixed(raw::DECIMAL128, 16),
            // A list's items are as many as they are: no guess.
            Kind::List(item) => {
                let mut offsets = Vec::with_capacity(rows + 1);
                offsets.push(0);
                Values::List {
                    offsets,
                    item: Box::new(Column::new(item, format!("{path}[]"), 0)),
                }
            }
            Kind::Struct(fields) => Values::Struct(Fields::new(fields, &path, rows)),
        };
        Column {
            kind: kind.clone(),
            path,
            values,
            validity: NullBufferBuilder::new(rows),
            len: 0,
            mismatches: 0,
        }
    }

    fn push_null(&mut self) {
        self.len += 1;
        self.validity.append_null();
        match &mut self.values {
            Values::Null => {}
            Values::Bool(values) => values.append(false),
            Values::Int32(values) => values.push(0),
            Values::Int64(values) | Values::Timestamp(values) => values.push(0),
            Values::Double(values) => values.push(0.0),
            Values::Bytes { offsets, data, .. } => offsets.push(data.len() as i32),
            Values::Fixed { width, data, .. } => data.resize(data.len() + *width, 0),
            Values::List { offsets, item } => offsets.push(item.len as i32),
            Values::Struct(fields) => fields.columns.iter_mut().for_each(Column::push_null),
        }
    }

    /// Appends the value of type `tag` whose bytes are `value` (framed by `raw::elements`), or a
    /// null when its type does not fit.
    fn push(&mut self, tag: u8, value: &[u8], reading: &Reading) -> std::result::Result<(), Stop> {
        match (&mut self.values, tag) {
            (_, raw::NULL | raw::UNDEFINED) => {
                self.push_null();
                return Ok(());
            }
            (Values::Bool(values), raw::BOOLEAN) => values.append(boolean(value)?),
            (Values::Int32(values), raw::INT32) => values.push(i32::from_le_bytes(fixed(value, 0)?)),
            (Values::Int32(values), raw::INT64) => match i32::try_from(int64(value)?) {
                Ok(value) => values.push(value),
                Err(_) => return self.mismatch(tag, value, reading),
            },
            (Values::Int64(values), raw::INT32) => values.push(i32::from_le_bytes(fixed(value, 0)?).into()),
            (Values::Int64(values), raw::INT64) | (Values::Timestamp(values), raw::DATE) => {
                values.push(int64(value)?)
            }
            (Values::Double(values), raw::DOUBLE) => values.push(f64::from_le_bytes(fixed(value, 0)?)),
            (Values::Double(values), raw::INT32) => values.push(i32::from_le_bytes(fixed(value, 0)?).into()),
            (Values::Double(values), raw::INT64) => match int64(value)? {
                value if value.unsigned_abs() <= EXACT_DOUBLE_INTEGER => values.push(value as f64),
                _ => return self.mismatch(tag, value, reading),
            },
            (
                Values::Bytes {
                    holds: Variable::Text,
                    offsets,
                    data,
                },
                raw::STRING,
            ) => {
                data.extend_from_slice(utf8(value)?);
                offsets.push(data.len() as i32);
            }
            (
                Values::Bytes {
                    holds: Variable::Hex,
                    offsets,
                    data,
                },
                raw::OBJECT_ID,
            ) => {
                push_hex(data, value);
                offsets.push(data.len() as i32);
            }
            (
                Values::Bytes {
                    holds: Variable::Binary,
                    offsets,
                    data,
                },
                raw::BINARY,
            ) => {
                data.extend_from_slice(binary(value)?);
                offsets.push(data.len() as i32);
            }
            (Values::Fixed { tag: takes, data, .. }, tag) if *takes == tag => data.extend_from_slice(value),
            (Values::List { offsets, item }, raw::ARRAY) => {
                raw::document_length(value, 0)?;
                for element in raw::elements(value) {
                    let (tag, _, value) = element?;
                    item.push(tag, value, reading)?;
                }
                offsets.push(item.len as i32);
            }
            (Values::Struct(fields), raw::DOCUMENT) => {
                raw::document_length(value, 0)?;
                fields.push_document(value, reading)?;
            }
            _ => return self.mismatch(tag, value, reading),
        };
        self.len += 1;
        self.validity.append_non_null();
        Ok(())
    }

    /// Drops the values after the first `len` (a repeated key's earlier value, see `push_document`).
    fn truncate(&mut self, len: usize) {
        self.len = len;
        self.validity.truncate(len);
        match &mut self.values {
            Values::Null => {}
            Values::Bool(values) => values.truncate(len),
            Values::Int32(values) => values.truncate(len),
            Values::Int64(values) | Values::Timestamp(values) => values.truncate(len),
            Values::Double(values) => values.truncate(len),
            Values::Bytes { offsets, data, .. } => {
                offsets.truncate(len + 1);
                data.truncate(offsets[len] as usize);
            }
            Values::Fixed { width, data, .. } => data.truncate(len * *width),
            Values::List { offsets, item } => {
                offsets.truncate(len + 1);
                item.truncate(offsets[len] as usize);
            }
            Values::Struct(fields) => fields.columns.iter_mut().for_each(|column| column.truncate(len)),
        }
    }

    #[cold]
    fn mismatch(&mut self, tag: u8, value: &[u8], reading: &Reading) -> std::result::Result<(), Stop> {
        check_value(tag, value)?;
        let stop = match reading.on_mismatch {
            OnMismatch::Null => false,
            OnMismatch::Error => true,
            OnMismatch::Inferred => self.kind.takes_family(tag),
        };
        if stop {
            return Err(Stop::Mismatch(TypeMismatch {
                path: self.path.clone(),
                row: reading.row,
                expected: self.kind.name(),
                found: bson_type_name(tag),
            }));
        }
        self.mismatches += 1;
        self.push_null();
        Ok(())
    }

    fn finish(self) -> ArrayRef {
        let nulls = { self.validity }.finish();
        match self.values {
            Values::Null => Arc::new(NullArray::new(self.len)),
            Values::Bool(mut values) => Arc::new(BooleanArray::new(values.finish(), nulls)),
            Values::Int32(values) => Arc::new(Int32Array::new(ScalarBuffer::from(values), nulls)),
            Values::Timestamp(values) => Arc::new(
                TimestampMillisecondArray::new(ScalarBuffer::from(values), nulls).with_timezone("UTC"),
            ),
            Values::Int64(values) => Arc::new(Int64Array::new(ScalarBuffer::from(values), nulls)),
            Values::Double(values) => Arc::new(Float64Array::new(ScalarBuffer::from(values), nulls)),
            Values::Bytes { holds, offsets, data } => {
                // SAFETY: the offsets start at 0 and grow with `data`, which they end at.
                let offsets = unsafe { OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)) };
                let data = Buffer::from_vec(data);
                match holds {
                    Variable::Binary => Arc::new(BinaryArray::new(offsets, data, nulls)),
                    // SAFETY: every value is UTF-8 checked by `utf8`, or hex digits, and the offsets
                    // fall between values.
                    Variable::Text | Variable::Hex => {
                        Arc::new(unsafe { StringArray::new_unchecked(offsets, data, nulls) })
                    }
                }
            }
            Values::Fixed { width, data, .. } => Arc::new(FixedSizeBinaryArray::new(
                width as i32,
                Buffer::from_vec(data),
                nulls,
            )),
            Values::List { offsets, item } => {
                let Kind::List(item_kind) = &self.kind else {
                    unreachable!("a list column has a list kind")
                };
                let field = Arc::new(item_kind.arrow_field(LIST_ITEM));
                // SAFETY: as for `Bytes`, the offsets grow with the item column, which they end at.
                let offsets = unsafe { OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)) };
                Arc::new(ListArray::new(field, offsets, item.finish(), nulls))
            }
            Values::Struct(fields) => {
                let Kind::Struct(specs) = &self.kind else {
                    unreachable!("a struct column has a struct kind")
                };
                if specs.is_empty() {
                    Arc::new(StructArray::new_empty_fields(self.len, nulls))
                } else {
                    Arc::new(StructArray::new(arrow_fields(specs), fields.finish(), nulls))
                }
            }
        }
    }

    /// The mismatches of this column and the columns within it, by path.
    fn collect_mismatches(&self, into: &mut Vec<(String, u64)>) {
        if self.mismatches > 0 {
            into.push((self.path.clone(), self.mismatches));
        }
        match &self.values {
            Values::List { item, .. } => item.collect_mismatches(into),
            Values::Struct(fields) => fields
                .columns
                .iter()
                .for_each(|column| column.collect_mismatches(into)),
            _ => {}
        }
    }
}

impl Fields {
    fn new(specs: &[FieldSpec], path: &str, rows: usize) -> Self {
        let columns = specs
            .iter()
            .map(|field| {
                let column_path = if path.is_empty() {
                    field.name.clone()
                } else {
                    format!("{path}.{}", field.name)
                };
                Column::new(&field.kind, column_path, rows)
            })
            .collect();
        let names: Vec<Box<[u8]>> = specs.iter().map(|field| field.name.as_bytes().into()).collect();
        let index = (names.len() > INDEXED_FIELDS).then(|| {
            names
                .iter()
                .enumerate()
                .map(|(index, name)| (name.clone(), index))
                .collect()
        });
        Fields {
            names,
            columns,
            index,
        }
    }

    /// The index of the column named `key`, if any.
    fn find(&self, key: &[u8]) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(key).copied(),
            None => self.names.iter().position(|name| same_key(name, key)),
        }
    }

    /// Appends one document's fields to the columns: a missing field is null, a field without a
    /// column is skipped (framed, not read), and a repeated key keeps its last value.
    fn push_document(&mut self, document: &[u8], reading: &Reading) -> std::result::Result<(), Stop> {
        let row = self.columns.first().map_or(0, |column| column.len);
        // Documents of one query mostly list their fields in the schema's order: look where the last
        // key matched first.
        let mut next = 0;
        for element in raw::elements(document) {
            let (tag, key, value) = element?;
            let index = match self.names.get(next) {
                Some(name) if same_key(name, key) => next,
                _ => match self.find(key) {
                    Some(index) => index,
                    None => {
                        check_value(tag, value)?;
                        continue;
                    }
                },
            };
            next = index + 1;
            let column = &mut self.columns[index];
            // A repeated key: its last value wins, as in js-bson's documents.
            if column.len > row {
                column.truncate(row);
            }
            column.push(tag, value, reading)?;
        }
        for column in &mut self.columns {
            if column.len == row {
                column.push_null();
            }
        }
        Ok(())
    }

    fn finish(self) -> Vec<ArrayRef> {
        self.columns.into_iter().map(Column::finish).collect()
    }
}

/// Bytes that are not BSON fail the batch whatever their column, or without one (a field the schema
/// leaves out), as in the official driver, which decodes every value: a value no column takes is
/// still checked where js-bson would refuse it (strings' UTF-8 and terminator, booleans' byte, old
/// binary's inner size, the framing of documents and code with scope, and everything inside them). Numbers and fixed-size
/// values cannot be wrong once framed. Documents within are walked from a list, not by recursion:
/// a reply may nest a document a million levels deep.
#[inline]
fn check_value(tag: u8, value: &[u8]) -> Parsed<()> {
    let mut documents = Vec::new();
    check_one_value(tag, value, &mut documents)?;
    while let Some(document) = documents.pop() {
        for element in raw::elements(document) {
            let (tag, _, value) = element?;
            check_one_value(tag, value, &mut documents)?;
        }
    }
    Ok(())
}

/// Checks one value (see `check_value`); the documents within it join `documents`, their length
/// prefix and terminator checked.
#[inline]
fn check_one_value<'a>(tag: u8, value: &'a [u8], documents: &mut Vec<&'a [u8]>) -> Parsed<()> {
    match tag {
        raw::STRING | raw::CODE | raw::SYMBOL => drop(utf8(value)?),
        raw::BOOLEAN => drop(boolean(value)?),
        raw::BINARY => drop(binary(value)?),
        raw::DOCUMENT | raw::ARRAY => {
            raw::document_length(value, 0)?;
            documents.push(value);
        }
        // A string, then an ObjectId's 12 bytes (framed by `raw::value_length`).
        raw::DB_POINTER => drop(utf8(&value[..value.len() - 12])?),
        // Its size (framed), the code string, then the scope document, which ends the value.
        raw::CODE_WITH_SCOPE => {
            let code_end = 8 + raw::size_at(value, 4)?;
            utf8(value.get(4..code_end).ok_or(Malformed)?)?;
            let scope = value.get(code_end..).ok_or(Malformed)?;
            if raw::document_length(scope, 0)? != scope.len() {
                return Err(Malformed);
            }
            documents.push(scope);
        }
        _ => {}
    }
    Ok(())
}

/// Whether a document's `key` is the column name `name`. Keys are a few bytes: compared byte by
/// byte inline, where `==` on slices called `memcmp` for every field (~9% of building a 45-column
/// batch, perf, session 12).
#[inline(always)]
fn same_key(name: &[u8], key: &[u8]) -> bool {
    name.len() == key.len() && name.iter().zip(key).all(|(a, b)| a == b)
}

/// A boolean's byte: 0 or 1, as the bson crate reads it.
#[inline]
fn boolean(value: &[u8]) -> Parsed<bool> {
    match value.first() {
        Some(0) => Ok(false),
        Some(1) => Ok(true),
        _ => Err(Malformed),
    }
}

#[inline]
fn int64(value: &[u8]) -> Parsed<i64> {
    Ok(i64::from_le_bytes(fixed(value, 0)?))
}

/// A string's bytes (its size, which counts the zero byte, was framed by `raw::value_length`),
/// checked as UTF-8 once here: the column's bytes are then copied as they are.
#[inline]
fn utf8(value: &[u8]) -> Parsed<&[u8]> {
    let (&0, text) = value.split_last().ok_or(Malformed)? else {
        return Err(Malformed);
    };
    let text = text.get(4..).ok_or(Malformed)?;
    if !text.is_ascii() && std::str::from_utf8(text).is_err() {
        return Err(Malformed);
    }
    Ok(text)
}

/// A binary value's bytes after its size and subtype; the old subtype (2) repeats the size inside,
/// which the bson crate checks and strips.
#[inline]
fn binary(value: &[u8]) -> Parsed<&[u8]> {
    const BINARY_OLD: u8 = 0x02;
    let (subtype, data) = value.get(4..).and_then(<[u8]>::split_first).ok_or(Malformed)?;
    if *subtype != BINARY_OLD {
        return Ok(data);
    }
    match raw::size_at(data, 0) {
        Ok(inner) if inner + 4 == data.len() => Ok(&data[4..]),
        _ => Err(Malformed),
    }
}

/// An ObjectId's 12 bytes as 24 lowercase hex digits.
#[inline]
fn push_hex(data: &mut Vec<u8>, value: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for byte in value {
        data.extend_from_slice(&[DIGITS[(byte >> 4) as usize], DIGITS[(byte & 0xF) as usize]]);
    }
}

/// A built batch: its rows, and its columns' mismatches (`OnMismatch::Null`).
pub struct BuiltBatch {
    pub batch: RecordBatch,
    pub mismatches: Vec<(String, u64)>,
}

/// Builds a record batch of `fields` from `documents` (each one BSON document, its length prefix
/// and terminator checked, see `raw::document_length`).
pub fn build_batch(
    fields: &[FieldSpec],
    documents: &[&[u8]],
    on_mismatch: OnMismatch,
) -> Result<std::result::Result<BuiltBatch, TypeMismatch>> {
    let mut columns = Fields::new(fields, "", documents.len());
    let mut reading = Reading { row: 0, on_mismatch };
    for document in documents {
        match columns.push_document(document, &reading) {
            Ok(()) => {}
            Err(Stop::Mismatch(mismatch)) => return Ok(Err(mismatch)),
            Err(Stop::Malformed) => {
                return Err(Error::MalformedBson("a document of the batch does not parse"))
            }
        }
        reading.row += 1;
    }
    let mut mismatches = Vec::new();
    columns
        .columns
        .iter()
        .for_each(|column| column.collect_mismatches(&mut mismatches));
    let arrays = columns.finish();
    let schema = Arc::new(arrow_schema(fields));
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(reading.row));
    let batch = RecordBatch::try_new_with_options(schema, arrays, &options)
        .map_err(|_| Error::Internal("an Arrow batch's columns disagree with its schema"))?;
    Ok(Ok(BuiltBatch { batch, mismatches }))
}

/// A BSON type as `$type` names it.
fn bson_type_name(tag: u8) -> &'static str {
    match tag {
        raw::DOUBLE => "double",
        raw::STRING => "string",
        raw::DOCUMENT => "object",
        raw::ARRAY => "array",
        raw::BINARY => "binData",
        raw::UNDEFINED => "undefined",
        raw::OBJECT_ID => "objectId",
        raw::BOOLEAN => "bool",
        raw::DATE => "date",
        raw::NULL => "null",
        raw::REGEX => "regex",
        raw::DB_POINTER => "dbPointer",
        raw::CODE => "javascript",
        raw::SYMBOL => "symbol",
        raw::CODE_WITH_SCOPE => "javascriptWithScope",
        raw::INT32 => "int",
        raw::TIMESTAMP => "timestamp",
        raw::INT64 => "long",
        raw::DECIMAL128 => "decimal",
        raw::MIN_KEY => "minKey",
        raw::MAX_KEY => "maxKey",
        // `raw::elements` frames only the types BSON defines.
        _ => "unknown",
    }
}
