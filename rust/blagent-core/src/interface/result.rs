//! The result of the standardized localizer interface (`schemas/localize-result.schema.json`).
//!
//! These types are the contract other pipelines read, so they are decoupled from the internal
//! ones: a signal is a plain string here (`hint` included), and nothing internal leaks in.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::request::Granularity;
use crate::retrieve::Evidence;

/// Who produced a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalizerInfo {
    /// The localizer's name (`blagent`).
    pub name: String,
    /// Its version.
    pub version: String,
    /// How it ran: `llm-free`, or the model it used.
    pub mode: String,
}

impl LocalizerInfo {
    /// This crate, without an LLM.
    pub fn blagent_llm_free() -> Self {
        LocalizerInfo {
            name: "blagent".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            mode: "llm-free".to_owned(),
        }
    }
}

/// One reason a file or entity is ranked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceItem {
    /// The signal (`bm25_chunk`, `stack_frame`, …, or `hint` for a caller's hint).
    pub signal: String,
    /// Its raw contribution to that signal.
    pub score: f32,
    /// What was matched, in words.
    pub detail: String,
    /// Line range, 1-based and inclusive, when the evidence is a span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<(usize, usize)>,
    /// Enclosing symbol (`Class.method`) of that span, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
}

impl From<&Evidence> for EvidenceItem {
    fn from(e: &Evidence) -> Self {
        EvidenceItem {
            signal: crate::signal_name(e.signal),
            score: e.score,
            detail: e.detail.clone(),
            lines: e.lines,
            symbol: e.symbol.clone(),
        }
    }
}

/// One ranked file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileHit {
    /// 1-based rank.
    pub rank: usize,
    /// Repository-relative path, `/`-separated.
    pub path: String,
    /// Fused score (hint boost included); higher is more likely.
    pub score: f32,
    /// Raw score per signal that fired.
    pub signals: BTreeMap<String, f32>,
    /// Why the file is here, strongest first within each signal.
    pub evidence: Vec<EvidenceItem>,
    /// Whether the request's hints named this file.
    pub hinted: bool,
}

/// A class, function or method of a top file, for `granularity = "function"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    /// `path::Qualified.name`, as LocAgent and SWE-bench-style function-level metrics spell it.
    pub id: String,
    /// The file.
    pub path: String,
    /// Qualified name within the file (`Class.method`).
    pub name: String,
    /// `class`, `function` or `method`.
    pub kind: String,
    /// Line range, 1-based and inclusive.
    pub lines: (usize, usize),
    /// The part of the file's fused score whose evidence lies in this entity.
    pub score: f32,
    /// Rank of its file.
    pub file_rank: usize,
}

/// Tokens spent on LLM calls; all zero in LLM-free mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt (input) tokens.
    pub prompt_tokens: u64,
    /// Completion (output) tokens.
    pub completion_tokens: u64,
    /// Number of LLM calls.
    pub llm_calls: u64,
}

/// Wall-clock milliseconds per stage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StageTimings {
    /// Listing and reading files (0 when a prebuilt index was reused).
    pub walk_ms: f64,
    /// Parsing and chunking.
    pub parse_ms: f64,
    /// Building the lexical indexes and symbol tables.
    pub index_ms: f64,
    /// Reformulation, signals, fusion, hints and entities.
    pub query_ms: f64,
    /// Everything, as the caller waited for it.
    pub total_ms: f64,
}

/// The answer to one [`super::LocalizeRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LocalizationResult {
    /// [`super::SCHEMA_VERSION`].
    pub schema_version: String,
    /// The request's `instance_id`.
    pub instance_id: String,
    /// Who answered.
    pub localizer: LocalizerInfo,
    /// The granularity answered.
    pub granularity: Granularity,
    /// Ranked files, best first, at most `top_k`.
    pub files: Vec<FileHit>,
    /// Entities of the returned files, best first; present only for `granularity = "function"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entities: Option<Vec<Entity>>,
    /// Stage timings.
    pub timings: StageTimings,
    /// LLM token usage (zero in LLM-free mode).
    pub usage: TokenUsage,
    /// Things the caller should know: ignored hints, unsupported languages, skipped files.
    pub warnings: Vec<String>,
}

impl LocalizationResult {
    /// The ranked paths, best first.
    pub fn paths(&self) -> Vec<String> {
        self.files.iter().map(|f| f.path.clone()).collect()
    }
}
