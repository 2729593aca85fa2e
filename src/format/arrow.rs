//! Arrow batches (`findArrow`, `ts/format/arrow.ts`): a batch of raw BSON documents becomes one
//! Arrow record batch, built on the rayon pool and handed to JS as an Arrow IPC stream.

mod builder;
mod schema;

use std::{
    collections::HashMap,
    ops::Range,
    sync::{Arc, Mutex, OnceLock},
};

use arrow_ipc::writer::StreamWriter;
use napi::{
    bindgen_prelude::{External, FromNapiRef, JsValue, PromiseRaw, Unknown},
    Env,
};
use napi_derive::napi;
use rayon::prelude::*;

use self::{
    builder::{build_batch, OnMismatch},
    schema::{arrow_schema, infer_schema, parse_schema, schema_json, FieldSpec},
};
use crate::{
    error::{Error, Result},
    format::SharedReply,
    handover::Bytes,
    task::{on_rayon, spawn},
};

/// How an encoder builds its batches (see `ArrowOptions` in `ts/format/arrow.ts`).
#[napi(object)]
pub struct ArrowEncoderOptions {
    /// The columns, as JSON `[{ name, type }]`; absent: inferred from the first non-empty batch.
    pub schema: Option<String>,
    /// Inferred ObjectId columns as 24 hex digits (utf8) instead of 12 bytes.
    pub object_id_hex: bool,
    /// A value whose type does not fit its column fails the batch instead of becoming null. Without
    /// it, an inferred schema still fails on a value its column would have widened to hold
    /// (`OnMismatch::Inferred`).
    pub mismatch_error: bool,
}

/// A value whose type does not fit its column (`mismatchError`); no batch is built.
#[napi(object, object_from_js = false)]
pub struct ArrowTypeMismatch {
    pub path: String,
    /// The document's index in the batch.
    pub row: u32,
    pub expected: String,
    pub found: String,
}

/// How many values of a column were nulled because their type did not fit.
#[napi(object, object_from_js = false)]
pub struct ArrowMismatchCount {
    pub path: String,
    pub count: f64,
}

/// Encoded documents as an Arrow IPC stream: its schema message, record batches, end of stream.
#[napi(object, object_from_js = false)]
pub struct ArrowBatch {
    #[napi(ts_type = "Buffer")]
    pub ipc: Option<Bytes>,
    /// Length of the schema message at the start of `ipc`: a stream of several encodes is the
    /// first one without its last 8 bytes (end of stream), then each next one's record batches.
    pub schema_bytes: u32,
    pub rows: u32,
    /// Record batches in `ipc`.
    pub record_batches: u32,
    /// The schema's fields as JSON (`[{ name, type }]`).
    pub schema: String,
    pub mismatches: Vec<ArrowMismatchCount>,
    pub type_mismatch: Option<ArrowTypeMismatch>,
}

/// A server batch's documents on their way from a cursor to an encoder (`BatchOutput::ArrowRaw`):
/// the reply they lie in and where. JS holds it as an opaque `External`, not a Buffer: V8 counts a
/// Buffer's bytes as external memory and collects garbage for them (most of the JS thread's time
/// in a large `findArrow`), while an `External` it sizes as nothing. `encode` takes the documents
/// out, so the reply is freed once encoded, not when JS collects the handle, and a handle encodes
/// once.
pub struct RawBatch(Mutex<Option<ReplyDocuments>>);

/// Documents where they lie in a server reply.
pub struct ReplyDocuments {
    reply: SharedReply,
    ranges: Vec<Range<usize>>,
}

impl ReplyDocuments {
    fn documents(&self) -> impl Iterator<Item = &[u8]> {
        let bytes = (*self.reply).as_ref();
        self.ranges.iter().map(move |range| &bytes[range.clone()])
    }
}

impl RawBatch {
    /// The `documents`, which lie in `reply` (their length prefix and terminator checked, see
    /// `batch::array_documents`).
    pub fn in_reply(reply: &SharedReply, documents: &[&[u8]]) -> Self {
        let base = (**reply).as_ref().as_ptr() as usize;
        let ranges = documents
            .iter()
            .map(|document| {
                let start = document.as_ptr() as usize - base;
                start..start + document.len()
            })
            .collect();
        RawBatch(Mutex::new(Some(ReplyDocuments {
            reply: reply.clone(),
            ranges,
        })))
    }

    /// The documents of every raw batch of `handles`, taken out of them; none taken when one of
    /// them is refused (not a raw batch, already encoded, or given twice), so that a refused call
    /// leaves the others encodable.
    fn take_all(env: &Env, handles: &[Unknown]) -> Result<Vec<ReplyDocuments>> {
        let mut taken = Vec::with_capacity(handles.len());
        for handle in handles {
            match Self::slot(env, handle, |slot| slot.take()) {
                Ok(Some(documents)) => taken.push(documents),
                refused => {
                    for (handle, documents) in handles.iter().zip(taken) {
                        Self::slot(env, handle, |slot| *slot = Some(documents))?;
                    }
                    refused?;
                    return Err(Error::InvalidArgument(
                        "encode: this raw batch was already encoded".into(),
                    ));
                }
            }
        }
        Ok(taken)
    }

    /// Runs `with` on the bytes slot of the raw batch `handle`.
    fn slot<T>(
        env: &Env,
        handle: &Unknown,
        with: impl FnOnce(&mut Option<ReplyDocuments>) -> T,
    ) -> Result<T> {
        // SAFETY: `from_napi_ref` checks that the value is an `External` this addon made of a
        // `RawBatch`; JS cannot free it while `encode` runs, which holds it in `parts`. The
        // reference lives only for this call (a handle given twice is reached twice, one after
        // the other).
        let batch =
            unsafe { External::<RawBatch>::from_napi_ref(env.raw(), handle.raw()) }.map_err(|_| {
                Error::InvalidArgument("encode: parts must be raw batches of an Arrow cursor".into())
            })?;
        let mut slot = batch
            .0
            .lock()
            .map_err(|_| Error::Internal("a raw batch's lock is poisoned"))?;
        Ok(with(&mut slot))
    }
}

/// Builds the Arrow batches of one query, all with the same schema.
#[napi]
pub struct NativeArrowEncoder {
    state: Arc<EncoderState>,
}

struct EncoderState {
    /// Given, or inferred from the first non-empty batch encoded.
    fields: OnceLock<Vec<FieldSpec>>,
    object_id_hex: bool,
    on_mismatch: OnMismatch,
    /// A whole call's IPC stream (`encode` with `append`): the schema message, then every record
    /// batch in the order encoded, ended by `finish_stream`. Held here rather than handed to JS
    /// batch by batch: JS wraps one stream once, and the bytes are never concatenated or held twice.
    stream: Mutex<HeldStream>,
}

/// The stream of `append` encodes, written in place: each record batch is serialised straight into
/// it (serialising it apart and then appending copied the ~58 MB of a 100k wide45 table once more,
/// into memory freshly faulted in, session 12).
#[derive(Default)]
struct HeldStream {
    /// Started by the first append, with the schema message.
    writer: Option<StreamWriter<Vec<u8>>>,
    /// Length of the schema message at the start of the stream.
    schema_bytes: usize,
}

#[napi]
impl NativeArrowEncoder {
    #[napi(constructor, catch_unwind)]
    pub fn new(options: ArrowEncoderOptions) -> napi::Result<Self> {
        let fields = OnceLock::new();
        if let Some(schema) = &options.schema {
            let _ = fields.set(parse_schema(schema)?);
        }
        let on_mismatch = match (options.mismatch_error, options.schema.is_some()) {
            (true, _) => OnMismatch::Error,
            (false, true) => OnMismatch::Null,
            // An inferred column never nulls a value it would have widened to hold (see
            // `OnMismatch::Inferred`): the schema is fixed by the first batch, and a later double
            // in a column the first batch saw as int32 cannot change the stream's schema.
            (false, false) => OnMismatch::Inferred,
        };
        Ok(Self {
            state: Arc::new(EncoderState {
                fields,
                object_id_hex: options.object_id_hex,
                on_mismatch,
                stream: Mutex::default(),
            }),
        })
    }

    /// Encodes raw cursor batches as one Arrow IPC stream: `parts[i]` is a `RawBatch` of
    /// `counts[i]` BSON documents, whose bytes it takes. One record batch, or with `split` one per
    /// rayon thread (see `split_by_bytes`), built in parallel. The first non-empty batch of an
    /// encoder without a schema fixes its schema: encode it before the others. With `append`, the
    /// record batches join the encoder's stream (see `finish_stream`) instead of `ipc`.
    #[napi(catch_unwind, ts_return_type = "Promise<ArrowBatch>")]
    pub fn encode<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "ExternalObject<'RawBatch'>[]")] parts: Vec<Unknown<'env>>,
        counts: Vec<u32>,
        split: bool,
        append: bool,
    ) -> napi::Result<PromiseRaw<'env, ArrowBatch>> {
        if parts.len() != counts.len() {
            return Err(Error::InvalidArgument("encode: one count per part".into()).into());
        }
        let parts = RawBatch::take_all(env, &parts)?;
        let state = self.state.clone();
        spawn(
            env,
            on_rayon(move || {
                let mut documents = Vec::with_capacity(counts.iter().map(|&count| count as usize).sum());
                for (part, &count) in parts.iter().zip(&counts) {
                    if part.ranges.len() != count as usize {
                        return Err(Error::InvalidArgument("encode: a count is not its part's".into()));
                    }
                    documents.extend(part.documents());
                }
                state.encode(&documents, split, append)
            }),
        )
    }

    /// The stream the `append` encodes built: its schema message (with `metadata`, JSON
    /// `{ key: value }`, when given), their record batches, the end of stream. The encoder's
    /// stream is empty after.
    #[napi(catch_unwind, ts_return_type = "Promise<Buffer>")]
    pub fn finish_stream<'env>(
        &self,
        env: &'env Env,
        metadata: Option<String>,
    ) -> napi::Result<PromiseRaw<'env, Bytes>> {
        let state = self.state.clone();
        spawn(env, on_rayon(move || state.finish_stream(metadata)))
    }
}

impl EncoderState {
    /// Builds `documents` into record batches: as an IPC stream of their own in `ipc`, or with
    /// `append` written into the held stream (`ipc` then absent).
    fn encode(&self, documents: &[&[u8]], split: bool, append: bool) -> Result<ArrowBatch> {
        let inferred;
        let fields = match (self.fields.get(), documents.is_empty()) {
            (Some(fields), _) => fields,
            // An empty batch before any other leaves the schema open (a `batchSize: 0` find).
            (None, true) => {
                inferred = Vec::new();
                &inferred
            }
            (None, false) => {
                let fields = infer_schema(documents.iter().copied(), self.object_id_hex)?;
                self.fields.get_or_init(|| fields)
            }
        };
        let chunks = if split {
            split_by_bytes(documents)
        } else {
            vec![documents]
        };
        // Each chunk's first row, to report a mismatch's row in the whole encode.
        let firsts: Vec<usize> = chunks
            .iter()
            .scan(0, |row, chunk| {
                let first = *row;
                *row += chunk.len();
                Some(first)
            })
            .collect();
        let built: Vec<_> = chunks
            .par_iter()
            .map(|chunk| build_batch(fields, chunk, self.on_mismatch))
            .collect();
        let mut batches = Vec::with_capacity(built.len());
        let mut mismatches: Vec<(String, u64)> = Vec::new();
        for (built, first) in built.into_iter().zip(firsts) {
            match built? {
                Ok(built) => {
                    for (path, count) in built.mismatches {
                        match mismatches.iter_mut().find(|(known, _)| *known == path) {
                            Some((_, total)) => *total += count,
                            None => mismatches.push((path, count)),
                        }
                    }
                    batches.push(built.batch);
                }
                Err(mismatch) => {
                    return Ok(ArrowBatch {
                        ipc: None,
                        schema_bytes: 0,
                        rows: 0,
                        record_batches: 0,
                        schema: schema_json(fields).to_string(),
                        mismatches: Vec::new(),
                        type_mismatch: Some(ArrowTypeMismatch {
                            path: mismatch.path,
                            row: (first + mismatch.row) as u32,
                            expected: mismatch.expected.to_owned(),
                            found: mismatch.found.to_owned(),
                        }),
                    })
                }
            }
        }
        let (ipc, schema_bytes) = match append {
            true => (None, self.append(fields, &batches)?),
            false => {
                let (ipc, schema_bytes) = write_ipc(fields, &batches)?;
                (Some(ipc.into()), schema_bytes)
            }
        };
        Ok(ArrowBatch {
            ipc,
            schema_bytes,
            rows: documents.len() as u32,
            record_batches: batches.len() as u32,
            schema: schema_json(fields).to_string(),
            mismatches: mismatches
                .into_iter()
                .map(|(path, count)| ArrowMismatchCount {
                    path,
                    count: count as f64,
                })
                .collect(),
            type_mismatch: None,
        })
    }
}

impl EncoderState {
    /// Writes `batches` at the end of the held stream (started with the schema message of `fields`
    /// by the first call); returns the length of that schema message.
    fn append(&self, fields: &[FieldSpec], batches: &[arrow_array::RecordBatch]) -> Result<u32> {
        const FAILED: Error = Error::Internal("writing an Arrow IPC stream failed");
        let mut held = self
            .stream
            .lock()
            .map_err(|_| Error::Internal("an Arrow stream's lock is poisoned"))?;
        let HeldStream { writer, schema_bytes } = &mut *held;
        let writer = match writer {
            Some(writer) => writer,
            None => {
                let mut started =
                    StreamWriter::try_new(Vec::new(), &arrow_schema(fields)).map_err(|_| FAILED)?;
                started.flush().map_err(|_| FAILED)?;
                *schema_bytes = started.get_ref().len();
                writer.insert(started)
            }
        };
        for batch in batches {
            writer.write(batch).map_err(|_| FAILED)?;
        }
        Ok(*schema_bytes as u32)
    }

    fn finish_stream(&self, metadata: Option<String>) -> Result<Bytes> {
        const FAILED: Error = Error::Internal("writing an Arrow IPC stream failed");
        let held = {
            let mut held = self
                .stream
                .lock()
                .map_err(|_| Error::Internal("an Arrow stream's lock is poisoned"))?;
            std::mem::take(&mut *held)
        };
        let started = held.writer.is_some();
        let mut bytes = match held.writer {
            Some(mut writer) => {
                writer.finish().map_err(|_| FAILED)?;
                writer.into_inner().map_err(|_| FAILED)?
            }
            None => Vec::new(),
        };
        if metadata.is_some() || !started {
            let metadata: HashMap<String, String> = match metadata {
                Some(json) => serde_json::from_str(&json).map_err(|_| {
                    Error::InvalidArgument("Arrow stream metadata must be JSON of strings".into())
                })?,
                None => HashMap::new(),
            };
            let fields = self.fields.get().map_or(&[][..], Vec::as_slice);
            let schema = arrow_schema(fields).with_metadata(metadata);
            let mut head = Vec::new();
            let mut writer = StreamWriter::try_new(&mut head, &schema).map_err(|_| FAILED)?;
            writer.flush().map_err(|_| FAILED)?;
            drop(writer);
            // The schema message is replaced in place: the record batches after it move once.
            bytes.splice(..held.schema_bytes, head);
            if !started {
                bytes.extend_from_slice(&END_OF_STREAM);
            }
        }
        bytes.shrink_to_fit();
        Ok(Bytes(bytes))
    }
}

/// The 8 bytes that end an Arrow IPC stream: a continuation marker and a zero length.
const END_OF_STREAM: [u8; 8] = [0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0];

/// The least BSON per record batch of a split encode. apache-arrow's JS side pays for every record
/// batch (objects for each of its columns): a 100k-document wide45 `findArrow` in 42 record batches
/// (2 MiB chunks) kept the JS thread busy 51-58 ms, in 14 (8 MiB) 32-35 ms (session 12).
const MIN_SPLIT_BYTES: usize = 4 * 1024 * 1024;

/// `documents` in one chunk per rayon thread (built in parallel), each of at least
/// `MIN_SPLIT_BYTES` of BSON.
fn split_by_bytes<'a, 'b>(documents: &'b [&'a [u8]]) -> Vec<&'b [&'a [u8]]> {
    let total: usize = documents.iter().map(|document| document.len()).sum();
    let chunk_bytes = total
        .div_ceil(rayon::current_num_threads().max(1))
        .max(MIN_SPLIT_BYTES);
    let mut chunks = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (index, document) in documents.iter().enumerate() {
        bytes += document.len();
        if bytes >= chunk_bytes {
            chunks.push(&documents[start..=index]);
            (start, bytes) = (index + 1, 0);
        }
    }
    if start < documents.len() || chunks.is_empty() {
        chunks.push(&documents[start..]);
    }
    chunks
}

/// The batches as an IPC stream, and the length of its schema message.
fn write_ipc(fields: &[FieldSpec], batches: &[arrow_array::RecordBatch]) -> Result<(Vec<u8>, u32)> {
    const FAILED: Error = Error::Internal("writing an Arrow IPC stream failed");
    let schema = arrow_schema(fields);
    let body: usize = batches
        .iter()
        .flat_map(|batch| batch.columns())
        .map(|column| column.get_buffer_memory_size())
        .sum();
    let mut ipc = Vec::with_capacity(body + 1024);
    let mut writer = StreamWriter::try_new(&mut ipc, &schema).map_err(|_| FAILED)?;
    writer.flush().map_err(|_| FAILED)?;
    let schema_bytes = writer.get_ref().len() as u32;
    for batch in batches {
        writer.write(batch).map_err(|_| FAILED)?;
    }
    writer.finish().map_err(|_| FAILED)?;
    drop(writer);
    // Reserved from the builders' capacities, which exceed their lengths: JS holds the Buffer as
    // long as its record batch lives.
    ipc.shrink_to_fit();
    Ok((ipc, schema_bytes))
}
