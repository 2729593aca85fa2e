//! How a raw server batch is handed to JavaScript: the one seam between the cursor and the decoder.

use std::panic::AssertUnwindSafe;

use bson::{RawArray, RawBsonRef, RawDocument};
use mongodb::raw_batch_cursor::RawBatch;
use napi::bindgen_prelude::{BigInt, Buffer, Float64Array, Uint32Array};
use napi_derive::napi;

use crate::{
    error::{Error, Result},
    json::{self, JsonFormat},
    lazy,
    tape::Tape,
};

/// What a cursor prepares from each server batch besides its raw BSON.
#[napi(string_enum = "camelCase")]
#[derive(Clone, Copy)]
pub enum BatchOutput {
    /// The tape, for the JS decoder (`ts/decode.ts`).
    Tape,
    /// Nothing: the caller reads raw BSON (framing checked, see `lazy::walk_elements`).
    Raw,
    /// The field index of lazy documents (see `lazy.rs`).
    Lazy,
    /// JSON text as relaxed Extended JSON (see `json.rs`).
    RelaxedJson,
    /// JSON text as `JSON.stringify` of the official driver's documents.
    PlainJson,
}

/// One server batch: its documents' BSON back to back and what `BatchOutput` asked for: the same
/// documents on a tape (unless the batch holds something only js-bson decides on, see `tape.rs`),
/// or as JSON text.
#[napi(object)]
pub struct DocumentBatch {
    /// The documents' BSON back to back; with a JSON output, only those in `json_deferred`.
    pub documents: Buffer,
    pub count: u32,
    /// Whether the server cursor has more batches (worth asking for the next one ahead of time).
    pub has_more: bool,
    /// The server cursor's id as of this batch (0 once exhausted); absent for test batches.
    pub cursor_id: Option<BigInt>,
    pub slots: Option<Float64Array>,
    pub latin1: Option<Buffer>,
    pub utf16: Option<Buffer>,
    pub extras: Option<Buffer>,
    pub shapes: Option<String>,
    /// The documents as JSON, comma-separated, without brackets.
    pub json: Option<Buffer>,
    /// Documents JS renders into `json` itself: triples of (offset in `json`, offset and length
    /// in `documents`).
    pub json_deferred: Option<Uint32Array>,
    /// Where each document's fields start, and its shape (see `lazy::index_documents`).
    pub lazy_index: Option<Uint32Array>,
}

/// Replies up to this size are encoded on the tokio worker that received them (tens of
/// microseconds of work); larger ones on the rayon pool. Handing a small batch to rayon and back
/// costs two thread wake-ups, which on a lightly loaded (virtual) machine take longer than the
/// encoding: a 1,000-document find spent most of its time waiting for them.
const INLINE_ENCODE_BYTES: usize = 128 * 1024;

/// Encodes a server reply's batch off the JS thread: on the rayon pool, keeping CPU work off the
/// tokio workers that serve I/O, unless it is small. `last` says no batch can follow it.
pub async fn encode_batch(batch: RawBatch, output: BatchOutput, last: bool) -> Result<DocumentBatch> {
    if batch.as_raw_document().as_bytes().len() <= INLINE_ENCODE_BYTES {
        return catching_panics(|| encode_reply(&batch, output, last));
    }
    on_rayon(move || encode_reply(&batch, output, last)).await
}

/// Runs `work` on the rayon pool; a panic in it becomes an internal error.
pub async fn on_rayon<T: Send + 'static>(work: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    rayon::spawn(move || {
        let _ = sender.send(catching_panics(work));
    });
    receiver
        .await
        .unwrap_or(Err(Error::Internal("the batch decoder stopped")))
}

/// Runs `work`; a panic in it becomes an internal error.
fn catching_panics<T>(work: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(AssertUnwindSafe(work))
        .unwrap_or(Err(Error::Internal("decoding a batch panicked")))
}

fn encode_reply(batch: &RawBatch, output: BatchOutput, last: bool) -> Result<DocumentBatch> {
    let mut encoded = encode_documents(batch.doc_slices()?, output)?;
    let cursor_id = batch.as_raw_document().get_document("cursor")?.get_i64("id")?;
    encoded.has_more = !last && cursor_id != 0;
    encoded.cursor_id = Some(cursor_id.into());
    Ok(encoded)
}

/// Encodes the batch in a BSON document `{ batch: [doc, ...] }` the way a server reply's
/// `firstBatch` is encoded: lets tests and benchmarks feed any bytes through the same path.
#[napi(catch_unwind)]
pub fn encode_test_batch(reply: Buffer, output: BatchOutput) -> napi::Result<DocumentBatch> {
    let reply = bson::RawDocument::from_bytes(reply.as_ref()).map_err(Error::from)?;
    Ok(encode_documents(
        reply.get_array("batch").map_err(Error::from)?,
        output,
    )?)
}

/// Transcodes the documents to JSON where they are, or copies them into one contiguous buffer
/// (which JS keeps) and tapes or indexes them.
fn encode_documents(array: &RawArray, output: BatchOutput) -> Result<DocumentBatch> {
    let json_format = match output {
        BatchOutput::RelaxedJson => Some(JsonFormat::Relaxed),
        BatchOutput::PlainJson => Some(JsonFormat::Plain),
        _ => None,
    };
    if let Some(format) = json_format {
        let documents = array
            .into_iter()
            .map(|element| Ok(batch_document(element?)?.as_bytes()))
            .collect::<Result<Vec<&[u8]>>>()?;
        let json = json::transcode(&documents, format);
        return Ok(DocumentBatch {
            json: Some(json.text.into()),
            json_deferred: Some(Uint32Array::new(json.deferred)),
            ..DocumentBatch::of(json.deferred_bson, documents.len() as u32)
        });
    }
    let mut documents = Vec::with_capacity(array.as_bytes().len());
    let mut count = 0u32;
    for element in array {
        let document = batch_document(element?)?;
        if matches!(output, BatchOutput::Raw) {
            lazy::walk_elements(document.as_bytes(), |_, _| {})?;
        }
        documents.extend_from_slice(document.as_bytes());
        count += 1;
    }
    let tape = match output {
        BatchOutput::Tape => Tape::encode(&documents, count as usize).ok(),
        _ => None,
    };
    let lazy_index = match output {
        BatchOutput::Lazy => Some(Uint32Array::new(lazy::index_documents(
            &documents,
            count as usize,
        )?)),
        _ => None,
    };
    let shapes = tape.as_ref().map(Tape::shapes_json);
    let (slots, latin1, utf16, extras) = match tape {
        Some(tape) => (
            Some(Float64Array::new(tape.slots)),
            Some(tape.latin1.into()),
            Some(tape.utf16.into()),
            Some(tape.extras.into()),
        ),
        None => (None, None, None, None),
    };
    Ok(DocumentBatch {
        slots,
        latin1,
        utf16,
        extras,
        shapes,
        lazy_index,
        ..DocumentBatch::of(documents, count)
    })
}

impl DocumentBatch {
    /// `count` documents in `documents`, with no other output (yet).
    fn of(documents: Vec<u8>, count: u32) -> Self {
        DocumentBatch {
            documents: documents.into(),
            count,
            has_more: false,
            cursor_id: None,
            slots: None,
            latin1: None,
            utf16: None,
            extras: None,
            shapes: None,
            json: None,
            json_deferred: None,
            lazy_index: None,
        }
    }
}

/// A batch element, which must be a document.
fn batch_document(element: RawBsonRef<'_>) -> Result<&RawDocument> {
    element.as_document().ok_or(Error::InvalidResponse(
        "a cursor batch holds a value that is not a document",
    ))
}
