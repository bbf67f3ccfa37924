//! How many threads candle's pool for element-wise operations starts.
//!
//! candle (0.11) sizes the pool behind its element-wise operations (the embeddings' sums, the
//! pooling; the encoder's products are blagent's own) by `CANDLE_NUM_THREADS`, else
//! `RAYON_NUM_THREADS`, else the machine's physical cores (`num_cpus::get_physical`). That last
//! count is blind to the CPUs this process may use: under an affinity mask (`taskset`, a
//! container's cpuset) or a cgroup quota it starts more threads than there are CPUs, and they
//! spin after each operation, taking CPU from the encoder's own threads. On 2 cores of a
//! 16-core Intel Xeon (Emerald Rapids, `taskset -c 0,1`), a cold dense index of django took
//! 39.6–44.7 s with candle's 16 threads and 29.8–32.4 s with 2.
//!
//! [`fit_candle_threads`] starts that pool once, when the first encoder loads, with as many
//! threads as the CPUs this process may use by `std::thread::available_parallelism` (the
//! affinity mask and the cgroup quota; what blagent's own rayon pool takes), unless the user
//! set either variable to a count. It sets `CANDLE_NUM_THREADS` only while the pool starts and
//! then puts the environment back, so child processes see the user's environment. The pool is
//! not started before an encoder loads: a process forked after `import blagent` does not
//! inherit a pool without its threads.

use std::sync::{Once, OnceLock};

/// The variable candle reads first for its pool's size.
const CANDLE_THREADS_VARIABLE: &str = "CANDLE_NUM_THREADS";
/// The variable rayon (and candle next) read.
const RAYON_THREADS_VARIABLE: &str = "RAYON_NUM_THREADS";

/// The threads candle's pool started with, once [`fit_candle_threads`] has started it.
static CANDLE_THREADS: OnceLock<usize> = OnceLock::new();

/// A count the user set in `name`: a whole number above 0, as candle and rayon read it (they
/// take `0` or anything else for unset).
fn count_in(name: &str) -> Option<usize> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
}

/// The CPUs this process may use.
fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// Starts candle's element-wise pool sized by the CPUs this process may use (module docs),
/// once per process. Called when an encoder loads, before its first operation.
pub fn fit_candle_threads() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let chosen = count_in(CANDLE_THREADS_VARIABLE).or_else(|| count_in(RAYON_THREADS_VARIABLE));
        let pool = if chosen.is_some() {
            candle_core::utils::barrier_pool()
        } else {
            let before = std::env::var_os(CANDLE_THREADS_VARIABLE);
            std::env::set_var(CANDLE_THREADS_VARIABLE, available_cpus().to_string());
            let pool = candle_core::utils::barrier_pool();
            match before {
                Some(value) => std::env::set_var(CANDLE_THREADS_VARIABLE, value),
                None => std::env::remove_var(CANDLE_THREADS_VARIABLE),
            }
            pool
        };
        // Its workers and the calling thread.
        let _ = CANDLE_THREADS.set(pool.n_workers() + 1);
    });
}

/// The threads of blagent's own pool (rayon's global one: `RAYON_NUM_THREADS` where the user
/// set a count, else the CPUs this process may use) and of candle's element-wise pool (`None`
/// until an encoder has loaded). Neither pool is started by asking.
pub fn thread_counts() -> (usize, Option<usize>) {
    (
        count_in(RAYON_THREADS_VARIABLE).unwrap_or_else(available_cpus),
        CANDLE_THREADS.get().copied(),
    )
}
