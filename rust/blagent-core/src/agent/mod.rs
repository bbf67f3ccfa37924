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
mod options;
mod paths;
mod phase1;
mod phase2;
mod pipeline;
mod prompts;
mod rank;
mod result;
mod retrieval;
mod rewrite;
mod rrl;
mod rrl_agent;
mod session;
mod tools;
mod trust;

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

pub use self::confine::{check_syntax, confine};
pub use self::context::{issue_excerpt, pruned_context, summary_line};
pub use self::functions::match_symbol;
pub use self::json::{extract_json, parse_checked, Shape};
pub use self::options::MAX_MODEL_WEIGHT;
pub use self::paths::{resolve, resolve_all, Match};
pub use self::pipeline::Pipeline;
pub use self::prompts::{Prompts, PROMPTS};
pub use self::rank::{fuse, reliability};
pub use self::result::{LlmFileEvidence, LlmOptions, LlmRanking, LlmReport, LlmRun};
pub use self::retrieval::{merge_candidates, retrieve_for_query, ChunkHit, FileHit};
pub use self::rewrite::Rewrite;
pub use self::rrl::{validate_rrl_groups, QUERY_GROUPS};
pub use self::rrl_agent::MAX_VIEWS_PER_FILE;
pub use self::session::LlmStats;
pub use self::tools::{
    approx_tokens, bm25_topk, read_skeleton, truncate_lines, view_file, view_readme,
};
pub use self::trust::{
    fit, reciprocal_ranks, trusted, FusionInputs, LlmProfile, TrustFit, TrustSample, TrustScore,
    Trusted, DEFAULT_SCALE, PROFILE_SCHEMA_VERSION, SCALES,
};

use self::session::{CallSettings, Session};
use crate::dense::DenseIndex;
use crate::error::{Error, Result};
use crate::index::RepoIndex;
use crate::llm::ChatModel;
use crate::query::Reformulation;
use crate::retrieve::{complete, cut, score, Ask, FusionWeights, SearchIndex};

/// What a pipeline works from.
pub(crate) struct Context<'a> {
    pub index: &'a RepoIndex,
    /// The dense index, when dense retrieval is on (each query's retrieval uses it).
    pub dense: Option<&'a DenseIndex>,
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
    /// What the caller asked: how many files, and whether functions.
    pub ask: Ask,
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

/// Localizes `issue` in `index` with the LLM `pipeline`, `model` answering as `options` say,
/// `weights` fusing retrieval's signals, cut to what `ask` asks by the one ranking step below
/// every pipeline ([`crate::retrieve::cut`]). With a model that fails or answers nothing
/// usable, every stage falls back and the ranking is the LLM-free one; the report says so.
pub fn localize(
    index: &SearchIndex,
    issue: &str,
    pipeline: Pipeline,
    ask: Ask,
    model: &dyn ChatModel,
    options: &LlmOptions,
    weights: &FusionWeights,
) -> Result<LlmRanking> {
    let start = Instant::now();
    options.validate()?;
    let prompts = Prompts::load(options.prompts_dir.as_deref())?;
    let scored = score(index, issue, weights, None)?;
    let repo = &index.repo;
    let raw = retrieval::hits(&scored.signals, &scored.ranked);
    let ctx = Context {
        index: repo,
        dense: index.dense.as_ref(),
        issue: issue_excerpt(issue, options.issue_tokens),
        query: &scored.query,
        retrieval: complete(repo, raw.iter().map(|h| h.file)),
        raw,
        options,
        weights,
        ask,
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
    let outcome = match pipeline {
        Pipeline::Blagent => blagent::run(&mut session, &ctx)?,
        Pipeline::Rrl => rrl::run(&mut session, &ctx)?,
        Pipeline::Fused => {
            return Err(Error::InvalidInput(
                "`fused` is the LLM-free ranking, not an LLM pipeline".to_owned(),
            ))
        }
    };
    let base_weight = reliability(session.stats.calls, session.stats.parse_failures)
        * outcome
            .agreement
            .map_or(1.0, consistency::Agreement::weight);
    let weight_scale = LlmProfile::scale_for(options.trust.as_ref(), pipeline);
    let model_weight = options.model_weight.unwrap_or(weight_scale * base_weight);
    let order = fuse(
        &outcome.order,
        &ctx.retrieval,
        model_weight,
        ctx.retrieval.len(),
    );
    let cut = cut(index, &scored, order, ask)?;
    let order: Vec<usize> = cut.ranked.iter().map(|&(f, _)| f).collect();
    let entities = cut.entities.map(|ranked| {
        functions::with_named(repo, &order, &outcome.functions, ranked, model_weight)
    });
    let path = |f: usize| repo.files[f].path().to_owned();
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
    let fusion = FusionInputs {
        retrieval: ctx.retrieval,
        model: outcome.order.clone(),
        base_weight,
    };
    session.stats.wall_ms = crate::timing::elapsed_ms(start);
    let (prompt_tokens, completion_tokens) = session.stats.total_tokens();
    Ok(LlmRanking {
        scored,
        ranked: cut.ranked,
        llm: LlmReport {
            pipeline,
            model: model.name(),
            llm_ranked: !outcome.order.is_empty() && model_weight > 0.0,
            model_weight,
            weight_scale,
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
        fusion,
    })
}

#[cfg(test)]
mod tests;
