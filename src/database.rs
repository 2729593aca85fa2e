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
    collection::Aggregate,
    cursor::OpenedCursor,
    error::Result,
    format::BatchOutput,
    operation::{CursorStart, Opens, Operation},
    session::open_driver_cursor,
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
}

/// The command as the raw BSON built by js-bson: every value (Long, Decimal128, ...) intact.
fn command_from_bytes(command: &[u8]) -> Result<RawDocumentBuf> {
    Ok(RawDocumentBuf::from_bytes(command.to_vec())?)
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
        let mut operation = Operation::begin(&self.client, &options, "command")?;
        let command = command_from_bytes(&command)?;
        let selection_criteria = operation.options.read_preference()?;
        let session = operation.session()?;
        let operation = operation.limits(Opens::NoCursor)?;
        // A user's command is never retried (the official driver does not).
        let input = (self.database.clone(), command, selection_criteria, session);
        operation.run(
            env,
            false,
            input,
            |(database, command, selection_criteria, session)| async move {
                let mut run = database.run_raw_command(command);
                if let Some(criteria) = selection_criteria {
                    run = run.selection_criteria(criteria);
                }
                Ok(match session {
                    None => run.await?,
                    Some(slot) => run.session(&mut *slot.take().await?).await?,
                })
            },
            |reply| Ok(reply.to_vec()?.into()),
        )
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
        let mut operation = Operation::begin(&self.client, &options, "command")?;
        let command = command_from_bytes(&command)?;
        let taken = &mut operation.options;
        let mut cursor_options = RunCursorCommandOptions::default();
        cursor_options.batch_size = taken.batch_size()?;
        cursor_options.comment = taken.any("comment");
        cursor_options.selection_criteria = taken.read_preference()?;
        let session = operation.session()?;
        let operation = operation.limits(Opens::Cursor)?;
        // Not retried: the official driver retries no `runCursorCommand`.
        let input = (self.database.clone(), command, cursor_options, session);
        operation.open_cursor(
            env,
            false,
            input,
            |(database, command, cursor_options, session)| async move {
                let command = database
                    .run_raw_cursor_command(command)
                    .with_options(cursor_options);
                Ok(open_driver_cursor!(command, session))
            },
            CursorStart::reading(output),
        )
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
        let Aggregate {
            operation,
            stages,
            aggregate,
            retryable,
            session,
        } = Aggregate::begin(&self.client, &pipeline, &options)?;
        let input = (self.database.clone(), stages, aggregate, session);
        operation.open_cursor(
            env,
            retryable,
            input,
            |(database, stages, aggregate, session)| async move {
                let aggregate = database.aggregate(stages).with_options(aggregate);
                Ok(open_driver_cursor!(aggregate, session))
            },
            CursorStart::reading(output),
        )
    }
}
