//! How a raw server batch is handed to JavaScript: the one seam between the cursor and the decoder.

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

/// Copies the documents out of the server reply (off the JS thread) into one contiguous buffer.
pub fn encode_batch(batch: &RawBatch) -> Result<DocumentBatch> {
    let array = batch.doc_slices()?;
    let mut documents = Vec::with_capacity(array.as_bytes().len());
    let mut count = 0u32;
    for element in array {
        let document = element?
            .as_document()
            .ok_or_else(|| Error::InvalidResponse("a cursor batch holds a value that is not a document"))?;
        documents.extend_from_slice(document.as_bytes());
        count += 1;
    }
    Ok(DocumentBatch { documents: documents.into(), count })
}
