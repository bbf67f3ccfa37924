//! Resuming a batch: which instances an output file already holds, after dropping a last line
//! that an interrupted run left half-written.

use std::collections::HashSet;
use std::path::Path;

use crate::error::{Error, Result};
use crate::repo::read::{read_bounded, MAX_DATA_FILE_BYTES};

/// The instance ids of the complete lines of `out` (empty when it does not exist), and whether
/// an incomplete last line (no final newline, not valid JSON) was cut off the file.
///
/// A complete line that is not a JSON object with a string `instance_id` is an input error:
/// the file is not a `loc_outputs.jsonl`, and appending to it would be wrong.
pub(super) fn existing_ids(out: &Path) -> Result<(HashSet<String>, bool)> {
    let bytes = match read_bounded(out, MAX_DATA_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.is_not_found() => return Ok((HashSet::new(), false)),
        Err(e) => return Err(e.into_error(out, "batch output")),
    };
    let mut truncated = false;
    let complete = if bytes.last().is_none_or(|&b| b == b'\n') {
        bytes.len()
    } else {
        bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
    };
    if complete < bytes.len() {
        let tail = &bytes[complete..];
        if serde_json::from_slice::<serde_json::Value>(tail).is_ok() {
            // A whole line that only lacks its newline: keep it, and end it.
            std::fs::OpenOptions::new()
                .append(true)
                .open(out)
                .and_then(|mut f| std::io::Write::write_all(&mut f, b"\n"))
                .map_err(|e| Error::io(out, e))?;
            return existing_ids(out);
        }
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(out)
            .map_err(|e| Error::io(out, e))?;
        file.set_len(complete as u64)
            .map_err(|e| Error::io(out, e))?;
        truncated = true;
    }
    let mut ids = HashSet::new();
    for (i, line) in bytes[..complete].split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let id = serde_json::from_slice::<serde_json::Value>(line)
            .ok()
            .and_then(|v| {
                v.get("instance_id")
                    .and_then(|id| id.as_str().map(str::to_owned))
            });
        let Some(id) = id else {
            return Err(Error::Dataset {
                path: out.to_path_buf(),
                line: i + 1,
                message: "not a loc_outputs line (a JSON object with a string instance_id); refusing to append".to_owned(),
            });
        };
        ids.insert(id);
    }
    Ok((ids, truncated))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ids_and_cuts_a_half_written_last_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("loc.jsonl");
        assert!(existing_ids(&out).expect("missing is empty").0.is_empty());
        std::fs::write(
            &out,
            "{\"instance_id\": \"a\"}\n{\"instance_id\": \"b\"}\n{\"instance_id\": \"c\", \"fou",
        )
        .expect("write");
        let (ids, truncated) = existing_ids(&out).expect("reads");
        assert!(truncated);
        assert_eq!(ids, HashSet::from(["a".to_owned(), "b".to_owned()]));
        assert!(std::fs::read_to_string(&out)
            .expect("read")
            .ends_with("\"b\"}\n"));
    }

    #[test]
    fn ends_a_complete_last_line_and_rejects_foreign_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("loc.jsonl");
        std::fs::write(&out, "{\"instance_id\": \"a\"}").expect("write");
        let (ids, truncated) = existing_ids(&out).expect("reads");
        assert!(!truncated && ids.contains("a"));
        assert!(std::fs::read_to_string(&out).expect("read").ends_with('\n'));
        std::fs::write(&out, "not json\n").expect("write");
        assert!(existing_ids(&out).expect_err("foreign").is_input_error());
    }
}
