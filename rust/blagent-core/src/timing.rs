//! Timings as the results report them: below every layer, so each may use it.

use std::time::Instant;

/// Milliseconds since `start`, as every timing in the results reports them.
pub(crate) fn elapsed_ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}
