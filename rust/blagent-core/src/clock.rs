//! Timings as the results report them.

/// Milliseconds since `start`, as every timing in the results reports them.
pub(crate) fn elapsed_ms(start: std::time::Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}
