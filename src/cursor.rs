//! `NativeCursor`: a server cursor read one raw batch at a time.

use std::{
    collections::VecDeque,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, OnceLock, Weak,
    },
    time::Duration,
};

use bson::doc;
use mongodb::raw_batch_cursor::RawBatch;
use napi::{bindgen_prelude::PromiseRaw, Env};
use napi_derive::napi;
use tokio::sync::{watch, Mutex};
use tokio_util::sync::CancellationToken;

use crate::{
    batch::{document_count, encode_batch, encode_reply_in_parts, is_last_reply, PendingBatch},
    deadline::{CloseSignal, CursorTimeout, Deadline, DETACHED_GRACE},
    error::{Error, Result},
    events::{self, StepCommands},
    format::{BatchOutput, DocumentBatch},
    session::{DriverCursor, SessionSlot},
    task::{received, spawn},
};

/// How long `close()` waits for the reply to its killCursors before it resolves anyway (the kill
/// goes on in the background): a server that does not answer must not hold `close()`, or a
/// `break`, for good. The official driver waits for the reply too (`AbstractCursor.cleanup`).
const KILL_WAIT: Duration = Duration::from_secs(2);

enum CursorState {
    Open(Box<DriverCursor>),
    /// Drained or closed by its owner: no more batches.
    Done,
    /// A read failed and the cursor was dropped: reading on is an error, since a batch may be
    /// missing, never the end of the results.
    Failed,
    /// Closed because its client closed: reading on is an error, not an empty result.
    ClientClosed,
}

/// What reads of a cursor share.
struct Reads {
    state: CursorState,
    /// Batches of a reply encoded in parts, served before the next getMore.
    pending: VecDeque<PendingBatch>,
    /// How many more documents a find with a `limit` may return.
    left: Option<u64>,
}

/// Where a cursor's killCursors goes, from its first reply (the crate does not expose it).
struct KillTarget {
    database: String,
    collection: String,
    id: i64,
}

impl KillTarget {
    fn of(reply: &RawBatch) -> Option<Self> {
        let cursor = reply.as_raw_document().get_document("cursor").ok()?;
        let (database, collection) = cursor.get_str("ns").ok()?.split_once('.')?;
        Some(Self {
            database: database.to_owned(),
            collection: collection.to_owned(),
            id: cursor.get_i64("id").ok()?,
        })
    }
}

/// A cursor's state shared by its JS handle (`NativeCursor`), its reads in flight and its client's
/// registry (`OpenCursors`), through which the client closes it.
pub struct SharedCursor {
    reads: Mutex<Reads>,
    /// Reads take a ticket when JS asks (JS order) and fetch in ticket order: several can be in
    /// flight, so one batch is encoded while the next getMore runs, and none is served out of order.
    tickets: AtomicU64,
    serving: watch::Sender<u64>,
    /// Cancelled by the owner's `close()`: every read, waiting or in flight, ends at once without
    /// a batch, so that the getMores requested ahead never hold `close()` (or a `break`) up.
    closing: CancellationToken,
    /// Whether the server may still hold the cursor: false once it is drained, failed (the driver
    /// cursor dropped, which kills it) or closed. Read without the lock, which a read may hold.
    open: AtomicBool,
    /// Where the owner's `close()` sends killCursors, from the first reply.
    kill_target: OnceLock<KillTarget>,
    /// The explicit session the cursor was opened in: its killCursors carries the session's
    /// `lsid`, as the official driver's does.
    session: Option<Arc<SessionSlot>>,
}

/// A read's turn to fetch; ending it (dropped on any path) lets the next ticket fetch.
struct Turn<'a>(&'a SharedCursor);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.0.serving.send_modify(|serving| *serving += 1);
    }
}

impl SharedCursor {
    fn new(cursor: DriverCursor, limit: Option<u64>) -> Self {
        let session = match &cursor {
            DriverCursor::Explicit(_, slot) => Some(slot.clone()),
            DriverCursor::Implicit(_) => None,
        };
        Self {
            reads: Mutex::new(Reads {
                state: CursorState::Open(Box::new(cursor)),
                pending: VecDeque::new(),
                left: limit,
            }),
            tickets: AtomicU64::new(0),
            serving: watch::Sender::new(0),
            closing: CancellationToken::new(),
            open: AtomicBool::new(true),
            kill_target: OnceLock::new(),
            session,
        }
    }

    /// Leaves the driver cursor for good (drained, failed or closed by the client).
    fn end(&self, reads: &mut Reads, state: CursorState) {
        reads.state = state;
        self.open.store(false, Ordering::Release);
    }

    /// Waits until the reads asked for before `ticket` have fetched their batch.
    async fn turn(&self, ticket: u64) -> Turn<'_> {
        let mut serving = self.serving.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = serving.wait_for(|&now| now == ticket).await;
        Turn(self)
    }

    /// Reads the batch of `ticket` once the reads before it have fetched theirs: a part of a reply
    /// encoded in parts, or the next server batch (for ticket 0, the first reply, from the find).
    /// `None` once the owner closed the cursor, even for a read already in flight: its outcome, a
    /// batch or an error nobody asked for yet, goes nowhere. Its getMore is not dropped where it
    /// stands (the crate closes the connection of a dropped operation: a new connection for every
    /// early `break`, and on FerretDB the end of every cursor opened on that connection, other
    /// queries' included): it finishes in the background, at most `DETACHED_GRACE`, after which it
    /// is dropped and its getMore ends with `commandFailed`.
    async fn read(
        self: &Arc<Self>,
        ticket: u64,
        single_batch: bool,
        in_parts: bool,
        output: BatchOutput,
        deadline: Deadline,
        closing: &CloseSignal,
    ) -> Result<Option<DocumentBatch>> {
        let (cursor, closing) = (self.clone(), closing.clone());
        let commands = StepCommands::default();
        let mut read = Box::pin(commands.scope(async move {
            cursor
                .read_open(ticket, single_batch, in_parts, output, deadline, &closing)
                .await
        }));
        tokio::select! {
            biased;
            () = self.closing.cancelled() => {
                tokio::spawn(async move {
                    if tokio::time::timeout(DETACHED_GRACE, read).await.is_err() {
                        // Dropped unanswered: its getMore still gets its `commandFailed` (and its
                        // span ends).
                        commands.abandon(Error::CursorClosed);
                    }
                });
                Ok(None)
            }
            read = &mut read => read,
        }
    }

    /// `read` while the owner has not closed the cursor.
    async fn read_open(
        &self,
        ticket: u64,
        single_batch: bool,
        in_parts: bool,
        output: BatchOutput,
        deadline: Deadline,
        closing: &CloseSignal,
    ) -> Result<Option<DocumentBatch>> {
        let turn = self.turn(ticket).await;
        let mut reads = self.reads.lock().await;
        if self.closing.is_cancelled() {
            // Its turn came after the owner's close(): no getMore for a closed cursor.
            return Ok(None);
        }
        if let Some(pending) = reads.pending.pop_front() {
            drop(reads);
            drop(turn);
            return received(pending).await.map(Some);
        }
        // The cursor leaves the state for the step (a step that runs out of time may go on in the
        // background: see `Deadline::run`); while the lock is held nobody sees the placeholder.
        let mut cursor = match std::mem::replace(&mut reads.state, CursorState::Failed) {
            CursorState::Open(cursor) => cursor,
            CursorState::Done => {
                reads.state = CursorState::Done;
                return Ok(None);
            }
            CursorState::Failed => return Err(Error::CursorFailed),
            CursorState::ClientClosed => {
                reads.state = CursorState::ClientClosed;
                return Err(Error::Closed("client"));
            }
        };
        // A getMore is never retried: after a failure or a timeout the cursor is dropped
        // (killed on the server), so a read can only fail, never skip a batch.
        let step = async move {
            let batch = cursor.next_batch().await?;
            Ok((cursor, batch))
        };
        let (cursor, batch) = match deadline.run(closing, step).await {
            Ok(fetched) => fetched,
            Err(error) => {
                // The driver cursor went with the step (killed on the server).
                self.end(&mut reads, CursorState::Failed);
                return Err(error);
            }
        };
        let Some(batch) = batch else {
            self.end(&mut reads, CursorState::Done);
            return Ok(None);
        };
        if ticket == 0 {
            if let Some(target) = KillTarget::of(&batch) {
                let _ = self.kill_target.set(target);
            }
        }
        // A client-side `limit`, as in the official driver: a server (or proxy) that keeps the
        // cursor open past it must not make the cursor return more. The rest is dropped, and so
        // is the cursor (killed on the server).
        let keep = match reads.left {
            Some(left) => {
                let count = match document_count(&batch) {
                    Ok(count) => count as u64,
                    Err(error) => {
                        self.end(&mut reads, CursorState::Failed);
                        return Err(error);
                    }
                };
                reads.left = Some(left.saturating_sub(count));
                (count >= left).then_some(left as usize)
            }
            None => None,
        };
        // The last reply: JS stops reading here without asking again.
        let last = single_batch || keep.is_some();
        if !(last || is_last_reply(&batch)) {
            reads.state = CursorState::Open(cursor);
        } else {
            self.end(&mut reads, CursorState::Done);
        }
        // Ticket 0 reads the first reply (tickets are served in order, and nothing is pending
        // before it), and a read `in_parts` a change stream's getMore reply (its reader asks for
        // nothing ahead, so nothing is pending either): encoded in parts, see
        // `encode_reply_in_parts`.
        if ticket == 0 || in_parts {
            let (encode_first, rest) = encode_reply_in_parts(batch, output, last, keep)?;
            reads.pending = rest;
            drop(reads);
            drop(turn);
            return encode_first().map(Some);
        }
        // Encoding needs no cursor: let close() and the next getMore proceed meanwhile.
        drop(reads);
        drop(turn);
        Ok(Some(encode_batch(batch, output, last, keep).await?))
    }

    /// Drops the driver cursor, which kills it on the server unless it was exhausted.
    pub async fn close_for_client(&self) {
        let mut reads = self.reads.lock().await;
        self.end(&mut reads, CursorState::ClientClosed);
        reads.pending.clear();
    }

    /// The owner's `close()`: ends the reads in flight (see `read`), then kills the server cursor
    /// if it may still be open and resolves once the server answered the killCursors, or after
    /// `KILL_WAIT`, as the official driver's `close()` awaits its killCursors. A process that
    /// exits right after leaves no cursor open on the server. It never waits for a getMore in
    /// flight: the driver cursor is dropped once that getMore is done with it, in the background.
    async fn close(self: &Arc<Self>, client: &dyn CursorOwner) {
        if !self.open.swap(false, Ordering::AcqRel) {
            // Drained, failed or closed already: nothing to kill, and a failed cursor keeps failing
            // (its reads are not ended as closed ones). The parts of a last reply not read yet go.
            let cursor = self.clone();
            tokio::spawn(async move { cursor.reads.lock().await.pending.clear() });
            return;
        }
        self.closing.cancel();
        let target = self.kill_target.get();
        let mut killed = false;
        if let (Some(target), Ok(driver)) = (target, client.driver()) {
            let kill = doc! { "killCursors": target.collection.as_str(), "cursors": [target.id] };
            let database = driver.database(&target.database);
            let session = self.session.clone();
            let run = async move {
                Ok(match session {
                    None => database.run_command(kill).await?,
                    Some(slot) => {
                        let mut session = slot.take().await?;
                        database.run_command(kill).session(&mut *session).await?
                    }
                })
            };
            let closing = client.closing().clone();
            // In a task of its own: it goes on after `KILL_WAIT`, and its errors are ignored, as
            // the official driver ignores them.
            let kill = events::own_kill(async move { Deadline::default().run(&closing, run).await });
            killed = matches!(
                tokio::time::timeout(KILL_WAIT, tokio::spawn(kill)).await,
                Ok(Ok(Ok(_)))
            );
        }
        // The lock waits for a read in flight: the driver cursor is dropped in the background.
        let unanswered = target
            .filter(|_| !killed)
            .map(|target| (target.database.clone(), target.collection.clone(), target.id));
        let cursor = self.clone();
        tokio::spawn(async move {
            let mut reads = cursor.reads.lock().await;
            reads.pending.clear();
            let state = std::mem::replace(&mut reads.state, CursorState::Done);
            drop(reads);
            if let CursorState::Open(mut driver_cursor) = state {
                if killed {
                    // Killed and answered: dropping it must not send a second killCursors.
                    driver_cursor.forget_server_cursor();
                } else if let Some((database, collection, id)) = unanswered {
                    // Not answered in time: the crate's kill on drop may be a second one, not
                    // reported (see `events::DUPLICATE_KILLS`).
                    events::expect_duplicate_kill(&database, &collection, id);
                }
            }
        });
    }

    /// Whether the server cursor may still be open (a cursor busy in a getMore counts as open).
    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }
}

/// The open cursors of one client, which its `close()` kills on the server (held weakly: a
/// cursor JS dropped is gone from here too).
#[derive(Default)]
pub struct OpenCursors(std::sync::Mutex<Vec<Weak<SharedCursor>>>);

impl OpenCursors {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Weak<SharedCursor>>> {
        // A panic while holding these short critical sections leaves the list valid.
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Remembers an open cursor so that `close()` can kill it on the server.
    fn track(&self, slot: &Arc<SharedCursor>) {
        let mut cursors = self.lock();
        cursors.retain(|cursor| cursor.strong_count() > 0);
        cursors.push(Arc::downgrade(slot));
    }

    /// How many are open on the server (not exhausted, failed or closed).
    pub fn open_count(&self) -> u32 {
        let mut cursors = self.lock();
        cursors.retain(|cursor| cursor.strong_count() > 0);
        cursors
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|slot| slot.is_open())
            .count() as u32
    }

    /// Every cursor still alive, forgotten here (its client is closing).
    pub fn take_all(&self) -> Vec<Arc<SharedCursor>> {
        self.lock()
            .drain(..)
            .filter_map(|cursor| cursor.upgrade())
            .collect()
    }
}

/// What a find or aggregate resolves to: its first batch (the first part of the first reply,
/// encoded) and, while the server has more, the cursor that reads the rest. A result of one batch
/// (a `findOne`, a page of 20) comes without a cursor: creating the JS object of a native class,
/// and finalizing it later, cost more than the rest of the JS side of a small read.
#[napi(object, object_from_js = false)]
pub struct OpenedCursor {
    pub first_batch: Option<DocumentBatch>,
    pub cursor: Option<NativeCursor>,
}

/// An open find or aggregate cursor, past its first batch.
#[napi]
pub struct NativeCursor {
    slot: Arc<SharedCursor>,
    /// `singleBatch` without a limit: the crate has no such option, so stop after one batch.
    single_batch: bool,
    /// What each batch is prepared as for JS.
    output: BatchOutput,
    /// The deadline of its getMores (`timeoutMS`, `socketTimeoutMS`).
    timeout: CursorTimeout,
    /// Its client: the close signal that ends its getMores, the driver that `close()` kills with.
    client: Arc<dyn CursorOwner>,
}

/// What a cursor needs of the client that owns it. The client's state implements it
/// (`client_state.rs`, which sits above this module and opens the cursors): named here, the state
/// would make the two modules import each other.
pub trait CursorOwner: Send + Sync {
    /// The client's open cursors, which its `close()` closes.
    fn cursors(&self) -> &OpenCursors;
    /// What ends each getMore, and a cursor's killCursors, when the client closes.
    fn closing(&self) -> &CloseSignal;
    /// The driver client, until the client closed.
    fn driver(&self) -> Result<mongodb::Client>;
}

impl NativeCursor {
    /// Wraps a cursor the find or aggregate just opened and reads its first batch (the first part
    /// of the first reply, no I/O), so JS gets it without one more round trip to the runtime (the
    /// first document of a 10k find 50-80 µs sooner, BENCHMARKS.md session 8).
    pub async fn open(
        cursor: DriverCursor,
        single_batch: bool,
        output: BatchOutput,
        client: Arc<dyn CursorOwner>,
        timeout: CursorTimeout,
        limit: Option<u64>,
    ) -> Result<OpenedCursor> {
        let slot = Arc::new(SharedCursor::new(cursor, limit));
        client.cursors().track(&slot);
        let ticket = slot.tickets.fetch_add(1, Ordering::Relaxed);
        // The first reply came with the find: reading it takes no connection.
        let first_batch = slot
            .read(
                ticket,
                single_batch,
                false,
                output,
                timeout.next(),
                &CloseSignal::NONE,
            )
            .await?;
        // Without more batches the driver cursor is drained and dropped already (`read`).
        let more = first_batch.as_ref().is_some_and(|batch| batch.has_more);
        Ok(OpenedCursor {
            first_batch,
            cursor: more.then_some(Self {
                slot,
                single_batch,
                output,
                timeout,
                client,
            }),
        })
    }
}

#[napi]
impl NativeCursor {
    /// The next server batch, or `null` once the cursor is exhausted or closed; an error once a read
    /// failed. Calls made before earlier ones resolve get the following batches, in call order.
    /// `inParts`: a reply this call fetches is handed over in parts, as a first reply is (see
    /// `encode_reply_in_parts`): for a reader that asks for no batch ahead (a change stream), so
    /// that JS decodes the first events while the rest is encoded. A reader that asks ahead gains
    /// nothing by it: the next reply is encoded while JS decodes this one.
    #[napi(catch_unwind, ts_return_type = "Promise<DocumentBatch | null>")]
    pub fn next_batch<'env>(
        &self,
        env: &'env Env,
        in_parts: Option<bool>,
    ) -> napi::Result<PromiseRaw<'env, Option<DocumentBatch>>> {
        let (slot, single_batch, output) = (self.slot.clone(), self.single_batch, self.output);
        let (deadline, client) = (self.timeout.next(), self.client.clone());
        let ticket = slot.tickets.fetch_add(1, Ordering::Relaxed);
        spawn(env, async move {
            slot.read(
                ticket,
                single_batch,
                in_parts.unwrap_or(false),
                output,
                deadline,
                client.closing(),
            )
            .await
        })
    }

    /// Ends the reads in flight (they resolve to `null`) and kills the server cursor if it may
    /// still be open; resolves once the kill is answered, or after a bound (see
    /// `SharedCursor::close`). Idempotent.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let (slot, client) = (self.slot.clone(), self.client.clone());
        spawn(env, async move {
            slot.close(client.as_ref()).await;
            Ok(())
        })
    }
}
