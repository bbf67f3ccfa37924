//! The dense signals: chunk-level k-NN in the repository's dense index for three views of the
//! issue (its text, the structural rewrite, the behavioral rewrite); a file's raw score is the
//! cosine of its best chunk.

use serde::{Deserialize, Serialize};

use super::{Evidence, FileSignals, Signal};
use crate::dense::DenseIndex;
use crate::error::Result;
use crate::index::RepoIndex;
use crate::query::{behavioral_query, structural_query, Reformulation};

/// The structural (T0) and behavioral (T1) rewrites of an issue, written by an LLM or recorded
/// from one; without them the rule-based rewrites of [`crate::query`] are used.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rewrites {
    /// Structural (T0): identifiers, modules, traceback cues.
    pub structural: String,
    /// Behavioral (T1): observed versus expected behavior.
    pub behavioral: String,
}

impl Rewrites {
    /// The rule-based rewrites of `query`.
    pub fn heuristic(query: &Reformulation) -> Self {
        Rewrites {
            structural: structural_query(query),
            behavioral: behavioral_query(query),
        }
    }
}

/// Adds the dense signals to `out` (one entry per file of `index`), querying with the issue text
/// and the two rewrites.
pub fn dense_signals(
    index: &RepoIndex,
    dense: &DenseIndex,
    query: &Reformulation,
    rewrites: &Rewrites,
    out: &mut [FileSignals],
) -> Result<()> {
    let views = [
        (Signal::DenseIssue, query.explanation.as_str()),
        (Signal::DenseStructural, rewrites.structural.as_str()),
        (Signal::DenseBehavioral, rewrites.behavioral.as_str()),
    ];
    for (signal, text) in views {
        add_dense_view(index, dense, signal, text, out)?;
    }
    Ok(())
}

/// Adds one dense signal: the files whose chunks are nearest to `text`, each scored by its best
/// chunk's cosine, with that chunk as evidence. On an error nothing has been added.
pub fn add_dense_view(
    index: &RepoIndex,
    dense: &DenseIndex,
    signal: Signal,
    text: &str,
    out: &mut [FileSignals],
) -> Result<()> {
    if text.trim().is_empty() {
        return Ok(());
    }
    for hit in dense.search_files(text)? {
        let (file, chunk) = index.chunk_refs[hit.chunk];
        let chunk = &index.files[file as usize].parsed.chunks[chunk as usize];
        out[hit.file].add(Evidence {
            signal,
            score: hit.score,
            detail: format!("nearest chunk, cosine {:.3}", hit.score),
            lines: Some((chunk.start_line, chunk.end_line)),
            symbol: chunk.symbol.clone(),
        });
    }
    Ok(())
}
