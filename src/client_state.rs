//! What a client shares with every database, collection and cursor made from it: its driver
//! client (until `close()`), its open cursors, its timeouts and the signal its `close()` sends to the steps in flight. It sits below both
//! `client.rs` (which creates it) and the handles that use it, so neither depends on the other.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::{
    cursor::{CursorOwner, NativeCursor, OpenCursors, OpenedCursor},
    deadline::{ClientTimeouts, CloseSignal, CursorTimeout},
    error::{Error, Result},
    format::BatchOutput,
    session::{DriverCursor, Sessions},
};

/// State shared by a client and every database, collection and cursor made from it.
pub struct ClientState {
    client: Mutex<Option<mongodb::Client>>,
    pub cursors: OpenCursors,
    /// `timeoutMS` and `socketTimeoutMS`, which the crate does not implement.
    pub timeouts: ClientTimeouts,
    /// Cancelled by `close()`: ends every step in flight.
    pub closing: CloseSignal,
    /// The explicit sessions its reads may name (`session.rs`); its `close()` ends them.
    pub sessions: Arc<Sessions>,
}

impl ClientState {
    /// The driver client, or a `Closed` error once `close()` ran.
    pub fn client(&self) -> Result<mongodb::Client> {
        lock(&self.client).clone().ok_or(Error::Closed("client"))
    }

    /// Whether `close()` ran.
    pub fn is_closed(&self) -> bool {
        lock(&self.client).is_none()
    }

    /// Takes the driver client for `close()`: `None` once it ran.
    pub fn take_client(&self) -> Option<mongodb::Client> {
        lock(&self.client).take()
    }

    /// Wraps a cursor a find or aggregate of this client just opened (see `NativeCursor::open`),
    /// registered so that `close()` kills it.
    pub async fn open_cursor(
        self: &Arc<Self>,
        cursor: DriverCursor,
        single_batch: bool,
        output: BatchOutput,
        timeout: CursorTimeout,
        limit: Option<u64>,
    ) -> Result<OpenedCursor> {
        NativeCursor::open(cursor, single_batch, output, self.clone(), timeout, limit).await
    }

    pub fn new(client: mongodb::Client, timeouts: ClientTimeouts, closing: CloseSignal) -> Self {
        Self {
            client: Mutex::new(Some(client)),
            cursors: OpenCursors::default(),
            timeouts,
            closing,
            sessions: Arc::default(),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding these short critical sections leaves the data valid.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl CursorOwner for ClientState {
    fn cursors(&self) -> &OpenCursors {
        &self.cursors
    }

    fn closing(&self) -> &CloseSignal {
        &self.closing
    }

    fn driver(&self) -> Result<mongodb::Client> {
        self.client()
    }
}
