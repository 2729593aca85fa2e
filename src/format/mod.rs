//! The batch formats: what a cursor prepares from each server batch for JavaScript, one module a
//! format, each mirrored by `ts/format/<name>.ts` that decodes it in JS:
//! - `tape`: documents pre-decoded into numbers and string areas (the default);
//! - `json`: JSON text (`findJson`, `pipeJson`);
//! - `lazy`: a field index over the documents' BSON (`findLazy`);
//! - `raw`: the documents' BSON (`raw: true`);
//! - `arrow`: Arrow record batches (`findArrow`), built by an encoder that holds the query's schema
//!   (inferred from its first batch), so it is a second step after the cursor: the cursor's
//!   `BatchOutput::ArrowRaw` batches carry only the BSON, as a handle the encoder takes.
//!
//! Adding a format: a module here and its arm in `encode_documents`, a `BatchOutput` variant (and
//! the `DocumentBatch` fields it hands over), and its decoder in `ts/format/` registered in
//! `ts/format/index.ts`.

pub mod arrow;
pub mod json;
pub mod lazy;
pub mod raw;
pub mod tape;

use std::sync::Arc;

use napi::bindgen_prelude::{BigInt, External};
use napi_derive::napi;

use crate::{
    error::Result,
    handover::{Bytes, F64s, TextBuffer, U32s},
};
use arrow::RawBatch;
use json::JsonFormat;
use tape::Tape;

/// What a cursor prepares from each server batch besides its raw BSON.
#[napi(string_enum = "camelCase")]
#[derive(Clone, Copy)]
pub enum BatchOutput {
    /// The tape, for the JS decoder (`tape.rs`, `ts/format/tape.ts`).
    Tape,
    /// Nothing: the caller reads raw BSON (framing checked, see `raw.rs`, `ts/format/raw.ts`).
    Raw,
    /// The field index of lazy documents (`lazy.rs`, `ts/format/lazy.ts`).
    Lazy,
    /// JSON text as relaxed Extended JSON (`json.rs`, `ts/format/json.ts`).
    RelaxedJson,
    /// JSON text as `JSON.stringify` of the official driver's documents.
    PlainJson,
    /// The documents' BSON for the Arrow encoder, in `raw_batch` (see `arrow::RawBatch`).
    ArrowRaw,
}

/// One server batch: its documents' BSON back to back and what `BatchOutput` asked for: the same
/// documents on a tape (unless the batch holds something only js-bson decides on, see `tape.rs`),
/// as JSON text, or with the lazy index.
// Flat, each format's fields optional, rather than a napi structured enum (a `payload` object per
// format): that creates and fills a second JS object for every batch, and a small read (a
// `findOne`) is one batch, on the per-query path the JS thread pays for. Measured with the tape's
// fields in a structured enum (callgrind, serial `findOne`, session 11): napi's part of handing the
// batch over grew by 3.4k instructions a query (a second object, its discriminant string, its
// properties defined apart), 0.5% of the ~690k a `findOne` costs the process. Which fields are set
// follows from the `BatchOutput` the cursor asked for, which its format's decoder knows.
#[napi(object, object_from_js = false)]
pub struct DocumentBatch {
    /// The documents' BSON back to back; with a JSON output, only those in `json_deferred`; with a
    /// tape, none (the tape holds what it needs in `extras`); with `ArrowRaw`, none (`raw_batch`).
    /// Absent when there are none (a tape batch): see `non_empty`.
    #[napi(ts_type = "Buffer")]
    pub documents: Option<Bytes>,
    pub count: u32,
    /// The documents' BSON size in bytes (what sizes the next batches of the same query, see
    /// `ts/cursor/batch_size.ts`).
    pub document_bytes: u32,
    /// Whether the server cursor has more batches (worth asking for the next one ahead of time).
    pub has_more: bool,
    /// How many of the next batches hold more of the same server reply (a large first reply is
    /// encoded in parts, see `batch::encode_reply_in_parts`): they are already fetched, so JS asks for
    /// them on top of its read-ahead, and the next getMore starts while they are encoded.
    pub reply_parts_left: u32,
    /// How many documents those next batches hold (the rest of the reply, which a change stream's
    /// `bufferedCount()` counts, as the official driver's counts the whole reply).
    pub reply_documents_left: u32,
    /// The server cursor's id as of this batch (0 once exhausted); absent for test batches.
    pub cursor_id: Option<BigInt>,
    /// What a change stream resumes from, as a BSON document: the reply's
    /// `cursor.postBatchResumeToken` and its `operationTime`, for a reply with the token (a change
    /// stream's). Set on the last batch of a reply only: the token stands for the point after the
    /// reply's last document.
    #[napi(ts_type = "Buffer")]
    pub resume_fields: Option<Bytes>,
    #[napi(ts_type = "Float64Array")]
    pub slots: Option<F64s>,
    #[napi(ts_type = "Buffer")]
    pub latin1: Option<Bytes>,
    #[napi(ts_type = "Buffer")]
    pub utf16: Option<Bytes>,
    #[napi(ts_type = "Buffer")]
    pub extras: Option<Bytes>,
    pub shapes: Option<String>,
    /// The documents as JSON, comma-separated, without brackets, in parts to concatenate (a large
    /// batch is transcoded on several threads).
    #[napi(ts_type = "Buffer[]")]
    pub json: Option<Vec<TextBuffer>>,
    /// Documents JS renders into `json` itself: triples of (offset in the concatenated `json`,
    /// offset and length in `documents`).
    #[napi(ts_type = "Uint32Array")]
    pub json_deferred: Option<U32s>,
    /// Where each document's fields start, and its shape (see `lazy::index_documents`).
    #[napi(ts_type = "Uint32Array")]
    pub lazy_index: Option<U32s>,
    /// The documents' BSON for an Arrow encoder, as a handle JS only passes back (see `RawBatch`).
    #[napi(ts_type = "ExternalObject<'RawBatch'>")]
    pub raw_batch: Option<External<RawBatch>>,
}

/// The bytes a batch's documents lie in (a server reply), shared by the batches made of it: the
/// Arrow encoder's raw batches keep it and where the documents are instead of a copy of them.
pub type SharedReply = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Transcodes or tapes the documents where they are, or hands them on in `reply` (`ArrowRaw`);
/// otherwise (lazy and raw outputs, or a batch the tape refuses) copies them into one contiguous
/// buffer, which JS keeps.
pub fn encode_documents(
    documents: &[&[u8]],
    output: BatchOutput,
    reply: &SharedReply,
) -> Result<DocumentBatch> {
    let json_format = match output {
        BatchOutput::RelaxedJson => Some(JsonFormat::Relaxed),
        BatchOutput::PlainJson => Some(JsonFormat::Plain),
        _ => None,
    };
    if let Some(format) = json_format {
        let json = json::transcode(documents, format);
        return Ok(DocumentBatch {
            json: Some(json.parts.into_iter().map(TextBuffer).collect()),
            json_deferred: Some(U32s(json.deferred)),
            ..DocumentBatch::of(json.deferred_bson, documents)
        });
    }
    if let BatchOutput::Tape = output {
        // The tape carries what JS needs from the BSON (ObjectId bytes, untaped documents).
        if let Ok(tape) = Tape::encode(documents) {
            return Ok(DocumentBatch {
                shapes: Some(tape.shapes_json()),
                slots: Some(F64s(tape.slots)),
                // An empty area stays undefined in JS: a zero-length Buffer costs as much to
                // create as a small one, and most batches have no UTF-16 text.
                latin1: non_empty(tape.latin1),
                utf16: non_empty(tape.utf16),
                extras: non_empty(tape.extras),
                ..DocumentBatch::of(Vec::new(), documents)
            });
        }
    }
    if let BatchOutput::ArrowRaw = output {
        // Neither copied nor walked here: the encoder walks every element, framing included. The
        // copy and the walk were a fifth of the Rust side of a large `findArrow` (session 12).
        return Ok(DocumentBatch {
            raw_batch: Some(External::new(RawBatch::in_reply(reply, documents))),
            ..DocumentBatch::of(Vec::new(), documents)
        });
    }
    if let BatchOutput::Raw = output {
        raw::check_framing(documents)?;
    }
    let mut bytes = Vec::with_capacity(documents.iter().map(|document| document.len()).sum());
    for document in documents {
        bytes.extend_from_slice(document);
    }
    let lazy_index = match output {
        BatchOutput::Lazy => Some(U32s(lazy::index_documents(&bytes, documents.len())?)),
        _ => None,
    };
    Ok(DocumentBatch {
        lazy_index,
        ..DocumentBatch::of(bytes, documents)
    })
}

fn non_empty(bytes: Vec<u8>) -> Option<Bytes> {
    (!bytes.is_empty()).then(|| bytes.into())
}

impl DocumentBatch {
    /// A batch of `documents` handing over `bytes` (see `documents`), with no other output (yet).
    pub(crate) fn of(bytes: Vec<u8>, documents: &[&[u8]]) -> Self {
        DocumentBatch {
            documents: non_empty(bytes),
            count: documents.len() as u32,
            // A reply is at most 48 MB.
            document_bytes: documents.iter().map(|document| document.len()).sum::<usize>() as u32,
            has_more: false,
            reply_parts_left: 0,
            reply_documents_left: 0,
            cursor_id: None,
            resume_fields: None,
            slots: None,
            latin1: None,
            utf16: None,
            extras: None,
            shapes: None,
            json: None,
            json_deferred: None,
            lazy_index: None,
            raw_batch: None,
        }
    }
}
