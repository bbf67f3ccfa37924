//! Function-level entities of the top files, for `granularity = "function"`.
//!
//! An entity is a class, a function or a method (`path::Class.method`), the units Agentless's
//! related-level stage and function-level metrics address. The LLM-free ranking lists functions
//! and methods ([`super::rank_functions`]); a model may name classes too.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::chunk::Symbol;

/// The id of the class, function or method `qualified` (`Class.method`) of the file `path`:
/// `path::Class.method`, as LocAgent and SWE-bench-style function-level metrics spell it.
pub fn entity_id(path: &str, qualified: &str) -> String {
    format!("{path}::{qualified}")
}

/// A class, function or method of a top file, for `granularity = "function"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    /// `path::Qualified.name` ([`entity_id`]).
    pub id: String,
    /// The file.
    pub path: String,
    /// Qualified name within the file (`Class.method`).
    pub name: String,
    /// `class`, `function` or `method`.
    pub kind: String,
    /// Line range, 1-based and inclusive.
    pub lines: (usize, usize),
    /// Its function-level score (the weighted sum of its features; 1 for an entity the model
    /// named).
    pub score: f32,
    /// Rank of its file.
    pub file_rank: usize,
    /// What each feature added to its LLM-free function score: its weight times its value
    /// (`frame`, `qualified`, `chunk_issue`, …; those that added nothing left out). They sum to
    /// that score, which is `score` unless a model named the entity; empty for an entity only
    /// the model named.
    #[serde(default)]
    pub contributions: BTreeMap<String, f32>,
}

impl Entity {
    /// The entity of `symbol` in the file `path` ranked `file_rank`.
    pub fn of(path: &str, symbol: &Symbol, score: f32, file_rank: usize) -> Self {
        Entity {
            id: entity_id(path, &symbol.qualified),
            path: path.to_owned(),
            name: symbol.qualified.clone(),
            kind: symbol.kind.name().to_owned(),
            lines: (symbol.start_line, symbol.end_line),
            score,
            file_rank,
            contributions: BTreeMap::new(),
        }
    }
}
