//! The text put in front of the model, kept short: the issue cut to a token budget (head and
//! tail kept, where titles and tracebacks are), a one-line summary per candidate file, and the
//! pruned context of a file for the evidence-anchored rerank.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::retrieval::ChunkHit;
use super::tools::truncate_lines;
use crate::chunk::SymbolKind;
use crate::index::{IndexedFile, RepoIndex};
use crate::query::strip_boilerplate;
use crate::repo::{language_for_path, PYTHON};

/// Names listed per candidate in a one-line summary.
const SUMMARY_NAMES: usize = 8;

/// The issue without template boilerplate, cut to about `tokens` tokens: the first three
/// quarters of the budget from the start and the last quarter from the end.
pub fn issue_excerpt(issue: &str, tokens: usize) -> String {
    let text = strip_boilerplate(issue);
    let text = text.trim();
    let budget = tokens * 4;
    if text.len() <= budget {
        return text.to_owned();
    }
    let head = crate::text::head(text, budget * 3 / 4);
    let tail = crate::text::head(text, text.len() - budget / 4).len();
    format!("{head}\n[…]\n{}", &text[tail..])
}

/// `path: Name, Name, …` with the file's top-level classes and functions.
pub fn summary_line(file: &IndexedFile) -> String {
    let names: Vec<&str> = file
        .parsed
        .symbols
        .iter()
        .filter(|s| s.depth == 0)
        .map(|s| s.name.as_str())
        .collect();
    let mut line = format!("{}:", file.path());
    if names.is_empty() {
        line.push_str(" (no classes or functions)");
    }
    for (i, name) in names.iter().take(SUMMARY_NAMES).enumerate() {
        let _ = write!(line, "{}{name}", if i == 0 { " " } else { ", " });
    }
    if names.len() > SUMMARY_NAMES {
        let _ = write!(line, ", … (+{})", names.len() - SUMMARY_NAMES);
    }
    line
}

/// One summary line per file.
pub fn summary_lines(index: &RepoIndex, files: &[usize]) -> String {
    files
        .iter()
        .map(|&f| summary_line(&index.files[f]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_module_assignment(line: &str) -> bool {
    let Some(first) = line.chars().next() else {
        return false;
    };
    if !(first.is_alphabetic() || first == '_') || line.starts_with("def ") {
        return false;
    }
    line.split_once('=').is_some_and(|(lhs, rhs)| {
        !rhs.starts_with('=')
            && lhs
                .trim()
                .chars()
                .all(|c| c.is_alphanumeric() || "_.,: []".contains(c))
    })
}

/// Line numbers of a Python definition's decorators and header, up to the line ending in `:`
/// (other languages' headers end where the symbol's body starts).
fn header_lines(lines: &[&str], start: usize) -> std::ops::RangeInclusive<usize> {
    let end = (start..=lines.len().min(start + 12))
        .find(|&n| {
            let line = lines[n - 1].split(" #").next().unwrap_or("").trim_end();
            !line.trim_start().starts_with('@') && line.ends_with(':')
        })
        .unwrap_or(start);
    start..=end
}

/// The file pruned for the rerank: full bodies of the functions holding its top chunks first,
/// then every class and function signature, module-level assignments, imports; whatever fits
/// in about `tokens` tokens, shown in file order with `...` where lines are left out.
pub fn pruned_context(file: &IndexedFile, top_chunks: &[ChunkHit], tokens: usize) -> String {
    let lines: Vec<&str> = file.text.lines().collect();
    let symbols = &file.parsed.symbols;
    let mut tiers: [Vec<usize>; 4] = Default::default();
    for chunk in top_chunks {
        let holder = symbols
            .iter()
            .filter(|s| s.kind != SymbolKind::Class && !s.in_function)
            .find(|s| s.start_line <= chunk.lines.0 && chunk.lines.1 <= s.end_line);
        let (start, end) = holder.map_or(chunk.lines, |s| (s.start_line, s.end_line));
        tiers[0].extend(start..=end.min(lines.len()));
    }
    let colon_headers = language_for_path(file.path()).is_some_and(|l| l.name == PYTHON.name);
    for symbol in symbols.iter().filter(|s| !s.in_function) {
        if colon_headers {
            tiers[1].extend(header_lines(&lines, symbol.start_line));
        } else {
            tiers[1].extend(symbol.start_line..=symbol.body_line.unwrap_or(symbol.end_line));
        }
    }
    for (i, line) in lines.iter().enumerate() {
        let imports: &[&str] = if colon_headers {
            &["import ", "from "]
        } else {
            &["import ", "package "]
        };
        if imports.iter().any(|p| line.starts_with(p)) {
            tiers[3].push(i + 1);
        } else if is_module_assignment(line) {
            tiers[2].push(i + 1);
        }
    }
    let budget = tokens * 4;
    let mut used = 0;
    let mut keep: BTreeSet<usize> = BTreeSet::new();
    for tier in &tiers {
        for &n in tier {
            if n == 0 || n > lines.len() || keep.contains(&n) {
                continue;
            }
            let cost = lines[n - 1].len() + 1;
            if used + cost > budget {
                break;
            }
            used += cost;
            keep.insert(n);
        }
    }
    let mut out = format!("### {}\n", file.path());
    let mut previous = 0;
    for &n in &keep {
        if n != previous + 1 {
            out.push_str("...\n");
        }
        out.push_str(lines[n - 1]);
        out.push('\n');
        previous = n;
    }
    if previous < lines.len() {
        out.push_str("...\n");
    }
    truncate_lines(&out, tokens + 16)
}

#[cfg(test)]
mod tests;
