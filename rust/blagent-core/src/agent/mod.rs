//! The LLM mode: two agentic pipelines over the lexical retrieval, with the model as an input.
//!
//! - **BLAgent** (`blagent` module): T0/T1 rewrites, retrieval per query, ≤ 15 candidates, a
//!   phase-1 `ReAct` agent scoring them from their skeletons, a phase-2 rerank of the best five
//!   over pruned, evidence-anchored contexts.
//! - **RRL** (`rrl` module): schema extraction, BM25 queries from field groups, a tool-using
//!   agent, a fresh-context self-check.
//!
//! Every reply goes through parse → validate → repair request with the exact error (at most
//! `max_retries`) → fallback (the `session` module); model paths are resolved against the index
//! and dropped when they name no single file; tools are confined to the repository. The final
//! ranking fuses the model's order with the LLM-free fused ranking (reciprocal ranks), completed
//! with every indexed file, so it always has `top_k` files when the repository does; the
//! model's weight in that fusion is, by default, the share of its replies that were valid
//! times, in BLAgent, the agreement of its phase-2 rerank with itself when shown the files
//! reversed (none left in its place), counted only when chance rarely reaches it, so a weak
//! model, or one that echoes the order it is shown, moves little or nothing (the `rank` and
//! `consistency` modules).

mod blagent;
mod confine;
mod consistency;
mod context;
mod functions;
mod json;
mod paths;
mod phase1;
mod phase2;
mod prompts;
mod rank;
mod result;
mod retrieval;
mod rewrite;
mod rrl;
mod rrl_agent;
mod session;
mod tools;

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

pub use self::confine::{check_syntax, confine};
pub use self::context::{issue_excerpt, pruned_context, summary_line};
pub use self::functions::match_symbol;
pub use self::json::{extract_json, parse_checked, Shape};
pub use self::paths::{resolve, resolve_all, Match};
pub use self::prompts::{Prompts, PROMPTS};
pub use self::rank::{fuse, reliability};
pub use self::result::{
    LlmFileEvidence, LlmLocalizeResult, LlmOptions, LlmReport, LlmRun, Pipeline,
};
pub use self::retrieval::{complete, merge_candidates, retrieve_for_query, ChunkHit, FileHit};
pub use self::rewrite::{heuristic_behavioral, heuristic_structural, Rewrite};
pub use self::rrl::{validate_rrl_groups, QUERY_GROUPS};
pub use self::rrl_agent::MAX_VIEWS_PER_FILE;
pub use self::session::{LlmStats, StageUsage};
pub use self::tools::{
    approx_tokens, bm25_topk, read_skeleton, truncate_lines, view_file, view_readme,
};

use self::session::{CallSettings, Session};
use crate::error::{Error, Result};
use crate::index::RepoIndex;
use crate::llm::ChatModel;
use crate::localizer::Localizer;
use crate::query::Reformulation;
use crate::retrieve::FusionWeights;

/// What a pipeline works from.
pub(crate) struct Context<'a> {
    pub index: &'a RepoIndex,
    /// The issue as shown to the model (boilerplate stripped, cut to budget).
    pub issue: String,
    /// The issue's pattern-extracted fields.
    pub query: &'a Reformulation,
    /// The LLM-free fused ranking of the raw issue.
    pub raw: Vec<FileHit>,
    /// That ranking completed with every indexed file.
    pub retrieval: Vec<usize>,
    pub options: &'a LlmOptions,
    pub weights: &'a FusionWeights,
}

/// What a pipeline produced.
pub(crate) struct Outcome {
    /// The model's ranking (valid files only; empty when every stage fell back).
    pub order: Vec<usize>,
    pub evidence: HashMap<usize, LlmFileEvidence>,
    pub functions: HashMap<usize, Vec<String>>,
    pub queries: BTreeMap<String, Rewrite>,
    pub candidates: Vec<usize>,
    /// How far the model's judgement held when the files were shown in another order (`None`
    /// when not checked).
    pub agreement: Option<consistency::Agreement>,
}

impl Localizer {
    /// Localizes `issue` in `index` with the LLM pipeline `options.pipeline`, `model` answering.
    /// With a model that fails or answers nothing usable, every stage falls back and the result
    /// is the LLM-free ranking (completed to `top_k` files); the `llm` section says so.
    pub fn localize_with_llm(
        &self,
        index: &RepoIndex,
        issue: &str,
        model: &dyn ChatModel,
        options: &LlmOptions,
    ) -> Result<LlmLocalizeResult> {
        let start = Instant::now();
        if options.top_k == 0 {
            return Err(Error::InvalidInput("top_k must be at least 1".to_owned()));
        }
        validate_rrl_groups(&options.rrl_groups)?;
        let prompts = Prompts::load(options.prompts_dir.as_deref())?;
        let scored = self.score(index, issue)?;
        let weights = &self.options().weights;
        let raw = retrieval::hits(&scored.signals, &scored.ranked);
        let ctx = Context {
            index,
            issue: issue_excerpt(issue, options.issue_tokens),
            query: &scored.query,
            retrieval: complete(index, raw.iter().map(|h| h.file)),
            raw,
            options,
            weights,
        };
        let settings = CallSettings {
            temperature: options.temperature,
            seed: options.seed,
            max_tokens: options.max_completion_tokens,
            max_retries: options.max_retries,
            json: options.json_mode,
            max_prompt_tokens: options.max_prompt_tokens.map(|t| t as u64),
        };
        let mut session = Session::new(model, &prompts, settings);
        let outcome = match options.pipeline {
            Pipeline::Blagent => blagent::run(&mut session, &ctx)?,
            Pipeline::Rrl => rrl::run(&mut session, &ctx)?,
        };
        let model_weight = options.model_weight.unwrap_or_else(|| {
            reliability(session.stats.calls, session.stats.parse_failures)
                * outcome
                    .agreement
                    .map_or(1.0, consistency::Agreement::weight)
        });
        let order = fuse(&outcome.order, &ctx.retrieval, model_weight, options.top_k);
        let fused: HashMap<usize, f32> = scored.ranked.iter().copied().collect();
        let ranked: Vec<(usize, f32)> = order
            .iter()
            .map(|&f| (f, fused.get(&f).copied().unwrap_or(0.0)))
            .collect();
        let query_ms = crate::elapsed_ms(start);
        let result = Self::result_ranked(index, &scored, &ranked, options.top_k, query_ms);
        let entities = options
            .functions
            .then(|| entities(index, &scored, weights, &result, &outcome.functions));
        let path = |f: usize| index.files[f].path().to_owned();
        let files = outcome
            .order
            .iter()
            .enumerate()
            .map(|(rank, &f)| LlmFileEvidence {
                path: path(f),
                llm_rank: Some(rank + 1),
                ..outcome.evidence.get(&f).cloned().unwrap_or_default()
            })
            .chain(
                outcome
                    .evidence
                    .iter()
                    .filter(|(f, _)| !outcome.order.contains(f))
                    .map(|(&f, e)| LlmFileEvidence {
                        path: path(f),
                        ..e.clone()
                    }),
            )
            .collect();
        session.stats.wall_ms = crate::elapsed_ms(start);
        let (prompt_tokens, completion_tokens) = session.stats.total_tokens();
        Ok(LlmLocalizeResult {
            result,
            llm: LlmReport {
                pipeline: options.pipeline,
                model: model.name(),
                llm_ranked: !outcome.order.is_empty() && model_weight > 0.0,
                model_weight,
                agreement: outcome.agreement.map(|a| a.tau),
                agreement_p: outcome.agreement.map(|a| a.p_value),
                prompt_tokens,
                completion_tokens,
                stats: session.stats,
                queries: outcome.queries,
                candidates: outcome.candidates.into_iter().map(path).collect(),
                files,
            },
            entities,
        })
    }
}

/// Entities of the result's files: the model's functions, then the retrieval evidence's.
fn entities(
    index: &RepoIndex,
    scored: &crate::localizer::Scored,
    weights: &FusionWeights,
    result: &crate::LocalizeResult,
    named: &HashMap<usize, Vec<String>>,
) -> Vec<crate::interface::Entity> {
    let mut out = Vec::new();
    for ranked in &result.files {
        let Ok(file) = index.files.binary_search_by(|f| f.path().cmp(&ranked.path)) else {
            continue;
        };
        let hit = crate::interface::FileHit {
            rank: ranked.rank,
            path: ranked.path.clone(),
            score: ranked.score,
            signals: BTreeMap::new(),
            evidence: Vec::new(),
            hinted: false,
        };
        let fallback =
            crate::interface::entities::entities(index, &scored.signals, weights, &[(file, &hit)]);
        let model_named = named.get(&file).map_or(&[][..], Vec::as_slice);
        out.extend(functions::file_entities(
            &ranked.path,
            ranked.rank,
            &index.files[file].parsed.symbols,
            model_named,
            fallback,
        ));
    }
    out
}

#[cfg(test)]
mod tests;
