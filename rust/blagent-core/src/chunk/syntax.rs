//! Language-generic questions about a parsed file, answered from the language table: a
//! definition's name, body and documentation, and the file's package and imports.

use tree_sitter::Node;

use crate::repo::{DocStyle, Language};

/// The name of a definition, with a Kotlin extension function's receiver in front
/// (`fun List<T>.second()` is `List.second`): its `name` field, else its first direct child of
/// a [`Language::name_kinds`] kind; a definition with neither gets the table's default name
/// (`constructor`, `Companion`). `None` for an anonymous construct.
pub(super) fn definition_name(
    lang: &Language,
    node: Node<'_>,
    source: &str,
) -> Option<(String, Option<String>)> {
    let named = node.child_by_field_name("name").or_else(|| {
        let mut cursor = node.walk();
        let found = node
            .named_children(&mut cursor)
            .find(|c| lang.name_kinds.contains(&c.kind()));
        found
    });
    let Some(name) = named else {
        let kind = node.kind();
        return lang
            .default_names
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, name)| ((*name).to_owned(), None));
    };
    let receiver = receiver(&source[node.start_byte()..name.start_byte()]);
    Some((capped(&source[name.byte_range()], MAX_NAME_BYTES), receiver))
}

/// The most bytes of a definition's name kept (generated code can name a class with a
/// megabyte): far beyond any written name, and a bound on what each symbol holds.
pub(super) const MAX_NAME_BYTES: usize = 512;

/// The most bytes of a qualified name kept. Every chunk and symbol of a definition carries its
/// qualified name, so uncut names nested in each other made a 2 MB file take 900 MB.
pub(super) const MAX_QUALIFIED_BYTES: usize = 1024;

/// `text`, or its first bytes (at a character boundary) and `…` when it is longer than `max`:
/// at most `max` bytes either way.
pub(super) fn capped(text: &str, max: usize) -> String {
    const MARK: &str = "…";
    if text.len() <= max {
        return text.to_owned();
    }
    format!(
        "{}{MARK}",
        crate::text::head(text, max.saturating_sub(MARK.len()))
    )
}

/// The qualified name of `local` (a name, or `Receiver.name`) inside the definition qualified
/// as `scope`, cut to [`MAX_QUALIFIED_BYTES`]. The chunks and the symbol table both build names
/// this way, level by level, so that they agree however a name is cut.
pub(super) fn qualified_name(scope: Option<&str>, local: &str) -> String {
    match scope {
        Some(scope) => capped(&format!("{scope}.{local}"), MAX_QUALIFIED_BYTES),
        None => capped(local, MAX_QUALIFIED_BYTES),
    }
}

/// The receiver type of an extension function, from its header text before the name
/// (`@Suppress("x") inline fun <T> List<T>.`): the type's simple name, without type arguments
/// or nullability. A receiver that has no simple name, a function type (`(Int) -> Unit`,
/// `suspend () -> Unit`), gives none: the function is named as a top-level one.
fn receiver(header: &str) -> Option<String> {
    let header = header.trim_end();
    let typed = header.strip_suffix('.')?;
    let mut rest = typed
        .rsplit_once("fun ")
        .map_or(typed, |(_, rest)| rest)
        .trim_start();
    if rest.starts_with('<') {
        // The type parameters, whose bounds may hold function types (`<T : (Int) -> Unit>`):
        // the `>` of an arrow closes nothing.
        let (mut depth, mut previous) = (0usize, ' ');
        let end = rest.char_indices().find_map(|(i, c)| {
            match c {
                '<' => depth += 1,
                '>' if previous != '-' => depth = depth.saturating_sub(1),
                _ => {}
            }
            previous = c;
            (depth == 0).then_some(i + 1)
        })?;
        rest = rest[end..].trim_start();
    }
    // Annotations of the receiver (`@receiver:Ann`, `@Ann("x")`) are not its type.
    while let Some(annotation) = rest.strip_prefix('@') {
        let name_end = annotation
            .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | ':' | '.')))
            .unwrap_or(annotation.len());
        rest = skip_parenthesized(&annotation[name_end..]).trim_start();
    }
    if rest.starts_with('(') || rest.starts_with("suspend ") || rest.starts_with("suspend(") {
        return None;
    }
    let simple = rest
        .split(['<', '?', ' '])
        .next()
        .unwrap_or("")
        .rsplit('.')
        .next()
        .unwrap_or("");
    let is_name = !simple.is_empty() && simple.chars().all(|c| c.is_alphanumeric() || c == '_');
    is_name.then(|| simple.to_owned())
}

/// `text` after its leading parenthesized group (`("x", y)` of an annotation), if it starts
/// with one; `text` itself otherwise.
fn skip_parenthesized(text: &str) -> &str {
    if !text.starts_with('(') {
        return text;
    }
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return &text[i + 1..];
                }
            }
            _ => {}
        }
    }
    ""
}

/// A definition's body: its `body` field, else its first child of a block kind (Kotlin's
/// `function_body`, `class_body`, a secondary constructor's `statements`).
pub(super) fn definition_body<'t>(lang: &Language, node: Node<'t>) -> Option<Node<'t>> {
    node.child_by_field_name("body").or_else(|| {
        let mut cursor = node.walk();
        let found = node
            .named_children(&mut cursor)
            .find(|c| lang.block_kinds.contains(&c.kind()));
        found
    })
}

/// Where the body of `def` starts, if it has one: its `body`, or the `{` before it where the
/// braces are the definition's own rather than the body's (a Kotlin secondary constructor's
/// `{ statements }`, and its `{}` that holds no body node). The header ends there.
pub(super) fn body_start<'t>(def: Node<'t>, body: Option<Node<'t>>) -> Option<Node<'t>> {
    let is_brace = |n: &Node<'_>| !n.is_named() && n.kind() == "{";
    if let Some(body) = body {
        return Some(body.prev_sibling().filter(is_brace).unwrap_or(body));
    }
    let mut cursor = def.walk();
    let brace = def.children(&mut cursor).find(is_brace);
    brace
}

/// `node`'s named children, each of a grouping kind ([`Language::grouping_kinds`]) replaced by
/// its own named children, except a block's inside a node that is not one (the `statements` of
/// a Kotlin `try` stay its block).
pub(super) fn children<'t>(lang: &Language, node: Node<'t>) -> Vec<Node<'t>> {
    let is_block = |n: &Node<'_>| lang.block_kinds.contains(&n.kind());
    let mut out = Vec::new();
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        let grouping = lang.grouping_kinds.contains(&child.kind());
        if grouping && (!is_block(&child) || is_block(&node)) {
            let mut inner = child.walk();
            out.extend(child.named_children(&mut inner));
        } else {
            out.push(child);
        }
    }
    out
}

/// The first non-blank line of a definition's documentation: the docstring opening `body`, or
/// the `/** … */` comment ending on the line before `outer` (or on its first line).
pub(super) fn documentation(
    lang: &Language,
    outer: Node<'_>,
    body: Option<Node<'_>>,
    source: &str,
) -> Option<String> {
    match lang.doc_style {
        DocStyle::Docstring => docstring(body?, source),
        DocStyle::LeadingComment => source[leading_doc_comment(lang, outer, source)?.byte_range()]
            .trim_start_matches("/**")
            .trim_end_matches("*/")
            .lines()
            .map(|l| l.trim().trim_start_matches('*').trim())
            .find(|l| !l.is_empty())
            .map(str::to_owned),
    }
}

/// The Javadoc or KDoc comment (`/** … */`) that ends on the line before `outer` or on its
/// first line, for a language whose documentation leads its definition.
pub(super) fn leading_doc_comment<'t>(
    lang: &Language,
    outer: Node<'t>,
    source: &str,
) -> Option<Node<'t>> {
    if lang.doc_style != DocStyle::LeadingComment {
        return None;
    }
    let comment = outer.prev_named_sibling()?;
    let adjacent = comment.end_position().row + 1 >= outer.start_position().row;
    (lang.comment_kinds.contains(&comment.kind())
        && adjacent
        && source[comment.byte_range()].starts_with("/**"))
    .then_some(comment)
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

/// The package a file declares (`com.example.shop`), for languages that declare one.
pub(super) fn package(lang: &Language, root: Node<'_>, source: &str) -> Option<String> {
    let kind = lang.package_kind?;
    let mut cursor = root.walk();
    let declaration = root
        .named_children(&mut cursor)
        .find(|c| c.kind() == kind)?;
    let mut inner = declaration.walk();
    let name = declaration
        .named_children(&mut inner)
        .filter(|c| {
            matches!(
                c.kind(),
                "identifier" | "scoped_identifier" | "qualified_identifier"
            )
        })
        .last()?;
    let dotted: String = source[name.byte_range()].split_whitespace().collect();
    // Cut as qualified names are: every top-level name of the file is qualified by it.
    (!dotted.is_empty()).then(|| capped(&dotted, MAX_QUALIFIED_BYTES))
}

/// The file's import declarations as written (whitespace collapsed), for languages that
/// declare a package: the root's children, or those of a group of them (Kotlin's `import_list`).
pub(super) fn imports(lang: &Language, root: Node<'_>, source: &str) -> Vec<String> {
    if lang.package_kind.is_none() {
        return Vec::new();
    }
    children(lang, root)
        .into_iter()
        .filter(|c| lang.import_kinds.contains(&c.kind()))
        .map(|c| collapse_whitespace(&source[c.byte_range()]))
        .collect()
}

/// Runs of whitespace as one space.
pub(super) fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_receivers_are_simple_type_names() {
        assert_eq!(receiver("fun String."), Some("String".to_owned()));
        assert_eq!(receiver("inline fun <T> List<T>."), Some("List".to_owned()));
        assert_eq!(
            receiver("fun <K, V> Map<K, List<V>>?."),
            Some("Map".to_owned())
        );
        assert_eq!(
            receiver("fun kotlin.collections.List<Int>."),
            Some("List".to_owned())
        );
        // Function types have no simple name; type bounds may hold arrows; annotations on
        // the receiver are not its type.
        assert_eq!(receiver("fun ((Int) -> Unit)."), None);
        assert_eq!(receiver("fun (suspend () -> Unit)."), None);
        assert_eq!(receiver("fun suspend () -> Unit."), None);
        assert_eq!(receiver("fun <T : (Int) -> Unit> T."), Some("T".to_owned()));
        assert_eq!(
            receiver("fun @receiver:Ann String."),
            Some("String".to_owned())
        );
        assert_eq!(
            receiver("fun @Ann(\"a (b)\") List<Int>?."),
            Some("List".to_owned())
        );
        assert_eq!(receiver("fun "), None);
        assert_eq!(receiver("public void "), None);
    }
}
