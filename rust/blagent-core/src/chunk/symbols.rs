//! The symbol table (classes, functions, methods with qualified names and line ranges) and the
//! skeleton built from it: decorators, class headers, full signatures (defaults and
//! annotations kept) and the first docstring line.

use std::collections::{HashSet, VecDeque};
use std::fmt::Write as _;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use tree_sitter::Node;

use super::recover::Braces;
use super::syntax::{
    capped, collapse_whitespace, definition_body, definition_name, documentation, qualified_name,
    receiver, MAX_NAME_BYTES,
};
use super::LineIndex;
use crate::repo::{DocStyle, Language, LANGUAGES};

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
    let mut order: Vec<usize> = (0..symbols.len())
        .filter(|&i| !symbols[i].in_function)
        .collect();
    // `max_by_key` keeps the last of equal maxima: the later symbol first among equals.
    order.sort_by_key(|&i| (symbols[i].depth, symbols[i].start_line, i));
    holders_by_line(symbols, order.into_iter().rev())
}

/// For each line number (index 0 is no line), the first symbol of `order` (indices into
/// `symbols`) whose lines hold it. Each symbol is given the lines no earlier one of `order`
/// took, found by skipping those already given, so the whole table costs about one pass over
/// the lines and the symbols.
pub fn holders_by_line(symbols: &[Symbol], order: impl Iterator<Item = usize>) -> Vec<Option<u32>> {
    let lines = symbols.iter().map(|s| s.end_line).max().unwrap_or(0);
    let mut holder = vec![None; lines + 1];
    // `next_free[l]` leads to the first line at or after `l` not yet given (`lines + 1`: none).
    let mut next_free: Vec<usize> = (0..=lines + 1).collect();
    for i in order {
        let symbol = &symbols[i];
        let mut line = first_free(&mut next_free, symbol.start_line.clamp(1, lines + 1));
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
    /// Python decorators, one per entry, as written (`@property`); Java and Kotlin
    /// annotations are part of the signature.
    pub decorators: Vec<String>,
    /// The header up to its body (Python's up to and including the colon; Java's and Kotlin's
    /// with annotations, modifiers and types), whitespace collapsed.
    pub signature: String,
    /// The first non-blank line of its docstring, Javadoc or KDoc.
    pub doc: Option<String>,
}

/// Collects the symbols under `root`, in file order, and the line ranges of definitions nested
/// deeper than [`MAX_NESTING`], which are left out with everything inside them.
///
/// The walk keeps its own stack instead of recursing, so a deeply nested expression (thousands
/// of parentheses in generated code) costs memory in proportion to the tree, not call stack.
///
/// Besides definitions, the scope holds the fields and properties met outside functions (the
/// methods of an anonymous class one holds are qualified by it: `TypeAdapters.BOOLEAN.read`;
/// a Kotlin property's accessors are named by it) and initializer blocks (code: what they hold
/// counts as nested in a function). Where the parser failed ([`Step::Broken`]), definitions
/// are read from the text first ([`Recovery`]), and the classes and functions found there
/// scope what the walk then meets inside their braces.
pub(super) fn extract(
    root: Node<'_>,
    source: &str,
    language: &Language,
) -> (Vec<Symbol>, Vec<(usize, usize)>) {
    let mut symbols = Vec::new();
    let mut too_deep = Vec::new();
    let mut scope = Scope::default();
    let mut recovery = Recovery::new(source, language);
    let mut steps = Vec::new();
    if root.is_error() {
        // Nothing parsed at the top: the whole file is one broken region.
        steps.push(Step::Broken(root, root));
    } else {
        push_children(&mut steps, root, language);
    }
    while let Some(step) = steps.pop() {
        let node = match step {
            Step::Leave => {
                scope.tree.pop();
                continue;
            }
            Step::Broken(first, last) => {
                scope.advance_to(first.start_byte());
                let region = first.start_byte()..last.end_byte();
                recovery.recover(region, &mut scope, &mut symbols);
                push_children(&mut steps, last, language);
                if first != last {
                    push_children(&mut steps, first, language);
                }
                continue;
            }
            Step::Enter(node) => node,
        };
        scope.advance_to(node.start_byte());
        let kind = node.kind();
        let is_class = language.class_kinds.contains(&kind);
        let definition = is_class || language.function_kinds.contains(&kind);
        if definition && node.has_error() && recovery.mistrusts(node) {
            recovery.recover(node.byte_range(), &mut scope, &mut symbols);
            push_children(&mut steps, node, language);
            continue;
        }
        let named = definition
            .then(|| definition_name(language, node, source))
            .flatten()
            .filter(|_| !recovery.read_from_text(node));
        if let Some((name, receiver)) = named {
            if scope.depth() >= MAX_NESTING {
                too_deep.push((node.start_position().row + 1, node.end_position().row + 1));
                continue;
            }
            let local = match &receiver {
                Some(receiver) => format!("{receiver}.{name}"),
                None => name.clone(),
            };
            let body = definition_body(language, node);
            let symbol = symbol(language, node, body, &scope, name, &local, is_class, source);
            let kind = if is_class {
                LevelKind::Class
            } else {
                LevelKind::Code
            };
            scope.enter(Level::of(node, symbol.qualified.clone(), kind));
            symbols.push(symbol);
            steps.push(Step::Leave);
            if let Some(body) = body {
                push_children(&mut steps, body, language);
            }
            continue;
        }
        let innermost = scope.innermost().map(|level| level.kind);
        if language.accessor_kinds.contains(&kind) && innermost == Some(LevelKind::Holder) {
            if let Some(body) = definition_body(language, node) {
                // The accessor is a function of its property's name, in the property's scope.
                let holder = scope.tree.pop().expect("the innermost level is the holder");
                let name = holder.name.clone();
                let mut symbol = symbol(
                    language,
                    node,
                    Some(body),
                    &scope,
                    name,
                    &holder.name,
                    false,
                    source,
                );
                let property = collapse_whitespace(&source[holder.start..holder.header_end]);
                symbol.signature = format!("{property} {}", symbol.signature);
                scope.enter(holder);
                scope.enter(Level::of(node, symbol.qualified.clone(), LevelKind::Code));
                symbols.push(symbol);
                steps.push(Step::Leave);
                push_children(&mut steps, body, language);
                continue;
            }
        }
        let holder = (language.holder_kinds.contains(&kind)
            && !scope.in_code()
            && scope.depth() < MAX_NESTING)
            .then(|| holder_name(node, source))
            .flatten();
        if let Some((name, header_end)) = holder {
            let qualified = scope.qualify(&name);
            scope.enter(Level {
                name,
                header_end,
                ..Level::of(node, qualified, LevelKind::Holder)
            });
            steps.push(Step::Leave);
        } else if language.initializer_kinds.contains(&kind) && innermost == Some(LevelKind::Class)
        {
            let class = scope.innermost().map(|level| level.qualified.clone());
            scope.enter(Level::of(node, class.unwrap_or_default(), LevelKind::Code));
            steps.push(Step::Leave);
        }
        push_children(&mut steps, node, language);
    }
    // Recovered symbols joined the walk's as they were found: put them in file order (the
    // sort is stable, so a line's symbols keep their order).
    symbols.sort_by_key(|s| s.start_line);
    (symbols, too_deep)
}

/// How deep definitions may nest (classes and functions inside each other) before the rest is
/// left out: far beyond hand-written code, and a bound on the qualified names and skeleton
/// lines, which grow with the depth.
pub(super) const MAX_NESTING: usize = 100;

/// One step of [`extract`]'s walk.
enum Step<'t> {
    /// Look at a node: a definition becomes a symbol and its body is walked in its scope; any
    /// other node's children are walked.
    Enter(Node<'t>),
    /// Siblings from the first to the last node the parser could not parse as written (an
    /// ERROR node; in a brace language also a class without a body and the ERROR after it,
    /// which holds its body): their text is read for definitions, then their children are
    /// walked. A definition whose parse [`Recovery::mistrusts`] is read the same way.
    Broken(Node<'t>, Node<'t>),
    /// Close the scope of the definition whose body was just walked.
    Leave,
}

/// Pushes `node`'s named children so that the first is popped first, marking those the parser
/// could not parse as [`Step::Broken`].
fn push_children<'t>(steps: &mut Vec<Step<'t>>, node: Node<'t>, lang: &Language) {
    let mut cursor = node.walk();
    let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
    let mut ordered = Vec::with_capacity(children.len());
    let mut i = 0;
    while i < children.len() {
        let child = children[i];
        let next = children.get(i + 1).filter(|next| next.is_error());
        let step = if child.is_error() {
            Step::Broken(child, child)
        } else if let Some(&next) = next.filter(|_| {
            lang.braces
                && lang.class_kinds.contains(&child.kind())
                && definition_body(lang, child).is_none()
        }) {
            i += 1;
            Step::Broken(child, next)
        } else {
            Step::Enter(child)
        };
        ordered.push(step);
        i += 1;
    }
    steps.extend(ordered.into_iter().rev());
}

/// The name a field, property or enum constant holds its value under, and where its header
/// (modifiers, name and type) ends: its `name` field, else its first identifier, else the
/// identifier of its variable declaration (Kotlin's `val label: String`). None for a
/// destructuring declaration (`val (a, b) = pair`).
fn holder_name(node: Node<'_>, source: &str) -> Option<(String, usize)> {
    if let Some(name) = node.child_by_field_name("name") {
        return Some((
            capped(&source[name.byte_range()], MAX_NAME_BYTES),
            name.end_byte(),
        ));
    }
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
    let identifier = |n: &Node<'_>| n.kind() == "identifier";
    let (name, header) = if let Some(&name) = children.iter().find(|c| identifier(c)) {
        (name, name)
    } else {
        let declaration = *children
            .iter()
            .find(|c| c.kind() == "variable_declaration")?;
        let mut cursor = declaration.walk();
        let name = declaration.named_children(&mut cursor).find(identifier)?;
        (name, declaration)
    };
    Some((
        capped(&source[name.byte_range()], MAX_NAME_BYTES),
        header.end_byte(),
    ))
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
    let header_end = body.map_or(def.end_byte(), |b| b.start_byte());
    Symbol {
        name,
        qualified: scope.qualify(local),
        kind: scope.kind_of(is_class),
        start_line: outer.start_position().row + 1,
        end_line: def.end_position().row + 1,
        body_line: body.map(|b| b.start_position().row + 1),
        depth: scope.depth(),
        in_function: scope.in_code(),
        decorators: decorators(outer, source),
        signature: collapse_whitespace(&source[def.start_byte()..header_end]),
        doc: documentation(lang, outer, body, source),
    }
}

/// What a level of the scope is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LevelKind {
    /// A class: functions directly in it are methods.
    Class,
    /// A field or property outside any function: the methods of an anonymous class in its
    /// value are qualified by it, as if it were a class, and its accessors are named by it.
    Holder,
    /// A function, or code a class runs that is not one (an initializer block): definitions
    /// in it are nested in a function.
    Code,
}

/// One enclosing level of the walk.
#[derive(Clone)]
struct Level {
    /// What names inside it are qualified by.
    qualified: String,
    /// Its own name (a holder's, which its accessors take).
    name: String,
    kind: LevelKind,
    /// Its first byte.
    start: usize,
    /// One past its last byte: nothing inside it ends later.
    end: usize,
    /// Where a holder's header (modifiers, name and type) ends.
    header_end: usize,
}

impl Level {
    fn of(node: Node<'_>, qualified: String, kind: LevelKind) -> Self {
        Level {
            qualified,
            name: String::new(),
            kind,
            start: node.start_byte(),
            end: node.end_byte(),
            header_end: node.start_byte(),
        }
    }
}

/// The levels enclosing the walk's position, outermost first: those of the tree, opened and
/// closed by the walk's steps, and those recovered from text, opened and closed as the walk
/// passes their start and end. Both hold the position, so the innermost is whichever starts
/// later.
#[derive(Default)]
struct Scope {
    tree: Vec<Level>,
    recovered: Vec<Level>,
    /// Recovered levels the walk has not reached yet, in file order.
    pending: VecDeque<Level>,
}

impl Scope {
    fn enter(&mut self, level: Level) {
        self.tree.push(level);
    }

    /// Moves the position to `at` (never back): closes the recovered levels that end at or
    /// before it and opens those that start at or before it.
    fn advance_to(&mut self, at: usize) {
        loop {
            while self.recovered.last().is_some_and(|level| level.end <= at) {
                self.recovered.pop();
            }
            match self.pending.pop_front() {
                Some(level) if level.start <= at => {
                    if level.end > at {
                        self.recovered.push(level);
                    }
                }
                Some(level) => {
                    self.pending.push_front(level);
                    return;
                }
                None => return,
            }
        }
    }

    fn innermost(&self) -> Option<&Level> {
        match (self.tree.last(), self.recovered.last()) {
            (Some(tree), Some(recovered)) if tree.start > recovered.start => Some(tree),
            (tree, recovered) => recovered.or(tree),
        }
    }

    /// Where the innermost levels end: what is inside them ends there at the latest.
    fn end(&self) -> Option<usize> {
        let ends = self.tree.last().into_iter().chain(self.recovered.last());
        ends.map(|level| level.end).min()
    }

    fn depth(&self) -> usize {
        self.tree.len() + self.recovered.len()
    }

    /// Whether the position is inside a function (or other code).
    fn in_code(&self) -> bool {
        let levels = self.tree.iter().chain(&self.recovered);
        levels
            .map(|level| level.kind)
            .any(|kind| kind == LevelKind::Code)
    }

    fn qualify(&self, local: &str) -> String {
        qualified_name(
            self.innermost().map(|level| level.qualified.as_str()),
            local,
        )
    }

    /// What a class (`is_class`) or function defined here is.
    fn kind_of(&self, is_class: bool) -> SymbolKind {
        let innermost = self.innermost().map(|level| level.kind);
        match (is_class, innermost) {
            (true, _) => SymbolKind::Class,
            (false, Some(LevelKind::Class | LevelKind::Holder)) => SymbolKind::Method,
            (false, _) => SymbolKind::Function,
        }
    }
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

/// Definitions read from the text of regions the parser could not parse, by their header
/// lines (`def name(`, `class Name`, `fun name`), so the symbol table still names them.
///
/// In a brace language a header's extent is read on the text ([`Braces`]: strings and
/// comments skipped): to the `}` closing its body, to the end of its expression body, or to
/// the end of its header; the innermost enclosing level's end caps it. Each recovered class
/// and function becomes a level of the scope over that extent, so what follows inside its
/// braces (recovered or parsed) is qualified by it and no candidate runs past its class. In
/// Python a header spans to the end of its region and opens no level.
struct Recovery<'s> {
    source: &'s str,
    lang: &'s Language,
    header: Option<&'static Regex>,
    /// The file's punctuation, read at the first broken region of a brace language.
    braces: Option<Braces>,
    lines: Option<LineIndex>,
    /// Where the text was read up to: nested broken regions are read once.
    read_until: usize,
    /// Where the names of the recovered definitions start: a parsed definition of the same
    /// name there is not made a symbol again.
    names: HashSet<usize>,
}

impl<'s> Recovery<'s> {
    fn new(source: &'s str, lang: &'s Language) -> Self {
        Recovery {
            source,
            lang,
            header: HEADERS
                .iter()
                .find(|(name, _)| *name == lang.name)
                .map(|(_, header)| header),
            braces: None,
            lines: None,
            read_until: 0,
            names: HashSet::new(),
        }
    }

    /// Whether the parse of a definition holding an error is not to be trusted, in a brace
    /// language: an ERROR or missing node is one of its own parts (not deeper, where the
    /// parser recovered around it), or its body's braces are not partners in the text (the
    /// parser closed it with a `}` of the broken code inside).
    fn mistrusts(&mut self, def: Node<'_>) -> bool {
        let (source, lang) = (self.source, self.lang);
        if !lang.braces {
            return false;
        }
        let mut cursor = def.walk();
        let broken_part = def
            .children(&mut cursor)
            .any(|c| c.is_error() || c.is_missing());
        let Some(body) =
            definition_body(lang, def).filter(|b| source[b.byte_range()].starts_with('{'))
        else {
            return broken_part;
        };
        let braces = self
            .braces
            .get_or_insert_with(|| Braces::new(source, lang.string_templates));
        broken_part || braces.closing(body.start_byte()) != Some(body.end_byte() - 1)
    }

    /// Whether `def` was already recovered from the text (a definition the parser made inside
    /// a region it could not parse).
    fn read_from_text(&self, def: Node<'_>) -> bool {
        def.child_by_field_name("name")
            .is_some_and(|name| self.names.contains(&name.start_byte()))
    }

    /// Recovers the definitions whose header lines lie in `region` (bytes) and not in text
    /// read before, in `scope`. In a brace language the reading goes on to the end of the
    /// extents found (a class whose body the parser lost to nodes after the region that are
    /// not ERRORs), so every header inside a recovered class is read.
    fn recover(&mut self, region: Range<usize>, scope: &mut Scope, out: &mut Vec<Symbol>) {
        let (source, lang) = (self.source, self.lang);
        let from = region.start.max(self.read_until);
        let Some(pattern) = self.header.filter(|_| from < region.end) else {
            return;
        };
        let braces = lang.braces.then(|| {
            &*self
                .braces
                .get_or_insert_with(|| Braces::new(source, lang.string_templates))
        });
        let lines = self.lines.get_or_insert_with(|| LineIndex::new(source));
        let mut read_until = region.end;
        // The levels found are opened while reading on, to qualify the headers inside them,
        // then left for the walk to open again as it goes through the region.
        let open_before = scope.recovered.len();
        let mut found = Vec::new();
        let mut next = next_header(pattern, lang, braces, source, from..read_until);
        while let Some(header) = next {
            scope.advance_to(header.line_start);
            let cap = scope.end().unwrap_or(source.len());
            next = next_header(pattern, lang, braces, source, header.line_end..read_until);
            // A body is looked for up to the next header, the last one's up to the enclosing
            // level's end (it may lie past the region).
            let bound = next.as_ref().map_or(cap, |h| h.line_start).min(cap);
            let end = braces.map(|b| {
                let end = b
                    .extent(source, header.name.end, bound, header.function)
                    .end;
                end.min(cap).max(header.name.end)
            });
            if let Some(end) = end.filter(|&end| end > read_until) {
                read_until = end;
                if next.is_none() {
                    next = next_header(pattern, lang, braces, source, header.line_end..end);
                }
            }
            if scope.depth() >= MAX_NESTING {
                continue;
            }
            let name = capped(&source[header.name.clone()], MAX_NAME_BYTES);
            // An extension function is named by its receiver, as a parsed one is.
            let local = match receiver(&source[header.line_start..header.name.start]) {
                Some(receiver) if header.function => format!("{receiver}.{name}"),
                _ => name.clone(),
            };
            let qualified = scope.qualify(&local);
            out.push(Symbol {
                kind: scope.kind_of(!header.function),
                qualified: qualified.clone(),
                start_line: lines.line(header.line_start),
                end_line: end.map_or(lines.line(region.end), |end| lines.line(end - 1)),
                body_line: None,
                depth: scope.depth(),
                in_function: scope.in_code(),
                decorators: Vec::new(),
                signature: collapse_whitespace(&source[header.line_start..header.line_end]),
                doc: None,
                name: name.clone(),
            });
            self.names.insert(header.name.start);
            if let Some(end) = end {
                let kind = if header.function {
                    LevelKind::Code
                } else {
                    LevelKind::Class
                };
                let level = Level {
                    qualified,
                    name,
                    kind,
                    start: header.line_start,
                    end,
                    header_end: header.name.end,
                };
                found.push(level.clone());
                scope.pending.push_back(level);
            }
        }
        self.read_until = read_until;
        scope.recovered.truncate(open_before);
        scope.pending = found.into();
    }
}

/// A definition's header line found in the text.
struct Header {
    /// Where its line starts and ends (past the line break).
    line_start: usize,
    line_end: usize,
    /// Its name's bytes.
    name: Range<usize>,
    /// Whether it introduces a function (else a class).
    function: bool,
}

/// The first header line in `within` (whose start is a line start), its keyword in code.
fn next_header(
    pattern: &Regex,
    lang: &Language,
    braces: Option<&Braces>,
    source: &str,
    within: Range<usize>,
) -> Option<Header> {
    let mut at = within.start;
    for line in source.get(within)?.split_inclusive('\n') {
        let line_start = at;
        at += line.len();
        let Some(c) = pattern.captures(line) else {
            continue;
        };
        let (keyword, name) = (c.get(1)?, c.get(2)?);
        if braces.is_some_and(|b| !b.is_code(line_start + keyword.start())) {
            continue;
        }
        return Some(Header {
            line_start,
            line_end: at,
            name: line_start + name.start()..line_start + name.end(),
            function: lang.function_keywords.contains(&keyword.as_str()),
        });
    }
    None
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
