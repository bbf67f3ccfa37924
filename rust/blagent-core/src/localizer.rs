//! The end-to-end LLM-free localizer: index a repository, reformulate the issue, compute and
//! fuse the signals, return the top files with their evidence.

use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::dense::{DenseModel, DenseOptions};
use crate::error::{Error, Result};
use crate::index::{IndexOptions, IndexTimings, RepoIndex};
use crate::query::{reformulate, Reformulation};
use crate::repo::Skipped;
use crate::retrieve::{
    compute_signals, dense_signals, fuse, Evidence, FileSignals, FusionWeights, Rewrites, Signal,
};

/// Version of the JSON result format; bumped on any incompatible change.
pub const SCHEMA_VERSION: &str = "1";

/// Options of [`Localizer`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LocalizeOptions {
    /// How many files to return.
    pub top_k: usize,
    /// How to index the repository.
    pub index: IndexOptions,
    /// How to weigh the signals.
    pub weights: FusionWeights,
    /// Dense retrieval (the embedding model and its cache); lexical signals only when `None`.
    #[serde(default)]
    pub dense: Option<DenseOptions>,
}

impl Default for LocalizeOptions {
    fn default() -> Self {
        LocalizeOptions {
            top_k: 10,
            index: IndexOptions::default(),
            weights: FusionWeights::default(),
            dense: None,
        }
    }
}

/// One file of the ranking.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankedFile {
    /// 1-based rank.
    pub rank: usize,
    /// Repository-relative path.
    pub path: String,
    /// Fused score.
    pub score: f32,
    /// Raw score per signal (only the signals that fired).
    pub signals: std::collections::BTreeMap<String, f32>,
    /// Why the file is here.
    pub evidence: Vec<Evidence>,
}

/// Counts and flags about the indexed repository.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
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

/// Wall-clock milliseconds per stage.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Timings {
    /// Indexing stages.
    #[serde(flatten)]
    pub index: IndexTimings,
    /// Reformulation, signals and fusion.
    pub query_ms: f64,
}

/// The result of localizing one issue.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LocalizeResult {
    /// [`SCHEMA_VERSION`].
    pub schema_version: String,
    /// The ranked files, best first.
    pub files: Vec<RankedFile>,
    /// What the issue was reformulated into.
    pub query: Reformulation,
    /// What the walk left out.
    pub skipped: Vec<Skipped>,
    /// Index statistics.
    pub stats: IndexStats,
    /// Stage timings.
    pub timings: Timings,
}

impl LocalizeResult {
    /// The ranked paths, best first.
    pub fn paths(&self) -> Vec<String> {
        self.files.iter().map(|f| f.path.clone()).collect()
    }
}

/// The full ranking of one issue in one index, before the cut at `top_k`.
#[derive(Debug, Clone)]
pub struct Scored {
    /// What the issue was reformulated into.
    pub query: Reformulation,
    /// Raw signal scores and evidence, one entry per indexed file.
    pub signals: Vec<FileSignals>,
    /// `(file, fused score)` of every file with any signal, best first.
    pub ranked: Vec<(usize, f32)>,
}

/// Localizes bug reports in repositories, with no LLM.
#[derive(Debug, Clone, Default)]
pub struct Localizer {
    options: LocalizeOptions,
    dense: Option<DenseModel>,
}

impl Localizer {
    /// A localizer with these options.
    pub fn new(options: LocalizeOptions) -> Result<Self> {
        if options.top_k == 0 {
            return Err(Error::InvalidInput("top_k must be at least 1".to_owned()));
        }
        if options.index.chunk.max_bytes == 0 {
            return Err(Error::InvalidInput(
                "chunk max_bytes must be at least 1".to_owned(),
            ));
        }
        let dense = options.dense.clone().map(DenseModel::load).transpose()?;
        Ok(Localizer { options, dense })
    }

    /// The options in force.
    pub fn options(&self) -> &LocalizeOptions {
        &self.options
    }

    /// Indexes a repository (reusable across issues on the same tree), with its dense part when
    /// dense retrieval is on.
    pub fn index(&self, repo: &Path) -> Result<RepoIndex> {
        let mut index = RepoIndex::build(repo, &self.options.index)?;
        if let Some(model) = &self.dense {
            index.attach_dense(model)?;
        }
        Ok(index)
    }

    /// Indexes `repo` and localizes `issue` in it.
    pub fn localize(&self, repo: &Path, issue: &str) -> Result<LocalizeResult> {
        check_issue(issue)?;
        let index = self.index(repo)?;
        self.localize_in(&index, issue)
    }

    /// Every file with any signal, best first, with the signals behind the scores: the ranking
    /// before the cut at `top_k`, for callers that adjust it (caller hints), read it whole, or
    /// measure the signals (`blagent eval --signals-out`).
    pub fn score(&self, index: &RepoIndex, issue: &str) -> Result<Scored> {
        self.score_with(index, issue, None)
    }

    /// [`Localizer::score`] with the structural and behavioral rewrites given (by an LLM, or
    /// recorded) instead of written by rule. They matter only when the index has a dense part.
    pub fn score_with(
        &self,
        index: &RepoIndex,
        issue: &str,
        rewrites: Option<&Rewrites>,
    ) -> Result<Scored> {
        check_issue(issue)?;
        let query = reformulate(issue);
        let mut signals = compute_signals(index, &query);
        if let Some(dense) = &index.dense {
            let rewrites = rewrites
                .cloned()
                .unwrap_or_else(|| Rewrites::heuristic(&query));
            dense_signals(index, dense, &query, &rewrites, &mut signals)?;
        }
        let ranked = fuse(&signals, &self.options.weights);
        Ok(Scored {
            query,
            signals,
            ranked,
        })
    }

    /// Localizes `issue` in an already built index.
    pub fn localize_in(&self, index: &RepoIndex, issue: &str) -> Result<LocalizeResult> {
        let start = Instant::now();
        let scored = self.score(index, issue)?;
        Ok(self.result(index, &scored, crate::elapsed_ms(start)))
    }

    /// The result for a scored issue: its best `top_k` files with their evidence, and the
    /// index's statistics. `query_ms` is the time the scoring took.
    pub fn result(&self, index: &RepoIndex, scored: &Scored, query_ms: f64) -> LocalizeResult {
        Self::result_ranked(index, scored, &scored.ranked, self.options.top_k, query_ms)
    }

    /// The result for `ranked` (`(file, score)`, best first), cut at `top_k`, with the evidence
    /// of `scored`: how the LLM pipelines report a ranking of their own.
    pub(crate) fn result_ranked(
        index: &RepoIndex,
        scored: &Scored,
        ranked: &[(usize, f32)],
        top_k: usize,
        query_ms: f64,
    ) -> LocalizeResult {
        let files = ranked
            .iter()
            .take(top_k)
            .enumerate()
            .map(|(rank, &(file, score))| {
                ranked_file(index, &scored.signals[file], file, rank + 1, score)
            })
            .collect();
        LocalizeResult {
            schema_version: SCHEMA_VERSION.to_owned(),
            files,
            query: scored.query.clone(),
            skipped: index.skipped.clone(),
            stats: IndexStats {
                files: index.files.len(),
                chunks: index.num_chunks(),
                lossy_files: index
                    .files
                    .iter()
                    .filter(|f| f.lossy)
                    .map(|f| f.path().to_owned())
                    .collect(),
                syntax_error_files: index
                    .files
                    .iter()
                    .filter(|f| f.parsed.syntax_errors)
                    .map(|f| f.path().to_owned())
                    .collect(),
            },
            timings: Timings {
                index: index.timings,
                query_ms,
            },
        }
    }
}

fn check_issue(issue: &str) -> Result<()> {
    if issue.trim().is_empty() {
        return Err(Error::InvalidInput("the issue text is empty".to_owned()));
    }
    Ok(())
}

fn ranked_file(
    index: &RepoIndex,
    signals: &FileSignals,
    file: usize,
    rank: usize,
    score: f32,
) -> RankedFile {
    let fired = Signal::ALL
        .iter()
        .filter(|&&s| signals.get(s) > 0.0)
        .map(|&s| (signal_name(s), signals.get(s)))
        .collect();
    RankedFile {
        rank,
        path: index.files[file].path().to_owned(),
        score,
        signals: fired,
        evidence: signals.evidence.clone(),
    }
}

/// The `snake_case` name of a signal, as in the JSON output.
pub fn signal_name(signal: Signal) -> String {
    serde_json::to_value(signal)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
