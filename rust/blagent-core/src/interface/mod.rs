//! The standardized localizer interface that APR pipelines call: a [`LocalizeRequest`] in, a
//! [`LocalizationResult`] out (JSON Schemas in `schemas/`), many at once with [`run_batch`] into
//! an Agentless `loc_outputs.jsonl` ([`AgentlessLine`]).
//!
//! Caller hints: a hinted file is scored as if the issue named its full path (see the `hints`
//! module): `weights.path_mention × (1 − its path_mention signal)` is added to its fused score,
//! and it carries a `hint` evidence item. With `granularity = "function"` the result also lists
//! `path::Class.method` entities of the returned files (see the `entities` module).

mod agentless;
mod batch;
pub(crate) mod entities;
mod hints;
mod llm;
mod progress;
mod request;
mod result;
mod resume;
mod run;

pub use self::agentless::{AgentlessLine, EXTRA_KEY};
pub use self::batch::{run_batch, BatchConfig, BatchFailure, BatchReport};
pub use self::entities::MAX_ENTITIES_PER_FILE;
pub use self::hints::HINT_SIGNAL;
pub use self::llm::to_interface;
pub use self::request::{Granularity, Hints, LocalizeRequest, DEFAULT_TOP_K};
pub use self::result::{
    Entity, EvidenceItem, FileHit, LocalizationResult, LocalizerInfo, StageTimings, TokenUsage,
};

/// Version of the request and result formats, `major.minor`: a request of another major version
/// is refused; minor versions only add optional fields.
pub const SCHEMA_VERSION: &str = "1.0";
