//! Running a core call so that Ctrl-C stops it: the call runs on a worker thread with the GIL
//! released while the calling thread looks for signals every [`SIGNAL_POLL`] (only the main
//! thread may run Python's signal handlers, so the waiting, not the work, stays there). On a
//! pending `KeyboardInterrupt` (or any exception a signal handler raises) the core is asked to
//! stop ([`blagent_core::cancel::request`]), the worker is waited for (batch and eval stop
//! between instances, LLM waits at once) and the exception is raised. Panics in the call are
//! caught and raised as `InternalError`.
//!
//! Workers are kept alive between calls ([`workers`]): a thread started per call begins with
//! an empty allocator heap, and faulting its pages in cost a millisecond and more per query
//! (django: 1.7-3.2 ms median query time on the calling thread, 4.1-4.7 ms on a fresh thread
//! per call). So a call's inputs are owned (`'static`): the bindings hold the core's objects
//! in `Arc`s.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use blagent_core::{cancel, Error};

use crate::errors::panic_error;
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;

/// How often the calling thread looks for signals.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// The outcome of the worker: the call's result, or its panic.
type Outcome<T> = std::thread::Result<blagent_core::Result<T>>;

/// The process that made the last call (0: none yet).
static CALLER_PID: AtomicU32 = AtomicU32::new(0);

/// Calls running now, in any thread ([`InFlight`]).
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// Whether this process was forked while a call ran in its parent: that call's thread is gone
/// part-way here, perhaps holding a lock or a one-time initialisation (a regular expression's
/// `LazyLock`) that no one will release.
static FORKED_MID_CALL: AtomicBool = AtomicBool::new(false);

/// A call counted in [`IN_FLIGHT`] while it lives.
struct InFlight;

impl InFlight {
    fn enter() -> Self {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Run in a child just after the fork (`os.register_at_fork(after_in_child=...)`): its copy
/// of [`IN_FLIGHT`] is the count at the fork itself (a count read in a hook before the fork
/// missed a call that started while later hooks released the GIL: a review), and none of
/// those calls' threads came along.
pub(crate) fn note_fork_in_child() {
    if IN_FLIGHT.load(Ordering::SeqCst) > 0 {
        FORKED_MID_CALL.store(true, Ordering::SeqCst);
    }
}

/// Refuses every call in a process forked while another thread of its parent was in a call
/// (a review: a lexical query in the child, which is otherwise allowed, hung for good on a
/// one-time initialisation the parent's thread had begun).
fn refuse_if_forked_mid_call() -> blagent_core::Result<()> {
    if !FORKED_MID_CALL.load(Ordering::SeqCst) {
        return Ok(());
    }
    Err(Error::InvalidInput(
        "this process was forked while another thread of its parent was in a blagent call, \
         which a fork leaves part-way for good: start the process with multiprocessing's \
         'spawn' or 'forkserver' method, or fork when no blagent call runs"
            .to_owned(),
    ))
}

/// Refuses a call in a process forked after blagent ran in its parent: the threads of the
/// parent's calls (this module's workers, the core's thread pool) do not survive a fork, and
/// a call waiting on them would hang. A process forked before any call runs as usual, and so
/// does a call on the calling thread that uses no pool ([`run_short`]: a lexical query in a
/// prebuilt index; the bindings check a dense one here first, as its query is embedded on the
/// core's pool).
pub(crate) fn refuse_after_fork() -> blagent_core::Result<()> {
    let me = std::process::id();
    match CALLER_PID.swap(me, Ordering::Relaxed) {
        0 => Ok(()),
        parent if parent != me => {
            // Still refused at the next call: the pool threads are gone for good.
            CALLER_PID.store(parent, Ordering::Relaxed);
            Err(Error::InvalidInput(
                "blagent ran in this process's parent before it was forked, and its worker \
                 threads do not survive a fork: start the process with multiprocessing's \
                 'spawn' or 'forkserver' method, or import blagent only in the children"
                    .to_owned(),
            ))
        }
        _ => Ok(()),
    }
}

/// Runs `work` (see the module documentation); `to_py` converts its error.
pub(crate) fn run_cancellable<T: Send + 'static>(
    py: Python<'_>,
    work: impl FnOnce() -> blagent_core::Result<T> + Send + 'static,
    to_py: impl FnOnce(Error) -> PyErr,
) -> PyResult<T> {
    if let Err(err) = refuse_if_forked_mid_call().and_then(|()| refuse_after_fork()) {
        return Err(to_py(err));
    }
    let _counted = InFlight::enter();
    // Without the GIL: it may wait for calls a Ctrl-C cancelled to stop, and their callers
    // need the GIL to finish.
    let _scope = py.detach(cancel::Scope::enter);
    let (tx, rx) = mpsc::channel::<Outcome<T>>();
    workers::submit(Box::new(move || {
        let _ = tx.send(catch_unwind(AssertUnwindSafe(work)));
    }));
    let mut rx = rx;
    let outcome = loop {
        // The receiver is moved in and out: it is `Send`, not `Sync`.
        let (received, back) = py.detach(move || (rx.recv_timeout(SIGNAL_POLL), rx));
        rx = back;
        match received {
            Ok(outcome) => break outcome,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(panic_error(&"the worker ended without a result"));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Err(interrupt) = py.check_signals() {
            cancel::request();
            // The call stops at its next check; its outcome is dropped.
            let _ = py.detach(move || rx.recv());
            return Err(interrupt);
        }
    };
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(Error::Cancelled)) => Err(PyKeyboardInterrupt::new_err("interrupted")),
        Ok(Err(err)) => Err(to_py(err)),
        Err(panic) => Err(panic_error(&*panic)),
    }
}

/// Runs `work`, which cannot block for long (a query in a built index), on the calling thread
/// with the GIL released: no hand-over to a worker, which costs milliseconds when the cores are
/// busy. A Ctrl-C during it is raised as soon as it returns. Panics become `InternalError`.
pub(crate) fn run_short<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> blagent_core::Result<T> + Send,
    to_py: impl FnOnce(Error) -> PyErr,
) -> PyResult<T> {
    if let Err(err) = refuse_if_forked_mid_call() {
        return Err(to_py(err));
    }
    let _counted = InFlight::enter();
    // In a scope of its own, as every call: it waits for calls a Ctrl-C cancelled to stop, so
    // that the stop does not reach it (a review: a query started in another thread after a
    // Ctrl-C was handled was interrupted by it).
    let outcome = py.detach(|| {
        let _scope = cancel::Scope::enter();
        catch_unwind(AssertUnwindSafe(work))
    });
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(to_py(err)),
        Err(panic) => Err(panic_error(&*panic)),
    }
}

/// Worker threads kept between calls: a job goes to an idle worker, or to a new one when all
/// are busy (calls from several Python threads run at once); a worker that finds more than
/// [`MAX_IDLE`] idle ones when it finishes ends.
mod workers {
    use std::sync::{mpsc, Mutex, PoisonError};

    /// Most workers kept waiting for a job.
    const MAX_IDLE: usize = 4;

    pub(super) type Job = Box<dyn FnOnce() + Send + 'static>;

    /// The idle workers' job channels.
    static IDLE: Mutex<Vec<mpsc::Sender<Job>>> = Mutex::new(Vec::new());

    /// Runs `job` on a worker. If no thread can be started, `job` is dropped unrun (its
    /// caller then sees its channel disconnect).
    pub(super) fn submit(mut job: Job) {
        loop {
            let idle = IDLE.lock().unwrap_or_else(PoisonError::into_inner).pop();
            match idle {
                Some(worker) => match worker.send(job) {
                    Ok(()) => return,
                    // That worker ended; try the next.
                    Err(mpsc::SendError(back)) => job = back,
                },
                None => break,
            }
        }
        let _ = std::thread::Builder::new()
            .name("blagent-call".to_owned())
            .spawn(move || work(job));
    }

    fn work(first: Job) {
        let (tx, rx) = mpsc::channel::<Job>();
        let mut job = first;
        loop {
            job();
            {
                let mut idle = IDLE.lock().unwrap_or_else(PoisonError::into_inner);
                if idle.len() >= MAX_IDLE {
                    return;
                }
                idle.push(tx.clone());
            }
            match rx.recv() {
                Ok(next) => job = next,
                Err(_) => return,
            }
        }
    }
}
