//! The repository's ignore files (`.ignore`, `.gitignore` in every directory, and
//! `.git/info/exclude`), read by blagent itself rather than by the `ignore` crate: only regular
//! files inside the repository, at most [`MAX_SMALL_FILE_BYTES`] each, so a FIFO never blocks
//! the walk, a link to `/dev/zero` is not read whole, and a link leaving the repository changes
//! nothing. The user's global git excludes are not read either (they live outside).
//!
//! Precedence is the `ignore` crate's: a deeper directory's files before its parents', and in
//! one directory `.ignore` before `.gitignore`; the first file with a matching rule decides
//! (a `!` rule un-ignores), `.git/info/exclude` last.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;

use super::read::{read_bounded, ReadFailure, MAX_SMALL_FILE_BYTES};
use super::skipped::{SkipReason, Skipped};

/// Ignore file names read in every directory, the stronger first.
const PER_DIRECTORY: [&str; 2] = [".ignore", ".gitignore"];

/// The most rules one ignore file may have: compiling a rule with `**` takes about 0.2 ms and
/// 20 KB, so 1 MiB of such rules (40,000) took 8 s and 1 GB, deaf to Ctrl-C.
pub const MAX_RULES_PER_FILE: usize = 5_000;
/// The most rules all of a repository's ignore files may have together (real repositories
/// have a few hundred); an ignore file past the budget is skipped whole.
pub const MAX_RULES_PER_REPOSITORY: usize = 20_000;

/// Whether the walk leaves any of `paths` (absolute, under the canonical `root`) out by the
/// repository's ignore rules: the path itself or a folder on the way to it (the walk never
/// enters an ignored folder). A path outside `root` counts as ignored. The rules are read once
/// for all of them.
pub fn ignored_on_the_way(root: &Path, paths: &[&Path]) -> bool {
    let ignores = Ignores::new(root);
    paths.iter().any(|path| {
        let Ok(inside) = path.strip_prefix(root) else {
            return true;
        };
        let mut at = root.to_path_buf();
        let mut parts = inside.components().peekable();
        while let Some(part) = parts.next() {
            at.push(part);
            if ignores.is_ignored(&at, parts.peek().is_some()) {
                return true;
            }
        }
        false
    })
}

/// The ignore rules of one repository, loaded directory by directory as the walk reaches them.
pub(super) struct Ignores {
    root: PathBuf,
    by_dir: Mutex<HashMap<PathBuf, Arc<Vec<Gitignore>>>>,
    exclude: Option<Gitignore>,
    skipped: Mutex<Vec<Skipped>>,
    /// Rules the repository's ignore files may still add ([`MAX_RULES_PER_REPOSITORY`]).
    rules_left: AtomicUsize,
}

impl Ignores {
    /// The rules of `root` (canonical); `.git/info/exclude` is read now, the rest on demand.
    pub fn new(root: &Path) -> Self {
        let ignores = Ignores {
            root: root.to_path_buf(),
            by_dir: Mutex::new(HashMap::new()),
            exclude: None,
            skipped: Mutex::new(Vec::new()),
            rules_left: AtomicUsize::new(MAX_RULES_PER_REPOSITORY),
        };
        let git = root.join(".git");
        let exclude = fs::symlink_metadata(&git)
            .is_ok_and(|m| m.is_dir())
            .then(|| ignores.load(root, &git.join("info").join("exclude")))
            .flatten();
        Ignores { exclude, ..ignores }
    }

    /// Whether `path` (absolute, under the root) is ignored.
    pub fn is_ignored(&self, path: &Path, is_dir: bool) -> bool {
        let mut dir = path.parent();
        while let Some(d) = dir.filter(|d| d.starts_with(&self.root)) {
            for matcher in self.dir_rules(d).iter() {
                match matcher.matched(path, is_dir) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => {}
                }
            }
            dir = d.parent();
        }
        self.exclude
            .as_ref()
            .is_some_and(|m| m.matched(path, is_dir).is_ignore())
    }

    /// The ignore files blagent refused to read, as walk skips.
    pub fn take_skipped(&self) -> Vec<Skipped> {
        std::mem::take(&mut *self.skipped.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn dir_rules(&self, dir: &Path) -> Arc<Vec<Gitignore>> {
        let mut by_dir = self.by_dir.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(by_dir.entry(dir.to_path_buf()).or_insert_with(|| {
            Arc::new(
                PER_DIRECTORY
                    .iter()
                    .filter_map(|name| self.load(dir, &dir.join(name)))
                    .collect(),
            )
        }))
    }

    /// The rules of the ignore file `file`, anchored at `dir`; `None` when there is none or it
    /// is refused (recorded in the skips).
    fn load(&self, dir: &Path, file: &Path) -> Option<Gitignore> {
        let meta = fs::symlink_metadata(file).ok()?;
        // Every component is resolved, not only the last: `.git/info` may itself be a link.
        // The resolved path is the one read.
        let target = match fs::canonicalize(file) {
            Err(_) if meta.file_type().is_symlink() => {
                return self.skip(file, SkipReason::BrokenSymlink)
            }
            Err(_) => return None,
            Ok(target) if !target.starts_with(&self.root) => {
                return self.skip(file, SkipReason::SymlinkOutside)
            }
            Ok(target) => target,
        };
        let bytes = match read_bounded(&target, MAX_SMALL_FILE_BYTES) {
            Ok(bytes) => bytes,
            Err(ReadFailure::NotRegular(_)) => return self.skip(file, SkipReason::NotRegularFile),
            Err(ReadFailure::TooLarge { .. }) => {
                let bytes = fs::metadata(file).map_or(0, |m| m.len());
                return self.skip(file, SkipReason::TooLarge { bytes });
            }
            Err(ReadFailure::Io(e)) => {
                let message = e.to_string();
                return self.skip(file, SkipReason::Unreadable { message });
            }
        };
        let text = String::from_utf8_lossy(&bytes);
        let rules = text
            .lines()
            .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
            .count();
        let within_budget = rules <= MAX_RULES_PER_FILE
            && self
                .rules_left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                    left.checked_sub(rules)
                })
                .is_ok();
        if !within_budget {
            return self.skip(file, SkipReason::TooManyRules { rules });
        }
        let mut builder = GitignoreBuilder::new(dir);
        for line in text.lines() {
            // A malformed glob is ignored, as git does.
            let _ = builder.add_line(Some(file.to_path_buf()), line);
        }
        builder.build().ok()
    }

    fn skip<T>(&self, file: &Path, reason: SkipReason) -> Option<T> {
        let path = file.strip_prefix(&self.root).unwrap_or(file);
        self.skipped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Skipped {
                path: path.to_string_lossy().replace('\\', "/"),
                reason,
            });
        None
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::symlink;
    use std::time::Duration;

    use super::super::read::mkfifo;
    use super::super::walk::{walk, WalkOptions, WalkOutput};
    use super::*;

    fn write(root: &Path, rel: &str, bytes: &[u8]) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    }

    /// The walk of `root`, or a failure after 20 s (a walk that blocks on a FIFO never returns).
    fn walk_within_time(root: &Path) -> WalkOutput {
        let (tx, rx) = std::sync::mpsc::channel();
        let root = root.to_path_buf();
        std::thread::spawn(move || tx.send(walk(&root, &WalkOptions::default())));
        rx.recv_timeout(Duration::from_secs(20))
            .expect("the walk hung")
            .unwrap()
    }

    fn paths(out: &WalkOutput) -> Vec<&str> {
        out.files.iter().map(|f| f.path.as_str()).collect()
    }

    fn skip_of<'a>(out: &'a WalkOutput, path: &str) -> Option<&'a SkipReason> {
        out.skipped
            .iter()
            .find(|s| s.path == path)
            .map(|s| &s.reason)
    }

    #[test]
    fn fifo_ignore_files_do_not_block_the_walk() {
        for (name, git) in [
            (".gitignore", false),
            (".gitignore", true),
            (".ignore", false),
        ] {
            let dir = tempfile::tempdir().unwrap();
            write(dir.path(), "a.py", b"x = 1\n");
            write(dir.path(), "sub/b.py", b"y = 1\n");
            if git {
                fs::create_dir(dir.path().join(".git")).unwrap();
            }
            mkfifo(&dir.path().join(name));
            mkfifo(&dir.path().join("sub").join(name));
            let out = walk_within_time(dir.path());
            assert_eq!(paths(&out), ["a.py", "sub/b.py"], "{name} git={git}");
            assert_eq!(skip_of(&out, name), Some(&SkipReason::NotRegularFile));
        }
    }

    #[test]
    fn ignore_files_linked_to_devices_or_outside_are_not_read() {
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "rules", b"*.py\n");
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.py", b"x = 1\n");
        write(dir.path(), "sub/b.py", b"y = 1\n");
        symlink("/dev/zero", dir.path().join(".gitignore")).unwrap();
        symlink(
            outside.path().join("rules"),
            dir.path().join("sub/.gitignore"),
        )
        .unwrap();
        let out = walk_within_time(dir.path());
        assert_eq!(paths(&out), ["a.py", "sub/b.py"]);
        assert_eq!(
            skip_of(&out, ".gitignore"),
            Some(&SkipReason::SymlinkOutside)
        );
        assert_eq!(
            skip_of(&out, "sub/.gitignore"),
            Some(&SkipReason::SymlinkOutside)
        );
        // Inside the repository, a link to a regular file is honoured; one to a FIFO is not.
        write(dir.path(), "rules.txt", b"sub/\n");
        fs::remove_file(dir.path().join(".gitignore")).unwrap();
        symlink(dir.path().join("rules.txt"), dir.path().join(".gitignore")).unwrap();
        mkfifo(&dir.path().join("fifo"));
        fs::remove_file(dir.path().join("sub/.gitignore")).unwrap();
        symlink(dir.path().join("fifo"), dir.path().join("sub/.ignore")).unwrap();
        assert_eq!(paths(&walk_within_time(dir.path())), ["a.py"]);
    }

    #[test]
    fn an_exclude_file_reached_through_a_linked_folder_outside_is_not_read() {
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "info/exclude", b"*.py\n");
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "app.py", b"x = 1\n");
        fs::create_dir(dir.path().join(".git")).unwrap();
        symlink(outside.path().join("info"), dir.path().join(".git/info")).unwrap();
        let out = walk_within_time(dir.path());
        assert_eq!(paths(&out), ["app.py"], "the outside rules were obeyed");
        assert_eq!(
            skip_of(&out, ".git/info/exclude"),
            Some(&SkipReason::SymlinkOutside)
        );
    }

    #[test]
    fn oversized_ignore_files_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.py", b"x = 1\n");
        let big = vec![b'#'; usize::try_from(MAX_SMALL_FILE_BYTES).unwrap() + 1];
        write(dir.path(), ".gitignore", &big);
        let out = walk_within_time(dir.path());
        assert_eq!(paths(&out), ["a.py"]);
        assert!(matches!(
            skip_of(&out, ".gitignore"),
            Some(SkipReason::TooLarge { .. })
        ));
    }

    #[test]
    fn ignore_files_past_the_rule_budgets_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.py", b"x = 1\n");
        let rules = |n: usize| -> Vec<u8> {
            (0..n)
                .flat_map(|i| format!("pat{i}/**/x{i}*.py\n").into_bytes())
                .collect()
        };
        write(dir.path(), ".gitignore", &rules(MAX_RULES_PER_FILE + 1));
        // Four files at the per-file limit fill the repository's budget; a fifth is skipped.
        for sub in ["b", "c", "d", "e", "f"] {
            write(
                dir.path(),
                &format!("{sub}/.gitignore"),
                &rules(MAX_RULES_PER_FILE),
            );
            write(dir.path(), &format!("{sub}/m.py"), b"y = 2\n");
        }
        let out = walk_within_time(dir.path());
        assert!(matches!(
            skip_of(&out, ".gitignore"),
            Some(SkipReason::TooManyRules { rules }) if *rules == MAX_RULES_PER_FILE + 1
        ));
        let over: Vec<&str> = ["b", "c", "d", "e", "f"]
            .into_iter()
            .filter(|sub| skip_of(&out, &format!("{sub}/.gitignore")).is_some())
            .collect();
        assert_eq!(over.len(), 1, "past 4 × 5,000 rules: {over:?}");
        assert!(paths(&out).contains(&"a.py"));
    }

    #[test]
    fn precedence_follows_git() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for f in [
            "a.py",
            "gen/x.py",
            "gen/keep.py",
            "lib/y.py",
            "lib/z.py",
            "local.py",
        ] {
            write(root, f, b"v = 1\n");
        }
        write(root, ".gitignore", b"gen/*.py\nlib/\n");
        write(root, "gen/.gitignore", b"!keep.py\n");
        write(root, ".ignore", b"a.py\n");
        write(root, ".git/info/exclude", b"local.py\n");
        let out = walk_within_time(root);
        assert_eq!(paths(&out), ["gen/keep.py"]);
        // Without .git, its exclude file is not consulted (there is none).
        fs::remove_dir_all(root.join(".git")).unwrap();
        assert_eq!(paths(&walk_within_time(root)), ["gen/keep.py", "local.py"]);
    }

    #[test]
    fn the_filesystem_root_is_refused() {
        let err = walk(Path::new("/"), &WalkOptions::default()).unwrap_err();
        assert!(err.is_input_error(), "{err}");
        assert!(err.to_string().contains("filesystem root"), "{err}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn non_utf8_paths_are_reported_relative() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let name = std::ffi::OsStr::from_bytes(b"bad\xff.py");
        fs::create_dir(dir.path().join("pkg")).unwrap();
        fs::write(dir.path().join("pkg").join(name), b"x = 1\n").unwrap();
        let out = walk_within_time(dir.path());
        let skip = out
            .skipped
            .iter()
            .find(|s| s.reason == SkipReason::NonUtf8Path)
            .unwrap();
        assert_eq!(skip.path, "pkg/bad\u{fffd}.py");
    }
}
