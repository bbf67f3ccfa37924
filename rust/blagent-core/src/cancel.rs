//! Cooperative cancellation: the bindings call [`request`] when the user presses Ctrl-C, and
//! long loops (batch and eval instances, embedding batches) and every wait on an LLM endpoint
//! (a request in flight, a retry's backoff) check it and end with [`Error::Cancelled`].
//!
//! The flag is process-wide, as the signal is: a request cancels every call in progress. Each
//! call runs inside a [`Scope`]. The flag is cleared when the last of them ends, and a call that
//! starts while cancelled ones are still stopping waits for them (they stop at their next
//! check, within a moment): a stop reaches the calls in progress when it was asked for, never
//! one that starts later, in another thread or after the interrupted one was handled.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

static REQUESTED: AtomicBool = AtomicBool::new(false);
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The scopes this thread holds.
    static HELD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How often waits look at the flag.
pub const POLL: Duration = Duration::from_millis(50);

/// A cancellable call in progress (see the module documentation).
#[derive(Debug)]
pub struct Scope(());

/// How often a scope waiting for cancelled calls to stop looks again.
const DRAIN_POLL: Duration = Duration::from_millis(5);

impl Scope {
    /// Opens a scope, first waiting for the calls a pending request cancelled to end (see the
    /// module documentation). A request with no call in progress is stale and cleared.
    pub fn enter() -> Scope {
        // A call made on a thread whose own call is in progress (from a signal handler that
        // runs while it waits) does not wait for that one to stop: it never would (a review).
        let nested = HELD.with(|held| held.replace(held.get() + 1)) > 0;
        while !nested && REQUESTED.load(Ordering::SeqCst) {
            if ACTIVE.load(Ordering::SeqCst) == 0 {
                REQUESTED.store(false, Ordering::SeqCst);
            } else {
                std::thread::sleep(DRAIN_POLL);
            }
        }
        // A request made between the loop and here finds this call in progress: it stops too.
        ACTIVE.fetch_add(1, Ordering::SeqCst);
        Scope(())
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        HELD.with(|held| held.set(held.get().saturating_sub(1)));
        if ACTIVE.fetch_sub(1, Ordering::SeqCst) == 1 {
            REQUESTED.store(false, Ordering::SeqCst);
        }
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
