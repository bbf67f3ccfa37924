//! Reading the four inputs: the dataset (gold patches), localization outputs, generated
//! patches (SWE-bench predictions) and the evaluation report.
//!
//! JSONL files may also be a single JSON array of records. A line that is not a JSON object
//! with a string `instance_id` is an error naming the file and line; a repeated id is a
//! warning (the last record wins).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::functions::{collect_entries, LocEntry};
use crate::dataset::{first_of_each_id, load_dataset, read_records, Instance};
use crate::error::{Error, Result};

/// Localization fields read for function-level entries (see [`collect_entries`]).
pub const FUNCTION_FIELDS: [&str; 6] = [
    "found_functions",
    "found_entities",
    "found_modules",
    "found_related_locs",
    "found_edit_locs",
    "found_lines",
];

/// One instance's localization output.
#[derive(Debug, Clone, Default)]
pub struct Localization {
    /// Ranked files, best first.
    pub found_files: Vec<String>,
    /// Function-level entries and line ranges, from any of [`FUNCTION_FIELDS`], else from the
    /// ids of a blagent result's `entities` (`blagent.entities`).
    pub entries: Vec<LocEntry>,
}

/// The `path::Class.method` ids of the entities of the blagent result a record carries
/// (`blagent.entities`, a `batch --granularity function` line's ranking), in rank order,
/// classes too or not; `None` where it carries none.
pub fn result_entity_ids(record: &Map<String, Value>, classes: bool) -> Option<Vec<String>> {
    let entities = record.get("blagent")?.get("entities")?.as_array()?;
    Some(
        entities
            .iter()
            .filter(|e| classes || e.get("kind").and_then(Value::as_str) != Some("class"))
            .filter_map(|e| e.get("id")?.as_str().map(str::to_owned))
            .collect(),
    )
}

/// What the evaluation said of an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The generated patch made the tests pass.
    Resolved,
    /// It did not.
    Unresolved,
    /// No patch was generated.
    EmptyPatch,
    /// The evaluation itself failed (SWE-bench `error_ids`); analysed as unresolved.
    Error,
    /// No evaluation report was given: only the localization stages are judged.
    NotEvaluated,
}

/// The string `key` of a record of `path` (missing or null: empty); any other type is bad
/// input, not read as empty.
fn string_field(map: &Map<String, Value>, key: &str, (path, id): (&Path, &str)) -> Result<String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(other) => Err(Error::InvalidInput(format!(
            "{}: the {key} of {id} is a {}, not a string (or null)",
            path.display(),
            json_type(other)
        ))),
    }
}

/// The JSON type of `value`, in words.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}

/// Reads the dataset as `eval` and `batch` do ([`load_dataset`]: gold files from a row's
/// `gold_files`, else from its `patch`); an id listed twice is analyzed at its first line, and
/// a warning counts the later ones.
pub fn load_gold(path: &Path, warnings: &mut Vec<String>) -> Result<Vec<Instance>> {
    let mut instances = load_dataset(path)?;
    let listed = instances.len();
    first_of_each_id(&mut instances, |i| &i.instance_id);
    if instances.len() < listed {
        warnings.push(format!(
            "{}: {} later record(s) of an instance listed twice ignored; each is analyzed at \
             its first line",
            path.display(),
            listed - instances.len()
        ));
    }
    Ok(instances)
}

/// Reads localization outputs: `found_files` plus the function-level fields.
pub fn load_localizations(
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<HashMap<String, Localization>> {
    let mut out = HashMap::new();
    let mut without = Vec::new();
    let mut not_text = Vec::new();
    for (id, map) in read_records(path, warnings)? {
        let found_files: Vec<String> = match map.get("found_files") {
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            Some(Value::Null) | None => {
                without.push(id.clone());
                Vec::new()
            }
            Some(_) => {
                return Err(Error::InvalidInput(format!(
                    "{}: {id}: `found_files` is not a list of paths",
                    path.display()
                )))
            }
        };
        let mut entries = Vec::new();
        for field in FUNCTION_FIELDS {
            if let Some(value) = map.get(field) {
                if !value.is_null() && holds_no_text_leaf(value) {
                    not_text.push(id.clone());
                }
                collect_entries(value, None, &found_files, &mut entries);
            }
        }
        if entries.is_empty() {
            let entities = map.get("blagent").and_then(|b| b.get("entities"));
            if let Some(Value::Array(entities)) = entities {
                if entities
                    .iter()
                    .any(|e| !e.get("id").is_some_and(Value::is_string))
                {
                    not_text.push(id.clone());
                }
            }
            // A line of `blagent batch --granularity function` carries its ranking only in
            // its result (`blagent.entities`, each with its `path::Class.method` id).
            if let Some(ids) = result_entity_ids(&map, true) {
                let ids: Vec<Value> = ids.into_iter().map(Value::String).collect();
                collect_entries(&Value::Array(ids), None, &found_files, &mut entries);
            }
        }
        out.insert(
            id,
            Localization {
                found_files,
                entries,
            },
        );
    }
    if !without.is_empty() {
        warnings.push(format!(
            "{}: {} record(s) without a `found_files` list rank no file: {}",
            path.display(),
            without.len(),
            crate::dataset::first_ids(&without)
        ));
    }
    if !not_text.is_empty() {
        not_text.dedup();
        warnings.push(format!(
            "{}: {} record(s) hold function-level entries that are not text (a number, true, \
             false or null where a location is expected, or an entity without a text `id`), \
             which are ignored: {}",
            path.display(),
            not_text.len(),
            crate::dataset::first_ids(&not_text)
        ));
    }
    Ok(out)
}

/// Whether a localization field holds, at any depth, a value that is no location: a number,
/// `true`, `false` or `null` inside its lists or objects.
fn holds_no_text_leaf(value: &Value) -> bool {
    match value {
        Value::String(_) => false,
        Value::Array(items) => items.iter().any(holds_no_text_leaf),
        Value::Object(map) => map.values().any(holds_no_text_leaf),
        Value::Null | Value::Bool(_) | Value::Number(_) => true,
    }
}

/// Reads generated patches: `model_patch` (missing or null reads as empty; another type is
/// bad input).
pub fn load_predictions(
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<HashMap<String, String>> {
    read_records(path, warnings)?
        .into_iter()
        .map(|(id, map)| {
            let model_patch = string_field(&map, "model_patch", (path, &id))?;
            Ok((id, model_patch))
        })
        .collect()
}

/// The id lists a report may hold, with the outcome each means; earlier lists win ties.
const REPORT_KEYS: [(&str, &str, Outcome); 4] = [
    ("resolved_ids", "resolved", Outcome::Resolved),
    ("empty_patch_ids", "empty_patch", Outcome::EmptyPatch),
    ("unresolved_ids", "unresolved", Outcome::Unresolved),
    ("error_ids", "error", Outcome::Error),
];

/// Reads an evaluation report. Accepted shapes: SWE-bench's run report (`resolved_ids`,
/// `unresolved_ids`, `empty_patch_ids`, `error_ids`), the plain `{"resolved": [...],
/// "unresolved": [...], "empty_patch": [...], "error": [...]}`, and SWE-bench's per-instance
/// report (`{id: {"resolved": bool, "patch_exists": bool, ...}}`).
pub fn load_report(path: &Path, warnings: &mut Vec<String>) -> Result<BTreeMap<String, Outcome>> {
    let text = crate::repo::read::read_user_json(
        path,
        crate::repo::read::MAX_DATA_FILE_BYTES,
        "evaluation report",
    )?;
    let bad = |message: String| {
        Error::InvalidInput(format!("{}: {message}", PathBuf::from(path).display()))
    };
    let Value::Object(map) =
        crate::json::value(&text).map_err(|e| bad(format!("not JSON: {e}")))?
    else {
        return Err(bad("expected a JSON object".into()));
    };
    let mut outcomes: BTreeMap<String, Outcome> = BTreeMap::new();
    let mut found_list = false;
    for (long, short, outcome) in REPORT_KEYS {
        let Some(value) = map.get(long).or_else(|| map.get(short)) else {
            continue;
        };
        let ids = value.as_array().filter(|a| a.iter().all(Value::is_string));
        let ids = ids.ok_or_else(|| {
            bad(format!(
                "`{long}` / `{short}` must be a list of instance ids"
            ))
        })?;
        found_list = true;
        for id in ids.iter().filter_map(Value::as_str) {
            match outcomes.get(id) {
                Some(earlier) if *earlier != outcome => warnings.push(format!(
                    "report lists {id} as both {earlier:?} and {outcome:?}; kept {earlier:?}"
                )),
                Some(_) => {}
                None => {
                    outcomes.insert(id.to_owned(), outcome);
                }
            }
        }
    }
    if found_list {
        return Ok(outcomes);
    }
    let per_instance = !map.is_empty()
        && map
            .values()
            .all(|v| v.get("resolved").is_some_and(Value::is_boolean));
    if !per_instance {
        return Err(bad("no resolved / unresolved / empty-patch id lists (see `blagent analyze-failures --help`)".into()));
    }
    for (id, value) in &map {
        let flag = |key: &str| value.get(key).and_then(Value::as_bool);
        let outcome = if flag("resolved") == Some(true) {
            Outcome::Resolved
        } else if flag("patch_is_None") == Some(true) || flag("patch_exists") == Some(false) {
            Outcome::EmptyPatch
        } else {
            Outcome::Unresolved
        };
        outcomes.insert(id.clone(), outcome);
    }
    Ok(outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn malformed_lines_are_errors_naming_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Vec::new();
        let p = write(
            &dir,
            "p.jsonl",
            "{\"instance_id\": \"a\", \"model_patch\": \"\"}\n\n{oops\n",
        );
        assert!(load_predictions(&p, &mut w)
            .unwrap_err()
            .to_string()
            .contains("p.jsonl:3"));
        let p = write(&dir, "q.jsonl", "{\"model_patch\": \"\"}\n");
        assert!(load_predictions(&p, &mut w)
            .unwrap_err()
            .to_string()
            .contains("instance_id"));
        let p = write(&dir, "r.jsonl", "[1, 2]\n");
        assert!(load_predictions(&p, &mut w)
            .unwrap_err()
            .to_string()
            .contains("r.jsonl:1"));
    }

    #[test]
    fn json_arrays_nulls_and_duplicates() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Vec::new();
        let p = write(
            &dir,
            "p.json",
            r#"[{"instance_id": "a", "model_patch": null}, {"instance_id": "a", "model_patch": "x"}]"#,
        );
        let preds = load_predictions(&p, &mut w).unwrap();
        assert_eq!(preds["a"], "x");
        assert_eq!(w.len(), 1);
        let l = write(
            &dir,
            "l.jsonl",
            r#"{"instance_id": "a", "found_files": ["x.py"], "found_functions": ["x.py::f"]}"#,
        );
        let locs = load_localizations(&l, &mut w).unwrap();
        assert_eq!(locs["a"].found_files, ["x.py"]);
        assert_eq!(locs["a"].entries.len(), 1);
    }

    /// Found by a review: a line of `blagent batch --granularity function` carries its function
    /// ranking only under `blagent.entities`, which `analyze-failures` did not read (it judged
    /// the function stage from the generated patch, without a word).
    #[test]
    fn a_blagent_results_entities_are_its_function_ranking() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Vec::new();
        let line = r#"{"instance_id": "a", "found_files": ["m.py"], "blagent": {"entities": [{"id": "m.py::Cart.helper", "path": "m.py"}, {"id": "m.py::run"}]}}
{"instance_id": "b", "found_files": ["m.py"], "found_functions": ["m.py::other"], "blagent": {"entities": [{"id": "m.py::Cart.helper"}]}}"#;
        let locs = load_localizations(&write(&dir, "b.jsonl", line), &mut w).unwrap();
        let names = |id: &str| -> Vec<String> {
            locs[id]
                .entries
                .iter()
                .map(|e| match e {
                    LocEntry::Function { path, name, full } => {
                        assert!(full);
                        format!("{}::{name}", path.as_deref().unwrap_or(""))
                    }
                    LocEntry::Lines { .. } => panic!("no lines here"),
                })
                .collect()
        };
        assert_eq!(names("a"), ["m.py::Cart.helper", "m.py::run"]);
        assert_eq!(names("b"), ["m.py::other"], "a function field comes first");
    }

    #[test]
    fn the_dataset_is_read_as_eval_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Vec::new();
        let patch = "diff --git a/x.py b/x.py\n";
        let rows = serde_json::json!([
            {"instance_id": "a", "patch": patch},
            {"instance_id": "b", "patch": patch, "gold_files": ["y.py"]},
            {"instance_id": "a", "patch": "diff --git a/z.py b/z.py\n"},
        ]);
        let lines: Vec<String> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        let jsonl = lines.join("\n") + "\n";
        for (name, text) in [("d.jsonl", jsonl), ("d.json", rows.to_string())] {
            let gold = load_gold(&write(&dir, name, &text), &mut w).unwrap();
            let files: Vec<(&str, &[String])> = gold
                .iter()
                .map(|i| (i.instance_id.as_str(), i.gold_files.as_slice()))
                .collect();
            let (x, y) = (["x.py".to_owned()], ["y.py".to_owned()]);
            assert_eq!(files, [("a", &x[..]), ("b", &y[..])], "{name}");
            assert!(w.pop().unwrap().contains("1 later record(s)"), "{name}");
        }
    }

    #[test]
    fn report_shapes() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Vec::new();
        let swe = write(
            &dir,
            "a.json",
            r#"{"resolved_ids": ["a"], "unresolved_ids": ["b", "a"], "empty_patch_ids": ["c"], "error_ids": ["d"], "total_instances": 4}"#,
        );
        let r = load_report(&swe, &mut w).unwrap();
        assert_eq!(
            r.values().copied().collect::<Vec<_>>(),
            [
                Outcome::Resolved,
                Outcome::Unresolved,
                Outcome::EmptyPatch,
                Outcome::Error
            ]
        );
        assert_eq!(w.len(), 1, "a listed twice");
        let plain = write(&dir, "b.json", r#"{"resolved": [], "unresolved": ["x"]}"#);
        assert_eq!(
            load_report(&plain, &mut w).unwrap()["x"],
            Outcome::Unresolved
        );
        let per = write(
            &dir,
            "c.json",
            r#"{"x": {"resolved": false, "patch_exists": false}, "y": {"resolved": true}}"#,
        );
        let r = load_report(&per, &mut w).unwrap();
        assert_eq!((r["x"], r["y"]), (Outcome::EmptyPatch, Outcome::Resolved));
        let counts = write(&dir, "d.json", r#"{"resolved": 3}"#);
        assert!(load_report(&counts, &mut w)
            .unwrap_err()
            .to_string()
            .contains("list of instance ids"));
        let other = write(&dir, "e.json", r#"{"hello": 1}"#);
        assert!(load_report(&other, &mut w).is_err());
    }
}
