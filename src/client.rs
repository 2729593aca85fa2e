//! `NativeClient`: one `mongodb::Client` plus the cursors it must close.

use std::{
    sync::{Arc, Mutex, Weak},
    time::Duration,
};

use bson::doc;
use napi::{bindgen_prelude::PromiseRaw, Env};
use napi_derive::napi;

use crate::{
    collection::NativeCollection,
    connect::{client_options, ConnectOptions},
    cursor::CursorSlot,
    database::NativeDatabase,
    deadline::{ClientTimeouts, PoolGate},
    error::{Error, Result},
    events::{EventCallback, Monitor},
    task::spawn,
};

/// How long `close()` waits for in-flight work before it stops waiting: a cursor busy in a
/// getMore, or the kill of an abandoned cursor.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// The crate's `maxPoolSize` when the connection string sets none.
const DEFAULT_MAX_POOL_SIZE: u32 = 10;

/// State shared by a client and every collection and cursor made from it.
pub struct ClientState {
    client: Mutex<Option<mongodb::Client>>,
    cursors: Mutex<Vec<Weak<CursorSlot>>>,
    /// `timeoutMS` and `socketTimeoutMS`, which the crate does not implement.
    pub timeouts: ClientTimeouts,
    /// Slots of the connection pool: every step that may need a connection takes one first.
    pub pool: PoolGate,
}

impl ClientState {
    /// The driver client, or a `Closed` error once `close()` ran.
    pub fn client(&self) -> Result<mongodb::Client> {
        lock(&self.client).clone().ok_or(Error::Closed("client"))
    }

    /// Remembers an open cursor so that `close()` can kill it on the server.
    pub fn track(&self, slot: &Arc<CursorSlot>) {
        let mut cursors = lock(&self.cursors);
        cursors.retain(|cursor| cursor.strong_count() > 0);
        cursors.push(Arc::downgrade(slot));
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding these short critical sections leaves the data valid.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A connection to a MongoDB deployment (one connection pool per server).
#[napi]
pub struct NativeClient {
    state: Arc<ClientState>,
    monitor: Option<Arc<Monitor>>,
}

#[napi]
impl NativeClient {
    /// Parses the URI, selects a server and checks it answers `ping`, like the official
    /// driver's `MongoClient.connect`. `timeoutMs` and `socketTimeoutMs` (0 or absent: no limit)
    /// are enforced by rumongo, so the TypeScript layer takes them out of the URI. `options`: what
    /// a connection string cannot carry (`serverApi`, `driverInfo`, the password, which command
    /// events are wanted). `events` receives the monitoring events JS listens to (`eventMask`, see
    /// `events.rs`); command events only with `monitorCommands` or `traceCommands`.
    #[napi(catch_unwind)]
    pub async fn connect(
        uri: String,
        timeout_ms: Option<i64>,
        socket_timeout_ms: Option<i64>,
        options: Option<ConnectOptions>,
        #[napi(ts_arg_type = "((event: Buffer) => void) | undefined | null")] events: Option<EventCallback>,
        event_mask: Option<u32>,
    ) -> napi::Result<NativeClient> {
        let timeouts = ClientTimeouts::new(timeout_ms, socket_timeout_ms);
        let commands = options.as_ref().is_some_and(|options| {
            options.monitor_commands.unwrap_or(false) || options.trace_commands.unwrap_or(false)
        });
        let mut options = client_options(&uri, options).await?;
        let monitor = events.map(|callback| Monitor::new(callback, event_mask.unwrap_or(0)));
        if let Some(monitor) = &monitor {
            monitor.install(&mut options, commands);
        }
        let pool = PoolGate::new(options.max_pool_size.unwrap_or(DEFAULT_MAX_POOL_SIZE));
        let client = mongodb::Client::with_options(options).map_err(Error::from_uri_error)?;
        let database = client
            .default_database()
            .unwrap_or_else(|| client.database("admin"));
        let ping = async move { Ok(database.run_command(doc! { "ping": 1 }).await?) };
        if let Err(error) = timeouts.start().run(&pool, ping).await {
            client.shutdown().immediate(true).await;
            return Err(error.into());
        }
        Ok(NativeClient {
            state: Arc::new(ClientState {
                client: Mutex::new(Some(client)),
                cursors: Mutex::new(Vec::new()),
                timeouts,
                pool,
            }),
            monitor,
        })
    }

    /// Sets which monitoring events JS listens to (bits in `monitoringEventNames()` order).
    #[napi(catch_unwind)]
    pub fn set_event_mask(&self, mask: u32) {
        if let Some(monitor) = &self.monitor {
            monitor.listen(mask);
        }
    }

    /// A handle on `db.collection`; no I/O.
    #[napi(catch_unwind)]
    pub fn collection(&self, db: String, name: String) -> napi::Result<NativeCollection> {
        let client = self.state.client()?;
        Ok(NativeCollection::new(
            client.database(&db).collection(&name),
            self.state.clone(),
        ))
    }

    /// A handle on database `db`, for commands; no I/O.
    #[napi(catch_unwind)]
    pub fn database(&self, db: String) -> napi::Result<NativeDatabase> {
        let client = self.state.client()?;
        Ok(NativeDatabase::new(client.database(&db), self.state.clone()))
    }

    /// How many of this client's cursors are open on the server (not exhausted, failed or
    /// closed): lets a soak test prove that cursors are not leaked.
    #[napi(getter, catch_unwind)]
    pub fn open_cursor_count(&self) -> u32 {
        let mut cursors = lock(&self.state.cursors);
        cursors.retain(|cursor| cursor.strong_count() > 0);
        cursors
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|slot| slot.is_open())
            .count() as u32
    }

    #[napi(getter, catch_unwind)]
    pub fn is_closed(&self) -> bool {
        lock(&self.state.client).is_none()
    }

    /// Kills the client's open cursors on the server, then closes its connections. Idempotent.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let state = self.state.clone();
        spawn(env, async move {
            let Some(client) = lock(&state.client).take() else {
                return Ok(());
            };
            let cursors: Vec<_> = lock(&state.cursors)
                .drain(..)
                .filter_map(|cursor| cursor.upgrade())
                .collect();
            for slot in cursors {
                // A cursor still busy after the grace period is dropped with the client instead.
                let _ = tokio::time::timeout(CLOSE_GRACE, slot.close_for_client()).await;
            }
            // A non-immediate shutdown waits for the killCursors of the cursors just closed.
            if tokio::time::timeout(CLOSE_GRACE, client.clone().shutdown())
                .await
                .is_err()
            {
                client.shutdown().immediate(true).await;
            }
            Ok(())
        })
    }
}
