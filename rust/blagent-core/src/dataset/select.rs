//! Choosing the instances of a run and where their trees are, the same way in `batch`, `eval`
//! and `analyze-failures`: an instance id names a tree *inside* the trees folder (nested
//! relative paths such as LCA's `square/okhttp/6452/6460` are fine; absolute paths, `..`,
//! `.`, empty components, backslashes and NUL are refused), and a dataset that lists an id twice
//! runs it once, at its first line.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::Instance;
use crate::error::{Error, Result};
use crate::repo::confine::{check_relative, Refusal};

/// The tree of instance `id` under `repos`, or an input error when the id would leave it.
pub fn instance_tree(repos: &Path, id: &str) -> Result<PathBuf> {
    let refuse = |why: &str| {
        Err(Error::InvalidInput(format!(
            "instance id {id:?} {why}; it must be a relative path inside the trees folder {}",
            repos.display()
        )))
    };
    match check_relative(id) {
        Err(Refusal::Empty) => return refuse("is empty"),
        Err(Refusal::Nul | Refusal::Backslash) => return refuse("holds a NUL or a backslash"),
        Err(Refusal::Absolute) => return refuse("is an absolute path"),
        Err(_) => return refuse("has an empty, `.` or `..` component"),
        Ok(()) => {}
    }
    // Stricter than the repository-wide rule: one spelling per tree.
    if id.split('/').any(|part| part.is_empty() || part == ".") {
        return refuse("has an empty, `.` or `..` component");
    }
    Ok(repos.join(id))
}

/// Keeps the first item of each id, in order (the rule `batch` and `eval` share).
pub fn first_of_each_id<T>(items: &mut Vec<T>, id: impl Fn(&T) -> &str) {
    let mut seen = HashSet::new();
    items.retain(|item| seen.insert(id(item).to_owned()));
}

/// The instances of `dataset` (read into `instances`) that `ids` selects, all of them when
/// `None`, in dataset order and each id once. An id the dataset lacks is an input error, not
/// an instance silently left out (`batch`, `eval` and `calibrate` alike).
pub fn select_ids(
    mut instances: Vec<Instance>,
    ids: Option<&[String]>,
    dataset: &Path,
) -> Result<Vec<Instance>> {
    if let Some(ids) = ids {
        let known: HashSet<&str> = instances.iter().map(|i| i.instance_id.as_str()).collect();
        let unknown: Vec<&str> = ids
            .iter()
            .map(String::as_str)
            .filter(|id| !known.contains(id))
            .collect();
        if !unknown.is_empty() {
            return Err(Error::InvalidInput(format!(
                "{} selected id(s) not in {}: {}",
                unknown.len(),
                dataset.display(),
                first_ids(&unknown)
            )));
        }
        let wanted: HashSet<&str> = ids.iter().map(String::as_str).collect();
        instances.retain(|i| wanted.contains(i.instance_id.as_str()));
    }
    first_of_each_id(&mut instances, |i| &i.instance_id);
    Ok(instances)
}

/// The first five of `ids`, comma-separated: what a message names of a list of instances.
pub fn first_ids<S: AsRef<str>>(ids: &[S]) -> String {
    ids.iter()
        .take(5)
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_stay_inside_the_trees_folder() {
        let repos = Path::new("/trees");
        for good in [
            "django__django-11099",
            "square/okhttp/6452/6460",
            "a.b",
            "..a",
        ] {
            assert_eq!(instance_tree(repos, good).unwrap(), repos.join(good));
        }
        for bad in [
            "../outside",
            "/etc",
            "inst/../../outside",
            "..",
            ".",
            "",
            "a//b",
            "a/",
            "a\\..\\b",
            "a\0b",
        ] {
            let err = instance_tree(repos, bad).unwrap_err();
            assert!(err.is_input_error(), "{bad}: {err}");
        }
        // Each fault in its words, the first one met when there are several.
        for (bad, why) in [
            ("", "is empty"),
            ("a\0b", "holds a NUL or a backslash"),
            ("/a\\b", "holds a NUL or a backslash"),
            ("/etc/..", "is an absolute path"),
            ("a/..", "has an empty, `.` or `..` component"),
            ("a/./b", "has an empty, `.` or `..` component"),
            ("a//b", "has an empty, `.` or `..` component"),
        ] {
            let err = instance_tree(repos, bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad:?}: {err}");
            assert!(err.contains("inside the trees folder /trees"), "{err}");
        }
    }

    #[test]
    fn duplicates_run_once_at_their_first_place() {
        let mut ids = vec!["a", "b", "a", "c", "b"];
        first_of_each_id(&mut ids, |s| s);
        assert_eq!(ids, ["a", "b", "c"]);
    }
}
