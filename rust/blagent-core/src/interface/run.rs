//! Answering a request: the pipeline it names ranks the files, then one function builds the
//! result whichever pipeline ranked them.

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use super::hints::{apply_hints, AppliedHints};
use super::request::LocalizeRequest;
use super::result::{
    EvidenceItem, FileHit, IndexStats, LocalizationResult, LocalizerInfo, StageTimings, TokenUsage,
};
use super::SCHEMA_VERSION;
use crate::agent::{LlmOptions, LlmReport, LlmRun, Pipeline};
use crate::error::Result;
use crate::index::RepoIndex;
use crate::llm::NoModel;
use crate::repo::LANGUAGES;
use crate::retrieve::{cut, score, Ask, Entity, FusionWeights, Scored, SearchIndex, Signal};
use crate::timing::elapsed_ms;

/// A pipeline's ranking, before it becomes a result.
struct Ranking {
    scored: Scored,
    /// `(file, score)`, best first, at most `top_k`.
    ranked: Vec<(usize, f32)>,
    hints: AppliedHints,
    entities: Option<Vec<Entity>>,
    llm: Option<LlmReport>,
    warnings: Vec<String>,
}

/// Answers `request` in `index` (already validated), with the localizer's fusion `weights`
/// and its model and options for the LLM pipelines (none: they fall back to retrieval).
pub(super) fn answer(
    weights: &FusionWeights,
    llm: Option<&LlmRun>,
    index: &SearchIndex,
    request: &LocalizeRequest,
) -> Result<LocalizationResult> {
    let start = Instant::now();
    let ask = request.ask()?;
    let ranking = match request.pipeline {
        Pipeline::Fused => fused(weights, index, request, ask)?,
        Pipeline::Blagent | Pipeline::Rrl => with_llm(weights, llm, index, request, ask)?,
    };
    Ok(build(index, request, ranking, elapsed_ms(start)))
}

/// The LLM-free ranking, with the request's hints applied, cut to what the request asks.
fn fused(
    weights: &FusionWeights,
    index: &SearchIndex,
    request: &LocalizeRequest,
    ask: Ask,
) -> Result<Ranking> {
    let mut scored = score(index, &request.issue, weights, request.rewrites.as_ref())?;
    let hints = apply_hints(
        &index.repo,
        &mut scored,
        weights,
        &request.hints.files,
        &request.repo_path,
    );
    let cut = cut(index, &scored, scored.ranked.iter().map(|&(f, _)| f), ask)?;
    let warnings = hints.warnings.clone();
    Ok(Ranking {
        scored,
        ranked: cut.ranked,
        hints,
        entities: cut.entities,
        llm: None,
        warnings,
    })
}

/// The ranking of the LLM pipeline the request names, with the localizer's model (or none).
fn with_llm(
    weights: &FusionWeights,
    llm: Option<&LlmRun>,
    index: &SearchIndex,
    request: &LocalizeRequest,
    ask: Ask,
) -> Result<Ranking> {
    let defaults = LlmOptions::default();
    let (model, options) = match llm {
        Some(run) => (run.model.as_ref(), &run.options),
        None => (&NoModel as &dyn crate::llm::ChatModel, &defaults),
    };
    let ranking = crate::agent::localize(
        index,
        &request.issue,
        request.pipeline,
        ask,
        model,
        options,
        weights,
    )?;
    let mut warnings: Vec<String> = ranking
        .llm
        .stats
        .fallbacks
        .iter()
        .map(|f| format!("LLM fallback: {f}"))
        .collect();
    if !request.hints.files.is_empty() {
        warnings.push("hints are not used by the LLM pipelines; they were ignored".to_owned());
    }
    Ok(Ranking {
        scored: ranking.scored,
        ranked: ranking.ranked,
        hints: AppliedHints::default(),
        entities: ranking.entities,
        llm: Some(ranking.llm),
        warnings,
    })
}

/// The one place a result is built.
fn build(
    index: &SearchIndex,
    request: &LocalizeRequest,
    ranking: Ranking,
    query_ms: f64,
) -> LocalizationResult {
    let repo = &index.repo;
    let Ranking {
        scored,
        ranked,
        hints,
        entities,
        llm,
        mut warnings,
    } = ranking;
    if let Some(warning) = language_warning(request.hints.language.as_deref()) {
        warnings.insert(0, warning);
    }
    if ranked.is_empty() {
        warnings.push("the repository has no indexed file; the ranking is empty".to_owned());
    }
    if let Some(note) = &repo.history.note {
        warnings.push(note.clone());
    }
    if let Some(note) = index
        .dense
        .as_ref()
        .and_then(|d| d.stats.not_cached.as_ref())
    {
        warnings.push(note.clone());
    }
    let stats = IndexStats::of(repo);
    warnings.extend(file_warnings(repo, ranked.iter().map(|&(f, _)| f)));
    let files = ranked
        .iter()
        .enumerate()
        .map(|(rank, &(file, score))| file_hit(repo, &scored, &hints, file, rank + 1, score))
        .collect();
    let usage = llm
        .as_ref()
        .map_or_else(TokenUsage::default, |llm| TokenUsage {
            prompt_tokens: llm.prompt_tokens,
            completion_tokens: llm.completion_tokens,
            llm_calls: llm.stats.calls,
        });
    let mode = llm.as_ref().map_or_else(
        || "llm-free".to_owned(),
        |llm| format!("llm:{}:{}", request.pipeline.name(), llm.model),
    );
    let dense_ms = index
        .dense
        .as_ref()
        .map_or(0.0, |d| d.stats.embed_ms + d.stats.index_ms);
    let timings = StageTimings {
        walk_ms: repo.timings.walk_ms,
        parse_ms: repo.timings.parse_ms,
        index_ms: repo.timings.index_ms,
        dense_ms,
        query_ms,
        total_ms: query_ms,
        index_reused: true,
    };
    LocalizationResult {
        schema_version: SCHEMA_VERSION.to_owned(),
        instance_id: request.instance_id.clone(),
        localizer: LocalizerInfo::blagent(mode),
        pipeline: request.pipeline,
        granularity: request.granularity,
        files,
        entities,
        query: scored.query,
        skipped: repo.skipped.clone(),
        stats,
        timings,
        usage,
        warnings,
        llm,
    }
}

fn file_hit(
    index: &RepoIndex,
    scored: &Scored,
    hints: &AppliedHints,
    file: usize,
    rank: usize,
    score: f32,
) -> FileHit {
    let signals = &scored.signals[file];
    let mut fired: BTreeMap<String, f32> = Signal::ALL
        .iter()
        .filter(|&&s| signals.get(s) > 0.0)
        .map(|&s| (s.name().to_owned(), signals.get(s)))
        .collect();
    let mut contributions: BTreeMap<String, f32> = scored
        .contributions(file)
        .into_iter()
        .map(|(s, added)| (s.name().to_owned(), added))
        .collect();
    let mut evidence: Vec<EvidenceItem> = Vec::new();
    let boost = hints.boost(file);
    if let Some(boost) = boost {
        fired.insert(super::hints::HINT_SIGNAL.to_owned(), boost);
        contributions.insert(super::hints::HINT_SIGNAL.to_owned(), boost);
        evidence.push(AppliedHints::evidence(boost));
    }
    evidence.extend(signals.evidence.iter().map(EvidenceItem::from));
    FileHit {
        rank,
        path: index.files[file].path().to_owned(),
        score,
        signals: fired,
        contributions,
        evidence,
        hinted: boost.is_some(),
    }
}

/// A warning when the caller names a language blagent does not index.
fn language_warning(language: Option<&str>) -> Option<String> {
    let language = language?.trim().to_lowercase();
    if LANGUAGES.iter().any(|l| l.name == language) {
        return None;
    }
    let supported: Vec<&str> = LANGUAGES.iter().map(|l| l.name).collect();
    Some(format!(
        "language hint `{language}` is not supported (supported: {}); indexed those instead",
        supported.join(", ")
    ))
}

/// Warnings about returned files that were read imperfectly.
fn file_warnings(index: &RepoIndex, files: impl Iterator<Item = usize>) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for file in files.filter(|&f| seen.insert(f)) {
        let indexed = &index.files[file];
        if indexed.lossy {
            out.push(format!(
                "{} is not valid UTF-8; it was decoded lossily",
                indexed.path()
            ));
        }
        if indexed.parsed.syntax_errors {
            out.push(format!(
                "{} has syntax errors; its symbols were recovered approximately",
                indexed.path()
            ));
        }
    }
    out
}
