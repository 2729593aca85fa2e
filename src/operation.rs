//! What every operation of a collection or database does around its own command, in one place:
//! refuse a closed client before any I/O, read the options document, take the time limits and
//! refuse any option left unread, then run the command on tokio under its deadline and the pool
//! gate, and register the cursor it opens. Each operation in `collection.rs` and `database.rs`
//! only reads its own options and builds its command.

use std::{future::Future, sync::Arc, time::Duration};

use napi::{bindgen_prelude::PromiseRaw, bindgen_prelude::ToNapiValue, Env};

use crate::{
    client_state::ClientState,
    cursor::OpenedCursor,
    deadline::{Deadline, OperationTimeout},
    error::Result,
    format::BatchOutput,
    options::OperationOptions,
    session::{DriverCursor, SessionSlot},
    task::spawn,
};

/// An operation whose options are being read.
pub struct Operation {
    client: Arc<ClientState>,
    /// The options document, consumed key by key by the operation, then by `limits`.
    pub options: OperationOptions,
}

/// Whether an operation opens a cursor: only then is `timeoutMode` one of its options.
#[derive(Clone, Copy)]
pub enum Opens {
    Cursor,
    NoCursor,
}

/// How a cursor an operation opens is read (see `NativeCursor::open`).
pub struct CursorStart {
    pub output: BatchOutput,
    /// The server's first batch is the only one (`singleBatch` without a limit).
    pub single_batch: bool,
    /// A positive `limit`, which the client enforces too.
    pub limit: Option<u64>,
}

impl CursorStart {
    /// A cursor read as `output`, for as long as the server has batches.
    pub fn reading(output: BatchOutput) -> Self {
        Self {
            output,
            single_batch: false,
            limit: None,
        }
    }
}

impl Operation {
    /// Starts an operation of `client` named `name` (in option errors): a `Closed` error once the
    /// client is closed, before anything else is read.
    pub fn begin(client: &Arc<ClientState>, options: &[u8], name: &'static str) -> Result<Self> {
        client.client()?;
        Ok(Self {
            client: client.clone(),
            options: OperationOptions::from_bytes(options, name)?,
        })
    }

    /// Takes `session`, the number of one of the client's explicit sessions (`session.rs`) that
    /// the operation runs in: an error if the client has no such session (it ended).
    pub fn session(&mut self) -> Result<Option<Arc<SessionSlot>>> {
        match self.options.non_negative("session")? {
            None => Ok(None),
            Some(number) => {
                let number = u32::try_from(number).unwrap_or(u32::MAX);
                self.client.sessions.get(number).map(Some)
            }
        }
    }

    /// Takes the time limits (`timeoutMS`, and `timeoutMode` for a cursor) once the operation took
    /// its own options, and refuses any option left: none is ever ignored.
    pub fn limits(mut self, opens: Opens) -> Result<ReadyOperation> {
        let cursor = matches!(opens, Opens::Cursor);
        let timeout = self.client.timeouts.take(&mut self.options, cursor)?;
        self.options.finish()?;
        Ok(ReadyOperation {
            client: self.client,
            timeout,
        })
    }
}

/// An operation whose options are all read, ready to run.
pub struct ReadyOperation {
    client: Arc<ClientState>,
    timeout: OperationTimeout,
}

impl ReadyOperation {
    /// The `maxTimeMS` to send: the caller's, else one derived from `timeoutMS` (see
    /// `OperationTimeout::max_time`).
    pub fn max_time(&self, max_time: Option<Duration>) -> Option<Duration> {
        self.timeout.max_time(max_time)
    }

    /// Runs the command `command` makes from `input` on tokio under the operation's deadline (its
    /// clock starts now) and resolves the Promise to `then` of its result. A `retryable` read (a
    /// count, a distinct) whose first attempt exceeds `socketTimeoutMS` is retried once (see
    /// `Deadline::run_read`); `input` is cloned only then.
    ///
    /// The command is made there, inside the spawned future, rather than passed in made: a future
    /// that awaits the crate is several KiB before it starts, and each move of it (into this
    /// function, into the spawned future, into its box) is a `memcpy` on the JS thread (3.3k more
    /// instructions per `findOne`, callgrind, when the fold first took it made).
    pub fn run<'env, I, C, R, T>(
        self,
        env: &'env Env,
        retryable: bool,
        input: I,
        command: impl Fn(I) -> C + Send + 'static,
        then: impl FnOnce(R) -> Result<T> + Send + 'static,
    ) -> napi::Result<PromiseRaw<'env, T>>
    where
        I: Clone + Send + 'static,
        C: Future<Output = Result<R>> + Send + 'static,
        R: Send + 'static,
        T: Send + ToNapiValue + 'static,
    {
        let (client, deadline) = (self.client, self.timeout.start());
        spawn(env, async move {
            then(
                deadline
                    .run_read(&client.closing, retryable, input, command)
                    .await?,
            )
        })
    }

    /// Runs the command `command` makes from `input`, which opens a cursor, as `run` does (a
    /// `retryable` read: a find, an aggregate that does not write), and resolves to the cursor,
    /// registered with its client (so that `close()` kills it) and bounded by the operation's time
    /// limits.
    pub fn open_cursor<'env, I, C>(
        self,
        env: &'env Env,
        retryable: bool,
        input: I,
        command: impl Fn(I) -> C + Send + 'static,
        start: CursorStart,
    ) -> napi::Result<PromiseRaw<'env, OpenedCursor>>
    where
        I: Clone + Send + 'static,
        C: Future<Output = Result<DriverCursor>> + Send + 'static,
    {
        let (client, timeout) = (self.client, self.timeout);
        let deadline = timeout.start();
        spawn(env, async move {
            let cursor = deadline
                .run_read(&client.closing, retryable, input, command)
                .await?;
            start.open(&client, cursor, timeout, deadline).await
        })
    }
}

impl CursorStart {
    /// Registers the cursor `cursor` the operation opened with its client and reads its first
    /// batch (see `NativeCursor::open`).
    async fn open(
        self,
        client: &Arc<ClientState>,
        cursor: DriverCursor,
        timeout: OperationTimeout,
        deadline: Deadline,
    ) -> Result<OpenedCursor> {
        let CursorStart {
            output,
            single_batch,
            limit,
        } = self;
        client
            .open_cursor(cursor, single_batch, output, timeout.cursor(deadline), limit)
            .await
    }
}
