//! The language table: one row per supported language.
//!
//! Adding a language (Java, Kotlin, …) is adding a row: its extensions, its tree-sitter grammar,
//! and the node kinds the chunker and symbol extractor treat as definitions.

/// A supported source language.
#[derive(Debug)]
pub struct Language {
    /// Short lowercase name, as used in CLI flags and JSON output.
    pub name: &'static str,
    /// File extensions (without the dot) that select this language.
    pub extensions: &'static [&'static str],
    /// The tree-sitter grammar.
    pub grammar: fn() -> tree_sitter::Language,
    /// Node kinds that define a class-like scope.
    pub class_kinds: &'static [&'static str],
    /// Node kinds that define a function or method.
    pub function_kinds: &'static [&'static str],
    /// Node kind that wraps a definition with its decorators, if the grammar has one.
    pub decorated_kind: Option<&'static str>,
    /// Node kinds that are comments.
    pub comment_kinds: &'static [&'static str],
}

fn python_grammar() -> tree_sitter::Language {
    tree_sitter_python::LANGUAGE.into()
}

/// Python.
pub static PYTHON: Language = Language {
    name: "python",
    extensions: &["py"],
    grammar: python_grammar,
    class_kinds: &["class_definition"],
    function_kinds: &["function_definition"],
    decorated_kind: Some("decorated_definition"),
    comment_kinds: &["comment"],
};

/// Every language blagent can index.
pub static LANGUAGES: &[&Language] = &[&PYTHON];

/// The language a path belongs to, by extension.
pub fn language_for_path(path: &str) -> Option<&'static Language> {
    let ext = path.rsplit_once('.')?.1;
    LANGUAGES
        .iter()
        .copied()
        .find(|lang| lang.extensions.contains(&ext))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_by_extension() {
        assert_eq!(language_for_path("a/b.py").map(|l| l.name), Some("python"));
        assert!(language_for_path("a/b.pyc").is_none());
        assert!(language_for_path("Makefile").is_none());
    }

    #[test]
    fn grammar_loads() {
        let mut parser = tree_sitter::Parser::new();
        parser
            .set_language(&(PYTHON.grammar)())
            .expect("grammar version matches");
    }
}
