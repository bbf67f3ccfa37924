//! The line-level check of the BLAgent study: the first changed code line of the generated
//! patch against the gold patch's, by distance and by text similarity.

use serde::{Deserialize, Serialize};

use super::docstrings::{comment_mask, hunk_comment_mask};
use super::patch::{ChangeKind, FilePatch};
use crate::repo::language_for_path;

/// First lines at most this many lines apart are a correct line localization.
pub const EXACT_LINE_DISTANCE: usize = 5;
/// First lines at most this many lines apart and similar enough are an approximate match.
pub const APPROX_LINE_DISTANCE: usize = 10;
/// The similarity ratio (`similar`'s character diff) an approximate match needs.
pub const APPROX_SIMILARITY: f32 = 0.6;

/// A changed line that is code: not blank, not a comment, not inside a docstring.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeLine {
    /// Repository-relative path.
    pub path: String,
    /// Base-file line (see [`super::HunkLine::base_line`]), the coordinate both patches share.
    pub line: usize,
    /// Line in the patched file.
    pub new_line: usize,
    /// Added or removed.
    pub kind: ChangeKind,
    /// The line's text, trimmed.
    pub text: String,
}

/// How the generated patch's first code line compares to the gold patch's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineVerdict {
    /// Same file, at most [`EXACT_LINE_DISTANCE`] lines apart.
    Correct,
    /// Same file, at most [`APPROX_LINE_DISTANCE`] lines apart, similarity ≥ [`APPROX_SIMILARITY`].
    Approximate,
    /// Anything else, or a side without a code line.
    Failed,
}

/// The evidence of the line-level check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineMatch {
    /// The gold patch's first code line.
    pub gold: Option<CodeLine>,
    /// The generated patch's first code line (in the gold line's file when it changes it).
    pub generated: Option<CodeLine>,
    /// Lines between them, when in the same file.
    pub distance: Option<usize>,
    /// Similarity ratio of their trimmed texts, in `0..=1`.
    pub similarity: Option<f32>,
    /// The verdict.
    pub verdict: LineVerdict,
}

/// Characters of a line compared by [`line_similarity`]: a character diff takes time
/// quadratic in the length at worst (two 256 KB lines took 76 s), and a code line longer than
/// this is generated or minified text, whose start says enough.
pub const MAX_COMPARED_CHARS: usize = 4096;

/// Similarity of two lines: `similar::TextDiff::from_chars(a, b).ratio()` (2·matches / total
/// characters, 1.0 for two empty strings) over their first [`MAX_COMPARED_CHARS`] characters.
pub fn line_similarity(a: &str, b: &str) -> f32 {
    let head = |s: &'_ str| -> usize {
        s.char_indices()
            .nth(MAX_COMPARED_CHARS)
            .map_or(s.len(), |(i, _)| i)
    };
    similar::TextDiff::from_chars(&a[..head(a)], &b[..head(b)]).ratio()
}

/// How a file's comments are told from its code, found once from its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Comments {
    /// `#` lines and Python's docstrings: every file but Java's and Kotlin's.
    Hash,
    /// Java's and Kotlin's `//` and `/* … */`, found by [`scan_jvm_comments`] (a line starting
    /// with `*` may be code); `nested`: Kotlin's, whose block comments nest.
    Jvm { nested: bool },
}

impl Comments {
    fn of(path: &str) -> Self {
        match language_for_path(path).map(|l| l.name) {
            Some("java") => Comments::Jvm { nested: false },
            Some("kotlin") => Comments::Jvm { nested: true },
            _ => Comments::Hash,
        }
    }
}

/// What a scan of Java or Kotlin text is inside at a line's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Nothing,
    /// A block comment, this deep (Kotlin's nest; Java's end at the first `*/`).
    Comment(usize),
    /// A Java text block or a Kotlin raw string (`"""`), which spans lines.
    TextBlock,
}

/// For each line of Java or Kotlin text (`nested`: Kotlin, whose block comments nest), whether
/// it holds comments only (`//` to the end of the line, `/* … */` blocks, read outside string
/// and character literals and text blocks); also what the text ends inside, and whether a
/// `*/` closed a comment that did not open in it (so it began inside one).
fn scan_jvm_comments<'a>(
    lines: impl IntoIterator<Item = &'a str>,
    start: Open,
    nested: bool,
) -> (Vec<bool>, Open, bool) {
    let (mut open, mut closed_before) = (start, false);
    let mut mask = Vec::new();
    for line in lines {
        let (b, mut i, mut code, mut quote) = (line.as_bytes(), 0, false, None);
        while i < b.len() {
            let at = |s: &[u8]| b[i..].starts_with(s);
            match open {
                Open::Comment(depth) if at(b"*/") => {
                    open = if depth > 1 {
                        Open::Comment(depth - 1)
                    } else {
                        Open::Nothing
                    };
                    i += 2;
                }
                Open::Comment(depth) if nested && at(b"/*") => {
                    open = Open::Comment(depth + 1);
                    i += 2;
                }
                Open::Comment(_) => i += 1,
                Open::TextBlock => {
                    code = true;
                    if at(b"\"\"\"") {
                        open = Open::Nothing;
                        i += 3;
                    } else {
                        // Java's text blocks have escapes; Kotlin's raw strings have none.
                        i += if b[i] == b'\\' && !nested { 2 } else { 1 };
                    }
                }
                Open::Nothing => {
                    if let Some(q) = quote {
                        quote = (b[i] != q).then_some(q);
                        i += if b[i] == b'\\' { 2 } else { 1 };
                    } else if at(b"\"\"\"") {
                        (open, code) = (Open::TextBlock, true);
                        i += 3;
                    } else if at(b"//") {
                        break;
                    } else if at(b"/*") {
                        open = Open::Comment(1);
                        i += 2;
                    } else {
                        closed_before |= at(b"*/");
                        if matches!(b[i], b'"' | b'\'') {
                            quote = Some(b[i]);
                        }
                        code |= !b[i].is_ascii_whitespace();
                        i += 1;
                    }
                }
            }
        }
        mask.push(!code);
    }
    (mask, open, closed_before)
}

/// [`scan_jvm_comments`] of a whole file.
fn jvm_comment_mask<'a>(lines: impl IntoIterator<Item = &'a str>, nested: bool) -> Vec<bool> {
    scan_jvm_comments(lines, Open::Nothing, nested).0
}

/// [`jvm_comment_mask`] of a hunk's lines, which may begin inside a block comment (they do
/// when a `*/` outside any string closes a comment they did not open) or inside a text block
/// (they may when they hold an odd number of `"""`: then a line is a comment only if it is one
/// read from outside a text block and from inside one).
fn hunk_jvm_comment_mask(lines: &[&str], nested: bool) -> Vec<bool> {
    let scan = |start| scan_jvm_comments(lines.iter().copied(), start, nested);
    let (mask, _, closed_before) = scan(Open::Nothing);
    if closed_before {
        return scan(Open::Comment(1)).0;
    }
    let quotes: usize = lines.iter().map(|l| l.matches("\"\"\"").count()).sum();
    if quotes % 2 == 1 {
        let (inside, _, _) = scan(Open::TextBlock);
        return mask.iter().zip(inside).map(|(&a, b)| a && b).collect();
    }
    mask
}

/// The code lines a patch changes in one file, in patch order. `base` and `new` are the file
/// before and after the patch when known; they make docstring detection exact, otherwise the
/// hunks' own context is scanned ([`hunk_docstring_mask`]).
pub fn code_lines(file: &FilePatch, base: Option<&str>, new: Option<&str>) -> Vec<CodeLine> {
    // Python's docstrings and `#` lines, or Java's and Kotlin's comments, are not code.
    let comments = Comments::of(&file.path);
    let mask = |text: &str| match comments {
        Comments::Jvm { nested } => jvm_comment_mask(text.lines(), nested),
        Comments::Hash => comment_mask(&text.lines().collect::<Vec<_>>()),
    };
    let hunk_mask = |lines: &[&str]| match comments {
        Comments::Jvm { nested } => hunk_jvm_comment_mask(lines, nested),
        Comments::Hash => hunk_comment_mask(lines),
    };
    let base_mask = base.map(mask);
    let new_mask = new.map(mask);
    let mut out = Vec::new();
    for hunk in &file.hunks {
        let old_view: Vec<&str> = hunk
            .lines
            .iter()
            .filter(|l| l.change != Some(ChangeKind::Added))
            .map(|l| l.text.as_str())
            .collect();
        let new_view: Vec<&str> = hunk
            .lines
            .iter()
            .filter(|l| l.change != Some(ChangeKind::Removed))
            .map(|l| l.text.as_str())
            .collect();
        let (hunk_old, hunk_new) = (hunk_mask(&old_view), hunk_mask(&new_view));
        let (mut oi, mut ni) = (0, 0);
        for line in &hunk.lines {
            let not_code = match line.change {
                None => {
                    oi += 1;
                    ni += 1;
                    continue;
                }
                Some(ChangeKind::Removed) => {
                    oi += 1;
                    lookup(base_mask.as_deref(), line.base_line).unwrap_or(hunk_old[oi - 1])
                }
                Some(ChangeKind::Added) => {
                    ni += 1;
                    lookup(new_mask.as_deref(), line.new_line).unwrap_or(hunk_new[ni - 1])
                }
            };
            if !not_code && !line.text.trim().is_empty() {
                let kind = line.change.expect("context lines skipped above");
                out.push(CodeLine {
                    path: file.path.clone(),
                    line: line.base_line,
                    new_line: line.new_line,
                    kind,
                    text: line.text.trim().to_owned(),
                });
            }
        }
    }
    out
}

/// Every changed line of one file's patch that is not blank, comments and docstrings included,
/// in patch order: what touches a function when gold functions are counted (a hunk that edits
/// only a method's docstring touches that method).
pub fn changed_lines(file: &FilePatch) -> Vec<CodeLine> {
    file.hunks
        .iter()
        .flat_map(|hunk| &hunk.lines)
        .filter(|line| !line.text.trim().is_empty())
        .filter_map(|line| {
            Some(CodeLine {
                path: file.path.clone(),
                line: line.base_line,
                new_line: line.new_line,
                kind: line.change?,
                text: line.text.trim().to_owned(),
            })
        })
        .collect()
}

fn lookup(mask: Option<&[bool]>, line: usize) -> Option<bool> {
    mask.and_then(|m| m.get(line.checked_sub(1)?).copied())
}

/// Compares the first code lines: same file and within [`EXACT_LINE_DISTANCE`] lines is
/// correct; same file, within [`APPROX_LINE_DISTANCE`] lines and similarity at least
/// [`APPROX_SIMILARITY`] is approximate; anything else fails.
pub fn match_first_lines(gold: Option<&CodeLine>, generated: Option<&CodeLine>) -> LineMatch {
    let mut result = LineMatch {
        gold: gold.cloned(),
        generated: generated.cloned(),
        distance: None,
        similarity: None,
        verdict: LineVerdict::Failed,
    };
    let (Some(g), Some(p)) = (gold, generated) else {
        return result;
    };
    let similarity = line_similarity(&g.text, &p.text);
    result.similarity = Some(similarity);
    if g.path != p.path {
        return result;
    }
    let distance = g.line.abs_diff(p.line);
    result.distance = Some(distance);
    result.verdict = if distance <= EXACT_LINE_DISTANCE {
        LineVerdict::Correct
    } else if distance <= APPROX_LINE_DISTANCE && similarity >= APPROX_SIMILARITY {
        LineVerdict::Approximate
    } else {
        LineVerdict::Failed
    };
    result
}

#[cfg(test)]
mod tests {
    use super::super::patch::parse_patch;
    use super::*;

    fn line(path: &str, line: usize, text: &str) -> CodeLine {
        CodeLine {
            path: path.into(),
            line,
            new_line: line,
            kind: ChangeKind::Added,
            text: text.into(),
        }
    }

    /// Found by two reviews: a Java file's `// Copyright` line was taken for its first changed
    /// code line, and then (the first fix) a continued product `* b;` for a comment.
    #[test]
    fn comments_are_read_by_the_files_language() {
        assert_eq!(
            comment_mask(&["# note", "*args,", "x = 1  # note"]),
            [true, false, false]
        );
        assert_eq!(jvm_comment_mask(["#include <x>"], false), [false]);
        let java = "// Copyright 2020 Acme\n/**\n * Sums.\n */\nclass A {\n    int f(int a, int b) {\n        return a\n            * b; // product\n    }\n    /* old */ int g() { return \"/*\".length(); }\n    String h() { return \"*/\"; }\n}\n";
        let mask = jvm_comment_mask(java.lines(), false);
        assert_eq!(
            mask,
            [true, true, true, true, false, false, false, false, false, false, false, false]
        );
        // A hunk cut inside a Javadoc block.
        let hunk = [" * @param x the value", " */", "int x = 1;", "  *arr"];
        assert_eq!(
            hunk_jvm_comment_mask(&hunk, false),
            [true, true, false, false]
        );
        // Found by a review of that scan: `*/` in a string, a text block holding `/*`, and
        // Kotlin's nested comments.
        let hunk = ["int limit = 10;", "String glob = \"src/**/*.java\";"];
        assert_eq!(hunk_jvm_comment_mask(&hunk, false), [false, false]);
        let text_block = "String q = \"\"\"\n/* not a comment\n\"\"\";\nint f() { return 1; }\n";
        assert_eq!(
            jvm_comment_mask(text_block.lines(), false),
            [false, false, false, false]
        );
        // A Kotlin raw string ending in a backslash; a hunk that begins inside a text block.
        let raw = "val p = \"\"\"C:\\\"\"\"\nval g = \"\"\"/* glob\"\"\"\nfun f(): Int {\n    return 42\n}\n";
        assert_eq!(jvm_comment_mask(raw.lines(), true), [false; 5]);
        let hunk = [
            "    SELECT /* hint",
            "    \"\"\";",
            "int x = compute();",
            "return x;",
        ];
        assert_eq!(hunk_jvm_comment_mask(&hunk, false), [false; 4]);
        let kotlin = "/* outer\n/* inner */\nstill comment\n*/\nfun f() = 1\n";
        assert_eq!(
            jvm_comment_mask(kotlin.lines(), true),
            [true, true, true, true, false]
        );
        assert_eq!(
            jvm_comment_mask(kotlin.lines(), false),
            [true, true, false, false, false],
            "Java's comments do not nest"
        );
        let patch = "--- a/src/A.java\n+++ b/src/A.java\n@@ -1,3 +1,3 @@\n-// Copyright 2020 Acme\n+// Copyright 2021 Acme\n class A {\n-    int x = 1;\n+    int x = 2;\n";
        let file = &parse_patch(patch).unwrap()[0];
        let lines = code_lines(file, None, None);
        assert_eq!(lines[0].text, "int x = 1;");
        let patch = "--- a/src/A.kt\n+++ b/src/A.kt\n@@ -1,3 +1,3 @@\n fun g(arr: IntArray) = f(\n-    *arr\n+    *arr.copyOf()\n )\n";
        let file = &parse_patch(patch).unwrap()[0];
        assert_eq!(code_lines(file, None, None)[0].text, "*arr");
    }

    #[test]
    fn similarity_is_the_character_diff_ratio() {
        assert!((line_similarity("abcd", "abcd") - 1.0).abs() < 1e-6);
        assert!((line_similarity("abcd", "abxy") - 0.5).abs() < 1e-6);
        assert!(line_similarity("return total", "raise ValueError()") < 0.6);
        // Lines of 256 KB (once 76 s, Ctrl-C unheard) compare by their first 4,096 characters.
        let (a, b) = ("x".repeat(1 << 18), "y".repeat(1 << 18));
        assert!(line_similarity(&a, &b).abs() < 1e-6);
        let c = "é".repeat(MAX_COMPARED_CHARS) + "tail";
        assert!(
            (line_similarity(&c, &("é".repeat(MAX_COMPARED_CHARS) + "other")) - 1.0).abs() < 1e-6
        );
    }

    #[test]
    fn thresholds_decide_correct_approximate_and_failed() {
        let gold = line("a.py", 100, "return price * (1 - discount)");
        let verdict = |p: &CodeLine| match_first_lines(Some(&gold), Some(p)).verdict;
        assert_eq!(
            verdict(&line("a.py", 105, "anything")),
            LineVerdict::Correct
        );
        assert_eq!(verdict(&line("a.py", 95, "x")), LineVerdict::Correct);
        assert_eq!(verdict(&line("a.py", 106, "x = 1")), LineVerdict::Failed);
        assert_eq!(
            verdict(&line("a.py", 110, "return price * (1 - discount / 100)")),
            LineVerdict::Approximate
        );
        assert_eq!(
            verdict(&line("a.py", 111, "return price * (1 - discount / 100)")),
            LineVerdict::Failed
        );
        assert_eq!(
            verdict(&line("b.py", 100, "return price * (1 - discount)")),
            LineVerdict::Failed
        );
        assert_eq!(
            match_first_lines(Some(&gold), None).verdict,
            LineVerdict::Failed
        );
    }

    #[test]
    fn comments_blank_lines_and_docstrings_are_skipped() {
        let patch = "--- a/m.py\n+++ b/m.py\n@@ -1,4 +1,9 @@\n def f(x):\n-    \"\"\"Old doc.\"\"\"\n+    \"\"\"New doc,\n+    over lines.\n+    \"\"\"\n+    # a comment\n+\n+    x = int(x)\n     y = 2\n-    return x\n+    return x + y\n";
        let files = parse_patch(patch).unwrap();
        let lines = code_lines(&files[0], None, None);
        let texts: Vec<_> = lines
            .iter()
            .map(|l| (l.kind, l.line, l.text.as_str()))
            .collect();
        assert_eq!(
            texts,
            [
                (ChangeKind::Added, 3, "x = int(x)"),
                (ChangeKind::Removed, 4, "return x"),
                (ChangeKind::Added, 5, "return x + y")
            ]
        );
    }

    /// Found by a review: a `#` line inside a string that is not a docstring (a shell script
    /// a function writes) was read as a comment, so a patch that edits it changed no code.
    #[test]
    fn a_hash_line_inside_a_string_is_code() {
        let base = "def make_script():\n    script = \"\"\"\n    # set up the environment\n    run\n    \"\"\"\n    # a comment\n    return script\n";
        let patch = "--- a/m.py\n+++ b/m.py\n@@ -2,5 +2,5 @@ def make_script():\n     script = \"\"\"\n-    # set up the environment\n+    # set up the whole environment\n     run\n     \"\"\"\n-    # a comment\n+    # another comment\n";
        let files = parse_patch(patch).unwrap();
        let new = super::super::patch::apply(base, &files[0]).unwrap();
        for (base, new) in [(None, None), (Some(base), Some(new.as_str()))] {
            let texts: Vec<_> = code_lines(&files[0], base, new)
                .into_iter()
                .map(|l| l.text)
                .collect();
            assert_eq!(
                texts,
                ["# set up the environment", "# set up the whole environment"],
                "{base:?}"
            );
        }
        // Found by a review of that change: a `"""` in a comment or a one-line string opened
        // a string, and the `#` lines after it were taken for code.
        let base = "def f():  # the docstring is a \"\"\" block\n    if line.startswith('\"\"\"'):\n        pass\n    # note\n    return 1\n";
        let patch =
            "--- a/m.py\n+++ b/m.py\n@@ -4,2 +4,2 @@\n-    # note\n+    # a note\n     return 1\n";
        let files = parse_patch(patch).unwrap();
        let new = super::super::patch::apply(base, &files[0]).unwrap();
        assert!(code_lines(&files[0], Some(base), Some(&new)).is_empty());
        let lines: Vec<&str> = base.lines().collect();
        assert_eq!(comment_mask(&lines), [false, false, false, true, false]);
        assert_eq!(comment_mask(&["# a \"\"\" b", "# c"]), [true, true]);
    }

    #[test]
    fn the_whole_file_settles_a_hunk_that_starts_inside_a_docstring() {
        let base =
            "def f():\n    \"\"\"Doc\n    more doc\n    old text\n    \"\"\"\n    return 1\n";
        let patch = "--- a/m.py\n+++ b/m.py\n@@ -3,2 +3,2 @@\n     more doc\n-    old text\n+    new text\n";
        let files = parse_patch(patch).unwrap();
        assert_eq!(
            code_lines(&files[0], None, None).len(),
            2,
            "the hunk alone cannot tell"
        );
        let new = super::super::patch::apply(base, &files[0]).unwrap();
        assert!(code_lines(&files[0], Some(base), Some(&new)).is_empty());
    }
}
