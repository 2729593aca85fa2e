//! `NativeCollection`: the read operations of one collection.

use std::sync::Arc;

use bson::{doc, Bson, Document};
use mongodb::options::{
    AggregateOptions, CountOptions, CursorType, DistinctOptions, EstimatedDocumentCountOptions, FindOptions,
};
use napi::{
    bindgen_prelude::{Buffer, PromiseRaw},
    Env,
};
use napi_derive::napi;

use crate::{
    client_state::ClientState,
    cursor::OpenedCursor,
    error::{Error, Result},
    format::BatchOutput,
    operation::{CursorStart, Opens, Operation, ReadyOperation},
    options::{document_from_bytes, DeferredDocument, OperationOptions},
    session::{open_driver_cursor, SessionSlot},
};

#[napi]
pub struct NativeCollection {
    collection: mongodb::Collection<Document>,
    client: Arc<ClientState>,
}

impl NativeCollection {
    pub fn new(collection: mongodb::Collection<Document>, client: Arc<ClientState>) -> Self {
        Self { collection, client }
    }
}

#[napi]
impl NativeCollection {
    /// Runs `find`; resolves to its first batch and, while the server has more, its cursor.
    /// `filter` and `options` are BSON documents built by the TypeScript layer; `output` says what
    /// each batch is prepared as.
    #[napi(catch_unwind, ts_return_type = "Promise<OpenedCursor>")]
    pub fn find<'env>(
        &self,
        env: &'env Env,
        filter: &[u8],
        options: &[u8],
        output: BatchOutput,
    ) -> napi::Result<PromiseRaw<'env, OpenedCursor>> {
        let mut operation = Operation::begin(&self.client, options, "find")?;
        let filter = DeferredDocument::new(filter);
        let taken = &mut operation.options;
        let mut find = FindOptions::default();
        find.projection = taken.document("projection")?;
        find.sort = taken.document("sort")?;
        find.hint = taken.hint()?;
        find.limit = taken.int("limit")?;
        find.skip = taken.non_negative("skip")?;
        find.batch_size = taken.batch_size()?;
        find.max_time = taken.millis("maxTimeMS")?;
        find.collation = taken.collation()?;
        find.comment = taken.any("comment");
        find.let_vars = taken.document("let")?;
        find.allow_disk_use = taken.bool("allowDiskUse")?;
        find.min = taken.document("min")?;
        find.max = taken.document("max")?;
        find.return_key = taken.bool("returnKey")?;
        find.show_record_id = taken.bool("showRecordId")?;
        find.selection_criteria = taken.read_preference()?;
        find.read_concern = taken.read_concern()?;
        find.no_cursor_timeout = taken.bool("noCursorTimeout")?;
        find.allow_partial_results = taken.bool("allowPartialResults")?;
        find.cursor_type = cursor_type(taken)?;
        find.max_await_time = taken.millis("maxAwaitTimeMS")?;
        let mut single_batch = taken.bool("singleBatch")?.unwrap_or(false);
        let session = operation.session()?;
        let operation = operation.limits(Opens::Cursor)?;
        find.max_time = operation.max_time(find.max_time);
        // The crate sends `singleBatch` for a negative limit (CRUD spec); without a limit the
        // cursor itself stops after the first batch.
        if single_batch {
            if let Some(limit) = find.limit {
                find.limit = Some(-limit.abs());
                single_batch = false;
            }
        }
        // Positive: enforced on the client too (a negative one asks for a single batch).
        let limit = find.limit.filter(|limit| *limit > 0).map(|limit| limit as u64);
        let input = (self.collection.clone(), filter, find, session);
        let start = CursorStart {
            output,
            single_batch,
            limit,
        };
        operation.open_cursor(
            env,
            true,
            input,
            |(collection, filter, find, session)| async move {
                let find = collection.find(filter.parse()?).with_options(find);
                Ok(open_driver_cursor!(find, session))
            },
            start,
        )
    }

    /// Runs `aggregate`; `pipeline` is a BSON document `{ pipeline: [stage, ...] }`.
    #[napi(catch_unwind, ts_return_type = "Promise<OpenedCursor>")]
    pub fn aggregate<'env>(
        &self,
        env: &'env Env,
        pipeline: &[u8],
        options: &[u8],
        output: BatchOutput,
    ) -> napi::Result<PromiseRaw<'env, OpenedCursor>> {
        let Aggregate {
            operation,
            stages,
            aggregate,
            retryable,
            session,
        } = Aggregate::begin(&self.client, pipeline, options)?;
        let input = (self.collection.clone(), stages, aggregate, session);
        operation.open_cursor(
            env,
            retryable,
            input,
            |(collection, stages, aggregate, session)| async move {
                let aggregate = collection.aggregate(stages).with_options(aggregate);
                Ok(open_driver_cursor!(aggregate, session))
            },
            CursorStart::reading(output),
        )
    }

    /// Counts the documents matching `filter` (an aggregation on the server, as in the official driver).
    #[napi(catch_unwind, ts_return_type = "Promise<number>")]
    pub fn count_documents<'env>(
        &self,
        env: &'env Env,
        filter: &[u8],
        options: &[u8],
    ) -> napi::Result<PromiseRaw<'env, f64>> {
        let mut operation = Operation::begin(&self.client, options, "countDocuments")?;
        let filter = DeferredDocument::new(filter);
        let taken = &mut operation.options;
        let mut count = CountOptions::default();
        count.skip = taken.non_negative("skip")?;
        count.limit = taken.non_negative("limit")?;
        count.hint = taken.hint()?;
        count.max_time = taken.millis("maxTimeMS")?;
        count.collation = taken.collation()?;
        count.comment = taken.any("comment");
        count.selection_criteria = taken.read_preference()?;
        count.read_concern = taken.read_concern()?;
        let session = operation.session()?;
        let operation = operation.limits(Opens::NoCursor)?;
        count.max_time = operation.max_time(count.max_time);
        let input = (self.collection.clone(), filter, count, session);
        operation.run(
            env,
            true,
            input,
            |(collection, filter, count, session)| async move {
                let count = collection.count_documents(filter.parse()?).with_options(count);
                Ok(match session {
                    None => count.await?,
                    Some(slot) => count.session(&mut *slot.take().await?).await?,
                })
            },
            |count| Ok(count as f64),
        )
    }

    /// The collection's document count from its metadata (`count` command).
    #[napi(catch_unwind, ts_return_type = "Promise<number>")]
    pub fn estimated_document_count<'env>(
        &self,
        env: &'env Env,
        options: &[u8],
    ) -> napi::Result<PromiseRaw<'env, f64>> {
        let mut operation = Operation::begin(&self.client, options, "estimatedDocumentCount")?;
        let taken = &mut operation.options;
        let mut estimate = EstimatedDocumentCountOptions::default();
        estimate.max_time = taken.millis("maxTimeMS")?;
        estimate.comment = taken.any("comment");
        estimate.selection_criteria = taken.read_preference()?;
        estimate.read_concern = taken.read_concern()?;
        let session = operation.session()?;
        let operation = operation.limits(Opens::NoCursor)?;
        estimate.max_time = operation.max_time(estimate.max_time);
        let input = (self.collection.clone(), estimate, session);
        operation.run(
            env,
            true,
            input,
            |(collection, estimate, session)| async move {
                let estimate = collection.estimated_document_count().with_options(estimate);
                Ok(match session {
                    None => estimate.await?,
                    Some(slot) => estimate.session(&mut *slot.take().await?).await?,
                })
            },
            |count| Ok(count as f64),
        )
    }

    /// The distinct values of `key`, as a BSON document `{ values: [...] }` for the JS decoder.
    #[napi(catch_unwind, ts_return_type = "Promise<Buffer>")]
    pub fn distinct<'env>(
        &self,
        env: &'env Env,
        key: String,
        filter: &[u8],
        options: &[u8],
    ) -> napi::Result<PromiseRaw<'env, Buffer>> {
        let mut operation = Operation::begin(&self.client, options, "distinct")?;
        let filter = DeferredDocument::new(filter);
        let taken = &mut operation.options;
        let mut distinct = DistinctOptions::default();
        distinct.max_time = taken.millis("maxTimeMS")?;
        distinct.collation = taken.collation()?;
        distinct.comment = taken.any("comment");
        distinct.hint = taken.hint()?;
        distinct.selection_criteria = taken.read_preference()?;
        distinct.read_concern = taken.read_concern()?;
        let session = operation.session()?;
        // No maxTimeMS derived from timeoutMS here: FerretDB rejects the field on `distinct`.
        let operation = operation.limits(Opens::NoCursor)?;
        let input = (self.collection.clone(), key, filter, distinct, session);
        operation.run(
            env,
            true,
            input,
            |(collection, key, filter, distinct, session)| async move {
                let distinct = collection.distinct(key, filter.parse()?).with_options(distinct);
                Ok(match session {
                    None => distinct.await?,
                    Some(slot) => distinct.session(&mut *slot.take().await?).await?,
                })
            },
            |values| Ok(doc! { "values": values }.to_vec()?.into()),
        )
    }
}

/// An aggregate (on a collection or a database) ready to open its cursor: its stages, its options
/// (`maxTimeMS` derived from `timeoutMS` when not given), and whether it is a retryable read.
pub struct Aggregate {
    pub operation: ReadyOperation,
    pub stages: Vec<Document>,
    pub aggregate: AggregateOptions,
    pub retryable: bool,
    /// The explicit session it runs in, if any.
    pub session: Option<Arc<SessionSlot>>,
}

impl Aggregate {
    /// Reads an aggregate's `pipeline` (a BSON document `{ pipeline: [stage, ...] }`) and options.
    pub fn begin(client: &Arc<ClientState>, pipeline: &[u8], options: &[u8]) -> Result<Self> {
        let mut operation = Operation::begin(client, options, "aggregate")?;
        let stages = pipeline_from_bytes(pipeline)?;
        let mut aggregate = aggregate_options(&mut operation.options)?;
        let session = operation.session()?;
        let operation = operation.limits(Opens::Cursor)?;
        aggregate.max_time = operation.max_time(aggregate.max_time);
        let retryable = !writes(&stages);
        Ok(Aggregate {
            operation,
            stages,
            aggregate,
            retryable,
            session,
        })
    }
}

/// The options of an aggregate (on a collection or a database), but its time limits.
fn aggregate_options(taken: &mut OperationOptions) -> Result<AggregateOptions> {
    let mut aggregate = AggregateOptions::default();
    aggregate.allow_disk_use = taken.bool("allowDiskUse")?;
    aggregate.batch_size = taken.batch_size()?;
    aggregate.collation = taken.collation()?;
    aggregate.comment = taken.any("comment");
    aggregate.hint = taken.hint()?;
    aggregate.max_time = taken.millis("maxTimeMS")?;
    aggregate.max_await_time = taken.millis("maxAwaitTimeMS")?;
    aggregate.let_vars = taken.document("let")?;
    aggregate.selection_criteria = taken.read_preference()?;
    aggregate.read_concern = taken.read_concern()?;
    Ok(aggregate)
}

/// Whether a pipeline writes (ends with `$out` or `$merge`): such an aggregate is not a
/// retryable read (the crate's rule, and the official driver's).
fn writes(stages: &[Document]) -> bool {
    stages
        .last()
        .and_then(|stage| stage.keys().next())
        .is_some_and(|stage| stage == "$out" || stage == "$merge")
}

fn pipeline_from_bytes(bytes: &[u8]) -> Result<Vec<Document>> {
    let pipeline = match document_from_bytes(bytes)?.remove("pipeline") {
        Some(Bson::Array(stages)) => stages,
        _ => {
            return Err(Error::InvalidArgument(
                "pipeline must be an array of stages".into(),
            ))
        }
    };
    pipeline
        .into_iter()
        .map(|stage| match stage {
            Bson::Document(stage) => Ok(stage),
            _ => Err(Error::InvalidArgument(
                "every pipeline stage must be a document".into(),
            )),
        })
        .collect()
}

/// `tailable` and `awaitData` as the crate's cursor type (`awaitData` only matters on a tailable
/// cursor, as the server reads it).
fn cursor_type(taken: &mut OperationOptions) -> Result<Option<CursorType>> {
    let tailable = taken.bool("tailable")?.unwrap_or(false);
    let await_data = taken.bool("awaitData")?.unwrap_or(false);
    Ok(match (tailable, await_data) {
        (false, false) => None,
        // The crate cannot send it alone; the server refuses it alone anyway.
        (false, true) => {
            return Err(Error::InvalidArgument(
                "find option 'awaitData' requires 'tailable'".into(),
            ))
        }
        (true, false) => Some(CursorType::Tailable),
        (true, true) => Some(CursorType::TailableAwait),
    })
}
