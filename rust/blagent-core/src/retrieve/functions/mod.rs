//! Function-level ranking: the one step below every pipeline that turns a file ranking into a
//! ranking of `path::Class.method` entities.
//!
//! Every function and method of the top [`FUNCTION_FILES`] files is a candidate (a function
//! nested in another counts as the one that defines it). Each gets [features](Feature) on a
//! 0–1 scale: its file's fused score and rank, BM25 of its best chunk against the issue and the
//! title, whether the issue names it (bare, `Class.method`, `module.function`) or its class,
//! whether its body uses what the issue names or a named function calls it, traceback frames
//! and quoted error messages inside it, how much of its name the words cover, whether
//! the issue names one of its parameters, its chunk BM25 against its own file's best, whether
//! it is outside the tests, its length, whether the issue links to its lines and, with a dense
//! index, its nearest chunk's cosine. Its score is the weighted sum
//! ([`FunctionWeights`], fitted on the development set); candidates are ranked by score across
//! files: the best [`MAX_FUNCTIONS`], then each file's best up to [`PER_FILE_FUNCTIONS`] of its
//! own.

mod candidates;
mod features;
mod lexical;
mod mentions;
mod weights;

use std::collections::{HashMap, HashSet};

use self::candidates::CandidateSet;
pub use self::features::{Candidate, Feature, Features, NUM_FEATURES};
use self::mentions::Mentions;
pub use self::weights::FunctionWeights;
use super::{Entity, Scored, SearchIndex};
use crate::error::Result;

/// The files, best first, whose functions are candidates.
pub const FUNCTION_FILES: usize = 10;
/// The ranking lists the best this many functions, ...
pub const MAX_FUNCTIONS: usize = 50;
/// ... then, for each candidate file with fewer among them, its best up to this many.
pub const PER_FILE_FUNCTIONS: usize = 5;
/// Nearest chunks a dense query retrieves for [`Feature::Dense`].
const DENSE_CHUNKS: usize = 1000;

/// The candidate functions of the first [`FUNCTION_FILES`] of `files` (a file ranking, best
/// first) with their features, in file order then symbol order.
pub fn function_candidates(
    index: &SearchIndex,
    scored: &Scored,
    files: &[usize],
) -> Result<Vec<Candidate>> {
    let top = &files[..files.len().min(FUNCTION_FILES)];
    let mut set = CandidateSet::new(&index.repo, top);
    let fused: HashMap<usize, f32> = scored.ranked.iter().copied().collect();
    let query = &scored.query;
    lexical::file_features(&mut set, &fused);
    lexical::chunk_features(&mut set, query);
    lexical::name_features(&mut set, query);
    let mentions = Mentions::of(query);
    // A stop asked for is heard between the passes (each is linear in the candidates and the
    // issue).
    crate::cancel::check()?;
    mentions::name_mentions(&mut set, &mentions);
    crate::cancel::check()?;
    mentions::body_mentions(&mut set, &mentions)?;
    crate::cancel::check()?;
    mentions::parameter_mentions(&mut set, &mentions);
    mentions::frames(&mut set, query);
    mentions::errors(&mut set, query);
    mentions::line_links(&mut set, query);
    crate::cancel::check()?;
    if let Some(dense) = &index.dense {
        dense_feature(&mut set, dense, &query.explanation)?;
    }
    Ok(set.items)
}

/// [`Feature::Dense`]: each function's nearest chunk to `text`, min-max over the retrieved
/// chunks of the candidate files.
fn dense_feature(
    set: &mut CandidateSet<'_>,
    dense: &crate::dense::DenseIndex,
    text: &str,
) -> Result<()> {
    if text.trim().is_empty() {
        return Ok(());
    }
    let mut hits: Vec<(usize, (usize, usize), f32)> = Vec::new();
    for (doc, cosine) in dense.search_chunks(text, DENSE_CHUNKS)? {
        let (file, chunk) = set.index.chunk_refs[doc];
        let file = file as usize;
        if set.has_file(file) {
            let chunk = &set.index.files[file].parsed.chunks[chunk as usize];
            hits.push((file, (chunk.start_line, chunk.end_line), cosine));
        }
    }
    let max = hits.iter().fold(f32::NEG_INFINITY, |a, h| a.max(h.2));
    let min = hits.iter().fold(f32::INFINITY, |a, h| a.min(h.2));
    for (file, lines, cosine) in hits {
        let value = if max > min {
            (cosine - min) / (max - min)
        } else {
            1.0
        };
        for item in set.covering(file, lines) {
            set.items[item].raise(Feature::Dense, value);
        }
    }
    Ok(())
}

/// The functions of `files` (a file ranking, best first) ranked by their weighted features,
/// best first: the best [`MAX_FUNCTIONS`], then each candidate file's best functions up to
/// [`PER_FILE_FUNCTIONS`] of its own among all listed, in score order. Ties go to the better
/// file, then the earlier line. Ids are unique: a name defined more than once in a file (a
/// property's getter and setter, a JVM method's overloads, a function defined in both branches
/// of an `if`) is one entity, at the place of its best-scoring definition.
pub fn rank_functions(
    index: &SearchIndex,
    scored: &Scored,
    files: &[usize],
    weights: &FunctionWeights,
) -> Result<Vec<Entity>> {
    let candidates = function_candidates(index, scored, files)?;
    let mut ranked: Vec<(f32, &Candidate)> = candidates
        .iter()
        .map(|c| (weights.score(&c.features), c))
        .collect();
    ranked.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(a.1.file_rank.cmp(&b.1.file_rank))
            .then(a.1.symbol.cmp(&b.1.symbol))
    });
    // A large first file can fill the whole list; the files after it still get their best few
    // (Agentless's edit stage shows a file only with locations of its own). An entity is built
    // only for a function that is listed.
    let mut seen = HashSet::new();
    let mut per_file: HashMap<usize, usize> = HashMap::new();
    let (mut listed, mut more) = (Vec::new(), Vec::new());
    for (score, c) in ranked {
        let file = &index.repo.files[c.file];
        let symbol = &file.parsed.symbols[c.symbol];
        if !seen.insert((c.file, symbol.qualified.as_str())) {
            continue;
        }
        let count = per_file.entry(c.file).or_default();
        let place = if listed.len() < MAX_FUNCTIONS {
            &mut listed
        } else if *count < PER_FILE_FUNCTIONS {
            &mut more
        } else {
            continue;
        };
        *count += 1;
        place.push(Entity {
            // What each feature added, for the listed ones only.
            contributions: weights.contributions(&c.features),
            ..Entity::of(file.path(), symbol, score, c.file_rank)
        });
    }
    listed.append(&mut more);
    Ok(listed)
}

#[cfg(test)]
mod tests;
