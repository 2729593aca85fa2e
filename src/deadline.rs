//! Client-side time limits, which the crate does not have: `timeoutMS` (a deadline for a whole
//! operation, or for a cursor's lifetime) and `socketTimeoutMS` (a bound on each round trip).
//!
//! Every network step of an operation (the command that opens a cursor, each getMore, a count or
//! distinct) runs through `Deadline::run`. When a limit passes, the caller gets the error at once
//! and the step finishes in the background (bounded), so that the connection pool gets back what
//! it lent: see `CloseSignal` and `Deadline::run`. A dropped cursor is killed.
//!
//! The client's `close()` ends every step at once (`CloseSignal::close`), as the official driver
//! closes its checked-out connections: a read waiting for a server that never answers fails with
//! `ClientClosed` instead of holding `close()` up.

use std::{
    future::{poll_fn, Future},
    pin::Pin,
    task::Poll,
    time::{Duration, Instant},
};

use mongodb::{error::ErrorKind, CheckoutWatch};
use tokio_util::sync::CancellationToken;

use crate::{
    error::{Error, Result},
    events::StepCommands,
    options::OperationOptions,
    session::SessionWatch,
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
/// pooled connection for good.
pub const DETACHED_GRACE: Duration = Duration::from_secs(10);

/// Where the client's `close()` reaches the steps in flight: every step runs under it (see
/// `Deadline::run`), and `close()` ends them all at once.
///
/// It no longer limits how many steps run at once: `maxPoolSize` is the crate's, per server (as in
/// the official driver), applied after the server is selected. rumongo once handed out one slot
/// per pooled connection here, client-wide, before the crate selected a server, because the
/// crate's pool worker left the checkout requests of reads that gave up queued ahead of the next
/// read (~14 s after a timed-out burst); the vendored crate now drops them (vendor/README.md). The
/// client-wide slots made `maxPoolSize: 2` over 3 replica-set members 2 reads in flight (official:
/// 6) and let a slow member stall the reads routed to the others.
#[derive(Clone, Debug, Default)]
pub struct CloseSignal {
    /// Cancelled by the client's `close()`.
    closed: Option<CancellationToken>,
}

impl CloseSignal {
    pub fn new() -> Self {
        Self {
            closed: Some(CancellationToken::new()),
        }
    }

    /// For a step that needs no connection (a cursor's first batch, already received).
    pub const NONE: CloseSignal = CloseSignal { closed: None };

    /// Ends every step of the client, running or detached, and every later one, with
    /// `ClientClosed`. What a dropped step held goes with it: its connection is closed, a cursor
    /// it was reading is killed (best effort, by the crate), its session goes back to the pool.
    pub fn close(&self) {
        if let Some(closed) = &self.closed {
            closed.cancel();
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
        closing: &CloseSignal,
        retryable: bool,
        input: I,
        step: impl Fn(I) -> S,
    ) -> Result<T> {
        if !(retryable && self.retry_reads && self.socket.is_some()) {
            return self.run(closing, step(input)).await;
        }
        match self.run(closing, step(input.clone())).await {
            Err(Error::SocketTimeout(_)) if !self.expired() => self.run(closing, step(input)).await,
            result => result,
        }
    }

    /// Whether `timeoutMS` has passed.
    fn expired(&self) -> bool {
        self.at.is_some_and(|at| at <= Instant::now())
    }

    /// Runs one network step under the deadline. An expired `timeoutMS` fails with
    /// `OperationTimeout` (so does the server's `MaxTimeMSExpired` under a `timeoutMS`); a round
    /// trip longer than `socketTimeoutMS` fails with `SocketTimeout`. Waiting for a connection (the
    /// crate's server selection and pool checkout) counts against the limits.
    ///
    /// A step that runs out of time with its command on the wire is not dropped where it stands:
    /// the caller gets the error at once, and the step goes on in the background (at most
    /// `DETACHED_GRACE`), so that its connection goes back to the pool when the server answers
    /// (dropped, the connection would be closed, and on the embedded server the cursors opened on
    /// it with it). One still waiting for a connection is dropped (see `give_up`).
    ///
    /// The client's `close()` ends the step where it stands (see `CloseSignal::close`).
    pub async fn run<T: Send + 'static>(
        &self,
        closing: &CloseSignal,
        step: impl Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        let commands = StepCommands::default();
        let Some(closed) = &closing.closed else {
            return self.run_open(closing, step, &commands).await;
        };
        tokio::select! {
            biased;
            () = closed.cancelled() => {
                // The commands the step had started end as the official driver ends them when its
                // client closes: a `commandFailed` (and its span) with `MongoClientClosedError`.
                commands.abandon(Error::ClientClosed);
                Err(Error::ClientClosed)
            }
            result = self.run_open(closing, step, &commands) => result,
        }
    }

    /// `run` while the client is open; `commands` records what the step starts.
    async fn run_open<T: Send + 'static>(
        &self,
        closing: &CloseSignal,
        step: impl Future<Output = Result<T>> + Send + 'static,
        commands: &StepCommands,
    ) -> Result<T> {
        let remaining = self.at.map(|at| at.saturating_duration_since(Instant::now()));
        if remaining == Some(Duration::ZERO) {
            // Expired: what needs no I/O (a batch already received) is still returned, but no
            // request may race the timer's millisecond granularity.
            let (watch, session) = (CheckoutWatch::default(), SessionWatch::default());
            let mut step = Box::pin(session.scope(watch.scope(commands.scope(step))));
            return match poll_fn(|cx| Poll::Ready(step.as_mut().poll(cx))).await {
                Poll::Ready(result) => result,
                Poll::Pending => {
                    give_up(step, &watch, &session, closing);
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
        let (watch, session) = (CheckoutWatch::default(), SessionWatch::default());
        let mut step = Box::pin(session.scope(watch.scope(commands.scope(step))));
        match tokio::time::timeout_at(started + limit, step.as_mut()).await {
            Ok(Err(Error::Driver(error))) if self.timeout.is_some() && is_max_time_expired(&error) => {
                Err(self.operation_timeout())
            }
            Ok(result) => result,
            Err(_) => {
                give_up(step, &watch, &session, closing);
                commands.abandon(timed_out());
                Err(timed_out())
            }
        }
    }

    fn operation_timeout(&self) -> Error {
        Error::OperationTimeout(self.timeout.unwrap_or_default().as_millis() as u64)
    }
}

/// What becomes of a step whose caller gave up. One that was lent a connection runs on until it
/// ends, `DETACHED_GRACE` passes or the client closes (its result is dropped, a cursor it opened is
/// killed). One still selecting a server or waiting for a connection is dropped: its checkout
/// request leaves the crate's queue (vendored patch), so a burst of reads that timed out waiting
/// leaves nothing queued ahead of the next read (a connection being established for it is still
/// established, and goes to the pool). One holding an explicit session is dropped too, its
/// connection closed (see `SessionWatch`).
fn give_up<T: Send + 'static>(
    step: Pin<Box<impl Future<Output = Result<T>> + Send + 'static>>,
    watch: &CheckoutWatch,
    session: &SessionWatch,
    closing: &CloseSignal,
) {
    if !watch.checked_out() {
        return;
    }
    if session.taken() {
        session.abandon();
        return;
    }
    let closed = closing.closed.clone().unwrap_or_default();
    tokio::spawn(async move {
        tokio::select! {
            () = closed.cancelled() => {}
            _ = tokio::time::timeout(DETACHED_GRACE, step) => {}
        }
    });
}

fn is_max_time_expired(error: &mongodb::error::Error) -> bool {
    matches!(error.kind.as_ref(), ErrorKind::Command(command) if command.code == MAX_TIME_MS_EXPIRED)
}
