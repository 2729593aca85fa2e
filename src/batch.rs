//! How a raw server batch is handed to JavaScript: the one seam between the cursor and the decoder.

use bson::RawArray;
use mongodb::raw_batch_cursor::RawBatch;
use napi::bindgen_prelude::Buffer;
use napi_derive::napi;

use crate::error::{Error, Result};

/// One server batch: its documents' BSON back to back, decoded on the JS side.
#[napi(object)]
pub struct DocumentBatch {
    pub documents: Buffer,
    pub count: u32,
}

/// Encodes a server reply's batch (off the JS thread).
pub fn encode_batch(batch: &RawBatch) -> Result<DocumentBatch> {
    encode_documents(batch.doc_slices()?)
}

/// Encodes the batch in a BSON document `{ batch: [doc, ...] }` the way a server reply's
/// `firstBatch` is encoded: lets tests feed values the dev server cannot store through the same path.
#[napi]
pub fn encode_test_batch(reply: Buffer) -> napi::Result<DocumentBatch> {
    let reply = bson::RawDocument::from_bytes(reply.as_ref()).map_err(Error::from)?;
    Ok(encode_documents(reply.get_array("batch").map_err(Error::from)?)?)
}

/// Copies the documents into one contiguous buffer.
fn encode_documents(array: &RawArray) -> Result<DocumentBatch> {
    let mut documents = Vec::with_capacity(array.as_bytes().len());
    let mut count = 0u32;
    for element in array {
        let document = element?
            .as_document()
            .ok_or_else(|| Error::InvalidResponse("a cursor batch holds a value that is not a document"))?;
        documents.extend_from_slice(document.as_bytes());
        count += 1;
    }
    Ok(DocumentBatch {
        documents: documents.into(),
        count,
    })
}
