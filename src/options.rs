//! Reading operation options from the BSON document the TypeScript layer builds.
//!
//! The TS side validates and names options exactly as the official driver does, then serializes
//! them with js-bson so that every BSON value (Long, Decimal128, dates in `let`, ...) arrives intact.
//! Each operation takes the keys it understands; `finish` rejects whatever is left so an option is
//! never silently ignored.

use std::{sync::Arc, time::Duration};

use bson::{Bson, Document};
use mongodb::options::{Collation, Hint, ReadConcern, ReadPreference, SelectionCriteria};

use crate::error::{Error, Result};

/// Parses a BSON document handed over from JS.
pub fn document_from_bytes(bytes: &[u8]) -> Result<Document> {
    Ok(Document::from_reader(bytes)?)
}

/// A BSON document from JS, parsed where it is used rather than on the JS thread.
///
/// Parsing builds a `Document` (a `String` key and a map entry per element): the `$in` filter of
/// 10,000 ids a Mongoose `populate` sends took ~9M instructions of the JS thread (callgrind,
/// session 17), a tenth of what rumongo added to the JS thread over a driver costing nothing, while
/// the JS thread then only waits for the reply. Copying the bytes is a `memcpy`; the parse runs on
/// the runtime's thread, once per attempt (where the `Document` used to be cloned for each).
#[derive(Clone)]
pub struct DeferredDocument(Arc<[u8]>);

impl DeferredDocument {
    pub fn new(bytes: &[u8]) -> Self {
        Self(Arc::from(bytes))
    }

    pub fn parse(&self) -> Result<Document> {
        document_from_bytes(&self.0)
    }
}

/// The options of one operation call, consumed key by key.
pub struct OperationOptions {
    doc: Document,
    operation: &'static str,
}

impl OperationOptions {
    pub fn from_bytes(bytes: &[u8], operation: &'static str) -> Result<Self> {
        Ok(Self {
            doc: document_from_bytes(bytes)?,
            operation,
        })
    }

    fn invalid(&self, key: &str, expected: &str) -> Error {
        Error::InvalidArgument(format!("{} option '{key}' must be {expected}", self.operation))
    }

    /// Removes `key`; BSON null counts as absent, like `undefined` in the official driver.
    pub fn any(&mut self, key: &str) -> Option<Bson> {
        match self.doc.remove(key) {
            None | Some(Bson::Null) => None,
            value => value,
        }
    }

    pub fn bool(&mut self, key: &str) -> Result<Option<bool>> {
        match self.any(key) {
            None => Ok(None),
            Some(Bson::Boolean(value)) => Ok(Some(value)),
            Some(_) => Err(self.invalid(key, "a boolean")),
        }
    }

    pub fn int(&mut self, key: &str) -> Result<Option<i64>> {
        match self.any(key) {
            None => Ok(None),
            Some(Bson::Int32(value)) => Ok(Some(value.into())),
            Some(Bson::Int64(value)) => Ok(Some(value)),
            Some(Bson::Double(value)) if value.fract() == 0.0 && value.abs() < 9.007_199_254_740_992e15 => {
                Ok(Some(value as i64))
            }
            Some(_) => Err(self.invalid(key, "an integer")),
        }
    }

    pub fn non_negative(&mut self, key: &str) -> Result<Option<u64>> {
        match self.int(key)? {
            Some(value) if value < 0 => Err(self.invalid(key, "a non-negative integer")),
            value => Ok(value.map(|value| value as u64)),
        }
    }

    pub fn batch_size(&mut self) -> Result<Option<u32>> {
        match self.non_negative("batchSize")? {
            Some(value) => u32::try_from(value)
                .ok()
                .filter(|value| i32::try_from(*value).is_ok())
                .map(Some)
                .ok_or_else(|| self.invalid("batchSize", "a 32-bit integer")),
            None => Ok(None),
        }
    }

    pub fn millis(&mut self, key: &str) -> Result<Option<Duration>> {
        Ok(self.non_negative(key)?.map(Duration::from_millis))
    }

    pub fn document(&mut self, key: &str) -> Result<Option<Document>> {
        match self.any(key) {
            None => Ok(None),
            Some(Bson::Document(value)) => Ok(Some(value)),
            Some(_) => Err(self.invalid(key, "a document")),
        }
    }

    pub fn hint(&mut self) -> Result<Option<Hint>> {
        match self.any("hint") {
            None => Ok(None),
            Some(Bson::String(name)) => Ok(Some(Hint::Name(name))),
            Some(Bson::Document(keys)) => Ok(Some(Hint::Keys(keys))),
            Some(_) => Err(self.invalid("hint", "an index name or a key document")),
        }
    }

    pub fn collation(&mut self) -> Result<Option<Collation>> {
        match self.document("collation")? {
            None => Ok(None),
            Some(doc) => bson::deserialize_from_document(doc)
                .map(Some)
                .map_err(|error| Error::InvalidArgument(format!("invalid collation: {error}"))),
        }
    }

    /// `readPreference` as `{ mode, tagSets?, maxStalenessSeconds?, hedge? }` (the TS layer
    /// normalizes a mode string or the official driver's `ReadPreference` to that shape).
    pub fn read_preference(&mut self) -> Result<Option<SelectionCriteria>> {
        match self.document("readPreference")? {
            None => Ok(None),
            Some(doc) => bson::deserialize_from_document::<ReadPreference>(doc)
                .map(|preference| Some(SelectionCriteria::ReadPreference(preference)))
                .map_err(|error| Error::InvalidArgument(format!("invalid readPreference: {error}"))),
        }
    }

    /// `readConcern` as `{ level }`.
    pub fn read_concern(&mut self) -> Result<Option<ReadConcern>> {
        match self.document("readConcern")? {
            None => Ok(None),
            Some(doc) => bson::deserialize_from_document(doc)
                .map(Some)
                .map_err(|error| Error::InvalidArgument(format!("invalid readConcern: {error}"))),
        }
    }

    /// Fails on any option this operation did not take.
    pub fn finish(self) -> Result<()> {
        match self.doc.keys().next() {
            None => Ok(()),
            Some(key) => Err(Error::InvalidArgument(format!(
                "{} does not support the option '{key}'",
                self.operation
            ))),
        }
    }
}
