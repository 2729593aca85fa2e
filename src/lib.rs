#![deny(clippy::all)]
//! rumongo: the MongoDB read path for Node.js. This file only wires the modules.

mod batch;
mod client;
mod client_state;
mod collection;
mod connect;
mod cursor;
mod database;
mod deadline;
mod error;
mod events;
mod format;
mod handover;
mod operation;
mod options;
mod raw;
mod session;
mod task;
#[cfg(feature = "test-hooks")]
mod test_hooks;

#[napi_derive::module_init]
fn init() {
    task::install_runtime();
}
