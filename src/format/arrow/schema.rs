//! The column types of an Arrow batch: read from the TypeScript layer's schema (JSON, see
//! `ts/format/arrow.ts`), or inferred from the first batch of documents as PyMongoArrow does.

use std::{collections::HashMap, sync::Arc};

use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};

use crate::{
    error::{Error, Result},
    raw::{self, Malformed, Parsed},
};

/// The extension names of the columns whose Arrow storage alone does not say what they hold.
pub const OBJECT_ID_EXTENSION: &str = "rumongo.objectid";
pub const DECIMAL128_EXTENSION: &str = "rumongo.decimal128";

/// What one column holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// Only nulls were seen (inference): every other value is a mismatch.
    Null,
    Bool,
    Int32,
    Int64,
    Double,
    Utf8,
    /// BSON dates: milliseconds since the epoch, UTC.
    Timestamp,
    /// The 12 bytes (fixed-size binary with the `rumongo.objectid` extension name).
    ObjectId,
    /// 24 lowercase hex digits (utf8).
    ObjectIdHex,
    /// The 16 bytes of the BSON value, IEEE 754 BID little-endian (`rumongo.decimal128`).
    Decimal128,
    Binary,
    List(Box<Kind>),
    Struct(Vec<FieldSpec>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct FieldSpec {
    pub name: String,
    pub kind: Kind,
}

impl Kind {
    /// The name a schema uses for this type (and error messages too).
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool => "bool",
            Kind::Int32 => "int32",
            Kind::Int64 => "int64",
            Kind::Double => "double",
            Kind::Utf8 => "utf8",
            Kind::Timestamp => "timestamp",
            Kind::ObjectId => "objectId",
            Kind::ObjectIdHex => "objectIdHex",
            Kind::Decimal128 => "decimal128",
            Kind::Binary => "binary",
            Kind::List(_) => "list",
            Kind::Struct(_) => "struct",
        }
    }

    fn from_name(name: &str) -> Option<Kind> {
        Some(match name {
            "null" => Kind::Null,
            "bool" => Kind::Bool,
            "int32" => Kind::Int32,
            "int64" => Kind::Int64,
            "double" => Kind::Double,
            "utf8" => Kind::Utf8,
            "timestamp" => Kind::Timestamp,
            "objectId" => Kind::ObjectId,
            "objectIdHex" => Kind::ObjectIdHex,
            "decimal128" => Kind::Decimal128,
            "binary" => Kind::Binary,
            _ => return None,
        })
    }

    /// The Arrow type of the column (extension types: their storage type, see `arrow_field`).
    pub fn data_type(&self) -> DataType {
        match self {
            Kind::Null => DataType::Null,
            Kind::Bool => DataType::Boolean,
            Kind::Int32 => DataType::Int32,
            Kind::Int64 => DataType::Int64,
            Kind::Double => DataType::Float64,
            Kind::Utf8 | Kind::ObjectIdHex => DataType::Utf8,
            Kind::Timestamp => DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            Kind::ObjectId => DataType::FixedSizeBinary(12),
            Kind::Decimal128 => DataType::FixedSizeBinary(16),
            Kind::Binary => DataType::Binary,
            Kind::List(item) => DataType::List(Arc::new(item.arrow_field(LIST_ITEM))),
            Kind::Struct(fields) => DataType::Struct(arrow_fields(fields)),
        }
    }

    /// A nullable Arrow field of this type, with the extension name of an ObjectId or Decimal128.
    pub fn arrow_field(&self, name: &str) -> Field {
        let field = Field::new(name, self.data_type(), true);
        let extension = match self {
            Kind::ObjectId => OBJECT_ID_EXTENSION,
            Kind::Decimal128 => DECIMAL128_EXTENSION,
            _ => return field,
        };
        field.with_metadata(HashMap::from([
            ("ARROW:extension:name".to_owned(), extension.to_owned()),
            ("ARROW:extension:metadata".to_owned(), String::new()),
        ]))
    }
}

/// The name of a list's item field (Arrow's usual one).
pub const LIST_ITEM: &str = "item";

pub fn arrow_fields(fields: &[FieldSpec]) -> Fields {
    fields
        .iter()
        .map(|field| field.kind.arrow_field(&field.name))
        .collect()
}

pub fn arrow_schema(fields: &[FieldSpec]) -> Schema {
    Schema::new(arrow_fields(fields))
}

/// Reads a schema the TypeScript layer built: `[{ "name": "a", "type": T }, ...]` where `T` is a
/// type name, `{ "list": T }` or `{ "struct": [fields] }`. The TypeScript layer checks the user's
/// schema first, with messages in its terms: an error here means the two disagree.
pub fn parse_schema(json: &str) -> Result<Vec<FieldSpec>> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|error| invalid(format!("Arrow schema is not JSON: {error}")))?;
    parse_fields(&value, "")
}

fn parse_fields(value: &serde_json::Value, path: &str) -> Result<Vec<FieldSpec>> {
    let fields = value
        .as_array()
        .ok_or_else(|| invalid(format!("Arrow schema{}: expected a list of fields", at(path))))?;
    let mut specs: Vec<FieldSpec> = Vec::with_capacity(fields.len());
    for field in fields {
        let name = field
            .get("name")
            .and_then(|name| name.as_str())
            .ok_or_else(|| invalid(format!("Arrow schema{}: a field without a name", at(path))))?;
        if specs.iter().any(|spec| spec.name == name) {
            return Err(invalid(format!(
                "Arrow schema{}: field '{name}' appears twice",
                at(path)
            )));
        }
        let field_path = if path.is_empty() {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        };
        let kind = parse_kind(field.get("type").unwrap_or(&serde_json::Value::Null), &field_path)?;
        specs.push(FieldSpec {
            name: name.to_owned(),
            kind,
        });
    }
    Ok(specs)
}

fn parse_kind(value: &serde_json::Value, path: &str) -> Result<Kind> {
    if let Some(name) = value.as_str() {
        return Kind::from_name(name).ok_or_else(|| {
            invalid(format!(
                "Arrow schema: field '{path}' has an unknown type '{name}'"
            ))
        });
    }
    if let Some(item) = value.get("list") {
        return Ok(Kind::List(Box::new(parse_kind(item, &format!("{path}[]"))?)));
    }
    if let Some(fields) = value.get("struct") {
        return Ok(Kind::Struct(parse_fields(fields, path)?));
    }
    Err(invalid(format!("Arrow schema: field '{path}' has no valid type")))
}

fn at(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" at '{path}'")
    }
}

fn invalid(message: String) -> Error {
    Error::InvalidArgument(message)
}

/// Infers the columns of `documents` (each one BSON document, its length prefix and terminator
/// checked) as PyMongoArrow does: every field in order of first appearance, typed by its first
/// non-null value; nested documents become structs (their fields merged the same way), arrays lists
/// (typed by their first non-null element). A field whose values are all null is a null column;
/// values of types without a column type (regular expressions, code, MinKey, ...) are left out, as
/// PyMongoArrow leaves them.
pub fn infer_schema<'a>(
    documents: impl IntoIterator<Item = &'a [u8]>,
    object_id_hex: bool,
) -> Result<Vec<FieldSpec>> {
    let mut fields = Vec::new();
    for document in documents {
        merge_document(&mut fields, document, object_id_hex)
            .map_err(|Malformed| Error::MalformedBson("a document of the batch does not parse"))?;
    }
    Ok(fields)
}

/// Merges a document's fields into `fields`: a known field refines its type, a new one is added.
fn merge_document(fields: &mut Vec<FieldSpec>, document: &[u8], object_id_hex: bool) -> Parsed<()> {
    // As in the builder: documents mostly list their fields in the same order.
    let mut next = 0;
    for element in raw::elements(document) {
        let (tag, key, value) = element?;
        let known = match fields.get(next) {
            Some(field) if field.name.as_bytes() == key => Some(next),
            _ => fields.iter().position(|field| field.name.as_bytes() == key),
        };
        if let Some(index) = known {
            next = index + 1;
            merge_value(&mut fields[index].kind, tag, value, object_id_hex)?;
        } else if let Some(kind) = value_kind(tag, value, object_id_hex)? {
            let name = std::str::from_utf8(key).map_err(|_| Malformed)?.to_owned();
            fields.push(FieldSpec { name, kind });
            next = fields.len();
        }
    }
    Ok(())
}

/// Refines `into` with another value's type: a null column takes the first type seen, structs
/// and lists merge; any other difference keeps the first type (the value is a mismatch).
fn merge_value(into: &mut Kind, tag: u8, value: &[u8], object_id_hex: bool) -> Parsed<()> {
    match (into, tag) {
        (into @ Kind::Null, _) => {
            if let Some(kind) = value_kind(tag, value, object_id_hex)? {
                *into = kind;
            }
        }
        (Kind::Struct(fields), raw::DOCUMENT) => {
            raw::document_length(value, 0)?;
            merge_document(fields, value, object_id_hex)?;
        }
        (Kind::List(item), raw::ARRAY) => merge_items(item, value, object_id_hex)?,
        _ => {}
    }
    Ok(())
}

fn merge_items(item: &mut Kind, array: &[u8], object_id_hex: bool) -> Parsed<()> {
    raw::document_length(array, 0)?;
    for element in raw::elements(array) {
        let (tag, _, value) = element?;
        merge_value(item, tag, value, object_id_hex)?;
    }
    Ok(())
}

/// The column type of one value; `None` for a type no column holds.
fn value_kind(tag: u8, value: &[u8], object_id_hex: bool) -> Parsed<Option<Kind>> {
    Ok(Some(match tag {
        raw::NULL | raw::UNDEFINED => Kind::Null,
        raw::BOOLEAN => Kind::Bool,
        raw::INT32 => Kind::Int32,
        raw::INT64 => Kind::Int64,
        raw::DOUBLE => Kind::Double,
        raw::STRING => Kind::Utf8,
        raw::DATE => Kind::Timestamp,
        raw::OBJECT_ID if object_id_hex => Kind::ObjectIdHex,
        raw::OBJECT_ID => Kind::ObjectId,
        raw::DECIMAL128 => Kind::Decimal128,
        raw::BINARY => Kind::Binary,
        raw::DOCUMENT => {
            raw::document_length(value, 0)?;
            let mut fields = Vec::new();
            merge_document(&mut fields, value, object_id_hex)?;
            Kind::Struct(fields)
        }
        raw::ARRAY => {
            let mut item = Kind::Null;
            merge_items(&mut item, value, object_id_hex)?;
            Kind::List(Box::new(item))
        }
        _ => return Ok(None),
    }))
}

/// The schema's fields as the TypeScript layer writes them (the inverse of `parse_schema`): how JS
/// learns an inferred schema.
pub fn schema_json(fields: &[FieldSpec]) -> serde_json::Value {
    serde_json::Value::Array(
        fields
            .iter()
            .map(|field| serde_json::json!({ "name": field.name, "type": kind_json(&field.kind) }))
            .collect(),
    )
}

fn kind_json(kind: &Kind) -> serde_json::Value {
    match kind {
        Kind::List(item) => serde_json::json!({ "list": kind_json(item) }),
        Kind::Struct(fields) => serde_json::json!({ "struct": schema_json(fields) }),
        _ => serde_json::Value::from(kind.name()),
    }
}
