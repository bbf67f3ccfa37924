//! Retrieval for the agentic pipelines: one function ranks the files for any query text (the
//! LLM-free fused ranking, with each file's best chunks), candidates from several queries are
//! merged (rankings are completed with every other indexed file by [`crate::retrieve::complete`]).

use crate::dense::DenseIndex;
use crate::index::RepoIndex;
use crate::query::reformulate;
use crate::retrieve::{add_dense_view, compute_signals, fuse, FileSignals, FusionWeights, Signal};

/// A span of a file that matched the query.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkHit {
    /// Line range, 1-based and inclusive.
    pub lines: (usize, usize),
    /// Enclosing symbol (`Class.method`), when known.
    pub symbol: Option<String>,
    /// Its BM25 score.
    pub score: f32,
}

/// One file retrieved for a query.
#[derive(Debug, Clone, PartialEq)]
pub struct FileHit {
    /// Index into `RepoIndex::files`.
    pub file: usize,
    /// Fused score (higher is better).
    pub score: f32,
    /// The file's best chunks for the query, best first.
    pub top_chunks: Vec<ChunkHit>,
}

/// Every file with any signal for `text`, best first: the query is reformulated and scored
/// exactly as an issue is in LLM-free mode (lexical BM25 over files and chunks, mentions,
/// definitions, …), plus, with a dense index, the files of the chunks nearest to the text
/// (BLAgent's dense retrieval per query). A dense failure (the encoder erring) leaves the
/// lexical ranking.
pub fn retrieve_for_query(
    index: &RepoIndex,
    dense: Option<&DenseIndex>,
    text: &str,
    weights: &FusionWeights,
) -> Vec<FileHit> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    let mut signals = compute_signals(index, &reformulate(text));
    if let Some(dense) = dense {
        // An error comes from embedding or searching, before any evidence is added, so the
        // lexical signals are left as they were.
        let _ = add_dense_view(index, dense, Signal::DenseIssue, text, &mut signals);
    }
    hits(&signals, &fuse(&signals, weights))
}

/// The hits of a fused ranking, each with its best chunks from the signals' evidence.
pub fn hits(signals: &[FileSignals], ranked: &[(usize, f32)]) -> Vec<FileHit> {
    ranked
        .iter()
        .map(|&(file, score)| {
            let mut top_chunks: Vec<ChunkHit> = signals[file]
                .evidence
                .iter()
                .filter(|e| {
                    matches!(
                        e.signal,
                        Signal::Bm25Chunk
                            | Signal::TitleChunk
                            | Signal::DenseIssue
                            | Signal::DenseStructural
                            | Signal::DenseBehavioral
                    )
                })
                .filter_map(|e| {
                    e.lines.map(|lines| ChunkHit {
                        lines,
                        symbol: e.symbol.clone(),
                        score: e.score,
                    })
                })
                .collect();
            top_chunks.sort_by(|a, b| b.score.total_cmp(&a.score));
            top_chunks.dedup_by(|a, b| a.lines == b.lines);
            FileHit {
                file,
                score,
                top_chunks,
            }
        })
        .collect()
}

/// The candidate pool of `lists` ([`crate::dense::merge_candidates`]: their heads of
/// `per_list` files, round-robin, at most `cap`), then filled from `fill` in its order up to
/// `cap`.
pub fn merge_candidates(
    lists: &[&[FileHit]],
    per_list: usize,
    cap: usize,
    fill: &[usize],
) -> Vec<usize> {
    let files: Vec<Vec<usize>> = lists
        .iter()
        .map(|list| list.iter().take(per_list).map(|h| h.file).collect())
        .collect();
    let heads: Vec<&[usize]> = files.iter().map(Vec::as_slice).collect();
    let mut out = crate::dense::merge_candidates(&heads, per_list, cap);
    for &file in fill {
        if out.len() >= cap {
            break;
        }
        if !out.contains(&file) {
            out.push(file);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::IndexOptions;

    #[test]
    fn retrieves_with_chunks_merges_and_completes() {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in [
            (
                "a/pricing.py",
                "def discount(total, percent):\n    return total * percent\n",
            ),
            (
                "a/cart.py",
                "class Cart:\n    def total(self):\n        return 0\n",
            ),
            ("a/misc.py", "X = 1\n"),
        ] {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let index = RepoIndex::build(dir.path(), &IndexOptions::default()).unwrap();
        let weights = FusionWeights::default();
        let hits = retrieve_for_query(&index, None, "discount percent is wrong", &weights);
        assert_eq!(index.files[hits[0].file].path(), "a/pricing.py");
        assert_eq!(hits[0].top_chunks[0].symbol.as_deref(), Some("discount"));
        assert!(retrieve_for_query(&index, None, "  ", &weights).is_empty());

        let cart = retrieve_for_query(&index, None, "Cart total", &weights);
        let merged = merge_candidates(&[&hits, &cart], 1, 3, &[2, 1, 0]);
        assert_eq!(merged, [2, 0, 1], "pricing, cart, then misc from the fill");
        assert_eq!((hits[0].file, cart[0].file), (2, 0));
        assert_eq!(merge_candidates(&[&hits, &cart], 5, 1, &[]).len(), 1);
        assert_eq!(crate::retrieve::complete(&index, [2, 2, 9]), [2, 0, 1]);
    }
}
