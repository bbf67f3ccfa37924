//! The candidate functions: every function and method (nested functions rolled up into the
//! function that defines them) of the top files, and how evidence found at a line or a span
//! reaches them.

use std::collections::HashMap;

use super::features::{Candidate, Feature, NUM_FEATURES};
use crate::chunk::{Symbol, SymbolKind};
use crate::index::RepoIndex;

/// The candidates of one query, with the lookups the feature extractors share.
#[derive(Debug)]
pub(super) struct CandidateSet<'a> {
    pub index: &'a RepoIndex,
    /// The candidate files, best first.
    pub files: Vec<usize>,
    pub items: Vec<Candidate>,
    /// `(file, symbol)` → position in `items`.
    slots: HashMap<(usize, usize), usize>,
    /// Per candidate file, the candidate holding each line (index 0 is line 1). Candidates
    /// never nest (a function nested in one is part of it), so each line has at most one.
    owners: HashMap<usize, Vec<Option<u32>>>,
}

/// Whether `symbol` is a candidate: a function or method not nested in a function.
pub(super) fn is_candidate(symbol: &Symbol) -> bool {
    symbol.kind != SymbolKind::Class && !symbol.in_function
}

impl<'a> CandidateSet<'a> {
    /// Every candidate function of `files` (best first; their ranks are their positions + 1),
    /// all features 0.
    pub fn new(index: &'a RepoIndex, files: &[usize]) -> Self {
        let mut items = Vec::new();
        let mut slots = HashMap::new();
        let mut owners = HashMap::new();
        for (rank, &file) in files.iter().enumerate() {
            let lines = index.files[file].text.lines().count() + 1;
            let owner = owners.entry(file).or_insert_with(|| vec![None; lines]);
            for (s, symbol) in index.files[file].parsed.symbols.iter().enumerate() {
                if is_candidate(symbol) {
                    let end = symbol.end_line.min(owner.len());
                    for slot in owner
                        .iter_mut()
                        .take(end)
                        .skip(symbol.start_line.saturating_sub(1))
                    {
                        *slot = Some(items.len() as u32);
                    }
                    slots.insert((file, s), items.len());
                    items.push(Candidate {
                        file,
                        file_rank: rank + 1,
                        symbol: s,
                        features: [0.0; NUM_FEATURES],
                    });
                }
            }
        }
        CandidateSet {
            index,
            files: files.to_vec(),
            items,
            slots,
            owners,
        }
    }

    /// The symbol table of `file`.
    pub fn symbols(&self, file: usize) -> &'a [Symbol] {
        &self.index.files[file].parsed.symbols
    }

    /// The symbol of candidate `item`.
    pub fn symbol(&self, item: usize) -> &'a Symbol {
        let c = &self.items[item];
        &self.symbols(c.file)[c.symbol]
    }

    /// The source lines of candidate `item`.
    pub fn lines_of(&self, item: usize) -> impl Iterator<Item = &'a str> {
        let symbol = self.symbol(item);
        let text: &'a str = &self.index.files[self.items[item].file].text;
        text.lines()
            .skip(symbol.start_line.saturating_sub(1))
            .take((symbol.end_line + 1).saturating_sub(symbol.start_line))
    }

    /// The candidate holding `lines` of `file` (the function or method they lie in), if any.
    pub fn at(&self, file: usize, lines: (usize, usize)) -> Option<usize> {
        let owner = self.owners.get(&file)?;
        let item = (*owner.get(lines.0.checked_sub(1)?)?)? as usize;
        (lines.1 <= self.symbol(item).end_line).then_some(item)
    }

    /// The candidates a span of `file` speaks for: the function it lies in, else every
    /// function wholly inside it (a small class kept as one chunk credits each method).
    pub fn covering(&self, file: usize, lines: (usize, usize)) -> Vec<usize> {
        if let Some(item) = self.at(file, lines) {
            return vec![item];
        }
        self.symbols(file)
            .iter()
            .enumerate()
            .filter(|(_, s)| lines.0 <= s.start_line && s.end_line <= lines.1)
            .filter_map(|(i, _)| self.slots.get(&(file, i)).copied())
            .collect()
    }

    /// The candidate for symbol `symbol` of `file`, if it is one.
    pub fn slot(&self, file: usize, symbol: usize) -> Option<usize> {
        self.slots.get(&(file, symbol)).copied()
    }

    /// Raises `feature` of the candidate holding `lines` of `file`, if any.
    pub fn raise_at(&mut self, file: usize, lines: (usize, usize), feature: Feature, value: f32) {
        if let Some(item) = self.at(file, lines) {
            self.items[item].raise(feature, value);
        }
    }

    /// Whether `file` is a candidate file.
    pub fn has_file(&self, file: usize) -> bool {
        self.files.contains(&file)
    }
}
