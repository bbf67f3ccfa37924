//! The language table: one row per supported language.
//!
//! Adding a language is adding a row: its extensions, its tree-sitter grammar, the node kinds the
//! chunker and symbol extractor treat as definitions and bodies, how it documents a definition,
//! whether it declares packages, and its test-file rule.

use std::sync::LazyLock;

use regex::Regex;

/// How a language documents a definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocStyle {
    /// A string literal opening the body (Python's docstring).
    Docstring,
    /// A `/** … */` comment right before the definition (Javadoc, KDoc).
    LeadingComment,
}

/// A supported source language.
#[derive(Debug)]
pub struct Language {
    /// Short lowercase name, as used in CLI flags and JSON output.
    pub name: &'static str,
    /// File extensions (without the dot) that select this language.
    pub extensions: &'static [&'static str],
    /// The tree-sitter grammar.
    pub grammar: fn() -> tree_sitter::Language,
    /// The text the grammar is given in place of a file's, where it would misread a construct
    /// the language allows: the same length, so that the tree's byte ranges and lines are the
    /// file's; `None` where the file's own text is given.
    pub grammar_text: Option<fn(&str) -> Option<String>>,
    /// Node kinds that define a class-like scope.
    pub class_kinds: &'static [&'static str],
    /// Node kinds that define a class only when they have a body: an enum constant with its
    /// own members (`ADD { int apply() {…} }`), an anonymous subclass of its enum, whose
    /// methods are then `Op.ADD.apply` rather than one more `Op.apply`.
    pub bodied_class_kinds: &'static [&'static str],
    /// Node kinds that define a function or method.
    pub function_kinds: &'static [&'static str],
    /// Kinds of the direct child that names a definition without a `name` field
    /// (tree-sitter-kotlin-sg's: a class's or object's `type_identifier`, a function's
    /// `simple_identifier`): its first such child is its name.
    pub name_kinds: &'static [&'static str],
    /// Definition kinds named neither by a `name` field nor by a child of a
    /// [`Language::name_kinds`] kind, with the name they get.
    pub default_names: &'static [(&'static str, &'static str)],
    /// Node kinds that hold a body of statements or members; a construct too large for one
    /// chunk is split at their children. A definition's body is its `body` field, else its
    /// first child of one of these kinds.
    pub block_kinds: &'static [&'static str],
    /// Node kinds that only group children of their parent, read in their place by the
    /// chunker: tree-sitter-kotlin-sg's `statements` between the braces of a function body, a
    /// lambda or an `if`'s branch, a call's `call_suffix` (its arguments and trailing lambda),
    /// the file's `import_list`. One that is also a block kind stays whole as the child of a
    /// node that is not a block (the `statements` of a `try`, a `catch`, an `init`): the
    /// compound statement's block.
    pub grouping_kinds: &'static [&'static str],
    /// Node kinds of a class body's initializer blocks (Java's `static { }` and `{ }`, Kotlin's
    /// `init { }`): what is defined in one is local to it, as in a function's body. Java's
    /// `block` is every block; one inside a function changes nothing.
    pub initializer_kinds: &'static [&'static str],
    /// The node kinds a file's top level may hold, where the language allows only declarations
    /// there (empty: anything). Another kind there is the grammar's misreading of
    /// declarations, which is read again inside a class body (`class _ {` … `}`), where only
    /// declarations parse: tree-sitter-kotlin-sg reads a top-level class with two modifiers,
    /// `private sealed class C { … }`, as an infix call whose last argument is a lambda.
    pub top_level_kinds: &'static [&'static str],
    /// Whether blocks close with a delimiter (`}`): text between chunks (a closing brace,
    /// `} else {`) then joins the chunk before it.
    pub braces: bool,
    /// Whether the grammar is given its text with a final newline
    /// ([`crate::repo::SourceFile::new`] adds it). Kotlin's: tree-sitter-kotlin-ng, the grammar
    /// blagent used before tree-sitter-kotlin-sg, read an annotation (`@`) up to the next
    /// whitespace, or an accessor's annotation with arguments (`@get:A(`) up to the next
    /// newline, without looking for the end of the text, so a file ending in either made the
    /// parse loop forever, where no stop is heard. tree-sitter-kotlin-sg's scanner stops at
    /// the end of the text on those endings (tested); the newline is kept as a guard, since
    /// such a loop in a grammar's C code cannot be interrupted.
    pub final_newline: bool,
    /// How many nested indentation levels a text may open before it is not given to the
    /// grammar, for a grammar whose scanner keeps them: tree-sitter-python's saves its stack of
    /// levels, two bytes each, in tree-sitter's 1,024-byte buffer and writes one byte past it
    /// from about 383 levels on (511 with no string open), where tree-sitter's check aborts
    /// the process (`crate::chunk` bounds the levels by the different indentation widths,
    /// counted as that scanner counts them).
    pub max_indent_levels: Option<usize>,
    /// How many string templates (`${`) a text may hold before it is not given to the grammar,
    /// for a grammar whose scanner keeps a stack of the strings open: tree-sitter-kotlin-sg's
    /// pushes two bytes per string, and a string opens inside another only within a template,
    /// so a text with `n` of them never has more than `n + 1` open. At 512 open its scanner
    /// calls `abort()` (a 1.5 KB line of nested `"${` ended the process, found by a review).
    pub max_string_templates: Option<usize>,
    /// Node kind that wraps a definition with its decorators, if the grammar has one.
    pub decorated_kind: Option<&'static str>,
    /// Node kinds that are comments.
    pub comment_kinds: &'static [&'static str],
    /// How definitions are documented.
    pub doc_style: DocStyle,
    /// Node kind of the package declaration, for languages whose files declare one.
    pub package_kind: Option<&'static str>,
    /// Node kinds of import declarations.
    pub import_kinds: &'static [&'static str],
    /// A definition's header line, for recovery inside regions the parser could not parse:
    /// group 1 is the keyword, group 2 the name.
    pub header_pattern: &'static str,
    /// Keywords of `header_pattern` that introduce a function (the others introduce a class).
    pub function_keywords: &'static [&'static str],
    /// Whether a file name (not a path) is a test file in this language's ecosystem, beyond
    /// the shared rule of [`is_test_entry`].
    pub test_file: fn(&str) -> bool,
}

impl Language {
    /// Whether `text` lacks the final newline this language's grammar needs
    /// ([`Language::final_newline`]).
    #[must_use]
    pub fn lacks_final_newline(&self, text: &str) -> bool {
        self.final_newline && !text.ends_with('\n')
    }
}

/// Python's bound on nested indentation levels ([`Language::max_indent_levels`], counted as
/// the different widths of a file's indentation): well under the 383 where its scanner
/// overruns, and far beyond code people write (of 476,261 Python files, Python's standard
/// library and the 300 SWE-bench Lite trees, the most is 51 widths, the deepest nesting 13).
const PYTHON_INDENT_LEVELS: usize = 256;

/// Kotlin's bound on string templates in a file ([`Language::max_string_templates`]): well under
/// the 511 where its scanner aborts, and far beyond code people write (of the 9,902 distinct
/// Kotlin files of the Long Code Arena development trees, the most is 57).
const KOTLIN_STRING_TEMPLATES: usize = 400;

/// A Java or Kotlin annotation in a header pattern: a name, qualified (`@kotlin.Deprecated`) or
/// with a use-site target (`@get:JvmName`), and arguments that may hold strings with
/// parentheses (`@Deprecated("use f()")`) and one level of nested parentheses.
macro_rules! jvm_annotation {
    () => {
        r#"@(?:\w+:)?[\w.]+(?:\((?:"(?:[^"\\\n]|\\.)*"|[^()"\n]|\((?:"(?:[^"\\\n]|\\.)*"|[^()"\n])*\))*\))?"#
    };
}

/// Kotlin type arguments or parameters, nested up to three deep (`<T : List<Map<K, V>>>`).
macro_rules! type_arguments {
    () => {
        r"<(?:[^<>\n]|<(?:[^<>\n]|<[^<>\n]*>)*>)*>"
    };
}

fn python_grammar() -> tree_sitter::Language {
    tree_sitter_python::LANGUAGE.into()
}

fn java_grammar() -> tree_sitter::Language {
    tree_sitter_java::LANGUAGE.into()
}

/// tree-sitter-kotlin-sg, ast-grep's maintained fork of the fwcd grammar: over 1,250 files of
/// moshi, kotlinpoet and kotlinx.coroutines it leaves 18 lines under syntax errors where
/// tree-sitter-kotlin-ng left 4,830 (multi-line delegation lists, one-line class bodies), whose
/// error recovery then took whole classes away from their methods.
fn kotlin_grammar() -> tree_sitter::Language {
    tree_sitter_kotlin_sg::LANGUAGE.into()
}

/// Kotlin's text with the annotations of annotated function types blanked
/// (`content: @Composable () -> Unit` read as `content:             () -> Unit`):
/// tree-sitter-kotlin-sg reads `@Composable ()` as an annotation with (empty) arguments, so the
/// `->` after it is a syntax error whose recovery can take the rest of the file along, where
/// Kotlin's compiler reads an annotated function type (Compose's slot parameters are written
/// so). Of the 9,902 distinct Kotlin files of the Long Code Arena development trees, 100 had
/// syntax errors, 45 of them from this. Only an annotation after `:`, `(`, `,`, `<`, `=`, `as`
/// or `is`, followed by whitespace and a parenthesized group that a function type's `->`
/// follows (or `?` after a parenthesized function type, `@Composable (() -> Unit)?`), is
/// blanked; the signature keeps it, since symbols read the file's own text.
///
/// The modifiers before a constructor that opens a line are blanked as well where the grammar
/// would misread them: Kotlin Multiplatform's `actual` or `expect` among them (`actual abstract
/// class Message<M>` then `protected actual constructor(`), modifiers spanning lines
/// (`internal` then `actual constructor(`), or a comment among them. After a newline
/// tree-sitter-kotlin-sg takes one visibility modifier or annotation as the class header's, but
/// none of these, so the class lost its body and its members became top-level functions
/// (wire's `Message.kt`, three files of the development trees). Without those modifiers and
/// comments (annotations are kept) the constructor reads as the class's, as Kotlin's compiler
/// reads it; the lines stay where they are, and the signature keeps the modifiers.
///
/// NUL characters are spaces in that text too: the grammar's scanner left a string a NUL
/// stopped open on its stack of strings, which aborts the process when full.
///
/// A declaration that follows a `}` on its line (`class C { fun f() {} fun g() {} }`) is
/// parted from it by a `;` in place of the last blank between them: the grammar wants a line
/// break or `;` there, where Kotlin's compiler takes none, and without it read `C` as a class
/// `g` and lost `C` and `f`. Only a hard keyword (`fun`, `val`, `var`, `class`, `object`,
/// `interface`), after modifiers or not, is taken for a declaration; in a string or comment the
/// `;` changes nothing the symbols read.
fn kotlin_grammar_text(text: &str) -> Option<String> {
    // Modifiers, each followed by white space or comments, then `constructor(`.
    static CONSTRUCTOR: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(concat!(
            r"(?m)^[ \t]*((?:(?:public|protected|private|internal|actual|expect|",
            jvm_annotation!(),
            r")(?:\s|/\*(?:[^*]|\*+[^*/])*\*+/|//[^\n]*\n)+)+)constructor[ \t]*\(",
        ))
        .expect("valid pattern")
    });
    // The modifiers' parts, an annotation (kept, strings and all) first.
    static PARTS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(concat!(
            "(",
            jvm_annotation!(),
            r")|\b(?:public|protected|private|internal|actual|expect)\b|/\*(?:[^*]|\*+[^*/])*\*+/|//[^\n]*",
        ))
        .expect("valid pattern")
    });
    static ANNOTATED: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?:[:(,<=]|\b(?:as\??|is))\s*(@[A-Za-z_][A-Za-z0-9_.]*)\s+\(")
            .expect("valid pattern")
    });
    // A `}`, blanks, then a declaration's modifiers and hard keyword on the same line.
    static AFTER_BRACE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(concat!(
            r"\}[ \t]+(?:(?:private|public|protected|internal|override|open|abstract|final|",
            r"data|enum|sealed|inner|companion|inline|suspend|operator|infix|const|lateinit|",
            r"tailrec|external|annotation|value|actual|expect)[ \t]+)*",
            r"(?:fun|val|var|class|object|interface)\b",
        ))
        .expect("valid pattern")
    });
    let bytes = text.as_bytes();
    let mut masked: Option<Vec<u8>> = None;
    for found in AFTER_BRACE.find_iter(text) {
        // The last blank before the modifiers: the brace is one byte, blanks follow it.
        let blanks = bytes[found.start() + 1..found.end()]
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
        masked.get_or_insert_with(|| bytes.to_vec())[found.start() + blanks] = b';';
    }
    // A NUL ends the scanner's reading of a string with the string left on its stack, so each
    // one in a string leaked an entry until the stack's end aborted the process (a review:
    // 600 lines of `val x = "<NUL>`). The grammar reads a space there.
    if text.contains('\0') {
        let masked = masked.get_or_insert_with(|| bytes.to_vec());
        masked
            .iter_mut()
            .filter(|b| **b == 0)
            .for_each(|b| *b = b' ');
    }
    let mut from = 0;
    while let Some(found) = ANNOTATED.captures_at(text, from) {
        let (Some(whole), Some(name)) = (found.get(0), found.get(1)) else {
            break;
        };
        let open = whole.end() - 1;
        if opens_function_type(bytes, open) {
            masked.get_or_insert_with(|| bytes.to_vec())[name.range()].fill(b' ');
        }
        // The group's `(` may open the next one: `@A (@B () -> Unit) -> Unit`.
        from = open;
    }
    for found in CONSTRUCTOR.captures_iter(text) {
        let Some(modifiers) = found.get(1) else {
            continue;
        };
        let written = modifiers.as_str();
        // The keywords and comments among them; annotations are read as they are.
        let parts: Vec<std::ops::Range<usize>> = PARTS
            .captures_iter(written)
            .filter(|part| part.get(1).is_none())
            .filter_map(|part| part.get(0).map(|part| part.range()))
            .collect();
        // What the grammar misreads there: a platform modifier, a comment, a line break after
        // a keyword (one after an annotation it reads).
        let misread = parts.iter().any(|part| {
            matches!(&written[part.clone()], "actual" | "expect")
                || written[part.clone()].starts_with('/')
                || written[part.end..]
                    .trim_start_matches([' ', '\t', '\r'])
                    .starts_with('\n')
        });
        // A line comment holding a block comment's end or a quote may itself lie in a comment
        // or a string this pattern does not see: blanked, that end would go with it (a
        // review: `internal // old */` inside `/* … */` lost the rest of the file).
        let holds_an_end = parts.iter().any(|part| {
            let part = &written[part.clone()];
            part.starts_with("//") && (part.contains("*/") || part.contains('"'))
        });
        if !misread || holds_an_end {
            continue;
        }
        for part in parts {
            let at = modifiers.start() + part.start..modifiers.start() + part.end;
            for byte in &mut masked.get_or_insert_with(|| bytes.to_vec())[at] {
                if *byte != b'\n' {
                    *byte = b' ';
                }
            }
        }
    }
    // Whole characters were replaced, each byte by a space.
    masked.and_then(|bytes| String::from_utf8(bytes).ok())
}

/// Whether the parenthesized group opening at `open` is a function type's parameters (`->`
/// follows it) or a parenthesized function type made nullable (`(() -> Unit)?`). The group is
/// looked for within 1 KB, which bounds the work a file of such annotations can ask.
fn opens_function_type(bytes: &[u8], open: usize) -> bool {
    const LOOK: usize = 1024;
    let mut depth = 0usize;
    let end = bytes.len().min(open.saturating_add(LOOK));
    for at in open..end {
        match bytes[at] {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    let inner = bytes[open + 1..at].trim_ascii_start();
                    let after = bytes[at + 1..].trim_ascii_start();
                    return after.starts_with(b"->")
                        || (after.starts_with(b"?") && inner.starts_with(b"("));
                }
            }
            _ => {}
        }
    }
    false
}

/// Agentless's rule already covers Python's `test_*.py`: nothing more.
fn no_more_tests(_name: &str) -> bool {
    false
}

/// JUnit, TestNG, Kotest and Spek naming: `FooTest.java`, `FooTests.kt`, `FooTestCase.java`,
/// `FooIT.java` (Failsafe's integration tests), `FooSpec.kt`.
fn jvm_test_file(name: &str) -> bool {
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    ["Test", "Tests", "TestCase", "IT", "ITCase", "Spec"]
        .iter()
        .any(|suffix| stem.len() > suffix.len() && stem.ends_with(suffix))
}

/// Python.
pub static PYTHON: Language = Language {
    name: "python",
    extensions: &["py"],
    grammar: python_grammar,
    grammar_text: None,
    class_kinds: &["class_definition"],
    bodied_class_kinds: &[],
    function_kinds: &["function_definition"],
    name_kinds: &[],
    default_names: &[],
    block_kinds: &["block"],
    grouping_kinds: &[],
    initializer_kinds: &[],
    top_level_kinds: &[],
    braces: false,
    final_newline: false,
    max_indent_levels: Some(PYTHON_INDENT_LEVELS),
    max_string_templates: None,
    decorated_kind: Some("decorated_definition"),
    comment_kinds: &["comment"],
    doc_style: DocStyle::Docstring,
    package_kind: None,
    import_kinds: &["import_statement", "import_from_statement"],
    header_pattern: r"^\s*(?:async\s+)?(def|class)\s+([^\W\d]\w*)",
    function_keywords: &["def"],
    test_file: no_more_tests,
};

/// Java.
pub static JAVA: Language = Language {
    name: "java",
    extensions: &["java"],
    grammar: java_grammar,
    grammar_text: None,
    class_kinds: &[
        "class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
        "annotation_type_declaration",
    ],
    bodied_class_kinds: &["enum_constant"],
    function_kinds: &[
        "method_declaration",
        "constructor_declaration",
        "compact_constructor_declaration",
        // An annotation type's element (`String name() default "";`), a method to reflection.
        "annotation_type_element_declaration",
    ],
    name_kinds: &[],
    default_names: &[],
    block_kinds: &[
        "block",
        "constructor_body",
        "switch_block",
        "switch_block_statement_group",
        "enum_body_declarations",
    ],
    grouping_kinds: &[],
    initializer_kinds: &["static_initializer", "block"],
    top_level_kinds: &[],
    braces: true,
    final_newline: false,
    max_indent_levels: None,
    max_string_templates: None,
    decorated_kind: None,
    comment_kinds: &["line_comment", "block_comment"],
    doc_style: DocStyle::LeadingComment,
    package_kind: Some("package_declaration"),
    import_kinds: &["import_declaration"],
    header_pattern: concat!(
        r"^\s*(?:",
        jvm_annotation!(),
        r"\s+)*(?:(?:public|protected|private|static|final|abstract|sealed|non-sealed|strictfp)\s+)*(class|interface|enum|record|@interface)\s+([A-Za-z_$][\w$]*)",
    ),
    function_keywords: &[],
    test_file: jvm_test_file,
};

/// Kotlin.
pub static KOTLIN: Language = Language {
    name: "kotlin",
    // Not `.kts`: Kotlin scripts are mostly Gradle build files, not where bugs are fixed.
    extensions: &["kt"],
    grammar: kotlin_grammar,
    grammar_text: Some(kotlin_grammar_text),
    class_kinds: &[
        "class_declaration",
        "object_declaration",
        "companion_object",
    ],
    bodied_class_kinds: &["enum_entry"],
    function_kinds: &["function_declaration", "secondary_constructor"],
    name_kinds: &["type_identifier", "simple_identifier"],
    default_names: &[
        ("companion_object", "Companion"),
        ("secondary_constructor", "constructor"),
    ],
    block_kinds: &[
        "statements",
        "function_body",
        "control_structure_body",
        "class_body",
        "enum_class_body",
        "annotated_lambda",
        "lambda_literal",
    ],
    grouping_kinds: &["statements", "call_suffix", "import_list"],
    initializer_kinds: &["anonymous_initializer"],
    top_level_kinds: &[
        "package_header",
        "import_list",
        "import_header",
        "file_annotation",
        "shebang_line",
        "class_declaration",
        "object_declaration",
        "function_declaration",
        "property_declaration",
        "type_alias",
        "getter",
        "setter",
        "line_comment",
        "multiline_comment",
    ],
    braces: true,
    final_newline: true,
    max_indent_levels: None,
    max_string_templates: Some(KOTLIN_STRING_TEMPLATES),
    decorated_kind: None,
    comment_kinds: &["line_comment", "multiline_comment"],
    doc_style: DocStyle::LeadingComment,
    package_kind: Some("package_header"),
    import_kinds: &["import_header"],
    header_pattern: concat!(
        r"^\s*(?:",
        jvm_annotation!(),
        r"\s+)*(?:(?:public|private|protected|internal|open|abstract|sealed|data|inline|value|enum|annotation|inner|override|suspend|operator|infix|tailrec|external|actual|expect|fun)\s+)*(class|interface|object|fun)\s+",
        // Type parameters, then a receiver type (`Map<String, Int>.`, `String?.`), each with
        // type arguments nested up to three deep.
        r"(?:",
        type_arguments!(),
        r"\s*)?(?:[\w.]+(?:",
        type_arguments!(),
        r")?\??\.)?([A-Za-z_]\w*|`[^`\n]+`)",
    ),
    function_keywords: &["fun"],
    test_file: jvm_test_file,
};

/// Every language blagent can index.
pub static LANGUAGES: &[&Language] = &[&PYTHON, &JAVA, &KOTLIN];

/// The language a path belongs to, by extension.
pub fn language_for_path(path: &str) -> Option<&'static Language> {
    let ext = path.rsplit_once('.')?.1;
    LANGUAGES
        .iter()
        .copied()
        .find(|lang| lang.extensions.contains(&ext))
}

/// The language named `name` (`python`, `java`, `kotlin`), case-insensitively.
pub fn language_named(name: &str) -> Option<&'static Language> {
    LANGUAGES
        .iter()
        .copied()
        .find(|lang| lang.name.eq_ignore_ascii_case(name.trim()))
}

/// Whether a walk entry is a test directory or file. The shared rule is Agentless's (a name
/// starting with `test`: `tests/`, `src/test/`, `test_x.py`); Gradle's other test source sets
/// are directories under `src` named `…Test` or `…Tests` (`androidTest`, `jvmTest`,
/// `integrationTest`); a file's own language may name more (`FooTest.java`, `FooSpec.kt`).
pub fn is_test_entry(name: &str, is_dir: bool, parent: Option<&str>) -> bool {
    if name.starts_with("test") {
        return true;
    }
    if is_dir {
        let source_set =
            parent == Some("src") && (name.ends_with("Test") || name.ends_with("Tests"));
        return source_set || name == "androidTest";
    }
    language_for_path(name).is_some_and(|lang| (lang.test_file)(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_by_extension_and_name() {
        assert_eq!(language_for_path("a/b.py").map(|l| l.name), Some("python"));
        assert_eq!(language_for_path("A.java").map(|l| l.name), Some("java"));
        assert_eq!(language_for_path("b.kt").map(|l| l.name), Some("kotlin"));
        assert!(language_for_path("build.gradle.kts").is_none());
        assert!(language_for_path("a/b.pyc").is_none());
        assert!(language_for_path("Makefile").is_none());
        assert_eq!(language_named(" Kotlin").map(|l| l.name), Some("kotlin"));
        assert!(language_named("scala").is_none());
    }

    #[test]
    fn grammars_load() {
        for lang in LANGUAGES {
            let mut parser = tree_sitter::Parser::new();
            parser
                .set_language(&(lang.grammar)())
                .unwrap_or_else(|_| panic!("{} grammar version matches", lang.name));
            regex::Regex::new(lang.header_pattern).expect("valid header pattern");
        }
    }

    /// The keyword and name a header line gives, by language (file name `a.<ext>`).
    fn header(ext: &str, line: &str) -> Option<(String, String)> {
        let lang = language_for_path(&format!("a.{ext}")).expect("a language");
        let pattern = regex::Regex::new(lang.header_pattern).expect("valid header pattern");
        let found = pattern.captures(line)?;
        Some((found[1].to_owned(), found[2].to_owned()))
    }

    /// Headers the patterns missed or misnamed before 2026-12-07 (parentheses in an
    /// annotation's string, a use-site target or a qualified annotation, nested type
    /// arguments, a receiver with a space in its type arguments, a name in backticks).
    #[test]
    fn jvm_header_patterns_read_annotations_generics_and_receivers() {
        let kotlin = |line: &str| header("kt", line);
        let named = |keyword: &str, name: &str| Some((keyword.to_owned(), name.to_owned()));
        assert_eq!(
            kotlin("@Deprecated(\"use y()\") class X"),
            named("class", "X")
        );
        assert_eq!(kotlin("fun <T : List<Map<K, V>>> f()"), named("fun", "f"));
        assert_eq!(kotlin("@get:JvmName(\"a\") fun g()"), named("fun", "g"));
        assert_eq!(
            kotlin("@kotlin.Deprecated(\"m\") fun h()"),
            named("fun", "h")
        );
        assert_eq!(kotlin("fun Map<String, Int>.m()"), named("fun", "m"));
        assert_eq!(kotlin("fun String?.orEmpty2()"), named("fun", "orEmpty2"));
        assert_eq!(kotlin("fun <T> List<T>.ext()"), named("fun", "ext"));
        assert_eq!(kotlin("fun `a test name`()"), named("fun", "`a test name`"));
        assert_eq!(
            kotlin("@A(B(1), \"(\") @C internal fun k()"),
            named("fun", "k")
        );
        assert_eq!(
            kotlin("suspend inline fun <reified T> r()"),
            named("fun", "r")
        );
        assert_eq!(kotlin("class Q<T>"), named("class", "Q"));
        assert_eq!(kotlin("val fun1 = 1"), None);
        assert_eq!(kotlin("@file:JvmName(\"F\")"), None);
        let java = |line: &str| header("java", line);
        assert_eq!(
            java("@SuppressWarnings(\"x()\") public class J {"),
            named("class", "J")
        );
        assert_eq!(
            java("@javax.annotation.Generated(value = {\"g\"}) final class G"),
            named("class", "G")
        );
        assert_eq!(
            java("public @interface Marker {"),
            named("@interface", "Marker")
        );
        assert_eq!(java("@interface Marker {"), named("@interface", "Marker"));
    }

    #[test]
    fn test_entries_per_ecosystem() {
        assert!(is_test_entry("tests", true, Some("pkg")));
        assert!(is_test_entry("test_x.py", false, None));
        assert!(is_test_entry("test", true, Some("src")));
        assert!(is_test_entry("androidTest", true, Some("src")));
        assert!(is_test_entry("jvmTest", true, Some("src")));
        assert!(!is_test_entry("jvmMain", true, Some("src")));
        assert!(
            !is_test_entry("LatestTests", true, Some("docs")),
            "only source sets under src"
        );
        assert!(is_test_entry("FooTest.java", false, None));
        assert!(is_test_entry("FooTests.kt", false, None));
        assert!(is_test_entry("FooIT.java", false, None));
        assert!(is_test_entry("FooSpec.kt", false, None));
        assert!(
            !is_test_entry("Test.java", false, None),
            "a bare suffix is a name, not a rule"
        );
        assert!(!is_test_entry("Contest.java", false, None));
        assert!(!is_test_entry("Latest.kt", false, None));
        assert!(
            !is_test_entry("FooTest.py", false, None),
            "Python keeps Agentless's rule"
        );
    }
}
