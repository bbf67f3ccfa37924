//! Answering a [`LocalizeRequest`] with an LLM pipeline: the same result contract, with the
//! model's token usage and `localizer.mode` naming the pipeline and the model.

use std::time::Instant;

use super::request::{Granularity, LocalizeRequest};
use super::result::{
    EvidenceItem, FileHit, LocalizationResult, LocalizerInfo, StageTimings, TokenUsage,
};
use super::SCHEMA_VERSION;
use crate::agent::{LlmLocalizeResult, LlmOptions};
use crate::elapsed_ms;
use crate::error::Result;
use crate::index::RepoIndex;
use crate::llm::ChatModel;
use crate::localizer::Localizer;

impl Localizer {
    /// Answers `request` in an index of its repository with the LLM pipeline of `options`; the
    /// request's `top_k` and `granularity` apply. Hints are not used by the pipelines (a warning
    /// says so).
    pub fn localize_request_with_llm(
        &self,
        index: &RepoIndex,
        request: &LocalizeRequest,
        model: &dyn ChatModel,
        options: &LlmOptions,
    ) -> Result<LocalizationResult> {
        let start = Instant::now();
        request.validate()?;
        let options = LlmOptions {
            top_k: request.top_k,
            functions: request.granularity == Granularity::Function,
            ..options.clone()
        };
        let result = self.localize_with_llm(index, &request.issue, model, &options)?;
        let mut out = to_interface(request, result);
        if !request.hints.files.is_empty() {
            out.warnings
                .push("hints are not used by the LLM pipelines; they were ignored".to_owned());
        }
        out.timings = StageTimings {
            walk_ms: index.timings.walk_ms,
            parse_ms: index.timings.parse_ms,
            index_ms: index.timings.index_ms,
            query_ms: elapsed_ms(start),
            total_ms: 0.0,
        };
        out.timings.total_ms = out.timings.walk_ms
            + out.timings.parse_ms
            + out.timings.index_ms
            + out.timings.query_ms;
        Ok(out)
    }
}

/// The standardized result of an LLM run.
pub fn to_interface(request: &LocalizeRequest, result: LlmLocalizeResult) -> LocalizationResult {
    let llm = result.llm;
    let pipeline = serde_json::to_value(llm.pipeline)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let mut warnings: Vec<String> = llm
        .stats
        .fallbacks
        .iter()
        .map(|f| format!("LLM fallback: {f}"))
        .collect();
    if result.result.files.is_empty() {
        warnings.push("the repository has no indexed file; the ranking is empty".to_owned());
    }
    LocalizationResult {
        schema_version: SCHEMA_VERSION.to_owned(),
        instance_id: request.instance_id.clone(),
        localizer: LocalizerInfo {
            mode: format!("llm:{pipeline}:{}", llm.model),
            ..LocalizerInfo::blagent_llm_free()
        },
        granularity: request.granularity,
        files: result
            .result
            .files
            .into_iter()
            .map(|f| FileHit {
                rank: f.rank,
                path: f.path,
                score: f.score,
                signals: f.signals,
                evidence: f.evidence.iter().map(EvidenceItem::from).collect(),
                hinted: false,
            })
            .collect(),
        entities: (request.granularity == Granularity::Function)
            .then(|| result.entities.unwrap_or_default()),
        timings: StageTimings::default(),
        usage: TokenUsage {
            prompt_tokens: llm.prompt_tokens,
            completion_tokens: llm.completion_tokens,
            llm_calls: llm.stats.calls,
        },
        warnings,
    }
}
