//! The shape of every run over a dataset's instances (a batch, an evaluation): a worker turns
//! one item into its outcome, a sink plans the run (the items to do) and takes each outcome
//! as it comes. The two meet only through plain data, so [`run_job`] joins them in one loop
//! and a distributed driver (`--ray`) runs workers elsewhere and feeds one sink, through one
//! JSON face ([`AnyWorker`], [`AnySink`]) whichever the job is.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::dataset_config::DatasetConfig;
use crate::dataset::Instance;
use crate::error::{panic_message, Error, Result};

/// A kind of run over a dataset's instances: its types, and the two things the loop needs to
/// know about them.
pub trait Job: Sized + 'static {
    /// Its name in messages (`batch`, `evaluation`).
    const NAME: &'static str;
    /// What to run (read from JSON; its LLM is set apart, see [`Job::settings`]).
    type Config: DeserializeOwned + Send;
    /// One unit of work.
    type Item: Clone + Serialize + DeserializeOwned + Send;
    /// What a worker made of an item.
    type Outcome: Serialize + DeserializeOwned + Send;
    /// What the run did.
    type Report: Serialize + Send;
    /// The per-item half.
    type Worker: JobWorker<Self>;
    /// The planning and writing half.
    type Sink: JobSink<Self>;

    /// The settings every run over a dataset has.
    fn settings(config: &mut Self::Config) -> &mut DatasetConfig;
    /// The instance an item is about.
    fn instance(item: &Self::Item) -> &Instance;
    /// The outcome of an item whose worker could give none (`kind`: `internal` for a panic,
    /// `worker_lost` for a worker that died).
    fn failed(item: &Self::Item, kind: &str, error: String) -> Self::Outcome;
    /// Sets the report's wall-clock seconds.
    fn took(report: &mut Self::Report, seconds: f64);
}

/// The per-item half of a [`Job`].
pub trait JobWorker<J: Job>: Sized + Send + Sync {
    /// A worker for `config`'s run (its outputs and selection are not used here).
    fn new(config: &J::Config) -> Result<Self>;
    /// The outcome of `item`: a failure of the item is in it; the `Err` is only
    /// [`Error::Cancelled`] or an outcome that cannot be made at all.
    fn run(&self, item: &J::Item) -> Result<J::Outcome>;
}

/// The planning and writing half of a [`Job`].
pub trait JobSink<J: Job>: Sized + Send {
    /// Plans `config`'s run and opens its outputs.
    fn open(config: &J::Config) -> Result<Self>;
    /// The items still to do, in order.
    fn todo(&self) -> &[J::Item];
    /// Shows that `instance_id` is being worked on.
    fn started(&self, instance_id: &str);
    /// A note above the progress.
    fn note(&self, message: &str);
    /// Takes one outcome, in whatever order they come; one for an item that is not pending is
    /// an input error.
    fn record(&mut self, outcome: J::Outcome) -> Result<()>;
    /// The report, once every item has its outcome.
    fn finish(self) -> Result<J::Report>;
}

/// `work()`, a panic in it made an internal error (with the panic's message), so that it fails
/// one instance of a loop and not the loop.
pub fn catch_panic<T>(work: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|panic| {
        Err(Error::Internal(format!(
            "panic: {}",
            panic_message(&*panic)
        )))
    })
}

/// `work` on `item`, a panic in it made the item's `internal` failure.
pub fn run_one<J: Job>(
    item: &J::Item,
    work: impl FnOnce(&J::Item) -> Result<J::Outcome>,
) -> Result<J::Outcome> {
    let outcome = match catch_unwind(AssertUnwindSafe(|| work(item))) {
        Ok(outcome) => outcome?,
        Err(panic) => J::failed(
            item,
            "internal",
            format!("internal error (panic): {}", panic_message(&*panic)),
        ),
    };
    crate::cancel::check()?;
    Ok(outcome)
}

/// Runs every item of `sink` through `work` in turn (each through [`run_one`]) and returns
/// the sink's report.
pub fn drive<J: Job>(
    mut sink: J::Sink,
    work: impl Fn(&J::Item) -> Result<J::Outcome>,
) -> Result<J::Report> {
    let todo = sink.todo().to_vec();
    for item in &todo {
        crate::cancel::check()?;
        sink.started(&J::instance(item).instance_id);
        let outcome = run_one::<J>(item, &work)?;
        sink.record(outcome)?;
    }
    sink.finish()
}

/// Runs `config`'s job in this process: its worker (made first, so a bad option or model
/// fails before any output is touched) over its sink's items.
pub fn run_job<J: Job>(config: &J::Config) -> Result<J::Report> {
    let start = Instant::now();
    let worker = J::Worker::new(config)?;
    let sink = J::Sink::open(config)?;
    let mut report = drive::<J>(sink, |item| worker.run(item))?;
    J::took(&mut report, start.elapsed().as_secs_f64());
    Ok(report)
}

/// `T` from JSON text, an input error naming `what` of job `J` when it is not one.
fn parse<J: Job, T: DeserializeOwned>(what: &str, json: &str) -> Result<T> {
    crate::json::from_object(json)
        .map_err(|e| Error::InvalidInput(format!("invalid {} {what}: {e}", J::NAME)))
}

/// A job's configuration from JSON, with its LLM run.
pub fn parse_config<J: Job>(json: &str, llm: Option<crate::agent::LlmRun>) -> Result<J::Config> {
    let mut config: J::Config = parse::<J, _>("config", json)?;
    J::settings(&mut config).llm = llm;
    Ok(config)
}

/// A job's worker behind JSON, whichever the job is.
pub trait AnyWorker: Send + Sync {
    /// The outcome (JSON) of one item (JSON, one of the sink's `todo_json` entries' `item`).
    fn run_json(&self, item_json: &str) -> Result<String>;
}

/// A job's sink behind JSON, whichever the job is.
pub trait AnySink: Send {
    /// The items to do, in order, as a JSON list of `{"instance", "item"}`.
    fn todo_json(&self) -> Result<String>;
    /// Shows that `instance_id` is being worked on.
    fn started(&self, instance_id: &str);
    /// A note above the progress.
    fn note(&self, message: &str);
    /// Takes one outcome (JSON, from [`AnyWorker::run_json`]).
    fn record_json(&mut self, outcome_json: &str) -> Result<()>;
    /// Records that an item (JSON) failed where no worker could say so.
    fn record_failure_json(&mut self, item_json: &str, kind: &str, error: &str) -> Result<()>;
    /// The report as JSON, once every item has its outcome.
    fn finish_json(self: Box<Self>) -> Result<String>;
}

/// A worker of `J` behind [`AnyWorker`].
pub struct JsonWorker<J: Job>(pub J::Worker);

/// A sink of `J` behind [`AnySink`].
pub struct JsonSink<J: Job>(pub J::Sink);

impl<J: Job> AnyWorker for JsonWorker<J> {
    fn run_json(&self, item_json: &str) -> Result<String> {
        let item: J::Item = parse::<J, _>("item", item_json)?;
        Ok(serde_json::to_string(&run_one::<J>(&item, |i| {
            self.0.run(i)
        })?)?)
    }
}

/// One entry of [`AnySink::todo_json`].
#[derive(Serialize)]
struct Todo<'a, I> {
    instance: &'a Instance,
    item: &'a I,
}

impl<J: Job> AnySink for JsonSink<J> {
    fn todo_json(&self) -> Result<String> {
        let todo: Vec<Todo<'_, J::Item>> = self
            .0
            .todo()
            .iter()
            .map(|item| Todo {
                instance: J::instance(item),
                item,
            })
            .collect();
        Ok(serde_json::to_string(&todo)?)
    }

    fn started(&self, instance_id: &str) {
        self.0.started(instance_id);
    }

    fn note(&self, message: &str) {
        self.0.note(message);
    }

    fn record_json(&mut self, outcome_json: &str) -> Result<()> {
        let outcome: J::Outcome = parse::<J, _>("outcome", outcome_json)?;
        self.0.record(outcome)
    }

    fn record_failure_json(&mut self, item_json: &str, kind: &str, error: &str) -> Result<()> {
        let item: J::Item = parse::<J, _>("item", item_json)?;
        self.0.record(J::failed(&item, kind, error.to_owned()))
    }

    fn finish_json(self: Box<Self>) -> Result<String> {
        Ok(serde_json::to_string(&self.0.finish()?)?)
    }
}

/// `config_json`'s worker of job `J`, behind JSON.
pub fn json_worker<J: Job>(
    config_json: &str,
    llm: Option<crate::agent::LlmRun>,
) -> Result<Box<dyn AnyWorker>> {
    let config = parse_config::<J>(config_json, llm)?;
    Ok(Box::new(JsonWorker::<J>(J::Worker::new(&config)?)))
}

/// `config_json`'s sink of job `J`, behind JSON. `llm` is the run's LLM side, as the workers
/// have it: what it reads (prompts, profile, cassette, …) is among the inputs no output may
/// be, as in a run on one machine.
pub fn json_sink<J: Job>(
    config_json: &str,
    llm: Option<crate::agent::LlmRun>,
) -> Result<Box<dyn AnySink>> {
    let config = parse_config::<J>(config_json, llm)?;
    Ok(Box::new(JsonSink::<J>(J::Sink::open(&config)?)))
}
