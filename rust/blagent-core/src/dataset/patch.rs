//! Unified diffs (`git diff` / SWE-bench patches) parsed into files, hunks and changed lines,
//! each changed line placed in base-file coordinates.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Whether a changed line was added or removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// A `+` line.
    Added,
    /// A `-` line.
    Removed,
}

/// One line of a hunk body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkLine {
    /// `Some` for a changed line, `None` for context.
    pub change: Option<ChangeKind>,
    /// The text without its prefix character.
    pub text: String,
    /// Base-file line: the line itself for context and removed lines; for an added line, the
    /// base line it is inserted before (so both patches of an instance share coordinates).
    pub base_line: usize,
    /// Line in the patched file (for removed lines, where the line would have been).
    pub new_line: usize,
}

/// One `@@ -a,b +c,d @@` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// First base line of the hunk (1-based; 0 for an empty range).
    pub old_start: usize,
    /// First patched line of the hunk.
    pub new_start: usize,
    /// The body, in order.
    pub lines: Vec<HunkLine>,
}

/// The changes a patch makes to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// Repository-relative path after the change (before it, for a deleted file).
    pub path: String,
    /// The path it had in the base tree where git renamed it (its `rename from` line); empty
    /// otherwise, the base path then being `path`.
    pub base_path: String,
    /// Whether the file is created by the patch (`--- /dev/null`).
    pub is_new: bool,
    /// Whether the file is deleted by the patch (`+++ /dev/null`).
    pub is_deleted: bool,
    /// Hunks in order.
    pub hunks: Vec<Hunk>,
}

static HUNK_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@").expect("valid pattern")
});

/// The largest line number or count a hunk header may give: far past any file's length.
const MAX_LINE_NUMBER: usize = u32::MAX as usize;

/// Parses a unified diff. Text before the first file header is ignored, as `git apply` does;
/// an empty line inside a hunk is read as a blank context line, as GNU `patch` does.
///
/// Fails on a malformed hunk header, a hunk body line with an unknown prefix, a hunk shorter
/// or longer than its header says (a `+`, `-` or context line right after the lines it counts),
/// or a hunk outside any file; the message names the 1-based line.
pub fn parse_patch(text: &str) -> Result<Vec<FilePatch>> {
    let mut files: Vec<FilePatch> = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    let bad =
        |line: usize, message: String| Error::InvalidInput(format!("patch line {line}: {message}"));
    while i < lines.len() {
        let line = lines[i];
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let path = git_header_path(rest).unwrap_or_else(|| rest.to_owned());
            files.push(FilePatch {
                path,
                base_path: String::new(),
                is_new: false,
                is_deleted: false,
                hunks: Vec::new(),
            });
        } else if let Some(from) = line.strip_prefix("rename from ") {
            // An extended header line of the `diff --git` section above (before its hunks).
            if let Some(file) = files.last_mut().filter(|f| f.hunks.is_empty()) {
                file.base_path = header_name(from).unwrap_or_default();
            }
        } else if line.starts_with("--- ")
            && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ "))
        {
            let old = header_path(&line[4..]);
            let new = header_path(&lines[i + 1][4..]);
            let fresh_header = files.last().is_none_or(|f| !f.hunks.is_empty());
            if fresh_header {
                files.push(FilePatch {
                    path: String::new(),
                    base_path: String::new(),
                    is_new: false,
                    is_deleted: false,
                    hunks: Vec::new(),
                });
            }
            let file = files.last_mut().expect("pushed above");
            file.is_new = old.is_none();
            file.is_deleted = new.is_none();
            file.path = new.or(old).unwrap_or_default();
            i += 2;
            continue;
        } else if line.starts_with("@@") {
            let Some(file) = files.last_mut() else {
                return Err(bad(i + 1, "hunk before any file header".into()));
            };
            let caps = HUNK_HEADER
                .captures(line)
                .ok_or_else(|| bad(i + 1, format!("malformed hunk header {line:?}")))?;
            let num = |k: usize| caps.get(k).map_or(Ok(1), |m| m.as_str().parse::<usize>());
            let parsed = (num(1), num(2), num(3), num(4));
            let (Ok(old_start), Ok(old_len), Ok(new_start), Ok(new_len)) = parsed else {
                return Err(bad(i + 1, format!("line number out of range in {line:?}")));
            };
            // Past this, counting on from a hunk's start wrapped round to line 0.
            if [old_start, old_len, new_start, new_len]
                .iter()
                .any(|&n| n > MAX_LINE_NUMBER)
            {
                return Err(bad(i + 1, format!("line number out of range in {line:?}")));
            }
            if (old_start == 0 && old_len > 0) || (new_start == 0 && new_len > 0) {
                return Err(bad(
                    i + 1,
                    format!("a non-empty range starts at line 0 in {line:?}"),
                ));
            }
            let (hunk, next) = parse_hunk(&lines, i + 1, [old_start, old_len, new_start, new_len])
                .map_err(|(l, m)| bad(l, m))?;
            if let Some(extra) = uncounted_body_line(&lines, next) {
                return Err(bad(
                    extra + 1,
                    format!(
                        "{:?} follows the hunk of line {} as part of its body, but the hunk's \
                         header counts fewer lines (corrupt patch)",
                        lines[extra],
                        i + 1
                    ),
                ));
            }
            file.hunks.push(hunk);
            i = next;
            continue;
        }
        i += 1;
    }
    files.retain(|f| !f.path.is_empty());
    Ok(files)
}

/// The first line of a hunk body that goes on past the end its header counted (`lines[next]`
/// being the line after the counted body): a `+`, `-` or context line in the run of such lines
/// (and empty ones) that directly follows, before any `@@`, `diff` or `---`/`+++` header. Such a
/// header counted too few lines, and what it left out would be dropped; `git apply` calls it a
/// corrupt patch. Text further on, after some other line, is left alone as text between
/// patches (as `git apply` leaves it: `git log -p`'s next commit message), as is the `-- `
/// line of `git format-patch`'s signature.
fn uncounted_body_line(lines: &[&str], next: usize) -> Option<usize> {
    for (at, line) in lines.iter().enumerate().skip(next) {
        let header = line.starts_with("@@")
            || line.starts_with("diff ")
            || (line.starts_with("--- ")
                && lines.get(at + 1).is_some_and(|l| l.starts_with("+++ ")));
        if header || line.trim_end() == "--" {
            return None;
        }
        match line.chars().next() {
            None => {}
            Some(' ' | '+' | '-') => return Some(at),
            Some(_) => return None,
        }
    }
    None
}

/// The path of a `---` / `+++` header without its `a/` / `b/` prefix and trailing timestamp
/// (unquoted when git quoted it); `None` for `/dev/null`.
fn header_path(raw: &str) -> Option<String> {
    let raw = if raw.starts_with('"') {
        unquote(raw).map_or(raw.to_owned(), |(path, _)| path)
    } else {
        raw.split('\t').next().unwrap_or(raw).trim_end().to_owned()
    };
    if raw == "/dev/null" {
        return None;
    }
    let path = raw
        .strip_prefix("a/")
        .or_else(|| raw.strip_prefix("b/"))
        .unwrap_or(&raw);
    Some(path.to_owned())
}

/// The new path of a `diff --git a/X b/Y` header (`rest` is what follows `diff --git `),
/// without its `b/`: git quotes a path with special or non-ASCII characters (`"b/\303\251.py"`),
/// and an unquoted path may itself hold ` b/`, which the header's two equal halves resolve.
pub fn git_header_path(rest: &str) -> Option<String> {
    if rest.starts_with('"') {
        let (_, after) = unquote(rest)?;
        let new = after.strip_prefix(' ')?;
        let new = if new.starts_with('"') {
            unquote(new)?.0
        } else {
            new.to_owned()
        };
        return new.strip_prefix("b/").map(str::to_owned);
    }
    if let Some(new) = rest
        .strip_suffix('"')
        .and_then(|r| r.rfind(" \"b/").map(|at| &rest[at + 1..]))
    {
        return unquote(new)?.0.strip_prefix("b/").map(str::to_owned);
    }
    // `a/X b/X`: both halves name the same path, whatever it holds.
    let half = rest.len() / 2;
    if rest.len() % 2 == 1 && rest.is_char_boundary(half) && rest.as_bytes()[half] == b' ' {
        let (a, b) = (&rest[..half], &rest[half + 1..]);
        if let Some(path) = a
            .strip_prefix("a/")
            .filter(|&x| b.strip_prefix("b/") == Some(x))
        {
            return Some(path.to_owned());
        }
    }
    rest.split_once(" b/").map(|(_, b)| b.to_owned())
}

/// A path as git writes it in an extended header line (`rename to NAME`): C-quoted where it
/// holds special or non-ASCII characters, else as is.
pub fn header_name(text: &str) -> Option<String> {
    if text.starts_with('"') {
        unquote(text).map(|(name, _)| name)
    } else {
        Some(text.to_owned())
    }
}

/// A C-quoted string at the start of `text` (as git quotes paths: `\"`, `\\`, `\t`, `\n` and
/// octal bytes `\303`), decoded, and the text after its closing quote.
fn unquote(text: &str) -> Option<(String, &str)> {
    let body = text.strip_prefix('"')?;
    let mut bytes = Vec::new();
    let mut chars = body.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => {
                return Some((
                    String::from_utf8_lossy(&bytes).into_owned(),
                    &body[at + 1..],
                ))
            }
            '\\' => {
                let (_, e) = chars.next()?;
                match e {
                    'n' => bytes.push(b'\n'),
                    't' => bytes.push(b'\t'),
                    'a' => bytes.push(7),
                    'b' => bytes.push(8),
                    'f' => bytes.push(12),
                    'r' => bytes.push(b'\r'),
                    'v' => bytes.push(11),
                    '0'..='7' => {
                        let mut value = e.to_digit(8)?;
                        for _ in 0..2 {
                            let (_, d) = chars.next()?;
                            value = value * 8 + d.to_digit(8)?;
                        }
                        bytes.push(u8::try_from(value).ok()?);
                    }
                    other => {
                        let mut buf = [0; 4];
                        bytes.extend_from_slice(other.encode_utf8(&mut buf).as_bytes());
                    }
                }
            }
            other => {
                let mut buf = [0; 4];
                bytes.extend_from_slice(other.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    None
}

/// Reads a hunk body starting at `lines[start]`; returns the hunk and the index after it, or
/// `(1-based line, message)`.
fn parse_hunk(
    lines: &[&str],
    start: usize,
    header: [usize; 4],
) -> std::result::Result<(Hunk, usize), (usize, String)> {
    let [old_start, old_len, new_start, new_len] = header;
    let (mut old_left, mut new_left) = (old_len, new_len);
    // An empty range's start names the line before it.
    let mut base = if old_len == 0 {
        old_start + 1
    } else {
        old_start
    };
    let mut new = if new_len == 0 {
        new_start + 1
    } else {
        new_start
    };
    let mut body = Vec::new();
    let mut i = start;
    while old_left > 0 || new_left > 0 {
        let Some(&line) = lines.get(i) else {
            return Err((
                i,
                format!("hunk ends early: {old_left} base and {new_left} new lines missing"),
            ));
        };
        let (prefix, text) = line.split_at(line.chars().next().map_or(0, char::len_utf8));
        let change = match prefix {
            " " | "" if old_left > 0 && new_left > 0 => None,
            "-" if old_left > 0 => Some(ChangeKind::Removed),
            "+" if new_left > 0 => Some(ChangeKind::Added),
            "\\" => {
                i += 1;
                continue;
            }
            _ => return Err((i + 1, format!("unexpected line in hunk: {line:?}"))),
        };
        body.push(HunkLine {
            change,
            text: text.to_owned(),
            base_line: base,
            new_line: new,
        });
        if change != Some(ChangeKind::Added) {
            base += 1;
            old_left -= 1;
        }
        if change != Some(ChangeKind::Removed) {
            new += 1;
            new_left -= 1;
        }
        i += 1;
    }
    while lines.get(i).is_some_and(|l| l.starts_with('\\')) {
        i += 1;
    }
    Ok((
        Hunk {
            old_start,
            new_start,
            lines: body,
        },
        i,
    ))
}

/// How far from its stated line a hunk is looked for (in each direction).
pub const MAX_HUNK_OFFSET: usize = 3000;

/// Polynomial hashes of a file's lines, read so that the hash of any run of consecutive lines
/// is found at once from two prefix hashes (Rabin–Karp); equal hashes are then checked line by
/// line, so a collision costs time, never a wrong placement.
struct LineWindows {
    /// `prefix[i]`: the hash of the first `i` lines.
    prefix: Vec<u64>,
    /// `power[i]`: `RADIX` to the `i`th.
    power: Vec<u64>,
}

impl LineWindows {
    const RADIX: u64 = 0x0000_0100_0000_01b3;

    fn new(lines: &[&str]) -> Self {
        let (mut prefix, mut power) = (vec![0u64], vec![1u64]);
        for line in lines {
            let last = prefix[prefix.len() - 1];
            prefix.push(Self::step(last, line));
            power.push(power[power.len() - 1].wrapping_mul(Self::RADIX));
        }
        LineWindows { prefix, power }
    }

    fn step(hash: u64, line: &str) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::hash::DefaultHasher::new();
        line.hash(&mut hasher);
        hash.wrapping_mul(Self::RADIX).wrapping_add(hasher.finish())
    }

    /// The hash of `lines`, as [`LineWindows::hash`] gives it for the same lines in a file.
    fn hash_of<'a>(lines: impl Iterator<Item = &'a str>) -> u64 {
        lines.fold(0, Self::step)
    }

    /// The hash of the `len` lines from line `at` (0-based), if the file has them.
    fn hash(&self, at: usize, len: usize) -> Option<u64> {
        let end = *self.prefix.get(at.checked_add(len)?)?;
        Some(end.wrapping_sub(self.prefix[at].wrapping_mul(self.power[len])))
    }
}

/// Where [`locate_hunks`] found a hunk of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// Its context and removed lines match the base file this many lines from the stated
    /// position (0: where the header says); its lines were moved there.
    Found(isize),
    /// They match nowhere within [`MAX_HUNK_OFFSET`] lines after the previous hunk; its lines
    /// keep the stated numbers.
    Unmatched,
}

/// Finds each hunk in `base` as `git apply` does and moves its lines there: the hunk's
/// preimage (context and removed lines, trailing whitespace ignored) must match consecutive
/// base lines; the search starts at the stated line shifted by the previous hunk's offset,
/// widens one line each way (the nearer position first, earlier on a tie), never starts
/// before the end of the previous hunk and gives up [`MAX_HUNK_OFFSET`] lines away.
/// Returns one placement per hunk. Each position is tried by comparing hashes of the lines
/// first ([`LineWindows`]), so a hunk costs its length plus the positions it tries, however
/// long a near-match is.
pub fn locate_hunks(base: &str, file: &mut FilePatch) -> Vec<Placement> {
    let old: Vec<&str> = base.lines().map(str::trim_end).collect();
    let windows = LineWindows::new(&old);
    let mut placements = Vec::with_capacity(file.hunks.len());
    let (mut floor, mut carried) = (0usize, 0isize);
    for hunk in &mut file.hunks {
        let preimage: Vec<String> = hunk
            .lines
            .iter()
            .filter(|l| l.change != Some(ChangeKind::Added))
            .map(|l| l.text.trim_end().to_owned())
            .collect();
        // 0-based base index the hunk's first preimage line is stated at.
        let stated = hunk
            .lines
            .first()
            .map_or(0, |l| l.base_line.saturating_sub(1));
        let expected = stated.saturating_add_signed(carried).max(floor);
        let wanted = LineWindows::hash_of(preimage.iter().map(String::as_str));
        let fits = |at: usize| {
            at >= floor
                && windows.hash(at, preimage.len()) == Some(wanted)
                && old[at..at + preimage.len()].iter().eq(preimage.iter())
        };
        let found = if preimage.is_empty() {
            Some(expected)
        } else {
            (0..=MAX_HUNK_OFFSET).find_map(|d| {
                [expected.checked_sub(d), expected.checked_add(d)]
                    .into_iter()
                    .flatten()
                    .find(|&at| fits(at))
            })
        };
        let Some(at) = found else {
            placements.push(Placement::Unmatched);
            continue;
        };
        // The lines above a hunk are the same before and after the patch, so its patched-file
        // lines move by the same offset as its base lines.
        let signed = |n: usize| isize::try_from(n).unwrap_or(isize::MAX); // line counts fit
        let offset = signed(at) - signed(stated);
        for line in &mut hunk.lines {
            line.base_line = line.base_line.saturating_add_signed(offset);
            line.new_line = line.new_line.saturating_add_signed(offset);
        }
        hunk.old_start = hunk.old_start.saturating_add_signed(offset);
        hunk.new_start = hunk.new_start.saturating_add_signed(offset);
        floor = at + preimage.len();
        carried = offset;
        placements.push(Placement::Found(offset));
    }
    placements
}

/// The file after the patch: `base` with `file`'s hunks applied by their line numbers.
/// Returns `None` when a context or removed line does not match the base text.
pub fn apply(base: &str, file: &FilePatch) -> Option<String> {
    apply_traced(base, file).map(|(text, _)| text)
}

/// [`apply`], with the base line (1-based) each line of the patched file was kept from:
/// entry `i` is line `i + 1`'s, `None` for a line the patch adds.
pub fn apply_traced(base: &str, file: &FilePatch) -> Option<(String, Vec<Option<usize>>)> {
    // Copies base lines `from..to` unchanged.
    fn keep<'s>(
        old: &[&'s str],
        (out, origin): (&mut Vec<&'s str>, &mut Vec<Option<usize>>),
        from: usize,
        to: usize,
    ) -> Option<()> {
        out.extend(old.get(from - 1..to - 1)?);
        origin.extend((from..to).map(Some));
        Some(())
    }
    let old: Vec<&str> = base.lines().collect();
    let mut out: Vec<&str> = Vec::with_capacity(old.len());
    let mut origin: Vec<Option<usize>> = Vec::with_capacity(old.len());
    let mut next = 1; // next base line to copy
    for hunk in &file.hunks {
        let first = hunk.lines.first().map_or(hunk.old_start, |l| l.base_line);
        if first < next {
            return None;
        }
        keep(&old, (&mut out, &mut origin), next, first)?;
        next = first;
        for line in &hunk.lines {
            if line.change != Some(ChangeKind::Added) {
                if old.get(line.base_line - 1).map(|t| t.trim_end()) != Some(line.text.trim_end()) {
                    return None;
                }
                next = line.base_line + 1;
            }
            if line.change != Some(ChangeKind::Removed) {
                out.push(&line.text);
                origin.push(line.change.is_none().then_some(line.base_line));
            }
        }
    }
    keep(&old, (&mut out, &mut origin), next, old.len() + 1)?;
    let mut text = out.join("\n");
    text.push('\n');
    Some((text, origin))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The changed lines of every hunk of `file`, in patch order.
    fn changed_lines(file: &FilePatch) -> impl Iterator<Item = &HunkLine> {
        file.hunks
            .iter()
            .flat_map(|h| h.lines.iter())
            .filter(|l| l.change.is_some())
    }

    const PATCH: &str = "diff --git a/pkg/mod.py b/pkg/mod.py\nindex 1..2 100644\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -2,4 +2,4 @@ def f():\n a = 1\n-b = 2\n+b = 3\n c = 4\n d = 5\n@@ -10,2 +10,3 @@\n x\n+y\n z\n";

    #[test]
    fn hunk_headers_give_base_and_new_lines() {
        let files = parse_patch(PATCH).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].path, "pkg/mod.py");
        let changed: Vec<_> = changed_lines(&files[0])
            .map(|l| (l.change.unwrap(), l.base_line, l.new_line, l.text.as_str()))
            .collect();
        assert_eq!(
            changed,
            [
                (ChangeKind::Removed, 3, 3, "b = 2"),
                (ChangeKind::Added, 4, 3, "b = 3"),
                (ChangeKind::Added, 11, 11, "y")
            ]
        );
    }

    #[test]
    fn new_and_deleted_files() {
        let patch = "diff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+import os\n+X = 1\ndiff --git a/old.py b/old.py\ndeleted file mode 100644\n--- a/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-Y = 2\n";
        let files = parse_patch(patch).unwrap();
        assert!(files[0].is_new && !files[0].is_deleted);
        assert_eq!(files[0].path, "new.py");
        assert_eq!(
            changed_lines(&files[0])
                .map(|l| l.new_line)
                .collect::<Vec<_>>(),
            [1, 2]
        );
        assert!(files[1].is_deleted);
        assert_eq!(files[1].path, "old.py");
    }

    #[test]
    fn plain_diff_without_git_headers_and_no_newline_marker() {
        let patch = "--- a/x.py\t2020-01-01\n+++ b/x.py\t2020-01-02\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n";
        let files = parse_patch(patch).unwrap();
        assert_eq!(files[0].path, "x.py");
        assert_eq!(changed_lines(&files[0]).count(), 2);
    }

    #[test]
    fn malformed_patches_are_errors_naming_the_line() {
        let truncated = "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n a\n-b\n";
        assert!(parse_patch(truncated)
            .unwrap_err()
            .to_string()
            .contains("hunk ends early"));
        let header = "--- a/x.py\n+++ b/x.py\n@@ -one +1 @@\n";
        assert!(parse_patch(header)
            .unwrap_err()
            .to_string()
            .contains("patch line 3"));
        let prefix = "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n a\n*b\n";
        assert!(parse_patch(prefix)
            .unwrap_err()
            .to_string()
            .contains("unexpected line"));
        assert!(parse_patch("@@ -1 +1 @@\n-a\n+b\n").is_err());
        // Line numbers near the top of `usize` wrapped to line 0 as the hunk was read.
        let huge = format!(
            "--- a/x.py\n+++ b/x.py\n@@ -{0},2 +{0},2 @@\n a\n-b\n+c\n",
            usize::MAX
        );
        assert!(parse_patch(&huge)
            .unwrap_err()
            .to_string()
            .contains("line number out of range"));
        let large = "--- a/x.py\n+++ b/x.py\n@@ -4294967295,1 +4294967295,1 @@\n-b\n+c\n";
        assert_eq!(
            parse_patch(large).unwrap()[0].hunks[0].old_start,
            4_294_967_295
        );
        assert!(parse_patch("").unwrap().is_empty());
    }

    /// Found by a review: a hunk whose header counted too few lines parsed, the lines past
    /// its count read as text between patches and their changes dropped (`git apply` calls it
    /// a corrupt patch).
    #[test]
    fn a_hunk_longer_than_its_header_says_is_an_error() {
        let body = " a\n b\n c\n-d\n+e\n f\n";
        let short = format!("--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n{body}");
        let message = parse_patch(&short).unwrap_err().to_string();
        assert!(
            message.contains("patch line 7") && message.contains("counts fewer lines"),
            "{message}"
        );
        // The run of body lines right after the hunk is read, blank lines included, up to the
        // next header.
        let after_blank = "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n a\n b\n c\n\n+e\n";
        assert!(parse_patch(after_blank).is_err());
        let full = format!("--- a/x.py\n+++ b/x.py\n@@ -1,5 +1,5 @@\n{body}");
        assert_eq!(parse_patch(&full).unwrap()[0].hunks[0].lines.len(), 6);
        // What may follow a hunk: blank lines, the next hunk or file, `git format-patch`'s
        // signature, and text between patches (`git log -p`'s next commit, its message
        // indented).
        let followed = [
            "\n\n",
            "@@ -9 +9 @@\n-y\n+z\n",
            "\ndiff --git a/y.py b/y.py\n--- a/y.py\n+++ b/y.py\n@@ -1 +1 @@\n-y\n+z\n",
            "-- \n2.39.0\n\n",
            "commit 0123abcd\nAuthor: A <a@b>\n\n    - a list item\n    + another\n\n",
        ];
        for tail in followed {
            let text = format!("{full}{tail}");
            assert!(parse_patch(&text).is_ok(), "{text}");
        }
    }

    #[test]
    fn apply_rebuilds_the_patched_file_and_checks_context() {
        let base = "l1\na = 1\nb = 2\nc = 4\nd = 5\nl6\nl7\nl8\nl9\nx\nz\n";
        let files = parse_patch(PATCH).unwrap();
        let new = apply(base, &files[0]).unwrap();
        assert_eq!(
            new,
            "l1\na = 1\nb = 3\nc = 4\nd = 5\nl6\nl7\nl8\nl9\nx\ny\nz\n"
        );
        assert!(apply("something else\n", &files[0]).is_none());
    }

    #[test]
    fn hunks_are_found_by_their_context_as_git_apply_finds_them() {
        // The base has three more lines above the first hunk than the patch was made against,
        // and one line fewer between the hunks.
        let base = "n1\nn2\nn3\nl1\na = 1\nb = 2\nc = 4\nd = 5\nl6\nl7\nl8\nx\nz\n";
        let mut file = parse_patch(PATCH).unwrap().remove(0);
        assert!(apply(base, &file).is_none(), "not where the headers say");
        let placements = locate_hunks(base, &mut file);
        assert_eq!(placements, [Placement::Found(3), Placement::Found(2)]);
        let removed = changed_lines(&file).next().unwrap();
        assert_eq!((removed.base_line, removed.new_line), (6, 6));
        assert_eq!(
            apply(base, &file).unwrap(),
            "n1\nn2\nn3\nl1\na = 1\nb = 3\nc = 4\nd = 5\nl6\nl7\nl8\nx\ny\nz\n"
        );
    }

    /// Found by a review: each position a hunk tried was compared line by line, so hunks
    /// whose long context nearly matched everywhere (a file of equal lines) took seconds each.
    /// Positions are now told apart by the hashes of their lines; the placements are the same.
    #[test]
    fn line_windows_hash_every_run_of_lines_as_the_lines_themselves_hash() {
        let lines = ["x", "x", "y", "", "x", "y", "z"];
        let windows = LineWindows::new(&lines);
        for at in 0..=lines.len() {
            for len in 0..=lines.len() - at {
                let direct = LineWindows::hash_of(lines[at..at + len].iter().copied());
                assert_eq!(windows.hash(at, len), Some(direct), "{at} {len}");
            }
        }
        assert_eq!(windows.hash(5, 3), None);
        assert_eq!(windows.hash(usize::MAX, 2), None);
        assert_ne!(windows.hash(0, 2), windows.hash(1, 2));

        let base = format!("{}y\n", "x\n".repeat(2000));
        let context = " x\n".repeat(500);
        let near = format!("--- a/m.py\n+++ b/m.py\n@@ -1,501 +1,501 @@\n{context}-z\n+w\n");
        let mut file = parse_patch(&near).unwrap().remove(0);
        assert_eq!(locate_hunks(&base, &mut file), [Placement::Unmatched]);
        let far = format!("--- a/m.py\n+++ b/m.py\n@@ -1,501 +1,501 @@\n{context}-y\n+w\n");
        let mut file = parse_patch(&far).unwrap().remove(0);
        assert_eq!(locate_hunks(&base, &mut file), [Placement::Found(1500)]);
    }

    #[test]
    fn the_nearer_match_wins_and_a_hunk_matching_nowhere_is_reported() {
        let patch =
            "--- a/m.py\n+++ b/m.py\n@@ -5,2 +5,2 @@\n     return x\n-    pass\n+    raise\n";
        // Stated at line 5, the preimage is at lines 2-3 (three away) and 9-10 (four away).
        let base = "def f(x):\n    return x\n    pass\n\n\n\n\ndef g(x):\n    return x\n    pass\n";
        let mut file = parse_patch(patch).unwrap().remove(0);
        assert_eq!(locate_hunks(base, &mut file), [Placement::Found(-3)]);
        assert_eq!(changed_lines(&file).next().unwrap().base_line, 3);
        let mut file = parse_patch(patch).unwrap().remove(0);
        assert_eq!(locate_hunks("a\nb\n", &mut file), [Placement::Unmatched]);
        assert_eq!(
            changed_lines(&file).next().unwrap().base_line,
            6,
            "left as stated"
        );
    }
}
