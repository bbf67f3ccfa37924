//! The one rule for a relative path that must stay inside a root folder: the agent's tools (a
//! path the model wrote), a bounded read inside a tree ([`super::read::read_inside`]) and an
//! instance id naming a tree inside the trees folder all check paths here, each adding its own
//! words and its own stricter rules.
//!
//! A path is first checked as written, before anything touches the file system
//! ([`check_relative`]): not empty, no NUL byte, no backslash, not absolute, no `..` component.
//! Where the file system decides, [`resolve_inside`] then canonicalizes it under the canonical
//! root, so a symlink that leads out is refused too. [`strip_current_dir`] is the one way such
//! a path loses the leading `./`s a model, a caller or an issue may write.

use std::path::{Path, PathBuf};

/// Why a relative path is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// It is empty.
    Empty,
    /// It holds a NUL byte.
    Nul,
    /// It holds a backslash (paths are `/`-separated).
    Backslash,
    /// It is absolute.
    Absolute,
    /// It has a `..` component.
    ParentDir,
    /// It cannot be canonicalized under the root (nothing is there, or it cannot be looked up).
    Unresolved,
    /// Once symlinks are resolved, it lies outside the root.
    Outside,
}

/// Checks `rel` as written, touching nothing: the first [`Refusal`] it meets, in the order of
/// the enum (empty, NUL, backslash, absolute, `..`).
pub fn check_relative(rel: &str) -> Result<(), Refusal> {
    if rel.is_empty() {
        return Err(Refusal::Empty);
    }
    if rel.contains('\0') {
        return Err(Refusal::Nul);
    }
    if rel.contains('\\') {
        return Err(Refusal::Backslash);
    }
    if rel.starts_with('/') || Path::new(rel).is_absolute() {
        return Err(Refusal::Absolute);
    }
    if rel.split('/').any(|part| part == "..") {
        return Err(Refusal::ParentDir);
    }
    Ok(())
}

/// The canonical path `rel` names under `root` (which must be canonical), when it lies inside
/// `root` once symlinks are resolved: [`Refusal::Unresolved`] or [`Refusal::Outside`]
/// otherwise. It does not check `rel` as written: [`confine`] does both.
pub fn resolve_inside(root: &Path, rel: &str) -> Result<PathBuf, Refusal> {
    let canonical = root
        .join(rel)
        .canonicalize()
        .map_err(|_| Refusal::Unresolved)?;
    if canonical.starts_with(root) {
        Ok(canonical)
    } else {
        Err(Refusal::Outside)
    }
}

/// `path` without its leading `./`s: the one way a repository-relative path written by a model,
/// a caller's hint or an issue loses them.
pub fn strip_current_dir(path: &str) -> &str {
    let mut path = path;
    while let Some(rest) = path.strip_prefix("./") {
        path = rest;
    }
    path
}

/// [`check_relative`], then [`resolve_inside`].
pub fn confine(root: &Path, rel: &str) -> Result<PathBuf, Refusal> {
    check_relative(rel)?;
    resolve_inside(root, rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_written_wrong_in_order() {
        for (bad, why) in [
            ("", Refusal::Empty),
            ("a\0b", Refusal::Nul),
            ("/a\0b", Refusal::Nul),
            ("a\\b", Refusal::Backslash),
            ("/etc/passwd", Refusal::Absolute),
            ("/a/../b", Refusal::Absolute),
            ("../x", Refusal::ParentDir),
            ("a/../../x", Refusal::ParentDir),
            ("a/..", Refusal::ParentDir),
        ] {
            assert_eq!(check_relative(bad), Err(why), "{bad:?}");
        }
        for good in ["a.py", "pkg/a.py", "a..b/c", "./a", "~/x", "%2e", " "] {
            assert_eq!(check_relative(good), Ok(()), "{good:?}");
        }
    }

    #[test]
    fn strips_every_leading_current_dir_only() {
        for (written, stripped) in [
            ("./a.py", "a.py"),
            ("././a/b.py", "a/b.py"),
            ("a/./b.py", "a/./b.py"),
            ("../a.py", "../a.py"),
            (".//a.py", "/a.py"),
            ("./", ""),
            ("a.py", "a.py"),
        ] {
            assert_eq!(strip_current_dir(written), stripped, "{written:?}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn resolves_inside_the_root_only() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"s").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("a")).unwrap();
        std::fs::write(root.join("a/f.py"), b"x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("leak")).unwrap();
        std::os::unix::fs::symlink(root.join("a/f.py"), root.join("alias.py")).unwrap();

        assert_eq!(confine(&root, "a/f.py"), Ok(root.join("a/f.py")));
        assert_eq!(confine(&root, "alias.py"), Ok(root.join("a/f.py")));
        assert_eq!(
            confine(&root, "a"),
            Ok(root.join("a")),
            "a folder is inside"
        );
        assert_eq!(confine(&root, "leak"), Err(Refusal::Outside));
        assert_eq!(confine(&root, "absent"), Err(Refusal::Unresolved));
        assert_eq!(confine(&root, "../x"), Err(Refusal::ParentDir));
        // Unchecked, `..` is still held inside by the canonical comparison.
        assert_eq!(resolve_inside(&root.join("a"), ".."), Err(Refusal::Outside));
    }
}
