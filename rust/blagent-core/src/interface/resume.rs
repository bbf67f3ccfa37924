//! Resuming a batch: which instances an output file already holds, after dropping a last line
//! that an interrupted run left half-written.

use std::collections::HashSet;
use std::fs::File;
use std::path::Path;

use crate::error::{Error, Result};
use crate::repo::complete_last_line;

/// The instance ids of the complete lines of the batch output `file` (opened to append, `out`
/// naming it), and whether an incomplete last line (no final newline, not valid JSON) was cut
/// off the file ([`complete_last_line`]).
///
/// A complete line that is not a JSON object with a string `instance_id` is an input error:
/// the file is not a `loc_outputs.jsonl`, and appending to it would be wrong.
pub(super) fn existing_ids(out: &Path, file: &mut File) -> Result<(HashSet<String>, bool)> {
    let (bytes, truncated) = complete_last_line(file, out)?;
    let mut ids = HashSet::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
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

    /// `out` opened as a batch opens its output: to append and read back.
    fn read_ids(out: &Path) -> Result<(HashSet<String>, bool)> {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .read(true)
            .create(true)
            .open(out)
            .expect("open");
        existing_ids(out, &mut file)
    }

    #[test]
    fn reads_ids_and_cuts_a_half_written_last_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("loc.jsonl");
        assert!(read_ids(&out).expect("missing is empty").0.is_empty());
        std::fs::write(
            &out,
            "{\"instance_id\": \"a\"}\n{\"instance_id\": \"b\"}\n{\"instance_id\": \"c\", \"fou",
        )
        .expect("write");
        let (ids, truncated) = read_ids(&out).expect("reads");
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
        let (ids, truncated) = read_ids(&out).expect("reads");
        assert!(!truncated && ids.contains("a"));
        assert!(std::fs::read_to_string(&out).expect("read").ends_with('\n'));
        std::fs::write(&out, "not json\n").expect("write");
        assert!(read_ids(&out).expect_err("foreign").is_input_error());
    }
}
