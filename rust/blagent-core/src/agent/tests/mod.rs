//! Pipelines end to end on the example repository (`examples/minishop`) with scripted models.

mod blagent;
mod rrl;

use std::path::PathBuf;

use super::{LlmOptions, LlmRanking, Pipeline};
use crate::index::{IndexOptions, RepoIndex};
use crate::llm::{ChatModel, ChatRequest, ScriptedModel};
use crate::retrieve::{complete, score, Ask, FusionWeights, Granularity, SearchIndex};

pub(super) fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

pub(super) fn minishop() -> SearchIndex {
    RepoIndex::build(&example().join("minishop"), &IndexOptions::default())
        .unwrap()
        .into()
}

pub(super) fn issue() -> String {
    std::fs::read_to_string(example().join("minishop_issue.md")).unwrap()
}

/// What one run of a test takes: the pipeline, what is asked, and the LLM options (reached
/// through `Deref`, so a test sets `setup.max_steps` directly).
#[derive(Clone)]
pub(super) struct Setup {
    pub pipeline: Pipeline,
    pub ask: Ask,
    pub options: LlmOptions,
}

impl std::ops::Deref for Setup {
    type Target = LlmOptions;
    fn deref(&self) -> &LlmOptions {
        &self.options
    }
}

impl std::ops::DerefMut for Setup {
    fn deref_mut(&mut self) -> &mut LlmOptions {
        &mut self.options
    }
}

/// `pipeline` with the default options, asked for `top_k` files.
pub(super) fn options(pipeline: Pipeline, top_k: usize) -> Setup {
    Setup {
        pipeline,
        ask: Ask::new(top_k, Granularity::File).unwrap(),
        options: LlmOptions::default(),
    }
}

pub(super) fn run(
    index: &SearchIndex,
    issue: &str,
    model: &dyn ChatModel,
    setup: &Setup,
) -> Ranked {
    let ranking = super::localize(
        index,
        issue,
        setup.pipeline,
        setup.ask,
        model,
        &setup.options,
        &FusionWeights::default(),
    )
    .unwrap();
    let paths = ranking
        .ranked
        .iter()
        .map(|&(f, _)| index.repo.files[f].path().to_owned())
        .collect();
    Ranked { ranking, paths }
}

/// A run's ranking and its paths.
pub(super) struct Ranked {
    pub ranking: LlmRanking,
    pub paths: Vec<String>,
}

impl std::ops::Deref for Ranked {
    type Target = LlmRanking;
    fn deref(&self) -> &LlmRanking {
        &self.ranking
    }
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
pub(super) fn paths(result: &Ranked) -> Vec<String> {
    result.paths.clone()
}

/// The LLM-free ranking of the issue, completed with every file, cut at `k`.
pub(super) fn llm_free(index: &SearchIndex, issue: &str, k: usize) -> Vec<String> {
    let scored = score(index, issue, &FusionWeights::default(), None).unwrap();
    complete(&index.repo, scored.ranked.iter().map(|r| r.0))
        .into_iter()
        .take(k)
        .map(|f| index.repo.files[f].path().to_owned())
        .collect()
}
