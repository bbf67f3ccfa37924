//! How many threads candle's own pools start.
//!
//! candle (0.11) sizes the pools behind its element-wise operations and products by
//! `RAYON_NUM_THREADS`, else by the machine's physical cores (`num_cpus::get_physical`). That
//! count is blind to the CPUs this process may use: under an affinity mask (`taskset`, a
//! container's cpuset) or a cgroup quota it starts more threads than there are CPUs, and its
//! workers spin after each operation, taking CPU from the encoder's own threads. On 2 cores of a
//! 16-core Intel Xeon (Emerald Rapids, `taskset -c 0,1`), a cold dense index of django took
//! 39.6–44.7 s with candle's 16 threads and 29.8–32.4 s with 2.
//!
//! [`fit_candle_threads`] sets `RAYON_NUM_THREADS` to the CPUs this process may use as
//! `std::thread::available_parallelism` counts them (the affinity mask and the cgroup quota),
//! which is the count rayon's own pools take when the variable is unset, so for rayon it changes
//! nothing; candle then takes it too. A value the user set is kept. candle reads the variable
//! whenever it sizes work, so it stays set for the process (and its children, which share its
//! CPUs).

use std::sync::Once;

/// The variable rayon and candle read for their thread counts.
pub const THREADS_VARIABLE: &str = "RAYON_NUM_THREADS";

/// Sizes candle's pools by the CPUs this process may use (module docs), once per process, before
/// any pool starts. Called when the Python module loads and when an encoder is built.
pub fn fit_candle_threads() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if std::env::var_os(THREADS_VARIABLE).is_some_and(|v| !v.is_empty()) {
            return;
        }
        let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        std::env::set_var(THREADS_VARIABLE, cpus.to_string());
    });
}

/// The threads of blagent's own pool (rayon's global one) and of candle's operations, now.
pub fn thread_counts() -> (usize, usize) {
    (
        rayon::current_num_threads(),
        candle_core::utils::get_num_threads(),
    )
}
