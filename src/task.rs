//! Native work returned to JS as a Promise.
//!
//! Every asynchronous method clones what it needs (cheap handles: `Arc`s, driver handles) before it
//! returns, and its future owns those clones. A future that borrowed `&self` could outlive the JS
//! object it borrows from: when a worker thread is terminated, its objects are finalized while their
//! futures are still running on tokio, and the borrow would read freed memory.

use std::future::Future;

use napi::{
    bindgen_prelude::{PromiseRaw, ToNapiValue},
    Env,
};

use crate::error::Result;

/// Runs `future` on the tokio runtime and returns a Promise of its result.
pub fn spawn<T, F>(env: &Env, future: F) -> napi::Result<PromiseRaw<'_, T>>
where
    T: 'static + Send + ToNapiValue,
    F: 'static + Send + Future<Output = Result<T>>,
{
    env.spawn_future(async move { future.await.map_err(napi::Error::from) })
}
