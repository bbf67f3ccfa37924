//! Indexes over a repository: a code-aware tokenizer, BM25 over files and chunks, a path and
//! module resolver, and the [`RepoIndex`] that holds them all.

mod bm25;
mod history;
mod paths;
mod repo;
mod tokenize;

pub use self::bm25::{Bm25, Bm25Params, QueryTokens, Statistics, TextCounter, TextCounts};
pub use self::history::CommitIndex;
pub use self::paths::{Declared, PathResolver};
pub use self::repo::{IndexOptions, IndexTimings, IndexedFile, RepoIndex};
pub use self::tokenize::{dotted_words, identifier_parts, tokenize, tokenize_into};
