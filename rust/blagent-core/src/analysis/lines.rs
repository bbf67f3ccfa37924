//! The line-level check of the BLAgent study: the first changed code line of the generated
//! patch against the gold patch's, by distance and by text similarity.

use serde::{Deserialize, Serialize};

use super::patch::{ChangeKind, FilePatch};

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

/// Similarity of two lines: `similar::TextDiff::from_chars(a, b).ratio()` (2·matches / total
/// characters, 1.0 for two empty strings).
pub fn line_similarity(a: &str, b: &str) -> f32 {
    similar::TextDiff::from_chars(a, b).ratio()
}

/// Whether a line is a comment or blank (so not a code line).
pub fn is_blank_or_comment(text: &str) -> bool {
    let t = text.trim();
    t.is_empty() || t.starts_with('#')
}

/// For each line of a whole file, whether it lies in a docstring: a statement that starts with
/// a triple-quoted string (optionally prefixed `r`, `u`, `b`, …), through the line that closes it.
pub fn docstring_mask<'a>(lines: impl IntoIterator<Item = &'a str>) -> Vec<bool> {
    scan_docstrings(lines, None).0
}

const QUOTES: [&str; 2] = ["\"\"\"", "'''"];

/// [`docstring_mask`] from a given state (`Some(quote)`: inside a docstring opened by `quote`);
/// also returns the state after the last line. Triple-quoted strings that do not start their
/// statement (`x = """…`) are followed too, so that their closing line opens nothing, but their
/// lines are not docstring lines.
fn scan_docstrings<'a>(lines: impl IntoIterator<Item = &'a str>, start: Option<&'static str>) -> (Vec<bool>, Option<&'static str>) {
    let mut open: Option<(&'static str, bool)> = start.map(|q| (q, true));
    let mut mask = Vec::new();
    for line in lines {
        let t = line.trim();
        if let Some((quote, doc)) = open {
            mask.push(doc);
            if t.matches(quote).count() % 2 == 1 {
                open = None;
            }
            continue;
        }
        let Some(quote) = QUOTES.into_iter().filter_map(|q| t.find(q).map(|i| (i, q))).min().map(|(_, q)| q) else {
            mask.push(false);
            continue;
        };
        let body = t.trim_start_matches(['r', 'R', 'u', 'U', 'b', 'B', 'f', 'F']);
        let doc = body.starts_with(quote) && t.len() - body.len() <= 2;
        mask.push(doc);
        if t.matches(quote).count() % 2 == 1 {
            open = Some((quote, doc));
        }
    }
    (mask, open.filter(|(_, doc)| *doc).map(|(q, _)| q))
}

/// The docstring mask of one side of a hunk, which may start inside a docstring. The first
/// triple-quote delimiter decides: alone on its line it opens a docstring after a line ending
/// in `:` and closes one after any other line; at the start of a line it opens one; ending a
/// line of text it closes one. A hunk that starts with a lone delimiter takes the reading that
/// leaves no docstring open at its end.
pub fn hunk_docstring_mask(lines: &[&str]) -> Vec<bool> {
    let first = lines.iter().enumerate().find_map(|(i, l)| QUOTES.into_iter().find(|q| l.contains(q)).map(|q| (i, q)));
    let Some((at, quote)) = first else { return vec![false; lines.len()] };
    let (outside, open_outside) = scan_docstrings(lines.iter().copied(), None);
    let (inside, open_inside) = scan_docstrings(lines.iter().copied(), Some(quote));
    let t = lines[at].trim();
    let previous = lines[..at].iter().rev().map(|l| l.trim()).find(|l| !l.is_empty());
    let body = t.trim_start_matches(['r', 'R', 'u', 'U', 'b', 'B', 'f', 'F']);
    let start_inside = if t == quote {
        previous.map_or(open_outside.is_some() && open_inside.is_none(), |p| !p.ends_with(':'))
    } else if body.starts_with(quote) {
        false
    } else {
        let before = t[..t.find(quote).unwrap_or(0)].trim_end();
        t.ends_with(quote) && !before.ends_with(['=', '(', ',', '[', '{', ':', '+'])
    };
    if start_inside {
        inside
    } else {
        outside
    }
}

/// The code lines a patch changes in one file, in patch order. `base` and `new` are the file
/// before and after the patch when known; they make docstring detection exact, otherwise the
/// hunks' own context is scanned ([`hunk_docstring_mask`]).
pub fn code_lines(file: &FilePatch, base: Option<&str>, new: Option<&str>) -> Vec<CodeLine> {
    let base_mask = base.map(|t| docstring_mask(t.lines()));
    let new_mask = new.map(|t| docstring_mask(t.lines()));
    let mut out = Vec::new();
    for hunk in &file.hunks {
        let old_view: Vec<&str> = hunk.lines.iter().filter(|l| l.change != Some(ChangeKind::Added)).map(|l| l.text.as_str()).collect();
        let new_view: Vec<&str> = hunk.lines.iter().filter(|l| l.change != Some(ChangeKind::Removed)).map(|l| l.text.as_str()).collect();
        let (hunk_old, hunk_new) = (hunk_docstring_mask(&old_view), hunk_docstring_mask(&new_view));
        let (mut oi, mut ni) = (0, 0);
        for line in &hunk.lines {
            let in_doc = match line.change {
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
            if !in_doc && !is_blank_or_comment(&line.text) {
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

fn lookup(mask: Option<&[bool]>, line: usize) -> Option<bool> {
    mask.and_then(|m| m.get(line.checked_sub(1)?).copied())
}

/// Compares the first code lines: same file and within [`EXACT_LINE_DISTANCE`] lines is
/// correct; same file, within [`APPROX_LINE_DISTANCE`] lines and similarity at least
/// [`APPROX_SIMILARITY`] is approximate; anything else fails.
pub fn match_first_lines(gold: Option<&CodeLine>, generated: Option<&CodeLine>) -> LineMatch {
    let mut result = LineMatch { gold: gold.cloned(), generated: generated.cloned(), distance: None, similarity: None, verdict: LineVerdict::Failed };
    let (Some(g), Some(p)) = (gold, generated) else { return result };
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
        CodeLine { path: path.into(), line, new_line: line, kind: ChangeKind::Added, text: text.into() }
    }

    #[test]
    fn similarity_is_the_character_diff_ratio() {
        assert!((line_similarity("abcd", "abcd") - 1.0).abs() < 1e-6);
        assert!((line_similarity("abcd", "abxy") - 0.5).abs() < 1e-6);
        assert!(line_similarity("return total", "raise ValueError()") < 0.6);
    }

    #[test]
    fn thresholds_decide_correct_approximate_and_failed() {
        let gold = line("a.py", 100, "return price * (1 - discount)");
        let verdict = |p: &CodeLine| match_first_lines(Some(&gold), Some(p)).verdict;
        assert_eq!(verdict(&line("a.py", 105, "anything")), LineVerdict::Correct);
        assert_eq!(verdict(&line("a.py", 95, "x")), LineVerdict::Correct);
        assert_eq!(verdict(&line("a.py", 106, "x = 1")), LineVerdict::Failed);
        assert_eq!(verdict(&line("a.py", 110, "return price * (1 - discount / 100)")), LineVerdict::Approximate);
        assert_eq!(verdict(&line("a.py", 111, "return price * (1 - discount / 100)")), LineVerdict::Failed);
        assert_eq!(verdict(&line("b.py", 100, "return price * (1 - discount)")), LineVerdict::Failed);
        assert_eq!(match_first_lines(Some(&gold), None).verdict, LineVerdict::Failed);
    }

    #[test]
    fn comments_blank_lines_and_docstrings_are_skipped() {
        let patch = "--- a/m.py\n+++ b/m.py\n@@ -1,4 +1,9 @@\n def f(x):\n-    \"\"\"Old doc.\"\"\"\n+    \"\"\"New doc,\n+    over lines.\n+    \"\"\"\n+    # a comment\n+\n+    x = int(x)\n     y = 2\n-    return x\n+    return x + y\n";
        let files = parse_patch(patch).unwrap();
        let lines = code_lines(&files[0], None, None);
        let texts: Vec<_> = lines.iter().map(|l| (l.kind, l.line, l.text.as_str())).collect();
        assert_eq!(
            texts,
            [(ChangeKind::Added, 3, "x = int(x)"), (ChangeKind::Removed, 4, "return x"), (ChangeKind::Added, 5, "return x + y")]
        );
    }

    #[test]
    fn the_whole_file_settles_a_hunk_that_starts_inside_a_docstring() {
        let base = "def f():\n    \"\"\"Doc\n    more doc\n    old text\n    \"\"\"\n    return 1\n";
        let patch = "--- a/m.py\n+++ b/m.py\n@@ -3,2 +3,2 @@\n     more doc\n-    old text\n+    new text\n";
        let files = parse_patch(patch).unwrap();
        assert_eq!(code_lines(&files[0], None, None).len(), 2, "the hunk alone cannot tell");
        let new = super::super::patch::apply(base, &files[0]).unwrap();
        assert!(code_lines(&files[0], Some(base), Some(&new)).is_empty());
    }

    #[test]
    fn a_hunk_starting_inside_a_docstring_is_recognized() {
        let hunk = ["        parse the arguments.", "        \"\"\"", "        kwargs.setdefault(1)", "        parser = Parser("];
        assert_eq!(hunk_docstring_mask(&hunk), [true, true, false, false]);
        let opening = ["    def f(self):", "        \"\"\"Doc.", "        more\"\"\"", "        return 1"];
        assert_eq!(hunk_docstring_mask(&opening), [false, true, true, false]);
        let one_liners = ["    \"\"\"One.\"\"\"", "    x = 1", "    '''Two.'''"];
        assert_eq!(hunk_docstring_mask(&one_liners), [true, false, true]);
        assert_eq!(hunk_docstring_mask(&["x = 1"]), [false]);
        let next_docstring = ["            setattr(cls, name)", "", "    def get(self, obj):", "        \"\"\""];
        assert_eq!(hunk_docstring_mask(&next_docstring), [false, false, false, true]);
        let closer = ["        more text.\"\"\"", "        return 1"];
        assert_eq!(hunk_docstring_mask(&closer), [true, false]);
        let assignment = ["    x = \"\"\"", "    text", "    \"\"\"", "    y = 2"];
        assert_eq!(hunk_docstring_mask(&assignment), [false, false, false, false]);
    }

    #[test]
    fn docstring_mask_handles_prefixes_and_one_line_docstrings() {
        let mask = docstring_mask(["r'''raw", "body'''", "x = 1", "\"\"\"One.\"\"\"", "y = '''not a docstring", "z'''", "w = 1"]);
        assert_eq!(mask, [true, true, false, true, false, false, false]);
    }
}
