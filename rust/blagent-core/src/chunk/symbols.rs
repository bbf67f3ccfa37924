//! The symbol table (classes, functions, methods with qualified names and line ranges) and the
//! skeleton built from it: decorators, class headers, full signatures (defaults and
//! annotations kept) and the first docstring line.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use tree_sitter::Node;

use crate::repo::Language;

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

/// A class, function or method of a file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Symbol {
    /// The bare name.
    pub name: String,
    /// Dotted name within the file (`Outer.Inner.method`).
    pub qualified: String,
    /// What it is.
    pub kind: SymbolKind,
    /// First line (of its decorators, if any), 1-based.
    pub start_line: usize,
    /// Last line, 1-based, inclusive.
    pub end_line: usize,
    /// Nesting depth: 0 at module level.
    pub depth: usize,
    /// Whether it is nested inside a function (and so is left out of the skeleton).
    pub in_function: bool,
    /// Decorators, one per entry, as written (`@property`).
    pub decorators: Vec<String>,
    /// The header up to and including the colon, whitespace collapsed.
    pub signature: String,
    /// The first non-blank line of its docstring.
    pub doc: Option<String>,
}

/// Collects the symbols under `root`, in file order.
pub(super) fn extract(root: Node<'_>, source: &str, language: &Language) -> Vec<Symbol> {
    let mut symbols = Vec::new();
    visit(root, source, language, &mut Vec::new(), &mut symbols);
    symbols
}

/// `(name, is_class)` of each enclosing definition, outermost first.
type Scope = Vec<(String, bool)>;

fn visit(node: Node<'_>, source: &str, lang: &Language, scope: &mut Scope, out: &mut Vec<Symbol>) {
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        let kind = child.kind();
        let is_class = lang.class_kinds.contains(&kind);
        if !is_class && !lang.function_kinds.contains(&kind) {
            visit(child, source, lang, scope, out);
            if child.is_error() {
                recover_headers(child, source, scope, out);
            }
            continue;
        }
        let Some(name) = child.child_by_field_name("name") else {
            visit(child, source, lang, scope, out);
            continue;
        };
        let name = source[name.byte_range()].to_owned();
        let outer = child
            .parent()
            .filter(|p| Some(p.kind()) == lang.decorated_kind)
            .unwrap_or(child);
        let qualified = scope
            .iter()
            .map(|(n, _)| n.as_str())
            .chain([name.as_str()])
            .collect::<Vec<_>>()
            .join(".");
        let kind = match (is_class, scope.last()) {
            (true, _) => SymbolKind::Class,
            (false, Some((_, true))) => SymbolKind::Method,
            (false, _) => SymbolKind::Function,
        };
        let body = child.child_by_field_name("body");
        let header_end = body.map_or(child.end_byte(), |b| b.start_byte());
        out.push(Symbol {
            name: name.clone(),
            qualified,
            kind,
            start_line: outer.start_position().row + 1,
            end_line: child.end_position().row + 1,
            depth: scope.len(),
            in_function: scope.iter().any(|(_, class)| !class),
            decorators: decorators(outer, source),
            signature: collapse_whitespace(&source[child.start_byte()..header_end]),
            doc: body.and_then(|b| docstring(b, source)),
        });
        scope.push((name, is_class));
        if let Some(body) = body {
            visit(body, source, lang, scope, out);
        }
        scope.pop();
    }
}

/// Definitions the parser could not recover inside an ERROR region, found by their header
/// line (`def name(` / `class Name`), so the symbol table still names them. Each spans from
/// its header to the end of the region.
fn recover_headers(error: Node<'_>, source: &str, scope: &Scope, out: &mut Vec<Symbol>) {
    static HEADER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^\s*(?:async\s+)?(def|class)\s+([^\W\d]\w*)").expect("valid pattern")
    });
    let first_line = error.start_position().row + 1;
    let end_line = error.end_position().row + 1;
    let text = &source[error.byte_range()];
    for (i, line) in text.lines().enumerate() {
        let Some(c) = HEADER.captures(line) else {
            continue;
        };
        let start_line = first_line + i;
        if out.iter().any(|s| s.start_line == start_line) {
            continue;
        }
        let name = c[2].to_owned();
        let qualified = scope
            .iter()
            .map(|(n, _)| n.as_str())
            .chain([name.as_str()])
            .collect::<Vec<_>>()
            .join(".");
        out.push(Symbol {
            kind: if &c[1] == "class" {
                SymbolKind::Class
            } else {
                SymbolKind::Function
            },
            qualified,
            name,
            start_line,
            end_line,
            depth: scope.len(),
            in_function: scope.iter().any(|(_, class)| !class),
            decorators: Vec::new(),
            signature: collapse_whitespace(line),
            doc: None,
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

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first non-blank line of the docstring that opens `body`, if any.
fn docstring(body: Node<'_>, source: &str) -> Option<String> {
    let first = body.named_child(0)?;
    if first.kind() != "expression_statement" {
        return None;
    }
    let string = first.named_child(0).filter(|s| s.kind() == "string")?;
    let raw = &source[string.byte_range()];
    let unquoted = raw
        .trim_start_matches(|c: char| c.is_ascii_alphabetic())
        .trim_matches(|c| c == '"' || c == '\'');
    unquoted
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_owned)
}

/// The skeleton: one entry per class, method and module-level function, indented by depth.
pub(super) fn skeleton(symbols: &[Symbol]) -> String {
    let mut out = String::new();
    for symbol in symbols.iter().filter(|s| !s.in_function) {
        let indent = "    ".repeat(symbol.depth);
        for decorator in &symbol.decorators {
            let _ = writeln!(out, "{indent}{decorator}");
        }
        let _ = writeln!(out, "{indent}{}", symbol.signature);
        if let Some(doc) = &symbol.doc {
            let _ = writeln!(out, "{indent}    \"\"\"{doc}\"\"\"");
        }
    }
    out
}
