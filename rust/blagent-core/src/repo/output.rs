//! Opening a file blagent writes: never an input of the run, never a special file, never a file
//! another run is writing, and an existing file is replaced only when it holds what blagent
//! writes there. Nothing is created before every check has passed, and a file a run replaces
//! keeps what it held until the run [commits](Output::commit) what it wrote.

use std::fs::{File, OpenOptions};
use std::ops::{Deref, DerefMut};
use std::path::{Component, Path, PathBuf};

use super::read::{kind_name, read_bounded, same_file, MAX_DATA_FILE_BYTES};
use crate::error::{Error, Result};

/// How an output is opened, and what it may already hold: an existing file is written only
/// when it is empty or holds what blagent writes there, so a user's file named by mistake is
/// refused, never appended to or overwritten.
#[derive(Debug, Clone, Copy)]
pub struct OutputMode {
    /// Appended to (a batch output, a cassette) rather than emptied and written anew.
    pub append: bool,
    /// What the output holds, for the refusal's message ("predictions (JSONL)").
    pub holds: &'static str,
    /// Whether bytes already in the file are such an output.
    pub is_ours: fn(&[u8]) -> bool,
}

/// What a run reads: an output may be none of these files, nor lie under these folders.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    files: Vec<PathBuf>,
    folders: Vec<PathBuf>,
    /// The device and inode of each folder of `folders` that exists, found once.
    folder_ids: std::sync::OnceLock<Vec<(u64, u64)>>,
}

impl Inputs {
    /// No inputs named.
    pub fn new() -> Self {
        Inputs::default()
    }

    /// Adds an input file (a dataset, a cassette, a query file); `None` adds nothing.
    #[must_use]
    pub fn file<P: AsRef<Path>>(mut self, path: Option<P>) -> Self {
        self.files.extend(path.map(|p| p.as_ref().to_path_buf()));
        self
    }

    /// Adds folders whose contents are inputs (each instance's tree).
    #[must_use]
    pub fn folders<P: AsRef<Path>>(mut self, paths: impl IntoIterator<Item = P>) -> Self {
        self.folders
            .extend(paths.into_iter().map(|p| p.as_ref().to_path_buf()));
        self.folder_ids = std::sync::OnceLock::new();
        self
    }

    /// Adds a folder whose contents are inputs (the trees folder, a repository).
    #[must_use]
    pub fn folder<P: AsRef<Path>>(self, path: Option<P>) -> Self {
        self.folders(path)
    }

    /// Whether `folder` (an existing folder's metadata) is one of the input folders, by device
    /// and inode: so the same folder is found under a name none of its paths has (a bind
    /// mount).
    fn folder_holding(&self, folder: &std::fs::Metadata) -> bool {
        let ids = self.folder_ids.get_or_init(|| {
            self.folders
                .iter()
                .filter_map(|f| std::fs::metadata(f).ok())
                .filter_map(|m| file_id(&m))
                .collect()
        });
        file_id(folder).is_some_and(|id| ids.contains(&id))
    }
}

/// A file's device and inode, where the system has them.
#[cfg(unix)]
#[allow(clippy::unnecessary_wraps)] // `None` where the system has no inodes (below)
fn file_id(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn file_id(_: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// Opens `path` for writing (its folder created when missing), locked for the life of the
/// returned handle. Refused as bad input: whatever [`check_output`] refuses, and a file
/// another process holds open through this function. With [`OutputMode::append`] it is
/// written in place; without, it is replaced at [`Output::commit`].
pub fn open_output(path: &Path, mode: OutputMode, inputs: &Inputs, what: &str) -> Result<Output> {
    let mut opened = open_outputs(&[(path, mode, what)], inputs)?;
    Ok(opened.remove(0))
}

/// An output a run writes. One appended to (a batch's lines, a cassette) is written in place,
/// each write as it comes. One replaced (predictions, a profile, an analysis) is written to a
/// new file beside it, which takes its place at [`Output::commit`]: a run that stops before,
/// refused, failed, interrupted or out of disk space, leaves the file as it was (and one it
/// created to hold the lock is removed again). Writes go to the open file ([`Deref`] to it).
#[derive(Debug)]
pub struct Output {
    /// The file written: the output itself, or the new file that is to replace it.
    file: File,
    /// The output as the user named it, for messages.
    path: PathBuf,
    replacing: Option<Replacement>,
    /// Written in place although replaced ([`Output::replacing`]'s fallback): emptied at the
    /// first write (or the commit), so a run refused before keeps what it held.
    empty_first: bool,
    /// An appended output this run created: removed when the run ends with nothing written to
    /// it (interrupted before its first line, or every instance failed), as a file created
    /// only to hold the lock.
    created: bool,
    /// The folders this run created to hold its outputs, deepest first: removed again, where
    /// still empty, when the run ends without them (interrupted or failed before any line, or
    /// refused at the commit).
    folders: Vec<PathBuf>,
}

/// The new files [`Output::replacing`] has made in this process: each gets its own number.
static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// What a replaced [`Output`] replaces once committed.
#[derive(Debug)]
struct Replacement {
    /// The output itself, open and locked until it is replaced, so that another run refuses it.
    target: File,
    /// Its path with links resolved: a link named as the output is written through, not replaced.
    dest: PathBuf,
    /// The new file, in `dest`'s folder (a rename within a file system is atomic).
    temp: PathBuf,
    /// Whether this run created `dest`, empty, to lock it.
    created: bool,
}

impl Output {
    /// Puts what was written in place: for a replaced output, the new file is flushed to disk
    /// and renamed over the old, with the old one's permissions (its owner and group were
    /// given to it when it was made). For one appended to, or written in place, nothing more
    /// is needed.
    pub fn commit(mut self) -> Result<()> {
        let io = |e| Error::io(&self.path, e);
        if std::mem::take(&mut self.empty_first) {
            self.file.set_len(0).map_err(io)?;
        }
        let Some(replacement) = self.replacing.take() else {
            return Ok(());
        };
        self.file.sync_all().map_err(io)?;
        if !replacement.created {
            let old = replacement.target.metadata().map_err(io)?;
            self.file.set_permissions(old.permissions()).map_err(io)?;
        }
        let renamed = std::fs::rename(&replacement.temp, &replacement.dest);
        if renamed.is_err() {
            // Left to `Drop`, which removes the new file (and the one created to lock).
            self.replacing = Some(replacement);
        }
        renamed.map_err(io)
    }

    /// Opens the new file that will replace `target` (the output at `path`, opened and locked
    /// by [`open_output_kept`]; `created` when that created it), beside it under a hidden name
    /// no file has, with the output's owner and group. Where no such file can be made (a
    /// read-only folder, the output alone writable; another user's output, whose owner this
    /// run may not give a file), the output is written in place instead, as before replacing:
    /// emptied at the first write, so a run refused before keeps it, one stopped or failing
    /// after leaves it part-written.
    fn replacing(path: &Path, target: File, created: bool) -> Result<Output> {
        let io = |e| Error::io(path, e);
        let dest = resolve(path).map_err(io)?;
        let Some(folder) = dest.parent() else {
            return Err(Error::InvalidInput(format!(
                "{} names no file to write",
                path.display()
            )));
        };
        let mut attempt = 0u32;
        let (file, temp) = loop {
            let number = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            // Short, so that the longest name an output may have still has one beside it.
            let temp = folder.join(format!(".blagent-{}-{number}.tmp", std::process::id()));
            // `create_new`: never a file or link that is already there.
            let opened = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&temp);
            match opened {
                Ok(file) => break (file, temp),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                    attempt += 1;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::PermissionDenied
                            | std::io::ErrorKind::ReadOnlyFilesystem
                    ) =>
                {
                    return Ok(Output::in_place(path, target, true));
                }
                Err(e) => return Err(Error::io(&temp, e)),
            }
        };
        if !created {
            let old = target.metadata().map_err(io)?;
            if !keep_owner(&file, &old) {
                drop(file);
                let _ = std::fs::remove_file(&temp);
                return Ok(Output::in_place(path, target, true));
            }
        }
        Ok(Output {
            file,
            path: path.to_path_buf(),
            replacing: Some(Replacement {
                target,
                dest,
                temp,
                created,
            }),
            empty_first: false,
            created: false,
            folders: Vec::new(),
        })
    }

    /// `target` (the output at `path`) written in place: appended to, or (`empty_first`)
    /// emptied at the first write.
    fn in_place(path: &Path, target: File, empty_first: bool) -> Output {
        Output {
            file: target,
            path: path.to_path_buf(),
            replacing: None,
            empty_first,
            created: false,
            folders: Vec::new(),
        }
    }
}

/// Gives `new` the owner and group of the file `old` describes where they differ (a run by
/// root over a user's file); false where the system refuses.
#[cfg(unix)]
fn keep_owner(new: &File, old: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(mine) = new.metadata() else {
        return false;
    };
    (mine.uid(), mine.gid()) == (old.uid(), old.gid())
        || std::os::unix::fs::fchown(new, Some(old.uid()), Some(old.gid())).is_ok()
}

#[cfg(not(unix))]
fn keep_owner(_: &File, _: &std::fs::Metadata) -> bool {
    true
}

impl Deref for Output {
    type Target = File;

    fn deref(&self) -> &File {
        &self.file
    }
}

impl DerefMut for Output {
    fn deref_mut(&mut self) -> &mut File {
        &mut self.file
    }
}

impl Output {
    /// Appends `line` (one whole line of a JSON lines output) at the end of what is written,
    /// all of it or none: a write that fails part way (a full disk, a file size limit) is
    /// taken back, so the output never ends in a line cut short that its reader would choke
    /// on (an interruption between writes leaves whole lines already).
    pub fn append_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        use std::io::{Seek, SeekFrom, Write};
        if std::mem::take(&mut self.empty_first) {
            self.file.set_len(0)?;
        }
        let start = self.file.seek(SeekFrom::End(0))?;
        let written = self.file.write_all(line).and_then(|()| self.file.flush());
        if written.is_err() {
            let _ = self.file.set_len(start);
            let _ = self.file.seek(SeekFrom::Start(start));
        }
        written
    }
}

impl std::io::Write for Output {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if std::mem::take(&mut self.empty_first) {
            self.file.set_len(0)?;
        }
        self.file.write(bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Drop for Output {
    /// Uncommitted, a replaced output stays as it was: the new file is removed, and so is the
    /// output if this run created it to lock it and it is still that empty file. An appended
    /// output this run created is removed while it is still that empty file.
    /// The folders this run created for it go too where that leaves them empty.
    fn drop(&mut self) {
        if let Some(replacement) = self.replacing.take() {
            let _ = std::fs::remove_file(&replacement.temp);
            if replacement.created {
                remove_if_still_empty(&replacement.target, &replacement.dest);
            }
        } else if self.created {
            remove_if_still_empty(&self.file, &self.path);
        }
        // A folder that holds anything (the output, committed or written to) stays.
        for folder in &self.folders {
            let _ = std::fs::remove_dir(folder);
        }
    }
}

/// Removes `path` where it is still the file `file` has open and still empty: an output this
/// run created and left unwritten (not a file someone put there since, nor one written to).
fn remove_if_still_empty(file: &File, path: &Path) {
    let still_ours = (file.metadata(), std::fs::symlink_metadata(path));
    if matches!(still_ours, (Ok(a), Ok(b)) if same_file(&a, &b) && b.len() == 0) {
        let _ = std::fs::remove_file(path);
    }
}

/// [`open_output`] leaving what the file holds as it is.
/// The folders it creates for `path` are added to `new_folders`.
fn open_output_kept(
    path: &Path,
    mode: OutputMode,
    inputs: &Inputs,
    what: &str,
    new_folders: &mut Vec<PathBuf>,
) -> Result<File> {
    let refuse = refusal(path, what);
    vet(path, inputs, &refuse)?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_folders(parent, new_folders).map_err(|e| Error::io(parent, e))?;
    }
    let mut options = OpenOptions::new();
    options.write(true).create(true);
    // An output appended to is read back through this handle ([`complete_last_line`]).
    options.append(mode.append).read(mode.append);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A FIFO swapped in after the check fails to open instead of blocking.
        options.custom_flags(super::read::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    check_target(&meta, inputs).map_err(&refuse)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(refuse(
                "another blagent run is writing it; wait for that run or choose another file"
                    .to_owned(),
            ))
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(path, e)),
    }
    // Read under the lock: what another run wrote before it let go counts.
    check_content(path, meta.len(), mode, what, &refuse)?;
    Ok(file)
}

/// Opens every output of a run at once: all are checked ([`check_distinct`], [`check_output`])
/// before any is created, all are opened and locked before any is written, and when one fails
/// to open, the files and folders this call created are removed again. So a refusal leaves
/// every file as it was.
pub fn open_outputs(outputs: &[(&Path, OutputMode, &str)], inputs: &Inputs) -> Result<Vec<Output>> {
    open_outputs_checked(outputs, inputs, |_| Ok(()))
}

/// [`open_outputs`], with `check` run on the opened and locked files (in the order of
/// `outputs`) before any is written: what a run must read from an output before it may go on
/// (a batch's resumed lines) refuses it the same way, leaving every file as it was. `check`
/// itself may change only what it has checked.
pub fn open_outputs_checked(
    outputs: &[(&Path, OutputMode, &str)],
    inputs: &Inputs,
    check: impl FnOnce(&mut [File]) -> Result<()>,
) -> Result<Vec<Output>> {
    let named: Vec<(&Path, &str)> = outputs.iter().map(|&(p, _, w)| (p, w)).collect();
    check_distinct(&named)?;
    for &(path, mode, what) in outputs {
        check_output(path, mode, inputs, what)?;
    }
    let mut opened: Vec<File> = Vec::with_capacity(outputs.len());
    // What this call makes, removed again when it is refused: files, and folders (only empty),
    // the folders in the order they were made, each after the one holding it.
    let mut created: Vec<&Path> = Vec::new();
    let mut folders: Vec<PathBuf> = Vec::new();
    let refused = |e: Error, opened: Vec<File>, created: &[&Path], folders: &[PathBuf]| {
        drop(opened);
        for made in created {
            let _ = std::fs::remove_file(made);
        }
        for folder in folders.iter().rev() {
            let _ = std::fs::remove_dir(folder);
        }
        e
    };
    for &(path, mode, what) in outputs {
        let existed = std::fs::symlink_metadata(path).is_ok();
        match open_output_kept(path, mode, inputs, what, &mut folders) {
            Ok(file) => opened.push(file),
            Err(e) => return Err(refused(e, opened, &created, &folders)),
        }
        if !existed {
            created.push(path);
        }
    }
    if let Err(e) = check(&mut opened) {
        return Err(refused(e, opened, &created, &folders));
    }
    let mut ready = Vec::with_capacity(opened.len());
    // Every output tries the folders of all (two may share one), deepest (last made) first:
    // the last output to go removes them.
    let deepest_first: Vec<PathBuf> = folders.iter().rev().cloned().collect();
    for (&(path, mode, _), file) in outputs.iter().zip(opened) {
        let output = if mode.append {
            let mut output = Output::in_place(path, file, false);
            output.created = created.contains(&path);
            Ok(output)
        } else {
            Output::replacing(path, file, created.contains(&path))
        };
        match output {
            Ok(mut output) => {
                output.folders.clone_from(&deepest_first);
                ready.push(output);
            }
            Err(e) => {
                drop(ready);
                return Err(refused(e, Vec::new(), &created, &folders));
            }
        }
    }
    Ok(ready)
}

/// Creates `folder` and the folders above it that are missing, one at a time, and adds to
/// `made` each one this call created, as its canonical path (a path with `..` names, after
/// the folder before it was made, a folder that was there: a review found `new/../keep`, the
/// user's empty `keep`, taken for one this run made and removed; a canonical path also still
/// names the folder after a change of working directory).
fn create_folders(folder: &Path, made: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut prefix = PathBuf::new();
    for part in folder.components() {
        prefix.push(part);
        match std::fs::create_dir(&prefix) {
            Ok(()) => made.push(std::fs::canonicalize(&prefix)?),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            // The root, `.` or `..`, which cannot be made, where they lead to a folder.
            Err(_) if !matches!(part, std::path::Component::Normal(_)) && prefix.is_dir() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Whether [`open_output`] would accept `path`, without creating, locking or changing
/// anything: for a run that writes several outputs, so that all are checked before any is
/// opened. Refused as bad input: an input of `inputs` (the same file under any name) or a path
/// inside an input folder; a FIFO, device, socket or directory; an existing file whose content
/// is not [`OutputMode::is_ours`].
pub fn check_output(path: &Path, mode: OutputMode, inputs: &Inputs, what: &str) -> Result<()> {
    let refuse = refusal(path, what);
    vet(path, inputs, &refuse)?;
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    check_content(path, size, mode, what, &refuse)
}

/// Refuses, as [`check_output`] does for each, two outputs of one run that are the same file
/// (under any name, or not yet created under the same path): one would empty the other.
pub fn check_distinct(outputs: &[(&Path, &str)]) -> Result<()> {
    let mut seen: Vec<(PathBuf, &str)> = Vec::new();
    for &(path, what) in outputs {
        let resolved = resolved(path, &refusal(path, what))?;
        let same = |p: &PathBuf| {
            *p == resolved
                || matches!((std::fs::metadata(p), std::fs::metadata(&resolved)),
                    (Ok(a), Ok(b)) if same_file(&a, &b))
        };
        if let Some((_, first)) = seen.iter().find(|(p, _)| same(p)) {
            return Err(Error::InvalidInput(format!(
                "{first} and {what} are both {}; give each output its own file",
                path.display()
            )));
        }
        seen.push((resolved, what));
    }
    Ok(())
}

/// Whether output `path` lies outside every input folder of `inputs` and is none of its
/// files: [`check_output`] without looking at what the file holds.
pub fn check_place(path: &Path, inputs: &Inputs, what: &str) -> Result<()> {
    vet(path, inputs, &refusal(path, what))
}

/// The refusal of output `path` (named `what` in the message) for a reason.
fn refusal<'a>(path: &'a Path, what: &'a str) -> impl Fn(String) -> Error + 'a {
    move |why| Error::InvalidInput(format!("{what} {}: {why}", path.display()))
}

/// The checks made before anything is created: where `path` resolves (not inside an input
/// folder, not through a dangling link), and what it is now, if it exists.
fn vet(path: &Path, inputs: &Inputs, refuse: &impl Fn(String) -> Error) -> Result<()> {
    if path.as_os_str().is_empty() {
        return Err(refuse("is empty; give a file name".to_owned()));
    }
    let bytes = path.as_os_str().as_encoded_bytes();
    if bytes.ends_with(b"/") || bytes.ends_with(b"/.") || path.file_name().is_none() {
        return Err(refuse("names a folder; give a file name".to_owned()));
    }
    let resolved = outside_inputs(path, inputs, refuse)?;
    if let Ok(meta) = std::fs::metadata(path) {
        check_target(&meta, inputs).map_err(refuse)?;
    }
    // Every folder above it that exists must be a folder: else creating it fails after other
    // outputs were opened.
    for ancestor in resolved.ancestors().skip(1) {
        if let Ok(meta) = std::fs::metadata(ancestor) {
            if !meta.is_dir() {
                return Err(refuse(format!(
                    "{} is not a folder, so nothing can be written under it",
                    ancestor.display()
                )));
            }
            break;
        }
    }
    Ok(())
}

/// Refuses a folder blagent writes into (the embedding cache) that lies inside an input folder
/// of `inputs` (the repository), under any name: [`check_place`] for a folder.
pub fn check_folder_place(folder: &Path, inputs: &Inputs, what: &str) -> Result<()> {
    outside_inputs(folder, inputs, &refusal(folder, what)).map(drop)
}

/// `path` resolved ([`resolve`]), refused where it lies inside an input folder of `inputs`.
fn outside_inputs(
    path: &Path,
    inputs: &Inputs,
    refuse: &impl Fn(String) -> Error,
) -> Result<PathBuf> {
    let resolved = resolved(path, refuse)?;
    // Compared as written (`..` taken lexically) and with symlinks resolved, on both sides: a
    // tree that is a symlink (`trees/a -> checkout`) holds its target's files under either
    // name, and `trees/../x` lies beside the trees, not in them.
    let written = lexical(&std::path::absolute(path).map_err(|e| Error::io(path, e))?);
    for folder in &inputs.folders {
        let names = [std::path::absolute(folder).ok(), folder.canonicalize().ok()];
        for name in names.iter().flatten() {
            if written.starts_with(name) || resolved.starts_with(name) {
                return Err(refuse(format!(
                    "is inside {}, which this run reads; write outputs elsewhere",
                    folder.display()
                )));
            }
        }
    }
    // The same folder under another path (a bind mount of the trees) holds the same files:
    // the path's own folder too, where it exists.
    for ancestor in resolved.ancestors() {
        if std::fs::metadata(ancestor).is_ok_and(|m| m.is_dir() && inputs.folder_holding(&m)) {
            return Err(refuse(format!(
                "is inside {}, which is a folder this run reads under another name; write \
                 outputs elsewhere",
                ancestor.display()
            )));
        }
    }
    Ok(resolved)
}

/// Why the `size` bytes now at `path` may not be written over: they are not what `mode` says
/// blagent writes there.
fn check_content(
    path: &Path,
    size: u64,
    mode: OutputMode,
    what: &str,
    refuse: &impl Fn(String) -> Error,
) -> Result<()> {
    if size == 0 {
        return Ok(());
    }
    let bytes = read_bounded(path, MAX_DATA_FILE_BYTES).map_err(|f| f.into_error(path, what))?;
    if (mode.is_ours)(&bytes) {
        return Ok(());
    }
    let verb = if mode.append {
        "append to"
    } else {
        "overwrite"
    };
    Err(refuse(format!(
        "exists and does not hold {}; refusing to {verb} it (remove it or choose another file)",
        mode.holds
    )))
}

/// [`resolve`] of output `path`, a link whose target is missing refused by `refuse`.
fn resolved(path: &Path, refuse: &impl Fn(String) -> Error) -> Result<PathBuf> {
    resolve(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidInput => refuse(e.to_string()),
        _ => Error::io(path, e),
    })
}

/// `path` with `.` dropped and each `..` taking away the name before it, as written.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `path` made absolute and resolved as the system will once its missing folders exist: each
/// existing component canonicalized (symlinks followed), each missing one kept as written (it
/// will be a plain folder, or the file), and `..` after a missing folder taken as written, so
/// `new/sub/../../trees/x` is seen to lie in `trees` before anything is created. A link whose
/// target is missing is an `InvalidInput` error: writing through it would create the target
/// wherever it points.
fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    let mut out = PathBuf::new();
    for component in std::path::absolute(path)?.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => {
                let next = out.join(other);
                out = match std::fs::symlink_metadata(&next) {
                    Ok(meta) => next.canonicalize().map_err(|e| {
                        if meta.file_type().is_symlink() {
                            std::io::Error::new(
                                std::io::ErrorKind::InvalidInput,
                                format!(
                                    "{} is a symbolic link whose target does not exist; \
                                     outputs are not written through it",
                                    next.display()
                                ),
                            )
                        } else {
                            e
                        }
                    })?,
                    Err(_) => next,
                };
            }
        }
    }
    Ok(out)
}

/// Why an existing output may not be written: a special file, or one of the inputs.
fn check_target(meta: &std::fs::Metadata, inputs: &Inputs) -> std::result::Result<(), String> {
    if !meta.is_file() {
        return Err(format!(
            "is a {}; outputs are written to regular files",
            kind_name(meta.file_type())
        ));
    }
    if let Some(input) = inputs
        .files
        .iter()
        .find(|input| std::fs::metadata(input).is_ok_and(|m| same_file(&m, meta)))
    {
        return Err(format!(
            "is {}, an input of this run; refusing to overwrite it",
            input.display()
        ));
    }
    if let Some(stream) = standard_stream(meta) {
        return Err(format!(
            "is this run's standard {stream}, which blagent writes its report or progress to"
        ));
    }
    let links = hard_links(meta);
    if links > 1 {
        return Err(format!(
            "has {links} names (hard links); writing it would change the file under its other \
             names too, which may be inputs"
        ));
    }
    Ok(())
}

/// `output` or `error` when `meta` is the file this process's standard output or error is.
#[cfg(unix)]
fn standard_stream(meta: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::fd::AsFd;
    let is = |fd: std::os::fd::BorrowedFd<'_>| {
        fd.try_clone_to_owned()
            .ok()
            .and_then(|owned| File::from(owned).metadata().ok())
            .is_some_and(|m| same_file(&m, meta))
    };
    if is(std::io::stdout().as_fd()) {
        Some("output")
    } else if is(std::io::stderr().as_fd()) {
        Some("error")
    } else {
        None
    }
}

#[cfg(not(unix))]
fn standard_stream(_: &std::fs::Metadata) -> Option<&'static str> {
    None
}

/// The number of names (hard links) of the file `meta` describes.
#[cfg(unix)]
fn hard_links(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.nlink()
}

#[cfg(not(unix))]
fn hard_links(_: &std::fs::Metadata) -> u64 {
    1
}

/// Ends the JSON-lines output `file` (opened by [`open_output`] to append; `path` names it)
/// with a complete line before a run appends to it: after the last newline, whole JSON gets
/// its newline (whatever it holds: a line saved without one loses nothing), anything else (a
/// line an interrupted write cut short) is cut off. Read and repaired through the open, locked
/// handle, never by its path again. Returns the file's complete lines and whether a cut-short
/// line was dropped.
pub fn complete_last_line(file: &mut File, path: &Path) -> Result<(Vec<u8>, bool)> {
    let bytes = read_output(file, path)?;
    end_last_line(file, path, bytes)
}

/// What the output `file` (opened by [`open_output`]; `path` names it) holds, read through
/// its handle from the start, at most [`MAX_DATA_FILE_BYTES`].
pub fn read_output(file: &File, path: &Path) -> Result<Vec<u8>> {
    super::read::read_open_bounded(file, MAX_DATA_FILE_BYTES)
        .map_err(|f| f.into_error(path, "output"))
}

/// [`complete_last_line`] of `bytes`, what [`read_output`] read from `file`.
pub fn end_last_line(file: &mut File, path: &Path, mut bytes: Vec<u8>) -> Result<(Vec<u8>, bool)> {
    let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let tail = &bytes[end..];
    if tail.trim_ascii().is_empty() {
        return Ok((bytes, false));
    }
    if serde_json::from_slice::<serde_json::Value>(tail).is_ok() {
        std::io::Write::write_all(file, b"\n").map_err(|e| Error::io(path, e))?;
        bytes.push(b'\n');
        return Ok((bytes, false));
    }
    file.set_len(end as u64).map_err(|e| Error::io(path, e))?;
    bytes.truncate(end);
    Ok((bytes, true))
}

/// Refuses a folder of blagent's cache that is a symbolic link (`what` names the cache): the
/// cache writes and removes files only in folders it made, never through a link into another
/// folder, which may hold someone else's files. The cache folder itself may be a link.
pub fn refuse_linked_folders(folders: &[&Path], what: &str) -> Result<()> {
    for folder in folders {
        if fs_is_link(folder) {
            return Err(Error::InvalidInput(format!(
                "{} is a symbolic link inside the {what}; blagent writes only into folders it \
                 made there: remove the link",
                folder.display()
            )));
        }
    }
    Ok(())
}

/// Whether `path` is a symbolic link (not followed).
pub fn fs_is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Whether `bytes` are JSON lines as blagent writes them: every complete non-blank line an
/// object with all of `fields` (the fields every record of that output has, so that a dataset
/// or another tool's JSONL with the same `instance_id` is not taken for ours), and a last line
/// without its newline either such an object or, cut short by an interrupted write, starting
/// with `prefix`, as blagent's lines do. A cut-short line is JSON that ends too early; a line
/// JSON cannot read before its end (a `NaN`, a stray character) is someone else's.
pub fn json_lines_with(bytes: &[u8], fields: &[&str], prefix: &[u8]) -> bool {
    let (complete, tail) = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(end) => bytes.split_at(end + 1),
        None => (&[][..], bytes),
    };
    let tail = tail.trim_ascii();
    let tail_ok = tail.is_empty()
        || match serde_json::from_slice::<serde_json::Value>(tail) {
            Ok(value) => has_fields(&value, fields),
            // Cut short anywhere, even inside the prefix.
            Err(e) if e.is_eof() => tail.starts_with(prefix) || prefix.starts_with(tail),
            Err(_) => false,
        };
    tail_ok
        && complete
            .split(|&b| b == b'\n')
            .filter(|line| !line.trim_ascii().is_empty())
            .all(|line| {
                serde_json::from_slice::<serde_json::Value>(line)
                    .is_ok_and(|v| has_fields(&v, fields))
            })
}

/// Whether the bytes are one JSON object with all of `fields` (a profile, a summary).
pub fn json_object_with(bytes: &[u8], fields: &[&str]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|v| has_fields(&v, fields))
}

/// Whether `value` is an object holding every one of `fields`.
fn has_fields(value: &serde_json::Value, fields: &[&str]) -> bool {
    value
        .as_object()
        .is_some_and(|object| fields.iter().all(|f| object.contains_key(*f)))
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    const JSONL: OutputMode = OutputMode {
        append: false,
        holds: "JSONL",
        is_ours: |b| json_lines_with(b, &["instance_id"], b"{\"instance_id\":"),
    };
    const APPEND: OutputMode = OutputMode {
        append: true,
        ..JSONL
    };

    fn refused<T: std::fmt::Debug>(result: Result<T>) -> String {
        match result {
            Err(e @ Error::InvalidInput(_)) => e.to_string(),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn inputs_and_files_inside_input_folders_are_refused_and_left_as_they_were() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data.jsonl");
        std::fs::write(&data, "{\"instance_id\": \"a\"}\n").unwrap();
        let trees = dir.path().join("trees");
        std::fs::create_dir(&trees).unwrap();
        let inputs = Inputs::new().file(Some(&data)).folder(Some(&trees));
        let alias = dir.path().join("alias.jsonl");
        std::fs::hard_link(&data, &alias).unwrap();
        for path in [&data, &alias] {
            let message = refused(open_output(path, JSONL, &inputs, "--out"));
            assert!(message.contains("an input of this run"), "{message}");
            let message = refused(open_output(path, APPEND, &inputs, "--out"));
            assert!(message.contains("an input of this run"), "{message}");
        }
        assert_eq!(
            std::fs::read_to_string(&data).unwrap(),
            "{\"instance_id\": \"a\"}\n"
        );
        let inside = trees.join("sub/new.jsonl");
        let message = refused(open_output(&inside, JSONL, &inputs, "--out"));
        assert!(message.contains("which this run reads"), "{message}");
        assert!(
            !trees.join("sub").exists(),
            "nothing is created before the checks pass"
        );
    }

    /// Two ways past the folder check, found by a hostile run: `..` after a folder that does
    /// not exist yet (compared as written, it looked outside), and a dangling link whose
    /// target lies in the trees (writing through it created the target there).
    #[cfg(unix)]
    #[test]
    fn dot_dot_through_new_folders_and_dangling_links_do_not_reach_an_input_folder() {
        let dir = tempfile::tempdir().unwrap();
        let trees = dir.path().join("trees");
        std::fs::create_dir_all(trees.join("a")).unwrap();
        let inputs = Inputs::new().folder(Some(&trees));
        let sneaky = dir.path().join("new/sub/../../trees/a/preds.jsonl");
        let message = refused(open_output(&sneaky, JSONL, &inputs, "--out"));
        assert!(message.contains("which this run reads"), "{message}");
        assert!(!dir.path().join("new").exists(), "nothing created");
        let link = dir.path().join("dangling.jsonl");
        std::os::unix::fs::symlink(trees.join("a/made.jsonl"), &link).unwrap();
        let message = refused(open_output(&link, JSONL, &inputs, "--out"));
        assert!(message.contains("target does not exist"), "{message}");
        assert!(!trees.join("a/made.jsonl").exists());
        let fine = dir.path().join("new/sub/../out.jsonl");
        open_output(&fine, JSONL, &inputs, "--out")
            .unwrap()
            .commit()
            .unwrap();
        assert!(dir.path().join("new/out.jsonl").is_file());
        // `..` out of the trees leads beside them: allowed, as the system resolves it.
        let beside = dir.path().join("trees/a/../../beside.jsonl");
        open_output(&beside, JSONL, &inputs, "--out")
            .unwrap()
            .commit()
            .unwrap();
        assert!(dir.path().join("beside.jsonl").is_file());
    }

    /// A file with another name (a hard link) may be any file, a tree's source among them:
    /// writing it would change that file too, even when its content looks like ours.
    #[cfg(unix)]
    #[test]
    fn an_output_with_other_hard_links_is_refused_and_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let ours = dir.path().join("preds.jsonl");
        let line = "{\"instance_id\": \"a\"}\n";
        std::fs::write(&ours, line).unwrap();
        std::fs::create_dir(dir.path().join("tree")).unwrap();
        std::fs::hard_link(&ours, dir.path().join("tree/evil.py")).unwrap();
        for mode in [JSONL, APPEND] {
            let message = refused(open_output(&ours, mode, &Inputs::new(), "--out"));
            assert!(message.contains("hard links"), "{message}");
        }
        assert_eq!(
            std::fs::read_to_string(dir.path().join("tree/evil.py")).unwrap(),
            line
        );
        std::fs::remove_file(dir.path().join("tree/evil.py")).unwrap();
        open_output(&ours, JSONL, &Inputs::new(), "--out").unwrap();
    }

    #[test]
    fn special_files_and_foreign_content_are_refused_and_ours_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        super::super::read::mkfifo(&fifo);
        let message = refused(open_output(&fifo, APPEND, &Inputs::new(), "--out"));
        assert!(
            message.contains("FIFO") || message.contains("special"),
            "{message}"
        );

        let notes = dir.path().join("notes.txt");
        std::fs::write(&notes, "my notes\n").unwrap();
        for mode in [JSONL, APPEND] {
            let message = refused(open_output(&notes, mode, &Inputs::new(), "--out"));
            assert!(message.contains("refusing to"), "{message}");
        }
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes\n");
        std::fs::write(&notes, "my notes").unwrap();
        refused(open_output(&notes, APPEND, &Inputs::new(), "--out"));

        let ours = dir.path().join("preds.jsonl");
        let before = "{\"instance_id\": \"a\"}\n{\"instance_id\":\"b";
        std::fs::write(&ours, before).unwrap();
        drop(open_output(&ours, APPEND, &Inputs::new(), "--out").unwrap());
        drop(open_output(&ours, JSONL, &Inputs::new(), "--out").unwrap());
        assert_eq!(std::fs::read_to_string(&ours).unwrap(), before);
        let mut out = open_output(&ours, JSONL, &Inputs::new(), "--out").unwrap();
        out.write_all(b"{\"instance_id\": \"c\"}\n").unwrap();
        out.commit().unwrap();
        assert_eq!(
            std::fs::read_to_string(&ours).unwrap(),
            "{\"instance_id\": \"c\"}\n"
        );
    }

    /// A dataset or another tool's output has an `instance_id` too: only lines with every
    /// field blagent writes count as ours. Checking writes nothing; two outputs on one file
    /// are refused.
    #[test]
    fn ours_means_every_field_blagent_writes_and_checks_create_nothing() {
        let ours = |b: &[u8]| json_lines_with(b, &["instance_id", "scores"], b"{\"instance_id\":");
        assert!(ours(
            b"{\"instance_id\":\"a\",\"scores\":[]}\n{\"instance_id\":\"b\",\"sc"
        ));
        assert!(ours(b"{\"instance_id\":\"a\",\"scores\":[]}"));
        assert!(!ours(b"{\"instance_id\":\"a\",\"repo\":\"x\"}\n"));
        assert!(!ours(b"{\"instance_id\":\"a\",\"repo\":\"x\"}"));
        assert!(json_object_with(b"{\"a\": 1, \"b\": 2}", &["a", "b"]));
        assert!(!json_object_with(b"{\"a\": 1}", &["a", "b"]));
        assert!(!json_object_with(b"[1]", &[]));

        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new/out.jsonl");
        check_output(&new, JSONL, &Inputs::new(), "--out").unwrap();
        assert!(!dir.path().join("new").exists());
        let theirs = dir.path().join("theirs.jsonl");
        std::fs::write(&theirs, "{\"x\": 1}\n").unwrap();
        let err = check_output(&theirs, JSONL, &Inputs::new(), "--out").unwrap_err();
        assert!(err.to_string().contains("does not hold JSONL"), "{err}");
        let err = check_distinct(&[
            (&new, "--out"),
            (&dir.path().join("x/../new/out.jsonl"), "--signals-out"),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("its own file"), "{err}");
        check_distinct(&[(&new, "--out"), (&theirs, "--signals-out")]).unwrap();
    }

    /// Found by a review: a batch interrupted before its first line (or whose instances all
    /// failed) left a new, empty `--out`.
    #[test]
    fn an_appended_output_this_run_created_and_never_wrote_is_removed() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        let none = Inputs::new();
        let new = dir.path().join("batch.jsonl");
        drop(open_output(&new, APPEND, &none, "--out").unwrap());
        assert!(!new.exists());
        let mut out = open_output(&new, APPEND, &none, "--out").unwrap();
        out.write_all(b"{\"instance_id\": \"a\"}\n").unwrap();
        drop(out);
        assert!(new.exists(), "written: kept");
        // An empty file that was there before is the user's.
        let theirs = dir.path().join("empty.jsonl");
        std::fs::write(&theirs, "").unwrap();
        drop(open_output(&theirs, APPEND, &none, "--out").unwrap());
        assert!(theirs.exists());
    }

    /// Found by a hostile review: an output emptied, or created and left, when a later one of
    /// the same run could not be opened.
    #[test]
    fn outputs_opened_together_are_all_left_as_they_were_when_one_fails() {
        let dir = tempfile::tempdir().unwrap();
        let ours = dir.path().join("preds.jsonl");
        std::fs::write(&ours, "{\"instance_id\": \"a\"}\n").unwrap();
        let new = dir.path().join("new.jsonl");
        let notes = dir.path().join("notes.txt");
        std::fs::write(&notes, "mine\n").unwrap();
        let none = Inputs::new();
        for second in [notes.join("s.jsonl"), dir.path().join("folder/")] {
            let outputs = [
                (ours.as_path(), JSONL, "--out"),
                (second.as_path(), JSONL, "--x"),
            ];
            let message = refused(open_outputs(&outputs, &none).map(|_| unreachable!()));
            assert!(message.contains("folder"), "{message}");
        }
        let held = dir.path().join("held.jsonl");
        let holder = open_output(&held, APPEND, &none, "--y").unwrap();
        let outputs = [
            (new.as_path(), JSONL, "--out"),
            (ours.as_path(), JSONL, "--x"),
            (held.as_path(), JSONL, "--y"),
        ];
        let message = refused(open_outputs(&outputs, &none).map(|_| unreachable!()));
        assert!(message.contains("another blagent run"), "{message}");
        drop(holder);
        assert!(!new.exists(), "the file this call created is removed");
        assert_eq!(
            std::fs::read_to_string(&ours).unwrap(),
            "{\"instance_id\": \"a\"}\n"
        );
        assert_eq!(open_outputs(&outputs, &none).unwrap().len(), 3);
        assert_eq!(
            std::fs::read_to_string(&ours).unwrap(),
            "{\"instance_id\": \"a\"}\n",
            "opened and dropped, not committed: as it was"
        );
        assert!(!new.exists(), "created to hold the lock, removed again");
        for output in open_outputs(&outputs, &none).unwrap() {
            output.commit().unwrap();
        }
        assert_eq!(std::fs::read_to_string(&ours).unwrap(), "");
        assert_eq!(std::fs::read_to_string(&new).unwrap(), "");
        let cut = b"{\"instance_id\": \"a\"}\n{\"inst";
        assert!(json_lines_with(cut, &["instance_id"], b"{\"instance_id\":"));
    }

    /// Found by a hostile review: an output was emptied when opened, so a run that then
    /// failed, was refused or was interrupted left neither the last output nor a whole new
    /// one. A replaced output now keeps what it held until the run commits; an output named
    /// through a link is replaced where the link points (the link stays), and keeps its
    /// permissions; no hidden file is left beside it.
    #[test]
    fn a_replaced_output_keeps_what_it_held_until_committed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let ours = dir.path().join("preds.jsonl");
        let old = "{\"instance_id\": \"old\"}\n";
        std::fs::write(&ours, old).unwrap();
        std::fs::set_permissions(&ours, std::fs::Permissions::from_mode(0o640)).unwrap();
        let none = Inputs::new();
        {
            let mut out = open_output(&ours, JSONL, &none, "--out").unwrap();
            out.write_all(b"{\"instance_id\": \"half").unwrap();
            assert_eq!(std::fs::read_to_string(&ours).unwrap(), old);
            // Dropped uncommitted: as a run that fails or is stopped.
        }
        assert_eq!(std::fs::read_to_string(&ours).unwrap(), old);
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&ours, &link).unwrap();
        let mut out = open_output(&link, JSONL, &none, "--out").unwrap();
        out.write_all(b"{\"instance_id\": \"new\"}\n").unwrap();
        out.commit().unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            std::fs::read_to_string(&ours).unwrap(),
            "{\"instance_id\": \"new\"}\n"
        );
        let mode = std::fs::metadata(&ours).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["link.jsonl", "preds.jsonl"]);
    }

    /// Found by the review of replacing: the new file took the runner's owner (a user's file
    /// replaced by root became root's), and an output name near the system's limit left no
    /// room for the new file's name. The owner and group are kept (given, or the content
    /// copied where the system will not give them); the new file's name is short.
    #[test]
    fn a_replaced_output_keeps_its_owner_and_any_name_fits() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let ours = dir.path().join("preds.jsonl");
        std::fs::write(&ours, "{\"instance_id\": \"old\"}\n").unwrap();
        // Another owner where this process may give files away (root); else its own.
        let _ = std::os::unix::fs::chown(&ours, Some(65534), Some(65534));
        let before = std::fs::metadata(&ours).unwrap();
        let none = Inputs::new();
        let mut out = open_output(&ours, JSONL, &none, "--out").unwrap();
        out.write_all(b"{\"instance_id\": \"new\"}\n").unwrap();
        out.commit().unwrap();
        let after = std::fs::metadata(&ours).unwrap();
        assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
        assert!(std::fs::read_to_string(&ours).unwrap().contains("new"));
        let long = dir.path().join(format!("{}.jsonl", "p".repeat(249)));
        let mut out = open_output(&long, JSONL, &none, "--out").unwrap();
        out.write_all(b"{\"instance_id\": \"a\"}\n").unwrap();
        out.commit().unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        // Many outputs of one run in one folder (an analysis' instances) each get a new file.
        let many: Vec<PathBuf> = (0..300)
            .map(|i| dir.path().join(format!("i/{i}.jsonl")))
            .collect();
        let outputs: Vec<(&Path, OutputMode, &str)> =
            many.iter().map(|p| (p.as_path(), JSONL, "x")).collect();
        for output in open_outputs(&outputs, &none).unwrap() {
            output.commit().unwrap();
        }
        assert_eq!(
            std::fs::read_dir(dir.path().join("i")).unwrap().count(),
            300
        );
    }

    /// Found by the review of the fallbacks: an output written in place (a read-only folder,
    /// another user's file) was emptied when opened, so a run refused before it wrote (another
    /// output could not be made) lost it. It is emptied at the first write, or the commit.
    #[test]
    fn an_output_written_in_place_is_emptied_only_when_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        std::fs::write(&path, "old\n").unwrap();
        let open = || OpenOptions::new().write(true).open(&path).unwrap();
        drop(Output::in_place(&path, open(), true));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
        let mut out = Output::in_place(&path, open(), true);
        out.write_all(b"new\n").unwrap();
        out.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        Output::in_place(&path, open(), true).commit().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
    }

    /// Found by a hostile review: a refused run left the folders it had created for its
    /// outputs.
    #[test]
    fn a_refused_run_removes_the_folders_it_created() {
        let dir = tempfile::tempdir().unwrap();
        let held = dir.path().join("held.jsonl");
        let none = Inputs::new();
        let holder = open_output(&held, APPEND, &none, "--y").unwrap();
        let new = dir.path().join("nd/sub/p.jsonl");
        let deeper = dir.path().join("nd/sub/more/s.jsonl");
        let outputs = [
            (new.as_path(), JSONL, "--out"),
            (deeper.as_path(), JSONL, "--signals-out"),
            (held.as_path(), JSONL, "--y"),
        ];
        let message = refused(open_outputs(&outputs, &none));
        assert!(message.contains("another blagent run"), "{message}");
        assert!(!dir.path().join("nd").exists());
        drop(holder);
    }

    /// Found by a later review: a run interrupted, or with nothing to write, removed its
    /// outputs but left the folders it had created for them.
    #[test]
    fn a_run_that_ends_without_its_outputs_removes_the_folders_it_created() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        let none = Inputs::new();
        let new = dir.path().join("nd/sub/p.jsonl");
        let signals = dir.path().join("nd/s.jsonl");
        let appended = dir.path().join("nb/sub/t.jsonl");
        let outputs = [
            (new.as_path(), JSONL, "--out"),
            (signals.as_path(), JSONL, "--signals-out"),
            (appended.as_path(), APPEND, "--failures-out"),
        ];
        drop(open_outputs(&outputs, &none).unwrap());
        assert!(!dir.path().join("nd").exists());
        assert!(!dir.path().join("nb").exists());
        // Written or committed, an output keeps its folders; so does a folder someone else
        // put a file in meanwhile.
        let mut opened = open_outputs(&outputs, &none).unwrap();
        std::fs::write(dir.path().join("nd/theirs.txt"), "x").unwrap();
        opened[2].write_all(b"{\"instance_id\": \"a\"}\n").unwrap();
        let mut opened = opened.into_iter();
        let (out, _signals) = (opened.next().unwrap(), opened.next().unwrap());
        drop(opened);
        out.commit().unwrap();
        assert!(new.exists() && appended.exists());
        assert!(dir.path().join("nd/theirs.txt").exists());
    }

    /// Found by a review of that: with `new/../keep/out.jsonl`, the user's empty `keep` was
    /// taken for a folder the run made (it did not exist by that name before `new` was made)
    /// and removed.
    #[test]
    fn only_the_folders_a_run_made_are_removed_whatever_the_path_says() {
        let dir = tempfile::tempdir().unwrap();
        let none = Inputs::new();
        let keep = dir.path().join("keep");
        std::fs::create_dir(&keep).unwrap();
        let through = dir.path().join("new/../keep/out.jsonl");
        let beside = dir.path().join("new/f.jsonl");
        let outputs = [
            (through.as_path(), JSONL, "--out"),
            (beside.as_path(), APPEND, "--failures-out"),
        ];
        drop(open_outputs(&outputs, &none).unwrap());
        assert!(keep.is_dir(), "the user's folder was removed");
        assert!(!dir.path().join("new").exists());
    }

    /// What a run reads from an output before it may go on refuses it as a failed open does:
    /// nothing emptied, what this call created removed.
    #[test]
    fn a_failed_check_leaves_every_output_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let ours = dir.path().join("preds.jsonl");
        std::fs::write(&ours, "{\"instance_id\": \"a\"}\n").unwrap();
        let new = dir.path().join("new.jsonl");
        let outputs = [
            (ours.as_path(), JSONL, "--out"),
            (new.as_path(), JSONL, "--x"),
        ];
        let mut seen = 0;
        let result = open_outputs_checked(&outputs, &Inputs::new(), |files| {
            seen = files.len();
            Err(Error::InvalidInput("not this one".into()))
        });
        assert!(refused(result.map(|_| unreachable!())).contains("not this one"));
        assert_eq!(seen, 2, "checked with every output open");
        assert!(!new.exists());
        assert_eq!(
            std::fs::read_to_string(&ours).unwrap(),
            "{\"instance_id\": \"a\"}\n"
        );
        let opened = open_outputs_checked(&outputs, &Inputs::new(), |_| Ok(())).unwrap();
        assert_eq!(opened.len(), 2);
        for output in opened {
            output.commit().unwrap();
        }
        assert_eq!(std::fs::read_to_string(&ours).unwrap(), "");
    }

    /// Found by a review: a user's one-line file without its newline, holding JSON that
    /// Python writes and JSON does not read (`NaN`), was taken for a line blagent's own
    /// interrupted write had cut short, so `eval --out` emptied it and `batch --out` cut it off.
    #[test]
    fn only_json_that_ends_too_early_counts_as_a_line_cut_short() {
        let ours = |b: &[u8]| json_lines_with(b, &["instance_id"], b"{\"instance_id\":");
        for theirs in [
            &b"{\"instance_id\":\"x\",\"score\":NaN}"[..],
            b"{\"instance_id\":\"x\",\"note\":\"mine\"} trailing",
            b"{\"instance_id\":\"x\"}\n{\"instance_id\":\"y\",\"score\":Infinity}",
        ] {
            assert!(!ours(theirs), "{}", String::from_utf8_lossy(theirs));
        }
        for cut in [
            &b"{\"instance_id\":\"x\",\"score\":0.5"[..],
            b"{\"instance_id\":\"x\",\"ok\":tr",
            b"{\"instance_id\":\"x\",\"path\":\"a\\",
            b"{\"instance_id\":\"caf\xc3",
        ] {
            assert!(ours(cut), "{}", String::from_utf8_lossy(cut));
        }

        let dir = tempfile::tempdir().unwrap();
        let notes = dir.path().join("notes.jsonl");
        let text = "{\"instance_id\":\"x\",\"note\":\"mine\",\"score\":NaN}";
        std::fs::write(&notes, text).unwrap();
        for mode in [APPEND, JSONL] {
            let message = refused(open_output(&notes, mode, &Inputs::new(), "--out"));
            assert!(message.contains("does not hold"), "{message}");
        }
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), text);
    }

    #[test]
    fn a_second_writer_is_refused_while_the_first_holds_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.jsonl");
        let first = open_output(&out, APPEND, &Inputs::new(), "--out").unwrap();
        let message = refused(open_output(&out, APPEND, &Inputs::new(), "--out"));
        assert!(message.contains("another blagent run"), "{message}");
        drop(first);
        open_output(&out, APPEND, &Inputs::new(), "--out").unwrap();
    }
}
