//! Bounded reads of user files: a regular file only (a FIFO, device or socket is refused before
//! anything could block on it), opened without blocking and checked again on the open handle,
//! and never more than a stated number of bytes (past it, an error names the bound).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek};
use std::path::Path;

use super::confine::confine;
use crate::error::{Error, Result};

/// The most bytes read from a dataset, prediction, localization or report file, a cassette or
/// a batch output being resumed.
pub const MAX_DATA_FILE_BYTES: u64 = 1 << 30;
/// The most bytes read from an issue or a request.
pub const MAX_ISSUE_BYTES: u64 = 16 << 20;
/// The most bytes read from a small file: an ignore file (`.gitignore`, `.ignore`,
/// `.git/info/exclude`), a prompt override, an LLM profile, a price table, the embedding
/// model's JSON configuration files, an embedding cache entry, a stored vector index's manifest,
/// and the first window of a repository's README (the agent's `view_readme` tool).
pub const MAX_SMALL_FILE_BYTES: u64 = 1 << 20;

/// `O_NONBLOCK`: opening a FIFO with it never waits for a writer.
#[cfg(target_os = "linux")]
pub(super) const O_NONBLOCK: i32 = 0o4000;
#[cfg(target_os = "macos")]
pub(super) const O_NONBLOCK: i32 = 0x0004;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(super) const O_NONBLOCK: i32 = 0;

/// Why a bounded read failed.
#[derive(Debug)]
pub enum ReadFailure {
    /// The path is not a regular file (a FIFO, socket, device or directory).
    NotRegular(&'static str),
    /// The file holds more than the bound.
    TooLarge {
        /// The bound, in bytes.
        limit: u64,
    },
    /// Opening or reading failed.
    Io(std::io::Error),
}

impl ReadFailure {
    /// The core error for a file given by the user: bad input for a missing, special or
    /// oversized file, an I/O error otherwise (a permission or device failure).
    pub fn into_error(self, path: &Path, what: &str) -> Error {
        match self {
            ReadFailure::Io(source) if is_missing(&source) => {
                Error::InvalidInput(format!("{what} {} does not exist", path.display()))
            }
            ReadFailure::Io(source) => Error::io(path, source),
            failure => {
                Error::InvalidInput(format!("{what} {} {}", path.display(), failure.reason()))
            }
        }
    }

    /// What is wrong with the file, to follow its path: "is a FIFO, not a regular file".
    pub fn reason(&self) -> String {
        match self {
            ReadFailure::NotRegular(kind) => format!("is a {kind}, not a regular file"),
            ReadFailure::TooLarge { limit } => format!(
                "is larger than {} (the most blagent reads)",
                human_bytes(*limit)
            ),
            ReadFailure::Io(source) => format!("cannot be read: {source}"),
        }
    }

    /// Whether the file does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadFailure::Io(e) if e.kind() == std::io::ErrorKind::NotFound)
    }
}

/// Checks that `path`, a folder the user named (`what`: "prompts folder"), is one: bad input
/// saying what it is instead (missing, a file, a FIFO, a device), an I/O error where it cannot
/// be looked at.
pub fn user_folder(path: &Path, what: &str) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(meta) => Err(Error::InvalidInput(format!(
            "{what} {} is a {}, not a folder",
            path.display(),
            if meta.is_file() {
                "file"
            } else {
                kind_name(meta.file_type())
            }
        ))),
        Err(e) if is_missing(&e) => Err(Error::InvalidInput(format!(
            "{what} {} does not exist",
            path.display()
        ))),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Whether an error says that a path does not exist (itself, or a folder on the way, or a
/// file where a folder on the way should be): the user named something that is not there.
pub fn is_missing(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

/// `1 GiB`, `16 MiB`, `512 KiB`, `10 bytes`.
pub fn human_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

pub(crate) fn kind_name(file_type: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "FIFO";
        }
        if file_type.is_socket() {
            return "socket";
        }
        if file_type.is_char_device() || file_type.is_block_device() {
            return "device";
        }
    }
    if file_type.is_dir() {
        "directory"
    } else {
        "special file"
    }
}

/// Whether `a` and `b` are the same file (device and inode; never on other systems).
#[cfg(unix)]
pub(crate) fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
pub(crate) fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    false
}

/// Opens `path` (following symlinks) for reading if it is a regular file, without blocking on
/// a FIFO; the file type is checked on the open handle, so a file swapped after the check is
/// refused too.
pub fn open_regular(path: &Path) -> std::result::Result<File, ReadFailure> {
    open_regular_as(path, true)
}

/// [`open_regular`], a symbolic link refused where `follow` is false.
fn open_regular_as(path: &Path, follow: bool) -> std::result::Result<File, ReadFailure> {
    let meta = if follow {
        std::fs::metadata(path)
    } else {
        std::fs::symlink_metadata(path)
    }
    .map_err(ReadFailure::Io)?;
    if !meta.is_file() {
        return Err(ReadFailure::NotRegular(kind_name(meta.file_type())));
    }
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let no_follow = if follow { 0 } else { libc::O_NOFOLLOW };
        options.custom_flags(O_NONBLOCK | no_follow);
    }
    let file = options.open(path).map_err(ReadFailure::Io)?;
    let meta = file.metadata().map_err(ReadFailure::Io)?;
    if !meta.is_file() {
        return Err(ReadFailure::NotRegular(kind_name(meta.file_type())));
    }
    Ok(file)
}

/// The bytes of the regular file `path`, at most `limit` of them (more is an error).
pub fn read_bounded(path: &Path, limit: u64) -> std::result::Result<Vec<u8>, ReadFailure> {
    read_open_bounded(&open_regular(path)?, limit)
}

/// [`read_bounded`] for a file blagent wrote in its own folders (a cache entry, a stored
/// index): a symbolic link there is not blagent's and is not followed (a review: an entry
/// linked to a user's file had that file read).
pub fn read_own_bounded(path: &Path, limit: u64) -> std::result::Result<Vec<u8>, ReadFailure> {
    read_open_bounded(&open_regular_as(path, false)?, limit)
}

/// The bytes of the open file `file` from its start, at most `limit` of them (more is an
/// error): for a file already opened and checked, so that what is read is what was checked.
pub fn read_open_bounded(file: &File, limit: u64) -> std::result::Result<Vec<u8>, ReadFailure> {
    let mut reader = file;
    reader
        .seek(std::io::SeekFrom::Start(0))
        .map_err(ReadFailure::Io)?;
    // A file that says it is larger is refused before any of it is read (a review: a 2 GiB
    // file was read up to the limit, its buffer doubled by the byte past it, 2 GiB held).
    let size = file.metadata().map_or(0, |m| m.len());
    if size > limit {
        return Err(ReadFailure::TooLarge { limit });
    }
    // Room for the whole file at once: growing by doubling would hold up to twice its size.
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadFailure::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadFailure::TooLarge { limit });
    }
    Ok(bytes)
}

/// [`read_bounded`] for a file the user named (`what`: "dataset", "issue file", …); failures
/// are core errors naming the file ([`ReadFailure::into_error`]).
pub fn read_user_bytes(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>> {
    read_bounded(path, limit).map_err(|f| f.into_error(path, what))
}

/// [`read_user_bytes`] as UTF-8 text.
pub fn read_user_text(path: &Path, limit: u64, what: &str) -> Result<String> {
    let bytes = read_user_bytes(path, limit, what)?;
    String::from_utf8(bytes).map_err(|e| {
        Error::InvalidInput(format!(
            "{what} {} is not UTF-8 (byte {})",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

/// [`read_user_text`] for a file of JSON (or JSON lines), refusing one that opens with a byte
/// order mark, which JSON does not allow: `serde_json`'s own word for it was "expected value at
/// line 1 column 1".
pub fn read_user_json(path: &Path, limit: u64, what: &str) -> Result<String> {
    let text = read_user_text(path, limit, what)?;
    if text.starts_with('\u{feff}') {
        return Err(Error::InvalidInput(format!(
            "{what} {} opens with a UTF-8 byte order mark (BOM), which JSON does not allow: \
             save it without one",
            path.display()
        )));
    }
    Ok(text)
}

/// The bytes of `rel` (a `/`-separated relative path) under `root`, when it names a regular
/// file of at most `limit` bytes that lies inside `root` once symlinks are resolved
/// ([`super::confine`]); `None` otherwise (absolute paths, `..`, links leading out, special
/// files).
pub fn read_inside(root: &Path, rel: &str, limit: u64) -> Option<Vec<u8>> {
    read_inside_or_why(root, rel, limit).ok().flatten()
}

/// [`read_inside`], telling a file that is not there (`Ok(None)`: nothing at `rel`, or only
/// outside `root`) from one that is but cannot be read (a special file, one over `limit`, an
/// I/O error).
pub fn read_inside_or_why(
    root: &Path,
    rel: &str,
    limit: u64,
) -> std::result::Result<Option<Vec<u8>>, ReadFailure> {
    let Some(path) = std::fs::canonicalize(root)
        .ok()
        .and_then(|root| confine(&root, rel).ok())
    else {
        return Ok(None);
    };
    match read_bounded(&path, limit) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(ReadFailure::Io(e)) if is_missing(&e) => Ok(None),
        Err(failure) => Err(failure),
    }
}

/// Makes a FIFO at `path` (tests of what refuses special files).
#[cfg(all(test, unix))]
pub(crate) fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status();
    assert!(made.unwrap().success(), "mkfifo {}", path.display());
}

/// Whether this machine has `/dev/zero` as a device: tests that point at it skip that part
/// where it is missing.
#[cfg(all(test, unix))]
pub(crate) fn has_dev_zero() -> bool {
    std::fs::metadata("/dev/zero").is_ok_and(|m| !m.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_regular_files_within_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, b"hello").unwrap();
        assert_eq!(read_bounded(&path, 5).unwrap(), b"hello");
        assert!(matches!(
            read_bounded(&path, 4),
            Err(ReadFailure::TooLarge { limit: 4 })
        ));
        assert!(read_bounded(&dir.path().join("absent"), 5)
            .unwrap_err()
            .is_not_found());
        let err = read_user_text(dir.path(), 5, "dataset").unwrap_err();
        assert!(
            err.is_input_error() && err.to_string().contains("directory"),
            "{err}"
        );
    }

    /// Found by a review: a dataset saved with a byte order mark was "expected value at line 1
    /// column 1"; JSON inputs now name the mark (an issue's text keeps it, as text).
    #[test]
    fn a_json_file_opening_with_a_byte_order_mark_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("d.jsonl");
        std::fs::write(&file, "\u{feff}{\"instance_id\": \"a\"}\n").unwrap();
        let err = read_user_json(&file, 1 << 10, "dataset").unwrap_err();
        assert!(err.is_input_error(), "{err:?}");
        assert!(err.to_string().contains("byte order mark (BOM)"), "{err}");
        assert!(read_user_text(&file, 1 << 10, "issue").is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn a_missing_file_is_bad_input_and_an_unreadable_one_an_io_error() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        std::fs::write(&file, b"x").unwrap();
        for missing in [dir.path().join("absent"), file.join("below")] {
            let err = read_user_text(&missing, 5, "cassette").unwrap_err();
            assert!(err.is_input_error(), "{err:?}");
            assert!(err.to_string().contains("does not exist"), "{err}");
        }
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
        if std::fs::read(&file).is_err() {
            // Not root: the file exists but cannot be read, which stays an I/O error.
            let err = read_user_text(&file, 5, "cassette").unwrap_err();
            assert_eq!(err.kind(), crate::error::ErrorKind::Io, "{err:?}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn devices_and_fifos_are_refused_without_blocking() {
        // A device where the machine has one; the FIFO below needs none.
        if has_dev_zero() {
            let err = read_user_text(Path::new("/dev/zero"), 1 << 20, "dataset").unwrap_err();
            assert!(err.is_input_error(), "{err}");
            assert!(err.to_string().contains("device"), "{err}");
        }
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let err = read_user_text(&fifo, 10, "issue").unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn reads_inside_a_root_only() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"s").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("a/f.py"), b"x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("leak")).unwrap();
        let read = |rel| read_inside(dir.path(), rel, 10);
        assert_eq!(read("a/f.py").as_deref(), Some(&b"x"[..]));
        for bad in ["leak", "../x", "a/../../x", "/etc/passwd", ""] {
            assert!(read(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn bounds_read_in_units() {
        assert_eq!(human_bytes(MAX_DATA_FILE_BYTES), "1 GiB");
        assert_eq!(human_bytes(MAX_ISSUE_BYTES), "16 MiB");
        assert_eq!(human_bytes(10), "10 bytes");
    }
}
