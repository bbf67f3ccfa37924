//! The repository's recent commits, read from its own `.git`: each commit's message and the
//! files it changed. Past fixes whose messages read like the issue point at the files a fix
//! touches again (the similar fixed reports of `BugLocator`, Zhou et al., 2012); see
//! [`crate::retrieve::Signal::HistoryTitle`].
//!
//! History is read by running `git log` on the repository's `.git` folder, and only where that
//! folder lies inside the repository: a `.git` file (a worktree or submodule) or a link points
//! elsewhere, and is not followed, and only where its git config includes no other file
//! (which git would read wherever it lies). Git reads that folder as it would for the user (objects
//! shared with another clone through its `alternates` included); it is asked for messages and
//! paths only, with no pager, no signatures, no file-system monitor and no system config, and
//! runs no hook. It never fetches: in a partial clone the objects that were not cloned stay
//! missing (`GIT_NO_LAZY_FETCH`), so a blobless clone (`--filter=blob:none`) has its history
//! and a treeless one (`--filter=tree:0`) has none, rather than one request to the remote per
//! commit. No `.git` (a tree written from an archive) means no history and no error.
//! Git's output is read up to [`MAX_LOG_BYTES`]; a git that is missing, fails or is stopped
//! leaves the history empty, with the reason kept for the result's warnings. Git is stopped
//! after [`GIT_TIMEOUT`] (one that blocks, on a FIFO inside `.git` for one, never holds up a
//! run) or when the user presses Ctrl-C.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Commits read at most, newest first (`git log -n`). 5,000 of django's are about 1.4 MB and
/// a quarter of a second.
pub const DEFAULT_MAX_COMMITS: usize = 5000;
/// Bytes of `git log` output read at most: past this, the commits read so far are kept.
pub const MAX_LOG_BYTES: u64 = 32 << 20;
/// How long `git log` may run before it is stopped and the history left out.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(60);
/// What tells git which repository to read, and how, from the environment: a git hook or a
/// `git rebase --exec` sets some of these for its own repository (`git rev-parse
/// --local-env-vars`). They are cleared, so git reads this repository's folder as it is.
const LOCAL_GIT_ENV: [&str; 15] = [
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
];
/// Separates commits in the log format (before each message).
const COMMIT_MARK: char = '\u{0}';
/// Separates a commit's message from its changed files.
const FILES_MARK: char = '\u{1}';

/// One commit: its message and the repository-relative paths of the files it changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// Its subject, then its body on the next line.
    pub message: String,
    /// Changed files, `/`-separated, as git names them.
    pub files: Vec<String>,
}

/// What was read of a repository's history.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Newest first, merges left out.
    pub commits: Vec<Commit>,
    /// Why there is no history where a `.git` folder was found (git missing or failing).
    pub note: Option<String>,
}

/// Reads at most `max_commits` commits of the repository at `root`, newest first.
/// `max_commits` 0 reads nothing.
pub fn read_history(root: &Path, max_commits: usize) -> History {
    let git_dir = root.join(".git");
    let is_dir = std::fs::symlink_metadata(&git_dir).is_ok_and(|m| m.file_type().is_dir());
    if max_commits == 0 || !is_dir {
        return History::default();
    }
    let log = check_git_files(&git_dir)
        .and_then(|common| check_config_includes(&git_dir, common.as_deref()))
        .and_then(|()| run_log(&git_dir, max_commits, GIT_TIMEOUT));
    match log {
        Ok(text) => History {
            commits: parse_log(&text),
            note: None,
        },
        Err(why) => History {
            commits: Vec::new(),
            note: Some(format!("no commit history: {why}")),
        },
    }
}

/// The files of `.git` that git opens to read the log: where one is there and is not a regular
/// file (a FIFO would block git's open until something writes to it), git is not run.
const GIT_FILES: [&str; 7] = [
    "HEAD",
    "config",
    "packed-refs",
    "commondir",
    "shallow",
    "info/grafts",
    "objects/info/alternates",
];

/// The folders of `.git` that git reads refs and objects from: a FIFO or device in them (the
/// branch `HEAD` names, a loose object, a reftable) blocks git as one of [`GIT_FILES`] would.
const GIT_FOLDERS: [&str; 3] = ["refs", "objects", "reftable"];

/// The most entries of [`GIT_FOLDERS`] looked at (real repositories keep most objects in packs:
/// a few thousand entries); past it the rest is left to git, under its timeout.
const MAX_GIT_ENTRIES: usize = 200_000;

/// Checks the files git reads ([`GIT_FILES`], [`GIT_FOLDERS`], [`check_inside`]); returns the
/// folder `commondir` names, where it names one ([`common_dir`]).
fn check_git_files(git_dir: &Path) -> Result<Option<PathBuf>, String> {
    let refuse = |path: &Path, kind: &str| {
        let name = path.strip_prefix(git_dir).unwrap_or(path).display();
        Err(format!(
            ".git/{name} is a {kind}, not a regular file; git not run"
        ))
    };
    for name in GIT_FILES {
        if let Ok(meta) = std::fs::metadata(git_dir.join(name)) {
            if !meta.is_file() {
                return refuse(Path::new(name), super::read::kind_name(meta.file_type()));
            }
        }
    }
    // The folders' entries are typed by their listing, no file opened. A link is looked
    // through to what it names, but a folder it names is not entered (a link to `..` or `/`
    // would walk in a loop or out of the repository; git reaches a ref through such a folder
    // only by a name of it, which the walk of the folder itself checks where it lies inside).
    let mut folders: Vec<PathBuf> = GIT_FOLDERS.iter().map(|f| git_dir.join(f)).collect();
    let mut seen = 0usize;
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_GIT_ENTRIES {
                return check_inside(git_dir);
            }
            let Ok(mut kind) = entry.file_type() else {
                continue;
            };
            if kind.is_symlink() {
                match std::fs::metadata(entry.path()) {
                    Ok(meta) if meta.is_dir() => continue,
                    Ok(meta) => kind = meta.file_type(),
                    Err(_) => continue,
                }
            }
            if kind.is_dir() {
                folders.push(entry.path());
            } else if !kind.is_file() {
                return refuse(&entry.path(), super::read::kind_name(kind));
            }
        }
    }
    check_inside(git_dir)
}

/// The most bytes of a repository's git config that are read to look for includes: git's own
/// configs are a few hundred bytes; a larger one leaves the history out.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The repository's git config files (`config`, `config.worktree`, and the `config` of the
/// folder `commondir` names) must not include other files (`[include]`, `[includeIf …]`): git
/// would read those wherever they are, outside the repository too, and a FIFO there would
/// hold git until its timeout. Such a repository is read without its history. `common` is the
/// folder `commondir` names, as [`check_git_files`] found it.
fn check_config_includes(git_dir: &Path, common: Option<&Path>) -> Result<(), String> {
    let mut configs = vec![git_dir.join("config"), git_dir.join("config.worktree")];
    configs.extend(common.map(|common| common.join("config")));
    for config in configs {
        let Ok(meta) = std::fs::metadata(&config) else {
            continue;
        };
        let name = config.strip_prefix(git_dir).unwrap_or(&config).display();
        if !meta.is_file() {
            let kind = super::read::kind_name(meta.file_type());
            return Err(format!(
                ".git/{name} is a {kind}, not a regular file; git not run"
            ));
        }
        let text = super::read::read_bounded(&config, MAX_CONFIG_BYTES)
            .map_err(|_| format!(".git/{name} cannot be read whole; git not run"))?;
        if includes_files(&String::from_utf8_lossy(&text)) {
            return Err(format!(
                ".git/{name} includes other files, which git would read wherever they are; \
                 git not run"
            ));
        }
    }
    Ok(())
}

/// Whether a git config text has an `[include]` or `[includeIf "…"]` section, read the way
/// git's parser reads it: a byte-order mark at the start skipped, `\r` as white space between
/// items, comments (`#`, `;`) to the end of their line, several section headers on one line,
/// and a value to the end of its line, through its quotes and `\`-continued lines. A section
/// name is compared case-insensitively, before any `.subsection` (so `[include.x]`, which git
/// does not treat as an include, still counts: a repository with it keeps no history).
fn includes_files(config: &str) -> bool {
    let text = config.strip_prefix('\u{feff}').unwrap_or(config).as_bytes();
    let mut at = 0;
    while at < text.len() {
        match text[at] {
            b'#' | b';' => at = line_end(text, at),
            b'[' => {
                let name_start = at + 1;
                let name_end = name_start
                    + text[name_start..]
                        .iter()
                        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-')
                        .count();
                let name = &text[name_start..name_end];
                if name.eq_ignore_ascii_case(b"include") || name.eq_ignore_ascii_case(b"includeif")
                {
                    return true;
                }
                // To the header's `]`, past a quoted subsection's escapes; then the line goes on.
                at = skip_value(text, name_end, Some(b']'));
            }
            b if b.is_ascii_whitespace() => at += 1,
            // A key and its value.
            _ => at = skip_value(text, at, None),
        }
    }
    false
}

/// The position after the `\n` that ends the line holding `at` (or the text's end).
fn line_end(text: &[u8], at: usize) -> usize {
    text[at..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(text.len(), |n| at + n + 1)
}

/// The position after a value (or a section header, ended by `close`) that starts at `at`: to
/// the end of its line, where quotes may hold comment signs and a `\` takes the next byte along
/// (a line end too). A line end inside quotes, an error to git, ends it as well, and so does
/// a `\r` (git may read it as white space: ending there can only find more headers).
fn skip_value(text: &[u8], mut at: usize, close: Option<u8>) -> usize {
    let mut quoted = false;
    while at < text.len() {
        match text[at] {
            b'\\' => {
                at += 2;
                continue;
            }
            b'"' => quoted = !quoted,
            b'\n' | b'\r' => return at + 1,
            b'#' | b';' if !quoted && close.is_none() => return line_end(text, at),
            b if Some(b) == close && !quoted => return at + 1,
            _ => {}
        }
        at += 1;
    }
    at.min(text.len())
}

/// What git reads of `.git` (its files above, `objects` and `refs`, and the folder a linked
/// worktree's `commondir` names) must lie inside the repository: a link there, or a
/// `commondir`, leading to another repository would put that repository's commit messages in
/// the evidence, as a `.git` file pointing elsewhere would (not followed either). Objects
/// shared through `objects/info/alternates` are read where they are. Returns the folder
/// `commondir` names ([`common_dir`]).
fn check_inside(git_dir: &Path) -> Result<Option<PathBuf>, String> {
    let root = git_dir
        .parent()
        .and_then(|r| r.canonicalize().ok())
        .ok_or_else(|| "the repository cannot be resolved; git not run".to_owned())?;
    let outside = |name: &str, path: &Path| -> Result<(), String> {
        match path.canonicalize() {
            Ok(real) if !real.starts_with(&root) => Err(format!(
                ".git/{name} leads outside the repository; git not run"
            )),
            _ => Ok(()),
        }
    };
    for name in GIT_FILES.iter().chain(&["objects", "refs"]) {
        outside(name, &git_dir.join(name))?;
    }
    let common = common_dir(git_dir)?;
    if let Some(common) = &common {
        // Named, it must be there: one that cannot be resolved is not known to lie inside.
        let real = common
            .canonicalize()
            .map_err(|_| ".git/commondir names a folder that cannot be resolved; git not run")?;
        outside("commondir", &real)?;
    }
    Ok(common)
}

/// The folder `.git/commondir` names (a linked worktree's shared repository), read as git
/// reads it: relative to `.git`, only the line ends at its end stripped (a space is part of
/// the name), and a NUL byte, which would end git's reading of it early, refused.
fn common_dir(git_dir: &Path) -> Result<Option<PathBuf>, String> {
    let commondir = git_dir.join("commondir");
    if std::fs::symlink_metadata(&commondir).is_err() {
        return Ok(None);
    }
    let text = super::read::read_bounded(&commondir, 4096)
        .map_err(|_| ".git/commondir cannot be read; git not run".to_owned())?;
    let end = text.len()
        - text
            .iter()
            .rev()
            .take_while(|b| matches!(b, b'\n' | b'\r'))
            .count();
    let named = &text[..end];
    if named.contains(&0) {
        return Err(".git/commondir holds a NUL byte; git not run".to_owned());
    }
    Ok(Some(git_dir.join(String::from_utf8_lossy(named).as_ref())))
}

/// `git log` of `git_dir`'s HEAD: per commit a mark, the message, a mark and the changed files.
fn run_log(git_dir: &Path, max_commits: usize, timeout: Duration) -> Result<String, String> {
    let mut git = Command::new("git");
    for name in LOCAL_GIT_ENV {
        git.env_remove(name);
    }
    let mut child = git
        .arg("--git-dir")
        .arg(git_dir)
        .args([
            "--no-pager",
            "-c",
            "log.showSignature=false",
            "-c",
            "core.quotePath=false",
            "-c",
            "core.fsmonitor=false",
            // The format reads no author, so a `mailmap.file` (which may name a file outside
            // the repository, or a FIFO) is never opened.
            // A diff order file (read for `--name-only`) may lie anywhere, and a FIFO there
            // holds git: the repository's is replaced by an empty one.
            "-c",
            "diff.orderFile=/dev/null",
            "-c",
            "log.mailmap=false",
            "-c",
            "mailmap.file=",
            "-c",
            "mailmap.blob=",
            "log",
            "--no-merges",
            "--no-renames",
            "--name-only",
            "--format=%x00%s%n%b%x01",
        ])
        // git reads the count as an `int`: a larger one is refused, and means "all" anyway.
        .arg(format!("-n{}", max_commits.min(i32::MAX as usize)))
        .arg("HEAD")
        .arg("--")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        // A partial clone's missing objects are not fetched from its remote (Git 2.44 on; an
        // older git has no lazy fetch to stop only in a partial clone, where it then fetches).
        .env("GIT_NO_LAZY_FETCH", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("git could not run ({e})"))?;
    let stdout = child.stdout.take();
    let child = Arc::new(Mutex::new(child));
    let watchdog = Watchdog::start(Arc::clone(&child), timeout);
    let mut bytes = Vec::new();
    let read = stdout.map(|out| out.take(MAX_LOG_BYTES).read_to_end(&mut bytes));
    let stopped = watchdog.finish();
    let mut child = child.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(why) = stopped {
        let _ = child.wait();
        return Err(why);
    }
    let truncated = bytes.len() as u64 >= MAX_LOG_BYTES;
    if truncated {
        // The commits read so far are kept; git is not left writing to a closed pipe.
        let _ = child.kill();
    }
    let status = child.wait().map_err(|e| format!("git failed ({e})"))?;
    match read {
        Some(Ok(_)) => {}
        Some(Err(e)) => return Err(format!("git's output could not be read ({e})")),
        None => return Err("git's output could not be read".to_owned()),
    }
    if !status.success() && !truncated {
        return Err(format!("git log failed ({status})"));
    }
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if truncated {
        // The last commit may be cut anywhere: drop it.
        text.truncate(text.rfind(COMMIT_MARK).unwrap_or(0));
    }
    Ok(text)
}

/// Stops a running git after a timeout ([`GIT_TIMEOUT`]) or on Ctrl-C ([`crate::cancel`]),
/// from a thread of its own, while the caller reads git's output (which then ends).
struct Watchdog {
    done: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Option<String>>,
}

impl Watchdog {
    fn start(child: Arc<Mutex<Child>>, timeout: Duration) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let finished = Arc::clone(&done);
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            while !finished.load(Ordering::SeqCst) {
                let why = if crate::cancel::is_requested() {
                    "git log was stopped by an interrupt".to_owned()
                } else if start.elapsed() > timeout {
                    let seconds = timeout.as_secs_f64();
                    format!("git log took more than {seconds} s and was stopped")
                } else {
                    std::thread::park_timeout(crate::cancel::POLL);
                    continue;
                };
                let _ = child.lock().unwrap_or_else(PoisonError::into_inner).kill();
                return Some(why);
            }
            None
        });
        Watchdog { done, thread }
    }

    /// Ends the watch once git's output is read; why git was stopped, if it was.
    fn finish(self) -> Option<String> {
        self.done.store(true, Ordering::SeqCst);
        self.thread.thread().unpark();
        self.thread.join().unwrap_or(None)
    }
}

/// The commits of [`run_log`]'s output.
fn parse_log(text: &str) -> Vec<Commit> {
    text.split(COMMIT_MARK)
        .skip(1)
        .filter_map(|block| {
            let (message, files) = block.split_once(FILES_MARK)?;
            Some(Commit {
                message: message.trim().to_owned(),
                files: files
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned)
                    .collect(),
            })
        })
        .collect()
}

/// Making small git repositories for tests.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;
    use std::process::{Command, Stdio};

    /// Runs git in `dir` with a fixed identity and unsigned commits, panicking on failure.
    pub(crate) fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .current_dir(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(["-c", "commit.gpgsign=false"])
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    /// Writes `files` (path, text) under `dir` and commits them with `message`.
    pub(crate) fn commit(dir: &Path, files: &[(&str, &str)], message: &str) {
        for (file, text) in files {
            let path = dir.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", message]);
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{commit, git};
    use super::*;

    /// A repository with one commit (`a.py`).
    fn repo_with_a_commit() -> tempfile::TempDir {
        let repo = tempfile::tempdir().unwrap();
        git(repo.path(), &["init", "-q"]);
        commit(repo.path(), &[("a.py", "x = 1\n")], "Add a");
        repo
    }

    fn mkfifo(path: &Path) {
        let status = Command::new("mkfifo").arg(path).status().unwrap();
        assert!(status.success());
    }

    #[test]
    fn reads_messages_and_changed_files_newest_first() {
        let repo = tempfile::tempdir().unwrap();
        git(repo.path(), &["init", "-q"]);
        commit(repo.path(), &[("pkg/a.py", "x = 1\n")], "Add a");
        commit(
            repo.path(),
            &[("pkg/sub/b.py", "y = 2\n")],
            "Fixed #12 -- Made b handle naïve dates.\n\nLonger body.",
        );
        let history = read_history(repo.path(), 10);
        assert_eq!(history.note, None);
        assert_eq!(
            history.commits,
            vec![
                Commit {
                    message: "Fixed #12 -- Made b handle naïve dates.\nLonger body.".into(),
                    files: vec!["pkg/sub/b.py".into()],
                },
                Commit {
                    message: "Add a".into(),
                    files: vec!["pkg/a.py".into()],
                },
            ]
        );
        assert_eq!(read_history(repo.path(), 1).commits.len(), 1);
        assert!(read_history(repo.path(), 0).commits.is_empty());
        // Found by a review: git refuses a count past its `int` (2^31 and up), and the
        // history was lost; such a count means every commit.
        for many in [1usize << 31, usize::MAX] {
            let all = read_history(repo.path(), many);
            assert_eq!((all.note, all.commits.len()), (None, 2), "{many}");
        }
    }

    #[test]
    fn no_history_without_a_git_folder_inside_the_repository() {
        let plain = tempfile::tempdir().unwrap();
        let history = read_history(plain.path(), 10);
        assert!(history.commits.is_empty() && history.note.is_none());

        // A `.git` file (a worktree's or a submodule's) points outside: not followed.
        let outside = tempfile::tempdir().unwrap();
        git(outside.path(), &["init", "-q"]);
        commit(outside.path(), &[("a.py", "x = 1\n")], "Add a");
        let linked = tempfile::tempdir().unwrap();
        let gitdir = outside.path().join(".git");
        std::fs::write(
            linked.path().join(".git"),
            format!("gitdir: {}\n", gitdir.display()),
        )
        .unwrap();
        assert!(read_history(linked.path(), 10).commits.is_empty());

        // A `.git` link to another repository's folder is not followed either.
        let symlinked = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&gitdir, symlinked.path().join(".git")).unwrap();
        assert!(read_history(symlinked.path(), 10).commits.is_empty());

        // Found by a review: a `.git` folder whose `commondir` names another repository, or
        // whose `objects` and `refs` are links into it, read that repository's messages.
        let common = tempfile::tempdir().unwrap();
        std::fs::create_dir(common.path().join(".git")).unwrap();
        std::fs::write(common.path().join(".git/HEAD"), "ref: refs/heads/master\n").unwrap();
        std::fs::write(
            common.path().join(".git/commondir"),
            format!("{}\n", gitdir.display()),
        )
        .unwrap();
        let linked_parts = tempfile::tempdir().unwrap();
        std::fs::create_dir(linked_parts.path().join(".git")).unwrap();
        std::fs::copy(gitdir.join("HEAD"), linked_parts.path().join(".git/HEAD")).unwrap();
        for part in ["objects", "refs"] {
            std::os::unix::fs::symlink(
                gitdir.join(part),
                linked_parts.path().join(".git").join(part),
            )
            .unwrap();
        }
        for repo in [common.path(), linked_parts.path()] {
            let history = read_history(repo, 10);
            assert!(history.commits.is_empty(), "{repo:?}");
            let note = history.note.unwrap_or_default();
            assert!(note.contains("leads outside the repository"), "{note}");
        }
    }

    #[test]
    fn a_hostile_git_config_runs_nothing() {
        let repo = repo_with_a_commit();
        let marker = repo.path().join("ran");
        let command = format!("touch {}", marker.display());
        for key in [
            "core.fsmonitor",
            "core.pager",
            "gpg.program",
            "diff.external",
        ] {
            git(repo.path(), &["config", key, &command]);
        }
        git(repo.path(), &["config", "log.showSignature", "true"]);
        let history = read_history(repo.path(), 10);
        assert_eq!(history.commits.len(), 1, "{:?}", history.note);
        assert!(
            !marker.exists(),
            "a command of the repository's git config ran"
        );
    }

    /// A config that includes another file (which may lie anywhere, a FIFO among them) is
    /// not given to git: the history is left out with a note, at once.
    #[test]
    fn a_git_config_that_includes_files_leaves_the_history_out() {
        let repo = repo_with_a_commit();
        let outside = tempfile::tempdir().unwrap();
        let fifo = outside.path().join("extra.conf");
        mkfifo(&fifo);
        let config = repo.path().join(".git/config");
        let plain = std::fs::read_to_string(&config).unwrap();
        for section in [
            "[include]\n\tpath = PATH\n".to_owned(),
            "[includeIf \"gitdir:/\"]\n\tpath = PATH\n".to_owned(),
            "  [Include] path = PATH\n".to_owned(),
        ] {
            let section = section.replace("PATH", &fifo.display().to_string());
            std::fs::write(&config, format!("{plain}{section}")).unwrap();
            let start = Instant::now();
            let history = read_history(repo.path(), 10);
            let note = history.note.unwrap_or_default();
            assert!(
                history.commits.is_empty() && note.contains(".git/config includes other files"),
                "{section}: {note}"
            );
            assert!(start.elapsed().as_secs() < 5);
        }
        // A key or value that only mentions includes is no include.
        std::fs::write(
            &config,
            format!("{plain}[core]\n\tinclude = x\n# [include]\n"),
        )
        .unwrap();
        let history = read_history(repo.path(), 10);
        assert_eq!(history.commits.len(), 1, "{:?}", history.note);
        assert!(includes_files("[include.path]\n") && !includes_files("[includes]\n"));
        // From a review: headers git reads that a line-by-line look missed (a second header on
        // a line, a lone `\r` between items, a byte-order mark), and values that hide none.
        for hidden in [
            "[core][include] path = x\n",
            "[core] [include] path = x\n",
            "[core]\r[include]\r\tpath = x\n",
            "\u{feff}[include]\n\tpath = x\n",
            "[core \"a]b\"] [includeIf \"gitdir:/\"] path = x\n",
        ] {
            assert!(includes_files(hidden), "{hidden:?}");
        }
        for value in [
            "[core]\n\tx = a\\\n[include]\n",
            "[core]\n\tx = \"a ; [include]\"\n",
            "[core]\n\tx = 1 ; [include]\n",
            "[alias]\n\tl = \"!f() { [include] }\"\n",
        ] {
            assert!(!includes_files(value), "{value:?}");
        }
    }

    /// `commondir` is read as git reads it: a trailing space is part of the name, a NUL byte
    /// (where git's reading stops) is refused, and a folder it names that cannot be resolved
    /// is not taken to lie inside (a review showed `/other/.git` then a NUL read the other
    /// repository's commits).
    #[test]
    fn commondir_is_read_as_git_reads_it() {
        let repo = repo_with_a_commit();
        let git_dir = repo.path().join(".git");
        let other = tempfile::tempdir().unwrap();
        git(other.path(), &["init", "-q"]);
        let note = |commondir: &[u8]| {
            std::fs::write(git_dir.join("commondir"), commondir).unwrap();
            read_history(repo.path(), 10).note.unwrap_or_default()
        };
        let mut foreign = other
            .path()
            .join(".git")
            .into_os_string()
            .into_encoded_bytes();
        foreign.extend_from_slice(b"\0\n");
        let refused = note(&foreign);
        assert!(refused.contains("holds a NUL byte"), "{refused}");
        let refused = note(b"missing\n");
        assert!(refused.contains("cannot be resolved"), "{refused}");
        // `c ` with its space: the config there includes a file.
        let spaced = git_dir.join("c ");
        std::fs::create_dir_all(spaced.join("objects")).unwrap();
        std::fs::write(spaced.join("config"), "[include]\n\tpath = /x\n").unwrap();
        let refused = note(b"c \n");
        assert!(
            refused.contains(".git/c /config includes other files"),
            "{refused}"
        );
        std::fs::remove_file(git_dir.join("commondir")).unwrap();
        assert_eq!(read_history(repo.path(), 10).commits.len(), 1);
    }

    /// A diff order file, which `git log --name-only` reads wherever the config says it lies
    /// (a FIFO there held git 60 s, found by a review), is replaced by an empty one.
    #[test]
    fn a_diff_order_file_of_the_config_is_not_read() {
        let repo = repo_with_a_commit();
        let outside = tempfile::tempdir().unwrap();
        let fifo = outside.path().join("order");
        mkfifo(&fifo);
        git(
            repo.path(),
            &["config", "diff.orderFile", &fifo.display().to_string()],
        );
        let start = Instant::now();
        let history = read_history(repo.path(), 10);
        assert_eq!(history.commits.len(), 1, "{:?}", history.note);
        assert!(start.elapsed().as_secs() < 5);
    }

    /// Git's version as (major, minor), where `git --version` says it.
    fn git_version() -> Option<(u32, u32)> {
        let out = std::process::Command::new("git")
            .arg("--version")
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut parts = text.split_whitespace().nth(2)?.split('.');
        Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
    }

    #[test]
    fn a_partial_clone_is_read_without_fetching() {
        if git_version().is_none_or(|v| v < (2, 44)) {
            // `GIT_NO_LAZY_FETCH` came with Git 2.44: an older git fetches (module docs).
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source");
        std::fs::create_dir(&source).unwrap();
        git(&source, &["init", "-q"]);
        commit(&source, &[("a.py", "x = 1\n")], "Add a");
        commit(&source, &[("b.py", "y = 2\n")], "Add b");
        git(&source, &["config", "uploadpack.allowFilter", "true"]);
        let url = format!("file://{}", source.display());
        let clone = |filter: &str, name: &str| {
            let args = ["clone", "-q", "--no-checkout", filter, &url, name];
            git(dir.path(), &args);
            dir.path().join(name)
        };
        let packs = |clone: &Path| {
            std::fs::read_dir(clone.join(".git/objects/pack"))
                .unwrap()
                .count()
        };
        // Blobless: commits and trees are local, the history reads whole.
        let blobless = clone("--filter=blob:none", "blobless");
        let before = packs(&blobless);
        let history = read_history(&blobless, 10);
        assert_eq!(history.note, None);
        assert_eq!(history.commits.len(), 2);
        assert_eq!(history.commits[0].files, vec!["b.py"]);
        assert_eq!(packs(&blobless), before, "git fetched from the remote");
        // Treeless: the changed files would need a fetch per commit; nothing is fetched, and
        // there is no history, with the reason.
        let treeless = clone("--filter=tree:0", "treeless");
        let before = packs(&treeless);
        let history = read_history(&treeless, 10);
        assert!(history.commits.is_empty());
        assert!(history.note.unwrap().starts_with("no commit history"));
        assert_eq!(packs(&treeless), before, "git fetched from the remote");
    }

    #[test]
    fn a_broken_git_folder_is_a_note_not_an_error() {
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join(".git")).unwrap();
        let history = read_history(repo.path(), 10);
        assert!(history.commits.is_empty());
        assert!(history.note.unwrap().starts_with("no commit history"));
    }

    /// Found by a review: a FIFO inside `.git` (its HEAD, its config, a branch's ref) made git
    /// block on its open, and `localize` with it, beyond the reach of an interrupt sent to
    /// blagent alone.
    #[cfg(unix)]
    #[test]
    fn git_files_that_are_not_regular_and_a_git_that_blocks_leave_the_history_out() {
        let repo = repo_with_a_commit();
        let git_dir = repo.path().join(".git");
        let head = std::fs::read_to_string(git_dir.join("HEAD")).unwrap();
        std::fs::remove_file(git_dir.join("HEAD")).unwrap();
        mkfifo(&git_dir.join("HEAD"));
        let history = read_history(repo.path(), 10);
        let note = history.note.unwrap();
        assert!(
            note.contains(".git/HEAD is a FIFO, not a regular file"),
            "{note}"
        );

        // The branch HEAD names (found by a later review: it held `localize` 60 s, the timeout).
        std::fs::remove_file(git_dir.join("HEAD")).unwrap();
        std::fs::write(git_dir.join("HEAD"), &head).unwrap();
        let branch = head.trim().strip_prefix("ref: ").unwrap();
        std::fs::remove_file(git_dir.join(branch)).unwrap();
        mkfifo(&git_dir.join(branch));
        let start = Instant::now();
        let note = read_history(repo.path(), 10).note.unwrap();
        assert!(
            note.contains(&format!(".git/{branch} is a FIFO")) && start.elapsed().as_secs() < 5,
            "{note}"
        );

        // Found by the review of that fix: links to folders are not walked through (a link
        // to `..` walked in a loop for 9 s, one to `/` listed the whole file system).
        std::fs::remove_file(git_dir.join(branch)).unwrap();
        commit(repo.path(), &[("b.py", "y = 2\n")], "Add b");
        let tags = git_dir.join("refs/tags");
        std::os::unix::fs::symlink("..", tags.join("loop")).unwrap();
        std::os::unix::fs::symlink("/", tags.join("root")).unwrap();
        std::os::unix::fs::symlink("/dev", tags.join("dev")).unwrap();
        let start = Instant::now();
        let history = read_history(repo.path(), 10);
        assert!(history.note.is_none(), "{:?}", history.note);
        assert!(start.elapsed().as_secs() < 5);
        // .git/info/grafts, which git opens for a log.
        let grafts = git_dir.join("info/grafts");
        std::fs::create_dir_all(grafts.parent().unwrap()).unwrap();
        mkfifo(&grafts);
        let note = read_history(repo.path(), 10).note.unwrap();
        assert!(note.contains(".git/info/grafts is a FIFO"), "{note}");
        std::fs::remove_file(&grafts).unwrap();
        std::fs::remove_file(tags.join("loop")).unwrap();

        // A FIFO git opens, were it not checked first: stopped at the timeout.
        std::fs::remove_file(git_dir.join(branch)).unwrap();
        mkfifo(&git_dir.join(branch));
        let err = run_log(&git_dir, 10, Duration::from_millis(500)).unwrap_err();
        assert!(
            err.contains("took more than 0.5 s and was stopped"),
            "{err}"
        );
    }

    #[test]
    fn parses_a_log_cut_short() {
        let text = "\u{0}Subject one\n\u{1}\na.py\nb/c.py\n\n\u{0}Two\n\nbody\n\u{1}\n";
        let commits = parse_log(text);
        assert_eq!(commits.len(), 2);
        assert_eq!(commits[0].files, vec!["a.py", "b/c.py"]);
        assert_eq!(commits[1].message, "Two\n\nbody");
        assert!(commits[1].files.is_empty());
        assert!(parse_log("no marks").is_empty());
    }
}
