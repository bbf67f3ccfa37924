//! Walking a repository: `.gitignore`-aware (the `ignore` crate), deterministic, and explicit
//! about every source file it leaves out.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use ignore::WalkBuilder;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::ignores::Ignores;
use super::lang::{is_test_entry, language_for_path, language_named, Language, LANGUAGES};
use super::read::{open_regular, read_open_bounded, same_file, ReadFailure};
use super::skipped::{SkipReason, Skipped};
use crate::error::{Error, Result};

/// How many leading bytes are checked for NUL to call a file binary (git uses the same idea).
const BINARY_SNIFF_BYTES: usize = 8000;

/// Options of [`walk`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WalkOptions {
    /// Keep test files. By default they are excluded: Agentless's rule (any path component
    /// starting with `test`) and each ecosystem's own ([`is_test_entry`]).
    pub include_tests: bool,
    /// The languages to index, by name (`python`, `java`, `kotlin`); empty indexes every
    /// language of the table that the repository has.
    pub languages: Vec<String>,
    /// Files larger than this many bytes are skipped (generated tables, vendored bundles).
    pub max_file_bytes: u64,
}

/// [`WalkOptions::max_file_bytes`] unless set: the largest source file blagent reads.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

impl Default for WalkOptions {
    fn default() -> Self {
        WalkOptions {
            include_tests: false,
            languages: Vec::new(),
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
        }
    }
}

/// A source file selected by the walk.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Repository-relative path with `/` separators.
    pub path: String,
    /// Its language.
    pub language: &'static Language,
    /// Its text; invalid UTF-8 sequences were replaced by U+FFFD when `lossy` is set.
    pub text: String,
    /// Whether the file was not valid UTF-8 and was decoded lossily.
    pub lossy: bool,
}

impl SourceFile {
    /// A file of `language` holding `text`, with a newline added at its end where the text
    /// has none and the language's grammar needs one ([`Language::final_newline`]), and each
    /// carriage return that ends a line on its own (classic Mac OS line ends) made a newline:
    /// Python, Java and Kotlin count such a CR as a line end, tree-sitter and every line count
    /// here only `\n`. Byte offsets are the text's as read; where git's line numbers (which
    /// count only `\n`) meet these, [`git_lines`] maps one to the other.
    pub fn new(path: String, language: &'static Language, mut text: String, lossy: bool) -> Self {
        if text.contains('\r') {
            text = lone_carriage_returns_as_newlines(text);
        }
        if language.lacks_final_newline(&text) {
            text.push('\n');
        }
        SourceFile {
            path,
            language,
            text,
            lossy,
        }
    }
}

/// Whether `bytes[i]` is a carriage return that ends a line on its own (no `\n` after it).
fn lone_carriage_return(bytes: &[u8], i: usize) -> bool {
    bytes[i] == b'\r' && bytes.get(i + 1) != Some(&b'\n')
}

/// Whether `bytes` holds a carriage return that ends a line on its own.
fn has_lone_carriage_return(bytes: &[u8]) -> bool {
    (0..bytes.len()).any(|i| lone_carriage_return(bytes, i))
}

/// `text` with every `\r` not followed by `\n` replaced by `\n` (one byte for one, so every
/// offset holds); a CRLF stays as it is, and a text with none (CRLF line ends) is returned
/// as it came, not copied.
fn lone_carriage_returns_as_newlines(text: String) -> String {
    if !has_lone_carriage_return(text.as_bytes()) {
        return text;
    }
    let mut bytes = text.into_bytes();
    for i in 0..bytes.len() {
        if lone_carriage_return(&bytes, i) {
            bytes[i] = b'\n';
        }
    }
    // Only ASCII bytes changed, each for another ASCII byte: the text is still UTF-8.
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// For a text holding a carriage return that ends a line on its own, the line as git counts
/// it (by `\n` only, as patches number lines) of each line as [`SourceFile::new`] counts it:
/// entry `k` is git's line of line `k + 1`. `None` when the two counts agree.
pub fn git_lines(text: &str) -> Option<Vec<usize>> {
    let bytes = text.as_bytes();
    if !has_lone_carriage_return(bytes) {
        return None;
    }
    let mut git = 1;
    let mut lines = vec![1];
    for (i, &byte) in bytes.iter().enumerate() {
        if byte == b'\n' {
            git += 1;
            lines.push(git);
        } else if lone_carriage_return(bytes, i) {
            lines.push(git);
        }
    }
    Some(lines)
}

/// What [`walk`] found.
#[derive(Debug, Default)]
pub struct WalkOutput {
    /// The repository root, canonicalized.
    pub root: PathBuf,
    /// Selected source files, sorted by path.
    pub files: Vec<SourceFile>,
    /// Left-out files and directories, sorted by path.
    pub skipped: Vec<Skipped>,
    /// Build modules: folders below the root holding a Gradle or Maven build file, sorted.
    pub modules: Vec<String>,
}

/// Build files that make their folder a module (Gradle, Maven).
const BUILD_FILES: &[&str] = &["build.gradle", "build.gradle.kts", "pom.xml"];

/// Whether a repository-relative path is a test path: some component is a test directory or
/// the file is a test file ([`is_test_entry`]).
pub fn is_test_path(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    parts.iter().enumerate().any(|(i, part)| {
        let is_dir = i + 1 < parts.len();
        is_test_entry(part, is_dir, i.checked_sub(1).map(|p| parts[p]))
    })
}

/// The languages `names` select; every language when empty. An unknown name is an error.
fn selected_languages(names: &[String]) -> Result<Vec<&'static Language>> {
    if names.is_empty() {
        return Ok(LANGUAGES.to_vec());
    }
    names
        .iter()
        .map(|name| {
            language_named(name).ok_or_else(|| {
                let known: Vec<&str> = LANGUAGES.iter().map(|l| l.name).collect();
                Error::InvalidInput(format!(
                    "unknown language `{name}` (known: {})",
                    known.join(", ")
                ))
            })
        })
        .collect()
}

/// Lists and reads the source files under `root`.
pub fn walk(root: &Path, options: &WalkOptions) -> Result<WalkOutput> {
    let languages = selected_languages(&options.languages)?;
    let root = canonical_root(root)?;
    let test_skips = Arc::new(Mutex::new(Vec::new()));
    // Ignore files are read by `Ignores` (bounded, regular files inside the repository only),
    // never by the `ignore` crate, which would block on a FIFO and follow links out.
    let ignores = Arc::new(Ignores::new(&root));
    let builder = walk_builder(&root, options.include_tests, &ignores, &test_skips);
    let mut listing = Listing::default();
    for entry in builder.build() {
        crate::cancel::check()?;
        listing.add(&root, &languages, entry);
    }

    let Listing {
        candidates,
        mut modules,
        skipped: mut own_skips,
    } = listing;
    let (files, read_skips) = read_sources(candidates, options, &crate::cancel::check)?;
    own_skips.extend(read_skips);
    modules.sort();
    modules.dedup();
    let mut skipped =
        std::mem::take(&mut *test_skips.lock().unwrap_or_else(PoisonError::into_inner));
    skipped.extend(own_skips);
    skipped.extend(ignores.take_skipped());
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(WalkOutput {
        root,
        files,
        skipped,
        modules,
    })
}

/// The walker of `root`: hidden files and what `ignores` ignores left out, links not
/// followed, entries in file-name order; without `include_tests`, test files and folders left
/// out too, each recorded in `test_skips`.
fn walk_builder(
    root: &Path,
    include_tests: bool,
    ignores: &Arc<Ignores>,
    test_skips: &Arc<Mutex<Vec<Skipped>>>,
) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(true)
        .git_ignore(false)
        .git_exclude(false)
        .git_global(false)
        .ignore(false)
        .parents(false)
        .follow_links(false)
        .sort_by_file_name(std::cmp::Ord::cmp);
    let (root, test_skips, ignores) = (
        root.to_path_buf(),
        Arc::clone(test_skips),
        Arc::clone(ignores),
    );
    builder
        .filter_entry(move |entry| keep_entry(entry, &root, include_tests, &ignores, &test_skips));
    builder
}

/// Whether the walk keeps `entry` (and, for a folder, enters it): not when `ignores` ignores
/// it, nor, without `include_tests`, when it is a test file or folder ([`is_test_entry`]),
/// which is recorded in `test_skips`.
fn keep_entry(
    entry: &ignore::DirEntry,
    root: &Path,
    include_tests: bool,
    ignores: &Ignores,
    test_skips: &Mutex<Vec<Skipped>>,
) -> bool {
    if entry.depth() == 0 {
        return true;
    }
    let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
    if ignores.is_ignored(entry.path(), is_dir) {
        return false;
    }
    let name = entry.file_name().to_string_lossy();
    let parent = entry
        .path()
        .parent()
        .and_then(Path::file_name)
        .map(|p| p.to_string_lossy());
    if !include_tests && is_test_entry(&name, is_dir, parent.as_deref()) {
        if let Some(rel) = relative(root, entry.path()) {
            test_skips
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Skipped {
                    path: rel,
                    reason: SkipReason::Test,
                });
        }
        return false;
    }
    true
}

/// What the walk lists before reading anything: the source files to read, the build modules,
/// and the entries it leaves out itself.
#[derive(Default)]
struct Listing {
    /// `(absolute path, repository-relative path, language)` of each source file to read.
    candidates: Vec<(PathBuf, String, &'static Language, fs::Metadata)>,
    /// Folders below the root holding a build file ([`BUILD_FILES`]), in walk order.
    modules: Vec<String>,
    /// Unreadable entries, non-UTF-8 paths, links and special files, in walk order.
    skipped: Vec<Skipped>,
}

impl Listing {
    /// Files one entry of the walk: a source file of one of `languages` to read, or why it is
    /// left out; a build file also makes its folder a module. Folders and files of other
    /// languages are passed over.
    fn add(
        &mut self,
        root: &Path,
        languages: &[&'static Language],
        entry: std::result::Result<ignore::DirEntry, ignore::Error>,
    ) {
        let entry = match entry {
            Ok(entry) => entry,
            Err(err) => {
                let path = err_path(&err).unwrap_or_default();
                self.skipped.push(Skipped {
                    path: relative(root, &path).unwrap_or_default(),
                    reason: SkipReason::Unreadable {
                        message: err.to_string(),
                    },
                });
                return;
            }
        };
        let Some(file_type) = entry.file_type() else {
            return;
        };
        if file_type.is_dir() {
            return;
        }
        if BUILD_FILES.iter().any(|b| entry.file_name() == *b) && entry.depth() > 1 {
            if let Some(folder) = entry.path().parent().and_then(|p| relative(root, p)) {
                self.modules.push(folder);
            }
        }
        let Some(rel) = relative(root, entry.path()) else {
            let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
            self.skipped.push(Skipped {
                path: rel.to_string_lossy().replace('\\', "/"),
                reason: SkipReason::NonUtf8Path,
            });
            return;
        };
        let Some(language) =
            language_for_path(&rel).filter(|l| languages.iter().any(|s| std::ptr::eq(*s, *l)))
        else {
            return;
        };
        if file_type.is_symlink() {
            self.skipped.push(Skipped {
                path: rel,
                reason: symlink_reason(root, entry.path()),
            });
            return;
        }
        if !file_type.is_file() {
            self.skipped.push(Skipped {
                path: rel,
                reason: SkipReason::NotRegularFile,
            });
            return;
        }
        // What the listing saw (`lstat`): the file read must be this one.
        let listed = match entry.metadata() {
            Ok(listed) => listed,
            Err(err) => {
                self.skipped.push(Skipped {
                    path: rel,
                    reason: SkipReason::Unreadable {
                        message: err.to_string(),
                    },
                });
                return;
            }
        };
        self.candidates
            .push((entry.into_path(), rel, language, listed));
    }
}

/// Reads the listed source files in parallel: those read and those left out while reading,
/// each in listing order. `stop` (Ctrl-C's [`crate::cancel::check`]) is asked before each
/// file, since reading 200,000 files takes seconds (a review heard Ctrl-C 2.3 s late).
fn read_sources(
    candidates: Vec<(PathBuf, String, &'static Language, fs::Metadata)>,
    options: &WalkOptions,
    stop: &(dyn Fn() -> Result<()> + Sync),
) -> Result<(Vec<SourceFile>, Vec<Skipped>)> {
    let read: Vec<std::result::Result<SourceFile, Skipped>> = candidates
        .into_par_iter()
        .map(|(abs, rel, language, listed)| {
            stop()?;
            Ok(read_source(&abs, &listed, rel, language, options))
        })
        .collect::<Result<_>>()?;
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for item in read {
        match item {
            Ok(file) => files.push(file),
            Err(skip) => skipped.push(skip),
        }
    }
    Ok((files, skipped))
}

/// Canonical form of the repository root, with clear errors for a missing or non-directory path.
fn canonical_root(root: &Path) -> Result<PathBuf> {
    let meta = fs::metadata(root).map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound => Error::RepoNotFound(root.to_path_buf()),
        _ => Error::io(root, err),
    })?;
    if !meta.is_dir() {
        return Err(Error::NotADirectory(root.to_path_buf()));
    }
    let canonical = fs::canonicalize(root).map_err(|err| Error::io(root, err))?;
    if canonical.parent().is_none() {
        return Err(Error::InvalidInput(format!(
            "refusing to index the filesystem root {} as a repository",
            canonical.display()
        )));
    }
    Ok(canonical)
}

fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
}

fn err_path(err: &ignore::Error) -> Option<PathBuf> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path.clone()),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            err_path(err)
        }
        _ => None,
    }
}

fn symlink_reason(root: &Path, link: &Path) -> SkipReason {
    match fs::canonicalize(link) {
        Err(_) => SkipReason::BrokenSymlink,
        Ok(target) if target.starts_with(root) => SkipReason::SymlinkInside,
        Ok(_) => SkipReason::SymlinkOutside,
    }
}

/// Whether the file `opened` through `abs` (a path under the canonical root, as listed) is a
/// regular file that took the listed one's place at that very path (an editor's save, a
/// checkout: a new inode): the path is not a link now, none of its folders is
/// (`abs` is still its own canonical form), and it names the file opened.
fn replaced_in_place(abs: &Path, opened: &fs::Metadata) -> bool {
    fs::symlink_metadata(abs).is_ok_and(|now| now.is_file() && same_file(&now, opened))
        && fs::canonicalize(abs).is_ok_and(|real| real == abs)
}

/// Reads the listed source `abs`, or says why not: the file opened must be the regular file
/// the listing saw (`listed`, the same device and inode), or one that replaced it at the same
/// path ([`replaced_in_place`]), so a file swapped since for a link (to a file outside the
/// repository, or to a hidden or ignored one inside it), or reached through a folder swapped
/// for a link, is not read.
fn read_source(
    abs: &Path,
    listed: &fs::Metadata,
    path: String,
    language: &'static Language,
    options: &WalkOptions,
) -> std::result::Result<SourceFile, Skipped> {
    let unreadable = |path: String, err: &std::io::Error| Skipped {
        path,
        reason: SkipReason::Unreadable {
            message: err.to_string(),
        },
    };
    let meta = match fs::metadata(abs) {
        Ok(meta) => meta,
        Err(err) => return Err(unreadable(path, &err)),
    };
    if meta.len() > options.max_file_bytes {
        return Err(Skipped {
            path,
            reason: SkipReason::TooLarge { bytes: meta.len() },
        });
    }
    let opened = open_regular(abs).and_then(|file| {
        let is_listed = file
            .metadata()
            .is_ok_and(|opened| same_file(listed, &opened) || replaced_in_place(abs, &opened));
        if is_listed {
            read_open_bounded(&file, options.max_file_bytes).map(Some)
        } else {
            Ok(None)
        }
    });
    let bytes = match opened {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return Err(Skipped {
                path,
                reason: SkipReason::SymlinkOutside,
            })
        }
        Err(ReadFailure::NotRegular(_)) => {
            return Err(Skipped {
                path,
                reason: SkipReason::NotRegularFile,
            })
        }
        Err(ReadFailure::TooLarge { .. }) => {
            return Err(Skipped {
                path,
                reason: SkipReason::TooLarge { bytes: meta.len() },
            })
        }
        Err(ReadFailure::Io(err)) => return Err(unreadable(path, &err)),
    };
    if bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
        return Err(Skipped {
            path,
            reason: SkipReason::Binary,
        });
    }
    let (text, lossy) = match String::from_utf8(bytes) {
        Ok(text) => (text, false),
        Err(err) => (String::from_utf8_lossy(err.as_bytes()).into_owned(), true),
    };
    Ok(SourceFile::new(path, language, text, lossy))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reading stops at the file after a stop is asked for, not after the last file.
    #[test]
    fn reading_the_listed_files_stops_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let language = language_for_path("m.py").unwrap();
        let candidates: Vec<_> = (0..400)
            .map(|i| {
                let path = dir.path().join(format!("m{i}.py"));
                std::fs::write(&path, "def f(): pass\n").unwrap();
                let listed = fs::symlink_metadata(&path).unwrap();
                (path, format!("m{i}.py"), language, listed)
            })
            .collect();
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let stop_at_ten = || {
            if asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= 10 {
                Err(Error::Cancelled)
            } else {
                Ok(())
            }
        };
        let options = WalkOptions::default();
        let read = read_sources(candidates.clone(), &options, &stop_at_ten);
        assert!(matches!(read, Err(Error::Cancelled)), "{read:?}");
        // Rayon stops handing out files once one is cancelled: far fewer than 400 are asked.
        assert!(asked.load(std::sync::atomic::Ordering::SeqCst) < 200);
        let (files, skipped) = read_sources(candidates, &options, &|| Ok(())).unwrap();
        assert_eq!((files.len(), skipped.len()), (400, 0));
    }

    /// Found by reviews: a source swapped, between the listing and the read, for a link leaving
    /// the repository (1 run in 6 with a loop swapping it), or for a link to a hidden file inside
    /// it (4 runs in 30), was read under the listed name. Only the file the listing saw is read.
    #[cfg(unix)]
    #[test]
    fn only_the_file_the_listing_saw_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("pkg")).unwrap();
        let outside = dir.path().join("secret.py");
        std::fs::write(&outside, "def secret_outside(): pass\n").unwrap();
        let hidden = root.join(".env.py");
        std::fs::write(&hidden, "def leaked_hidden(): pass\n").unwrap();
        let path = root.join("pkg/z.py");
        std::fs::write(&path, "def z(): pass\n").unwrap();
        let language = language_for_path("pkg/z.py").unwrap();
        let options = WalkOptions::default();
        let read = |listed: &fs::Metadata| {
            read_source(&path, listed, "pkg/z.py".to_owned(), language, &options)
        };
        let listed = fs::symlink_metadata(&path).unwrap();
        assert!(read(&listed).is_ok());
        for target in [&outside, &hidden] {
            fs::remove_file(&path).unwrap();
            std::os::unix::fs::symlink(target, &path).unwrap();
            let skipped = read(&listed).expect_err("swapped for a link");
            assert_eq!(skipped.reason, SkipReason::SymlinkOutside);
        }
        // Replaced by a regular file at the same path (an editor's save by rename): read.
        fs::remove_file(&path).unwrap();
        std::fs::write(&path, "def z(): pass\n").unwrap();
        assert!(read(&listed).is_ok());
        // Reached through a folder swapped for a link to a hidden folder holding another
        // `z.py`: not read.
        let elsewhere = root.join(".hidden");
        fs::create_dir(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("z.py"), "def leaked(): pass\n").unwrap();
        let listed = fs::symlink_metadata(&path).unwrap();
        fs::rename(root.join("pkg"), root.join("old")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("pkg")).unwrap();
        assert!(read(&listed).is_err());
    }

    fn write(root: &Path, rel: &str, bytes: &[u8]) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    }

    fn paths(out: &WalkOutput) -> Vec<&str> {
        out.files.iter().map(|f| f.path.as_str()).collect()
    }

    #[test]
    fn selects_sources_excludes_tests_and_reports_skips() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "pkg/b.py", b"x = 1\n");
        write(root, "pkg/a.py", b"y = 2\n");
        write(root, "pkg/README.md", b"docs\n");
        write(root, "pkg/tests/test_a.py", b"def test(): pass\n");
        write(root, "testing/util.py", b"z = 3\n");
        write(root, "pkg/blob.py", b"ab\x00cd");
        write(root, "pkg/latin.py", b"s = '\xe9'\n");
        write(root, "pkg/big.py", &vec![b'#'; 300]);
        write(root, "build/gen.py", b"w = 4\n");
        write(root, ".gitignore", b"build/\n");
        let options = WalkOptions {
            max_file_bytes: 200,
            ..WalkOptions::default()
        };
        let out = walk(root, &options).unwrap();
        assert_eq!(paths(&out), ["pkg/a.py", "pkg/b.py", "pkg/latin.py"]);
        assert!(out.files[2].lossy);
        assert_eq!(out.files[2].text, "s = '\u{fffd}'\n");
        let skipped: Vec<(&str, &SkipReason)> = out
            .skipped
            .iter()
            .map(|s| (s.path.as_str(), &s.reason))
            .collect();
        assert_eq!(
            skipped,
            [
                ("pkg/big.py", &SkipReason::TooLarge { bytes: 300 }),
                ("pkg/blob.py", &SkipReason::Binary),
                ("pkg/tests", &SkipReason::Test),
                ("testing", &SkipReason::Test),
            ]
        );
    }

    #[test]
    fn tests_included_on_request() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "tests/test_a.py", b"x = 1\n");
        let options = WalkOptions {
            include_tests: true,
            ..WalkOptions::default()
        };
        assert_eq!(
            paths(&walk(dir.path(), &options).unwrap()),
            ["tests/test_a.py"]
        );
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_leaving_the_repository_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "secret.py", b"password = 1\n");
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "real.py", b"x = 1\n");
        std::os::unix::fs::symlink(outside.path().join("secret.py"), dir.path().join("leak.py"))
            .unwrap();
        std::os::unix::fs::symlink(dir.path().join("real.py"), dir.path().join("alias.py"))
            .unwrap();
        std::os::unix::fs::symlink(dir.path().join("gone.py"), dir.path().join("dangling.py"))
            .unwrap();
        let out = walk(dir.path(), &WalkOptions::default()).unwrap();
        assert_eq!(paths(&out), ["real.py"]);
        let reasons: Vec<_> = out
            .skipped
            .iter()
            .map(|s| (s.path.as_str(), &s.reason))
            .collect();
        assert_eq!(
            reasons,
            [
                ("alias.py", &SkipReason::SymlinkInside),
                ("dangling.py", &SkipReason::BrokenSymlink),
                ("leak.py", &SkipReason::SymlinkOutside),
            ]
        );
    }

    #[test]
    fn missing_and_non_directory_roots_are_input_errors() {
        let dir = tempfile::tempdir().unwrap();
        let err = walk(&dir.path().join("nope"), &WalkOptions::default()).unwrap_err();
        assert!(matches!(err, Error::RepoNotFound(_)));
        write(dir.path(), "f.py", b"");
        let err = walk(&dir.path().join("f.py"), &WalkOptions::default()).unwrap_err();
        assert!(matches!(err, Error::NotADirectory(_)));
        assert!(err.is_input_error());
    }

    #[test]
    fn agentless_test_rule_and_the_jvm_ecosystems() {
        assert!(is_test_path("pkg/tests/x.py"));
        assert!(is_test_path("testing/x.py"));
        assert!(is_test_path("pkg/test_x.py"));
        assert!(!is_test_path("pkg/contest.py"));
        assert!(is_test_path("core/src/test/java/a/B.java"));
        assert!(is_test_path("app/src/androidTest/kotlin/a/B.kt"));
        assert!(is_test_path("lib/src/commonTest/kotlin/a/B.kt"));
        assert!(is_test_path("core/src/main/java/a/BTest.java"));
        assert!(!is_test_path("core/src/main/java/a/Latest.java"));
        assert!(!is_test_path("lib/src/commonMain/kotlin/a/B.kt"));
    }

    #[test]
    fn mixed_repositories_walk_every_language_or_the_chosen_ones() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "tool.py", b"x = 1\n");
        write(
            dir.path(),
            "core/src/main/java/a/Shop.java",
            b"package a;\nclass Shop {}\n",
        );
        write(
            dir.path(),
            "core/src/main/java/a/ShopTest.java",
            b"package a;\n",
        );
        write(
            dir.path(),
            "core/src/test/java/a/ShopIT.java",
            b"package a;\n",
        );
        write(dir.path(), "app/src/main/kotlin/a/Cart.kt", b"package a\n");
        write(
            dir.path(),
            "app/src/androidTest/kotlin/a/CartUi.kt",
            b"package a\n",
        );
        write(
            dir.path(),
            "app/src/main/kotlin/a/CartSpec.kt",
            b"package a\n",
        );
        let out = walk(dir.path(), &WalkOptions::default()).unwrap();
        assert_eq!(
            paths(&out),
            [
                "app/src/main/kotlin/a/Cart.kt",
                "core/src/main/java/a/Shop.java",
                "tool.py"
            ]
        );
        let tests: Vec<&str> = out
            .skipped
            .iter()
            .filter(|s| s.reason == SkipReason::Test)
            .map(|s| s.path.as_str())
            .collect();
        assert_eq!(
            tests,
            [
                "app/src/androidTest",
                "app/src/main/kotlin/a/CartSpec.kt",
                "core/src/main/java/a/ShopTest.java",
                "core/src/test",
            ]
        );
        write(dir.path(), "core/build.gradle.kts", b"plugins {}\n");
        write(dir.path(), "app/pom.xml", b"<project/>\n");
        write(dir.path(), "pom.xml", b"<project/>\n");
        assert_eq!(
            walk(dir.path(), &WalkOptions::default()).unwrap().modules,
            ["app", "core"]
        );
        let jvm = WalkOptions {
            languages: vec!["java".into(), "Kotlin".into()],
            ..WalkOptions::default()
        };
        assert_eq!(
            paths(&walk(dir.path(), &jvm).unwrap()),
            [
                "app/src/main/kotlin/a/Cart.kt",
                "core/src/main/java/a/Shop.java"
            ]
        );
        let unknown = WalkOptions {
            languages: vec!["scala".into()],
            ..WalkOptions::default()
        };
        let err = walk(dir.path(), &unknown).unwrap_err();
        assert!(err.is_input_error() && err.to_string().contains("unknown language `scala`"));
    }
}
