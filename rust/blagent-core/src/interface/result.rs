//! The one result type (`schemas/localize-result.schema.json`), whichever pipeline ranked the
//! files: the CLI prints it, the Python API wraps it, batch lines carry it, evaluation scores it.
//!
//! These types are the contract other pipelines read: a signal is a plain string here (`hint`
//! included), and fields are only ever added (a minor schema version).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::agent::{LlmReport, Pipeline};
use crate::index::RepoIndex;
use crate::query::Reformulation;
use crate::repo::Skipped;
use crate::retrieve::Granularity;
use crate::retrieve::{Entity, Evidence};

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
    /// This crate, running in `mode` (`llm-free`, or `llm:PIPELINE:MODEL`).
    pub fn blagent(mode: impl Into<String>) -> Self {
        LocalizerInfo {
            name: "blagent".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            mode: mode.into(),
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
            signal: e.signal.name().to_owned(),
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
    /// What each signal added to the file's LLM-free fused score: its weight times its value
    /// on the 0–1 scale (`hint`: a hinted file's boost). They sum to that score, which is
    /// `score` in the fused pipeline.
    #[serde(default)]
    pub contributions: BTreeMap<String, f32>,
    /// Why the file is here, strongest first within each signal.
    pub evidence: Vec<EvidenceItem>,
    /// Whether the request's hints named this file.
    pub hinted: bool,
}

/// Counts and flags about the indexed repository.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexStats {
    /// Files indexed.
    pub files: usize,
    /// Chunks indexed.
    pub chunks: usize,
    /// Files decoded lossily because they were not valid UTF-8.
    pub lossy_files: Vec<String>,
    /// Files with syntax errors (chunked anyway).
    pub syntax_error_files: Vec<String>,
}

impl IndexStats {
    /// The statistics of `index`.
    pub fn of(index: &RepoIndex) -> Self {
        let paths = |keep: fn(&crate::index::IndexedFile) -> bool| {
            index
                .files
                .iter()
                .filter(|f| keep(f))
                .map(|f| f.path().to_owned())
                .collect()
        };
        IndexStats {
            files: index.files.len(),
            chunks: index.num_chunks(),
            lossy_files: paths(|f| f.lossy),
            syntax_error_files: paths(|f| f.parsed.syntax_errors),
        }
    }
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

/// Wall-clock milliseconds per stage. The index stages are those of the index as it was built,
/// also when this answer reused it (`index_reused`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StageTimings {
    /// Listing and reading files.
    pub walk_ms: f64,
    /// Parsing and chunking.
    pub parse_ms: f64,
    /// Building the lexical indexes and symbol tables.
    pub index_ms: f64,
    /// Embedding chunks and building the vector index (0 without dense retrieval).
    pub dense_ms: f64,
    /// Reformulation, signals, fusion, the LLM pipeline, hints and entities.
    pub query_ms: f64,
    /// Everything this answer waited for: the query, plus the indexing unless it was reused.
    pub total_ms: f64,
    /// Whether the index was built before this answer (its stages then cost this one nothing).
    pub index_reused: bool,
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
    /// The pipeline that ranked the files.
    #[serde(default)]
    pub pipeline: Pipeline,
    /// The granularity answered.
    pub granularity: Granularity,
    /// Ranked files, best first: `top_k` of them when the repository has that many (files no
    /// signal reached follow the others in path order, with score 0 and no evidence).
    pub files: Vec<FileHit>,
    /// Entities of the returned files, best first; present only for `granularity = "function"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entities: Option<Vec<Entity>>,
    /// What the issue was reformulated into (the pattern-extracted fields).
    #[serde(default)]
    pub query: Reformulation,
    /// What the walk left out, and why.
    #[serde(default)]
    pub skipped: Vec<Skipped>,
    /// Index statistics.
    #[serde(default)]
    pub stats: IndexStats,
    /// Stage timings.
    pub timings: StageTimings,
    /// LLM token usage (zero in LLM-free mode).
    pub usage: TokenUsage,
    /// Things the caller should know: ignored hints, unsupported languages, LLM fallbacks,
    /// files read imperfectly.
    pub warnings: Vec<String>,
    /// What the model did (the LLM pipelines only): tokens per stage, parse failures,
    /// retries, fallbacks, its weight, its evidence per file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmReport>,
}

impl LocalizationResult {
    /// The ranked paths, best first.
    pub fn paths(&self) -> Vec<String> {
        self.files.iter().map(|f| f.path.clone()).collect()
    }
}
