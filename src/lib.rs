#![deny(clippy::all)]
//! rumongo: the MongoDB read path for Node.js. This file only wires the modules.

mod batch;
mod client;
mod collection;
mod connect;
mod cursor;
mod database;
mod deadline;
mod error;
mod json;
mod lazy;
mod options;
mod tape;
mod task;
