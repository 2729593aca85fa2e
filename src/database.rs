//! `NativeDatabase`: commands run on one database (introspection, explain, `db.command`).
//!
//! The TypeScript layer decides which commands may run (read-only ones); this side runs what it is
//! given, with the client's Stable API, timeouts and read preference rules.

use std::sync::Arc;

use bson::RawDocumentBuf;
use mongodb::options::RunCursorCommandOptions;
use napi::{
    bindgen_prelude::{Buffer, PromiseRaw},
    Env,
};
use napi_derive::napi;

use crate::{
    client_state::ClientState,
    collection::{aggregate_options, pipeline_from_bytes, writes},
    cursor::OpenedCursor,
    error::Result,
    format::BatchOutput,
    options::OperationOptions,
    task::spawn,
};

#[napi]
pub struct NativeDatabase {
    database: mongodb::Database,
    client: Arc<ClientState>,
}

impl NativeDatabase {
    pub fn new(database: mongodb::Database, client: Arc<ClientState>) -> Self {
        Self { database, client }
    }

    /// The command as the raw BSON built by js-bson: every value (Long, Decimal128, ...) intact.
    fn command(&self, command: &[u8]) -> Result<RawDocumentBuf> {
        self.client.client()?;
        Ok(RawDocumentBuf::from_bytes(command.to_vec())?)
    }
}

#[napi]
impl NativeDatabase {
    /// Runs `command` (BSON) and returns the server's reply as BSON. `options`: `readPreference`,
    /// `timeoutMS`.
    #[napi(catch_unwind, ts_return_type = "Promise<Buffer>")]
    pub fn run_command<'env>(
        &self,
        env: &'env Env,
        command: Buffer,
        options: Buffer,
    ) -> napi::Result<PromiseRaw<'env, Buffer>> {
        let command = self.command(&command)?;
        let mut taken = OperationOptions::from_bytes(&options, "command")?;
        let selection_criteria = taken.read_preference()?;
        let timeout = self.client.timeouts.take(&mut taken, false)?;
        taken.finish()?;
        let (database, deadline) = (self.database.clone(), timeout.start());
        let pool = self.client.pool.clone();
        spawn(env, async move {
            let run = async move {
                let mut run = database.run_raw_command(command);
                if let Some(criteria) = selection_criteria {
                    run = run.selection_criteria(criteria);
                }
                Ok(run.await?)
            };
            let reply = deadline.run(&pool, run).await?;
            Ok(reply.to_vec()?.into())
        })
    }

    /// Runs a command that opens a cursor (`listCollections`, `listIndexes`, `aggregate: 1`) and
    /// returns it with its first batch, read like a find's. `options`: `batchSize` and `comment`
    /// (of the getMores), `readPreference`, `timeoutMS`, `timeoutMode`.
    #[napi(catch_unwind, ts_return_type = "Promise<OpenedCursor>")]
    pub fn run_cursor_command<'env>(
        &self,
        env: &'env Env,
        command: Buffer,
        options: Buffer,
        output: BatchOutput,
    ) -> napi::Result<PromiseRaw<'env, OpenedCursor>> {
        let command = self.command(&command)?;
        let mut taken = OperationOptions::from_bytes(&options, "command")?;
        let mut cursor_options = RunCursorCommandOptions::default();
        cursor_options.batch_size = taken.batch_size()?;
        cursor_options.comment = taken.any("comment");
        cursor_options.selection_criteria = taken.read_preference()?;
        let timeout = self.client.timeouts.take(&mut taken, true)?;
        taken.finish()?;
        let (database, client) = (self.database.clone(), self.client.clone());
        let deadline = timeout.start();
        spawn(env, async move {
            let open = async move {
                Ok(database
                    .run_raw_cursor_command(command)
                    .with_options(cursor_options)
                    .batch()
                    .await?)
            };
            let cursor = deadline.run(&client.pool, open).await?;
            client
                .open_cursor(cursor, false, output, timeout.cursor(deadline), None)
                .await
        })
    }

    /// Runs a database-level `aggregate` (`aggregate: 1`); `pipeline` is a BSON document
    /// `{ pipeline: [stage, ...] }`, `options` those of a collection's aggregate.
    #[napi(catch_unwind, ts_return_type = "Promise<OpenedCursor>")]
    pub fn aggregate<'env>(
        &self,
        env: &'env Env,
        pipeline: Buffer,
        options: Buffer,
        output: BatchOutput,
    ) -> napi::Result<PromiseRaw<'env, OpenedCursor>> {
        self.client.client()?;
        let stages = pipeline_from_bytes(&pipeline)?;
        let mut taken = OperationOptions::from_bytes(&options, "aggregate")?;
        let mut aggregate = aggregate_options(&mut taken)?;
        let timeout = self.client.timeouts.take(&mut taken, true)?;
        taken.finish()?;
        aggregate.max_time = timeout.max_time(aggregate.max_time);
        let (database, client) = (self.database.clone(), self.client.clone());
        let deadline = timeout.start();
        spawn(env, async move {
            let retryable = !writes(&stages);
            let input = (database, stages, aggregate);
            let cursor = deadline
                .run_read(
                    &client.pool,
                    retryable,
                    input,
                    |(database, stages, aggregate)| async move {
                        Ok(database.aggregate(stages).with_options(aggregate).batch().await?)
                    },
                )
                .await?;
            client
                .open_cursor(cursor, false, output, timeout.cursor(deadline), None)
                .await
        })
    }
}
