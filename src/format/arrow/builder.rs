//! Columns built from raw BSON documents, one value at a time, then finished as Arrow arrays.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, FixedSizeBinaryArray, Float64Array, Int32Array, Int64Array,
    ListArray, NullArray, RecordBatch, StringArray, StructArray, TimestampMillisecondArray,
};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use bson::{RawBsonRef, RawDocument};

use super::schema::{arrow_fields, arrow_schema, FieldSpec, Kind, LIST_ITEM};
use crate::error::{Error, Result};

/// What to do with a value whose type does not fit its column.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum OnMismatch {
    /// Null in its place, counted per column.
    Null,
    /// Stop the batch and report it.
    Error,
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
    /// A value the bson crate could not read.
    Malformed,
}

/// Largest integer magnitude a double holds exactly: an int64 beyond it does not fit a double column.
const EXACT_DOUBLE_INTEGER: i64 = 1 << 53;

enum Values {
    Null,
    Bool(BooleanBufferBuilder),
    I32(Vec<i32>),
    /// int64 and timestamp columns.
    I64(Vec<i64>),
    F64(Vec<f64>),
    /// utf8, hex ObjectId and binary columns.
    Bytes {
        offsets: Vec<i32>,
        data: Vec<u8>,
    },
    /// ObjectId (12) and Decimal128 (16) columns.
    Fixed {
        width: usize,
        data: Vec<u8>,
    },
    List {
        offsets: Vec<i32>,
        item: Box<Column>,
    },
    Struct(Vec<(String, Column)>),
}

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
        let offsets = || {
            let mut offsets = Vec::with_capacity(rows + 1);
            offsets.push(0);
            offsets
        };
        let values = match kind {
            Kind::Null => Values::Null,
            Kind::Bool => Values::Bool(BooleanBufferBuilder::new(rows)),
            Kind::Int32 => Values::I32(Vec::with_capacity(rows)),
            Kind::Int64 | Kind::Timestamp => Values::I64(Vec::with_capacity(rows)),
            Kind::Double => Values::F64(Vec::with_capacity(rows)),
            Kind::Utf8 | Kind::ObjectIdHex | Kind::Binary => Values::Bytes {
                offsets: offsets(),
                data: Vec::new(),
            },
            Kind::ObjectId => Values::Fixed {
                width: 12,
                data: Vec::with_capacity(rows * 12),
            },
            Kind::Decimal128 => Values::Fixed {
                width: 16,
                data: Vec::with_capacity(rows * 16),
            },
            // A list's items are as many as they are: no guess.
            Kind::List(item) => Values::List {
                offsets: offsets(),
                item: Box::new(Column::new(item, format!("{path}[]"), 0)),
            },
            Kind::Struct(fields) => Values::Struct(struct_children(fields, &path, rows)),
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
            Values::I32(values) => values.push(0),
            Values::I64(values) => values.push(0),
            Values::F64(values) => values.push(0.0),
            Values::Bytes { offsets, data } => offsets.push(data.len() as i32),
            Values::Fixed { width, data } => data.resize(data.len() + *width, 0),
            Values::List { offsets, item } => offsets.push(item.len as i32),
            Values::Struct(children) => children.iter_mut().for_each(|(_, child)| child.push_null()),
        }
    }

    /// Appends `value` (`None`: the field is missing), or a null when its type does not fit.
    fn push(&mut self, value: Option<RawBsonRef>, reading: &Reading) -> std::result::Result<(), Stop> {
        let Some(value) = value else {
            self.push_null();
            return Ok(());
        };
        match (&mut self.values, value) {
            (_, RawBsonRef::Null | RawBsonRef::Undefined) => {
                self.push_null();
                return Ok(());
            }
            (Values::Bool(values), RawBsonRef::Boolean(value)) => values.append(value),
            (Values::I32(values), RawBsonRef::Int32(value)) => values.push(value),
            (Values::I32(values), RawBsonRef::Int64(value)) if i32::try_from(value).is_ok() => {
                values.push(value as i32)
            }
            (Values::I64(values), RawBsonRef::Int32(value)) if self.kind == Kind::Int64 => {
                values.push(value.into())
            }
            (Values::I64(values), RawBsonRef::Int64(value)) if self.kind == Kind::Int64 => values.push(value),
            (Values::I64(values), RawBsonRef::DateTime(value)) if self.kind == Kind::Timestamp => {
                values.push(value.timestamp_millis())
            }
            (Values::F64(values), RawBsonRef::Double(value)) => values.push(value),
            (Values::F64(values), RawBsonRef::Int32(value)) => values.push(value.into()),
            (Values::F64(values), RawBsonRef::Int64(value)) if value.abs() <= EXACT_DOUBLE_INTEGER => {
                values.push(value as f64)
            }
            (Values::Bytes { offsets, data }, RawBsonRef::String(value)) if self.kind == Kind::Utf8 => {
                data.extend_from_slice(value.as_bytes());
                offsets.push(data.len() as i32);
            }
            (Values::Bytes { offsets, data }, RawBsonRef::ObjectId(value))
                if self.kind == Kind::ObjectIdHex =>
            {
                data.extend_from_slice(value.to_hex().as_bytes());
                offsets.push(data.len() as i32);
            }
            (Values::Bytes { offsets, data }, RawBsonRef::Binary(value)) if self.kind == Kind::Binary => {
                data.extend_from_slice(value.bytes);
                offsets.push(data.len() as i32);
            }
            (Values::Fixed { width: 12, data }, RawBsonRef::ObjectId(value)) => {
                data.extend_from_slice(&value.bytes())
            }
            (Values::Fixed { width: 16, data }, RawBsonRef::Decimal128(value)) => {
                data.extend_from_slice(&value.bytes())
            }
            (Values::List { offsets, item }, RawBsonRef::Array(array)) => {
                for element in array {
                    let element = element.map_err(|_| Stop::Malformed)?;
                    item.push(Some(element), reading)?;
                }
                offsets.push(item.len as i32);
            }
            (Values::Struct(children), RawBsonRef::Document(document)) => {
                push_fields(children, document, reading)?;
            }
            _ => return self.mismatch(value, reading),
        };
        self.len += 1;
        self.validity.append_non_null();
        Ok(())
    }

    /// Drops the values after the first `len` (a repeated key's earlier value, see `push_fields`).
    fn truncate(&mut self, len: usize) {
        self.len = len;
        self.validity.truncate(len);
        match &mut self.values {
            Values::Null => {}
            Values::Bool(values) => values.truncate(len),
            Values::I32(values) => values.truncate(len),
            Values::I64(values) => values.truncate(len),
            Values::F64(values) => values.truncate(len),
            Values::Bytes { offsets, data } => {
                offsets.truncate(len + 1);
                data.truncate(offsets[len] as usize);
            }
            Values::Fixed { width, data } => data.truncate(len * *width),
            Values::List { offsets, item } => {
                offsets.truncate(len + 1);
                item.truncate(offsets[len] as usize);
            }
            Values::Struct(children) => children.iter_mut().for_each(|(_, child)| child.truncate(len)),
        }
    }

    fn mismatch(&mut self, value: RawBsonRef, reading: &Reading) -> std::result::Result<(), Stop> {
        if reading.on_mismatch == OnMismatch::Error {
            return Err(Stop::Mismatch(TypeMismatch {
                path: self.path.clone(),
                row: reading.row,
                expected: self.kind.name(),
                found: bson_type_name(value),
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
            Values::I32(values) => Arc::new(Int32Array::new(ScalarBuffer::from(values), nulls)),
            Values::I64(values) if self.kind == Kind::Timestamp => Arc::new(
                TimestampMillisecondArray::new(ScalarBuffer::from(values), nulls).with_timezone("UTC"),
            ),
            Values::I64(values) => Arc::new(Int64Array::new(ScalarBuffer::from(values), nulls)),
            Values::F64(values) => Arc::new(Float64Array::new(ScalarBuffer::from(values), nulls)),
            Values::Bytes { offsets, data } => {
                // SAFETY: the offsets start at 0 and grow with `data`, which they end at.
                let offsets = unsafe { OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)) };
                let data = Buffer::from_vec(data);
                match self.kind {
                    Kind::Binary => Arc::new(BinaryArray::new(offsets, data, nulls)),
                    // SAFETY: every value was a `&str` (the bson crate checked its UTF-8) or hex
                    // digits, and the offsets fall between values.
                    _ => Arc::new(unsafe { StringArray::new_unchecked(offsets, data, nulls) }),
                }
            }
            Values::Fixed { width, data } => Arc::new(FixedSizeBinaryArray::new(
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
            Values::Struct(children) => {
                let Kind::Struct(fields) = &self.kind else {
                    unreachable!("a struct column has a struct kind")
                };
                let arrays = children.into_iter().map(|(_, child)| child.finish()).collect();
                if fields.is_empty() {
                    Arc::new(StructArray::new_empty_fields(self.len, nulls))
                } else {
                    Arc::new(StructArray::new(arrow_fields(fields), arrays, nulls))
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
            Values::Struct(children) => children
                .iter()
                .for_each(|(_, child)| child.collect_mismatches(into)),
            _ => {}
        }
    }
}

fn struct_children(fields: &[FieldSpec], path: &str, rows: usize) -> Vec<(String, Column)> {
    fields
        .iter()
        .map(|field| {
            let child_path = if path.is_empty() {
                field.name.clone()
            } else {
                format!("{path}.{}", field.name)
            };
            (field.name.clone(), Column::new(&field.kind, child_path, rows))
        })
        .collect()
}

/// Appends one document's fields to the columns of its struct: a missing field is null, a field
/// without a column is skipped, and a repeated key keeps its last value.
fn push_fields(
    children: &mut [(String, Column)],
    document: &RawDocument,
    reading: &Reading,
) -> std::result::Result<(), Stop> {
    let row = children.first().map_or(0, |(_, child)| child.len);
    // Documents of one query mostly list their fields in the schema's order: look where the last
    // key matched first.
    let mut next = 0;
    // Elements, not (key, value) pairs: a field without a column is skipped unparsed.
    for element in document.iter_elements() {
        let element = element.map_err(|_| Stop::Malformed)?;
        let key = element.key().as_str();
        let index = match children.get(next) {
            Some((name, _)) if name == key => next,
            _ => match children.iter().position(|(name, _)| name == key) {
                Some(index) => index,
                None => continue,
            },
        };
        next = index + 1;
        let child = &mut children[index].1;
        // A repeated key: its last value wins, as in js-bson's documents.
        if child.len > row {
            child.truncate(row);
        }
        let value = element.value().map_err(|_| Stop::Malformed)?;
        child.push(Some(value), reading)?;
    }
    for (_, child) in children.iter_mut() {
        if child.len == row {
            child.push_null();
        }
    }
    Ok(())
}

/// A built batch: its rows, and its columns' mismatches (`OnMismatch::Null`).
pub struct BuiltBatch {
    pub batch: RecordBatch,
    pub mismatches: Vec<(String, u64)>,
}

/// Builds a record batch of `fields` from `documents`.
pub fn build_batch(
    fields: &[FieldSpec],
    documents: &[&RawDocument],
    on_mismatch: OnMismatch,
) -> Result<std::result::Result<BuiltBatch, TypeMismatch>> {
    let mut columns = struct_children(fields, "", documents.len());
    let mut reading = Reading { row: 0, on_mismatch };
    for document in documents {
        match push_fields(&mut columns, document, &reading) {
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
        .iter()
        .for_each(|(_, column)| column.collect_mismatches(&mut mismatches));
    let arrays: Vec<ArrayRef> = columns.into_iter().map(|(_, column)| column.finish()).collect();
    let schema = Arc::new(arrow_schema(fields));
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(reading.row));
    let batch = RecordBatch::try_new_with_options(schema, arrays, &options)
        .map_err(|_| Error::Internal("an Arrow batch's columns disagree with its schema"))?;
    Ok(Ok(BuiltBatch { batch, mismatches }))
}

/// A value's BSON type as `$type` names it.
fn bson_type_name(value: RawBsonRef) -> &'static str {
    match value {
        RawBsonRef::Double(_) => "double",
        RawBsonRef::String(_) => "string",
        RawBsonRef::Document(_) => "object",
        RawBsonRef::Array(_) => "array",
        RawBsonRef::Binary(_) => "binData",
        RawBsonRef::Undefined => "undefined",
        RawBsonRef::ObjectId(_) => "objectId",
        RawBsonRef::Boolean(_) => "bool",
        RawBsonRef::DateTime(_) => "date",
        RawBsonRef::Null => "null",
        RawBsonRef::RegularExpression(_) => "regex",
        RawBsonRef::DbPointer(_) => "dbPointer",
        RawBsonRef::JavaScriptCode(_) => "javascript",
        RawBsonRef::Symbol(_) => "symbol",
        RawBsonRef::JavaScriptCodeWithScope(_) => "javascriptWithScope",
        RawBsonRef::Int32(_) => "int",
        RawBsonRef::Timestamp(_) => "timestamp",
        RawBsonRef::Int64(_) => "long",
        RawBsonRef::Decimal128(_) => "decimal",
        RawBsonRef::MinKey => "minKey",
        RawBsonRef::MaxKey => "maxKey",
    }
}
