//! When to retry: exponential backoff with jitter, or the server's `Retry-After`, both capped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The longest `Retry-After` honoured; longer requests wait this long.
pub const RETRY_AFTER_CAP: Duration = Duration::from_secs(60);
/// The longest backoff between two attempts.
pub const BACKOFF_CAP: Duration = Duration::from_secs(30);

/// Retry delays: `base · 2^retry` (capped at [`BACKOFF_CAP`]) with "equal jitter" (half fixed,
/// half random), or a server's `Retry-After` (capped at [`RETRY_AFTER_CAP`]) plus a little
/// jitter. Shared by the threads of one model.
#[derive(Debug)]
pub struct Backoff {
    base: Duration,
    counter: AtomicU64,
}

impl Backoff {
    /// Delays starting at `base`.
    pub fn new(base: Duration) -> Self {
        Backoff {
            base,
            counter: AtomicU64::new(0),
        }
    }

    /// The wait before retry number `retry + 1` (0-based), given the server's `Retry-After`.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(wait) = retry_after {
            return wait.min(RETRY_AFTER_CAP) + self.jitter(self.base / 2);
        }
        let backoff = self
            .base
            .saturating_mul(1 << retry.min(20))
            .min(BACKOFF_CAP);
        backoff / 2 + self.jitter(backoff / 2)
    }

    /// A pseudo-random duration in `[0, max]` from the clock and a counter (no RNG needed: it
    /// only has to spread the retries of concurrent threads apart).
    fn jitter(&self, max: Duration) -> Duration {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut x = nanos ^ self.counter.fetch_add(1, Ordering::Relaxed).rotate_left(32);
        // splitmix64 finalizer.
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^= x >> 31;
        max.mul_f64((x >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// A `Retry-After` value in (possibly fractional) seconds; HTTP dates are not honoured (None:
/// the usual backoff applies).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(1e6)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_parses_seconds_only() {
        assert_eq!(parse_retry_after(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn backoff_doubles_within_jittered_bounds_and_caps() {
        let backoff = Backoff::new(Duration::from_millis(100));
        for retry in 0..4 {
            let full = Duration::from_millis(100 << retry);
            let delays: Vec<Duration> = (0..50).map(|_| backoff.delay(retry, None)).collect();
            assert!(
                delays.iter().all(|d| *d >= full / 2 && *d <= full),
                "{delays:?}"
            );
            assert!(
                delays.iter().any(|d| *d != delays[0]),
                "jittered: {delays:?}"
            );
        }
        assert!(backoff.delay(30, None) <= BACKOFF_CAP);
        let honoured = backoff.delay(0, Some(Duration::from_secs(2)));
        assert!(honoured >= Duration::from_secs(2) && honoured <= Duration::from_millis(2050));
        let capped = backoff.delay(0, Some(Duration::from_secs(3600)));
        assert!(capped <= RETRY_AFTER_CAP + Duration::from_millis(50));
    }
}
