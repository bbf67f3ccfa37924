//! Caller hints: files the caller already suspects.
//!
//! A hinted file is scored as if the issue had named its full path: its `path_mention` signal is
//! raised to its cap (1). The boost is therefore `weights.path_mention × (1 − path_mention)`,
//! 3.0 with the default weights for a file the issue did not mention and nothing for one it
//! already named in full. A hint is thus as strong as the strongest single clue of the fusion,
//! never stronger, never counted twice, and a hinted file with no other signal still enters the
//! ranking (with that score alone). Each hinted file also carries a `hint` evidence item.

use std::path::Path;

use super::result::EvidenceItem;
use crate::index::RepoIndex;
use crate::repo::confine::strip_current_dir;
use crate::retrieve::{FusionWeights, Scored, Signal};

/// Signal name of the evidence a hint adds.
pub const HINT_SIGNAL: &str = "hint";

/// Hints resolved to indexed files, and what could not be resolved.
#[derive(Debug, Default)]
pub(super) struct AppliedHints {
    /// `(file, boost)` of each hinted file, in the order given.
    pub files: Vec<(usize, f32)>,
    /// One message per hint that names no indexed file.
    pub warnings: Vec<String>,
}

impl AppliedHints {
    /// The boost given to `file`, if it was hinted.
    pub fn boost(&self, file: usize) -> Option<f32> {
        self.files
            .iter()
            .find(|&&(f, _)| f == file)
            .map(|&(_, boost)| boost)
    }

    /// The evidence a hinted file carries.
    pub fn evidence(boost: f32) -> EvidenceItem {
        EvidenceItem {
            signal: HINT_SIGNAL.to_owned(),
            score: boost,
            detail: "the caller suspects this file (scored as a full path mention)".to_owned(),
            lines: None,
            symbol: None,
        }
    }
}

/// A hint as a repository-relative, `/`-separated path: `./`, `a/` / `b/` diff prefixes are not
/// stripped (they may be real directories), but the repository root of an absolute path is.
fn normalize(hint: &str, root: &Path) -> String {
    let hint = hint.trim().replace('\\', "/");
    let root = root.to_string_lossy().replace('\\', "/");
    let relative = hint
        .strip_prefix(&format!("{}/", root.trim_end_matches('/')))
        .unwrap_or(&hint);
    strip_current_dir(relative).to_owned()
}

/// Applies `hints` to `scored` (boosting and re-sorting its ranking) and reports the outcome.
pub(super) fn apply_hints(
    index: &RepoIndex,
    scored: &mut Scored,
    weights: &FusionWeights,
    hints: &[String],
    repo_path: &Path,
) -> AppliedHints {
    let mut applied = AppliedHints::default();
    let mut seen = std::collections::HashSet::new();
    let mut unknown = 0usize;
    // Each hint once: a list repeating one unknown path warns once.
    for hint in hints.iter().filter(|hint| seen.insert(hint.as_str())) {
        let path = normalize(hint, &index.root);
        let path = if path.starts_with('/') {
            normalize(&path, repo_path)
        } else {
            path
        };
        let Ok(file) = index
            .files
            .binary_search_by(|f| f.path().cmp(path.as_str()))
        else {
            // The first few by name, each cut short; the rest counted (a review: 200,000 unknown
            // hints made 25 MB of warnings, and one of 50 MB was echoed whole).
            unknown += 1;
            if unknown <= MAX_HINT_WARNINGS {
                let shown = crate::text::head(hint, MAX_HINT_CHARS);
                let cut = if shown.len() < hint.len() { "…" } else { "" };
                applied.warnings.push(format!(
                    "hint `{shown}{cut}` names no indexed source file (missing, excluded as a test, or not a supported language); ignored"
                ));
            }
            continue;
        };
        if applied.boost(file).is_some() {
            continue;
        }
        let mention = scored.signals[file].get(Signal::PathMention).min(1.0);
        let boost = weights.path_mention * (1.0 - mention);
        match scored.ranked.iter_mut().find(|(f, _)| *f == file) {
            Some((_, score)) => *score += boost,
            None => scored.ranked.push((file, boost)),
        }
        applied.files.push((file, boost));
    }
    if unknown > MAX_HINT_WARNINGS {
        applied.warnings.push(format!(
            "{} more hints name no indexed source file; ignored",
            unknown - MAX_HINT_WARNINGS
        ));
    }
    scored
        .ranked
        .sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    applied
}

/// Unknown hints named one by one in the warnings; the rest are counted in one more.
const MAX_HINT_WARNINGS: usize = 20;
/// The most bytes of a hint a warning quotes.
const MAX_HINT_CHARS: usize = 300;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_relative_and_absolute_hints() {
        let root = Path::new("/work/repo");
        assert_eq!(normalize("./a/b.py", root), "a/b.py");
        assert_eq!(normalize("/work/repo/a/b.py", root), "a/b.py");
        assert_eq!(normalize(" a\\b.py ", root), "a/b.py");
        assert_eq!(normalize("/elsewhere/b.py", root), "/elsewhere/b.py");
    }

    /// Found by a review: 200,000 unknown hints made 200,000 warnings (25 MB), and a hint of
    /// 50 MB was quoted whole.
    #[test]
    fn unknown_hints_are_named_a_few_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.py"), "def f():\n    return 1\n").unwrap();
        let index = RepoIndex::build(dir.path(), &crate::index::IndexOptions::default()).unwrap();
        let search = crate::retrieve::SearchIndex::from(index);
        let weights = FusionWeights::default();
        let mut scored = crate::retrieve::score(&search, "f is wrong", &weights, None).unwrap();
        let mut hints: Vec<String> = (0..100).map(|i| format!("missing_{i}.py")).collect();
        hints.push("x".repeat(10_000));
        hints.push("a.py".to_owned());
        let applied = apply_hints(&search.repo, &mut scored, &weights, &hints, dir.path());
        assert_eq!(applied.files.len(), 1);
        assert_eq!(applied.warnings.len(), MAX_HINT_WARNINGS + 1);
        assert!(applied.warnings.iter().all(|w| w.len() < 1000));
        assert_eq!(
            applied.warnings.last().unwrap(),
            "81 more hints name no indexed source file; ignored"
        );
    }
}
