//! The one ranking step below every pipeline: whichever pipeline ordered the files (the
//! LLM-free fusion, or a model's order fused with it), [`cut`] completes that order with every
//! indexed file, keeps what the caller asked for ([`Ask`]), gives each file its LLM-free score,
//! and ranks the functions of those files when asked.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::entities::Entity;
use super::functions::{rank_functions, FunctionWeights};
use super::score::{complete, Scored, SearchIndex};
use crate::error::{Error, Result};

/// Default number of files a request asks for.
pub const DEFAULT_TOP_K: usize = 10;

/// What a result ranks: files alone, or files and the functions, methods and classes in them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Granularity {
    /// Ranked files only.
    #[default]
    File,
    /// Ranked files plus `path::Class.method` entities of those files.
    Function,
}

impl Granularity {
    /// Every granularity, in the order of the CLI's choices.
    pub const ALL: [Granularity; 2] = [Granularity::File, Granularity::Function];

    /// The name in requests, results and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Granularity::File => "file",
            Granularity::Function => "function",
        }
    }
}

/// The most files a request may ask for, as the command line's `--top-k` allows.
pub const MAX_TOP_K: usize = u32::MAX as usize;

/// What a caller asks of a ranking, whichever pipeline ranks: how many files, and whether
/// their functions too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask {
    top_k: usize,
    granularity: Granularity,
}

impl Ask {
    /// `top_k` files at `granularity`; `top_k` must be from 1 to [`MAX_TOP_K`] (the one place
    /// it is checked).
    pub fn new(top_k: usize, granularity: Granularity) -> Result<Self> {
        if !(1..=MAX_TOP_K).contains(&top_k) {
            return Err(Error::InvalidInput(format!(
                "top_k must be from 1 to {MAX_TOP_K}, not {top_k}"
            )));
        }
        Ok(Ask { top_k, granularity })
    }

    /// How many files.
    pub fn top_k(self) -> usize {
        self.top_k
    }

    /// Files only, or files and their functions.
    pub fn granularity(self) -> Granularity {
        self.granularity
    }

    /// Whether functions are ranked too.
    pub fn functions(self) -> bool {
        self.granularity == Granularity::Function
    }
}

impl Default for Ask {
    fn default() -> Self {
        Ask {
            top_k: DEFAULT_TOP_K,
            granularity: Granularity::File,
        }
    }
}

/// A ranking cut to what was asked.
#[derive(Debug, Clone, Default)]
pub struct Cut {
    /// `(file, fused LLM-free score)`, best first, `top_k` long when the repository has that
    /// many files.
    pub ranked: Vec<(usize, f32)>,
    /// The functions of those files, ranked, when asked.
    pub entities: Option<Vec<Entity>>,
}

/// Cuts a pipeline's `order` (best first) to `ask`: see the module documentation.
pub fn cut(
    index: &SearchIndex,
    scored: &Scored,
    order: impl IntoIterator<Item = usize>,
    ask: Ask,
) -> Result<Cut> {
    let fused: HashMap<usize, f32> = scored.ranked.iter().copied().collect();
    let ranked: Vec<(usize, f32)> = complete(&index.repo, order)
        .into_iter()
        .take(ask.top_k)
        .map(|f| (f, fused.get(&f).copied().unwrap_or(0.0)))
        .collect();
    let entities = if ask.functions() {
        let files: Vec<usize> = ranked.iter().map(|&(file, _)| file).collect();
        Some(rank_functions(
            index,
            scored,
            &files,
            &FunctionWeights::default(),
        )?)
    } else {
        None
    };
    Ok(Cut { ranked, entities })
}
