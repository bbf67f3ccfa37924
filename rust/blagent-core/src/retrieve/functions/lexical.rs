//! The features that need no mention: the file's own standing, chunk BM25 of the issue and
//! its title, the overlap of a function's name with the issue's words, and its length.

use std::collections::{HashMap, HashSet};

use rustc_hash::FxHashSet;

use super::candidates::CandidateSet;
use super::features::Feature;
use crate::index::{identifier_parts, tokenize, TextCounter, TextCounts};
use crate::query::Reformulation;
use crate::repo::is_test_path;

/// Lines at which [`Feature::Length`] reaches 1.
const LENGTH_SATURATION_LINES: f32 = 1000.0;
/// Name parts shorter than this (`get`, `to`) say little about what a function does.
const MIN_NAME_PART_CHARS: usize = 3;

/// [`Feature::FileScore`] and [`Feature::FileRank`]: `fused` holds the files' fused scores.
pub(super) fn file_features(set: &mut CandidateSet<'_>, fused: &HashMap<usize, f32>) {
    let best = set
        .files
        .iter()
        .filter_map(|f| fused.get(f))
        .fold(0.0f32, |a, &b| a.max(b));
    for item in &mut set.items {
        let score = fused.get(&item.file).copied().unwrap_or(0.0);
        if best > 0.0 {
            item.raise(Feature::FileScore, score / best);
        }
        item.raise(Feature::FileRank, 1.0 / item.file_rank as f32);
    }
}

/// [`Feature::ChunkIssue`] and [`Feature::ChunkTitle`]: each function's best chunk against the
/// issue (and the title), over the best chunk of the candidate files. A chunk that holds
/// several functions (a small class kept whole) credits each with its own text's BM25 rather
/// than the whole chunk's, so that one matching method does not lift its siblings.
pub(super) fn chunk_features(set: &mut CandidateSet<'_>, query: &Reformulation) {
    let bm25 = &set.index.chunk_bm25;
    let queries: Vec<(HashMap<u32, f32>, Feature)> = [
        (&query.explanation, Feature::ChunkIssue),
        (&query.title, Feature::ChunkTitle),
    ]
    .into_iter()
    .filter(|(text, _)| !text.trim().is_empty())
    .map(|(text, feature)| (bm25.query_terms(text), feature))
    .collect();
    // A method's own text is counted once, for the terms of both queries.
    let wanted: FxHashSet<u32> = queries
        .iter()
        .flat_map(|(terms, _)| terms.keys())
        .copied()
        .collect();
    let mut own_counts: HashMap<usize, TextCounts> = HashMap::new();
    let mut counter = TextCounter::new(bm25);
    for (terms, feature) in &queries {
        let (terms, feature) = (terms, *feature);
        let mut hits: Vec<(usize, (usize, usize), f32)> = Vec::new();
        for &file in &set.files {
            let docs = set.index.chunk_docs(file);
            let scores = bm25.score_range(terms, docs.clone());
            for (doc, score) in docs.zip(scores).filter(|&(_, s)| s > 0.0) {
                let (_, chunk) = set.index.chunk_refs[doc as usize];
                let chunk = &set.index.files[file].parsed.chunks[chunk as usize];
                hits.push((file, (chunk.start_line, chunk.end_line), score));
            }
        }
        let best = hits.iter().fold(0.0f32, |a, h| a.max(h.2));
        for (file, lines, score) in hits {
            let items = set.covering(file, lines);
            if let [item] = items[..] {
                set.items[item].raise(feature, score / best);
                continue;
            }
            for item in items {
                let counts = own_counts.entry(item).or_insert_with(|| {
                    counter.count(set.lines_of(item), |id| wanted.contains(&id))
                });
                let own = bm25.score_counts(terms, counts);
                set.items[item].raise(feature, (own / best).min(1.0));
            }
        }
    }
    let mut best_in_file: HashMap<usize, f32> = HashMap::new();
    for item in &set.items {
        let best = best_in_file.entry(item.file).or_default();
        *best = best.max(item.get(Feature::ChunkIssue));
    }
    for item in &mut set.items {
        let best = best_in_file[&item.file];
        if best > 0.0 {
            let value = item.get(Feature::ChunkIssue) / best;
            item.raise(Feature::ChunkInFile, value);
        }
    }
}

/// [`Feature::NameOverlap`], [`Feature::Length`] and [`Feature::NotTest`].
pub(super) fn name_features(set: &mut CandidateSet<'_>, query: &Reformulation) {
    let words: HashSet<String> = tokenize(&query.explanation).into_iter().collect();
    for item in 0..set.items.len() {
        let symbol = set.symbol(item);
        let parts: Vec<String> = identifier_parts(&symbol.name)
            .into_iter()
            .filter(|p| p.chars().count() >= MIN_NAME_PART_CHARS)
            .map(str::to_lowercase)
            .collect();
        let overlap = if parts.is_empty() {
            0.0
        } else {
            parts.iter().filter(|p| words.contains(*p)).count() as f32 / parts.len() as f32
        };
        let lines = (symbol.end_line + 1)
            .saturating_sub(symbol.start_line)
            .max(1) as f32;
        let length = (lines.ln() / LENGTH_SATURATION_LINES.ln()).min(1.0);
        let test = is_test_path(set.index.files[set.items[item].file].path());
        let candidate = &mut set.items[item];
        candidate.raise(Feature::NameOverlap, overlap);
        candidate.raise(Feature::Length, length);
        candidate.raise(Feature::NotTest, if test { 0.0 } else { 1.0 });
    }
}
