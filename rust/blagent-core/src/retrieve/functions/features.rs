//! The features of a candidate function: each a piece of evidence on a 0–1 scale, computed
//! for every function and method of the candidate files.

use serde::{Deserialize, Serialize};

/// One kind of evidence that a function is where the bug is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Feature {
    /// Its file's fused score over the best candidate file's.
    FileScore,
    /// The reciprocal of its file's rank.
    FileRank,
    /// BM25 of its best chunk against the issue, over the best candidate chunk's.
    ChunkIssue,
    /// BM25 of its best chunk against the issue's title, over the best candidate chunk's.
    ChunkTitle,
    /// The issue names it (its bare name), weighted by how deliberately it was named.
    Name,
    /// [`Feature::Name`] divided by the number of files that define the name.
    NameSpecific,
    /// The issue names it qualified: `Class.method`, or `module.function`.
    Qualified,
    /// The issue names its class.
    Class,
    /// A traceback frame lies in it: 1 for the innermost resolved frame, 1/2 for the next, ….
    Frame,
    /// It contains the literal text of an error message the issue quotes.
    Error,
    /// Its body refers to names the issue mentions (summed source weights, capped at 1).
    Uses,
    /// A function the issue names calls it.
    Callee,
    /// The share of its name's parts (`check`, `homomorphism`) that occur in the issue.
    NameOverlap,
    /// Its length, `ln(lines) / ln(1000)` capped at 1: longer functions are patched more.
    Length,
    /// [`Feature::ChunkIssue`] over the best of its own file's functions: which function of a
    /// file the issue's words point at, whatever the file's standing.
    ChunkInFile,
    /// The issue names one of its parameters (the strongest such mention's weight).
    Parameter,
    /// It is not in a test file (tests are rarely where a fix goes).
    NotTest,
    /// Dense: cosine of its nearest chunk to the issue, min-max over the retrieved chunks
    /// (0 without a dense index).
    Dense,
    /// The issue links to lines it holds (`…/blob/<ref>/path/file.py#L428-L433`).
    LineLink,
    /// With an encoder for summaries: cosine of the issue's title to its summary (its name,
    /// signature and the first line of its documentation), min-max over the candidates.
    Summary,
}

/// The number of features.
pub const NUM_FEATURES: usize = 20;

impl Feature {
    /// Every feature, in the order of [`Features`].
    pub const ALL: [Feature; NUM_FEATURES] = [
        Feature::FileScore,
        Feature::FileRank,
        Feature::ChunkIssue,
        Feature::ChunkTitle,
        Feature::Name,
        Feature::NameSpecific,
        Feature::Qualified,
        Feature::Class,
        Feature::Frame,
        Feature::Error,
        Feature::Uses,
        Feature::Callee,
        Feature::NameOverlap,
        Feature::Length,
        Feature::ChunkInFile,
        Feature::Parameter,
        Feature::NotTest,
        Feature::Dense,
        Feature::LineLink,
        Feature::Summary,
    ];

    /// Position in [`Feature::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The `snake_case` name, as in the weights file and the signal dump.
    pub fn name(self) -> &'static str {
        match self {
            Feature::FileScore => "file_score",
            Feature::FileRank => "file_rank",
            Feature::ChunkIssue => "chunk_issue",
            Feature::ChunkTitle => "chunk_title",
            Feature::Name => "name",
            Feature::NameSpecific => "name_specific",
            Feature::Qualified => "qualified",
            Feature::Class => "class",
            Feature::Frame => "frame",
            Feature::Error => "error",
            Feature::Uses => "uses",
            Feature::Callee => "callee",
            Feature::NameOverlap => "name_overlap",
            Feature::Length => "length",
            Feature::ChunkInFile => "chunk_in_file",
            Feature::Parameter => "parameter",
            Feature::NotTest => "not_test",
            Feature::Dense => "dense",
            Feature::LineLink => "line_link",
            Feature::Summary => "summary",
        }
    }
}

/// One value per feature, indexed by [`Feature::index`].
pub type Features = [f32; NUM_FEATURES];

/// A function or method of a candidate file, with its features.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// The file (an index into the repository index's files).
    pub file: usize,
    /// The file's rank, 1-based.
    pub file_rank: usize,
    /// The symbol (an index into the file's symbol table).
    pub symbol: usize,
    /// Its features.
    pub features: Features,
}

impl Candidate {
    /// Raises feature `feature` to at least `value`.
    pub(super) fn raise(&mut self, feature: Feature, value: f32) {
        let slot = &mut self.features[feature.index()];
        *slot = slot.max(value);
    }

    /// Feature `feature`'s value.
    pub fn get(&self, feature: Feature) -> f32 {
        self.features[feature.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serialized_names_and_indexes_positions() {
        for (i, feature) in Feature::ALL.into_iter().enumerate() {
            assert_eq!(feature.index(), i);
            assert_eq!(
                serde_json::to_value(feature).expect("serializes"),
                feature.name()
            );
        }
    }
}
