//! BM25 over the messages of the repository's recent commits, each commit linked to the
//! indexed files it changed: what [`crate::retrieve::Signal::HistoryTitle`] searches.

use std::collections::HashMap;

use super::bm25::{Bm25, Bm25Params};
use crate::repo::history::History;

/// The commits of a [`History`], searchable by message.
#[derive(Debug)]
pub struct CommitIndex {
    /// BM25 over the commit messages (one document per commit, newest first).
    pub bm25: Bm25,
    /// Per commit: the indexed files it changed (ids into the index's files).
    pub files: Vec<Vec<u32>>,
    /// Per commit: how many files it changed in all, indexed or not.
    pub changed: Vec<u32>,
    /// Per commit: the first line of its message, for evidence.
    pub subjects: Vec<String>,
    /// Why there is no history where a `.git` folder was found.
    pub note: Option<String>,
}

impl CommitIndex {
    /// Indexes `history`, linking each commit to the files of `paths` (the index's files, by
    /// repository-relative path) it changed.
    pub fn build<'a>(
        history: History,
        paths: impl IntoIterator<Item = &'a str>,
        params: Bm25Params,
    ) -> Self {
        let ids: HashMap<&str, u32> = paths
            .into_iter()
            .enumerate()
            .map(|(i, path)| (path, i as u32))
            .collect();
        let commits = history.commits;
        CommitIndex {
            bm25: Bm25::build(commits.iter().map(|c| c.message.as_str()), params),
            files: commits
                .iter()
                .map(|c| {
                    c.files
                        .iter()
                        .filter_map(|f| ids.get(f.as_str()).copied())
                        .collect()
                })
                .collect(),
            changed: commits
                .iter()
                .map(|c| u32::try_from(c.files.len()).unwrap_or(u32::MAX))
                .collect(),
            subjects: commits
                .iter()
                .map(|c| c.message.lines().next().unwrap_or("").to_owned())
                .collect(),
            note: history.note,
        }
    }

    /// Number of commits.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether there is no commit.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}
