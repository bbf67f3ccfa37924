//! Pipelines end to end on the example repository (`examples/minishop`) with scripted models.

mod blagent;
mod rrl;

use std::path::PathBuf;

use super::{LlmLocalizeResult, LlmOptions, Pipeline};
use crate::index::{IndexOptions, RepoIndex};
use crate::llm::{ChatModel, ChatRequest, ScriptedModel};
use crate::Localizer;

pub(super) fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

pub(super) fn minishop() -> RepoIndex {
    RepoIndex::build(&example().join("minishop"), &IndexOptions::default()).unwrap()
}

pub(super) fn issue() -> String {
    std::fs::read_to_string(example().join("minishop_issue.md")).unwrap()
}

pub(super) fn options(pipeline: Pipeline, top_k: usize) -> LlmOptions {
    LlmOptions {
        pipeline,
        top_k,
        ..LlmOptions::default()
    }
}

pub(super) fn run(
    index: &RepoIndex,
    issue: &str,
    model: &dyn ChatModel,
    options: &LlmOptions,
) -> LlmLocalizeResult {
    Localizer::default()
        .localize_with_llm(index, issue, model, options)
        .unwrap()
}

/// A model answering each stage from its own queue of replies.
pub(super) fn by_stage(script: &[(&'static str, &'static str)]) -> ScriptedModel {
    let script: Vec<(&'static str, &'static str)> = script.to_vec();
    let counters = std::sync::Mutex::new(std::collections::HashMap::<String, usize>::new());
    ScriptedModel::from_fn(move |request: &ChatRequest| {
        let mut counters = counters.lock().unwrap();
        let seen = counters.entry(request.stage.clone()).or_default();
        let reply = script
            .iter()
            .filter(|(stage, _)| *stage == request.stage)
            .nth(*seen)
            .map_or("(nothing more to say)", |r| r.1);
        *seen += 1;
        reply.to_owned()
    })
}

/// The paths of a result.
pub(super) fn paths(result: &LlmLocalizeResult) -> Vec<String> {
    result.result.paths()
}

/// The LLM-free ranking of the issue, completed with every file, cut at `k`.
pub(super) fn llm_free(index: &RepoIndex, issue: &str, k: usize) -> Vec<String> {
    let scored = Localizer::default().score(index, issue).unwrap();
    super::complete(index, scored.ranked.iter().map(|r| r.0))
        .into_iter()
        .take(k)
        .map(|f| index.files[f].path().to_owned())
        .collect()
}
