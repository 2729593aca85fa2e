//! Native work returned to JS as a Promise.
//!
//! Every asynchronous method clones what it needs (cheap handles: `Arc`s, driver handles) before it
//! returns, and its future owns those clones. A future that borrowed `&self` could outlive the JS
//! object it borrows from: when a worker thread is terminated, its objects are finalized while their
//! futures are still running on tokio, and the borrow would read freed memory.
//!
//! No panic reaches Node: every export is `#[napi(catch_unwind)]` (its synchronous part), and the
//! futures run here are polled under `catch_unwind`, so a panic rejects the Promise with an internal
//! error (`MongoRuntimeError` in JS) instead of aborting the process.

use std::{future::Future, panic::AssertUnwindSafe};

use futures_util::FutureExt;
use napi::{
    bindgen_prelude::{PromiseRaw, ToNapiValue},
    Env,
};
use napi_derive::napi;

use crate::{
    batch::on_rayon,
    error::{Error, Result},
    events::traced,
};

/// Runs `future` on the tokio runtime and returns a Promise of its result.
pub fn spawn<T, F>(env: &Env, future: F) -> napi::Result<PromiseRaw<'_, T>>
where
    T: 'static + Send + ToNapiValue,
    F: 'static + Send + Future<Output = Result<T>>,
{
    let future = traced(future);
    env.spawn_future(async move {
        AssertUnwindSafe(future)
            .catch_unwind()
            .await
            .unwrap_or(Err(Error::Internal("a native operation panicked")))
            .map_err(napi::Error::from)
    })
}

/// Test-only: panics in the place `place` names (`"sync"`: the exported function itself,
/// `"async"`: a spawned future, `"decoder"`: a rayon decode task), which must reach JS as an error.
#[napi(catch_unwind, ts_return_type = "Promise<void>")]
pub fn test_panic(env: &Env, place: String) -> napi::Result<PromiseRaw<'_, ()>> {
    match place.as_str() {
        "sync" => panic_now("sync").map_err(napi::Error::from),
        "async" => spawn(env, async { panic_now("async") }),
        "decoder" => spawn(env, on_rayon(|| panic_now("decoder"))),
        _ => Err(Error::InvalidArgument(format!("testPanic: unknown place '{place}'")).into()),
    }
}

fn panic_now<T>(place: &str) -> Result<T> {
    panic!("rumongo test panic ({place})")
}
