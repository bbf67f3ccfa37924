//! The LLM-free ranking of one issue: reformulate it, compute every signal (the dense ones when
//! the index has a dense part), fuse them. Every pipeline starts from it.

use crate::dense::{DenseIndex, DenseModel};
use crate::error::{Error, Result};
use crate::index::RepoIndex;
use crate::query::{reformulate, Reformulation};

use super::fuse::{contributions, fuse_with};
use super::{
    compute_signals, dense_signals, FileSignals, FusionWeights, Normalizer, Rewrites, Signal,
};

/// A repository's lexical index and, when dense retrieval is on, its dense index: what the
/// pipelines search.
#[derive(Debug)]
pub struct SearchIndex {
    /// Files, chunks, BM25 indexes and symbol tables.
    pub repo: RepoIndex,
    /// The embedded chunks, when dense retrieval is on.
    pub dense: Option<DenseIndex>,
    /// The encoder of the function ranking's summaries ([`crate::retrieve::functions`]),
    /// when they are asked for.
    pub summaries: Option<DenseModel>,
}

impl From<RepoIndex> for SearchIndex {
    fn from(repo: RepoIndex) -> Self {
        SearchIndex {
            repo,
            dense: None,
            summaries: None,
        }
    }
}

/// The full LLM-free ranking of one issue in one index.
#[derive(Debug, Clone)]
pub struct Scored {
    /// What the issue was reformulated into.
    pub query: Reformulation,
    /// Raw signal scores and evidence, one entry per indexed file.
    pub signals: Vec<FileSignals>,
    /// `(file, fused score)` of every file with any signal, best first.
    pub ranked: Vec<(usize, f32)>,
    /// This query's scale for each signal.
    pub normalizer: Normalizer,
    /// The weights the signals were fused with.
    pub weights: FusionWeights,
}

impl Scored {
    /// What each signal added to `file`'s fused score ([`contributions`]); they sum to it.
    pub fn contributions(&self, file: usize) -> Vec<(Signal, f32)> {
        contributions(&self.normalizer, &self.weights, &self.signals[file]).collect()
    }
}

/// Scores `issue` in `index`. `rewrites` are the structural and behavioral rewrites for the
/// dense views (written by an LLM, or recorded); the rule-based ones when `None`. They matter
/// only when the index has a dense part.
pub fn score(
    index: &SearchIndex,
    issue: &str,
    weights: &FusionWeights,
    rewrites: Option<&Rewrites>,
) -> Result<Scored> {
    if issue.trim().is_empty() {
        return Err(Error::InvalidInput("the issue text is empty".to_owned()));
    }
    // A long issue takes seconds to read and score: a stop is heard between the stages.
    let query = reformulate(issue);
    crate::cancel::check()?;
    let mut signals = compute_signals(&index.repo, &query);
    crate::cancel::check()?;
    if let Some(dense) = &index.dense {
        let rewrites = rewrites
            .cloned()
            .unwrap_or_else(|| Rewrites::heuristic(&query));
        dense_signals(&index.repo, dense, &query, &rewrites, &mut signals)?;
    }
    let normalizer = Normalizer::new(&signals);
    let ranked = fuse_with(&normalizer, &signals, weights);
    Ok(Scored {
        query,
        signals,
        ranked,
        normalizer,
        weights: *weights,
    })
}

/// `ranked` followed by every other indexed file in path order (the index's order), each file
/// once: a complete ranking, so every pipeline returns `top_k` files when the repository has
/// that many.
pub fn complete(index: &RepoIndex, ranked: impl IntoIterator<Item = usize>) -> Vec<usize> {
    let mut seen = vec![false; index.files.len()];
    let mut out = Vec::with_capacity(index.files.len());
    for file in ranked.into_iter().chain(0..index.files.len()) {
        if file < seen.len() && !seen[file] {
            seen[file] = true;
            out.push(file);
        }
    }
    out
}
