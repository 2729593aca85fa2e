//! How a raw server batch is handed to JavaScript: the one seam between the cursor and the decoder.

use std::{collections::VecDeque, ops::Range, sync::Arc};

use bson::RawArray;
use mongodb::raw_batch_cursor::RawBatch;
use tokio::sync::oneshot;

use crate::{
    error::{Error, Result},
    format::{encode_documents, BatchOutput, DocumentBatch, SharedReply},
    handover::Bytes,
    raw::{cstring_end, document_length},
    task::{catching_panics, on_rayon, send_from_rayon},
};

/// JSON replies up to this size are transcoded on the tokio worker that received them (tens of
/// microseconds of work); larger ones on the rayon pool. Handing a small batch to rayon and back
/// costs two thread wake-ups, which on a lightly loaded (virtual) machine take longer than the
/// encoding: a 1,000-document find spent most of its time waiting for them. Also the size of the
/// parts a cursor's first reply is split into (see `encode_reply_in_parts`).
const INLINE_ENCODE_BYTES: usize = 128 * 1024;

/// The first part of a reply encoded in parts (see `encode_reply_in_parts`).
const FIRST_PART_BYTES: usize = 32 * 1024;

/// A server reply, shared by the batches encoded from it (see `SharedReply`).
struct Reply(RawBatch);

impl AsRef<[u8]> for Reply {
    fn as_ref(&self) -> &[u8] {
        self.0.as_raw_document().as_bytes()
    }
}

/// A batch being encoded; its sender is dropped only if the encoder stopped.
pub type PendingBatch = oneshot::Receiver<Result<DocumentBatch>>;

/// Tapes and lazy indexes of getMore replies up to this size are built on the tokio worker that
/// received them: the hand-off to rayon and back cost more than it saved (100k-document finds
/// 6-20% faster without it, BENCHMARKS.md session 8). Larger ones (a caller's large `batchSize`) go
/// to rayon, so that no tokio worker is busy for more than a few milliseconds.
const INLINE_TAPE_BYTES: usize = 2 * 1024 * 1024;

/// Encodes a getMore reply off the JS thread, on the tokio worker that received it or on the rayon
/// pool (a large JSON reply is transcoded in parallel chunks, which a tokio worker would block on).
/// `last` says no batch can follow it; `keep`, how many of its documents the cursor may still
/// return (a client-side `limit`), the rest being dropped.
pub async fn encode_batch(
    batch: RawBatch,
    output: BatchOutput,
    last: bool,
    keep: Option<usize>,
) -> Result<DocumentBatch> {
    let inline_limit = match output {
        BatchOutput::RelaxedJson | BatchOutput::PlainJson => INLINE_ENCODE_BYTES,
        BatchOutput::Tape | BatchOutput::Raw | BatchOutput::Lazy | BatchOutput::ArrowRaw => INLINE_TAPE_BYTES,
    };
    let reply = Arc::new(Reply(batch));
    if (*reply).as_ref().len() <= inline_limit {
        return catching_panics(|| encode_reply(reply, output, last, keep));
    }
    on_rayon(move || encode_reply(reply, output, last, keep)).await
}

/// Encodes a reply larger than `INLINE_ENCODE_BYTES` as several batches, in order: a small first
/// one on this tokio worker, which JS can decode while the rayon pool encodes the others (about
/// `INLINE_ENCODE_BYTES` each) in parallel. For a reply JS waits for with nothing else to do: a
/// cursor's first, and every reply of a change stream, which reads nothing ahead. Encoding a whole
/// 1,000-document reply before JS may start took longer than decoding it in JS. Returns what
/// encodes the first batch (and then starts the others), and the others.
pub fn encode_reply_in_parts(
    batch: RawBatch,
    output: BatchOutput,
    last: bool,
    keep: Option<usize>,
) -> Result<(impl FnOnce() -> Result<DocumentBatch>, VecDeque<PendingBatch>)> {
    let reply = batch.as_raw_document().as_bytes();
    let mut parts = Vec::new();
    let (mut part, mut part_bytes) = (Vec::new(), 0);
    // A reply small enough to encode inline is one part: splitting it would gain nothing.
    let split = reply.len() > INLINE_ENCODE_BYTES;
    for document in document_slices(&batch, keep)? {
        // Where the document is in the reply, so rayon tasks can find it in their shared copy.
        let start = document.as_ptr() as usize - reply.as_ptr() as usize;
        part.push(start..start + document.len());
        part_bytes += document.len();
        // A smaller first part: JS starts sooner, while the others are encoded.
        let part_limit = if parts.is_empty() {
            FIRST_PART_BYTES
        } else {
            INLINE_ENCODE_BYTES
        };
        if split && part_bytes >= part_limit {
            parts.push(std::mem::take(&mut part));
            part_bytes = 0;
        }
    }
    if !part.is_empty() || parts.is_empty() {
        parts.push(part);
    }
    let cursor_id = reply_cursor_id(&batch)?;
    let has_more = !last && cursor_id != 0;
    let count = parts.len();
    // How many documents the parts after each one hold (what a change stream counts as buffered).
    let mut documents_after = vec![0u32; count];
    for index in (0..count.saturating_sub(1)).rev() {
        documents_after[index] = documents_after[index + 1] + parts[index + 1].len() as u32;
    }
    // Only on the last part: the token stands for the point after the reply's last document.
    let mut resume = resume_fields(&batch);
    let mut last_part_fields = move |index: usize| (index + 1 == count).then(|| resume.take()).flatten();
    let finish = move |encoded: Result<DocumentBatch>, index: usize, resume: Option<Vec<u8>>, after: u32| {
        encoded.map(|batch| DocumentBatch {
            has_more: has_more || index + 1 < count,
            reply_parts_left: (count - index - 1) as u32,
            reply_documents_left: after,
            cursor_id: Some(cursor_id.into()),
            resume_fields: resume.map(Bytes),
            ..batch
        })
    };
    let reply: SharedReply = Arc::new(Reply(batch));
    let encode = move |ranges: &[Range<usize>]| {
        let bytes = (*reply).as_ref();
        let documents: Vec<&[u8]> = ranges.iter().map(|range| &bytes[range.clone()]).collect();
        encode_documents(&documents, output, &reply)
    };
    let mut parts = parts.into_iter().enumerate();
    let (_, first_part) = parts.next().expect("a reply has at least one part");
    let (senders, rest): (Vec<_>, VecDeque<_>) = parts
        .map(|part| {
            let (sender, receiver) = oneshot::channel();
            ((part, sender), receiver)
        })
        .unzip();
    // The others start once the first is done: started at once, they took the cores the first
    // needed (a 50-document part waited up to 1 ms).
    let encode_first = move || {
        let first_fields = last_part_fields(0);
        let first = catching_panics(|| finish(encode(&first_part), 0, first_fields, documents_after[0]));
        for ((index, ranges), sender) in senders {
            let encode = encode.clone();
            let (fields, after) = (last_part_fields(index), documents_after[index]);
            send_from_rayon(sender, move || finish(encode(&ranges), index, fields, after));
        }
        first
    };
    Ok((encode_first, rest))
}

fn encode_reply(
    reply: Arc<Reply>,
    output: BatchOutput,
    last: bool,
    keep: Option<usize>,
) -> Result<DocumentBatch> {
    let batch = &reply.0;
    let shared: SharedReply = reply.clone();
    let mut encoded = encode_documents(&document_slices(batch, keep)?, output, &shared)?;
    let cursor_id = reply_cursor_id(batch)?;
    encoded.has_more = !last && cursor_id != 0;
    encoded.cursor_id = Some(cursor_id.into());
    encoded.resume_fields = resume_fields(batch).map(Bytes);
    Ok(encoded)
}

/// The fields of a change stream's reply it resumes from (`DocumentBatch::resume_fields`), as a
/// BSON document built here: its `postBatchResumeToken` and `operationTime`. `None` for a reply
/// without the token, which every change stream reply has (servers from 4.0.7): a find's or an
/// aggregate's batches on a replica set, which carry an `operationTime`, get no Buffer to create.
fn resume_fields(batch: &RawBatch) -> Option<Vec<u8>> {
    let reply = batch.as_raw_document();
    let token = reply
        .get_document("cursor")
        .ok()?
        .get_document("postBatchResumeToken")
        .ok()?;
    let operation_time = reply.get_timestamp("operationTime").ok();
    let mut fields = vec![0; 4];
    fields.push(0x03);
    fields.extend_from_slice(b"postBatchResumeToken\0");
    fields.extend_from_slice(token.as_bytes());
    if let Some(time) = operation_time {
        fields.push(0x11);
        fields.extend_from_slice(b"operationTime\0");
        fields.extend_from_slice(&time.increment.to_le_bytes());
        fields.extend_from_slice(&time.time.to_le_bytes());
    }
    fields.push(0);
    let length = fields.len() as i32;
    fields[..4].copy_from_slice(&length.to_le_bytes());
    Some(fields)
}

/// Whether the server closed the cursor with this reply (a malformed reply counts as not).
pub fn is_last_reply(batch: &RawBatch) -> bool {
    matches!(reply_cursor_id(batch), Ok(0))
}

fn reply_cursor_id(batch: &RawBatch) -> Result<i64> {
    Ok(batch.as_raw_document().get_document("cursor")?.get_i64("id")?)
}

/// The documents of a reply's batch, where they are.
fn document_slices(batch: &RawBatch, keep: Option<usize>) -> Result<Vec<&[u8]>> {
    let mut documents = array_documents(batch.doc_slices()?)?;
    if let Some(keep) = keep {
        documents.truncate(keep);
    }
    Ok(documents)
}

/// How many documents a reply holds.
pub fn document_count(batch: &RawBatch) -> Result<usize> {
    Ok(document_slices(batch, None)?.len())
}

/// The documents of a BSON array, where they are. Reads the framing only: the bson crate's
/// iterator also checks every key and builds every value, ~6% of the JSON transcoder's time on a
/// large batch. Each document is checked as the crate checks it (a length of at least 5 within
/// the array, a zero last byte); its contents are the decoders' business.
pub fn array_documents(array: &RawArray) -> Result<Vec<&[u8]>> {
    const MALFORMED: Error = Error::MalformedBson("a cursor batch's framing is broken");
    const NOT_A_DOCUMENT: Error =
        Error::InvalidResponse("a cursor batch holds a value that is not a document");
    let bytes = array.as_bytes();
    let mut documents = Vec::new();
    let mut position = 4;
    loop {
        match bytes.get(position) {
            Some(0) if position + 1 == bytes.len() => return Ok(documents),
            Some(0x03) => {}
            Some(0) | None => return Err(MALFORMED),
            Some(_) => return Err(NOT_A_DOCUMENT),
        }
        let start = cstring_end(bytes, position + 1).map_err(|_| MALFORMED)? + 1;
        let length = document_length(bytes, start).map_err(|_| MALFORMED)?;
        documents.push(&bytes[start..start + length]);
        position = start + length;
    }
}
