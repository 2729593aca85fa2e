//! Arrow batches (`findArrow`, `ts/format/arrow.ts`): a batch of raw BSON documents becomes one
//! Arrow record batch, built on the rayon pool and handed to JS as an Arrow IPC stream.

mod builder;
mod schema;

use std::sync::{Arc, OnceLock};

use arrow_ipc::writer::StreamWriter;
use napi::{
    bindgen_prelude::{Buffer, PromiseRaw},
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
    handover::Bytes,
    raw,
    task::{on_rayon, spawn},
};

/// How an encoder builds its batches (see `ArrowOptions` in `ts/format/arrow.ts`).
#[napi(object)]
pub struct ArrowEncoderOptions {
    /// The columns, as JSON `[{ name, type }]`; absent: inferred from the first non-empty batch.
    pub schema: Option<String>,
    /// Inferred ObjectId columns as 24 hex digits (utf8) instead of 12 bytes.
    pub object_id_hex: bool,
    /// A value whose type does not fit its column fails the batch instead of becoming null.
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
}

#[napi]
impl NativeArrowEncoder {
    #[napi(constructor, catch_unwind)]
    pub fn new(options: ArrowEncoderOptions) -> napi::Result<Self> {
        let fields = OnceLock::new();
        if let Some(schema) = &options.schema {
            let _ = fields.set(parse_schema(schema)?);
        }
        let on_mismatch = match options.mismatch_error {
            true => OnMismatch::Error,
            false => OnMismatch::Null,
        };
        Ok(Self {
            state: Arc::new(EncoderState {
                fields,
                object_id_hex: options.object_id_hex,
                on_mismatch,
            }),
        })
    }

    /// Encodes raw cursor batches as one Arrow IPC stream: `parts[i]` holds `counts[i]` BSON
    /// documents back to back. One record batch, or with `split` one per `SPLIT_BYTES` of BSON,
    /// built in parallel. The first non-empty batch of an encoder without a schema fixes its
    /// schema: encode it before the others.
    #[napi(catch_unwind, ts_return_type = "Promise<ArrowBatch>")]
    pub fn encode<'env>(
        &self,
        env: &'env Env,
        parts: Vec<Buffer>,
        counts: Vec<u32>,
        split: bool,
    ) -> napi::Result<PromiseRaw<'env, ArrowBatch>> {
        if parts.len() != counts.len() {
            return Err(Error::InvalidArgument("encode: one count per part".into()).into());
        }
        let state = self.state.clone();
        spawn(
            env,
            on_rayon(move || {
                let mut documents = Vec::with_capacity(counts.iter().map(|&count| count as usize).sum());
                for (part, &count) in parts.iter().zip(&counts) {
                    split_documents(part, count as usize, &mut documents)?;
                }
                state.encode(&documents, split)
            }),
        )
    }
}

impl EncoderState {
    fn encode(&self, documents: &[&[u8]], split: bool) -> Result<ArrowBatch> {
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
        let (ipc, schema_bytes) = write_ipc(fields, &batches)?;
        Ok(ArrowBatch {
            ipc: Some(ipc.into()),
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

/// BSON per record batch of a split encode: chunks small enough to build on every core, large
/// enough that a batch's own cost (its IPC message, apache-arrow's objects) stays small.
const SPLIT_BYTES: usize = 2 * 1024 * 1024;

/// `documents` in chunks of about `SPLIT_BYTES` of BSON.
fn split_by_bytes<'a, 'b>(documents: &'b [&'a [u8]]) -> Vec<&'b [&'a [u8]]> {
    let mut chunks = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (index, document) in documents.iter().enumerate() {
        bytes += document.len();
        if bytes >= SPLIT_BYTES {
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
    Ok((ipc, schema_bytes))
}

/// Adds the `count` documents stored back to back in `bytes` to `documents`, each with its length
/// prefix and terminator checked (`raw::document_length`; their elements are walked as the batch
/// is built).
fn split_documents<'a>(bytes: &'a [u8], count: usize, documents: &mut Vec<&'a [u8]>) -> Result<()> {
    let mut at = 0;
    for _ in 0..count {
        let length =
            raw::document_length(bytes, at).map_err(|_| Error::MalformedBson("invalid document length"))?;
        documents.push(&bytes[at..at + length]);
        at += length;
    }
    if at != bytes.len() {
        return Err(Error::MalformedBson("bytes left after the batch's documents"));
    }
    Ok(())
}
