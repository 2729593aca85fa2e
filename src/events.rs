//! Monitoring events (commands, connection pool, server discovery) from the crate's event handlers
//! to JS, where `ts/events.ts` rebuilds the official driver's event classes.
//!
//! Each event crosses as one BSON document (a `Buffer`) through a weak, non-blocking threadsafe
//! function, and only when JS listens to that event name: the listener mask (`EVENT_NAMES` bit
//! order) is read with one atomic load before anything is built. The command handler, which makes
//! the crate parse every command and reply into a `Document`, is installed only for
//! `monitorCommands: true`; the pool and server handlers are always installed (the crate builds
//! those small events only to hand them over) so that a listener added after connecting works.

use std::{
    cell::Cell,
    collections::{HashMap, VecDeque},
    future::Future,
    sync::{
        atomic::{AtomicU32, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use bson::{doc, spec::BinarySubtype, Binary, Bson, Document};
use mongodb::{
    event::{
        cmap::{CmapEvent, ConnectionCheckoutFailedReason, ConnectionClosedReason},
        command::{CommandEvent, ConnectionInfo},
        sdam::{SdamEvent, TopologyDescription},
        EventHandler,
    },
    options::{ClientOptions, ServerAddress},
    ServerInfo,
};
use napi::{
    bindgen_prelude::Buffer,
    threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode},
    Status,
};
use napi_derive::napi;

use crate::error::{server_failure_reason, Error};

/// The JS function that receives events: one BSON document per call, not kept alive by this
/// reference (a client that is never closed does not hold the process open).
pub type EventCallback = ThreadsafeFunction<Buffer, (), Buffer, Status, false, true>;

/// The official driver's event names; an event's bit in the listener mask is its index here.
const EVENT_NAMES: [&str; 23] = [
    "commandStarted",
    "commandSucceeded",
    "commandFailed",
    "connectionPoolCreated",
    "connectionPoolReady",
    "connectionPoolCleared",
    "connectionPoolClosed",
    "connectionCreated",
    "connectionReady",
    "connectionClosed",
    "connectionCheckOutStarted",
    "connectionCheckOutFailed",
    "connectionCheckedOut",
    "connectionCheckedIn",
    "serverOpening",
    "serverClosed",
    "serverDescriptionChanged",
    "topologyOpening",
    "topologyClosed",
    "topologyDescriptionChanged",
    "serverHeartbeatStarted",
    "serverHeartbeatSucceeded",
    "serverHeartbeatFailed",
];

/// The monitoring event names in listener-mask bit order (bit `i` is `1 << i`).
#[napi]
pub fn monitoring_event_names() -> Vec<&'static str> {
    EVENT_NAMES.to_vec()
}

/// The bit of a trace tag whose operation makes spans (`SPAN_TAG` in ts/telemetry.ts): its command
/// events cross to JS even without a listener. A tag without it only names the operation, so that
/// a listener's failure fails the operation whose command it saw.
const SPAN_TAG: u32 = 1 << 31;

thread_local! {
    /// The trace tag JS gives the native call it is about to make (0: none); see `traced`.
    static NEXT_TRACE: Cell<u32> = const { Cell::new(0) };
}

tokio::task_local! {
    /// The trace tag of the operation a future runs for: its command events carry it.
    static TRACE: u32;
}

/// Tags the operations the next native calls on this thread start with `trace` (0 clears it),
/// so that their command events name the JS context (an OpenTelemetry span) they belong to.
#[napi]
pub fn trace_next_calls(trace: u32) {
    NEXT_TRACE.with(|next| next.set(trace));
}

/// `future` with the trace tag JS set for the current native call, if any. Reads the tag now,
/// on the JS thread, not when the future first runs on a tokio thread.
pub fn traced<F: Future>(future: F) -> impl Future<Output = F::Output> {
    let trace = NEXT_TRACE.with(Cell::get);
    async move {
        match trace {
            0 => future.await,
            trace => TRACE.scope(trace, future).await,
        }
    }
}

tokio::task_local! {
    /// The commands a network step under a time limit has started (see `StepCommands`).
    static STEP_COMMANDS: StepCommands;
}

/// The commands one network step started, so that when its time limit passes (`Deadline::run`)
/// each one still in flight ends at once with a `commandFailed`, as the official driver's does,
/// instead of never (the step goes on detached, or is dropped, without a reply). Also those of a
/// cursor's read, which its owner's `close()` drops (`cursor.rs`).
#[derive(Clone, Default)]
pub struct StepCommands {
    commands: Arc<Mutex<Vec<StepCommand>>>,
    /// The scope this one runs in (a read's, around its step's): it records the commands too.
    outer: Option<Box<StepCommands>>,
}

/// A command a step started: the monitor that saw it, and its request id.
type StepCommand = (Arc<Monitor>, i32);

impl StepCommands {
    /// Runs `step`, recording the commands it starts (in the scope this is called in too).
    pub fn scope<F: Future>(&self, step: F) -> impl Future<Output = F::Output> {
        let outer = STEP_COMMANDS.try_with(|outer| Box::new(outer.clone())).ok();
        let scope = StepCommands {
            commands: self.commands.clone(),
            outer,
        };
        STEP_COMMANDS.scope(scope, step)
    }

    /// Records a command started in this scope and the scopes around it.
    fn record(&self, command: StepCommand) {
        let mut scope = Some(self);
        while let Some(step) = scope {
            let mut commands = step.commands.lock().unwrap_or_else(|e| e.into_inner());
            commands.push(command.clone());
            scope = step.outer.as_deref();
        }
    }

    /// Ends every recorded command still in flight with a `commandFailed` carrying `failure`
    /// (the error the caller gets); a reply that comes later is not reported.
    pub fn abandon(&self, failure: Error) {
        let commands = std::mem::take(&mut *self.commands.lock().unwrap_or_else(|e| e.into_inner()));
        if commands.is_empty() {
            return;
        }
        let failure = napi::Error::from(failure).reason;
        for (monitor, request_id) in commands {
            monitor.abandon(request_id, &failure);
        }
    }
}

fn current_trace() -> u32 {
    TRACE.try_with(|trace| *trace).unwrap_or(0)
}

tokio::task_local! {
    /// Set while rumongo's own killCursors of a closed cursor runs (see `own_kill`).
    static OWN_KILL: ();
}

/// The cursors rumongo killed itself when their owner closed them (`cursor.rs`), as
/// `(database, collection, id)`, oldest first: the crate cannot drop a driver cursor without
/// killing it again, and that second killCursors is not reported (the official driver sends one).
/// The crate's kill takes its entry; one it never sends (the client closed first) is forgotten
/// after `DUPLICATE_KILL_GRACE`.
static DUPLICATE_KILLS: Mutex<VecDeque<(DuplicateKill, Instant)>> = Mutex::new(VecDeque::new());

type DuplicateKill = (String, String, i64);

/// How long the crate's second kill of a cursor may take to start before it is forgotten.
const DUPLICATE_KILL_GRACE: Duration = Duration::from_secs(10);

/// Records that the crate will kill cursor `id` of `database.collection` again (see
/// `DUPLICATE_KILLS`).
pub fn expect_duplicate_kill(database: &str, collection: &str, id: i64) {
    let mut kills = DUPLICATE_KILLS.lock().unwrap_or_else(|e| e.into_inner());
    while kills
        .front()
        .is_some_and(|(_, at)| at.elapsed() >= DUPLICATE_KILL_GRACE)
    {
        kills.pop_front();
    }
    kills.push_back(((database.to_owned(), collection.to_owned(), id), Instant::now()));
}

/// `kill`, rumongo's own killCursors of a cursor its owner closed, ready to run in a task of its
/// own: its command events carry the current trace, and are reported (the crate's second kill of
/// the same cursor is not, see `DUPLICATE_KILLS`).
pub fn own_kill<F: Future>(kill: F) -> impl Future<Output = F::Output> {
    let trace = current_trace();
    OWN_KILL.scope((), async move {
        match trace {
            0 => kill.await,
            trace => TRACE.scope(trace, kill).await,
        }
    })
}

/// Whether `command`, a killCursors sent to `database`, is the crate's second kill of a cursor
/// rumongo killed (taking its entry).
fn is_duplicate_kill(database: &str, command: &Document) -> bool {
    if OWN_KILL.try_with(|_| ()).is_ok() {
        return false;
    }
    let (Ok(collection), Ok(cursors)) = (command.get_str("killCursors"), command.get_array("cursors")) else {
        return false;
    };
    let [Bson::Int64(id)] = cursors.as_slice() else {
        return false;
    };
    let mut kills = DUPLICATE_KILLS.lock().unwrap_or_else(|e| e.into_inner());
    let found = kills
        .iter()
        .position(|((db, coll, killed), _)| killed == id && db == database && coll == collection);
    found.and_then(|index| kills.remove(index)).is_some()
}

fn now_millis() -> f64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH);
    now.map(|since| since.as_secs_f64() * 1000.0).unwrap_or(0.0)
}

fn bit(name: &str) -> u32 {
    let index = EVENT_NAMES.iter().position(|known| *known == name);
    1 << index.expect("every event name sent is in EVENT_NAMES")
}

/// A client's link to its JS event emitter.
pub struct Monitor {
    callback: EventCallback,
    listened: AtomicU32,
    /// Each command in flight, by request id: the crate's success and failure events lack the
    /// database, a killCursors ends outside the traced task, and a command abandoned by its time
    /// limit ends here (`abandon`), not in the crate.
    in_flight: Mutex<HashMap<i32, InFlight>>,
}

/// What a command's end event needs that the crate's end events lack.
struct InFlight {
    database: String,
    trace: u32,
    command_name: String,
    started: Instant,
    connection: ConnectionInfo,
    service_id: Option<bson::oid::ObjectId>,
}

impl Monitor {
    pub fn new(callback: EventCallback, listened: u32) -> Arc<Self> {
        Arc::new(Self {
            callback,
            listened: AtomicU32::new(listened),
            in_flight: Mutex::new(HashMap::new()),
        })
    }

    /// Sets which events JS listens to (`EVENT_NAMES` bits).
    pub fn listen(&self, mask: u32) {
        self.listened.store(mask, Ordering::Relaxed);
    }

    fn wants(&self, name: &str) -> bool {
        self.listened.load(Ordering::Relaxed) & bit(name) != 0
    }

    /// Sends `event` (its `name` field first) when JS listens to `name`; `build` runs only then.
    fn emit(&self, name: &'static str, build: impl FnOnce(&mut Document)) {
        if self.wants(name) {
            self.send(name, build);
        }
    }

    /// Sends a command event when JS listens to it or it belongs to an operation that makes
    /// spans; the trace tag (which also names the call for its listeners' failures) and the time
    /// are added for JS, the rest (`build`) only for a listener.
    fn emit_command(&self, name: &'static str, trace: u32, build: impl FnOnce(&mut Document)) {
        let listened = self.wants(name);
        if trace & SPAN_TAG == 0 && !listened {
            return;
        }
        self.send(name, |event| {
            if trace != 0 {
                event.insert("trace", trace as i64);
                event.insert("time", now_millis());
            }
            event.insert("listened", listened);
            build(event);
        });
    }

    fn send(&self, name: &'static str, build: impl FnOnce(&mut Document)) {
        let mut event = doc! { "name": name };
        build(&mut event);
        // An event that does not serialize (it cannot: every field is built here) is dropped
        // rather than failing the operation it describes.
        if let Ok(bytes) = event.to_vec() {
            self.callback
                .call(bytes.into(), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }

    /// Installs the handlers on `options`; the command handler only when `commands` (command
    /// monitoring or tracing is on: it makes the crate parse every command and reply).
    pub fn install(self: &Arc<Self>, options: &mut ClientOptions, commands: bool) {
        if commands {
            let monitor = self.clone();
            options.command_event_handler = Some(EventHandler::callback(move |event| {
                Monitor::command(&monitor, event)
            }));
        }
        let monitor = self.clone();
        options.cmap_event_handler = Some(EventHandler::callback(move |event| monitor.pool(event)));
        let monitor = self.clone();
        options.sdam_event_handler = Some(EventHandler::callback(move |event| monitor.server(event)));
    }

    fn command(self: &Arc<Self>, event: CommandEvent) {
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            CommandEvent::Started(event) => {
                // Not in flight either: its end events are not reported.
                if event.command_name == "killCursors" && is_duplicate_kill(&event.db, &event.command) {
                    return;
                }
                let trace = current_trace();
                let command = InFlight {
                    database: event.db.clone(),
                    trace,
                    command_name: event.command_name.clone(),
                    started: Instant::now(),
                    connection: event.connection.clone(),
                    service_id: event.service_id,
                };
                in_flight.insert(event.request_id, command);
                drop(in_flight);
                let _ = STEP_COMMANDS.try_with(|step| step.record((self.clone(), event.request_id)));
                self.emit_command("commandStarted", trace, |out| {
                    connection_fields(out, &event.connection, event.service_id);
                    out.insert("requestId", event.request_id);
                    out.insert("databaseName", event.db);
                    out.insert("commandName", event.command_name);
                    out.insert("command", document_bytes(&event.command));
                });
            }
            CommandEvent::Succeeded(event) => {
                // Not in flight: abandoned to its time limit, already reported as failed.
                let Some(InFlight { database, trace, .. }) = in_flight.remove(&event.request_id) else {
                    return;
                };
                drop(in_flight);
                let listened = self.wants("commandSucceeded");
                self.emit_command("commandSucceeded", trace, |out| {
                    connection_fields(out, &event.connection, event.service_id);
                    out.insert("requestId", event.request_id);
                    out.insert("databaseName", database);
                    out.insert("commandName", event.command_name);
                    out.insert("duration", millis(event.duration));
                    // A span does not need the reply: only a listener pays for its bytes.
                    if listened {
                        out.insert("reply", document_bytes(&event.reply));
                    }
                });
            }
            CommandEvent::Failed(event) => {
                let Some(InFlight { database, trace, .. }) = in_flight.remove(&event.request_id) else {
                    return;
                };
                drop(in_flight);
                self.emit_command("commandFailed", trace, |out| {
                    connection_fields(out, &event.connection, event.service_id);
                    out.insert("requestId", event.request_id);
                    out.insert("databaseName", database);
                    out.insert("commandName", event.command_name);
                    out.insert("duration", millis(event.duration));
                    out.insert("failure", error_payload(event.failure));
                });
            }
            _ => {}
        }
    }

    /// Ends command `request_id`, if still in flight, with a `commandFailed` carrying `failure`
    /// (an encoded error, see `error_payload`).
    fn abandon(&self, request_id: i32, failure: &str) {
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        let Some(command) = in_flight.remove(&request_id) else {
            return;
        };
        drop(in_flight);
        self.emit_command("commandFailed", command.trace, |out| {
            connection_fields(out, &command.connection, command.service_id);
            out.insert("requestId", request_id);
            out.insert("databaseName", command.database);
            out.insert("commandName", command.command_name);
            out.insert("duration", millis(command.started.elapsed()));
            out.insert("failure", failure);
        });
    }

    fn pool(&self, event: CmapEvent) {
        match event {
            CmapEvent::PoolCreated(event) => self.emit("connectionPoolCreated", |out| {
                out.insert("address", address(&event.address));
                let mut options = Document::new();
                if let Some(pool) = event.options {
                    if let Some(max) = pool.max_pool_size {
                        options.insert("maxPoolSize", max as i64);
                    }
                    if let Some(min) = pool.min_pool_size {
                        options.insert("minPoolSize", min as i64);
                    }
                    if let Some(idle) = pool.max_idle_time {
                        options.insert("maxIdleTimeMS", idle.as_millis() as i64);
                    }
                }
                out.insert("options", options);
            }),
            CmapEvent::PoolReady(event) => self.emit("connectionPoolReady", |out| {
                out.insert("address", address(&event.address));
            }),
            CmapEvent::PoolCleared(event) => self.emit("connectionPoolCleared", |out| {
                out.insert("address", address(&event.address));
                out.insert("serviceId", event.service_id);
                out.insert("interruptInUseConnections", event.interrupt_in_use_connections);
            }),
            CmapEvent::PoolClosed(event) => self.emit("connectionPoolClosed", |out| {
                out.insert("address", address(&event.address));
            }),
            CmapEvent::ConnectionCreated(event) => self.emit("connectionCreated", |out| {
                out.insert("address", address(&event.address));
                out.insert("connectionId", event.connection_id as i64);
            }),
            CmapEvent::ConnectionReady(event) => self.emit("connectionReady", |out| {
                out.insert("address", address(&event.address));
                out.insert("connectionId", event.connection_id as i64);
                out.insert("durationMS", millis(event.duration));
            }),
            CmapEvent::ConnectionClosed(event) => self.emit("connectionClosed", |out| {
                out.insert("address", address(&event.address));
                out.insert("connectionId", event.connection_id as i64);
                // The official driver has no "dropped" reason (a connection lost to a cancelled
                // operation): it reports such a connection as closed by an error.
                let reason = match event.reason {
                    ConnectionClosedReason::Stale => "stale",
                    ConnectionClosedReason::Idle => "idle",
                    ConnectionClosedReason::PoolClosed => "poolClosed",
                    _ => "error",
                };
                out.insert("reason", reason);
            }),
            CmapEvent::ConnectionCheckoutStarted(event) => self.emit("connectionCheckOutStarted", |out| {
                out.insert("address", address(&event.address));
            }),
            CmapEvent::ConnectionCheckoutFailed(event) => self.emit("connectionCheckOutFailed", |out| {
                out.insert("address", address(&event.address));
                let reason = match event.reason {
                    ConnectionCheckoutFailedReason::Timeout => "timeout",
                    _ => "connectionError",
                };
                out.insert("reason", reason);
                out.insert("durationMS", millis(event.duration));
            }),
            CmapEvent::ConnectionCheckedOut(event) => self.emit("connectionCheckedOut", |out| {
                out.insert("address", address(&event.address));
                out.insert("connectionId", event.connection_id as i64);
                out.insert("durationMS", millis(event.duration));
            }),
            CmapEvent::ConnectionCheckedIn(event) => self.emit("connectionCheckedIn", |out| {
                out.insert("address", address(&event.address));
                out.insert("connectionId", event.connection_id as i64);
            }),
            _ => {}
        }
    }

    fn server(&self, event: SdamEvent) {
        match event {
            SdamEvent::ServerOpening(event) => self.emit("serverOpening", |out| {
                out.insert("address", address(&event.address));
            }),
            SdamEvent::ServerClosed(event) => self.emit("serverClosed", |out| {
                out.insert("address", address(&event.address));
            }),
            SdamEvent::ServerDescriptionChanged(event) => self.emit("serverDescriptionChanged", |out| {
                out.insert("address", address(&event.address));
                out.insert(
                    "previousDescription",
                    server_description(&event.previous_description),
                );
                out.insert("newDescription", server_description(&event.new_description));
            }),
            SdamEvent::TopologyOpening(_) => self.emit("topologyOpening", |_| {}),
            SdamEvent::TopologyClosed(_) => self.emit("topologyClosed", |_| {}),
            SdamEvent::TopologyDescriptionChanged(event) => self.emit("topologyDescriptionChanged", |out| {
                out.insert(
                    "previousDescription",
                    topology_description(&event.previous_description),
                );
                out.insert("newDescription", topology_description(&event.new_description));
            }),
            SdamEvent::ServerHeartbeatStarted(event) => self.emit("serverHeartbeatStarted", |out| {
                out.insert("connectionId", address(&event.server_address));
                out.insert("awaited", event.awaited);
            }),
            SdamEvent::ServerHeartbeatSucceeded(event) => self.emit("serverHeartbeatSucceeded", |out| {
                out.insert("connectionId", address(&event.server_address));
                out.insert("awaited", event.awaited);
                out.insert("duration", millis(event.duration));
                out.insert("reply", document_bytes(&event.reply));
            }),
            SdamEvent::ServerHeartbeatFailed(event) => self.emit("serverHeartbeatFailed", |out| {
                out.insert("connectionId", address(&event.server_address));
                out.insert("awaited", event.awaited);
                out.insert("duration", millis(event.duration));
                out.insert(
                    "failure",
                    server_failure_reason(event.failure, &address(&event.server_address)),
                );
            }),
            _ => {}
        }
    }
}

fn address(address: &ServerAddress) -> String {
    address.to_string()
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// A document as raw bytes, for JS to decode with the options the official driver uses for it.
fn document_bytes(document: &Document) -> Bson {
    let bytes = document.to_vec().unwrap_or_default();
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    })
}

/// The error as the payload `ts/errors.ts` rebuilds into the class a failed read rejects with.
fn error_payload(error: mongodb::error::Error) -> String {
    napi::Error::from(Error::Driver(error)).reason
}

fn connection_fields(
    out: &mut Document,
    connection: &ConnectionInfo,
    service_id: Option<bson::oid::ObjectId>,
) {
    out.insert("address", address(&connection.address));
    out.insert("connectionId", connection.id as i64);
    out.insert("serviceId", service_id);
    out.insert("serverConnectionId", connection.server_id);
}

fn server_description(description: &ServerInfo<'_>) -> Document {
    let mut out = doc! {
        "address": address(description.address()),
        "type": description.server_type().to_string(),
    };
    if let Some(rtt) = description.average_round_trip_time() {
        out.insert("roundTripTime", millis(rtt));
    }
    if let Some(time) = description.last_update_time() {
        out.insert("lastUpdateTime", time.timestamp_millis());
    }
    if let Some(version) = description.min_wire_version() {
        out.insert("minWireVersion", version);
    }
    if let Some(version) = description.max_wire_version() {
        out.insert("maxWireVersion", version);
    }
    if let Some(name) = description.replica_set_name() {
        out.insert("setName", name);
    }
    if let Some(version) = description.replica_set_version() {
        out.insert("setVersion", version);
    }
    if let Some(error) = description.error() {
        out.insert("error", error_payload(error.clone()));
    }
    out
}

fn topology_description(description: &TopologyDescription) -> Document {
    let mut servers = Document::new();
    for (server, info) in description.servers() {
        servers.insert(address(server), server_description(&info));
    }
    let mut out = doc! {
        "type": format!("{:?}", description.topology_type()),
        "servers": servers,
    };
    if let Some(name) = description.set_name() {
        out.insert("setName", name.as_str());
    }
    if let Some(version) = description.max_set_version() {
        out.insert("maxSetVersion", version);
    }
    if let Some(id) = description.max_election_id() {
        out.insert("maxElectionId", id);
    }
    if let Some(error) = description.compatibility_error() {
        out.insert("compatibilityError", error.as_str());
    }
    out
}
