//! The localizer as its users call it: one [`Localizer`], a [`LocalizeRequest`] in (naming the
//! pipeline: fused, blagent or rrl), one [`LocalizationResult`] out (JSON Schemas in
//! `schemas/`), many at once with [`run_batch`] (a [`Job`]: a [`BatchWorker`] per machine can feed one
//! [`BatchSink`]) into an Agentless `loc_outputs.jsonl`
//! ([`AgentlessLine`]).
//!
//! Caller hints: a hinted file is scored as if the issue named its full path (see the `hints`
//! module): `weights.path_mention × (1 − its path_mention signal)` is added to its fused score,
//! and it carries a `hint` evidence item. With `granularity = "function"` the result also lists
//! `path::Class.method` entities of the returned files (see the `entities` module).

mod agentless;
mod batch;
mod batch_sink;
mod batch_types;
mod batch_worker;
mod dataset_config;
mod hints;
mod job;
mod localizer;
pub(crate) mod progress;
mod request;
mod result;
mod resume;
mod run;

pub use self::agentless::{AgentlessLine, RELATED_MORE_FILES, RELATED_PER_FILE, RELATED_TOP_FILES};
pub use self::batch::{run_batch, BatchJob};
pub use self::batch_sink::BatchSink;
pub use self::batch_types::{BatchConfig, BatchFailure, BatchOutcome, BatchReport};
pub use self::batch_worker::BatchWorker;
pub use self::dataset_config::DatasetConfig;
pub use self::hints::HINT_SIGNAL;
pub use self::job::{
    catch_panic, drive, json_sink, json_worker, parse_config, run_job, run_one, AnySink, AnyWorker,
    Job, JobSink, JobWorker, JsonSink, JsonWorker,
};
pub use self::localizer::{LocalizeOptions, Localizer};
pub use self::request::{Hints, LocalizeRequest};
pub use self::result::{
    EvidenceItem, FileHit, IndexStats, LocalizationResult, LocalizerInfo, StageTimings, TokenUsage,
};
pub use crate::agent::Pipeline;
pub use crate::retrieve::{Ask, Granularity, DEFAULT_TOP_K};
pub use crate::retrieve::{Entity, SearchIndex, MAX_FUNCTIONS};

/// Version of the request and result formats, `major.minor`: a request of another major version
/// is refused; minor versions only add optional fields (1.1: one result for every pipeline,
/// with `pipeline`, `query`, `skipped`, `stats`, `llm`, and `dense_ms` / `index_reused` in
/// `timings`; 1.2: the files' `contributions`; 1.3: the entities' `contributions`).
pub const SCHEMA_VERSION: &str = "1.3";
