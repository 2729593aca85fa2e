//! `NativeSession`: an explicit `mongodb::ClientSession` (causal consistency or snapshot reads)
//! that reads of its client run in, and the registry through which they find it.
//!
//! The TypeScript layer names a session in an operation's options by the number it was registered
//! under (`session: <id>`), so no operation needs a parameter of its own. An operation takes the
//! session for its command and, for a cursor, for each getMore: the crate sends `lsid`,
//! `afterClusterTime` / `atClusterTime` and `$clusterTime` from it, and records the times the
//! server answers with.

use std::{
    collections::HashMap,
    future::Future,
    ops::{Deref, DerefMut},
    sync::{
        atomic::{AtomicBool, AtomicU32, Ordering},
        Arc, Mutex, MutexGuard,
    },
    time::Duration,
};

use bson::{doc, Document, Timestamp};
use futures_util::StreamExt;
use mongodb::{
    raw_batch_cursor::{RawBatch, RawBatchCursor, SessionRawBatchCursor},
    ClientSession, ClusterTime,
};
use napi::{
    bindgen_prelude::{Buffer, PromiseRaw},
    Env,
};
use napi_derive::napi;
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use crate::{
    error::{Error, Result},
    task::spawn,
};

/// How long ending a session waits for a read of it in flight when its client closes: reads in
/// flight end at once then, so this only bounds a getMore that is not answered.
const END_GRACE: Duration = Duration::from_secs(5);

/// The times a session last saw, copied after each use: the getters read them without waiting for
/// a read of the session in flight.
#[derive(Default)]
struct SeenTimes {
    cluster_time: Option<ClusterTime>,
    operation_time: Option<Timestamp>,
}

impl SeenTimes {
    /// Takes the later of each time and `advances`'s (`None` is earlier than any time), as the
    /// official driver's getters show an advance at once, a read in flight or not.
    fn keep_later(&mut self, advances: &Advances) {
        self.cluster_time = self.cluster_time.take().max(advances.cluster_time.clone());
        self.operation_time = self.operation_time.max(advances.operation_time);
    }
}

/// Times JS gave `advanceClusterTime` / `advanceOperationTime` while a read held the session: that
/// read applies them when it lets the session go, so the next command of the session sends them.
#[derive(Default)]
struct Advances {
    cluster_time: Option<ClusterTime>,
    operation_time: Option<Timestamp>,
}

impl Advances {
    fn apply(&mut self, session: &mut ClientSession) {
        if let Some(time) = self.cluster_time.take() {
            session.advance_cluster_time(&time);
        }
        if let Some(time) = self.operation_time.take() {
            session.advance_operation_time(time);
        }
    }
}

tokio::task_local! {
    /// The watch of the step being run (see `Deadline::run`), which `SessionSlot::take` marks.
    static SESSION_WATCH: SessionWatch;
}

/// Whether a step took an explicit session, and whether its caller gave up on it. A step that
/// ran out of time is otherwise left to finish in the background (to give its connection back,
/// see `deadline::give_up`); one holding a session is dropped instead, its connection closed, as
/// the official driver closes a connection that timed out: the session is free at once for the
/// read's retry and for `endSession()`, which would otherwise wait for the abandoned step (up to
/// `DETACHED_GRACE`).
#[derive(Clone, Default)]
pub struct SessionWatch(Arc<SessionWatchState>);

#[derive(Default)]
struct SessionWatchState {
    taken: AtomicBool,
    abandoned: AtomicBool,
}

impl SessionWatch {
    /// Runs `step` under this watch.
    pub fn scope<F: Future>(&self, step: F) -> impl Future<Output = F::Output> {
        SESSION_WATCH.scope(self.clone(), step)
    }

    /// Whether the step took a session.
    pub fn taken(&self) -> bool {
        self.0.taken.load(Ordering::Acquire)
    }

    /// Whether the step's caller gave up on it and dropped it.
    fn abandoned(&self) -> bool {
        self.0.abandoned.load(Ordering::Acquire)
    }

    /// Says the step is dropped mid-flight: the session it holds is marked dirty when it lets it
    /// go (the server may still run its command), as the crate marks one after a network error.
    pub fn abandon(&self) {
        self.0.abandoned.store(true, Ordering::Release);
    }
}

/// One explicit session: the crate's session (`None` once ended) and what JS reads of it.
pub struct SessionSlot {
    session: Arc<AsyncMutex<Option<ClientSession>>>,
    /// The `lsid` document, `{ id: UUID }`, fixed for the session's life.
    id: Document,
    seen: Mutex<SeenTimes>,
    advances: Mutex<Advances>,
}

/// A session taken by one step of an operation (its command, or a getMore): the times the server
/// answered with are copied for the getters when the step lets it go.
pub struct SessionInUse {
    guard: OwnedMutexGuard<Option<ClientSession>>,
    slot: Arc<SessionSlot>,
    /// The watch of the step that took it, if it runs under one.
    watch: Option<SessionWatch>,
}

impl Deref for SessionInUse {
    type Target = ClientSession;
    fn deref(&self) -> &ClientSession {
        // `SessionSlot::take` made it only for a session that has not ended.
        self.guard.as_ref().expect("a session in use has not ended")
    }
}

impl DerefMut for SessionInUse {
    fn deref_mut(&mut self) -> &mut ClientSession {
        self.guard.as_mut().expect("a session in use has not ended")
    }
}

impl Drop for SessionInUse {
    fn drop(&mut self) {
        if let Some(session) = self.guard.as_mut() {
            if self.watch.as_ref().is_some_and(SessionWatch::abandoned) {
                session.mark_dirty();
            }
            lock(&self.slot.advances).apply(session);
            self.slot.copy_times(session);
        }
    }
}

impl SessionSlot {
    /// Takes the session for one step, once the step before it let it go; an error once it ended.
    pub async fn take(self: &Arc<Self>) -> Result<SessionInUse> {
        let guard = self.session.clone().lock_owned().await;
        if guard.is_none() {
            return Err(Error::InvalidArgument(
                "Cannot use a session that has ended".into(),
            ));
        }
        let watch = SESSION_WATCH.try_with(SessionWatch::clone).ok();
        if let Some(watch) = &watch {
            watch.0.taken.store(true, Ordering::Release);
        }
        Ok(SessionInUse {
            guard,
            slot: self.clone(),
            watch,
        })
    }

    /// Copies the session's times for the getters.
    fn copy_times(&self, session: &ClientSession) {
        let mut seen = lock(&self.seen);
        seen.cluster_time = session.cluster_time().cloned();
        seen.operation_time = session.operation_time();
    }

    /// Advances the session's times as `advances` says: at once when no read holds the session,
    /// else when the read lets it go (the lock on `advances` orders this with that read's drop).
    fn advance(&self, advances: Advances) {
        let mut pending = lock(&self.advances);
        // Two advances while one read holds the session: the later time is kept, whichever was
        // given last, as the official driver keeps it.
        pending.cluster_time = pending.cluster_time.take().max(advances.cluster_time);
        pending.operation_time = pending.operation_time.max(advances.operation_time);
        lock(&self.seen).keep_later(&pending);
        if let Ok(mut guard) = self.session.try_lock() {
            if let Some(session) = guard.as_mut() {
                pending.apply(session);
                self.copy_times(session);
            }
        }
    }

    /// Ends the session: its server session goes back to the client's pool, whose sessions the
    /// client ends on the server (`endSessions`) when it closes. Idempotent.
    async fn end(&self) {
        self.session.lock().await.take();
    }
}

/// The numbers of the sessions of every client of the process: a number names one session, so a
/// session passed to another client's read is found to be another client's.
static NEXT_NUMBER: AtomicU32 = AtomicU32::new(1);

/// The explicit sessions of one client, by the number JS names them with.
#[derive(Default)]
pub struct Sessions {
    slots: Mutex<HashMap<u32, Arc<SessionSlot>>>,
}

impl Sessions {
    fn register(&self, session: ClientSession) -> (u32, Arc<SessionSlot>) {
        let number = NEXT_NUMBER.fetch_add(1, Ordering::Relaxed);
        let slot = Arc::new(SessionSlot {
            id: session.id().clone(),
            session: Arc::new(AsyncMutex::new(Some(session))),
            seen: Mutex::default(),
            advances: Mutex::default(),
        });
        lock(&self.slots).insert(number, slot.clone());
        (number, slot)
    }

    /// The session JS named `number`: an error if this client has none of that number (another
    /// client's; JS refuses an ended one before).
    pub fn get(&self, number: u32) -> Result<Arc<SessionSlot>> {
        lock(&self.slots)
            .get(&number)
            .cloned()
            .ok_or_else(|| Error::InvalidArgument("ClientSession must be from the same MongoClient".into()))
    }

    fn forget(&self, number: u32) {
        lock(&self.slots).remove(&number);
    }

    /// Ends every session still open, for the client's `close()` (as the official driver ends its
    /// active sessions before it sends `endSessions`). A session busy past `END_GRACE` is left to
    /// be dropped with the client.
    pub async fn end_all(&self) {
        let slots: Vec<_> = lock(&self.slots).drain().map(|(_, slot)| slot).collect();
        for slot in slots {
            let _ = tokio::time::timeout(END_GRACE, slot.end()).await;
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding these short critical sections leaves the data valid.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Starts an explicit session of `client` and registers it in `sessions`. The crate's session
/// takes a server session from the client's pool: no I/O, so this runs to its end at once, as the
/// official driver's `startSession()` is synchronous.
pub fn start_session(
    client: &mongodb::Client,
    sessions: &Arc<Sessions>,
    causal_consistency: Option<bool>,
    snapshot: Option<bool>,
) -> Result<NativeSession> {
    let mut start = client.start_session();
    if let Some(causal_consistency) = causal_consistency {
        start = start.causal_consistency(causal_consistency);
    }
    if let Some(snapshot) = snapshot {
        start = start.snapshot(snapshot);
    }
    let session = napi::bindgen_prelude::block_on(async move { start.await })?;
    let (number, slot) = sessions.register(session);
    Ok(NativeSession {
        number,
        slot,
        sessions: sessions.clone(),
    })
}

#[napi]
pub struct NativeSession {
    number: u32,
    slot: Arc<SessionSlot>,
    sessions: Arc<Sessions>,
}

#[napi]
impl NativeSession {
    /// The number operations name this session by (`session` in their options).
    #[napi(getter, catch_unwind)]
    pub fn number(&self) -> u32 {
        self.number
    }

    /// The `lsid` document `{ id: UUID }`, as BSON.
    #[napi(getter, catch_unwind)]
    pub fn id(&self) -> napi::Result<Buffer> {
        Ok(self.slot.id.to_vec().map_err(Error::from)?.into())
    }

    /// `{ clusterTime: $clusterTime document | null, operationTime: Timestamp | null }` as BSON:
    /// the times the session last saw.
    #[napi(getter, catch_unwind)]
    pub fn times(&self) -> napi::Result<Buffer> {
        let seen = lock(&self.slot.seen);
        let cluster_time = match &seen.cluster_time {
            Some(time) => Some(bson::serialize_to_document(time).map_err(Error::from)?),
            None => None,
        };
        let times = doc! {
            "clusterTime": cluster_time,
            "operationTime": seen.operation_time,
        };
        Ok(times.to_vec().map_err(Error::from)?.into())
    }

    /// `advanceClusterTime`: `$clusterTime` (BSON `{ clusterTime, signature }`, checked by JS)
    /// becomes the session's if it is later than the session's.
    #[napi(catch_unwind)]
    pub fn advance_cluster_time(&self, cluster_time: Buffer) -> napi::Result<()> {
        let document = Document::from_reader(&cluster_time[..]).map_err(Error::from)?;
        let time: ClusterTime = bson::deserialize_from_document(document).map_err(Error::from)?;
        self.slot.advance(Advances {
            cluster_time: Some(time),
            operation_time: None,
        });
        Ok(())
    }

    /// `advanceOperationTime`: BSON `{ operationTime: Timestamp }` becomes the session's operation
    /// time (the next causally consistent read's `afterClusterTime`) if later than the session's.
    #[napi(catch_unwind)]
    pub fn advance_operation_time(&self, operation_time: Buffer) -> napi::Result<()> {
        let document = Document::from_reader(&operation_time[..]).map_err(Error::from)?;
        let time = document
            .get_timestamp("operationTime")
            .map_err(|_| Error::InvalidArgument("operationTime must be a Timestamp".into()))?;
        self.slot.advance(Advances {
            cluster_time: None,
            operation_time: Some(time),
        });
        Ok(())
    }

    /// Ends the session (waits for a read of it in flight to let it go). Idempotent.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn end<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let (slot, sessions, number) = (self.slot.clone(), self.sessions.clone(), self.number);
        spawn(env, async move {
            slot.end().await;
            sessions.forget(number);
            Ok(())
        })
    }
}

/// Opens the cursor of a crate action (`find`, `aggregate`, `run_raw_cursor_command`) in the
/// crate's implicit session, or in the explicit session `session` (an `Option<Arc<SessionSlot>>`)
/// names. A macro because the crate's actions share `batch()` and `session()` by name, not by a
/// trait; it returns from the enclosing async block with `?`.
macro_rules! open_driver_cursor {
    ($action:expr, $session:expr) => {{
        let action = $action;
        match $session {
            None => $crate::session::DriverCursor::from(action.batch().await?),
            Some(slot) => {
                let mut session = slot.take().await?;
                let cursor = action.session(&mut *session).batch().await?;
                $crate::session::DriverCursor::Explicit(cursor, slot)
            }
        }
    }};
}
pub(crate) use open_driver_cursor;

/// The crate's cursor an operation opened: in the crate's implicit session, or in an explicit
/// session that each getMore takes (so that it carries the session's `lsid` and `$clusterTime`).
pub enum DriverCursor {
    Implicit(RawBatchCursor),
    Explicit(SessionRawBatchCursor, Arc<SessionSlot>),
}

impl From<RawBatchCursor> for DriverCursor {
    fn from(cursor: RawBatchCursor) -> Self {
        Self::Implicit(cursor)
    }
}

impl DriverCursor {
    /// The next server reply (an empty batch of a tailable cursor included), `None` once drained.
    pub async fn next_batch(&mut self) -> Result<Option<RawBatch>> {
        Ok(match self {
            Self::Implicit(cursor) => cursor.next().await.transpose()?,
            Self::Explicit(cursor, slot) => {
                let mut session = slot.take().await?;
                let batch = cursor.stream(&mut session).next().await;
                batch.transpose()?
            }
        })
    }

    /// See `RawBatchCursor::forget_server_cursor` (vendor/README.md).
    pub fn forget_server_cursor(&mut self) {
        match self {
            Self::Implicit(cursor) => cursor.forget_server_cursor(),
            Self::Explicit(cursor, _) => cursor.forget_server_cursor(),
        }
    }
}
