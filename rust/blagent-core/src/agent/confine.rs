//! Keeping every tool the model can call inside the repository. A requested path is refused
//! before it touches the file system when it is absolute, climbs with `..`, holds a NUL byte, a
//! backslash, a `~` or a percent-encoded byte; then it is canonicalized and must still lie under
//! the canonical root, so a symlink pointing out is refused too.

use std::path::{Component, Path, PathBuf};

/// Why a requested path is refused, in words sent back to the model.
pub fn check_syntax(requested: &str) -> Result<(), String> {
    let refuse = |why: &str| {
        Err(format!(
            "path `{}` refused: {why}",
            requested.escape_debug()
        ))
    };
    if requested.trim().is_empty() {
        return refuse("it is empty");
    }
    if requested.contains('\0') {
        return refuse("it contains a NUL byte");
    }
    if requested.contains('\\') {
        return refuse("backslashes are not allowed; use `/`");
    }
    if requested.contains('~') {
        return refuse("`~` is not allowed; use a path relative to the repository root");
    }
    let bytes = requested.as_bytes();
    if bytes
        .windows(3)
        .any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit())
    {
        return refuse("percent-encoded characters are not allowed");
    }
    let path = Path::new(requested);
    if path.is_absolute() || requested.starts_with('/') || requested.get(1..2) == Some(":") {
        return refuse(
            "absolute paths are not allowed; use a path relative to the repository root",
        );
    }
    if path.components().any(|c| matches!(c, Component::ParentDir)) {
        return refuse("`..` is not allowed");
    }
    Ok(())
}

/// The canonical file `requested` names under `root`, or why it is refused (see the module
/// documentation). `root` must be canonical.
pub fn confine(root: &Path, requested: &str) -> Result<PathBuf, String> {
    check_syntax(requested)?;
    let joined = root.join(requested.trim());
    let canonical = joined
        .canonicalize()
        .map_err(|_| format!("no file `{}` in the repository", requested.trim()))?;
    if !canonical.starts_with(root) {
        return Err(format!(
            "path `{}` refused: it leads outside the repository",
            requested.trim()
        ));
    }
    if !canonical.is_file() {
        return Err(format!("`{}` is not a file", requested.trim()));
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_escapes_before_touching_the_file_system() {
        for (bad, why) in [
            ("../etc/passwd", "`..`"),
            ("pkg/../../x", "`..`"),
            ("/etc/passwd", "absolute"),
            ("C:/x.py", "absolute"),
            ("pkg/a.py\0.txt", "NUL"),
            ("%2e%2e/secret", "percent"),
            ("pkg%2Fa.py", "percent"),
            ("..\\secret", "backslash"),
            ("~/secret", "`~`"),
            ("~root/x", "`~`"),
            ("", "empty"),
        ] {
            let err = check_syntax(bad).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
        assert!(check_syntax("pkg/a.py").is_ok());
        assert!(
            check_syntax("100%.py").is_ok(),
            "a lone % is not an encoding"
        );
    }

    #[cfg(unix)]
    #[test]
    fn refuses_symlinks_out_and_accepts_files_in() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("pkg")).unwrap();
        std::fs::write(root.join("pkg/a.py"), "a").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("leak.txt"))
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink(root.join("pkg/a.py"), root.join("alias.py")).unwrap();

        assert_eq!(confine(&root, "pkg/a.py").unwrap(), root.join("pkg/a.py"));
        assert_eq!(confine(&root, "alias.py").unwrap(), root.join("pkg/a.py"));
        for bad in ["leak.txt", "out/secret.txt"] {
            let err = confine(&root, bad).unwrap_err();
            assert!(err.contains("outside the repository"), "{bad}: {err}");
        }
        assert!(confine(&root, "pkg").unwrap_err().contains("not a file"));
        assert!(confine(&root, "pkg/none.py")
            .unwrap_err()
            .contains("no file"));
    }
}
