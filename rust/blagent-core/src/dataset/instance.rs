//! One dataset row, and reading a dataset.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::jsonl::read_jsonl_or_array;
use crate::error::Result;

/// One dataset row: a SWE-bench instance or a Long Code Arena task in blagent's shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    /// Unique id; its tree lives in `<repos>/<instance_id>` (LCA ids contain `/`: trees nest).
    pub instance_id: String,
    /// `owner/name`, for per-repository metrics.
    #[serde(default)]
    pub repo: String,
    /// The task's language as the dataset names it (LCA's `java`, `kt`, `py`), for
    /// per-language metrics; empty when the dataset does not say.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub language: String,
    /// The commit the tree is checked out at.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub base_commit: String,
    /// The issue text.
    #[serde(default)]
    pub problem_statement: String,
    /// Files the reference patch changes; derived from `patch` when absent.
    #[serde(default)]
    pub gold_files: Vec<String>,
    /// The reference patch.
    #[serde(default)]
    pub patch: String,
}

/// The `b/` paths of a unified diff's `diff --git` headers (the rule BLAgent and LocAgent use),
/// each once, in patch order, except that a renamed file is named by its path in the base
/// commit (its `rename from` line), the one a localization of that commit can rank and the one
/// its gold functions are named by (LCA's own gold files name it so). A diff without such
/// headers (`diff -u`, `git diff --no-prefix` pasted without them) gives the paths of its
/// `---` / `+++` headers where it parses, and none where it does not.
pub fn gold_files_from_patch(patch: &str) -> Vec<String> {
    let git_headers: Vec<String> = git_sections(patch)
        .into_iter()
        .filter(|path| !path.is_empty())
        .collect();
    let paths = if git_headers.is_empty() {
        let files = super::patch::parse_patch(patch).unwrap_or_default();
        files
            .into_iter()
            .map(|f| {
                if f.base_path.is_empty() {
                    f.path
                } else {
                    f.base_path
                }
            })
            .collect()
    } else {
        git_headers
    };
    once_each(paths)
}

/// The path of each `diff --git` section of `patch`, in order: its header's `b/` path, or
/// where the section names it in a `rename from` or `copy to` line (git writes these for a
/// renamed or copied file; a header of a path holding ` b/` cannot be split, those lines can).
fn git_sections(patch: &str) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    let mut in_header = false;
    for line in patch.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            paths.push(super::patch::git_header_path(rest).unwrap_or_default());
            in_header = true;
        } else if in_header {
            if line.starts_with("@@") || line.starts_with("--- ") {
                in_header = false;
            } else if let Some(named) = line
                .strip_prefix("rename from ")
                .or_else(|| line.strip_prefix("copy to "))
            {
                if let (Some(last), Some(named)) =
                    (paths.last_mut(), super::patch::header_name(named))
                {
                    *last = named;
                }
            }
        }
    }
    paths
}

/// `paths` in their order, each once (a gold file named twice would count twice in MAP@k).
fn once_each(paths: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::with_capacity(paths.len());
    paths
        .into_iter()
        .filter(|path| seen.insert(path.clone()))
        .collect()
}

/// Reads a dataset (JSONL, or one JSON array); gold files missing from a row are derived from
/// its patch. A malformed line is an error naming the file and line.
pub fn load_dataset(path: &Path) -> Result<Vec<Instance>> {
    let mut instances: Vec<Instance> = read_jsonl_or_array(path)?;
    let max = crate::repo::read::MAX_ISSUE_BYTES;
    if let Some(long) = instances
        .iter()
        .find(|i| i.problem_statement.len() as u64 > max)
    {
        return Err(crate::Error::InvalidInput(format!(
            "{}: the problem_statement of {} is {}, more than an issue may be ({})",
            path.display(),
            long.instance_id,
            crate::repo::read::human_bytes(long.problem_statement.len() as u64),
            crate::repo::read::human_bytes(max)
        )));
    }
    for instance in &mut instances {
        instance.gold_files = if instance.gold_files.is_empty() {
            gold_files_from_patch(&instance.patch)
        } else {
            once_each(std::mem::take(&mut instance.gold_files))
        };
    }
    Ok(instances)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gold_files_are_the_b_paths_once_each() {
        let patch = "diff --git a/x/a.py b/x/a.py\n--- a/x/a.py\n+++ b/x/a.py\n@@\ndiff --git a/old.py b/new.py\ndiff --git a/x/a.py b/x/a.py\n";
        assert_eq!(gold_files_from_patch(patch), ["x/a.py", "new.py"]);
    }

    /// Found by a review: a path git quotes (non-ASCII) was taken whole with its quotes, or
    /// dropped, and a path holding ` b/` was cut at it.
    #[test]
    fn gold_files_of_quoted_paths_and_paths_holding_b_slash() {
        let patch = "diff --git a/pkg/m.py b/pkg/m.py\n\
            diff --git \"a/pkg/\\303\\251t\\303\\251.py\" \"b/pkg/\\303\\251t\\303\\251.py\"\n\
            diff --git a/pkg/a b/c.py b/pkg/a b/c.py\n\
            diff --git \"a/tab\\there.py\" \"b/tab\\there.py\"\n\
            diff --git a/old name.py \"b/new \\\"q\\\".py\"\n";
        assert_eq!(
            gold_files_from_patch(patch),
            [
                "pkg/m.py",
                "pkg/\u{e9}t\u{e9}.py",
                "pkg/a b/c.py",
                "tab\there.py",
                "new \"q\".py"
            ]
        );
        let headers =
            "--- \"a/pkg/\\303\\251.py\"\n+++ \"b/pkg/\\303\\251.py\"\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(gold_files_from_patch(headers), ["pkg/\u{e9}.py"]);
        // Found by a review: a renamed file whose old path holds ` b/` gave `y.py b/z.py`; the
        // section's `rename from` line names it (quoted too). Found by a later review: a
        // renamed file's gold was its new path, which no localization of the base commit
        // can rank, while its gold functions named the old one.
        let renamed = "diff --git a/x b/y.py b/z.py\nsimilarity index 90%\nrename from x b/y.py\n\
            rename to z.py\n--- a/x b/y.py\n+++ b/z.py\n@@ -1 +1 @@\n-a\n+b\n\
            diff --git a/p.py b/\"q\\303\\251.py\"\nsimilarity index 100%\nrename from p.py\n\
            rename to \"q\\303\\251.py\"\n";
        assert_eq!(gold_files_from_patch(renamed), ["x b/y.py", "p.py"]);
    }

    /// Found by a review: a row naming a gold file twice counted it twice in MAP@k.
    #[test]
    fn gold_files_given_twice_count_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        std::fs::write(
            &path,
            r#"{"instance_id": "a", "repo": "o/r", "problem_statement": "x", "gold_files": ["p.py", "q.py", "p.py"]}"#,
        )
        .unwrap();
        assert_eq!(load_dataset(&path).unwrap()[0].gold_files, ["p.py", "q.py"]);
    }

    #[test]
    fn a_diff_without_git_headers_gives_its_file_headers_paths() {
        let plain = "--- a/pkg/one.py\t2024-01-01\n+++ b/pkg/one.py\n@@ -1 +1 @@\n-a\n+b\n\
                     --- /dev/null\n+++ b/pkg/new.py\n@@ -0,0 +1 @@\n+c\n";
        assert_eq!(gold_files_from_patch(plain), ["pkg/one.py", "pkg/new.py"]);
        assert!(gold_files_from_patch("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n?bad\n").is_empty());
    }

    #[test]
    fn a_problem_statement_past_the_issue_bound_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("d.jsonl");
        let long = "x".repeat((crate::repo::read::MAX_ISSUE_BYTES + 1) as usize);
        let row = serde_json::json!({"instance_id": "big", "problem_statement": long});
        std::fs::write(&path, format!("{row}\n")).expect("write");
        let err = load_dataset(&path).expect_err("too long");
        assert!(
            err.is_input_error() && err.to_string().contains("of big is"),
            "{err}"
        );
    }

    #[test]
    fn rows_of_both_benchmarks_load_and_gold_comes_from_the_patch_when_absent() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("d.jsonl");
        std::fs::write(
            &path,
            concat!(
                r#"{"instance_id": "o__r-1", "repo": "o/r", "problem_statement": "x", "patch": "diff --git a/a.py b/a.py\n"}"#,
                "\n\n",
                r#"{"instance_id": "sq/ok/1/2", "repo": "sq/ok", "base_commit": "abc", "language": "java", "problem_statement": "y", "gold_files": ["B.java", "C.kt"]}"#,
                "\n"
            ),
        )
        .expect("write");
        let rows = load_dataset(&path).expect("loads");
        assert_eq!(rows[0].gold_files, ["a.py"]);
        assert_eq!(rows[1].gold_files, ["B.java", "C.kt"]);
        assert_eq!(rows[1].base_commit, "abc");
    }
}
