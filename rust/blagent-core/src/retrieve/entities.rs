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

use serde::{Deserialize, Serialize};

use super::{Evidence, FileSignals, FusionWeights, Normalizer};
use crate::chunk::{enclosing, Symbol};
use crate::index::RepoIndex;

/// At most this many entities per file: beyond them the evidence is thin.
pub const MAX_ENTITIES_PER_FILE: usize = 10;

/// A class, function or method of a top file, for `granularity = "function"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    /// `path::Qualified.name`, as LocAgent and SWE-bench-style function-level metrics spell it.
    pub id: String,
    /// The file.
    pub path: String,
    /// Qualified name within the file (`Class.method`).
    pub name: String,
    /// `class`, `function` or `method`.
    pub kind: String,
    /// Line range, 1-based and inclusive.
    pub lines: (usize, usize),
    /// The part of the file's fused score whose evidence lies in this entity (0 for an entity
    /// only the model named).
    pub score: f32,
    /// Rank of its file.
    pub file_rank: usize,
}

impl Entity {
    /// The entity of `symbol` in the file `path` ranked `file_rank`.
    pub fn of(path: &str, symbol: &Symbol, score: f32, file_rank: usize) -> Self {
        Entity {
            id: format!("{path}::{}", symbol.qualified),
            path: path.to_owned(),
            name: symbol.qualified.clone(),
            kind: symbol.kind.name().to_owned(),
            lines: (symbol.start_line, symbol.end_line),
            score,
            file_rank,
        }
    }
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

/// Entities of `files` (`(file, its rank)`), best first (see the module documentation).
pub fn entities(
    index: &RepoIndex,
    signals: &[FileSignals],
    weights: &FusionWeights,
    files: &[(usize, usize)],
) -> Vec<Entity> {
    let normalizer = Normalizer::new(signals);
    let mut out = Vec::new();
    for &(file, rank) in files {
        let path = index.files[file].path();
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
                .map(|(i, score)| Entity::of(path, &symbols[i], score, rank)),
        );
    }
    out
}
