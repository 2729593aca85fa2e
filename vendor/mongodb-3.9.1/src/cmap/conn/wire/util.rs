use std::sync::atomic::{AtomicI32, Ordering};

/// Closure to obtain a new, unique request ID.
pub(crate) fn next_request_id() -> i32 {
    static REQUEST_ID: AtomicI32 = AtomicI32::new(0);

    REQUEST_ID.fetch_add(1, Ordering::SeqCst)
}
