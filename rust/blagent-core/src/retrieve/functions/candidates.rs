//! The candidate functions: every function and method (nested functions rolled up into the
//! function that defines them) of the top files, and how evidence found at a line or a span
//! reaches them.

use std::collections::{HashMap, HashSet};

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
    /// Per candidate file, the byte offset where each line starts (index 0 is line 1).
    line_starts: HashMap<usize, Vec<usize>>,
    /// The candidate files whose symbols are in order of their first lines (as the symbol
    /// table lists them), so that those within a span are found by binary search.
    in_line_order: HashSet<usize>,
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
        let mut line_starts = HashMap::new();
        for (rank, &file) in files.iter().enumerate() {
            let text = &index.files[file].text;
            let starts = line_starts.entry(file).or_insert_with(|| {
                std::iter::once(0)
                    .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|at| at + 1))
                    .collect::<Vec<usize>>()
            });
            let lines = starts.len();
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
        let in_line_order = files
            .iter()
            .copied()
            .filter(|&f| {
                let symbols = &index.files[f].parsed.symbols;
                symbols.is_sorted_by_key(|s| s.start_line)
            })
            .collect();
        CandidateSet {
            index,
            files: files.to_vec(),
            items,
            slots,
            owners,
            line_starts,
            in_line_order,
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
    pub fn lines_of(&self, item: usize) -> std::str::Lines<'a> {
        self.text_of(item).lines()
    }

    /// The source of candidate `item`: its lines, each with its line break.
    pub fn text_of(&self, item: usize) -> &'a str {
        let symbol = self.symbol(item);
        let file = self.items[item].file;
        let text: &'a str = &self.index.files[file].text;
        let starts = &self.line_starts[&file];
        let offset = |line: usize| starts.get(line).copied().unwrap_or(text.len());
        let from = offset(symbol.start_line.saturating_sub(1));
        let to = offset(symbol.end_line).max(from);
        &text[from..to]
    }

    /// The lines of candidate `item` that it holds, each with its line break: all of them
    /// unless a candidate lies inside it (where the parser lets one, as in a Kotlin object
    /// expression), whose lines are that one's.
    pub fn held_lines(&self, item: usize) -> impl Iterator<Item = &'a str> + '_ {
        let symbol = self.symbol(item);
        let file = self.items[item].file;
        let text: &'a str = &self.index.files[file].text;
        let starts = &self.line_starts[&file];
        let owner = &self.owners[&file];
        (symbol.start_line.max(1)..=symbol.end_line)
            .filter(move |&line| owner.get(line - 1) == Some(&Some(item as u32)))
            .map(move |line| {
                let to = starts.get(line).copied().unwrap_or(text.len());
                &text[starts[line - 1].min(to)..to]
            })
    }

    /// The line (1-based) of byte `at` of candidate file `file`.
    pub fn line_at(&self, file: usize, at: usize) -> usize {
        self.line_starts[&file].partition_point(|&start| start <= at)
    }

    /// The candidate holding each line of candidate file `file` (index 0 is line 1).
    pub fn owners(&self, file: usize) -> &[Option<u32>] {
        self.owners.get(&file).map_or(&[], Vec::as_slice)
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
        let symbols = self.symbols(file);
        // Only the symbols that start within the span can lie inside it (scanning them all for
        // each chunk between functions took chunks × symbols: 27 s for a 1.4 MB file).
        let within = if self.in_line_order.contains(&file) {
            let from = symbols.partition_point(|s| s.start_line < lines.0);
            from..symbols
                .partition_point(|s| s.start_line <= lines.1)
                .max(from)
        } else {
            0..symbols.len()
        };
        symbols[within.clone()]
            .iter()
            .zip(within)
            .filter(|(s, _)| lines.0 <= s.start_line && s.end_line <= lines.1)
            .filter_map(|(_, i)| self.slots.get(&(file, i)).copied())
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
