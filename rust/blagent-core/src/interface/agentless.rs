//! Agentless's file-level output line (`loc_outputs.jsonl`, `schemas/agentless-loc-line.schema.json`).
//!
//! Agentless's `fl/localize.py --start_file` reads, per line, `instance_id` and `found_files`
//! (repository-relative paths, best first; an empty list makes it skip the instance), and,
//! because `additional_artifact_loc_file` is present, `file_traj` too. Its own `fl/combine.py`
//! writes both as `{}`, and so do we. Keys it does not know it ignores: our whole result rides
//! along under [`EXTRA_KEY`]. The `found_related_locs` family must stay absent: its presence
//! would make Agentless read the related-level fields as already computed.

use serde::{Deserialize, Serialize};

use super::result::LocalizationResult;

/// The key under which a line carries blagent's own result.
pub const EXTRA_KEY: &str = "blagent";

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
    /// blagent's full result (scores, evidence, entities, timings, usage, warnings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blagent: Option<LocalizationResult>,
}

impl AgentlessLine {
    /// The line for `result`, which it carries whole under [`EXTRA_KEY`].
    pub fn from_result(result: LocalizationResult) -> Self {
        AgentlessLine {
            instance_id: result.instance_id.clone(),
            found_files: result.paths(),
            additional_artifact_loc_file: empty_object(),
            file_traj: empty_object(),
            blagent: Some(result),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interface::{
        Granularity, IndexStats, LocalizerInfo, Pipeline, StageTimings, TokenUsage, SCHEMA_VERSION,
    };

    #[test]
    fn serializes_the_keys_agentless_reads_and_nothing_it_would_misread() {
        let result = LocalizationResult {
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
        };
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
                EXTRA_KEY,
                "file_traj",
                "found_files",
                "instance_id"
            ]
        );
        assert_eq!(value["additional_artifact_loc_file"], serde_json::json!({}));
        assert_eq!(value["file_traj"], serde_json::json!({}));
        assert!(value.get("found_related_locs").is_none());
    }
}
