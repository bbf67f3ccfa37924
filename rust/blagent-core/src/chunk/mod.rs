//! Parsing a source file with tree-sitter into retrieval chunks, a symbol table and a skeleton.

#[cfg(test)]
mod kotlin_tests;
mod segments;
mod split;
mod symbols;
mod syntax;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use self::symbols::{
    documented_enclosing_by_line, enclosing, enclosing_by_line, holders_by_line, Symbol, SymbolKind,
};
use crate::repo::SourceFile;

/// Chunking options.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChunkOptions {
    /// The chunk budget in bytes of code. A construct larger than this is split at its
    /// children's statement boundaries; a single statement larger than it stays whole.
    pub max_bytes: usize,
    /// Lines per window where the parser cannot recover a region of the file.
    pub window_lines: usize,
}

impl Default for ChunkOptions {
    fn default() -> Self {
        ChunkOptions {
            max_bytes: 1500,
            window_lines: 40,
        }
    }
}

/// What a chunk holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChunkKind {
    /// A whole function or method, with its decorators or annotations (and, in Java and
    /// Kotlin, its doc comment).
    Function,
    /// A whole class, with its decorators.
    Class,
    /// Part of a class that is not a method: its header, class attributes, docstring.
    ClassBody,
    /// Module-level statements grouped together.
    Module,
    /// Part of a function too large for one chunk.
    Fragment,
    /// A line window over a region the parser could not recover.
    Window,
}

/// A retrieval unit: a span of one file, following AST boundaries.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Chunk {
    /// Repository-relative path of the file, one allocation shared by all its chunks (a
    /// copy per chunk made memory grow with the path's length times the file's chunks).
    pub path: Arc<str>,
    /// First line, 1-based.
    pub start_line: usize,
    /// Last line, 1-based, inclusive.
    pub end_line: usize,
    /// Byte offset of the first byte.
    pub start_byte: usize,
    /// Byte offset one past the last byte.
    pub end_byte: usize,
    /// Qualified name of the enclosing symbol (`Class.method`) within the file, if any.
    pub symbol: Option<String>,
    /// What the chunk holds.
    pub kind: ChunkKind,
}

impl Chunk {
    /// The chunk's code.
    pub fn code<'a>(&self, source: &'a str) -> &'a str {
        &source[self.start_byte..self.end_byte]
    }

    /// The path-augmented text BLAgent embeds and searches: the file path on the first line,
    /// then the code.
    pub fn text(&self, source: &str) -> String {
        format!("# {}\n{}", self.path, self.code(source))
    }
}

/// Everything parsing one file yields.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ParsedFile {
    /// Repository-relative path.
    pub path: String,
    /// Chunks in file order; together they cover every non-blank line.
    pub chunks: Vec<Chunk>,
    /// Classes, functions and methods, in file order.
    pub symbols: Vec<Symbol>,
    /// The package the file declares (Java, Kotlin), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// Its import declarations as written (Java, Kotlin).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub imports: Vec<String>,
    /// Package and imports (Java, Kotlin), class headers and full signatures with their first
    /// documentation line, indented by nesting.
    pub skeleton: String,
    /// Whether tree-sitter reported syntax errors (the file was still chunked).
    pub syntax_errors: bool,
    /// Line ranges (1-based, inclusive) nested too deeply to follow: definitions inside them
    /// are not in `symbols`, and they are not split into smaller chunks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub too_deep: Vec<(usize, usize)>,
    /// The parse ran past its time budget and was given up: the chunks are windows of lines.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub parse_too_slow: bool,
}

impl ParsedFile {
    /// `(functions and methods, those declared without a body)`, nested functions left out,
    /// where the file has any declared without a body or defines none; `None` where all have
    /// bodies, or where it defines none but could not be read whole (a parse given up, nesting
    /// too deep), so that nothing is known. A header recovered from a region the parser could
    /// not read counts as having a body, since its body is not known.
    pub fn bodiless(&self) -> Option<(usize, usize)> {
        let functions = self
            .symbols
            .iter()
            .filter(|s| s.kind != SymbolKind::Class && !s.in_function);
        let (count, bodiless) = functions.fold((0usize, 0usize), |(n, b), s| {
            (
                n + 1,
                b + usize::from(s.body_line.is_none() && !s.recovered),
            )
        });
        let unread = self.parse_too_slow || !self.too_deep.is_empty();
        match (count, bodiless) {
            (0, _) if unread => None,
            (n, 0) if n > 0 => None,
            counts => Some(counts),
        }
    }
}

/// Parses `file` into chunks, symbols and a skeleton. Never fails: a file the parser cannot
/// handle at all is chunked into line windows and flagged.
pub fn parse_file(file: &SourceFile, options: &ChunkOptions) -> ParsedFile {
    // The symbols' reading of a file with errors parses parts of it again, within the time
    // of the file's own parse.
    let deadline = Instant::now() + parse_budget(file.text.len());
    let (tree, too_slow) = parse_before(file, deadline);
    let Some(tree) = tree else {
        return ParsedFile {
            path: file.path.clone(),
            chunks: split::line_windows(&file.path, &file.text, 0, file.text.len(), options),
            symbols: Vec::new(),
            package: None,
            imports: Vec::new(),
            skeleton: String::new(),
            syntax_errors: true,
            too_deep: Vec::new(),
            parse_too_slow: too_slow,
        };
    };
    let root = tree.root_node();
    let (symbols, mut too_deep) = symbols::extract(root, &file.text, file.language, deadline);
    let package = syntax::package(file.language, root, &file.text);
    let imports = syntax::imports(file.language, root, &file.text);
    let (chunks, unsplit) = split::chunk_tree(root, file, options);
    too_deep.extend(unsplit);
    too_deep.sort_unstable();
    too_deep.dedup_by(|later, earlier| {
        // Overlapping ranges (the symbol walk's and the splitter's) are one region.
        let overlaps = later.0 <= earlier.1;
        if overlaps {
            earlier.1 = earlier.1.max(later.1);
        }
        overlaps
    });
    ParsedFile {
        path: file.path.clone(),
        chunks,
        skeleton: symbols::skeleton(&symbols, file.language, package.as_deref(), &imports),
        symbols,
        package,
        imports,
        syntax_errors: root.has_error(),
        too_deep,
        parse_too_slow: false,
    }
}

/// Parse time every file may take, and the time allowed per 100 KB of source on top. Code of
/// ordinary lines parses at 5–20 MB/s (a 2 MB file, the largest the walk reads, in about
/// 0.2 s), but long runs of list or tuple items far slower (a review measured a 1.9 MB line of
/// tuple items at 2.8–3 s per MB on a loaded 2-core machine, past the 2.5 s per MB this once
/// allowed). Garbled text can need quadratic time in tree-sitter's error recovery (160 KB of
/// `}{)(][><` took 42 s, 1.6 MB would take over an hour): such a file is given up on at the
/// budget, as a file that does not parse at all is.
const PARSE_BUDGET_BASE: Duration = Duration::from_millis(500);
const PARSE_BUDGET_PER_100_KB: Duration = Duration::from_millis(500);

/// The time a parse of `bytes` of source may take ([`PARSE_BUDGET_BASE`]).
pub(super) fn parse_budget(bytes: usize) -> Duration {
    let hundreds_of_kb = u32::try_from(bytes / 100_000).unwrap_or(u32::MAX);
    PARSE_BUDGET_BASE + PARSE_BUDGET_PER_100_KB.saturating_mul(hundreds_of_kb)
}

/// Parses `file` before `deadline` ([`parse_budget`] gives a file's own; the parses of a file's
/// parts share the time of one, [`symbols`]' re-readings of a file with errors), or `None`
/// when its language cannot be set, when the parse runs past it (then `true` too), or when a
/// stop is asked for ([`crate::cancel`]). Tree-sitter asks whether to go on every hundred parse operations,
/// milliseconds apart at worst. Texts a grammar's own code cannot take are not given to the
/// parser: one without the final newline its grammar needs (a `SourceFile` not made by
/// [`SourceFile::new`]), on which it could loop forever between those questions, and one
/// indenting deeper than its scanner can save ([`Language::max_indent_levels`]) or holding more
/// string templates than it can nest ([`Language::max_string_templates`]), which would abort
/// the process.
pub(super) fn parse_before(
    file: &SourceFile,
    deadline: Instant,
) -> (Option<tree_sitter::Tree>, bool) {
    let language = file.language;
    let too_deep = language
        .max_indent_levels
        .is_some_and(|max| indent_levels(&file.text) > max)
        || language
            .max_string_templates
            .is_some_and(|max| file.text.matches("${").count() > max);
    if language.lacks_final_newline(&file.text) || too_deep {
        return (None, false);
    }
    let mut parser = tree_sitter::Parser::new();
    if parser.set_language(&(language.grammar)()).is_err() {
        return (None, false);
    }
    let mut too_slow = false;
    let mut give_up = |_: &tree_sitter::ParseState| {
        too_slow = Instant::now() > deadline;
        too_slow || crate::cancel::is_requested()
    };
    let masked = language
        .grammar_text
        .and_then(|grammar_text| grammar_text(&file.text));
    let bytes = masked.as_deref().unwrap_or(&file.text).as_bytes();
    let tree = parser.parse_with_options(
        &mut |at, _| bytes.get(at..).unwrap_or_default(),
        None,
        Some(tree_sitter::ParseOptions::new().progress_callback(&mut give_up)),
    );
    (tree, too_slow)
}

/// A bound on the indentation levels tree-sitter-python's scanner can hold open on `text`: the
/// number of different widths a line's indentation can have, counted as that scanner counts
/// them (a space 1, a tab 8, a form feed or carriage return back to 0, a backslash ending the
/// line carrying the count on to the next line; 16 bits, wrapping). The scanner opens a level
/// only for a width greater than the one open before, so it never holds more levels than
/// there are widths. Every line counts, those inside brackets, strings and comments too, so
/// the bound errs towards not parsing.
fn indent_levels(text: &str) -> usize {
    let mut widths = std::collections::HashSet::new();
    let mut width: u16 = 0;
    let mut bytes = text.bytes().peekable();
    let mut at_line_start = true;
    while let Some(byte) = bytes.next() {
        if !at_line_start {
            if byte == b'\n' {
                at_line_start = true;
                width = 0;
            }
            continue;
        }
        match byte {
            b'\n' | b'\r' | b'\x0c' => width = 0,
            b' ' => width = width.wrapping_add(1),
            b'\t' => width = width.wrapping_add(8),
            // A line continued by a backslash: the scanner counts on.
            b'\\' if matches!(bytes.peek(), Some(b'\n' | b'\r') | None) => {
                if bytes.peek() == Some(&b'\r') {
                    bytes.next();
                }
                bytes.next();
            }
            _ => {
                if width > 0 {
                    widths.insert(width);
                }
                at_line_start = false;
            }
        }
    }
    widths.len()
}

/// Maps byte offsets to 1-based line numbers by binary search over line starts.
pub(crate) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub(crate) fn new(source: &str) -> Self {
        let newlines = source.bytes().enumerate().filter(|&(_, b)| b == b'\n');
        LineIndex {
            starts: std::iter::once(0)
                .chain(newlines.map(|(i, _)| i + 1))
                .collect(),
        }
    }

    /// 1-based line of the byte at `offset`.
    pub(crate) fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&start| start <= offset)
    }

    /// Byte offset where the line holding `offset` starts.
    pub(crate) fn line_start(&self, offset: usize) -> usize {
        self.starts[self.line(offset) - 1]
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;
    use crate::repo::language_for_path;

    fn parse(path: &str, text: String) -> ParsedFile {
        let language = language_for_path(path).expect("a known language");
        let file = SourceFile::new(path.to_owned(), language, text, false);
        parse_file(&file, &ChunkOptions::default())
    }

    /// `open` repeated `depth` times, `middle`, then `close` as often: text nested `depth` deep.
    fn nested(open: &str, middle: &str, close: &str, depth: usize) -> String {
        format!("{}{middle}{}", open.repeat(depth), close.repeat(depth))
    }

    /// A file whose lines end in a lone carriage return (classic Mac OS) has lines as Python,
    /// Java and Kotlin count them, a CR being a line terminator in each: its definitions are
    /// found on their own lines, alone or mixed with CRLF, and the chunks keep the file's bytes.
    #[test]
    fn lines_ending_in_a_lone_carriage_return_are_lines() {
        /// Each definition's name and first line.
        type Lines = &'static [(&'static str, usize)];
        let files: [(&str, &str, Lines); 3] = [
            (
                "m.py",
                "import os\r\rdef first():\r    return 1\r\rclass C:\r    def second(self):\r        return 2\r",
                &[("first", 3), ("C", 6), ("C.second", 7)],
            ),
            (
                "M.java",
                "package p;\r\rclass C {\r    int first() {\r        return 1;\r    }\r\r    int second() {\r        return 2;\r    }\r}\r",
                &[("C", 3), ("C.first", 4), ("C.second", 8)],
            ),
            (
                "m.kt",
                "package p\r\rfun first(): Int {\r    return 1\r}\r\rclass C {\r    fun second(): Int = 2\r}\r",
                &[("first", 3), ("C", 7), ("C.second", 8)],
            ),
        ];
        for (path, code, want) in files {
            for text in [code.to_owned(), code.replacen("\r\r", "\r\n\r", 1)] {
                let parsed = parse(path, text.clone());
                let got: Vec<(&str, usize)> = parsed
                    .symbols
                    .iter()
                    .map(|s| (s.qualified.as_str(), s.start_line))
                    .collect();
                assert_eq!(got, want, "{path} {text:?}");
                // The chunk holding `first` spans its line, and its bytes are the file's.
                let (_, line) = want.iter().find(|(q, _)| q.ends_with("first")).unwrap();
                let at = text.find("first").unwrap();
                let chunk = parsed
                    .chunks
                    .iter()
                    .find(|c| (c.start_byte..c.end_byte).contains(&at))
                    .expect("a chunk holds the function");
                assert!(
                    (chunk.start_line..=chunk.end_line).contains(line),
                    "{path} {text:?} {chunk:?}"
                );
                assert!(chunk.code(&text).contains("return 1"), "{path} {text:?}");
                assert!(
                    chunk.start_line < chunk.end_line,
                    "{path} {text:?} {chunk:?}"
                );
            }
        }
    }

    /// `Symbol::direct`: a definition directly at the top level or in its definition's body
    /// (through a decorator, or Java's enum declarations), not one inside a statement there.
    #[test]
    fn definitions_inside_statements_are_not_direct() {
        let python = "\
import sys

class A:
    @property
    def p(self):
        return 1

    if sys.version_info > (3,):
        def m(self):
            return 2

try:
    def t():
        pass
except ImportError:
    pass

def f():
    def inner():
        return 3
    return inner
";
        let java =
            "enum E {\n    X;\n    int value() { return 1; }\n}\nclass C {\n    void run() {}\n}\n";
        for (path, text, want) in [
            (
                "a.py",
                python,
                vec![
                    ("A", true),
                    ("A.p", true),
                    ("A.m", false),
                    ("t", false),
                    ("f", true),
                    ("f.inner", true),
                ],
            ),
            (
                "E.java",
                java,
                vec![("E", true), ("E.value", true), ("C", true), ("C.run", true)],
            ),
        ] {
            let parsed = parse(path, text.to_owned());
            let got: Vec<(&str, bool)> = parsed
                .symbols
                .iter()
                .map(|s| (s.qualified.as_str(), s.direct))
                .collect();
            assert_eq!(got, want, "{path}");
        }
    }

    /// Found by a review: an annotation type's elements were no methods, an enum constant's
    /// methods were the enum's, and what an initializer block defines (a local class, an
    /// anonymous class's method) was a member of the class.
    #[test]
    fn java_annotation_elements_are_methods_and_initializers_are_local() {
        let java = "@interface Config {\n    String name();\n    int[] values() default {};\n}\n\nenum Op {\n    ADD { int apply() { return 1; } },\n    NONE;\n    int apply() { return 0; }\n}\n\nclass Init {\n    static {\n        class Local {}\n    }\n    {\n        new Runnable() {\n            public void run() {}\n        };\n    }\n    void m() {}\n}\n";
        let parsed = parse("Init.java", java.to_owned());
        let got: Vec<(&str, SymbolKind, bool)> = parsed
            .symbols
            .iter()
            .map(|s| (s.qualified.as_str(), s.kind, s.in_function))
            .collect();
        assert_eq!(
            got,
            [
                ("Config", SymbolKind::Class, false),
                ("Config.name", SymbolKind::Method, false),
                ("Config.values", SymbolKind::Method, false),
                ("Op", SymbolKind::Class, false),
                ("Op.ADD", SymbolKind::Class, false),
                ("Op.ADD.apply", SymbolKind::Method, false),
                ("Op.apply", SymbolKind::Method, false),
                ("Init", SymbolKind::Class, false),
                ("Init.Local", SymbolKind::Class, true),
                ("Init.run", SymbolKind::Function, true),
                ("Init.m", SymbolKind::Method, false),
            ]
        );
    }

    /// A Java method left with a brace open took the next top-level type into its body; the
    /// types of a file with errors are read one at a time where an error touches them.
    #[test]
    fn a_java_type_after_an_open_brace_keeps_its_own_symbols() {
        let java = "package p;\n\n/** First. */\npublic class A {\n    void a(boolean x) {\n        if (x) {\n    }\n}\n\n/** Second. */\n@Deprecated\nclass B {\n    void b() {}\n}\n";
        let parsed = parse("A.java", java.to_owned());
        assert!(parsed.syntax_errors);
        let got: Vec<(&str, SymbolKind, usize, usize)> = parsed
            .symbols
            .iter()
            .map(|s| (s.qualified.as_str(), s.kind, s.start_line, s.end_line))
            .collect();
        assert_eq!(
            got,
            [
                ("A", SymbolKind::Class, 4, 8),
                ("A.a", SymbolKind::Method, 5, 8),
                ("B", SymbolKind::Class, 11, 14),
                ("B.b", SymbolKind::Method, 13, 13),
            ]
        );
        let b = parsed.symbols.iter().find(|s| s.name == "B").expect("B");
        assert_eq!((b.doc_line, b.doc.as_deref()), (Some(10), Some("Second.")));
    }

    /// From a review: a Javadoc above a multi-line annotation stayed with the class when only
    /// the class was read on its own.
    #[test]
    fn a_java_class_with_an_error_keeps_its_javadoc_above_an_annotation() {
        let java = "package p;\n\n/**\n * Doc of X.\n */\n@SuppressWarnings({\n    \"unchecked\"\n})\npublic class X {\n    void m() {\n        int x = ;\n    }\n    void n() {}\n}\n";
        let parsed = parse("X.java", java.to_owned());
        let x = &parsed.symbols[0];
        assert_eq!(
            (x.name.as_str(), x.start_line, x.doc_line),
            ("X", 6, Some(3))
        );
    }

    /// A file's chunks share one allocation of its path, whichever way they were cut (AST
    /// units, windows over an unparsable region, windows over an unparsable file): a copy per
    /// chunk took 1.26 GB for two files of 104,000 one-line functions at a 3.6 KB path.
    #[test]
    fn the_chunks_of_a_file_share_its_path() {
        let functions = (0..50).fold(String::new(), |mut s, i| {
            let _ = write!(s, "def f{i}():\n    return {i}\n\n");
            s
        });
        let broken = format!("{functions}def g(:\n{}", "x = (\n".repeat(200));
        let garbled = "}{)(][><\n".repeat(20_000);
        for text in [functions, broken, garbled] {
            let parsed = parse("pkg/mod.py", text);
            assert!(parsed.chunks.len() > 1);
            for chunk in &parsed.chunks {
                assert_eq!(&*chunk.path, "pkg/mod.py");
                assert!(Arc::ptr_eq(&chunk.path, &parsed.chunks[0].path));
            }
        }
    }

    /// Found by a hostile review: chunking read a run of comments again for each comment (in
    /// Java and Kotlin, where comments lead a definition) and a line's indentation again for
    /// each statement on it: 200,000 comment lines took 301 s, a million spaces before 100,000
    /// statements 79 s. Each is read once now; the comments still lead their method's chunk.
    #[test]
    fn long_comment_runs_and_indented_lines_of_many_statements_chunk_as_before() {
        let comments = "    // note\n".repeat(20_000);
        let java = format!("class A {{\n{comments}    void run() {{ go(); }}\n}}\n");
        let parsed = parse("A.java", java.clone());
        let run = parsed
            .chunks
            .iter()
            .find(|c| c.symbol.as_deref() == Some("A.run"))
            .expect("the method's chunk");
        assert!(run.code(&java).contains("// note") && run.code(&java).contains("void run()"));
        let statements = "x = 1; ".repeat(20_000);
        let python = format!("if True:\n{}{statements}\n", " ".repeat(200_000));
        let parsed = parse("wide.py", python.clone());
        let covered: usize = parsed
            .chunks
            .iter()
            .map(|c| c.end_byte - c.start_byte)
            .sum();
        assert!(
            covered >= statements.trim_end().len(),
            "the statements are chunked"
        );
    }

    /// Garbled text sends tree-sitter's error recovery into quadratic time (160 KB of these
    /// brackets took 42 s, 1.6 MB over an hour, with Ctrl-C unheard): the parse is given up at
    /// its budget, well under a second here, and the file still chunks into line windows.
    #[test]
    fn a_parse_past_its_budget_is_given_up_and_the_file_still_chunks() {
        for path in ["Gen.java", "gen.py"] {
            let text = "}{)(][><\n".repeat(20_000);
            let parsed = parse(path, text.clone());
            assert!(parsed.parse_too_slow, "{path}");
            assert!(parsed.syntax_errors && parsed.symbols.is_empty(), "{path}");
            let covered: usize = parsed
                .chunks
                .iter()
                .map(|c| c.end_line - c.start_line + 1)
                .sum();
            assert_eq!(
                covered,
                text.lines().count(),
                "{path}: every line in a window"
            );
        }
        let plain = "def f(x):\n    return x + 1\n\n".repeat(5_000);
        let parsed = parse("plain.py", plain);
        assert!(!parsed.parse_too_slow && parsed.symbols.len() == 5_000);
    }

    /// Each case once crashed the process on a test thread's 2 MiB stack (recursion per level):
    /// expressions and blocks nested thousands deep parse, chunk and cover every line.
    #[test]
    fn deeply_nested_code_is_indexed_without_exhausting_the_stack() {
        let deep = 20_000;
        let cases = [
            (
                "gen.py",
                format!(
                    "x = {}\n\ndef after():\n    pass\n",
                    nested("(", "1", ")", deep)
                ),
            ),
            (
                "gen.py",
                format!(
                    "x = {}\n\ndef after():\n    pass\n",
                    nested("[", "1", "]", deep)
                ),
            ),
            (
                "Gen.java",
                format!(
                    "class Gen {{ void f() {{ {} }}\n void after() {{}} }}\n",
                    nested("{", "g();", "}", deep)
                ),
            ),
            (
                "Gen.java",
                format!(
                    "class Gen {{ int x = {};\n void after() {{}} }}\n",
                    nested("(", "1", ")", deep)
                ),
            ),
            (
                "Gen.kt",
                format!(
                    "fun f() = {}\nfun after() {{}}\n",
                    nested("(", "1", ")", deep)
                ),
            ),
            (
                "Gen.kt",
                format!(
                    "fun f() {{ {} }}\nfun after() {{}}\n",
                    nested("run {", "g()", "}", deep)
                ),
            ),
        ];
        for (path, text) in cases {
            let lines = text.lines().count();
            let parsed = parse(path, text);
            assert!(
                parsed.symbols.iter().any(|s| s.name == "after"),
                "{path}: {:?}",
                parsed.symbols
            );
            let last = parsed.chunks.iter().map(|c| c.end_line).max();
            assert_eq!(last, Some(lines), "{path}: every line is chunked");
        }
    }

    /// Every chunk of a definition carries its qualified name: uncut, a class named with
    /// 900 KB whose body made 747 chunks took 900 MB for a 2 MB file. Names are cut, the same
    /// way in the chunks and the symbol table (a cut that falls inside a character included).
    /// A clause whose block is its first child (`else:`, `try:`) keeps its keyword line in a
    /// chunk when the statement is split: chunks cover every non-blank line.
    #[test]
    fn clause_keywords_are_in_a_chunk() {
        let body = "        x = compute_something_long(1)\n".repeat(50);
        let text = format!(
            "import sys\n\nif sys.version_info < (3,):\n    def g():\n        pass\nelse:\n    \
             def g():\n{body}\ntry:\n    def h():\n{body}except ImportError:\n    def h():\n        \
             pass\nfinally:\n    def k():\n{body}"
        );
        let parsed = parse("a.py", text.clone());
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            if !line.trim().is_empty() {
                assert!(
                    parsed
                        .chunks
                        .iter()
                        .any(|c| c.start_line <= n && n <= c.end_line),
                    "line {n} `{line}` is in no chunk"
                );
            }
        }
    }

    #[test]
    fn huge_definition_names_are_cut_alike_in_chunks_and_symbols() {
        use super::syntax::{MAX_NAME_BYTES, MAX_QUALIFIED_BYTES};
        let long = format!("C{}", "\u{e9}".repeat(150_000));
        let mut body = String::new();
        for i in 0..3_000 {
            let _ = writeln!(body, "        a{i} = {i}");
        }
        let text = format!(
            "class {long}:\n    class {long}:\n        def {long}(self):\n            pass\n{body}"
        );
        let parsed = parse("names.py", text);
        assert_eq!(parsed.symbols.len(), 3, "{:?}", parsed.too_deep);
        for symbol in &parsed.symbols {
            assert!(symbol.name.len() <= MAX_NAME_BYTES, "{}", symbol.name.len());
            assert!(symbol.qualified.len() <= MAX_QUALIFIED_BYTES);
            assert!(symbol.name.ends_with('\u{2026}'));
        }
        assert!(parsed.chunks.len() > 20);
        let qualified: Vec<&str> = parsed
            .symbols
            .iter()
            .map(|s| s.qualified.as_str())
            .collect();
        for chunk in &parsed.chunks {
            let symbol = chunk.symbol.as_deref().expect("inside the class");
            assert!(qualified.contains(&symbol), "{}", symbol.len());
        }
        let normal = parse(
            "n.py",
            "class A:\n    class B:\n        def f(self):\n            pass\n".to_owned(),
        );
        let names: Vec<&str> = normal
            .symbols
            .iter()
            .map(|s| s.qualified.as_str())
            .collect();
        assert_eq!(names, ["A", "A.B", "A.B.f"]);
    }

    /// Definitions nested past the bound are left out and their lines listed; the outer ones
    /// keep their names.
    #[test]
    fn definitions_nested_past_the_bound_are_listed_not_followed() {
        let depth = symbols::MAX_NESTING + 50;
        let mut text = String::new();
        for level in 0..depth {
            let _ = writeln!(text, "{}class C{level}:", "    ".repeat(level));
        }
        let _ = writeln!(text, "{}pass", "    ".repeat(depth));
        let parsed = parse("deep.py", text);
        assert_eq!(parsed.symbols.len(), symbols::MAX_NESTING);
        assert_eq!(parsed.symbols[0].qualified, "C0");
        let first_left_out = symbols::MAX_NESTING + 1;
        assert!(
            parsed
                .too_deep
                .iter()
                .any(|&(start, end)| start <= first_left_out && end == depth + 1),
            "{:?}",
            parsed.too_deep
        );
        let covered: usize = parsed
            .chunks
            .iter()
            .map(|c| c.end_line - c.start_line + 1)
            .sum();
        assert!(covered > depth, "every line is in a chunk");
    }

    /// Parses `file` on a thread of its own and gives up after a minute: a grammar that loops
    /// fails the test instead of hanging it.
    fn parse_or_hang(file: SourceFile) -> ParsedFile {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(parse_file(&file, &ChunkOptions::default()));
        });
        rx.recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("the parse did not end"))
    }

    /// The Kotlin endings in an annotation that made tree-sitter-kotlin-ng's scanner loop
    /// forever without a final newline, and neighbours of them.
    const ANNOTATION_TAILS: [&str; 8] = [
        "@",
        "@Suppress",
        "val e\n@",
        "  @get:JvmName(\"a\"",
        "@get:A(",
        "  @get:A(",
        "@set:[A B(",
        "@file:",
    ];

    /// tree-sitter-kotlin-ng's scanner read an annotation to the next whitespace (and an
    /// accessor's annotation with arguments to the next newline) without looking for the end
    /// of the text: a Kotlin file ending in either looped forever before its final newline was
    /// added. The newline is still added (a guard): the code is read, and the lines stay those
    /// of the file.
    #[test]
    fn a_kotlin_file_ending_in_an_annotation_parses() {
        let class = "class Cart {\n    fun add(x: Int) = x\n}\n";
        for tail in ANNOTATION_TAILS {
            let text = format!("{class}{tail}");
            let language = language_for_path("Cart.kt").unwrap();
            let file = SourceFile::new("Cart.kt".to_owned(), language, text.clone(), false);
            assert_eq!(file.text, format!("{text}\n"));
            let parsed = parse_or_hang(file);
            let add = parsed.symbols.iter().find(|s| s.qualified == "Cart.add");
            assert_eq!(
                add.map(|s| (s.start_line, s.end_line)),
                Some((2, 2)),
                "{tail:?}"
            );
            let last = parsed.chunks.iter().map(|c| c.end_line).max();
            assert_eq!(last, Some(text.lines().count()), "{tail:?}");
        }
        // Made without `SourceFile::new`, such a text is not parsed: its lines are windows.
        let file = SourceFile {
            path: "E.kt".to_owned(),
            language: language_for_path("E.kt").unwrap(),
            text: "val e\n@".to_owned(),
            lossy: false,
        };
        let parsed = parse_or_hang(file);
        assert!(parsed.symbols.is_empty() && parsed.syntax_errors);
        assert_eq!(parsed.chunks.len(), 1);
        // tree-sitter-kotlin-sg itself ends on those texts without their final newline.
        for tail in ANNOTATION_TAILS {
            let text = format!("{class}{tail}");
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let mut parser = tree_sitter::Parser::new();
                parser
                    .set_language(&(crate::repo::KOTLIN.grammar)())
                    .expect("grammar");
                let _ = tx.send(parser.parse(&text, None).is_some());
            });
            let parsed = rx.recv_timeout(Duration::from_secs(60));
            assert_eq!(parsed, Ok(true), "{tail:?}");
        }
        // Python and Java texts are kept as read.
        for path in ["a.py", "A.java"] {
            let language = language_for_path(path).unwrap();
            let file = SourceFile::new(path.to_owned(), language, "x".to_owned(), false);
            assert_eq!(file.text, "x");
        }
    }

    /// tree-sitter-python's scanner saves its indentation levels, two bytes each, in a
    /// 1,024-byte buffer and wrote past it at 511 nested levels (383 inside an open string),
    /// where tree-sitter aborted the process (found by a fuzzer). Such a file is read as line
    /// windows; one within the bound parses as before. The review of the first bound found
    /// lines the scanner does not count (a comment, a bracket's or a string's line at column
    /// 0, a line continued by a backslash) taking levels off it: every width counts now.
    #[test]
    fn python_nested_past_the_scanners_buffer_is_not_parsed() {
        let nested_with = |levels: usize, between: &str, tail: &str| {
            let mut text = String::new();
            for level in 0..levels {
                let _ = write!(text, "{}if 1:\n{between}", " ".repeat(level));
            }
            format!("{text}{}{tail}\n", " ".repeat(levels))
        };
        let nested = |levels: usize, tail: &str| nested_with(levels, "", tail);
        let continued = (0..520).fold(String::new(), |mut text, level| {
            let _ = write!(text, "{}\\\nif 1:\n", " ".repeat(level));
            text
        }) + &" ".repeat(520)
            + "\\\nx = \"abc\"\n";
        let reviewed = [
            nested_with(520, "#\n", "x = \"abc\""),
            nested_with(520, "(\n1)\n", "x = \"abc\""),
            nested_with(520, "'''\n'''\n", "x = \"abc\""),
            continued,
        ];
        let tabs = |levels: usize| {
            let mut text = String::new();
            for k in 0..levels {
                let _ = writeln!(text, "{}{}if 1:", "\t".repeat(k / 8), " ".repeat(k % 8));
            }
            format!(
                "{text}{}{}\"\n",
                "\t".repeat(levels / 8),
                " ".repeat(levels % 8)
            )
        };
        let found = [nested(511, "x = \"abc\""), nested(600, "pass"), tabs(511)];
        for text in found.into_iter().chain(reviewed) {
            assert!(indent_levels(&text) > 256);
            let parsed = parse_or_hang(SourceFile::new(
                "deep.py".to_owned(),
                language_for_path("deep.py").unwrap(),
                text,
                false,
            ));
            assert!(parsed.symbols.is_empty() && parsed.syntax_errors);
            assert!(!parsed.chunks.is_empty());
        }
        let within = nested(200, "def f():\n    return 1");
        assert_eq!(indent_levels(&within), 200);
        let parsed = parse("deep.py", within);
        assert!(!parsed.syntax_errors);
        // Widths as the scanner counts them (a tab 8, a form feed back to 0), bracketed lines
        // too, blank lines not.
        assert_eq!(indent_levels("a\n    b\n        c\n    d\n\te\n\n  \n"), 2);
        assert_eq!(indent_levels("x = [\n      1,\n  2]\n\x0c  y\n"), 2);
    }
}
