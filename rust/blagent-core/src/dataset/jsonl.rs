//! The one JSONL reader and writer. Reads are bounded ([`MAX_JSONL_BYTES`]) and refuse anything
//! but a regular file; a malformed line is an error naming the file and the line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::repo::Output;

/// The largest JSONL (or JSON array) file read: SWE-bench's full test split with its patches
/// is about 100 MB.
pub const MAX_JSONL_BYTES: u64 = crate::repo::read::MAX_DATA_FILE_BYTES;

/// The text of the user's file `path`, bounded by `max` bytes, regular files only.
fn read_text(path: &Path, max: u64) -> Result<String> {
    crate::repo::read::read_user_json(path, max, "JSON file")
}

fn malformed(path: &Path, line: usize, message: impl Into<String>) -> Error {
    Error::Dataset {
        path: path.to_path_buf(),
        line,
        message: message.into(),
    }
}

/// `(line number, value)` of every non-blank line. With `tolerate_unterminated_tail`, a
/// malformed last line that lacks its newline (an interrupted write) is dropped instead of
/// being an error. A stop asked for (Ctrl-C) ends the reading between two lines.
fn lines<T: DeserializeOwned>(
    path: &Path,
    text: &str,
    tolerate_unterminated_tail: bool,
) -> Result<Vec<(usize, T)>> {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut rows = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        crate::cancel::check()?;
        if line.trim().is_empty() {
            continue;
        }
        match crate::json::from_object(line) {
            Ok(row) => rows.push((i + 1, row)),
            Err(_) if tolerate_unterminated_tail && i + 1 == lines.len() => {}
            Err(e) => return Err(malformed(path, i + 1, e.to_string())),
        }
    }
    Ok(rows)
}

/// Reads a JSONL file of `T` (blank lines skipped).
pub fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    rows(path, false)
}

/// Reads a JSONL file of `T`, dropping a malformed last line without its newline (a file that
/// a crashed writer appended to, as a cassette).
pub fn read_jsonl_appended<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    rows(path, true)
}

fn rows<T: DeserializeOwned>(path: &Path, tolerate_unterminated_tail: bool) -> Result<Vec<T>> {
    let text = read_text(path, MAX_JSONL_BYTES)?;
    let rows = lines(path, &text, tolerate_unterminated_tail)?;
    Ok(rows.into_iter().map(|(_, row)| row).collect())
}

/// `(line number, value)` of every line of a JSONL file, or of every item of a file holding one
/// JSON array (numbered from 1).
fn lines_or_items(path: &Path) -> Result<Vec<(usize, Value)>> {
    let text = read_text(path, MAX_JSONL_BYTES)?;
    if !text.trim_start().starts_with('[') {
        return lines(path, &text, false);
    }
    match crate::json::value(&text).map_err(|e| malformed(path, e.line(), e.to_string()))? {
        Value::Array(items) => Ok(items
            .into_iter()
            .enumerate()
            .map(|(i, v)| (i + 1, v))
            .collect()),
        _ => Err(malformed(path, 1, "expected a JSON array")),
    }
}

/// Reads `T` from a JSONL file or from a file holding one JSON array (datasets come in both).
pub fn read_jsonl_or_array<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    lines_or_items(path)?
        .into_iter()
        .map(|(line, value)| {
            crate::json::from_object_value(value).map_err(|e| malformed(path, line, e.to_string()))
        })
        .collect()
}

/// One record of a file read by [`read_records`]: its `instance_id` and its fields.
pub type Record = (String, Map<String, Value>);

/// Records keyed by `instance_id`, from a JSONL file or a single JSON array, in file order. A
/// record that is not an object with a string `instance_id` is an error; a repeated id
/// replaces the earlier record and adds a warning.
pub fn read_records(path: &Path, warnings: &mut Vec<String>) -> Result<Vec<Record>> {
    let values = lines_or_items(path)?;
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut records: Vec<Record> = Vec::new();
    for (line, value) in values {
        let Value::Object(map) = value else {
            return Err(malformed(path, line, "expected a JSON object"));
        };
        let Some(id) = map
            .get("instance_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return Err(malformed(path, line, "missing string field `instance_id`"));
        };
        if let Some(&at) = seen.get(&id) {
            warnings.push(format!(
                "{}:{line}: duplicate instance {id}; this record replaces the earlier one",
                path.display()
            ));
            records[at].1 = map;
        } else {
            seen.insert(id.clone(), records.len());
            records.push((id, map));
        }
    }
    Ok(records)
}

/// Writes one JSON value a line, each line whole or not at all ([`Output::append_line`]), so
/// an interrupted or failed run leaves only complete lines.
#[derive(Debug)]
pub struct JsonlWriter {
    path: PathBuf,
    file: Output,
}

impl JsonlWriter {
    /// A writer of `file`, an output already opened (see [`crate::repo::open_outputs`]: never
    /// an input of the run, a special file or another run's output, and locked while the file
    /// is open).
    pub fn from_file(path: &Path, file: Output) -> Self {
        JsonlWriter {
            path: path.to_path_buf(),
            file,
        }
    }

    /// Puts the lines written in place ([`Output::commit`]): a replaced output keeps what it
    /// held until this is called, and keeps it if the writer is dropped instead.
    pub fn commit(self) -> Result<()> {
        self.file.commit()
    }

    /// Writes `value` as one line and flushes it.
    pub fn write(&mut self, value: &impl Serialize) -> Result<()> {
        self.write_raw(&serde_json::to_string(value)?)
    }

    /// Writes `json`, one line of JSON text already serialized (no newline), as one line and
    /// flushes it.
    pub fn write_raw(&mut self, json: &str) -> Result<()> {
        let mut line = Vec::with_capacity(json.len() + 1);
        line.extend_from_slice(json.as_bytes());
        line.push(b'\n');
        self.file
            .append_line(&line)
            .map_err(|e| Error::io(&self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repo::{open_outputs, Inputs, OutputMode};

    /// Found by a review: a dataset saved with a byte order mark was "expected value at line
    /// 1 column 1".
    #[test]
    fn a_byte_order_mark_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("d.jsonl");
        std::fs::write(&path, "\u{feff}{\"instance_id\": \"a\"}\n").expect("write");
        let err = read_records(&path, &mut Vec::new()).expect_err("a BOM");
        assert!(err.is_input_error(), "{err:?}");
        assert!(err.to_string().contains("byte order mark (BOM)"), "{err}");
    }

    #[test]
    fn malformed_lines_name_file_and_line_and_special_files_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.jsonl");
        std::fs::write(&path, "{\"a\": 1}\n\n{oops\n").expect("write");
        let err = read_jsonl::<Value>(&path).expect_err("malformed");
        assert!(err.to_string().contains("x.jsonl:3"), "{err}");
        assert!(read_jsonl::<Value>(dir.path())
            .expect_err("a folder")
            .is_input_error());
        // A line or an item that is not an object is no record (serde reads a struct from a
        // list of its fields).
        std::fs::write(&path, "{\"a\": 1}\n[\"b\"]\n").expect("write");
        let err = read_jsonl::<Value>(&path).expect_err("an array line");
        assert!(err.to_string().contains("x.jsonl:2"), "{err}");
        assert!(err.to_string().contains("expected a JSON object"), "{err}");
        let array = dir.path().join("a.json");
        std::fs::write(
            &array,
            r#"[{"instance_id": "x", "repo": "o/r"}, ["y", "o/r"]]"#,
        )
        .expect("write");
        let err = read_jsonl_or_array::<crate::dataset::Instance>(&array).expect_err("an array");
        assert!(err.to_string().contains("a.json:2"), "{err}");
        // A record that repeats a key is refused, not read as its last value (in lines, in an
        // array, and in a record's nested object).
        let twice = r#"{"instance_id": "x", "patch": "a", "patch": "b"}"#;
        std::fs::write(&path, format!("{{\"a\": 1}}\n{twice}\n")).expect("write");
        let err = read_records(&path, &mut Vec::new()).expect_err("a repeated key");
        assert!(err.to_string().contains("x.jsonl:2"), "{err}");
        assert!(err.to_string().contains("duplicate key `patch`"), "{err}");
        std::fs::write(&array, format!("[{twice}]")).expect("write");
        let err = read_records(&array, &mut Vec::new()).expect_err("a repeated key");
        assert!(err.to_string().contains("duplicate key `patch`"), "{err}");
        std::fs::write(&path, r#"{"instance_id": "x", "spans": {"f": 1, "f": 2}}"#).expect("write");
        assert!(read_records(&path, &mut Vec::new()).is_err());
    }

    #[test]
    fn an_unterminated_tail_is_dropped_only_when_asked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("c.jsonl");
        std::fs::write(&path, "{\"a\": 1}\n{\"a\": 2, \"b").expect("write");
        assert_eq!(read_jsonl_appended::<Value>(&path).expect("reads").len(), 1);
        assert!(read_jsonl::<Value>(&path).is_err());
    }

    #[test]
    fn records_from_lines_or_an_array_and_duplicates_replace_with_a_warning() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r.json");
        std::fs::write(
            &path,
            r#"[{"instance_id": "a", "v": 1}, {"instance_id": "b"}, {"instance_id": "a", "v": 2}]"#,
        )
        .expect("write");
        let mut warnings = Vec::new();
        let records = read_records(&path, &mut warnings).expect("reads");
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].1["v"], 2);
        assert_eq!(warnings.len(), 1);
        std::fs::write(&path, "{\"id\": 1}\n").expect("write");
        assert!(read_records(&path, &mut warnings).is_err());
    }

    #[test]
    fn the_writer_creates_appends_and_replaces_its_own_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub/out.jsonl");
        let none = Inputs::new();
        let line = |n: u32| serde_json::json!({"instance_id": n.to_string()});
        let replace = OutputMode {
            append: false,
            holds: "lines",
            is_ours: |b| crate::repo::json_lines_with(b, &["instance_id"], b"{\"instance_id\":"),
        };
        // As a run opens its outputs: every one at once, then a writer for each.
        let write = |mode: OutputMode, n: u32| {
            open_outputs(&[(path.as_path(), mode, "out")], &none).and_then(|mut files| {
                let mut writer = JsonlWriter::from_file(&path, files.remove(0));
                writer.write(&line(n))?;
                writer.commit()
            })
        };
        write(replace, 1).expect("create");
        let append = OutputMode {
            append: true,
            ..replace
        };
        write(append, 2).expect("append");
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(text.lines().count(), 2);
        write(replace, 3).expect("replace");
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            "{\"instance_id\":\"3\"}\n"
        );
    }
}
