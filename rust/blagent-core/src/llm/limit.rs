//! A counting semaphore bounding the requests in flight to one endpoint, so a batch run on many
//! threads does not overload it.

use std::sync::{Condvar, Mutex, PoisonError};

/// At most `permits` holders at once; [`ConcurrencyLimit::acquire`] blocks until one is free.
#[derive(Debug)]
pub struct ConcurrencyLimit {
    available: Mutex<usize>,
    freed: Condvar,
}

/// A held slot, returned to its [`ConcurrencyLimit`] on drop.
#[derive(Debug)]
pub struct Permit<'a> {
    limit: &'a ConcurrencyLimit,
}

impl ConcurrencyLimit {
    /// A limit of `permits` (at least 1).
    pub fn new(permits: usize) -> Self {
        ConcurrencyLimit {
            available: Mutex::new(permits.max(1)),
            freed: Condvar::new(),
        }
    }

    /// Waits for a free slot and holds it until the permit drops.
    pub fn acquire(&self) -> Permit<'_> {
        // The counter stays consistent even if a holder panicked, so poisoning is ignored.
        let mut available = self
            .available
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while *available == 0 {
            available = self
                .freed
                .wait(available)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *available -= 1;
        Permit { limit: self }
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut available = self
            .limit
            .available
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *available += 1;
        self.limit.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[test]
    fn never_more_holders_than_permits() {
        let limit = ConcurrencyLimit::new(3);
        let inside = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..12 {
                scope.spawn(|| {
                    let _permit = limit.acquire();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(10));
                    inside.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(peak.load(Ordering::SeqCst), 3);
        assert_eq!(*limit.available.lock().unwrap(), 3);
    }

    #[test]
    fn zero_means_one() {
        let limit = ConcurrencyLimit::new(0);
        assert_eq!(*limit.available.lock().unwrap(), 1);
        drop(limit.acquire());
        drop(limit.acquire());
    }
}
