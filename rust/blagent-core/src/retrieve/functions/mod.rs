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
//! it is outside the tests, its length, whether the issue links to its lines, with a dense
//! index its nearest chunk's cosine, and with an encoder for summaries the cosine of its
//! name, parameters and documentation to the title. Its score is the weighted sum
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
    if let Some(encoder) = &index.summaries {
        crate::cancel::check()?;
        summary_feature(&mut set, encoder, &query.title)?;
    }
    Ok(set.items)
}

/// What [`Feature::Summary`] compares with the title: the function's qualified name (dots as
/// spaces), its parameters' names and the first line of its docstring, Javadoc or KDoc, with
/// `_` as a space (`Model save (force insert, using) Saves the current instance.`): words the
/// encoder reads as prose. `self`, `cls`, defaults and Python's and Kotlin's type annotations
/// are left out (with them the feature gained half as much on dev307: docs/ranking.md).
pub(crate) fn summary_text(symbol: &crate::chunk::Symbol) -> String {
    let doc = symbol.doc.as_deref().unwrap_or("");
    let text = format!(
        "{} ({}) {doc}",
        symbol.qualified.replace('.', " "),
        parameter_names(&symbol.signature).join(", ")
    );
    text.replace('_', " ").trim().to_owned()
}

/// The parameters of `signature` as written between its first `(` and last `)`, split at the
/// commas outside brackets, each up to its default (`=`) or annotation (`:`), without leading
/// `*`s; `self`, `cls` and Python's `/` left out. A Java parameter keeps its type.
fn parameter_names(signature: &str) -> Vec<&str> {
    let Some(open) = signature.find('(') else {
        return Vec::new();
    };
    let inner = &signature[open + 1..];
    let inner = inner.rfind(')').map_or(inner, |close| &inner[..close]);
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (at, c) in inner.char_indices() {
        match c {
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter_map(|part| {
            let name = part
                .split(['=', ':'])
                .next()?
                .trim()
                .trim_start_matches('*');
            (!matches!(name, "" | "self" | "cls" | "/")).then_some(name)
        })
        .collect()
}

/// The languages whose functions [`Feature::Summary`] compares. On the 50 Java and Kotlin
/// development tasks of Long Code Arena its weight, fitted with the others held, is 0–0.05
/// (cross-validated MRR as without it), and at Python's weight it cost 0.041 of MRR.
const SUMMARY_LANGUAGES: &[&str] = &["python"];

/// [`Feature::Summary`]: each candidate's summary ([`summary_text`]) embedded as a document,
/// its cosine to the title embedded as a query, min-max over the candidates (the vectors are
/// unit length), for the candidates of [`SUMMARY_LANGUAGES`]. Measured on dev307 before it
/// was built (docs/ranking.md).
fn summary_feature(
    set: &mut CandidateSet<'_>,
    encoder: &crate::dense::DenseModel,
    title: &str,
) -> Result<()> {
    let compared: Vec<usize> = (0..set.items.len())
        .filter(|&i| {
            let path = set.index.files[set.items[i].file].path();
            crate::repo::language_for_path(path)
                .is_some_and(|language| SUMMARY_LANGUAGES.contains(&language.name))
        })
        .collect();
    if title.trim().is_empty() || compared.is_empty() {
        return Ok(());
    }
    let texts: Vec<String> = compared
        .iter()
        .map(|&i| {
            let c = &set.items[i];
            summary_text(&set.index.files[c.file].parsed.symbols[c.symbol])
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let documents = encoder.embed(&refs, crate::embed::TextKind::Document)?;
    let query = encoder.embed_query(title)?;
    let cosines: Vec<f32> = documents
        .iter()
        .map(|d| d.iter().zip(&query).map(|(a, b)| a * b).sum())
        .collect();
    let max = cosines.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let min = cosines.iter().copied().fold(f32::INFINITY, f32::min);
    if max > min {
        for (&i, cosine) in compared.iter().zip(cosines) {
            set.items[i].raise(Feature::Summary, (cosine - min) / (max - min));
        }
    }
    Ok(())
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
