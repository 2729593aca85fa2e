//! How a raw server batch is handed to JavaScript: the one seam between the cursor and the decoder.

use std::panic::AssertUnwindSafe;

use bson::RawArray;
use mongodb::raw_batch_cursor::RawBatch;
use napi::bindgen_prelude::{Buffer, Float64Array};
use napi_derive::napi;

use crate::{
    error::{Error, Result},
    tape::Tape,
};

/// One server batch: its documents' BSON back to back and, unless raw BSON was asked for or the
/// batch holds something only js-bson decides on (see `tape.rs`), the same documents on a tape.
#[napi(object)]
pub struct DocumentBatch {
    pub documents: Buffer,
    pub count: u32,
    /// Whether the server cursor has more batches (worth asking for the next one ahead of time).
    pub has_more: bool,
    pub slots: Option<Float64Array>,
    pub ascii: Option<Buffer>,
    pub utf8: Option<Buffer>,
    pub extras: Option<Buffer>,
    pub shapes: Option<String>,
}

/// Encodes a server reply's batch on the rayon pool, keeping CPU work off both the JS thread and
/// the tokio workers that serve I/O. `last` says no batch can follow it.
pub async fn encode_batch(batch: RawBatch, tape: bool, last: bool) -> Result<DocumentBatch> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    rayon::spawn(move || {
        let encoded = std::panic::catch_unwind(AssertUnwindSafe(|| encode_reply(&batch, tape, last)))
            .unwrap_or(Err(Error::Internal("decoding a batch panicked")));
        let _ = sender.send(encoded);
    });
    receiver
        .await
        .unwrap_or(Err(Error::Internal("the batch decoder stopped")))
}

fn encode_reply(batch: &RawBatch, tape: bool, last: bool) -> Result<DocumentBatch> {
    let mut encoded = encode_documents(batch.doc_slices()?, tape)?;
    let cursor_id = batch.as_raw_document().get_document("cursor")?.get_i64("id")?;
    encoded.has_more = !last && cursor_id != 0;
    Ok(encoded)
}

/// Encodes the batch in a BSON document `{ batch: [doc, ...] }` the way a server reply's
/// `firstBatch` is encoded: lets tests and benchmarks feed any bytes through the same path.
#[napi]
pub fn encode_test_batch(reply: Buffer, tape: bool) -> napi::Result<DocumentBatch> {
    let reply = bson::RawDocument::from_bytes(reply.as_ref()).map_err(Error::from)?;
    Ok(encode_documents(
        reply.get_array("batch").map_err(Error::from)?,
        tape,
    )?)
}

/// Copies the documents into one contiguous buffer, then tapes them.
fn encode_documents(array: &RawArray, tape: bool) -> Result<DocumentBatch> {
    let mut documents = Vec::with_capacity(array.as_bytes().len());
    let mut count = 0u32;
    for element in array {
        let document = element?.as_document().ok_or(Error::InvalidResponse(
            "a cursor batch holds a value that is not a document",
        ))?;
        documents.extend_from_slice(document.as_bytes());
        count += 1;
    }
    let tape = if tape {
        Tape::encode(&documents, count as usize).ok()
    } else {
        None
    };
    let shapes = tape.as_ref().map(Tape::shapes_json);
    let (slots, ascii, utf8, extras) = match tape {
        Some(tape) => (
            Some(Float64Array::new(tape.slots)),
            Some(tape.ascii.into()),
            Some(tape.utf8.into()),
            Some(tape.extras.into()),
        ),
        None => (None, None, None, None),
    };
    Ok(DocumentBatch {
        documents: documents.into(),
        count,
        has_more: false,
        slots,
        ascii,
        utf8,
        extras,
        shapes,
    })
}
