//! Client-side time limits, which the crate does not have: `timeoutMS` (a deadline for a whole
//! operation, or for a cursor's lifetime) and `socketTimeoutMS` (a bound on each round trip).
//!
//! Every network step of an operation (the command that opens a cursor, each getMore, a count or
//! distinct) runs through `Deadline::run`. When a limit passes, the caller gets the error at once
//! and the step finishes in the background (bounded), so that the connection pool gets back what
//! it lent: see `PoolGate` and `Deadline::run`. A dropped cursor is killed.
//!
//! The client's `close()` ends every step at once (`PoolGate::close`), as the official driver
//! closes its checked-out connections: a read waiting for a server that never answers fails with
//! `ClientClosed` instead of holding `close()` up.

use std::{
    future::{poll_fn, Future},
    pin::Pin,
    sync::Arc,
    task::Poll,
    time::{Duration, Instant},
};

use mongodb::error::ErrorKind;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::{
    error::{Error, Result},
    events::StepCommands,
    options::OperationOptions,
};

/// The server's code for an expired `maxTimeMS`.
const MAX_TIME_MS_EXPIRED: i32 = 50;

/// The longest `maxTimeMS` a server takes: a signed 32-bit count of milliseconds.
const LONGEST_MAX_TIME: Duration = Duration::from_millis(i32::MAX as u64);

/// The client's defaults: `timeoutMS` and `socketTimeoutMS` from the connection string or the
/// MongoClient options (zero or absent: no limit), and `retryReads`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClientTimeouts {
    pub operation: Option<Duration>,
    pub socket: Option<Duration>,
    /// `retryReads` (default true): a read whose round trip exceeded `socketTimeoutMS` is retried
    /// once (see `Deadline::run_read`).
    pub retry_reads: bool,
}

impl ClientTimeouts {
    pub fn new(timeout_ms: Option<i64>, socket_timeout_ms: Option<i64>, retry_reads: bool) -> Self {
        let limit = |ms: Option<i64>| ms.filter(|ms| *ms > 0).map(|ms| Duration::from_millis(ms as u64));
        Self {
            operation: limit(timeout_ms),
            socket: limit(socket_timeout_ms),
            retry_reads,
        }
    }

    /// The deadline of a step that takes no options (the `ping` of `connect`).
    pub fn start(&self) -> Deadline {
        OperationTimeout {
            operation: self.operation,
            socket: self.socket,
            retry_reads: self.retry_reads,
            iteration: false,
        }
        .start()
    }

    /// Takes `timeoutMS` (and, for cursors, `timeoutMode`) from an operation's options. An explicit
    /// `timeoutMS: 0` lifts the client's limit, as in the official driver.
    pub fn take(&self, taken: &mut OperationOptions, cursor: bool) -> Result<OperationTimeout> {
        let operation = match taken.millis("timeoutMS")? {
            Some(timeout) if timeout.is_zero() => None,
            Some(timeout) => Some(timeout),
            None => self.operation,
        };
        let iteration = if cursor {
            match taken.any("timeoutMode") {
                None => false,
                Some(_) if operation.is_none() => {
                    return Err(Error::InvalidArgument(
                        "Cannot set timeoutMode without setting timeoutMS".into(),
                    ))
                }
                Some(bson::Bson::String(mode)) if mode == "iteration" => true,
                Some(bson::Bson::String(mode)) if mode == "cursorLifetime" => false,
                Some(_) => {
                    return Err(Error::InvalidArgument(
                        "timeoutMode must be 'cursorLifetime' or 'iteration'".into(),
                    ))
                }
            }
        } else {
            false
        };
        Ok(OperationTimeout {
            operation,
            socket: self.socket,
            retry_reads: self.retry_reads,
            iteration,
        })
    }
}

/// The limits of one operation, and for a cursor how its getMores are bounded.
#[derive(Clone, Copy, Debug)]
pub struct OperationTimeout {
    operation: Option<Duration>,
    socket: Option<Duration>,
    retry_reads: bool,
    /// `timeoutMode: 'iteration'`: each read of the cursor gets `timeoutMS` of its own; otherwise
    /// (`cursorLifetime`, the default) one deadline covers the command and every getMore.
    iteration: bool,
}

impl OperationTimeout {
    /// Starts the clock of the operation.
    pub fn start(&self) -> Deadline {
        Deadline {
            at: self.operation.map(|timeout| Instant::now() + timeout),
            timeout: self.operation,
            socket: self.socket,
            retry_reads: self.retry_reads,
        }
    }

    /// `maxTimeMS` to send when the caller set none: the server stops working on an operation
    /// the client has given up on. Not in iteration mode: the server counts a cursor's
    /// `maxTimeMS` across all its getMores, which each get `timeoutMS` of their own there. Not
    /// for a `timeoutMS` beyond what a server takes as `maxTimeMS` (2^31 - 1 ms, about 25 days,
    /// "maxTimeMS is out of range" past it): the client's deadline alone bounds such a read,
    /// and the official driver 7.x sends no `maxTimeMS` for any `timeoutMS`.
    pub fn max_time(&self, max_time: Option<Duration>) -> Option<Duration> {
        let derived = self
            .operation
            .filter(|timeout| !self.iteration && *timeout <= LONGEST_MAX_TIME);
        max_time.or(derived)
    }

    /// The deadline of the cursor's getMores: the operation's own in `cursorLifetime` mode.
    pub fn cursor(&self, operation: Deadline) -> CursorTimeout {
        if self.iteration {
            CursorTimeout::Iteration(*self)
        } else {
            CursorTimeout::Lifetime(operation)
        }
    }
}

/// How a cursor bounds its getMores.
#[derive(Clone, Copy, Debug)]
pub enum CursorTimeout {
    Lifetime(Deadline),
    Iteration(OperationTimeout),
}

impl Default for CursorTimeout {
    fn default() -> Self {
        CursorTimeout::Lifetime(Deadline::default())
    }
}

impl CursorTimeout {
    /// The deadline of the next getMore.
    pub fn next(&self) -> Deadline {
        match self {
            CursorTimeout::Lifetime(deadline) => *deadline,
            CursorTimeout::Iteration(timeout) => timeout.start(),
        }
    }
}

/// How long a step that ran out of time may go on in the background to give its connection back
/// (see `Deadline::run`) before it is dropped anyway: long enough for a connection handshake and a
/// command the server stops at its `maxTimeMS`, short enough that a hung server cannot hold a
/// pool slot for good.
pub const DETACHED_GRACE: Duration = Duration::from_secs(10);

/// The client's connection-pool slots, handed out in request order before a step reaches the
/// crate's pool.
///
/// Why: the crate's pool worker serves at most one queued checkout request per event it handles (a
/// check-in, a new request, or its 500 ms maintenance tick), and a request whose caller gave up
/// stays queued until served. A burst of 100 `findOne({}, { timeoutMS: 2 })` on `maxPoolSize: 2`
/// left ~70 such requests ahead of the next read, which then waited ~14 s (27 s with
/// `maxPoolSize: 1`). Here a step waits for a slot in a queue it leaves when it gives up; one that
/// holds a slot finds a free or establishable connection in the crate's pool, and keeps its slot
/// until the crate has that connection back (see `Deadline::run`).
///
/// It is also where the client's `close()` reaches the steps in flight (`close`).
#[derive(Clone, Debug, Default)]
pub struct PoolGate {
    slots: Option<Arc<Semaphore>>,
    /// Cancelled by the client's `close()`.
    closed: Option<CancellationToken>,
}

impl PoolGate {
    /// One slot per pooled connection; `maxPoolSize: 0` (no limit in the crate) needs no slots.
    pub fn new(max_pool_size: u32) -> Self {
        Self {
            slots: (max_pool_size > 0).then(|| Arc::new(Semaphore::new(max_pool_size as usize))),
            closed: Some(CancellationToken::new()),
        }
    }

    /// For a step that needs no connection (a cursor's first batch, already received).
    pub const NONE: PoolGate = PoolGate {
        slots: None,
        closed: None,
    };

    /// Ends every step of the client, running or detached, and every later one, with
    /// `ClientClosed`. What a dropped step held goes with it: its connection is closed, a cursor
    /// it was reading is killed (best effort, by the crate), its session goes back to the pool.
    pub fn close(&self) {
        if let Some(closed) = &self.closed {
            closed.cancel();
        }
    }

    async fn enter(&self) -> Option<OwnedSemaphorePermit> {
        // The semaphore is never closed.
        self.slots.clone()?.acquire_owned().await.ok()
    }

    /// A slot if one is free now; `Err` when every slot is busy.
    fn try_enter(&self) -> std::result::Result<Option<OwnedSemaphorePermit>, ()> {
        match &self.slots {
            Some(slots) => slots.clone().try_acquire_owned().map(Some).map_err(|_| ()),
            None => Ok(None),
        }
    }
}

/// When an operation runs out of time (`timeoutMS`) and how long one round trip may take
/// (`socketTimeoutMS`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Deadline {
    at: Option<Instant>,
    timeout: Option<Duration>,
    socket: Option<Duration>,
    retry_reads: bool,
}

impl Deadline {
    /// Runs a retryable read (the command that opens a cursor, a count, a distinct; never a
    /// getMore or a user's command) under the deadline, as `run`, with the official driver's
    /// retryable read: a first attempt that exceeded `socketTimeoutMS` (a `MongoNetworkTimeoutError`
    /// there) is retried once, unless `retryReads` is off or `timeoutMS` expired meanwhile.
    /// `step` makes an attempt from `input`, which is cloned only when a retry is possible;
    /// `retryable: false` (a user's command, an aggregate that writes with `$out` or `$merge`) runs
    /// it as `run`.
    ///
    /// The one place rumongo retries: the crate retries the failures it sees itself (network
    /// errors, retryable server codes) within an attempt, but not a socket timeout, which is
    /// rumongo's (the attempt is abandoned here, and its command fails in the command events).
    pub async fn run_read<I: Clone, T: Send + 'static, S: Future<Output = Result<T>> + Send + 'static>(
        &self,
        pool: &PoolGate,
        retryable: bool,
        input: I,
        step: impl Fn(I) -> S,
    ) -> Result<T> {
        if !(retryable && self.retry_reads && self.socket.is_some()) {
            return self.run(pool, step(input)).await;
        }
        match self.run(pool, step(input.clone())).await {
            Err(Error::SocketTimeout(_)) if !self.expired() => self.run(pool, step(input)).await,
            result => result,
        }
    }

    /// Whether `timeoutMS` has passed.
    fn expired(&self) -> bool {
        self.at.is_some_and(|at| at <= Instant::now())
    }

    /// Runs one network step under the deadline. An expired `timeoutMS` fails with
    /// `OperationTimeout` (so does the server's `MaxTimeMSExpired` under a `timeoutMS`); a round
    /// trip longer than `socketTimeoutMS` fails with `SocketTimeout`. The step holds a slot of
    /// `pool` while it runs; waiting for one counts against the limits.
    ///
    /// A step that runs out of time is not dropped where it stands: the caller gets the error at
    /// once, and the step goes on in the background with its slot (at most `DETACHED_GRACE`).
    /// Dropped while its checkout request waits in the crate's pool, or while the connection made
    /// for it is being established, it would leave the pool short of a connection that the gate
    /// counts as free, and the next step would queue behind a request nobody waits for.
    ///
    /// The client's `close()` ends the step where it stands (see `PoolGate::close`).
    pub async fn run<T: Send + 'static>(
        &self,
        pool: &PoolGate,
        step: impl Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        let commands = StepCommands::default();
        let Some(closed) = &pool.closed else {
            return self.run_open(pool, step, &commands).await;
        };
        tokio::select! {
            biased;
            () = closed.cancelled() => {
                // The commands the step had started end as the official driver ends them when its
                // client closes: a `commandFailed` (and its span) with `MongoClientClosedError`.
                commands.abandon(Error::ClientClosed);
                Err(Error::ClientClosed)
            }
            result = self.run_open(pool, step, &commands) => result,
        }
    }

    /// `run` while the client is open; `commands` records what the step starts.
    async fn run_open<T: Send + 'static>(
        &self,
        pool: &PoolGate,
        step: impl Future<Output = Result<T>> + Send + 'static,
        commands: &StepCommands,
    ) -> Result<T> {
        let remaining = self.at.map(|at| at.saturating_duration_since(Instant::now()));
        if remaining == Some(Duration::ZERO) {
            // Expired: what needs no I/O (a batch already received) is still returned, but no
            // request may race the timer's millisecond granularity.
            let Ok(slot) = pool.try_enter() else {
                return Err(self.operation_timeout());
            };
            let mut step = Box::pin(commands.scope(step));
            return match poll_fn(|cx| Poll::Ready(step.as_mut().poll(cx))).await {
                Poll::Ready(result) => result,
                Poll::Pending => {
                    finish_detached(step, slot, pool);
                    commands.abandon(self.operation_timeout());
                    Err(self.operation_timeout())
                }
            };
        }
        let limit = match (remaining, self.socket) {
            (Some(remaining), Some(socket)) => remaining.min(socket),
            (remaining, socket) => match remaining.or(socket) {
                Some(limit) => limit,
                None => {
                    // Never cancelled here, but it must not take a connection past the gate.
                    let _slot = pool.enter().await;
                    return commands.scope(step).await;
                }
            },
        };
        let started = tokio::time::Instant::now();
        let timed_out = || {
            if remaining == Some(limit) {
                self.operation_timeout()
            } else {
                Error::SocketTimeout(limit.as_millis() as u64)
            }
        };
        let Ok(slot) = tokio::time::timeout(limit, pool.enter()).await else {
            return Err(timed_out());
        };
        let mut step = Box::pin(commands.scope(step));
        match tokio::time::timeout_at(started + limit, step.as_mut()).await {
            Ok(Err(Error::Driver(error))) if self.timeout.is_some() && is_max_time_expired(&error) => {
                Err(self.operation_timeout())
            }
            Ok(result) => result,
            Err(_) => {
                finish_detached(step, slot, pool);
                commands.abandon(timed_out());
                Err(timed_out())
            }
        }
    }

    fn operation_timeout(&self) -> Error {
        Error::OperationTimeout(self.timeout.unwrap_or_default().as_millis() as u64)
    }
}

/// Lets a step whose caller gave up run on, holding its pool slot, until it ends,
/// `DETACHED_GRACE` passes or the client closes; its result is dropped (a cursor it opened is
/// killed).
fn finish_detached<T: Send + 'static>(
    step: Pin<Box<impl Future<Output = Result<T>> + Send + 'static>>,
    slot: Option<OwnedSemaphorePermit>,
    pool: &PoolGate,
) {
    let closed = pool.closed.clone().unwrap_or_default();
    tokio::spawn(async move {
        tokio::select! {
            () = closed.cancelled() => {}
            _ = tokio::time::timeout(DETACHED_GRACE, step) => {}
        }
        drop(slot);
    });
}

fn is_max_time_expired(error: &mongodb::error::Error) -> bool {
    matches!(error.kind.as_ref(), ErrorKind::Command(command) if command.code == MAX_TIME_MS_EXPIRED)
}
