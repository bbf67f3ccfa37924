//! Keeping every tool the model can call inside the repository, by the repository-wide rule
//! ([`crate::repo::confine`]) in words for the model. A requested path is refused before it
//! touches the file system when it is blank or absolute, climbs with `..`, holds a NUL byte, a
//! backslash, a `~` or a percent-encoded byte; then it is canonicalized and must still lie under
//! the canonical root, so a symlink pointing out is refused too.

use std::path::{Path, PathBuf};

use crate::repo::confine::{check_relative, resolve_inside, Refusal};

/// Characters of a refused path quoted in its refusal (escaped, so a control character counts
/// as the several of its escape): a model may send a path of any length, and the refusal is a
/// tool warning in the result too.
pub const MAX_QUOTED_PATH_CHARS: usize = 200;

/// `requested` escaped for a message (`escape_debug`) and cut to [`MAX_QUOTED_PATH_CHARS`]
/// characters, `…` marking a cut.
fn quoted(requested: &str) -> String {
    crate::text::cut_chars(requested.escape_debug(), MAX_QUOTED_PATH_CHARS)
}

/// Why a requested path is refused, in words sent back to the model: the repository-wide rule
/// ([`check_relative`]) with the agent's stricter ones (blank, `~`, percent-encoding, a drive
/// letter) in the order the model is told of them. The path is quoted escaped and cut
/// ([`MAX_QUOTED_PATH_CHARS`]).
pub fn check_syntax(requested: &str) -> Result<(), String> {
    let refuse = |why: &str| Err(format!("path `{}` refused: {why}", quoted(requested)));
    let refusal = check_relative(requested).err();
    if requested.trim().is_empty() {
        return refuse("it is empty");
    }
    match refusal {
        Some(Refusal::Nul) => return refuse("it contains a NUL byte"),
        Some(Refusal::Backslash) => return refuse("backslashes are not allowed; use `/`"),
        _ => {}
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
    if refusal == Some(Refusal::Absolute) || requested.get(1..2) == Some(":") {
        return refuse(
            "absolute paths are not allowed; use a path relative to the repository root",
        );
    }
    if refusal == Some(Refusal::ParentDir) {
        return refuse("`..` is not allowed");
    }
    Ok(())
}

/// The canonical file `requested` names under `root`, or why it is refused (see the module
/// documentation). `root` must be canonical.
pub fn confine(root: &Path, requested: &str) -> Result<PathBuf, String> {
    check_syntax(requested)?;
    let requested = requested.trim();
    let canonical = resolve_inside(root, requested).map_err(|refusal| match refusal {
        Refusal::Outside => {
            format!("path `{requested}` refused: it leads outside the repository")
        }
        _ => format!("no file `{requested}` in the repository"),
    })?;
    if !canonical.is_file() {
        return Err(format!("`{requested}` is not a file"));
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
            ("  ", "empty"),
            // Several faults: the first in the order the model is told of them.
            ("/~x", "`~`"),
            ("a\\~", "backslash"),
            ("~/../x", "`~`"),
            ("%2e/../x", "percent"),
            ("/a/..", "absolute"),
            ("a:/..", "absolute"),
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

    /// Found by a review: a path of `~` and 42,000 control characters was quoted whole,
    /// escaped (210 KB), in the refusal and so in the result's tool warnings.
    #[test]
    fn a_refused_path_is_quoted_cut() {
        let long = format!("~{}", "\u{1}".repeat(42_000));
        let err = check_syntax(&long).unwrap_err();
        assert!(err.starts_with("path `~\\u{1}\\u{1}"), "{err}");
        assert!(err.contains("…` refused: `~` is not allowed"), "{err}");
        let quoted = err.split('`').nth(1).unwrap();
        assert_eq!(quoted.chars().count(), MAX_QUOTED_PATH_CHARS + 1, "{err}");
        // A path that fits is quoted whole, with no mark.
        let short = "~".repeat(MAX_QUOTED_PATH_CHARS);
        let err = check_syntax(&short).unwrap_err();
        assert!(err.starts_with(&format!("path `{short}` refused")), "{err}");
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
        // Blanks around a path are trimmed after the check: an absolute path so written is
        // held inside by the canonical comparison.
        let err = confine(&root, " /etc/passwd").unwrap_err();
        assert!(err.contains("outside the repository"), "{err}");
        assert_eq!(confine(&root, " pkg/a.py ").unwrap(), root.join("pkg/a.py"));
        assert!(confine(&root, "pkg/none.py")
            .unwrap_err()
            .contains("no file"));
    }
}
