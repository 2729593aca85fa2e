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

use std::{cell::RefCell, future::Future, panic::AssertUnwindSafe, ptr, rc::Rc, sync::Arc};

use futures_util::FutureExt;
use napi::{
    bindgen_prelude::{PromiseRaw, ToNapiValue},
    check_status, sys,
    threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode},
    Env, JsError, Status,
};
use tokio::sync::oneshot;

use crate::{
    error::{Error, Result},
    events::traced,
};

/// Settles one Promise on the JS thread.
type Completion = Box<dyn FnOnce(&Env) + Send>;

/// One threadsafe function per JS environment (the main thread, each worker thread) through which
/// every operation's result reaches its Promise.
///
/// napi-rs's `spawn_future` creates a threadsafe function, an `Error` (for the rejection's stack)
/// and a reference per Promise, and Node closes that function's libuv handle and runs its finalizer
/// after it settles: together about 10 µs of the JS thread per operation, more than a `findOne`
/// spends decoding its document. This queue is created once; it is weak (it does not keep Node's
/// event loop alive by itself) and is referenced exactly while operations are pending, so a
/// process waits for its queries and exits once none is left, as it did with a threadsafe function
/// per Promise. A worker thread's environment may end with operations in flight: napi-rs aborts the
/// function at teardown, and their completions are then dropped with the Promises nobody awaits.
struct CompletionQueue {
    function: Arc<ThreadsafeFunction<Completion, (), (), Status, false, true>>,
    pending: usize,
}

thread_local! {
    /// This JS thread's queue (each JS environment runs on a thread of its own).
    static COMPLETIONS: RefCell<Option<Rc<RefCell<CompletionQueue>>>> = const { RefCell::new(None) };
}

/// This JS thread's completion queue, created on first use.
fn completion_queue(env: &Env) -> napi::Result<Rc<RefCell<CompletionQueue>>> {
    if let Some(queue) = COMPLETIONS.with(|queue| queue.borrow().clone()) {
        return Ok(queue);
    }
    let settle = env.create_function_from_closure::<(), (), _>("rumongoSettle", |_| Ok(()))?;
    let function = settle
        .build_threadsafe_function::<Completion>()
        .callee_handled::<false>()
        .weak::<true>()
        .build_callback(|context| {
            (context.value)(&context.env);
            Ok(())
        })?;
    let queue = Rc::new(RefCell::new(CompletionQueue {
        function: Arc::new(function),
        pending: 0,
    }));
    COMPLETIONS.with(|slot| *slot.borrow_mut() = Some(queue.clone()));
    Ok(queue)
}

impl CompletionQueue {
    /// Keeps the event loop alive from the first pending operation on (JS thread only).
    fn started(&mut self, env: &Env) -> napi::Result<()> {
        if self.pending == 0 {
            check_status!(unsafe { sys::napi_ref_threadsafe_function(env.raw(), self.function.raw()) })?;
        }
        self.pending += 1;
        Ok(())
    }

    /// Lets the event loop end once no operation is pending (JS thread only).
    fn finished(&mut self, env: &Env) {
        self.pending -= 1;
        if self.pending == 0 {
            unsafe { sys::napi_unref_threadsafe_function(env.raw(), self.function.raw()) };
        }
    }
}

/// A Promise's resolver, sent to tokio and back; only ever used on its JS thread.
struct Deferred(sys::napi_deferred);

// SAFETY: the pointer is only dereferenced by Node, on the JS thread that created it (in the
// completion, which runs there); other threads only carry it.
unsafe impl Send for Deferred {}

/// Runs `future` on the tokio runtime and returns a Promise of its result.
pub fn spawn<T, F>(env: &Env, future: F) -> napi::Result<PromiseRaw<'_, T>>
where
    T: 'static + Send + ToNapiValue,
    F: 'static + Send + Future<Output = Result<T>>,
{
    // Boxed at once: the operation futures hold the driver's inline (several KiB), and each wrapper
    // below and tokio's task cell would otherwise copy all of it on the JS thread (`memmove` from
    // `spawn` was ~10 µs of a serial findOne's JS thread, perf with symbols).
    let future = traced(Box::pin(future));
    let queue = completion_queue(env)?;
    let (mut deferred, mut promise) = (ptr::null_mut(), ptr::null_mut());
    check_status!(unsafe { sys::napi_create_promise(env.raw(), &mut deferred, &mut promise) })?;
    let deferred = Deferred(deferred);
    let function = {
        let mut queue = queue.borrow_mut();
        queue.started(env)?;
        queue.function.clone()
    };
    napi::bindgen_prelude::spawn(async move {
        let result = AssertUnwindSafe(future)
            .catch_unwind()
            .await
            .unwrap_or(Err(Error::Internal("a native operation panicked")));
        let completion: Completion = Box::new(move |env| settle(env, deferred, result));
        // Fails only once the JS environment is gone, with nobody left to settle for.
        function.call(completion, ThreadsafeFunctionCallMode::NonBlocking);
    });
    Ok(PromiseRaw::new(env.raw(), promise))
}

/// Resolves or rejects the Promise of `deferred` with `result` (on the JS thread).
fn settle<T: ToNapiValue>(env: &Env, deferred: Deferred, result: Result<T>) {
    if let Some(queue) = COMPLETIONS.with(|queue| queue.borrow().clone()) {
        queue.borrow_mut().finished(env);
    }
    let value = result
        .map_err(napi::Error::from)
        .and_then(|value| unsafe { T::to_napi_value(env.raw(), value) });
    unsafe {
        match value {
            Ok(value) => sys::napi_resolve_deferred(env.raw(), deferred.0, value),
            Err(error) => {
                let error = JsError::from(error).into_value(env.raw());
                sys::napi_reject_deferred(env.raw(), deferred.0, error)
            }
        };
    }
}

/// The tokio runtime every native operation runs on, installed before the first one.
///
/// One worker thread by default, where tokio would start one per core. Every small read crosses
/// threads three times (JS to a worker, the socket to a worker, a worker back to JS), and with
/// more than one idle worker tokio also wakes a second worker to look for work that is not there:
/// a serial `findOne` cost 9 context switches with two workers against 4 with one (BENCHMARKS.md,
/// session 9). Large batches are encoded on the rayon pool, not on the worker, so one worker does
/// not serialise them. `TOKIO_WORKER_THREADS` still sets the count, as for any tokio runtime.
pub fn install_runtime() {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all().thread_name("rumongo-io");
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        builder.worker_threads(IO_WORKER_THREADS);
    }
    match builder.build() {
        Ok(runtime) => napi::bindgen_prelude::create_custom_tokio_runtime(runtime),
        // napi-rs then builds its default runtime on first use.
        Err(error) => eprintln!("rumongo: could not build the I/O runtime ({error}); using the default"),
    }
}

/// Worker threads of the I/O runtime (see `install_runtime`).
const IO_WORKER_THREADS: usize = 1;

// The rayon pool, where large batches are encoded (see `batch.rs`): a panic there must reach JS
// as an error, never unwind through rayon.

/// Runs `work` on the rayon pool; a panic in it becomes an internal error.
pub async fn on_rayon<T: Send + 'static>(work: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    let (sender, receiver) = oneshot::channel();
    send_from_rayon(sender, work);
    received(receiver).await
}

/// Runs `work` on the rayon pool and sends its result (a panic: an internal error) to `sender`.
pub fn send_from_rayon<T: Send + 'static>(
    sender: oneshot::Sender<Result<T>>,
    work: impl FnOnce() -> Result<T> + Send + 'static,
) {
    rayon::spawn(move || {
        let _ = sender.send(catching_panics(work));
    });
}

/// The result of work started with `send_from_rayon`.
pub async fn received<T>(receiver: oneshot::Receiver<Result<T>>) -> Result<T> {
    receiver
        .await
        .unwrap_or(Err(Error::Internal("the batch decoder stopped")))
}

/// Runs `work`; a panic in it becomes an internal error.
pub fn catching_panics<T>(work: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(AssertUnwindSafe(work))
        .unwrap_or(Err(Error::Internal("decoding a batch panicked")))
}
