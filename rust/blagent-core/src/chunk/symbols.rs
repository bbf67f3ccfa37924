//! The symbol table (classes, functions, methods with qualified names and line ranges) and the
//! skeleton built from it: decorators, class headers, full signatures (defaults and
//! annotations kept) and the first docstring line.

use std::fmt::Write as _;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use tree_sitter::Node;

use super::syntax::{collapse_whitespace, definition_body, definition_name, documentation};
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

/// Collects the symbols under `root`, in file order.
pub(super) fn extract(root: Node<'_>, source: &str, language: &Language) -> Vec<Symbol> {
    let mut symbols = Vec::new();
    visit(root, source, language, &mut Vec::new(), &mut symbols);
    symbols
}

/// `(name, is_class)` of each enclosing definition, outermost first.
type Scope = Vec<(String, bool)>;

fn qualify(scope: &Scope, name: &str) -> String {
    scope
        .iter()
        .map(|(n, _)| n.as_str())
        .chain([name])
        .collect::<Vec<_>>()
        .join(".")
}

fn visit(node: Node<'_>, source: &str, lang: &Language, scope: &mut Scope, out: &mut Vec<Symbol>) {
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        let kind = child.kind();
        let is_class = lang.class_kinds.contains(&kind);
        if !is_class && !lang.function_kinds.contains(&kind) {
            visit(child, source, lang, scope, out);
            if child.is_error() {
                recover_headers(child, source, lang, scope, out);
            }
            continue;
        }
        let Some((name, receiver)) = definition_name(lang, child, source) else {
            visit(child, source, lang, scope, out);
            continue;
        };
        let outer = child
            .parent()
            .filter(|p| Some(p.kind()) == lang.decorated_kind)
            .unwrap_or(child);
        let local = match &receiver {
            Some(receiver) => format!("{receiver}.{name}"),
            None => name.clone(),
        };
        let kind = match (is_class, scope.last()) {
            (true, _) => SymbolKind::Class,
            (false, Some((_, true))) => SymbolKind::Method,
            (false, _) => SymbolKind::Function,
        };
        let body = definition_body(lang, child);
        let header_end = body.map_or(child.end_byte(), |b| b.start_byte());
        out.push(Symbol {
            name,
            qualified: qualify(scope, &local),
            kind,
            start_line: outer.start_position().row + 1,
            end_line: child.end_position().row + 1,
            body_line: body.map(|b| b.start_position().row + 1),
            depth: scope.len(),
            in_function: scope.iter().any(|(_, class)| !class),
            decorators: decorators(outer, source),
            signature: collapse_whitespace(&source[child.start_byte()..header_end]),
            doc: documentation(lang, outer, body, source),
        });
        scope.push((local, is_class));
        if let Some(body) = body {
            visit(body, source, lang, scope, out);
        }
        scope.pop();
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
    let Some((_, header)) = HEADERS.iter().find(|(name, _)| *name == lang.name) else {
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
        if out.iter().any(|s| s.start_line == start_line) {
            continue;
        }
        let name = c[2].to_owned();
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
