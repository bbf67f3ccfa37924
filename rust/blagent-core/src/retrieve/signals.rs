//! Computing each signal's raw score, with evidence, for every file of a repository.

use std::collections::{HashMap, HashSet};

use super::{Evidence, FileSignals, Signal};
use crate::chunk::{holders_by_line, Symbol, SymbolKind};
use crate::index::{Bm25, QueryTokens, RepoIndex};
use crate::query::{IdentifierSource, Reformulation};

/// How many of a file's best chunks are kept as evidence.
const CHUNK_EVIDENCE_PER_FILE: usize = 3;
/// A file's issue-chunk score sums its best chunks: a bug report usually touches a few places of
/// the file it concerns (on Lite, the sum of three beat the best chunk alone).
const ISSUE_CHUNKS: usize = 3;
/// A name defined in more files than this says nothing about where the bug is.
const MAX_DEFINING_FILES: usize = 50;
/// An error-message fragment found in more files than this is boilerplate.
const MAX_MESSAGE_FILES: usize = 20;
/// Fragments shorter than this (in bytes) match too much by chance.
const MIN_FRAGMENT_BYTES: usize = 12;
/// Error-message fragments looked for, at most: each is searched for in every file, so an
/// issue of 20,000 error lines took 4 s against a 2 MB repository (16 MB of them, minutes
/// against a large one). A bug report quotes a few.
const MAX_ERROR_FRAGMENTS: usize = 64;
/// Weight of a bare file name mention relative to a path with directories.
const FILENAME_MENTION_WEIGHT: f32 = 0.5;
/// Weight of a package `__init__.py` named by a dotted path: usually it only re-exports.
const PACKAGE_MODULE_WEIGHT: f32 = 0.5;
/// Weight, for each file of a build module the issue names (`kotlinx-coroutines-core`), of
/// that mention: it narrows the search to a part of the repository, it does not name a file.
/// Chosen on 34 of the 52 LCA development tasks (0, 0.25, 0.5: MRR 0.764, 0.766, 0.770);
/// neutral on the other 18 (MRR 0.665 either way).
const BUILD_MODULE_WEIGHT: f32 = 0.5;
/// Module names shorter than this (`app`, `api`) are too common to count as a mention.
const MIN_MODULE_NAME_BYTES: usize = 4;
/// Past commits that lend their score to the files they changed: those whose messages read
/// most like the title. On the development sets, 20 did better than 50 or 100
/// (`docs/ranking.md`).
const HISTORY_COMMITS: usize = 20;
/// Past commits kept as a file's evidence, at most.
const HISTORY_EVIDENCE_PER_FILE: usize = 3;
/// Characters of a commit's subject shown in its evidence, at most.
const SUBJECT_CHARS: usize = 120;

/// How deliberately an identifier was named, as a weight in (0, 1].
pub(super) fn source_weight(source: IdentifierSource) -> f32 {
    match source {
        IdentifierSource::Backtick => 1.0,
        IdentifierSource::Call | IdentifierSource::Dotted => 0.8,
        IdentifierSource::CamelCase => 0.7,
        IdentifierSource::Import => 0.6,
        IdentifierSource::SnakeCase => 0.5,
    }
}

/// The evidence of the whole-file BM25 signals.
const WHOLE_FILE: &str = "whole-file BM25";
/// The evidence of the defined-names BM25 signals.
const NAMES: &str = "BM25 of the names it defines";

/// Raw scores and evidence of every signal for every file of `index` (one entry per file).
pub fn compute_signals(index: &RepoIndex, query: &Reformulation) -> Vec<FileSignals> {
    let mut out = vec![FileSignals::default(); index.files.len()];
    // Each text is tokenized once and put to every index it is scored against (files, chunks,
    // defined names, and for the title the commit messages).
    let issue = QueryTokens::of(&query.explanation);
    let title = QueryTokens::of(&query.title);
    let (files, names) = (&index.file_bm25, &index.names_bm25);
    bm25_per_file(files, &issue, Signal::Bm25File, WHOLE_FILE, &mut out);
    bm25_chunks(index, &issue, Signal::Bm25Chunk, ISSUE_CHUNKS, &mut out);
    bm25_per_file(files, &title, Signal::TitleFile, WHOLE_FILE, &mut out);
    bm25_chunks(index, &title, Signal::TitleChunk, 1, &mut out);
    // The words of the issue that name the file's own classes and functions, not only what
    // its code uses.
    bm25_per_file(names, &issue, Signal::NamesIssue, NAMES, &mut out);
    bm25_per_file(names, &title, Signal::NamesTitle, NAMES, &mut out);
    history(index, &title, &mut out);
    mentions(index, query, &mut out);
    build_modules(index, query, &mut out);
    stack_frames(index, query, &mut out);
    definitions(index, query, &mut out);
    error_messages(index, query, &mut out);
    unimplemented(index, &mut out);
    out
}

/// [`Signal::Unimplemented`]: the share of each file's functions and methods declared without
/// a body, 1 for a file that defines none ([`crate::chunk::ParsedFile::bodiless`], counted once
/// when the index is built).
fn unimplemented(index: &RepoIndex, out: &mut [FileSignals]) {
    for (counts, signals) in index.bodiless.iter().zip(out.iter_mut()) {
        let (share, detail) = match *counts {
            None => continue,
            Some((0, _)) => (1.0, "defines no function or method".to_owned()),
            Some((n, b)) => (
                b as f32 / n as f32,
                format!("{b} of its {n} functions and methods are declared without a body"),
            ),
        };
        signals.add(Evidence {
            signal: Signal::Unimplemented,
            score: share,
            detail,
            lines: None,
            symbol: None,
        });
    }
}

/// BM25 of one document per file (`bm25`: the whole files, or the names they define) against
/// `query`, as `signal`.
fn bm25_per_file(
    bm25: &Bm25,
    query: &QueryTokens,
    signal: Signal,
    detail: &str,
    out: &mut [FileSignals],
) {
    if query.is_empty() {
        return;
    }
    for (file, score) in bm25.score_tokens(query).into_iter().enumerate() {
        if score > 0.0 {
            out[file].add(Evidence {
                signal,
                score,
                detail: detail.to_owned(),
                lines: None,
                symbol: None,
            });
        }
    }
}

/// Chunk BM25 aggregated per file: the sum of its best `take` chunks. The best chunks are
/// the evidence.
fn bm25_chunks(
    index: &RepoIndex,
    query: &QueryTokens,
    signal: Signal,
    take: usize,
    out: &mut [FileSignals],
) {
    if query.is_empty() {
        return;
    }
    let scores = index.chunk_bm25.score_tokens(query);
    let mut per_file: HashMap<u32, Vec<(f32, u32)>> = HashMap::new();
    for (doc, &score) in scores.iter().enumerate() {
        if score > 0.0 {
            let (file, chunk) = index.chunk_refs[doc];
            per_file.entry(file).or_default().push((score, chunk));
        }
    }
    for (file, mut chunks) in per_file {
        chunks.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let signals = &mut out[file as usize];
        signals.scores[signal.index()] = chunks.iter().take(take).map(|c| c.0).sum();
        for &(score, chunk) in chunks.iter().take(CHUNK_EVIDENCE_PER_FILE.min(take)) {
            let chunk = &index.files[file as usize].parsed.chunks[chunk as usize];
            signals.evidence.push(Evidence {
                signal,
                score,
                detail: format!("chunk BM25 ({:?})", chunk.kind).to_lowercase(),
                lines: Some((chunk.start_line, chunk.end_line)),
                symbol: chunk.symbol.clone(),
            });
        }
    }
}

/// [`Signal::HistoryTitle`]: BM25 of the title against the messages of the repository's
/// recent commits. Each of the best [`HISTORY_COMMITS`] shares its score among the files it
/// changed (a commit that touched forty files says little about each), and every indexed file
/// among them adds its share: past fixes that read like the issue point at the files a fix
/// touches again. Their subjects are the evidence.
fn history(index: &RepoIndex, title: &QueryTokens, out: &mut [FileSignals]) {
    let commits = &index.history;
    if title.is_empty() || commits.is_empty() {
        return;
    }
    let mut per_file: HashMap<u32, Vec<(f32, usize)>> = HashMap::new();
    for (commit, score) in commits.bm25.top_k(title, HISTORY_COMMITS) {
        let share = score / commits.changed[commit].max(1) as f32;
        for &file in &commits.files[commit] {
            per_file.entry(file).or_default().push((share, commit));
        }
    }
    for (file, mut shares) in per_file {
        shares.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let signals = &mut out[file as usize];
        signals.scores[Signal::HistoryTitle.index()] = shares.iter().map(|s| s.0).sum();
        for &(score, commit) in shares.iter().take(HISTORY_EVIDENCE_PER_FILE) {
            let subject: String = commits.subjects[commit]
                .chars()
                .take(SUBJECT_CHARS)
                .collect();
            signals.evidence.push(Evidence {
                signal: Signal::HistoryTitle,
                score,
                detail: format!("past commit: {subject}"),
                lines: None,
                symbol: None,
            });
        }
    }
}

/// The pieces of evidence of one signal a file lists at most: its score is the strongest
/// mention's whatever their number, and a file named by 300,000 traceback frames listed them
/// all (a 42 MB result).
const MAX_EVIDENCE_PER_SIGNAL: usize = 20;

/// Keeps the strongest mention per file: naming a file twice is not twice the evidence. The
/// first [`MAX_EVIDENCE_PER_SIGNAL`] mentions are listed as its evidence.
fn add_max(signals: &mut FileSignals, evidence: Evidence) {
    let slot = &mut signals.scores[evidence.signal.index()];
    *slot = slot.max(evidence.score);
    list_bounded(signals, evidence);
}

/// Adds `evidence`'s score to its signal; the first [`MAX_EVIDENCE_PER_SIGNAL`] are listed (an
/// issue naming 100,000 methods of one class listed each as evidence: a 33 MB result).
fn add_summed(signals: &mut FileSignals, evidence: Evidence) {
    signals.scores[evidence.signal.index()] += evidence.score;
    list_bounded(signals, evidence);
}

/// Lists `evidence` while the file lists fewer than [`MAX_EVIDENCE_PER_SIGNAL`] of its signal.
fn list_bounded(signals: &mut FileSignals, evidence: Evidence) {
    let listed = signals
        .evidence
        .iter()
        .filter(|e| e.signal == evidence.signal)
        .count();
    if listed < MAX_EVIDENCE_PER_SIGNAL {
        signals.evidence.push(evidence);
    }
}

fn mentions(index: &RepoIndex, query: &Reformulation, out: &mut [FileSignals]) {
    let named = query
        .paths
        .iter()
        .map(|p| (p, 1.0))
        .chain(query.filenames.iter().map(|f| (f, FILENAME_MENTION_WEIGHT)));
    for (mention, weight) in named {
        let files = index.resolver.resolve_source(mention);
        for &file in &files {
            add_max(
                &mut out[file as usize],
                Evidence {
                    signal: Signal::PathMention,
                    score: weight / files.len() as f32,
                    detail: format!("issue mentions `{mention}`"),
                    lines: None,
                    symbol: None,
                },
            );
        }
    }
    for module in &query.modules {
        if let Some(found) = index.resolver.resolve_module(module) {
            let weight = if found.is_package {
                PACKAGE_MODULE_WEIGHT
            } else {
                1.0
            };
            add_max(
                &mut out[found.file as usize],
                Evidence {
                    signal: Signal::ModuleMention,
                    score: weight,
                    detail: format!("issue names module `{module}`"),
                    lines: None,
                    symbol: None,
                },
            );
        }
    }
}

/// A word of an issue or a name: letters, digits, `-` and `_` (so `core` is not a word of
/// `kotlinx-coroutines-core`).
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '-' || c == '_'
}

/// Whether `name` occurs in `text` as a whole word.
fn names_word(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

/// Gradle and Maven modules the issue names by their folder name: each file of the innermost
/// named module holding it gets a weak module mention. The issue's words are read once: a name
/// that is one word is looked up among them, and a name of several (`org.example.core`) is
/// looked for in the text only when each of its words is there (reading the whole issue once
/// per module took 107 s for 20,000 modules and an 8 MiB issue).
fn build_modules(index: &RepoIndex, query: &Reformulation, out: &mut [FileSignals]) {
    let text = &query.explanation;
    let words: HashSet<&str> = text.split(|c: char| !is_word(c)).collect();
    let mut named: HashSet<&str> = HashSet::new();
    for (i, module) in index.modules.iter().enumerate() {
        if i % 64 == 63 && crate::cancel::is_requested() {
            return;
        }
        let name = module.rsplit('/').next().unwrap_or(module);
        if name.len() < MIN_MODULE_NAME_BYTES {
            continue;
        }
        let found = if name.chars().all(is_word) {
            words.contains(name)
        } else {
            let mut parts = name.split(|c: char| !is_word(c)).filter(|p| !p.is_empty());
            parts.all(|p| words.contains(p)) && names_word(text, name)
        };
        if found {
            named.insert(module.as_str());
        }
    }
    if named.is_empty() {
        return;
    }
    for (f, file) in index.files.iter().enumerate() {
        // The innermost named module: the longest folder of the path that is one.
        let path = file.path();
        let holder = path
            .rmatch_indices('/')
            .map(|(at, _)| &path[..at])
            .find(|folder| named.contains(folder));
        if let Some(module) = holder {
            add_max(
                &mut out[f],
                Evidence {
                    signal: Signal::ModuleMention,
                    score: BUILD_MODULE_WEIGHT,
                    detail: format!("issue names build module `{module}`"),
                    lines: None,
                    symbol: None,
                },
            );
        }
    }
}

fn stack_frames(index: &RepoIndex, query: &Reformulation, out: &mut [FileSignals]) {
    let mut rank = 0usize;
    // Per file a frame names, the symbol holding each line (looking each frame's line up in
    // the symbol table took frames × symbols: a 1 MB traceback against a file of 100,000
    // functions, 14 s).
    let mut holders: HashMap<usize, Vec<Option<u32>>> = HashMap::new();
    for frame in &query.stack_frames {
        let files = index.resolver.resolve_source(&frame.path);
        if files.len() != 1 {
            continue;
        }
        let file = files[0] as usize;
        let symbols = &index.files[file].parsed.symbols;
        let symbol = holders
            .entry(file)
            .or_insert_with(|| last_holder_by_line(symbols))
            .get(frame.line)
            .copied()
            .flatten()
            .map(|s| symbols[s as usize].qualified.clone());
        add_max(
            &mut out[file],
            Evidence {
                signal: Signal::StackFrame,
                score: 1.0 / (1.0 + rank as f32),
                detail: format!("traceback frame {}:{}", frame.path, frame.line),
                lines: Some((frame.line, frame.line)),
                symbol: symbol.or_else(|| frame.function.clone()),
            },
        );
        rank += 1;
    }
}

/// For each line number (index 0 is no line), the last symbol of `symbols` whose lines hold
/// it, as `symbols.iter().rposition(…)` finds it (the innermost, symbols being in file order).
fn last_holder_by_line(symbols: &[Symbol]) -> Vec<Option<u32>> {
    holders_by_line(symbols, (0..symbols.len()).rev())
}

/// Where one bare name is defined: each defining file once (with its first definition of the
/// name), and the qualified names of those definitions per file, whole and from each dot on, so
/// that a dotted mention is matched by a few lookups rather than a pass over the file's symbols
/// (identifiers × symbols took 50 s for an issue naming 5,000 methods of 20 large classes).
struct Defined<'a> {
    files: Vec<(u32, u32)>,
    /// `(file, qualified name)` of each definition.
    whole: HashSet<(u32, &'a str)>,
    /// `(file, part)` for each part of a qualified name after one of its dots, and the whole.
    tails: HashSet<(u32, &'a str)>,
}

impl<'a> Defined<'a> {
    /// `None` where more than [`MAX_DEFINING_FILES`] files define the name.
    fn of(index: &'a RepoIndex, defs: &[(u32, u32)]) -> Option<Self> {
        let mut seen = HashSet::new();
        let files: Vec<(u32, u32)> = defs
            .iter()
            .copied()
            .filter(|&(file, _)| seen.insert(file))
            .collect();
        if files.len() > MAX_DEFINING_FILES {
            return None;
        }
        let (mut whole, mut tails) = (HashSet::new(), HashSet::new());
        for &(file, sym) in defs {
            let qualified = index.files[file as usize].parsed.symbols[sym as usize]
                .qualified
                .as_str();
            whole.insert((file, qualified));
            tails.insert((file, qualified));
            for (at, _) in qualified.match_indices('.') {
                tails.insert((file, &qualified[at + 1..]));
            }
        }
        Some(Defined {
            files,
            whole,
            tails,
        })
    }

    /// Whether `file` defines the name as `tail` (`Class.method`), or as a name `tail` ends
    /// with after a dot (`pkg.Class.method` for `Class.method`), or one that ends with `tail`.
    fn pins(&self, file: u32, tail: &str) -> bool {
        self.tails.contains(&(file, tail))
            || tail
                .match_indices('.')
                .any(|(at, _)| self.whole.contains(&(file, &tail[at + 1..])))
    }
}

fn definitions(index: &RepoIndex, query: &Reformulation, out: &mut [FileSignals]) {
    let mut defined: HashMap<&str, Option<Defined<'_>>> = HashMap::new();
    for (i, identifier) in query.identifiers.iter().enumerate() {
        // An issue may name thousands: a stop is heard between them (the caller checks).
        if i % 256 == 255 && crate::cancel::is_requested() {
            return;
        }
        let name = identifier
            .name
            .rsplit('.')
            .next()
            .unwrap_or(&identifier.name);
        let Some(defs) = index.definitions.get(name) else {
            continue;
        };
        let Some(found) = defined
            .entry(name)
            .or_insert_with(|| Defined::of(index, defs))
            .as_ref()
        else {
            continue;
        };
        let weight = source_weight(identifier.source);
        let dotted_tail = identifier
            .name
            .contains('.')
            .then_some(identifier.name.as_str());
        for &(file, sym) in &found.files {
            let symbol = &index.files[file as usize].parsed.symbols[sym as usize];
            // `Class.method` pins the definition down however common the bare name is.
            let qualified_match = dotted_tail.is_some_and(|tail| found.pins(file, tail));
            let specificity = if qualified_match {
                1.0
            } else {
                1.0 / found.files.len() as f32
            };
            let kind = match symbol.kind {
                SymbolKind::Class => "class",
                SymbolKind::Function => "function",
                SymbolKind::Method => "method",
            };
            add_summed(
                &mut out[file as usize],
                Evidence {
                    signal: Signal::Definition,
                    score: weight * specificity,
                    detail: format!("defines {kind} `{}` named in the issue", symbol.qualified),
                    lines: Some((symbol.start_line, symbol.end_line)),
                    symbol: Some(symbol.qualified.clone()),
                },
            );
        }
    }
}

/// Literal fragments of an error message: the text between quoted values and numbers, which
/// is what the source's format string holds.
pub(super) fn message_fragments(message: &str) -> Vec<String> {
    let text = message.split_once(": ").map_or("", |(_, m)| m);
    let mut fragments = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' || c == '`' => {
                quote = Some(c);
                fragments.push(std::mem::take(&mut current));
            }
            None if c.is_ascii_digit() || c == '<' || c == '>' || c == '(' || c == ')' => {
                fragments.push(std::mem::take(&mut current));
            }
            None => current.push(c),
        }
    }
    fragments.push(current);
    fragments
        .into_iter()
        .map(|f| {
            f.trim_matches(|c: char| c.is_whitespace() || c == '.' || c == ',' || c == ':')
                .to_owned()
        })
        .filter(|f| f.len() >= MIN_FRAGMENT_BYTES && f.contains(' '))
        .collect()
}

/// The distinct fragments of the issue's error messages, the first [`MAX_ERROR_FRAGMENTS`] in
/// the order the issue gives them.
pub(super) fn issue_fragments(query: &Reformulation) -> Vec<String> {
    let mut seen = HashSet::new();
    query
        .error_messages
        .iter()
        .flat_map(|m| message_fragments(m))
        .filter(|f| seen.insert(f.clone()))
        .take(MAX_ERROR_FRAGMENTS)
        .collect()
}

fn error_messages(index: &RepoIndex, query: &Reformulation, out: &mut [FileSignals]) {
    let mut fragments = issue_fragments(query);
    fragments.sort();
    for fragment in fragments {
        let hits: Vec<(usize, usize)> = index
            .files
            .iter()
            .enumerate()
            .filter_map(|(f, file)| file.text.find(&fragment).map(|offset| (f, offset)))
            .collect();
        if hits.is_empty() || hits.len() > MAX_MESSAGE_FILES {
            continue;
        }
        for &(file, offset) in &hits {
            let text = &index.files[file].text;
            let line = text[..offset].matches('\n').count() + 1;
            out[file].add(Evidence {
                signal: Signal::ErrorMessage,
                score: 1.0 / hits.len() as f32,
                detail: format!("contains the error text \"{fragment}\""),
                lines: Some((line, line)),
                symbol: None,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    #[test]
    fn module_names_match_whole_words_only() {
        assert!(names_word(
            "fails in kotlinx-coroutines-core since 1.7",
            "kotlinx-coroutines-core"
        ));
        assert!(names_word("(core) breaks", "core"));
        assert!(!names_word("fails in kotlinx-coroutines-core", "core"));
        assert!(!names_word("the scorer", "core"));
    }

    /// The details of `file`'s evidence for `signal`, in order.
    fn details(file: &FileSignals, signal: Signal) -> Vec<&str> {
        file.evidence
            .iter()
            .filter(|e| e.signal == signal)
            .map(|e| e.detail.as_str())
            .collect()
    }

    fn index_of(files: &[(&str, String)]) -> (tempfile::TempDir, RepoIndex) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            std::fs::write(dir.path().join(path), text).unwrap();
        }
        let index = RepoIndex::build(dir.path(), &crate::index::IndexOptions::default()).unwrap();
        (dir, index)
    }

    /// Found by a hostile review: a file named by 300,000 traceback frames listed every one
    /// as evidence (a 42 MB result); the frames read and the evidence listed are bounded, the
    /// score is the innermost frame's as before.
    #[test]
    fn a_traceback_of_many_frames_gives_bounded_evidence() {
        let (_dir, index) = index_of(&[("mod.py", "def f():\n    return 1\n".to_owned())]);
        let mut issue = String::from("Crash\nTraceback (most recent call last):\n");
        for i in 0..5_000 {
            let _ = writeln!(issue, "  File \"mod.py\", line {}, in f", i % 2 + 1);
        }
        issue.push_str("ValueError: boom\n");
        let query = crate::query::reformulate(&issue);
        assert_eq!(query.stack_frames.len(), crate::query::MAX_STACK_FRAMES);
        let signals = compute_signals(&index, &query);
        assert_eq!(
            details(&signals[0], Signal::StackFrame).len(),
            MAX_EVIDENCE_PER_SIGNAL
        );
        assert!((signals[0].get(Signal::StackFrame) - 1.0).abs() < 1e-6);
    }

    /// The history signal follows the files of past commits whose messages read like the
    /// title: a commit's score is shared among the files it changed, unrelated commits add
    /// nothing, the subjects are the evidence, and with no history read the signal is silent.
    #[test]
    fn history_signal_follows_past_commits_like_the_title() {
        use crate::repo::history::testing::{commit, git};
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        let code = "def run(value):\n    return value\n";
        commit(
            dir.path(),
            &[("parse.py", code), ("zones.py", code), ("log.py", code)],
            "Initial import",
        );
        commit(
            dir.path(),
            &[("parse.py", "def run(value):\n    return value + 1\n")],
            "Fixed naive datetime parsing with timezones",
        );
        commit(
            dir.path(),
            &[
                ("zones.py", "def run(value):\n    return value * 2\n"),
                ("log.py", "def run(value):\n    return value * 3\n"),
            ],
            "Made the timezone setting apply to naive datetimes",
        );
        commit(
            dir.path(),
            &[("log.py", "def run(value):\n    return value - 1\n")],
            "Refactored the logging setup",
        );
        let query = crate::query::reformulate("Naive datetime loses its timezone when parsed");
        let build = |commits: usize| {
            let options = crate::index::IndexOptions {
                history_commits: commits,
                ..Default::default()
            };
            RepoIndex::build(dir.path(), &options).unwrap()
        };
        let index = build(100);
        assert_eq!(index.history.len(), 4);
        let at = |path: &str| index.files.iter().position(|f| f.path() == path).unwrap();
        let signals = compute_signals(&index, &query);
        let score = |path: &str| signals[at(path)].get(Signal::HistoryTitle);
        assert!(score("zones.py") > 0.0);
        assert!((score("zones.py") - score("log.py")).abs() < 1e-6);
        assert!(score("parse.py") > score("zones.py"));
        assert_eq!(
            details(&signals[at("parse.py")], Signal::HistoryTitle),
            ["past commit: Fixed naive datetime parsing with timezones"]
        );

        let none = build(0);
        assert!(none.history.is_empty());
        let signals = compute_signals(&none, &query);
        assert!(signals.iter().all(|s| s.get(Signal::HistoryTitle) <= 0.0));
    }

    /// The names signals read what a file defines, not what it uses: of two files with the
    /// same words, the one defining `separability_matrix` scores and the one calling it does
    /// not; the issue's words reach a name through its parts, nested definitions count, and a
    /// Java method's name counts as a Python function's does.
    #[test]
    fn names_signals_score_what_a_file_defines() {
        let (_dir, index) = index_of(&[
            (
                "separable.py",
                "class Model:\n    def outer(self):\n        def separability_matrix(m):\n            return m\n        return separability_matrix\n".to_owned(),
            ),
            (
                "user.py",
                "from separable import separability_matrix\n\ndef run(model):\n    return separability_matrix(model.outer())\n".to_owned(),
            ),
            (
                "Kernel.java",
                "class Kernel {\n    int convolveStep(int m) { return m; }\n}\n".to_owned(),
            ),
        ]);
        let at = |path: &str| index.files.iter().position(|f| f.path() == path).unwrap();
        let query = crate::query::reformulate(
            "The separability matrix of nested models is wrong\n\nAlso the convolve step.",
        );
        let signals = compute_signals(&index, &query);
        for signal in [Signal::NamesIssue, Signal::NamesTitle] {
            assert!(signals[at("separable.py")].get(signal) > 0.0, "{signal:?}");
            assert!(signals[at("user.py")].get(signal) <= 0.0, "{signal:?}");
        }
        assert!(signals[at("Kernel.java")].get(Signal::NamesIssue) > 0.0);
        assert!(signals[at("Kernel.java")].get(Signal::NamesTitle) <= 0.0);
        // Both files hold the words, so the whole-file signal cannot tell them apart as well.
        assert!(signals[at("user.py")].get(Signal::Bm25File) > 0.0);
        assert_eq!(
            details(&signals[at("separable.py")], Signal::NamesIssue),
            [NAMES]
        );
    }

    /// A frame's evidence names the innermost symbol holding its line, as a scan of the symbol
    /// table backwards finds it, for every line of a file of nested and sibling definitions.
    #[test]
    fn frames_name_the_innermost_symbol_holding_their_line() {
        let text = "import os\n\nclass A:\n    x = 1\n\n    def f(self):\n        def g():\n            return 1\n        return g\n\n    class B:\n        def h(self):\n            pass\n\n\ndef top():\n    pass\n\nY = 2\n";
        let (_dir, index) = index_of(&[("m.py", text.to_owned())]);
        let symbols = &index.files[0].parsed.symbols;
        let table = last_holder_by_line(symbols);
        for line in 0..text.lines().count() + 3 {
            let scan = symbols
                .iter()
                .rposition(|s| s.start_line <= line && line <= s.end_line);
            let fast = table.get(line).copied().flatten().map(|s| s as usize);
            assert_eq!(fast, scan, "line {line}");
        }
        let issue = "Traceback (most recent call last):\n  File \"m.py\", line 12, in h\n  File \"m.py\", line 8, in g\n  File \"m.py\", line 19, in <module>\n";
        let signals = compute_signals(&index, &crate::query::reformulate(issue));
        let named: Vec<Option<&str>> = signals[0]
            .evidence
            .iter()
            .filter(|e| e.signal == Signal::StackFrame)
            .map(|e| e.symbol.as_deref())
            .collect();
        assert_eq!(named, [Some("<module>"), Some("A.f.g"), Some("A.B.h")]);
    }

    /// Each frame's line was looked up by scanning the symbol table: 60,000 frames against a
    /// file of 60,000 functions took some 10 s (16 MB of traceback, minutes), Ctrl-C unheard.
    #[test]
    fn a_long_traceback_against_many_functions_is_looked_up_at_once() {
        let mut text = String::new();
        for i in 0..60_000 {
            let _ = writeln!(text, "def f{i}(): pass");
        }
        let (_dir, index) = index_of(&[("many.py", text)]);
        let mut issue = String::from("Traceback (most recent call last):\n");
        for i in 0..60_000 {
            let _ = writeln!(issue, "  File \"many.py\", line {}, in f0", 1 + i % 2);
        }
        let query = crate::query::reformulate(&issue);
        // The innermost frames are kept, up to the bound.
        assert_eq!(query.stack_frames.len(), crate::query::MAX_STACK_FRAMES);
        let signals = compute_signals(&index, &query);
        let frames = signals[0]
            .evidence
            .iter()
            .filter(|e| e.signal == Signal::StackFrame);
        assert!(frames
            .take(2)
            .map(|e| e.symbol.as_deref())
            .eq([Some("f1"), Some("f0")]));
    }

    /// Every fragment of every error line was searched for in every file (20,000 error lines,
    /// 4 s against a 2 MB repository): the first 64 distinct ones, in the issue's order, are.
    #[test]
    fn an_issue_of_many_error_lines_is_searched_for_its_first_fragments() {
        let mut issue = String::from("Crash\n\n");
        for i in 0..1_000_u32 {
            // Distinct in letters (digits split a message into fragments), each line twice.
            let name: String = (i / 2)
                .to_string()
                .chars()
                .map(|d| (b'a' + d as u8 - b'0') as char)
                .collect();
            let _ = writeln!(
                issue,
                "ValueError: cannot frobnicate widget_{name} twice over again"
            );
        }
        let fragments = issue_fragments(&crate::query::reformulate(&issue));
        assert_eq!(fragments.len(), MAX_ERROR_FRAGMENTS);
        assert_eq!(fragments[0], "cannot frobnicate widget_a twice over again");
        assert_eq!(fragments[1], "cannot frobnicate widget_b twice over again");
    }

    #[test]
    fn message_fragments_drop_quoted_values_and_numbers() {
        assert_eq!(
            message_fragments("ValueError: Unknown format code 'd' for object of type 'float'"),
            ["Unknown format code", "for object of type"]
        );
        assert_eq!(message_fragments("KeyError: 'x'"), Vec::<String>::new());
        assert_eq!(message_fragments("no separator"), Vec::<String>::new());
    }

    /// The unimplemented share counts functions and methods declared without a body, the
    /// ones nested in functions left out: 1 for a file that defines none, nothing where the
    /// file could not be read whole.
    #[test]
    fn unimplemented_share_counts_bodiless_declarations() {
        let (_dir, index) = index_of(&[
            (
                "Listener.java",
                "interface Listener {\n    void onOpen(int code);\n    void onClose(int code);\n}\n"
                    .to_owned(),
            ),
            (
                "Server.java",
                "abstract class Server implements Listener {\n    abstract void start();\n    public void onOpen(int code) { start(); }\n    public void onClose(int code) { }\n}\n"
                    .to_owned(),
            ),
            (
                "Formatter.kt",
                "expect class Formatter {\n    fun format(date: Long): String\n}\n\nfun Formatter.twice(d: Long) = format(d) + format(d)\n"
                    .to_owned(),
            ),
            (
                "Scope.kt",
                "annotation class Scope(val name: String)\n".to_owned(),
            ),
            (
                "impl.py",
                "def outer():\n    def inner():\n        pass\n    return inner\n".to_owned(),
            ),
            ("settings.py", "DEBUG = False\nNAMES = ['a']\n".to_owned()),
            ("broken.py", "x = (\n\ndef later(:\n    return 1\n".to_owned()),
        ]);
        let at = |path: &str| index.files.iter().position(|f| f.path() == path).unwrap();
        let signals = compute_signals(&index, &crate::query::reformulate("Listener crashes"));
        let share = |path: &str| signals[at(path)].get(Signal::Unimplemented);
        for (path, expected) in [
            ("Listener.java", 1.0),
            ("Server.java", 1.0 / 3.0),
            ("Formatter.kt", 0.5),
            ("Scope.kt", 1.0),
            ("impl.py", 0.0),
            ("settings.py", 1.0),
            // Its one function is a header recovered from a region the parser could not read.
            ("broken.py", 0.0),
        ] {
            assert!(
                (share(path) - expected).abs() < 1e-6,
                "{path}: {}",
                share(path)
            );
        }
        assert!(index.files[at("broken.py")]
            .parsed
            .symbols
            .iter()
            .all(|s| s.recovered));
        assert!(!index.files[at("broken.py")].parsed.symbols.is_empty());
        assert_eq!(
            details(&signals[at("Server.java")], Signal::Unimplemented),
            ["1 of its 3 functions and methods are declared without a body"]
        );
        assert!(signals[at("impl.py")]
            .evidence
            .iter()
            .all(|e| e.signal != Signal::Unimplemented));
    }

    /// The issue's words are read once for the build modules it names: a one-word name is
    /// found as a whole word, a dotted one where it stands whole, and each file is credited to
    /// the innermost named module holding it.
    #[test]
    fn build_modules_are_found_among_the_issues_words() {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in [
            ("kotlinx-coroutines-core/build.gradle", ""),
            ("kotlinx-coroutines-core/src/Job.kt", "class Job\n"),
            ("kotlinx-coroutines-core/inner-tools/build.gradle", ""),
            (
                "kotlinx-coroutines-core/inner-tools/src/Tool.kt",
                "class Tool\n",
            ),
            ("org.example.plugin/build.gradle", ""),
            ("org.example.plugin/src/Plugin.kt", "class Plugin\n"),
            ("core/build.gradle", ""),
            ("core/src/Core.kt", "class Core\n"),
        ] {
            let at = dir.path().join(path);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, text).unwrap();
        }
        let index = RepoIndex::build(dir.path(), &crate::index::IndexOptions::default()).unwrap();
        let at = |path: &str| index.files.iter().position(|f| f.path() == path).unwrap();
        let module = |signals: &[FileSignals], path: &str| {
            details(&signals[at(path)], Signal::ModuleMention).join("; ")
        };
        let issue = "Crash in kotlinx-coroutines-core and inner-tools, via org.example.plugin.";
        let signals = compute_signals(&index, &crate::query::reformulate(issue));
        assert_eq!(
            module(&signals, "kotlinx-coroutines-core/src/Job.kt"),
            "issue names build module `kotlinx-coroutines-core`"
        );
        assert_eq!(
            module(&signals, "kotlinx-coroutines-core/inner-tools/src/Tool.kt"),
            "issue names build module `kotlinx-coroutines-core/inner-tools`"
        );
        assert_eq!(
            module(&signals, "org.example.plugin/src/Plugin.kt"),
            "issue names build module `org.example.plugin`"
        );
        assert_eq!(
            module(&signals, "core/src/Core.kt"),
            "",
            "`core` is part of a word"
        );
        let signals = compute_signals(&index, &crate::query::reformulate("org example plugin"));
        assert_eq!(module(&signals, "org.example.plugin/src/Plugin.kt"), "");
    }

    /// The `definition` score as it was computed before the lookups of [`Defined`]: every
    /// symbol of each defining file compared with each dotted mention.
    fn definition_scores_by_scan(index: &RepoIndex, query: &Reformulation) -> Vec<f32> {
        let mut scores = vec![0.0f32; index.files.len()];
        for identifier in &query.identifiers {
            let name = identifier
                .name
                .rsplit('.')
                .next()
                .unwrap_or(&identifier.name);
            let Some(defs) = index.definitions.get(name) else {
                continue;
            };
            let files: HashSet<u32> = defs.iter().map(|&(f, _)| f).collect();
            if files.len() > MAX_DEFINING_FILES {
                continue;
            }
            let tail = identifier
                .name
                .contains('.')
                .then_some(identifier.name.as_str());
            for &file in &files {
                let pinned = tail.is_some_and(|tail| {
                    index.files[file as usize].parsed.symbols.iter().any(|s| {
                        s.name == name
                            && (s.qualified == tail
                                || tail.ends_with(&format!(".{}", s.qualified))
                                || s.qualified.ends_with(&format!(".{tail}")))
                    })
                });
                let specificity = if pinned {
                    1.0
                } else {
                    1.0 / files.len() as f32
                };
                scores[file as usize] += source_weight(identifier.source) * specificity;
            }
        }
        scores
    }

    /// Dotted mentions pin a definition in the file whose qualified name they end with (or
    /// that ends with them), however many files define the bare name: the lookups score as the
    /// scan of every symbol did. The evidence a file lists is bounded; its score keeps every
    /// mention.
    #[test]
    fn definitions_pin_dotted_names_and_list_bounded_evidence() {
        let methods: String = (0..30).fold(String::new(), |text, i| {
            text + &format!("    void m{i}() {{}}\n")
        });
        let (_dir, index) = index_of(&[
            ("Pool.java", format!("class Pool {{\n    void close() {{}}\n    class Inner {{ void close() {{}} }}\n{methods}}}\n")),
            ("Other.java", "class Other {\n    void close() {}\n}\n".to_owned()),
            ("third.py", "class Third:\n    def close(self):\n        pass\n\ndef m3():\n    pass\n".to_owned()),
        ]);
        let at = |path: &str| index.files.iter().position(|f| f.path() == path).unwrap();
        let named: String = (0..30).fold(String::new(), |text, i| text + &format!("`Pool.m{i}` "));
        for issue in [
            format!("`db.Pool.close` leaks; also {named}"),
            "`close` leaks".to_owned(),
            "`Pool.close` and Inner.close() and `x.Third.close`, not `Other.closed`".to_owned(),
            "`pkg.Pool.Inner.close` or `Inner.close` or `ool.close`".to_owned(),
        ] {
            let query = crate::query::reformulate(&issue);
            let signals = compute_signals(&index, &query);
            let expected = definition_scores_by_scan(&index, &query);
            for (file, signals) in signals.iter().enumerate() {
                let got = signals.get(Signal::Definition);
                assert!(
                    (got - expected[file]).abs() < 1e-4,
                    "{issue}: file {file}: {got} against {}",
                    expected[file]
                );
            }
        }
        let query = crate::query::reformulate(&format!("`db.Pool.close` leaks; also {named}"));
        let signals = compute_signals(&index, &query);
        let pool = &signals[at("Pool.java")];
        assert!(pool.get(Signal::Definition) > 30.0);
        assert_eq!(
            details(pool, Signal::Definition).len(),
            MAX_EVIDENCE_PER_SIGNAL
        );
        let pinned = compute_signals(&index, &crate::query::reformulate("`Pool.close` leaks"));
        let bare = compute_signals(&index, &crate::query::reformulate("`close` leaks"));
        assert!(
            pinned[at("Pool.java")].get(Signal::Definition)
                > bare[at("Pool.java")].get(Signal::Definition)
        );
    }
}
