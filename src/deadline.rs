//! Client-side time limits, which the crate does not have: `timeoutMS` (a deadline for a whole
//! operation, or for a cursor's lifetime) and `socketTimeoutMS` (a bound on each round trip).
//!
//! Every network step of an operation (the command that opens a cursor, each getMore, a count or
//! distinct) runs through `Deadline::run`. When a limit passes, its future is dropped: the crate
//! closes a connection dropped mid-command instead of reusing it, and a dropped cursor is killed.

use std::{
    future::{poll_fn, Future},
    pin::pin,
    task::Poll,
    time::{Duration, Instant},
};

use mongodb::error::ErrorKind;

use crate::{
    error::{Error, Result},
    options::OperationOptions,
};

/// The server's code for an expired `maxTimeMS`.
const MAX_TIME_MS_EXPIRED: i32 = 50;

/// The client's defaults: `timeoutMS` and `socketTimeoutMS` from the connection string or the
/// MongoClient options (zero or absent: no limit).
#[derive(Clone, Copy, Debug, Default)]
pub struct ClientTimeouts {
    pub operation: Option<Duration>,
    pub socket: Option<Duration>,
}

impl ClientTimeouts {
    pub fn new(timeout_ms: Option<i64>, socket_timeout_ms: Option<i64>) -> Self {
        let limit = |ms: Option<i64>| ms.filter(|ms| *ms > 0).map(|ms| Duration::from_millis(ms as u64));
        Self {
            operation: limit(timeout_ms),
            socket: limit(socket_timeout_ms),
        }
    }

    /// The deadline of a step that takes no options (the `ping` of `connect`).
    pub fn start(&self) -> Deadline {
        OperationTimeout {
            operation: self.operation,
            socket: self.socket,
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
            iteration,
        })
    }
}

/// The limits of one operation, and for a cursor how its getMores are bounded.
#[derive(Clone, Copy, Debug)]
pub struct OperationTimeout {
    operation: Option<Duration>,
    socket: Option<Duration>,
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
        }
    }

    /// `maxTimeMS` to send when the caller set none: the server stops working on an operation
    /// the client has given up on. Not in iteration mode: the server counts a cursor's
    /// `maxTimeMS` across all its getMores, which each get `timeoutMS` of their own there.
    pub fn max_time(&self, max_time: Option<Duration>) -> Option<Duration> {
        max_time.or(self.operation.filter(|_| !self.iteration))
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

/// When an operation runs out of time (`timeoutMS`) and how long one round trip may take
/// (`socketTimeoutMS`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Deadline {
    at: Option<Instant>,
    timeout: Option<Duration>,
    socket: Option<Duration>,
}

impl Deadline {
    /// Runs one network step under the deadline. An expired `timeoutMS` fails with
    /// `OperationTimeout` (so does the server's `MaxTimeMSExpired` under a `timeoutMS`); a round
    /// trip longer than `socketTimeoutMS` fails with `SocketTimeout`.
    pub async fn run<T>(&self, step: impl Future<Output = Result<T>>) -> Result<T> {
        let remaining = self.at.map(|at| at.saturating_duration_since(Instant::now()));
        if remaining == Some(Duration::ZERO) {
            // Expired: what needs no I/O (a batch already received) is still returned, but no
            // request may race the timer's millisecond granularity.
            let mut step = pin!(step);
            return match poll_fn(|cx| Poll::Ready(step.as_mut().poll(cx))).await {
                Poll::Ready(result) => result,
                Poll::Pending => Err(self.operation_timeout()),
            };
        }
        let limit = match (remaining, self.socket) {
            (Some(remaining), Some(socket)) => remaining.min(socket),
            (remaining, socket) => match remaining.or(socket) {
                Some(limit) => limit,
                None => return step.await,
            },
        };
        match tokio::time::timeout(limit, step).await {
            Ok(Err(Error::Driver(error))) if self.timeout.is_some() && is_max_time_expired(&error) => {
                Err(self.operation_timeout())
            }
            Ok(result) => result,
            Err(_) if remaining == Some(limit) => Err(self.operation_timeout()),
            Err(_) => Err(Error::SocketTimeout(limit.as_millis() as u64)),
        }
    }

    fn operation_timeout(&self) -> Error {
        Error::OperationTimeout(self.timeout.unwrap_or_default().as_millis() as u64)
    }
}

fn is_max_time_expired(error: &mongodb::error::Error) -> bool {
    matches!(error.kind.as_ref(), ErrorKind::Command(command) if command.code == MAX_TIME_MS_EXPIRED)
}
