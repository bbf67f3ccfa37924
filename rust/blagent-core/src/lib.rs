//! blagent-core: file-level bug localization for automated program repair.
//!
//! The pipeline flows one way, one module per arrow:
//!
//! ```text
//! repo dir ─walk─▶ source files ─parse─▶ chunks + symbols + skeletons ─▶ BM25 indexes
//! issue text ─reformulate─▶ extracted fields (paths, modules, frames, identifiers, …)
//! fields × indexes ─retrieve─▶ per-signal file scores ─fuse─▶ ranked files with evidence
//! ```
//!
//! [`Localizer`] runs it end to end; [`interface`] is the request/result contract APR pipelines
//! call (and the Agentless batch); [`eval`] measures it on SWE-bench-style datasets;
//! [`analysis`] finds the stage where automated program repair runs failed.

mod error;

pub mod agent;
pub mod analysis;
pub mod cancel;
pub mod chunk;
pub mod dataset;
pub mod dense;
pub mod embed;
pub mod eval;
mod fault;
pub mod index;
pub mod interface;
pub mod json;
pub mod llm;
pub mod query;
pub mod repo;
pub mod retrieve;
mod text;
mod timing;

pub use crate::error::{panic_message, Error, ErrorKind, Result};
pub use crate::index::RepoIndex;
pub use crate::interface::{
    LocalizationResult, LocalizeOptions, LocalizeRequest, Localizer, Pipeline, SearchIndex,
    SCHEMA_VERSION,
};
