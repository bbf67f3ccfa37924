//! Agentless's output line (`loc_outputs.jsonl`, `schemas/agentless-loc-line.schema.json`), at
//! file level or, with blagent's functions, at related level.
//!
//! Agentless's `fl/localize.py --start_file` reads, per line, `instance_id` and `found_files`
//! (repository-relative paths, best first; an empty list makes it skip the instance), and,
//! because `additional_artifact_loc_file` is present, `file_traj` too. Its own `fl/combine.py`
//! writes both as `{}`, and so do we. Keys it does not know it ignores: our whole result rides
//! along under `blagent`.
//!
//! When `found_related_locs` is present it reads the related level as done and takes it with
//! `additional_artifact_loc_related` and `related_loc_traj` (all three, or a `KeyError`); its
//! edit-location stage (`--fine_grain_line_level` without `--related_level`) then renders the
//! code of those locations for its top `--top_n` files. [`AgentlessLine::with_related_locs`]
//! writes blagent's ranked functions there in the shape Agentless's related level writes
//! (`agentless/util/postprocess_data.py::extract_locs_for_files`): per file, one string of
//! `class: C` / `function: f` / `function: C.m` lines, which `transfer_arb_locs_to_locs`
//! resolves against the file's classes (nested ones too, by bare name) and functions: a nested
//! class `Outer.Inner` is written `class: Inner`, its method `function: Inner.run`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::result::LocalizationResult;
use crate::retrieve::Entity;

/// Files whose functions a related-level line names (Agentless's `--top_n` default).
pub const RELATED_TOP_FILES: usize = 3;
/// Files whose locations a related-level line also carries under `blagent_related_locs` (a key
/// Agentless ignores), so a step that drops files Agentless cannot open can name the next ones
/// without blagent.
pub const RELATED_MORE_FILES: usize = 10;
/// Functions (or classes) named per file at most, best first: as many as the function ranking
/// lists for every candidate file.
pub const RELATED_PER_FILE: usize = crate::retrieve::PER_FILE_FUNCTIONS;

/// An empty JSON object, as Agentless's `combine.py` writes for the file-level artifacts.
fn empty_object() -> serde_json::Map<String, serde_json::Value> {
    serde_json::Map::new()
}

/// One line of an Agentless file-level `loc_outputs.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentlessLine {
    /// The SWE-bench instance id.
    pub instance_id: String,
    /// Repository-relative paths, best first.
    pub found_files: Vec<String>,
    /// Agentless's file-level model artifact; `{}` for a localizer that is not Agentless's.
    #[serde(default = "empty_object")]
    pub additional_artifact_loc_file: serde_json::Map<String, serde_json::Value>,
    /// Agentless's file-level trajectory (prompt, response, usage); `{}` here.
    #[serde(default = "empty_object")]
    pub file_traj: serde_json::Map<String, serde_json::Value>,
    /// Related-level locations of the top files, in rank order (related-level lines only).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "ordered::serialize",
        deserialize_with = "ordered::deserialize"
    )]
    pub found_related_locs: Option<Vec<(String, Vec<String>)>>,
    /// Agentless's related-level model artifacts; `[]` here (related-level lines only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_artifact_loc_related: Option<Vec<serde_json::Value>>,
    /// Agentless's related-level trajectories; `[]` here (related-level lines only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related_loc_traj: Option<Vec<serde_json::Value>>,
    /// The locations of the top [`RELATED_MORE_FILES`] files, in rank order (related-level
    /// lines only), written under `blagent_related_locs`.
    #[serde(
        rename = "blagent_related_locs",
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "ordered::serialize",
        deserialize_with = "ordered::deserialize"
    )]
    pub related_locs_more: Option<Vec<(String, Vec<String>)>>,
    /// The localizer's settings that shaped the line (a batch's lines record them, so that a
    /// resumed batch runs with the same; see `resume::line_settings`), under
    /// `blagent_settings` (a key Agentless ignores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blagent_settings: Option<serde_json::Value>,
    /// blagent's full result (scores, evidence, entities, timings, usage, warnings), under
    /// `blagent` (a key Agentless ignores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blagent: Option<LocalizationResult>,
}

/// A map written in the order of its pairs (Agentless shows the files in that order).
mod ordered {
    use std::collections::BTreeMap;

    use super::{Deserialize, Deserializer, Serializer};

    type Pairs = Option<Vec<(String, Vec<String>)>>;

    pub fn serialize<S: Serializer>(pairs: &Pairs, s: S) -> Result<S::Ok, S::Error> {
        match pairs {
            Some(pairs) => s.collect_map(pairs.iter().map(|(k, v)| (k, v))),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Pairs, D::Error> {
        let map = Option::<BTreeMap<String, Vec<String>>>::deserialize(d)?;
        Ok(map.map(|m| m.into_iter().collect()))
    }
}

/// The Agentless location line of an entity: `class: C`, `function: f` or `function: C.m`,
/// with only the innermost class named (Agentless finds nested classes by their bare name and
/// splits `function:` names at the first dot).
fn location(entity: &Entity) -> String {
    let parts: Vec<&str> = entity.name.rsplitn(3, '.').collect();
    match (entity.kind.as_str(), parts.as_slice()) {
        ("class", [name, ..]) => format!("class: {name}"),
        (_, [name]) => format!("function: {name}"),
        (_, [method, class, ..]) => format!("function: {class}.{method}"),
        _ => format!("function: {}", entity.name),
    }
}

impl AgentlessLine {
    /// The line for `result`, which it carries whole under `blagent`.
    pub fn from_result(result: LocalizationResult) -> Self {
        AgentlessLine {
            instance_id: result.instance_id.clone(),
            found_files: result.paths(),
            additional_artifact_loc_file: empty_object(),
            file_traj: empty_object(),
            found_related_locs: None,
            additional_artifact_loc_related: None,
            related_loc_traj: None,
            related_locs_more: None,
            blagent_settings: None,
            blagent: Some(result),
        }
    }

    /// The related-level line: the file-level line plus, for each of the top
    /// [`RELATED_TOP_FILES`] files, the locations of its best [`RELATED_PER_FILE`] entities
    /// (an empty string for a file without any, which Agentless leaves out of its prompt),
    /// and the same for the top [`RELATED_MORE_FILES`] under `blagent_related_locs`. A class
    /// is named only in a file none of whose functions or methods is ranked: Agentless shows
    /// a named class whole, which for a large one fills the prompt. Needs a result of
    /// function granularity (its entities).
    pub fn with_related_locs(result: LocalizationResult) -> Self {
        let entities = result.entities.as_deref().unwrap_or_default();
        let more: Vec<(String, Vec<String>)> = result
            .paths()
            .into_iter()
            .take(RELATED_MORE_FILES.max(RELATED_TOP_FILES))
            .map(|path| {
                let mine: Vec<&Entity> = entities.iter().filter(|e| e.path == path).collect();
                let functions = mine.iter().any(|e| e.kind != "class");
                let mut lines: Vec<String> = Vec::new();
                for entity in mine.iter().filter(|e| !functions || e.kind != "class") {
                    let line = location(entity);
                    if !lines.contains(&line) && lines.len() < RELATED_PER_FILE {
                        lines.push(line);
                    }
                }
                (path, vec![lines.join("\n")])
            })
            .collect();
        AgentlessLine {
            found_related_locs: Some(more.iter().take(RELATED_TOP_FILES).cloned().collect()),
            additional_artifact_loc_related: Some(Vec::new()),
            related_loc_traj: Some(Vec::new()),
            related_locs_more: Some(more),
            ..Self::from_result(result)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interface::{
        Granularity, IndexStats, LocalizerInfo, Pipeline, StageTimings, TokenUsage, SCHEMA_VERSION,
    };

    fn empty_result() -> LocalizationResult {
        LocalizationResult {
            schema_version: SCHEMA_VERSION.to_owned(),
            instance_id: "x__y-1".to_owned(),
            localizer: LocalizerInfo::blagent("llm-free"),
            pipeline: Pipeline::Fused,
            granularity: Granularity::File,
            files: Vec::new(),
            entities: None,
            query: crate::query::Reformulation::default(),
            skipped: Vec::new(),
            stats: IndexStats::default(),
            timings: StageTimings::default(),
            usage: TokenUsage::default(),
            warnings: Vec::new(),
            llm: None,
        }
    }

    #[test]
    fn serializes_the_keys_agentless_reads_and_nothing_it_would_misread() {
        let result = empty_result();
        let value = serde_json::to_value(AgentlessLine::from_result(result)).expect("serializes");
        let keys: Vec<&str> = value
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "additional_artifact_loc_file",
                "blagent",
                "file_traj",
                "found_files",
                "instance_id"
            ]
        );
        assert_eq!(value["additional_artifact_loc_file"], serde_json::json!({}));
        assert_eq!(value["file_traj"], serde_json::json!({}));
        assert!(value.get("found_related_locs").is_none());
    }

    #[test]
    fn related_level_lines_name_the_top_files_functions_as_agentless_writes_them() {
        let entity = |path: &str, name: &str, kind: &str| Entity {
            id: crate::retrieve::entity_id(path, name),
            path: path.to_owned(),
            name: name.to_owned(),
            kind: kind.to_owned(),
            lines: (1, 2),
            score: 1.0,
            file_rank: 1,
            contributions: std::collections::BTreeMap::new(),
        };
        let file = |path: &str| crate::interface::FileHit {
            rank: 0,
            path: path.to_owned(),
            score: 0.0,
            signals: std::collections::BTreeMap::new(),
            contributions: std::collections::BTreeMap::new(),
            evidence: Vec::new(),
            hinted: false,
        };
        let mut result = empty_result();
        result.granularity = Granularity::Function;
        result.files = ["b.py", "a.py", "c.py", "d.py", "e.py"].map(file).to_vec();
        result.entities = Some(vec![
            entity("b.py", "Cart.total", "method"),
            entity("b.py", "Cart", "class"),
            entity("b.py", "helper", "function"),
            entity("a.py", "Outer.Inner.run", "method"),
            entity("a.py", "Outer.Inner", "class"),
            entity("d.py", "far", "function"),
            entity("e.py", "Only", "class"),
        ]);
        let text = serde_json::to_string(&AgentlessLine::with_related_locs(result)).unwrap();
        let order: Vec<usize> = ["\"b.py\":[", "\"a.py\":[", "\"c.py\":["]
            .iter()
            .map(|key| text.find(key).expect("each of the top 3 files"))
            .collect();
        assert!(order.is_sorted(), "in rank order: {text}");
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let related = value["found_related_locs"].as_object().unwrap();
        assert_eq!(related.len(), 3, "the top 3 files only");
        assert_eq!(
            related["b.py"],
            serde_json::json!(["function: Cart.total\nfunction: helper"]),
            "no class where a function is ranked"
        );
        assert_eq!(
            related["a.py"],
            serde_json::json!(["function: Inner.run"]),
            "nested names by their innermost class"
        );
        assert_eq!(related["c.py"], serde_json::json!([""]));
        assert!(
            !related.contains_key("e.py"),
            "only the top 3 in found_related_locs"
        );
        let more = value["blagent_related_locs"].as_object().unwrap();
        assert_eq!(more.len(), 5, "every file up to {RELATED_MORE_FILES}");
        assert_eq!(more["d.py"], serde_json::json!(["function: far"]));
        assert_eq!(
            more["e.py"],
            serde_json::json!(["class: Only"]),
            "a class alone is named"
        );
        assert_eq!(
            value["additional_artifact_loc_related"],
            serde_json::json!([])
        );
        assert_eq!(value["related_loc_traj"], serde_json::json!([]));
        assert_eq!(
            value["found_files"],
            serde_json::json!(["b.py", "a.py", "c.py", "d.py", "e.py"])
        );
    }
}
