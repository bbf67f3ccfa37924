//! Function-level entities of the top files, for `granularity = "function"`.
//!
//! An entity is a class, a function or a method (`path::Class.method`), the units Agentless's
//! related-level stage and function-level metrics address. Each piece of a file's evidence that
//! lies in a symbol (its own `symbol`, else the innermost symbol of the symbol table enclosing
//! its lines) credits that symbol with the evidence's share of the fused score: its score
//! normalized as fusion normalizes its signal (lexical signals by the best file, the others
//! capped at 1) times the signal's weight. Functions nested in functions roll up to the nearest
//! enclosing class, function or method. Entities are ordered by their file's rank, then by score.

use std::collections::HashMap;

use super::result::{Entity, FileHit};
use crate::chunk::{Symbol, SymbolKind};
use crate::index::RepoIndex;
use crate::retrieve::{Evidence, FileSignals, FusionWeights, Normalizer};

/// At most this many entities per file: beyond them the evidence is thin.
pub const MAX_ENTITIES_PER_FILE: usize = 10;

fn kind_name(kind: SymbolKind) -> &'static str {
    match kind {
        SymbolKind::Class => "class",
        SymbolKind::Function => "function",
        SymbolKind::Method => "method",
    }
}

/// Innermost symbol not nested in a function whose lines contain `lines`.
fn enclosing(symbols: &[Symbol], lines: (usize, usize)) -> Option<usize> {
    symbols
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.in_function && s.start_line <= lines.0 && lines.1 <= s.end_line)
        .max_by_key(|(_, s)| (s.depth, s.start_line))
        .map(|(i, _)| i)
}

/// The entity a piece of evidence lies in, as an index into `symbols`.
fn entity_of(symbols: &[Symbol], evidence: &Evidence) -> Option<usize> {
    if let Some(name) = &evidence.symbol {
        let named = symbols.iter().enumerate().find(|(_, s)| {
            s.qualified == *name
                && evidence
                    .lines
                    .is_none_or(|(a, b)| s.start_line <= a && b <= s.end_line)
        });
        if let Some((i, symbol)) = named {
            return if symbol.in_function {
                enclosing(symbols, (symbol.start_line, symbol.end_line))
            } else {
                Some(i)
            };
        }
    }
    evidence.lines.and_then(|lines| enclosing(symbols, lines))
}

/// Entities of `files`, best first (see the module documentation).
pub(crate) fn entities(
    index: &RepoIndex,
    signals: &[FileSignals],
    weights: &FusionWeights,
    files: &[(usize, &FileHit)],
) -> Vec<Entity> {
    let normalizer = Normalizer::new(signals);
    let mut out = Vec::new();
    for &(file, hit) in files {
        let symbols = &index.files[file].parsed.symbols;
        let mut credit: HashMap<usize, f32> = HashMap::new();
        for evidence in &signals[file].evidence {
            let Some(symbol) = entity_of(symbols, evidence) else {
                continue;
            };
            let s = evidence.signal;
            *credit.entry(symbol).or_default() +=
                weights.weight(s) * normalizer.normalize(s, evidence.score);
        }
        let mut ranked: Vec<(usize, f32)> = credit.into_iter().filter(|&(_, c)| c > 0.0).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out.extend(
            ranked
                .into_iter()
                .take(MAX_ENTITIES_PER_FILE)
                .map(|(i, score)| {
                    let symbol = &symbols[i];
                    Entity {
                        id: format!("{}::{}", hit.path, symbol.qualified),
                        path: hit.path.clone(),
                        name: symbol.qualified.clone(),
                        kind: kind_name(symbol.kind).to_owned(),
                        lines: (symbol.start_line, symbol.end_line),
                        score,
                        file_rank: hit.rank,
                    }
                }),
        );
    }
    out
}
