//! From a reformulated issue and a repository index to a ranked list of files, each with the
//! evidence that put it there ([`score`]), and the functions of those files ranked by their own
//! evidence ([`rank_functions`]).

mod dense;
mod entities;
mod functions;
mod fuse;
mod rank;
mod score;
mod signals;

use serde::{Deserialize, Serialize};

pub use self::dense::{add_dense_view, dense_signals, Rewrites};
pub use self::entities::{entity_id, Entity};
pub use self::functions::{
    function_candidates, rank_functions, Candidate, Feature, Features, FunctionWeights,
    FUNCTION_FILES, MAX_FUNCTIONS, NUM_FEATURES, PER_FILE_FUNCTIONS,
};
pub use self::fuse::{contributions, fuse, FusionWeights, Normalizer};
pub use self::rank::{cut, Ask, Cut, Granularity, DEFAULT_TOP_K};
pub use self::score::{complete, score, Scored, SearchIndex};
pub use self::signals::compute_signals;

/// The independent signals that point at a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// BM25 of the whole file against the issue.
    Bm25File,
    /// BM25 of the file's three best chunks (summed) against the issue.
    Bm25Chunk,
    /// BM25 of the whole file against the issue's title.
    TitleFile,
    /// BM25 of the file's best chunk against the issue's title.
    TitleChunk,
    /// The issue mentions the file's path or name.
    PathMention,
    /// The issue mentions a dotted module name that is the file.
    ModuleMention,
    /// A traceback frame in the issue is in the file.
    StackFrame,
    /// The file defines a class or function the issue names.
    Definition,
    /// The file contains the text of an error message quoted in the issue.
    ErrorMessage,
    /// Dense: the file's chunk nearest to the issue text.
    DenseIssue,
    /// Dense: the file's chunk nearest to the structural (T0) rewrite.
    DenseStructural,
    /// Dense: the file's chunk nearest to the behavioral (T1) rewrite.
    DenseBehavioral,
    /// BM25 of the names the file defines (classes, functions, methods) against the issue.
    NamesIssue,
    /// BM25 of the names the file defines against the issue's title.
    NamesTitle,
    /// The file was changed by past commits whose messages read like the issue's title.
    HistoryTitle,
    /// The share of the file's functions and methods declared without a body (an interface,
    /// an abstract class, a Kotlin `expect` class; 1 for a file that defines none). Not added
    /// to the fused score: it scales it down ([`FusionWeights::unimplemented`]).
    Unimplemented,
}

impl Signal {
    /// Every signal, in the order of [`FileSignals::scores`].
    pub const ALL: [Signal; 16] = [
        Signal::Bm25File,
        Signal::Bm25Chunk,
        Signal::TitleFile,
        Signal::TitleChunk,
        Signal::PathMention,
        Signal::ModuleMention,
        Signal::StackFrame,
        Signal::Definition,
        Signal::ErrorMessage,
        Signal::DenseIssue,
        Signal::DenseStructural,
        Signal::DenseBehavioral,
        Signal::NamesIssue,
        Signal::NamesTitle,
        Signal::HistoryTitle,
        Signal::Unimplemented,
    ];

    /// Position in [`Signal::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The `snake_case` name, as in the JSON output and the fusion weights.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Bm25File => "bm25_file",
            Signal::Bm25Chunk => "bm25_chunk",
            Signal::TitleFile => "title_file",
            Signal::TitleChunk => "title_chunk",
            Signal::PathMention => "path_mention",
            Signal::ModuleMention => "module_mention",
            Signal::StackFrame => "stack_frame",
            Signal::Definition => "definition",
            Signal::ErrorMessage => "error_message",
            Signal::DenseIssue => "dense_issue",
            Signal::DenseStructural => "dense_structural",
            Signal::DenseBehavioral => "dense_behavioral",
            Signal::NamesIssue => "names_issue",
            Signal::NamesTitle => "names_title",
            Signal::HistoryTitle => "history_title",
            Signal::Unimplemented => "unimplemented",
        }
    }
}

/// One piece of evidence for a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The signal it supports.
    pub signal: Signal,
    /// Its contribution to that signal's raw score.
    pub score: f32,
    /// What was matched, in words.
    pub detail: String,
    /// Line range in the file, when the evidence is a span.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<(usize, usize)>,
    /// Enclosing symbol of that span, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
}

/// Raw scores of every signal for one file, with their evidence.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FileSignals {
    /// Raw score per signal, indexed by [`Signal::index`].
    pub scores: [f32; Signal::ALL.len()],
    /// Evidence, strongest first within each signal.
    pub evidence: Vec<Evidence>,
}

impl FileSignals {
    /// Adds evidence and its score to its signal.
    pub(crate) fn add(&mut self, evidence: Evidence) {
        self.scores[evidence.signal.index()] += evidence.score;
        self.evidence.push(evidence);
    }

    /// Raw score of one signal.
    pub fn get(&self, signal: Signal) -> f32 {
        self.scores[signal.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::Signal;

    #[test]
    fn names_are_the_serialized_names() {
        for signal in Signal::ALL {
            assert_eq!(
                serde_json::to_value(signal).expect("serializes"),
                signal.name()
            );
        }
    }
}
