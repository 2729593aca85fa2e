#[cfg(test)]
pub(crate) mod test;

pub(crate) mod conn;
mod connection_requester;
pub(crate) mod establish;
mod manager;
pub(crate) mod options;
mod status;
mod worker;

use std::{
    future::Future,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Instant,
};

use derive_where::derive_where;

pub use self::conn::ConnectionInfo;
use self::{
    conn::pooled::PooledConnection,
    connection_requester::ConnectionRequestResult,
    establish::ConnectionEstablisher,
    options::ConnectionPoolOptions,
};
pub(crate) use self::{
    conn::{Command, Connection, RawCommandResponse, StreamDescription},
    status::PoolGenerationSubscriber,
    worker::PoolGeneration,
};
use crate::{
    bson::oid::ObjectId,
    error::{Error, ErrorKind, Result},
    event::cmap::{
        CmapEvent,
        CmapEventEmitter,
        ConnectionCheckoutFailedEvent,
        ConnectionCheckoutFailedReason,
        ConnectionCheckoutStartedEvent,
        PoolCreatedEvent,
    },
    options::ServerAddress,
    runtime::AcknowledgmentReceiver,
    sdam::{topology::TopologyShutdown, BroadcastMessage, TopologyUpdater},
};
use connection_requester::ConnectionRequester;
use manager::PoolManager;
use worker::ConnectionPoolWorker;

#[cfg(test)]
use crate::runtime::WorkerHandle;

pub(crate) const DEFAULT_MAX_POOL_SIZE: u32 = 10;

/// A pool of connections implementing the CMAP spec.
/// This type is actually a handle to task that manages the connections and is cheap to clone and
/// pass around.
#[derive(Clone)]
#[derive_where(Debug)]
pub(crate) struct ConnectionPool {
    address: ServerAddress,
    manager: PoolManager,
    connection_requester: ConnectionRequester,
    generation_subscriber: PoolGenerationSubscriber,
    /// `waitQueueTimeoutMS` (rumongo patch).
    wait_queue_timeout: Option<std::time::Duration>,

    #[derive_where(skip)]
    event_emitter: CmapEventEmitter,
}

impl ConnectionPool {
    pub(crate) fn new(
        address: ServerAddress,
        connection_establisher: ConnectionEstablisher,
        server_updater: TopologyUpdater,
        options: Option<ConnectionPoolOptions>,
        shutdown: TopologyShutdown,
        #[cfg(feature = "tracing-unstable")] topology_id: ObjectId,
    ) -> Self {
        let event_handler = options
            .as_ref()
            .and_then(|opts| opts.cmap_event_handler.clone());
        let wait_queue_timeout = options
            .as_ref()
            .and_then(|opts| opts.wait_queue_timeout)
            .filter(|timeout| !timeout.is_zero());

        #[cfg(feature = "tracing-unstable")]
        let event_emitter = CmapEventEmitter::new(
            event_handler,
            topology_id,
            options
                .as_ref()
                .and_then(|options| options.max_document_length_bytes),
        );
        #[cfg(not(feature = "tracing-unstable"))]
        let event_emitter = CmapEventEmitter::new(event_handler);

        let (manager, connection_requester, generation_subscriber) = ConnectionPoolWorker::start(
            address.clone(),
            connection_establisher,
            server_updater,
            event_emitter.clone(),
            options.clone(),
            shutdown,
        );

        event_emitter.emit_event(|| {
            CmapEvent::PoolCreated(PoolCreatedEvent {
                address: address.clone(),
                options: options.map(|o| o.to_event_options()),
            })
        });

        Self {
            address,
            manager,
            connection_requester,
            generation_subscriber,
            wait_queue_timeout,
            event_emitter,
        }
    }

    #[cfg(test)]
    pub(crate) fn new_mocked(address: ServerAddress) -> Self {
        let (manager, _) = manager::channel();
        let handle = WorkerHandle::new_mocked();
        let (connection_requester, _) = connection_requester::channel(handle);
        let (_, generation_subscriber) = status::channel(PoolGeneration::normal());

        Self {
            address,
            manager,
            connection_requester,
            generation_subscriber,
            wait_queue_timeout: None,
            #[cfg(feature = "tracing-unstable")]
            event_emitter: CmapEventEmitter::new(None, ObjectId::new(), None),
            #[cfg(not(feature = "tracing-unstable"))]
            event_emitter: CmapEventEmitter::new(None),
        }
    }

    /// Checks out a connection from the pool. This method will yield until this thread is at the
    /// front of the wait queue, and then will block again if no available connections are in the
    /// pool and the total number of connections is not less than the max pool size.
    pub(crate) async fn check_out(&self) -> Result<PooledConnection> {
        let time_started = Instant::now();
        self.event_emitter.emit_event(|| {
            ConnectionCheckoutStartedEvent {
                address: self.address.clone(),
            }
            .into()
        });

        let checkout = async {
            match self.connection_requester.request().await {
                ConnectionRequestResult::Pooled(c) => Ok(*c),
                ConnectionRequestResult::Establishing(task) => task.await,
                ConnectionRequestResult::PoolCleared(e) => {
                    Err(Error::pool_cleared_error(&self.address, &e))
                }
                ConnectionRequestResult::PoolWarmed => {
                    Err(Error::internal("Invalid result from connection requester"))
                }
            }
        };
        // rumongo patch: `waitQueueTimeoutMS` bounds the wait for a connection (the official Node
        // driver 7.9 applies it under a `timeoutMS` too). A request given up leaves the queue
        // (worker.rs); a connection being established for it still goes to the pool.
        let conn = match self.wait_queue_timeout {
            Some(limit) => match tokio::time::timeout(limit, checkout).await {
                Ok(conn) => conn,
                Err(_) => {
                    self.event_emitter.emit_event(|| {
                        ConnectionCheckoutFailedEvent {
                            address: self.address.clone(),
                            reason: ConnectionCheckoutFailedReason::Timeout,
                            #[cfg(feature = "tracing-unstable")]
                            error: None,
                            duration: Instant::now() - time_started,
                        }
                        .into()
                    });
                    return Err(ErrorKind::WaitQueueTimeout {
                        address: self.address.to_string(),
                    }
                    .into());
                }
            },
            None => checkout.await,
        };

        match conn {
            Ok(ref conn) => {
                let _ = CHECKOUT_WATCH.try_with(|watch| watch.0.store(true, Ordering::Relaxed));
                self.event_emitter
                    .emit_event(|| conn.checked_out_event(time_started).into());
            }

            Err(ref _err) => {
                self.event_emitter.emit_event(|| {
                    ConnectionCheckoutFailedEvent {
                        address: self.address.clone(),
                        reason: ConnectionCheckoutFailedReason::ConnectionError,
                        #[cfg(feature = "tracing-unstable")]
                        error: Some(_err.clone()),
                        duration: Instant::now() - time_started,
                    }
                    .into()
                });
            }
        }

        conn
    }

    /// Increments the generation of the pool. Rather than eagerly removing stale connections from
    /// the pool, they are left for the background thread to clean up.
    pub(crate) async fn clear(&self, cause: Error, service_id: Option<ObjectId>) {
        self.manager.clear(cause, service_id).await
    }

    /// Mark the pool as "ready" as per the CMAP specification.
    pub(crate) async fn mark_as_ready(&self) {
        self.manager.mark_as_ready().await
    }

    pub(crate) fn generation(&self) -> PoolGeneration {
        self.generation_subscriber.generation()
    }

    pub(crate) fn broadcast(&self, msg: BroadcastMessage) -> AcknowledgmentReceiver<()> {
        self.manager.broadcast(msg)
    }
}

pub(crate) fn is_faas() -> bool {
    establish::handshake::FaasEnvironmentName::new().is_some()
}

tokio::task_local! {
    static CHECKOUT_WATCH: CheckoutWatch;
}

/// Tells whether a future has been lent a connection by a pool (rumongo patch, see
/// vendor/README.md): a caller that gives up on an operation can then tell one still waiting for a
/// connection (dropped, its checkout request leaves the queue) from one whose command is on the
/// wire (left to finish, its connection goes back to the pool instead of being closed).
#[derive(Clone, Debug, Default)]
pub struct CheckoutWatch(Arc<AtomicBool>);

impl CheckoutWatch {
    /// Runs `future`, noting any connection checked out for it.
    pub fn scope<F: Future>(&self, future: F) -> impl Future<Output = F::Output> {
        CHECKOUT_WATCH.scope(self.clone(), future)
    }

    /// Whether a connection was checked out for the future run in `scope`.
    pub fn checked_out(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
