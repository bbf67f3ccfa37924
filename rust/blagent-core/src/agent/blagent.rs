//! The BLAgent pipeline: T0 and T1 rewrites → retrieval per query → candidates (the heads of
//! the raw-issue, T0 and T1 rankings taken in turn, at most `candidates`, filled from the raw
//! ranking) → phase 1 (skeleton-reading scoring agent) → phase 2 (evidence-anchored rerank of
//! the best `rerank_files` by phase 1's score, ties in candidate order; with
//! `permutation_check`, asked again with those files reversed and none left in its place, the
//! two answers merged by mean position and their agreement reported, see the `consistency`
//! module) → the model's order: phase 2's, then the other candidates phase 1 scored at least
//! 1, by score. Each stage falls back on its own: a heuristic rewrite, candidate order, no
//! model order at all.
//!
//! The candidate order matters when phase 1's scores do not separate the files (a small model
//! gives most of them 10, or none): then phase 2 sees the first candidates. Taking the raw
//! issue's fused ranking first, then the rewrites' in turn, shows it retrieval's best file and
//! each query's best; with the rewrites' heads first, Qwen2.5-Coder-0.5B's phase 2 never saw
//! the gold file that retrieval ranked first (django-16046, matplotlib-22835).

use std::collections::HashMap;

use super::consistency::{self, Agreement};
use super::context::pruned_context;
use super::phase2::Reranked;
use super::retrieval::{merge_candidates, retrieve_for_query, ChunkHit, FileHit};
use super::rewrite::rewrite;
use super::session::Session;
use super::{phase1, phase2, Context, LlmFileEvidence, Outcome};
use crate::query::{behavioral_query, structural_query};

/// Chunks shown per file in phase 2.
const CHUNKS_PER_FILE: usize = 3;

/// A file's best chunks over several rankings, earlier rankings first.
fn chunks_for(file: usize, rankings: &[&[FileHit]]) -> Vec<ChunkHit> {
    let mut out: Vec<ChunkHit> = Vec::new();
    for hit in rankings
        .iter()
        .flat_map(|r| r.iter())
        .filter(|h| h.file == file)
    {
        for chunk in &hit.top_chunks {
            if out.len() < CHUNKS_PER_FILE && out.iter().all(|c| c.lines != chunk.lines) {
                out.push(chunk.clone());
            }
        }
    }
    out
}

pub(crate) fn run(session: &mut Session<'_>, ctx: &Context<'_>) -> crate::Result<Outcome> {
    let options = ctx.options;
    let t0 = rewrite(
        session,
        "t0",
        "t0_structural",
        &ctx.issue,
        structural_query(ctx.query),
    )?;
    let t1 = rewrite(
        session,
        "t1",
        "t1_behavioral",
        &ctx.issue,
        behavioral_query(ctx.query),
    )?;
    let h0 = retrieve_for_query(ctx.index, ctx.dense, &t0.text, ctx.weights);
    let h1 = retrieve_for_query(ctx.index, ctx.dense, &t1.text, ctx.weights);
    let rankings: [&[FileHit]; 3] = [&ctx.raw, &h0, &h1];
    let candidates = merge_candidates(
        &[&ctx.raw, &h0, &h1],
        options.per_query,
        options.candidates,
        &ctx.retrieval,
    );

    let scores = phase1::score_candidates(session, ctx.index, &ctx.issue, &candidates, options)?;
    let score_of = |f: &usize| scores.as_ref().and_then(|s| s.get(f).copied());
    let mut by_score = candidates.clone();
    by_score.sort_by(|a, b| {
        score_of(b)
            .unwrap_or(-1.0)
            .total_cmp(&score_of(a).unwrap_or(-1.0))
    });
    let shown: Vec<(usize, String)> = by_score
        .iter()
        .take(options.rerank_files)
        .map(|&f| {
            let chunks = chunks_for(f, &rankings);
            (
                f,
                pruned_context(&ctx.index.files[f], &chunks, options.context_tokens),
            )
        })
        .collect();
    let reranked = phase2::rerank(
        session,
        "phase2",
        ctx.index,
        &ctx.issue,
        &shown,
        ctx.ask.functions(),
    )?;
    let (reranked, agreement) = if options.permutation_check && shown.len() > 1 {
        let again = phase2::rerank(
            session,
            "phase2_permuted",
            ctx.index,
            &ctx.issue,
            &consistency::second_order(&shown),
            ctx.ask.functions(),
        )?;
        let files: Vec<usize> = shown.iter().map(|s| s.0).collect();
        let (merged, agreement) = consistent(reranked, again, &files);
        (merged, Some(agreement))
    } else {
        (reranked, None)
    };

    let mut order: Vec<usize> = reranked.iter().flatten().map(|r| r.file).collect();
    if scores.is_some() {
        let rest: Vec<usize> = by_score
            .iter()
            .copied()
            .filter(|f| score_of(f).is_some_and(|s| s >= 1.0) && !order.contains(f))
            .collect();
        order.extend(rest);
    }
    let mut evidence: HashMap<usize, LlmFileEvidence> = HashMap::new();
    for (&file, &score) in scores.iter().flatten() {
        evidence.entry(file).or_default().score = Some(score);
    }
    let mut functions = HashMap::new();
    for r in reranked.into_iter().flatten() {
        let e = evidence.entry(r.file).or_default();
        e.reason = r.reason;
        e.functions.clone_from(&r.functions);
        functions.insert(r.file, r.functions);
    }
    Ok(Outcome {
        order,
        evidence,
        functions,
        queries: [("t0".to_owned(), t0), ("t1".to_owned(), t1)]
            .into_iter()
            .collect(),
        candidates,
        agreement,
    })
}

/// Phase 2's two answers (files shown in order, then permuted) merged by mean position, each
/// file keeping the first answer's reason and functions when it has them; and their agreement,
/// none when either answer is missing (the model showed no consistent judgement).
fn consistent(
    first: Option<Vec<Reranked>>,
    second: Option<Vec<Reranked>>,
    shown: &[usize],
) -> (Option<Vec<Reranked>>, Agreement) {
    let (Some(first), Some(second)) = (&first, &second) else {
        return (first.or(second), Agreement::NONE);
    };
    let files = |r: &[Reranked]| -> Vec<usize> { r.iter().map(|x| x.file).collect() };
    let (a, b) = (files(first), files(second));
    let merged = consistency::aggregate(&a, &b, shown)
        .into_iter()
        .filter_map(|f| first.iter().chain(second).find(|r| r.file == f).cloned())
        .collect();
    (Some(merged), consistency::agreement(&a, &b, shown))
}
