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
//!
//! A name finds the wrong code in Agentless where its parser (`parse_python_file`) and
//! `transfer_arb_locs_to_locs` read a Python file otherwise than blagent: it lists no `async def`
//! and no method under an `if` in a class body, leaves a function out when a class it met
//! first has a method of that name (then `function: f` finds that method), and takes the first
//! class, method or function of a name. In a Python file whose symbols say a name could land
//! elsewhere, the entity is written as `line: N` lines instead, one per line of it, which
//! Agentless shows whatever its context window ([`locations_of`]).

use std::collections::HashMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::result::LocalizationResult;
use crate::chunk::{Symbol, SymbolKind};
use crate::index::RepoIndex;
use crate::repo::language_for_path;
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

/// The symbols of a related-level line's Python files, by path: what tells whether Agentless
/// finds an entity by its name ([`locations_of`]). A file not here is named by names.
pub type FileSymbols<'a> = HashMap<&'a str, &'a [Symbol]>;

/// The symbols of the Python files among the first [`RELATED_MORE_FILES`] of `result`, as
/// `index` (the repository's index the result was ranked in) parsed them; a file whose parse
/// ran past its time budget is left out.
pub fn python_symbols<'a>(index: &'a RepoIndex, result: &LocalizationResult) -> FileSymbols<'a> {
    let ranked: Vec<String> = result
        .paths()
        .into_iter()
        .take(RELATED_MORE_FILES)
        .collect();
    index
        .files
        .iter()
        .filter(|file| {
            let parsed = &file.parsed;
            !parsed.parse_too_slow
                && language_for_path(&parsed.path).is_some_and(|l| l.name == "python")
                && ranked.contains(&parsed.path)
        })
        .map(|file| (file.parsed.path.as_str(), file.parsed.symbols.as_slice()))
        .collect()
}

/// Whether Agentless finds `entity`'s own definition by [`location`]'s name, judged from its
/// file's `symbols`: the definition is one of a kind Agentless lists (not `async`; a method
/// directly in its class's body) and the name can lead nowhere else (a function whose bare
/// name nothing else in the file has; a class, or a method's class, of a name no other class
/// has; a method or class defined once).
fn found_by_name(entity: &Entity, symbols: &[Symbol]) -> bool {
    let mut own = symbols.iter().filter(|s| s.qualified == entity.name);
    let (Some(own), None) = (own.next(), own.next()) else {
        // Not found as blagent names it, or defined more than once (`@overload` stubs,
        // `if`/`else` twins): Agentless takes the first of a name.
        return false;
    };
    let classes_named = |name: &str| {
        symbols
            .iter()
            .filter(|s| s.kind == SymbolKind::Class && s.name == name)
            .count()
    };
    if own.signature.starts_with("async ") {
        return false;
    }
    match own.kind {
        SymbolKind::Class => classes_named(&own.name) == 1,
        SymbolKind::Method => {
            let class = entity.name.rsplit('.').nth(1).unwrap_or_default();
            own.direct && classes_named(class) == 1
        }
        SymbolKind::Function => symbols.iter().filter(|s| s.name == own.name).count() == 1,
    }
}

/// What a related-level line writes for `entity`: [`location`]'s name, or, in a file of
/// `symbols` where Agentless would not find it by that name ([`found_by_name`]), a `line: N`
/// for each of its lines.
fn locations_of(entity: &Entity, symbols: Option<&&[Symbol]>) -> String {
    match symbols {
        Some(symbols) if !found_by_name(entity, symbols) => {
            let (start, end) = entity.lines;
            (start..=end)
                .map(|n| format!("line: {n}"))
                .collect::<Vec<_>>()
                .join("\n")
        }
        _ => location(entity),
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
    /// function granularity (its entities). An entity of a file in `symbols` that Agentless
    /// would not find by its name is written as its lines ([`locations_of`]).
    pub fn with_related_locs(result: LocalizationResult, symbols: &FileSymbols) -> Self {
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
                    let line = locations_of(entity, symbols.get(path.as_str()));
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
    use crate::chunk::{parse_file, ChunkOptions};
    use crate::interface::{
        Granularity, IndexStats, LocalizerInfo, Pipeline, StageTimings, TokenUsage, SCHEMA_VERSION,
    };
    use crate::repo::SourceFile;

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
    fn names_agentless_would_resolve_elsewhere_are_written_as_lines() {
        // Each case found by a review with Agentless's own parser, which resolved the name to
        // other code (or to none).
        let text = "\
import sys
from typing import overload


class Validator:
    def validate(self, x):
        return x > 0

    if sys.version_info > (3,):
        def legacy(self):
            return 1

    async def fetch(self):
        return 2


def validate(value):
    return value is not None


def helper():
    return 3


async def poll():
    return 4


@overload
def fixture(a: int) -> int: ...
def fixture(a):
    return a


class Form:
    class Meta:
        def render(self):
            return 5


class Model:
    class Meta:
        def render(self):
            return 6
";
        let language = language_for_path("v.py").unwrap();
        let file = SourceFile::new("v.py".into(), language, text.into(), false);
        let symbols = parse_file(&file, &ChunkOptions::default()).symbols;
        let of = |name: &str, line: usize| {
            let symbol = symbols
                .iter()
                .find(|s| s.qualified == name && s.start_line <= line && line <= s.end_line)
                .unwrap_or_else(|| panic!("{name} at {line}"));
            Entity {
                id: crate::retrieve::entity_id("v.py", name),
                path: "v.py".to_owned(),
                name: name.to_owned(),
                kind: symbol.kind.name().to_owned(),
                lines: (symbol.start_line, symbol.end_line),
                score: 1.0,
                file_rank: 1,
                contributions: std::collections::BTreeMap::new(),
            }
        };
        let lines = |from: usize, to: usize| {
            (from..=to)
                .map(|n| format!("line: {n}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let cases = [
            (
                of("Validator.validate", 6),
                "function: Validator.validate".to_owned(),
            ),
            (of("helper", 21), "function: helper".to_owned()),
            (of("Validator", 5), "class: Validator".to_owned()),
            // A class met first has a method `validate`: Agentless leaves the function out and
            // `function: validate` finds that method.
            (of("validate", 17), lines(17, 18)),
            // Not listed by Agentless: a method under an `if` in its class body, `async`.
            (of("Validator.legacy", 10), lines(10, 11)),
            (of("Validator.fetch", 13), lines(13, 14)),
            (of("poll", 25), lines(25, 26)),
            // The first `fixture` is the overload stub.
            (of("fixture", 31), lines(31, 32)),
            // Agentless takes the first class `Meta`.
            (of("Form.Meta.render", 37), lines(37, 38)),
            (of("Model.Meta.render", 43), lines(43, 44)),
        ];
        let mut files = FileSymbols::new();
        files.insert("v.py", symbols.as_slice());
        for (entity, want) in cases {
            assert_eq!(
                locations_of(&entity, files.get("v.py")),
                want,
                "{}",
                entity.name
            );
            // Without the file's symbols, the name as before.
            assert_eq!(locations_of(&entity, None), location(&entity));
        }
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
        let text = serde_json::to_string(&AgentlessLine::with_related_locs(
            result,
            &FileSymbols::new(),
        ))
        .unwrap();
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
