//! Resolving the paths a model writes against the repository's indexed files: exactly, then by
//! a unique suffix of whole components, then by a unique file name. A path that names no file,
//! or several, is refused with a message the model can act on.

use crate::index::RepoIndex;
use crate::repo::confine::strip_current_dir;

/// How a model-given path was matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// The path as written.
    Exact,
    /// The only file whose path ends with the written components.
    Suffix,
    /// The only file with the written file name.
    Basename,
}

/// Strips what models wrap paths in: quotes, backticks, leading `./`. A diff's `a/` or `b/`
/// prefix is left alone: it could be a real directory.
fn clean(path: &str) -> &str {
    strip_current_dir(path.trim().trim_matches(['`', '"', '\'']).trim())
}

/// The file `path` refers to, and how it was matched (see the module documentation).
pub fn resolve(index: &RepoIndex, path: &str) -> Result<(usize, Match), String> {
    let cleaned = clean(path);
    if cleaned.is_empty() {
        return Err("an empty path".to_owned());
    }
    if let Ok(i) = index.files.binary_search_by(|f| f.path().cmp(cleaned)) {
        return Ok((i, Match::Exact));
    }
    let found = index.resolver.resolve_path(cleaned);
    let has_dirs = cleaned.trim_start_matches('/').contains('/');
    match found[..] {
        [file] => {
            let how = if has_dirs {
                Match::Suffix
            } else {
                Match::Basename
            };
            return Ok((file as usize, how));
        }
        [] => {}
        _ => return Err(ambiguous(index, cleaned, &found)),
    }
    if has_dirs {
        let basename = cleaned.rsplit('/').next().unwrap_or(cleaned);
        match index.resolver.resolve_path(basename)[..] {
            [file] => return Ok((file as usize, Match::Basename)),
            [] => {}
            ref several => return Err(ambiguous(index, cleaned, several)),
        }
    }
    Err(format!("no file `{cleaned}` in the repository"))
}

fn ambiguous(index: &RepoIndex, path: &str, files: &[u32]) -> String {
    let names: Vec<&str> = files
        .iter()
        .take(4)
        .map(|&f| index.files[f as usize].path())
        .collect();
    format!(
        "`{path}` is ambiguous: it could be {}; write the full path",
        names.join(", ")
    )
}

/// Resolves every path, dropping the ones that name no single file and repeats; returns the
/// files in order and the refusals (`path: why`).
pub fn resolve_all<'a>(
    index: &RepoIndex,
    paths: impl IntoIterator<Item = &'a str>,
) -> (Vec<usize>, Vec<String>) {
    let mut files = Vec::new();
    let mut dropped = Vec::new();
    for path in paths {
        match resolve(index, path) {
            Ok((file, _)) if !files.contains(&file) => files.push(file),
            Ok(_) => {}
            Err(why) => dropped.push(why),
        }
    }
    (files, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::IndexOptions;

    fn index() -> (tempfile::TempDir, RepoIndex) {
        let dir = tempfile::tempdir().unwrap();
        for rel in [
            "pkg/a/util.py",
            "pkg/b/util.py",
            "pkg/core.py",
            "lib/models.py",
        ] {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x = 1\n").unwrap();
        }
        let index = RepoIndex::build(dir.path(), &IndexOptions::default()).unwrap();
        (dir, index)
    }

    fn path_of(index: &RepoIndex, r: Result<(usize, Match), String>) -> (String, Match) {
        let (f, how) = r.unwrap();
        (index.files[f].path().to_owned(), how)
    }

    #[test]
    fn exact_then_unique_suffix_then_unique_basename() {
        let (_dir, index) = index();
        let p = |s: &str| path_of(&index, resolve(&index, s));
        assert_eq!(p("pkg/core.py"), ("pkg/core.py".into(), Match::Exact));
        assert_eq!(p(" `./pkg/core.py` "), ("pkg/core.py".into(), Match::Exact));
        assert_eq!(p("a/util.py"), ("pkg/a/util.py".into(), Match::Suffix));
        assert_eq!(
            p("/home/u/repo/pkg/b/util.py"),
            ("pkg/b/util.py".into(), Match::Suffix)
        );
        assert_eq!(p("core.py"), ("pkg/core.py".into(), Match::Basename));
        assert_eq!(
            p("src/models.py"),
            ("lib/models.py".into(), Match::Basename)
        );
    }

    #[test]
    fn refuses_missing_and_ambiguous_paths_and_drops_them() {
        let (_dir, index) = index();
        assert_eq!(
            resolve(&index, "pkg/nothing.py").unwrap_err(),
            "no file `pkg/nothing.py` in the repository"
        );
        let err = resolve(&index, "util.py").unwrap_err();
        assert!(
            err.contains("ambiguous") && err.contains("pkg/a/util.py"),
            "{err}"
        );
        assert!(resolve(&index, "x/util.py")
            .unwrap_err()
            .contains("ambiguous"));
        assert!(resolve(&index, "  ").is_err());
        let (files, dropped) = resolve_all(
            &index,
            ["core.py", "ghost.py", "pkg/core.py", "lib/models.py"],
        );
        let paths: Vec<&str> = files.iter().map(|&f| index.files[f].path()).collect();
        assert_eq!(paths, ["pkg/core.py", "lib/models.py"]);
        assert_eq!(dropped, ["no file `ghost.py` in the repository"]);
    }
}
