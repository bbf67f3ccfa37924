//! The symbol table (classes, functions, methods with qualified names and line ranges) and the
//! skeleton built from it: decorators, class headers, full signatures (defaults and
//! annotations kept) and the first docstring line.

use std::fmt::Write as _;
use std::sync::LazyLock;
use std::time::Instant;

use regex::Regex;
use serde::{Deserialize, Serialize};
use tree_sitter::Node;

use super::segments::top_level_segments;
use super::syntax::{
    body_start, capped, collapse_whitespace, definition_body, definition_name, documentation,
    leading_doc_comment, qualified_name, MAX_NAME_BYTES,
};
use crate::repo::{DocStyle, Language, SourceFile, LANGUAGES};

/// What a symbol is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SymbolKind {
    /// A class.
    Class,
    /// A function at module level or nested in another function.
    Function,
    /// A function defined directly in a class body.
    Method,
}

impl SymbolKind {
    /// `class`, `function` or `method`, as results spell it.
    pub fn name(self) -> &'static str {
        match self {
            SymbolKind::Class => "class",
            SymbolKind::Function => "function",
            SymbolKind::Method => "method",
        }
    }
}

/// The innermost symbol holding `lines` (1-based, inclusive) that is not nested in a function,
/// as an index into `symbols`: a closure's lines count for the function that defines it, and
/// module-level code has none.
pub fn enclosing(symbols: &[Symbol], lines: (usize, usize)) -> Option<usize> {
    symbols
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.in_function && s.start_line <= lines.0 && lines.1 <= s.end_line)
        .max_by_key(|(_, s)| (s.depth, s.start_line))
        .map(|(i, _)| i)
}

/// [`enclosing`] of every single line at once: index `line` (1-based; 0 and lines past the
/// last symbol are `None`) holds what `enclosing(symbols, (line, line))` gives. Built in
/// about the time of one scan, for callers that ask about many lines.
pub fn enclosing_by_line(symbols: &[Symbol]) -> Vec<Option<u32>> {
    enclosing_from(symbols, |s| s.start_line)
}

/// [`enclosing_by_line`] with each definition's lines beginning at its Javadoc or KDoc
/// ([`Symbol::documented_start`]): a line of the documentation is the definition's, as a
/// Python docstring's line is its function's.
pub fn documented_enclosing_by_line(symbols: &[Symbol]) -> Vec<Option<u32>> {
    enclosing_from(symbols, Symbol::documented_start)
}

fn enclosing_from(symbols: &[Symbol], first: impl Fn(&Symbol) -> usize) -> Vec<Option<u32>> {
    let mut order: Vec<usize> = (0..symbols.len())
        .filter(|&i| !symbols[i].in_function)
        .collect();
    // `max_by_key` keeps the last of equal maxima: the later symbol first among equals.
    order.sort_by_key(|&i| (symbols[i].depth, symbols[i].start_line, i));
    holders_from(symbols, order.into_iter().rev(), first)
}

/// For each line number (index 0 is no line), the first symbol of `order` (indices into
/// `symbols`) whose lines hold it. Each symbol is given the lines no earlier one of `order`
/// took, found by skipping those already given, so the whole table costs about one pass over
/// the lines and the symbols.
pub fn holders_by_line(symbols: &[Symbol], order: impl Iterator<Item = usize>) -> Vec<Option<u32>> {
    holders_from(symbols, order, |s| s.start_line)
}

/// [`holders_by_line`], each symbol's lines beginning at `first` of it.
fn holders_from(
    symbols: &[Symbol],
    order: impl Iterator<Item = usize>,
    first: impl Fn(&Symbol) -> usize,
) -> Vec<Option<u32>> {
    let lines = symbols.iter().map(|s| s.end_line).max().unwrap_or(0);
    let mut holder = vec![None; lines + 1];
    // `next_free[l]` leads to the first line at or after `l` not yet given (`lines + 1`: none).
    let mut next_free: Vec<usize> = (0..=lines + 1).collect();
    for i in order {
        let symbol = &symbols[i];
        let mut line = first_free(&mut next_free, first(symbol).clamp(1, lines + 1));
        while line <= symbol.end_line {
            holder[line] = u32::try_from(i).ok();
            next_free[line] = line + 1;
            line = first_free(&mut next_free, line + 1);
        }
    }
    holder
}

/// The first line at or after `at` that [`holders_by_line`] has not given yet, shortening the
/// paths it follows.
fn first_free(next_free: &mut [usize], at: usize) -> usize {
    let mut root = at;
    while next_free[root] != root {
        root = next_free[root];
    }
    let mut at = at;
    while next_free[at] != root {
        at = std::mem::replace(&mut next_free[at], root);
    }
    root
}

/// A class, function or method of a file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Symbol {
    /// The bare name.
    pub name: String,
    /// Dotted name within the file (`Outer.Inner.method`; a Kotlin extension function's
    /// receiver type leads: `String.slugify`). With the file's package in front it is the
    /// fully qualified name.
    pub qualified: String,
    /// What it is.
    pub kind: SymbolKind,
    /// First line (of its decorators, if any), 1-based.
    pub start_line: usize,
    /// Last line, 1-based, inclusive.
    pub end_line: usize,
    /// Line where its body starts (the header ends there), when it has a body.
    #[serde(default)]
    pub body_line: Option<usize>,
    /// Nesting depth: 0 at module level.
    pub depth: usize,
    /// Whether it is nested inside a function (and so is left out of the skeleton).
    pub in_function: bool,
    /// Whether it is defined directly at the file's top level or in its enclosing definition's
    /// body, not inside a statement there (a Python `def` under an `if` or a `try`); a header
    /// recovered from a region the parser could not read is not.
    #[serde(default)]
    pub direct: bool,
    /// Python decorators, one per entry, as written (`@property`); Java and Kotlin
    /// annotations are part of the signature.
    pub decorators: Vec<String>,
    /// The header up to its body (Python's up to and including the colon; Java's and Kotlin's
    /// with annotations, modifiers and types), whitespace collapsed.
    pub signature: String,
    /// The first non-blank line of its docstring, Javadoc or KDoc.
    pub doc: Option<String>,
    /// First line of the Javadoc or KDoc comment that leads it, 1-based, when it has one (a
    /// Python docstring lies within its lines already).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc_line: Option<usize>,
    /// Whether only its header line was found, in a region the parser could not read
    /// ([`recover_headers`]); for the reading's own choices, not written out.
    #[serde(skip)]
    pub recovered: bool,
}

impl Symbol {
    /// Its first line, or its Javadoc's or KDoc's where it has one ([`Symbol::doc_line`]).
    pub fn documented_start(&self) -> usize {
        self.doc_line
            .map_or(self.start_line, |doc| doc.min(self.start_line))
    }
}

/// The symbols of a walk, and the line ranges it left out as nested too deep.
type Extracted = (Vec<Symbol>, Vec<(usize, usize)>);

/// Collects the symbols under `root`, in file order, and the line ranges of definitions nested
/// deeper than [`MAX_NESTING`], which are left out with everything inside them.
///
/// The walk keeps its own stack instead of recursing, so a deeply nested expression (thousands
/// of parentheses in generated code) costs memory in proportion to the tree, not call stack.
pub(super) fn extract(
    root: Node<'_>,
    source: &str,
    language: &'static Language,
    deadline: Instant,
) -> Extracted {
    let mut whole = extract_under(root, source, language, Some(deadline));
    if language.braces && root.has_error() {
        if let Some(by_segments) = reread_segments(root, source, language, &mut whole, deadline) {
            return by_segments;
        }
    }
    whole
}

/// The symbols of a file with syntax errors, each of its top-level segments
/// ([`super::segments`]) that an error touches read on its own, so that tree-sitter's recovery
/// from the error cannot take the declarations after it along.
///
/// - Segments that one top-level node without errors spans (a declaration whose multi-line
///   annotation or own-line modifier lies above its header, a class whose members stand at
///   column 0) are one.
/// - A segment an error touches holds an ERROR or MISSING node, or lies under a top-level node
///   holding one that spans other segments too.
/// - `whole`, the walk of the file's own tree, gives a segment's symbols (those starting in
///   its lines) where no error touches it, and where its reading on its own is no better:
///   `whole`'s all end within the segment, none of them is a header recovered from an error
///   ([`Symbol::recovered`]) where the reading on its own has none, there are at least as
///   many, and they are not nested deeper (a class the error made a member of the one before;
///   which also takes members written at column 0 out of a class with an error).
///
/// `None` where no segment is touched, or where the parses run past `deadline` (the file's own
/// parse's, shared) or a stop is asked for: `whole` (sorted by first line) then stands.
fn reread_segments(
    root: Node<'_>,
    source: &str,
    language: &'static Language,
    whole: &mut Extracted,
    deadline: Instant,
) -> Option<Extracted> {
    let header = header_pattern(language)?;
    let mut segments = top_level_segments(source, header);
    // The segments a byte range lies in, as an index range.
    let spanned = |segments: &[(std::ops::Range<usize>, usize)], range: std::ops::Range<usize>| {
        // An empty range (a MISSING node) lies in the segment that holds its position.
        let start = range.start.min(source.len().saturating_sub(1));
        let end = range.end.max(start + 1);
        let first = segments.partition_point(|(segment, _)| segment.end <= start);
        first..segments.partition_point(|(segment, _)| segment.start < end)
    };
    let mut cursor = root.walk();
    let top_level: Vec<Node<'_>> = root.children(&mut cursor).collect();
    for node in top_level.iter().filter(|node| !node.has_error()) {
        let joined = spanned(&segments, node.byte_range());
        if joined.len() > 1 {
            let end = segments[joined.end - 1].0.end;
            segments[joined.start].0.end = end;
            segments.drain(joined.start + 1..joined.end);
        }
    }
    if segments.len() < 2 {
        return None;
    }
    let mut touched = vec![false; segments.len()];
    for node in top_level.iter().filter(|node| node.has_error()) {
        let under = spanned(&segments, node.byte_range());
        if under.len() > 1 {
            touched[under].fill(true);
        }
    }
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.is_error() || node.is_missing() {
            touched[spanned(&segments, node.byte_range())].fill(true);
        } else if node.has_error() {
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
        }
    }
    if !touched.contains(&true) {
        return None;
    }
    let (whole_symbols, whole_deep) = whole;
    // File order, which the walk gives (ties keep it).
    whole_symbols.sort_by_key(|s| s.start_line);
    whole_deep.sort_unstable();
    // What `whole` holds in a segment's lines (1-based, `lines`), both lists in file order.
    let by_start = |lines: &std::ops::Range<usize>| {
        let symbols = whole_symbols.partition_point(|s| s.start_line < lines.start)
            ..whole_symbols.partition_point(|s| s.start_line < lines.end);
        let deep = whole_deep.partition_point(|(start, _)| *start < lines.start)
            ..whole_deep.partition_point(|(start, _)| *start < lines.end);
        (symbols, deep)
    };
    let (mut symbols, mut too_deep) = (Vec::new(), Vec::new());
    for (i, (range, row)) in segments.iter().enumerate() {
        let lines = row + 1..segments.get(i + 1).map_or(usize::MAX, |(_, next)| next + 1);
        let (kept, kept_deep) = by_start(&lines);
        let kept = &whole_symbols[kept];
        if touched[i] {
            if Instant::now() > deadline || crate::cancel::is_requested() {
                return None;
            }
            let file = SourceFile::new(
                String::new(),
                language,
                source[range.clone()].to_owned(),
                false,
            );
            let (tree, _) = super::parse_before(&file, deadline);
            let mut read = extract_under(tree?.root_node(), &file.text, language, Some(deadline));
            shift_lines(&mut read, |line| line + row);
            let recovered = |found: &[Symbol]| found.iter().filter(|s| s.recovered).count();
            let outermost = |found: &[Symbol]| found.iter().map(|s| s.depth).min();
            let whole_as_good = kept.iter().all(|s| lines.contains(&s.end_line))
                && (recovered(kept) == 0 || recovered(&read.0) > 0)
                && kept.len() >= read.0.len()
                && (read.0.is_empty() || outermost(kept) <= outermost(&read.0));
            if !whole_as_good {
                symbols.extend(read.0);
                too_deep.extend(read.1);
                continue;
            }
        }
        symbols.extend(kept.iter().cloned());
        too_deep.extend(&whole_deep[kept_deep]);
    }
    Some((symbols, too_deep))
}

/// Moves every line of `extracted` (its symbols' and its ranges') by `shift`, from the lines
/// of a text read on its own to the file's.
fn shift_lines(extracted: &mut Extracted, shift: impl Fn(usize) -> usize) {
    let (symbols, too_deep) = extracted;
    for symbol in symbols {
        symbol.start_line = shift(symbol.start_line);
        symbol.end_line = shift(symbol.end_line);
        symbol.body_line = symbol.body_line.map(&shift);
        symbol.doc_line = symbol.doc_line.map(&shift);
    }
    for range in too_deep {
        *range = (shift(range.0), shift(range.1));
    }
}

/// [`extract`] of the children of `root`; `reread`: the time until which a top-level node of
/// a kind the language does not allow there is read again as declarations
/// ([`reread_declarations`]; the file's own parse's, shared), `None` for never.
fn extract_under(
    root: Node<'_>,
    source: &str,
    language: &'static Language,
    reread: Option<Instant>,
) -> Extracted {
    let mut symbols = Vec::new();
    let mut too_deep = Vec::new();
    let mut scope: Scope = Vec::new();
    let mut steps = Vec::new();
    push_children(&mut steps, root, true);
    // The top-level nodes, told apart by id: asking each node for its parent costs time in
    // proportion to its depth (a Kotlin file of nested expressions took minutes). Only a walk
    // that may re-read them needs them (not the nested walks of re-reading).
    let top_level: std::collections::HashSet<usize> = match reread {
        Some(_) => {
            let mut cursor = root.walk();
            root.children(&mut cursor).map(|node| node.id()).collect()
        }
        None => std::collections::HashSet::new(),
    };
    while let Some(step) = steps.pop() {
        match step {
            Step::Leave => {
                scope.pop();
            }
            Step::Recover(error) => recover_headers(error, source, language, &scope, &mut symbols),
            Step::Enter(child, direct) => {
                let kind = child.kind();
                let misread = reread.is_some()
                    && !language.top_level_kinds.is_empty()
                    && !language.top_level_kinds.contains(&kind)
                    && !child.is_error()
                    && top_level.contains(&child.id());
                if let Some(deadline) = reread.filter(|_| misread) {
                    if let Some((found, deep)) =
                        reread_declarations(child, source, language, deadline)
                    {
                        symbols.extend(found);
                        too_deep.extend(deep);
                        continue;
                    }
                }
                let is_class = language.class_kinds.contains(&kind)
                    || (language.bodied_class_kinds.contains(&kind)
                        && definition_body(language, child).is_some());
                let named = (is_class || language.function_kinds.contains(&kind))
                    .then(|| definition_name(language, child, source))
                    .flatten();
                let Some((name, receiver)) = named else {
                    if child.is_error() {
                        steps.push(Step::Recover(child));
                    }
                    if language.initializer_kinds.contains(&kind) {
                        // Local to the initializer, as to a function, under the class's name.
                        if let Some((qualified, _)) = scope.last().cloned() {
                            scope.push((qualified, false));
                            steps.push(Step::Leave);
                            push_children(&mut steps, child, false);
                            continue;
                        }
                    }
                    // A body's blocks (Java's enum declarations) and a decorator's wrapper
                    // keep what they hold directly in the body; a statement does not.
                    let keeps = language.block_kinds.contains(&kind)
                        || Some(kind) == language.decorated_kind;
                    push_children(&mut steps, child, direct && keeps);
                    continue;
                };
                if scope.len() >= MAX_NESTING {
                    too_deep.push((child.start_position().row + 1, child.end_position().row + 1));
                    continue;
                }
                let local = match &receiver {
                    Some(receiver) => format!("{receiver}.{name}"),
                    None => name.clone(),
                };
                let body = definition_body(language, child);
                let mut symbol = symbol(
                    language, child, body, &scope, name, &local, is_class, source,
                );
                symbol.direct = direct;
                scope.push((symbol.qualified.clone(), is_class));
                symbols.push(symbol);
                steps.push(Step::Leave);
                if let Some(body) = body {
                    push_children(&mut steps, body, true);
                }
            }
        }
    }
    (symbols, too_deep)
}

/// The declarations of `node`, a top-level node the grammar read as something the language
/// does not allow there ([`Language::top_level_kinds`]), read again inside a class body,
/// where only declarations parse, with their lines those of the file; `None` where that
/// reading finds none (the node is then walked as it is).
fn reread_declarations(
    node: Node<'_>,
    source: &str,
    language: &'static Language,
    deadline: Instant,
) -> Option<Extracted> {
    // Only a node that holds a definition's keyword is worth a parse (a script-like file's
    // thousand top-level calls are not).
    static DECLARING: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\b(class|interface|object|fun)\b").expect("valid pattern"));
    let text = &source[node.byte_range()];
    // The readings share the file's parse time: a long line of such nodes, each read with
    // what precedes it on the line, took time in the square of the line's length (found by
    // a review: 96 KB of `f(fun(){}); ` on one line, 68 s).
    if !DECLARING.is_match(text) || Instant::now() > deadline || crate::cancel::is_requested() {
        return None;
    }
    // The wrapper's first line, then the node's lines, what precedes it on its first line
    // blanked (a declaration there was read already).
    let line_start = source[..node.start_byte()].rfind('\n').map_or(0, |i| i + 1);
    let indent = " ".repeat(node.start_byte() - line_start);
    let wrapped = format!("class _ {{\n{indent}{text}\n}}\n");
    let file = SourceFile::new(String::new(), language, wrapped, false);
    let (tree, _) = super::parse_before(&file, deadline);
    let tree = tree?;
    let body = tree
        .root_node()
        .named_child(0)
        .and_then(|class| definition_body(language, class))?;
    let mut read = extract_under(body, &file.text, language, None);
    if read.0.is_empty() {
        return None;
    }
    // Line 2 of the wrapped text is the node's first line.
    shift_lines(&mut read, |line| line + node.start_position().row - 1);
    let (mut symbols, too_deep) = read;
    // The KDoc before the node lay outside the text read again: it documents the definition
    // the node opens with.
    let first_line = node.start_position().row + 1;
    if let (Some(first), Some(comment)) = (
        symbols.iter_mut().find(|s| s.start_line == first_line),
        leading_doc_comment(language, node, source),
    ) {
        first.doc_line = Some(comment.start_position().row + 1);
        first.doc = documentation(language, node, None, source);
    }
    Some((symbols, too_deep))
}

/// How deep definitions may nest (classes and functions inside each other) before the rest is
/// left out: far beyond hand-written code, and a bound on the qualified names and skeleton
/// lines, which grow with the depth.
pub(super) const MAX_NESTING: usize = 100;

/// One step of [`extract`]'s walk.
enum Step<'t> {
    /// Look at a node: a definition becomes a symbol and its body is walked in its scope; any
    /// other node's children are walked. The flag: whether the node lies directly at the top
    /// level or in the enclosing definition's body ([`Symbol::direct`]).
    Enter(Node<'t>, bool),
    /// Recover definition headers in an ERROR region, after its children were walked.
    Recover(Node<'t>),
    /// Close the scope of the definition whose body was just walked.
    Leave,
}

/// Pushes `node`'s named children so that the first is popped first, each with `direct`.
fn push_children<'t>(steps: &mut Vec<Step<'t>>, node: Node<'t>, direct: bool) {
    let mut cursor = node.walk();
    let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
    steps.extend(
        children
            .into_iter()
            .rev()
            .map(|child| Step::Enter(child, direct)),
    );
}

/// The symbol a named definition makes in `scope`.
#[allow(clippy::too_many_arguments)]
fn symbol(
    lang: &Language,
    def: Node<'_>,
    body: Option<Node<'_>>,
    scope: &Scope,
    name: String,
    local: &str,
    is_class: bool,
    source: &str,
) -> Symbol {
    let outer = def
        .parent()
        .filter(|p| Some(p.kind()) == lang.decorated_kind)
        .unwrap_or(def);
    let kind = match (is_class, scope.last()) {
        (true, _) => SymbolKind::Class,
        (false, Some((_, true))) => SymbolKind::Method,
        (false, _) => SymbolKind::Function,
    };
    let opening = body_start(def, body);
    let header_end = opening.map_or(def.end_byte(), |b| b.start_byte());
    Symbol {
        name,
        qualified: qualify(scope, local),
        kind,
        start_line: outer.start_position().row + 1,
        end_line: def.end_position().row + 1,
        body_line: opening.map(|b| b.start_position().row + 1),
        depth: scope.len(),
        in_function: scope.iter().any(|(_, class)| !class),
        direct: false,
        decorators: decorators(outer, source),
        signature: collapse_whitespace(&source[def.start_byte()..header_end]),
        doc: documentation(lang, outer, body, source),
        doc_line: leading_doc_comment(lang, outer, source).map(|c| c.start_position().row + 1),
        recovered: false,
    }
}

/// `(qualified name, is_class)` of each enclosing definition, outermost first.
type Scope = Vec<(String, bool)>;

fn qualify(scope: &Scope, name: &str) -> String {
    qualified_name(scope.last().map(|(q, _)| q.as_str()), name)
}

/// Each language's header pattern, compiled once.
static HEADERS: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    LANGUAGES
        .iter()
        .map(|lang| {
            (
                lang.name,
                Regex::new(lang.header_pattern).expect("valid pattern"),
            )
        })
        .collect()
});

/// `language`'s header pattern, compiled ([`HEADERS`]).
fn header_pattern(language: &Language) -> Option<&'static Regex> {
    HEADERS
        .iter()
        .find(|(name, _)| *name == language.name)
        .map(|(_, header)| header)
}

/// Definitions the parser could not recover inside an ERROR region, found by their header
/// line (`def name(`, `class Name`, `fun name`), so the symbol table still names them. Each
/// spans from its header to the end of the region.
fn recover_headers(
    error: Node<'_>,
    source: &str,
    lang: &Language,
    scope: &Scope,
    out: &mut Vec<Symbol>,
) {
    let Some(header) = header_pattern(lang) else {
        return;
    };
    let first_line = error.start_position().row + 1;
    let end_line = error.end_position().row + 1;
    let text = &source[error.byte_range()];
    for (i, line) in text.lines().enumerate() {
        let Some(c) = header.captures(line) else {
            continue;
        };
        let start_line = first_line + i;
        // A definition read already whose header holds the line (`@Composable` above `fun`),
        // or, without a body, whose lines do.
        let read_already = out.iter().any(|s| {
            let header_end = match s.body_line {
                Some(body) => body,
                // A header recovered before spans to the region's end: only its own line.
                None if s.recovered => s.start_line,
                None => s.end_line,
            };
            (s.start_line..=header_end.max(s.start_line)).contains(&start_line)
        });
        if read_already {
            continue;
        }
        let name = capped(&c[2], MAX_NAME_BYTES);
        out.push(Symbol {
            kind: if lang.function_keywords.contains(&&c[1]) {
                SymbolKind::Function
            } else {
                SymbolKind::Class
            },
            qualified: qualify(scope, &name),
            name,
            start_line,
            end_line,
            body_line: None,
            depth: scope.len(),
            in_function: scope.iter().any(|(_, class)| !class),
            direct: false,
            decorators: Vec::new(),
            signature: collapse_whitespace(line),
            doc: None,
            doc_line: None,
            recovered: true,
        });
    }
    out.sort_by_key(|s| s.start_line);
}

fn decorators(outer: Node<'_>, source: &str) -> Vec<String> {
    let mut cursor = outer.walk();
    outer
        .named_children(&mut cursor)
        .filter(|c| c.kind() == "decorator")
        .map(|c| collapse_whitespace(&source[c.byte_range()]))
        .collect()
}

/// The skeleton: the package and imports of a language that declares them, then one entry per
/// class, method and module-level function, indented by depth, with the first line of its
/// documentation (a docstring after the header, a `/** … */` line before it).
pub(super) fn skeleton(
    symbols: &[Symbol],
    lang: &Language,
    package: Option<&str>,
    imports: &[String],
) -> String {
    let mut out = String::new();
    if let Some(package) = package {
        let _ = writeln!(out, "package {package}");
    }
    for import in imports {
        let _ = writeln!(out, "{import}");
    }
    if !out.is_empty() {
        out.push('\n');
    }
    for symbol in symbols.iter().filter(|s| !s.in_function) {
        let indent = "    ".repeat(symbol.depth);
        for decorator in &symbol.decorators {
            let _ = writeln!(out, "{indent}{decorator}");
        }
        match (&symbol.doc, lang.doc_style) {
            (Some(doc), DocStyle::LeadingComment) => {
                let _ = writeln!(out, "{indent}/** {doc} */");
                let _ = writeln!(out, "{indent}{}", symbol.signature);
            }
            (Some(doc), DocStyle::Docstring) => {
                let _ = writeln!(out, "{indent}{}", symbol.signature);
                let _ = writeln!(out, "{indent}    \"\"\"{doc}\"\"\"");
            }
            (None, _) => {
                let _ = writeln!(out, "{indent}{}", symbol.signature);
            }
        }
    }
    out
}
