//! Resuming a batch: which instances an output file already holds, after dropping a last line
//! that an interrupted run left half-written, and whether its lines have the shape this run
//! would write.

use std::collections::HashSet;
use std::fs::File;
use std::path::Path;

use serde_json::Value;

use super::localizer::{settings_differences, LocalizeOptions};
use crate::dense::DEFAULT_MAX_TOKENS;
use crate::error::{Error, Result};
use crate::repo::LANGUAGES;
use crate::repo::{end_last_line, read_output};

/// What a batch's lines record of the settings that shape them: the pipeline, the
/// granularity (`blagent.pipeline`, `blagent.granularity`), whether they carry Agentless's
/// `found_related_locs`, and the localizer's settings ([`line_settings`], under
/// `blagent_settings`). A run resuming an output writes lines of the same shape, or one file
/// would hand Agentless's next stage two kinds of line, or rankings of two configurations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LineShape {
    pub pipeline: &'static str,
    pub granularity: &'static str,
    pub related_locs: bool,
    pub settings: Value,
    /// The model an LLM pipeline asks ([`asked_model`] of `blagent.llm.model`); `None` for the
    /// LLM-free pipeline.
    pub llm_model: Option<String>,
}

/// The model a run's model name asks, whichever backend answers it: `http:gpt-x`,
/// `replay:gpt-x` and `replay:gpt-x+http:gpt-x` all ask `gpt-x` (a run recorded live resumes
/// from its cassette); `none` is the LLM-free model.
pub(super) fn asked_model(name: &str) -> &str {
    match name.strip_prefix("replay:") {
        // A replay with a live fallback names both: `replay:M+http:M` (a model's own name may
        // hold a `+`).
        Some(replayed) => replayed.split("+http:").next().unwrap_or(replayed),
        None => name.strip_prefix("http:").unwrap_or(name),
    }
}

/// The settings of `options` that shape a batch's lines, as each line records them under
/// `blagent_settings`: what is indexed (tests, languages, sizes, history), how it is chunked
/// and weighed, and dense retrieval with its parameters (`null` without), each as it acts
/// (languages in lower case and order, every language of the table as none named, the
/// default token limit as unset). The model folder, the cache and the progress bar are left
/// out: where they are does not shape a line.
pub(super) fn line_settings(options: &LocalizeOptions) -> Value {
    acting(serde_json::to_value(options).unwrap_or(Value::Null))
}

/// Settings as they act ([`line_settings`]), whether this run's or as a line recorded them
/// (a line of an earlier build may hold them as given).
fn acting(mut value: Value) -> Value {
    for encoder in ["dense", "summaries"] {
        if let Some(dense) = value.get_mut(encoder).and_then(Value::as_object_mut) {
            for key in ["model_dir", "cache_dir", "progress"] {
                dense.remove(key);
            }
            if dense.get("max_tokens").is_some_and(Value::is_null) {
                dense.insert("max_tokens".to_owned(), DEFAULT_MAX_TOKENS.into());
            }
        }
    }
    if let Some(languages) = value
        .pointer_mut("/index/walk/languages")
        .and_then(Value::as_array_mut)
    {
        let mut names: Vec<String> = languages
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_lowercase)
            .collect();
        names.sort();
        names.dedup();
        let mut every: Vec<String> = LANGUAGES.iter().map(|l| l.name.to_owned()).collect();
        every.sort();
        if names == every {
            names.clear();
        }
        *languages = names.into_iter().map(Value::from).collect();
    }
    value
}

impl LineShape {
    /// How `line`, a batch output's line, differs from this shape, in words, if it does. A
    /// setting the line does not record (an older schema) matches any.
    fn differs(&self, line: &Value) -> Option<String> {
        let recorded = |name: &str| {
            line.get("blagent")
                .and_then(|b| b.get(name))
                .and_then(Value::as_str)
        };
        let mut what = Vec::new();
        for (name, ours) in [
            ("pipeline", self.pipeline),
            ("granularity", self.granularity),
        ] {
            if let Some(theirs) = recorded(name).filter(|theirs| *theirs != ours) {
                what.push(format!("{name} {theirs} (this run: {ours})"));
            }
        }
        let model = line
            .pointer("/blagent/llm/model")
            .and_then(Value::as_str)
            .map(asked_model);
        if let (Some(theirs), Some(ours)) = (model, self.llm_model.as_deref()) {
            if theirs != ours {
                what.push(format!("model {theirs} (this run: {ours})"));
            }
        }
        if let Some(theirs) = line.get("blagent_settings") {
            let mut differences = Vec::new();
            settings_differences(
                "",
                (&acting(theirs.clone()), &self.settings),
                "this run",
                &mut differences,
            );
            differences.truncate(5);
            what.extend(differences);
        }
        let related_locs = line.get("found_related_locs").is_some();
        if related_locs != self.related_locs {
            let with = |yes: bool| if yes { "with" } else { "without" };
            what.push(format!(
                "{} found_related_locs (this run: {})",
                with(related_locs),
                with(self.related_locs)
            ));
        }
        (!what.is_empty()).then(|| what.join(", "))
    }
}

/// The instance ids of the complete lines of the batch output `file` (opened to append, `out`
/// naming it), and whether an incomplete last line (no final newline, not valid JSON) was cut
/// off the file (as [`crate::repo::complete_last_line`] does).
///
/// A complete line that is not a JSON object with a string `instance_id` is an input error:
/// the file is not a `loc_outputs.jsonl`, and appending to it would be wrong. So is a line of
/// another shape than `shape` (another pipeline, granularity, or with or without related
/// locations). Both are found before the file is changed.
pub(super) fn existing_ids(
    out: &Path,
    file: &mut File,
    shape: &LineShape,
) -> Result<(HashSet<String>, bool)> {
    let bytes = read_output(file, out)?;
    let mut ids = HashSet::new();
    let refuse = |line: usize, message: String| Error::Dataset {
        path: out.to_path_buf(),
        line,
        message,
    };
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let tail = &bytes[complete..];
    // Read as every JSON input is, a key given twice refused (`crate::json::value`); what the
    // reading said when it refuses (nothing for bytes that are not UTF-8).
    let read = |line: &[u8]| match std::str::from_utf8(line) {
        Ok(text) => crate::json::value(text).map_err(|e| format!(": {e}")),
        Err(_) => Err(String::new()),
    };
    let not_ours = |line: usize, why: &str| {
        refuse(
            line,
            format!(
                "not a loc_outputs line (a JSON object with a string instance_id){why}; \
                 refusing to append"
            ),
        )
    };
    // A last line without its newline is whole by the rule that keeps it (`end_last_line`):
    // one that rule keeps but this reading refuses (a key given twice) is refused, not left
    // uncounted and then run again (a review found its instance written twice).
    let tail_is_whole = serde_json::from_slice::<serde_json::Value>(tail).is_ok();
    // Each complete line once (not the empty piece after the last newline), so that the
    // whole last line is numbered as the line it is.
    let lines = (complete > 0)
        .then(|| bytes[..complete - 1].split(|&b| b == b'\n'))
        .into_iter()
        .flatten()
        .chain(tail_is_whole.then_some(tail));
    for (i, line) in lines.enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // JSON the strict reading refuses says why (a key given twice, at its place).
        let value = read(line).map_err(|why| not_ours(i + 1, &why))?;
        let Some(id) = value
            .get("instance_id")
            .and_then(|id| id.as_str().map(str::to_owned))
        else {
            return Err(not_ours(i + 1, ""));
        };
        if let Some(difference) = shape.differs(&value) {
            return Err(refuse(
                i + 1,
                format!(
                    "written with other settings: {difference}; resume with the same settings or \
                     give another --out"
                ),
            ));
        }
        ids.insert(id);
    }
    let (_, truncated) = end_last_line(file, out, bytes)?;
    Ok((ids, truncated))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> LineShape {
        LineShape {
            pipeline: "fused",
            granularity: "file",
            related_locs: false,
            settings: line_settings(&LocalizeOptions::default()),
            llm_model: None,
        }
    }

    /// `out` opened as a batch opens its output: to append and read back.
    fn read_ids_as(out: &Path, shape: &LineShape) -> Result<(HashSet<String>, bool)> {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .read(true)
            .create(true)
            .open(out)
            .expect("open");
        existing_ids(out, &mut file, shape)
    }

    fn read_ids(out: &Path) -> Result<(HashSet<String>, bool)> {
        read_ids_as(out, &shape())
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
        // Found by a review: a line that gives its id twice resumed as the last one, where
        // `compare` and `analyze-failures` refuse it.
        let twice = "{\"instance_id\": \"b\", \"instance_id\": \"a\"}\n";
        std::fs::write(&out, twice).expect("write");
        let err = read_ids(&out).expect_err("a repeated key");
        assert!(err.to_string().contains("loc.jsonl:1"), "{err}");
        assert_eq!(std::fs::read_to_string(&out).expect("read"), twice);
        // The same as a last line without its newline: it was neither counted nor refused,
        // then kept, and its instance run again.
        let text = "{\"instance_id\": \"a\"}\n{\"instance_id\": \"b\", \"x\": 1, \"x\": 2}";
        std::fs::write(&out, text).expect("write");
        let err = read_ids(&out).expect_err("a repeated key");
        assert!(err.to_string().contains("loc.jsonl:2"), "{err}");
        assert_eq!(std::fs::read_to_string(&out).expect("read"), text);
    }

    /// Found by a review: a run resumed with another model, so that one output held the
    /// rankings of two. A cassette of the same model (`replay:`) resumes a live run.
    #[test]
    fn lines_of_another_model_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("loc.jsonl");
        let line = |model: &str| {
            format!(
                "{{\"instance_id\": \"a\", \"blagent\": {{\"pipeline\": \"blagent\", \
                 \"granularity\": \"file\", \"llm\": {{\"model\": \"{model}\"}}}}}}\n"
            )
        };
        let asking = |model: &str| LineShape {
            pipeline: "blagent",
            llm_model: Some(model.to_owned()),
            ..shape()
        };
        std::fs::write(&out, line("http:gpt-x")).expect("write");
        let err = read_ids_as(&out, &asking("other")).expect_err("another model");
        assert!(
            err.to_string().contains("model gpt-x (this run: other)"),
            "{err}"
        );
        assert!(read_ids_as(&out, &asking("gpt-x")).is_ok());
        std::fs::write(&out, line("replay:gpt-x+http:gpt-x")).expect("write");
        assert!(read_ids_as(&out, &asking("gpt-x")).is_ok());
        std::fs::write(&out, line("none")).expect("write");
        assert!(read_ids_as(&out, &asking("gpt-x")).is_err());
        // A `+` in a model's own name is part of it (a review).
        std::fs::write(&out, line("http:foo+bar")).expect("write");
        assert!(read_ids_as(&out, &asking("foo+baz")).is_err());
        assert!(read_ids_as(&out, &asking("foo+bar")).is_ok());
        assert_eq!(asked_model("replay:foo+bar+http:foo+bar"), "foo+bar");
    }

    #[test]
    fn lines_of_another_shape_are_refused_before_anything_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("loc.jsonl");
        let file_line =
            r#"{"instance_id": "a", "blagent": {"pipeline": "fused", "granularity": "file"}}"#;
        let related = r#"{"instance_id": "b", "found_related_locs": {}, "blagent": {"pipeline": "fused", "granularity": "function"}}"#;
        // Two shapes in the file, then a line cut short: the second line is refused and the
        // cut-short one is still there.
        let text = format!("{file_line}\n{related}\n{{\"instance_id\": \"c\", \"fou");
        std::fs::write(&out, &text).expect("write");
        let err = read_ids(&out).expect_err("another shape");
        assert!(err.is_input_error());
        let message = err.to_string();
        assert!(
            message.contains(":2:")
                && message.contains("granularity function (this run: file)")
                && message.contains("with found_related_locs (this run: without)"),
            "{message}"
        );
        assert_eq!(std::fs::read_to_string(&out).expect("read"), text);
        // The same settings as the lines: read, and the cut-short line dropped.
        std::fs::write(&out, format!("{related}\n")).expect("write");
        let related_shape = LineShape {
            granularity: "function",
            related_locs: true,
            ..shape()
        };
        let (ids, _) = read_ids_as(&out, &related_shape).expect("same shape");
        assert!(ids.contains("b"));
        let err = read_ids_as(
            &out,
            &LineShape {
                pipeline: "rrl",
                ..related_shape
            },
        )
        .expect_err("another pipeline");
        assert!(err.to_string().contains("pipeline fused (this run: rrl)"));
        // A line of an older schema without the settings matches any shape.
        std::fs::write(&out, "{\"instance_id\": \"old\"}\n").expect("write");
        assert!(read_ids(&out).expect("older lines").0.contains("old"));
    }

    /// Found by a hostile review: a batch resumed with other localizer settings (dense,
    /// tests, history) appended lines ranked another way without a word. The lines record
    /// the settings, and a resume with others is refused, naming them; where the model
    /// folder or the cache is does not count.
    #[test]
    fn lines_written_with_other_localizer_settings_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("loc.jsonl");
        let mut theirs = LocalizeOptions::default();
        theirs.index.walk.include_tests = true;
        theirs.index.history_commits = 0;
        let line = serde_json::json!({
            "instance_id": "a",
            "blagent_settings": line_settings(&theirs),
        });
        std::fs::write(&out, format!("{line}\n")).expect("write");
        let message = read_ids(&out).expect_err("other settings").to_string();
        assert!(
            message.contains("index.walk.include_tests true (this run: false)")
                && message.contains("index.history_commits 0 (this run: "),
            "{message}"
        );
        let same = LineShape {
            settings: line_settings(&theirs),
            ..shape()
        };
        assert!(read_ids_as(&out, &same)
            .expect("same settings")
            .0
            .contains("a"));
        let mut languages = theirs.clone();
        languages.index.walk.languages = vec!["python".into(), "java".into()];
        let mut reordered = theirs.clone();
        reordered.index.walk.languages = vec!["Java".into(), "python".into(), "java".into()];
        assert_eq!(line_settings(&languages), line_settings(&reordered));
        // Found by the review of this check: settings that act the same are the same, in this
        // run and as a line recorded them.
        let mut every = theirs.clone();
        every.index.walk.languages = vec!["python".into(), "java".into(), "kotlin".into()];
        assert_eq!(line_settings(&every), line_settings(&theirs));
        let mut recorded = line_settings(&theirs);
        recorded["index"]["walk"]["languages"] = serde_json::json!(["kotlin", "Java", "python"]);
        let line = serde_json::json!({"instance_id": "a", "blagent_settings": recorded});
        std::fs::write(&out, format!("{line}\n")).expect("write");
        assert!(read_ids_as(&out, &same)
            .expect("as it acts")
            .0
            .contains("a"));
    }
}
