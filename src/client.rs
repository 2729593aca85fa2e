//! `NativeClient`: one `mongodb::Client` plus the cursors it must close.

use std::{sync::Arc, time::Duration};

use bson::doc;
use napi::{bindgen_prelude::PromiseRaw, Env};
use napi_derive::napi;

use crate::{
    client_state::ClientState,
    collection::NativeCollection,
    connect::{client_options, ConnectOptions},
    database::NativeDatabase,
    deadline::{ClientTimeouts, CloseSignal},
    error::Error,
    events::{EventCallback, Monitor},
    oidc::OidcCallbackFunction,
    session::{start_session, NativeSession},
    task::spawn,
};

/// How long `close()` waits for the server's cleanup (the killCursors of the open cursors, the
/// endSessions) before it stops waiting: reads in flight do not count, they end at once.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// `maxPoolSize` when neither the connection string nor the options set one: the official
/// driver's default. The crate's own default is 10, which capped every client at 10 reads in flight
/// while `client.options.maxPoolSize` said 100.
const DEFAULT_MAX_POOL_SIZE: u32 = 100;

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
    /// `oidcCallback`: the wrapped `OIDC_CALLBACK` (see `oidc.rs`).
    #[napi(catch_unwind)]
    pub async fn connect(
        uri: String,
        timeout_ms: Option<i64>,
        socket_timeout_ms: Option<i64>,
        options: Option<ConnectOptions>,
        #[napi(ts_arg_type = "((event: Buffer) => void) | undefined | null")] events: Option<EventCallback>,
        event_mask: Option<u32>,
        #[napi(
            ts_arg_type = "((context: OidcCallbackContext) => Promise<OidcCallbackResult>) | undefined | null"
        )]
        oidc_callback: Option<OidcCallbackFunction>,
    ) -> napi::Result<NativeClient> {
        let commands = options.as_ref().is_some_and(|options| {
            options.monitor_commands.unwrap_or(false) || options.trace_commands.unwrap_or(false)
        });
        let mut options = client_options(&uri, options, oidc_callback).await?;
        let timeouts = ClientTimeouts::new(timeout_ms, socket_timeout_ms, options.retry_reads != Some(false));
        let monitor = events.map(|callback| Monitor::new(callback, event_mask.unwrap_or(0)));
        if let Some(monitor) = &monitor {
            monitor.install(&mut options, commands);
        }
        // The official driver's connect() selects a server for the client's read preference (a
        // secondary read preference connects to a set without a primary, and fails when no
        // member fits); the crate's run_command would select the primary.
        let criteria = options.selection_criteria.clone();
        // Per server: the crate keeps one pool for each server it selects.
        options.max_pool_size.get_or_insert(DEFAULT_MAX_POOL_SIZE);
        let closing = CloseSignal::new();
        let client = mongodb::Client::with_options(options).map_err(Error::from_uri_error)?;
        let database = client
            .default_database()
            .unwrap_or_else(|| client.database("admin"));
        let ping = async move {
            // Without a session, as the official driver's own ping on connect (with credentials):
            // a pooled session of rumongo's making would be named by the endSessions of close().
            let ping = database
                .run_command(doc! { "ping": 1 })
                .without_implicit_session();
            Ok(match criteria {
                Some(criteria) => ping.selection_criteria(criteria).await?,
                None => ping.await?,
            })
        };
        if let Err(error) = timeouts.start().run(&closing, ping).await {
            client.shutdown().immediate(true).await;
            return Err(error.into());
        }
        Ok(NativeClient {
            state: Arc::new(ClientState::new(client, timeouts, closing)),
            monitor,
        })
    }

    /// Starts an explicit session (`client.startSession()`); no I/O.
    #[napi(catch_unwind)]
    pub fn start_session(
        &self,
        causal_consistency: Option<bool>,
        snapshot: Option<bool>,
    ) -> napi::Result<NativeSession> {
        let client = self.state.client()?;
        Ok(start_session(
            &client,
            &self.state.sessions,
            causal_consistency,
            snapshot,
        )?)
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
        self.state.cursors.open_count()
    }

    #[napi(getter, catch_unwind)]
    pub fn is_closed(&self) -> bool {
        self.state.is_closed()
    }

    /// Ends the operations in flight (they reject with `MongoClientClosedError`, as in the
    /// official driver), kills the client's open cursors on the server, then closes its
    /// connections. Idempotent.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let state = self.state.clone();
        spawn(env, async move {
            let Some(client) = state.take_client() else {
                return Ok(());
            };
            // First, as the official driver closes its checked-out connections first: a getMore
            // that waits for a server that never answers no longer holds its cursor.
            state.closing.close();
            for slot in state.cursors.take_all() {
                // A cursor still busy after the grace period is dropped with the client instead.
                let _ = tokio::time::timeout(CLOSE_GRACE, slot.close_for_client()).await;
            }
            // Their server sessions go back to the pool, which the shutdown ends (`endSessions`).
            state.sessions.end_all().await;
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
