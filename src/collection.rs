//! `NativeCollection`: the read operations of one collection.

use std::sync::Arc;

use bson::{doc, Bson, Document};
use mongodb::options::{
    AggregateOptions, CountOptions, DistinctOptions, EstimatedDocumentCountOptions, FindOptions,
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
    options::{document_from_bytes, OperationOptions},
    task::spawn,
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

    /// Fails with a `Closed` error once the client is closed, before any I/O.
    fn ensure_open(&self) -> Result<()> {
        self.client.client().map(drop)
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
        self.ensure_open()?;
        let filter = document_from_bytes(filter)?;
        let mut taken = OperationOptions::from_bytes(options, "find")?;
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
        let mut single_batch = taken.bool("singleBatch")?.unwrap_or(false);
        let timeout = self.client.timeouts.take(&mut taken, true)?;
        taken.finish()?;
        find.max_time = timeout.max_time(find.max_time);
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
        let (collection, client) = (self.collection.clone(), self.client.clone());
        let deadline = timeout.start();
        spawn(env, async move {
            let cursor = deadline
                .run_read(
                    &client.pool,
                    true,
                    (collection, filter, find),
                    |(collection, filter, find)| async move {
                        Ok(collection.find(filter).with_options(find).batch().await?)
                    },
                )
                .await?;
            client
                .open_cursor(cursor, single_batch, output, timeout.cursor(deadline), limit)
                .await
        })
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
        self.ensure_open()?;
        let stages = pipeline_from_bytes(pipeline)?;
        let mut taken = OperationOptions::from_bytes(options, "aggregate")?;
        let mut aggregate = aggregate_options(&mut taken)?;
        let timeout = self.client.timeouts.take(&mut taken, true)?;
        taken.finish()?;
        aggregate.max_time = timeout.max_time(aggregate.max_time);
        let (collection, client) = (self.collection.clone(), self.client.clone());
        let deadline = timeout.start();
        spawn(env, async move {
            let retryable = !writes(&stages);
            let input = (collection, stages, aggregate);
            let cursor = deadline
                .run_read(
                    &client.pool,
                    retryable,
                    input,
                    |(collection, stages, aggregate)| async move {
                        Ok(collection
                            .aggregate(stages)
                            .with_options(aggregate)
                            .batch()
                            .await?)
                    },
                )
                .await?;
            client
                .open_cursor(cursor, false, output, timeout.cursor(deadline), None)
                .await
        })
    }

    /// Counts the documents matching `filter` (an aggregation on the server, as in the official driver).
    #[napi(catch_unwind, ts_return_type = "Promise<number>")]
    pub fn count_documents<'env>(
        &self,
        env: &'env Env,
        filter: &[u8],
        options: &[u8],
    ) -> napi::Result<PromiseRaw<'env, f64>> {
        self.ensure_open()?;
        let filter = document_from_bytes(filter)?;
        let mut taken = OperationOptions::from_bytes(options, "countDocuments")?;
        let mut count = CountOptions::default();
        count.skip = taken.non_negative("skip")?;
        count.limit = taken.non_negative("limit")?;
        count.hint = taken.hint()?;
        count.max_time = taken.millis("maxTimeMS")?;
        count.collation = taken.collation()?;
        count.comment = taken.any("comment");
        count.selection_criteria = taken.read_preference()?;
        count.read_concern = taken.read_concern()?;
        let timeout = self.client.timeouts.take(&mut taken, false)?;
        taken.finish()?;
        count.max_time = timeout.max_time(count.max_time);
        let (collection, deadline) = (self.collection.clone(), timeout.start());
        let pool = self.client.pool.clone();
        spawn(env, async move {
            let count = deadline
                .run_read(
                    &pool,
                    true,
                    (collection, filter, count),
                    |(collection, filter, count)| async move {
                        Ok(collection.count_documents(filter).with_options(count).await?)
                    },
                )
                .await?;
            Ok(count as f64)
        })
    }

    /// The collection's document count from its metadata (`count` command).
    #[napi(catch_unwind, ts_return_type = "Promise<number>")]
    pub fn estimated_document_count<'env>(
        &self,
        env: &'env Env,
        options: &[u8],
    ) -> napi::Result<PromiseRaw<'env, f64>> {
        self.ensure_open()?;
        let mut taken = OperationOptions::from_bytes(options, "estimatedDocumentCount")?;
        let mut estimate = EstimatedDocumentCountOptions::default();
        estimate.max_time = taken.millis("maxTimeMS")?;
        estimate.comment = taken.any("comment");
        estimate.selection_criteria = taken.read_preference()?;
        estimate.read_concern = taken.read_concern()?;
        let timeout = self.client.timeouts.take(&mut taken, false)?;
        taken.finish()?;
        estimate.max_time = timeout.max_time(estimate.max_time);
        let (collection, deadline) = (self.collection.clone(), timeout.start());
        let pool = self.client.pool.clone();
        spawn(env, async move {
            let estimate = deadline
                .run_read(
                    &pool,
                    true,
                    (collection, estimate),
                    |(collection, estimate)| async move {
                        Ok(collection
                            .estimated_document_count()
                            .with_options(estimate)
                            .await?)
                    },
                )
                .await?;
            Ok(estimate as f64)
        })
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
        self.ensure_open()?;
        let filter = document_from_bytes(filter)?;
        let mut taken = OperationOptions::from_bytes(options, "distinct")?;
        let mut distinct = DistinctOptions::default();
        distinct.max_time = taken.millis("maxTimeMS")?;
        distinct.collation = taken.collation()?;
        distinct.comment = taken.any("comment");
        distinct.hint = taken.hint()?;
        distinct.selection_criteria = taken.read_preference()?;
        distinct.read_concern = taken.read_concern()?;
        let timeout = self.client.timeouts.take(&mut taken, false)?;
        taken.finish()?;
        // No maxTimeMS derived from timeoutMS here: FerretDB rejects the field on `distinct`.
        let (collection, deadline) = (self.collection.clone(), timeout.start());
        let pool = self.client.pool.clone();
        spawn(env, async move {
            let input = (collection, key, filter, distinct);
            let values = deadline
                .run_read(
                    &pool,
                    true,
                    input,
                    |(collection, key, filter, distinct)| async move {
                        Ok(collection.distinct(key, filter).with_options(distinct).await?)
                    },
                )
                .await?;
            Ok(doc! { "values": values }.to_vec()?.into())
        })
    }
}

/// The options of an aggregate (on a collection or a database), but its time limits.
pub fn aggregate_options(taken: &mut OperationOptions) -> Result<AggregateOptions> {
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
pub fn writes(stages: &[Document]) -> bool {
    stages
        .last()
        .and_then(|stage| stage.keys().next())
        .is_some_and(|stage| stage == "$out" || stage == "$merge")
}

pub fn pipeline_from_bytes(bytes: &[u8]) -> Result<Vec<Document>> {
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
