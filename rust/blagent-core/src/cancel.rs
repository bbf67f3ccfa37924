//! Cooperative cancellation: the bindings call [`request`] when the user presses Ctrl-C, and
//! long loops (batch and eval instances, embedding batches) and every wait on an LLM endpoint
//! (a request in flight, a retry's backoff) check it and end with [`Error::Cancelled`].
//!
//! The flag is process-wide, as the signal is: a request cancels every call in progress. Each
//! call runs inside a [`Scope`]; the first scope to open clears a request left from before.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

static REQUESTED: AtomicBool = AtomicBool::new(false);
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// How often waits look at the flag.
pub const POLL: Duration = Duration::from_millis(50);

/// A cancellable call in progress (see the module documentation).
#[derive(Debug)]
pub struct Scope(());

impl Scope {
    /// Opens a scope; when no other is open, a stale cancellation request is cleared.
    pub fn enter() -> Scope {
        if ACTIVE.fetch_add(1, Ordering::SeqCst) == 0 {
            REQUESTED.store(false, Ordering::SeqCst);
        }
        Scope(())
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        ACTIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Asks every call in progress to stop.
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Whether a stop was asked for.
pub fn is_requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// `Err(Error::Cancelled)` once a stop was asked for.
pub fn check() -> Result<()> {
    if is_requested() {
        Err(Error::Cancelled)
    } else {
        Ok(())
    }
}

/// Sleeps for `duration`, or less when a stop is asked for (then `Err(Error::Cancelled)`).
pub fn sleep(duration: Duration) -> Result<()> {
    let end = Instant::now() + duration;
    loop {
        check()?;
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        std::thread::sleep(left.min(POLL));
    }
}
