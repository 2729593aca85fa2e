//! The column types of an Arrow batch: read from the TypeScript layer's schema (JSON, see
//! `ts/format/arrow.ts`), or inferred from the first batch of documents as PyMongoArrow does, with
//! numeric columns widened over every value seen.

use std::{collections::HashMap, sync::Arc};

use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};
use napi_derive::napi;

use crate::{
    error::{Error, Result},
    raw::{self, Malformed},
};

/// The extension names of the columns whose Arrow storage alone does not say what they hold.
pub const OBJECT_ID_EXTENSION: &str = "rumongo.objectid";
pub const DECIMAL128_EXTENSION: &str = "rumongo.decimal128";

/// How deep Arrow columns nest: a top-level column is at level 1, a struct's field or a list's item
/// one level below its parent. Deeper schemas are refused, given or inferred: Arrow C++ (pyarrow)
/// reads 64 levels at most, arrow-rs's flatbuffer check a few less, and every step over a schema
/// (building, writing, apache-arrow's reading) recurses per level. Real documents rarely nest a
/// tenth of this; a reply nested 1,500 levels crashed inference (issue #32). Exported to the
/// TypeScript layer, which checks a given schema first (`nativeFields`).
#[napi]
pub const MAX_ARROW_NESTING: u32 = 32;

const MAX_LEVEL: usize = MAX_ARROW_NESTING as usize;

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

    /// Whether inference would have typed a column of this kind to hold a value of BSON type `tag`
    /// had it seen it: a number for a numeric column (int32, int64 and double widen into each
    /// other), any value that has a column type for a column only null so far. In an inferred
    /// schema such a value that still does not fit (it came after the schema was fixed by the
    /// first batch, or no numeric type holds every value exactly) fails the read: nulling it would
    /// lose a number only because of the order documents came in.
    pub fn takes_family(&self, tag: u8) -> bool {
        match self {
            Kind::Null => scalar_kind(tag, false).is_some() || matches!(tag, raw::DOCUMENT | raw::ARRAY),
            Kind::Int32 | Kind::Int64 | Kind::Double => matches!(tag, raw::INT32 | raw::INT64 | raw::DOUBLE),
            _ => false,
        }
    }

    /// The numeric type that holds this column's values and a value of BSON type `tag` too, when
    /// it is wider than this one: int32 -> int64 -> double (an int64 beyond 2^53 does not fit a
    /// double: the builder refuses it there, it is never rounded).
    fn widened_for(&self, tag: u8) -> Option<Kind> {
        match (self, tag) {
            (Kind::Int32, raw::INT64) => Some(Kind::Int64),
            (Kind::Int32 | Kind::Int64, raw::DOUBLE) => Some(Kind::Double),
            _ => None,
        }
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
/// schema first, with messages in its terms: an error here means the two disagree. Its nesting is
/// bounded twice: by serde_json's recursion limit (128 JSON levels, three per schema level), then
/// by `MAX_ARROW_NESTING`.
pub fn parse_schema(json: &str) -> Result<Vec<FieldSpec>> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|error| invalid(format!("Arrow schema is not JSON: {error}")))?;
    parse_fields(&value, "", 1)
}

/// The fields of a struct (or the top level) whose fields are at `level`.
fn parse_fields(value: &serde_json::Value, path: &str, level: usize) -> Result<Vec<FieldSpec>> {
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
        let kind = parse_kind(
            field.get("type").unwrap_or(&serde_json::Value::Null),
            &field_path,
            level,
        )?;
        specs.push(FieldSpec {
            name: name.to_owned(),
            kind,
        });
    }
    Ok(specs)
}

/// The type of the column at `path`, at `level`.
fn parse_kind(value: &serde_json::Value, path: &str, level: usize) -> Result<Kind> {
    if level > MAX_LEVEL {
        return Err(too_deep(path));
    }
    if let Some(name) = value.as_str() {
        return Kind::from_name(name).ok_or_else(|| {
            invalid(format!(
                "Arrow schema: field '{path}' has an unknown type '{name}'"
            ))
        });
    }
    if let Some(item) = value.get("list") {
        return Ok(Kind::List(Box::new(parse_kind(
            item,
            &format!("{path}[]"),
            level + 1,
        )?)));
    }
    if let Some(fields) = value.get("struct") {
        return Ok(Kind::Struct(parse_fields(fields, path, level + 1)?));
    }
    Err(invalid(format!("Arrow schema: field '{path}' has no valid type")))
}

/// The error for a given schema's column nested deeper than `MAX_ARROW_NESTING` (as the
/// TypeScript layer words it).
fn too_deep(path: &str) -> Error {
    invalid(format!(
        "Arrow schema: field '{path}' is nested deeper than {MAX_ARROW_NESTING} levels (each struct or \
         list is one), which rumongo does not build"
    ))
}

/// The error for a field of the results that would be a column nested deeper than
/// `MAX_ARROW_NESTING` (inference).
fn inferred_too_deep(path: &str) -> Error {
    invalid(format!(
        "Arrow columns nest at most {MAX_ARROW_NESTING} levels (each struct or list is one), but field \
         '{path}' of the results is deeper: give a schema that leaves it out (a field the schema does \
         not list is not read)"
    ))
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
/// (typed by their first non-null element). Numeric columns widen over every value of the batch
/// (int32 -> int64 -> double): JavaScript writes `10` as an int32 and `10.5` as a double, so a
/// field of JS numbers is first seen int32 as often as not. A field whose values are all null is a
/// null column; values of types without a column type (regular expressions, code, MinKey, ...) are
/// left out, as PyMongoArrow leaves them. Nesting is bounded (`MAX_ARROW_NESTING`): a document
/// nested deeper fails with an `InvalidArgument` naming the field, walking no further than the
/// limit, and each struct's fields are found by name in a hash index (so in time linear in the
/// batch, whatever the depth or width).
pub fn infer_schema<'a>(
    documents: impl IntoIterator<Item = &'a [u8]>,
    object_id_hex: bool,
) -> Result<Vec<FieldSpec>> {
    let mut fields = SeenFields::default();
    for document in documents {
        merge_document(&mut fields, document, object_id_hex, 1).map_err(|stop| match stop {
            InferStop::Malformed => Error::MalformedBson("a document of the batch does not parse"),
            InferStop::TooDeep(mut components) => {
                components.reverse();
                inferred_too_deep(&join_path(&components))
            }
        })?;
    }
    Ok(fields.into_specs())
}

/// A column's type while inference runs: its `Kind`, with each struct's fields indexed by name.
enum Seen {
    /// A column of no list or struct type (`Kind::Null` while only nulls were seen).
    Leaf(Kind),
    List(Box<Seen>),
    Struct(SeenFields),
}

/// The fields of a struct (or of the documents) seen so far, in order of first appearance.
#[derive(Default)]
struct SeenFields {
    names: Vec<String>,
    columns: Vec<Seen>,
    /// Each name's index: a key that is not where the last one left off is found without a scan
    /// (a scan per new key made a document of 40,000 fields take 2 s to infer, 10,000 0.1 s).
    index: HashMap<Box<[u8]>, usize>,
}

impl SeenFields {
    /// The index of the field named `key`, looked for at `next` first: documents mostly list
    /// their fields in the same order.
    fn find(&self, key: &[u8], next: usize) -> Option<usize> {
        match self.names.get(next) {
            Some(name) if name.as_bytes() == key => Some(next),
            _ => self.index.get(key).copied(),
        }
    }

    fn push(&mut self, key: &[u8], column: Seen) -> std::result::Result<(), InferStop> {
        let name = std::str::from_utf8(key).map_err(|_| Malformed)?.to_owned();
        self.index.insert(key.into(), self.names.len());
        self.names.push(name);
        self.columns.push(column);
        Ok(())
    }

    fn into_specs(self) -> Vec<FieldSpec> {
        self.names
            .into_iter()
            .zip(self.columns)
            .map(|(name, column)| FieldSpec {
                name,
                kind: column.into_kind(),
            })
            .collect()
    }
}

impl Seen {
    fn into_kind(self) -> Kind {
        match self {
            Seen::Leaf(kind) => kind,
            Seen::List(item) => Kind::List(Box::new(item.into_kind())),
            Seen::Struct(fields) => Kind::Struct(fields.into_specs()),
        }
    }
}

/// Why inference stopped.
enum InferStop {
    Malformed,
    /// A column would nest deeper than `MAX_ARROW_NESTING`: its path's components, the deepest
    /// first (each level adds its own as the error passes through it).
    TooDeep(Vec<String>),
}

impl From<Malformed> for InferStop {
    fn from(_: Malformed) -> Self {
        InferStop::Malformed
    }
}

/// The component a list's item adds to a path.
const ITEM_COMPONENT: &str = "[]";

/// A path's components as the builder writes paths: `a.b` for a struct's field, `a[]` for a list's
/// items.
fn join_path(components: &[String]) -> String {
    let mut path = String::new();
    for component in components {
        if !path.is_empty() && component != ITEM_COMPONENT {
            path.push('.');
        }
        path.push_str(component);
    }
    path
}

/// Adds `component` to the path of a `TooDeep` passing through.
fn within(component: &[u8], stop: InferStop) -> InferStop {
    match stop {
        InferStop::TooDeep(mut components) => {
            components.push(String::from_utf8_lossy(component).into_owned());
            InferStop::TooDeep(components)
        }
        stop => stop,
    }
}

/// Merges a document's fields, which are at `level`, into `fields`: a known field refines its
/// type, a new one is added.
fn merge_document(
    fields: &mut SeenFields,
    document: &[u8],
    object_id_hex: bool,
    level: usize,
) -> std::result::Result<(), InferStop> {
    let mut next = 0;
    for element in raw::elements(document) {
        let (tag, key, value) = element?;
        if let Some(index) = fields.find(key, next) {
            next = index + 1;
            merge_value(&mut fields.columns[index], tag, value, object_id_hex, level)
                .map_err(|stop| within(key, stop))?;
        } else if let Some(column) =
            value_seen(tag, value, object_id_hex, level).map_err(|stop| within(key, stop))?
        {
            fields.push(key, column)?;
            next = fields.names.len();
        }
    }
    Ok(())
}

/// Refines `into`, a column at `level`, with another value's type: a null column takes the first
/// type seen, numbers widen (`Kind::widened_for`), structs and lists merge; any other difference
/// keeps the column's type (the value is a mismatch).
fn merge_value(
    into: &mut Seen,
    tag: u8,
    value: &[u8],
    object_id_hex: bool,
    level: usize,
) -> std::result::Result<(), InferStop> {
    match (&mut *into, tag) {
        (Seen::Leaf(Kind::Null), _) => {
            if let Some(column) = value_seen(tag, value, object_id_hex, level)? {
                *into = column;
            }
        }
        (Seen::Struct(fields), raw::DOCUMENT) => {
            raw::document_length(value, 0)?;
            merge_document(fields, value, object_id_hex, level + 1)?;
        }
        (Seen::List(item), raw::ARRAY) => merge_items(item, value, object_id_hex, level + 1)?,
        (Seen::Leaf(kind), tag) => {
            if let Some(wider) = kind.widened_for(tag) {
                *kind = wider;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Merges an array's elements into `item`, a list's item column at `level`.
fn merge_items(
    item: &mut Seen,
    array: &[u8],
    object_id_hex: bool,
    level: usize,
) -> std::result::Result<(), InferStop> {
    raw::document_length(array, 0)?;
    for element in raw::elements(array) {
        let (tag, _, value) = element?;
        merge_value(item, tag, value, object_id_hex, level)
            .map_err(|stop| within(ITEM_COMPONENT.as_bytes(), stop))?;
    }
    Ok(())
}

/// The column type of a value that is neither a document nor an array; `None` for a type no
/// column holds.
fn scalar_kind(tag: u8, object_id_hex: bool) -> Option<Kind> {
    Some(match tag {
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
        _ => return None,
    })
}

/// The column type of one value, for a new column at `level`; `None` for a type no column holds.
/// A column deeper than `MAX_ARROW_NESTING` (a list's item is one level below the list) is
/// refused before anything within it is read.
fn value_seen(
    tag: u8,
    value: &[u8],
    object_id_hex: bool,
    level: usize,
) -> std::result::Result<Option<Seen>, InferStop> {
    Ok(match tag {
        raw::DOCUMENT | raw::ARRAY if level > MAX_LEVEL => return Err(InferStop::TooDeep(Vec::new())),
        raw::ARRAY if level == MAX_LEVEL => return Err(InferStop::TooDeep(vec![ITEM_COMPONENT.to_owned()])),
        raw::DOCUMENT => {
            raw::document_length(value, 0)?;
            let mut fields = SeenFields::default();
            merge_document(&mut fields, value, object_id_hex, level + 1)?;
            Some(Seen::Struct(fields))
        }
        raw::ARRAY => {
            let mut item = Seen::Leaf(Kind::Null);
            merge_items(&mut item, value, object_id_hex, level + 1)?;
            Some(Seen::List(Box::new(item)))
        }
        _ => match scalar_kind(tag, object_id_hex) {
            Some(_) if level > MAX_LEVEL => return Err(InferStop::TooDeep(Vec::new())),
            kind => kind.map(Seen::Leaf),
        },
    })
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
