//! A braces language's file cut at its top-level declarations, so that a file with a syntax
//! error can be read one declaration at a time. tree-sitter's recovery from an error can take
//! what follows with it: in nowinandroid's `Button.kt`, an `if … else` argument the Kotlin
//! grammar cannot read left the rest of the file a run of stray tokens, a `/**` among them read
//! as a division, and three functions and an object were lost.
//!
//! A declaration starts a segment where its header (the language's
//! [`Language::header_pattern`]) begins a line at column 0, outside comments and multi-line
//! strings; the segment takes in the annotations and comments right above it.

use std::ops::Range;

use regex::Regex;

/// The segments of `text`: byte ranges that together cover it, each starting at a line's start,
/// with the 0-based row it starts on. The first holds what precedes the first declaration (the
/// package and imports); each other one a top-level declaration with its leading annotations
/// and comments. A single segment where no declaration starts at column 0 after the first.
pub(super) fn top_level_segments(text: &str, header: &Regex) -> Vec<(Range<usize>, usize)> {
    let lines = lines_in_code(text);
    let line_text = |row: usize| {
        let (start, _) = lines[row];
        let end = lines.get(row + 1).map_or(text.len(), |&(next, _)| next);
        text[start..end].trim_end_matches(['\n', '\r'])
    };
    let declares = |row: usize| {
        let (_, in_code) = lines[row];
        let line = line_text(row);
        in_code && !line.starts_with(char::is_whitespace) && header.is_match(line)
    };
    let mut starts: Vec<usize> = Vec::new();
    for row in (0..lines.len()).filter(|&row| declares(row)) {
        let floor = starts.last().map_or(0, |&previous| previous + 1);
        let mut start = row;
        // Take in the annotations and comments right above, up to a blank line or the line of
        // another declaration.
        while start > floor {
            let above = start - 1;
            let line = line_text(above);
            let (_, in_code) = lines[above];
            if line.trim().is_empty() || declares(above) {
                break;
            }
            if in_code && (line.starts_with('@') || line.starts_with("//")) {
                start = above;
            } else if in_code && [")", "})", "]"].iter().any(|end| line.starts_with(end)) {
                // The last line of a multi-line annotation's arguments: back to its `@`, over
                // indented lines only.
                let opening = (floor..above).rev().find(|&row| {
                    let text = line_text(row);
                    text.trim().is_empty() || !text.starts_with(char::is_whitespace)
                });
                match opening {
                    Some(row) if lines[row].1 && line_text(row).starts_with('@') => start = row,
                    _ => break,
                }
            } else if line.trim_end().ends_with("*/") {
                // A block comment ending right above: back to the line it opens on.
                let mut opening = above;
                while opening > floor && !lines[opening].1 {
                    opening -= 1;
                }
                if !lines[opening].1 || !line_text(opening).trim_start().starts_with("/*") {
                    break;
                }
                start = opening;
            } else {
                break;
            }
        }
        starts.push(start);
    }
    if starts.first() != Some(&0) {
        starts.insert(0, 0);
    }
    starts
        .iter()
        .enumerate()
        .map(|(i, &row)| {
            let end = starts.get(i + 1).map_or(text.len(), |&next| lines[next].0);
            (lines[row].0..end, row)
        })
        .collect()
}

/// Each line's first byte, and whether the line starts in code rather than inside a block
/// comment or a multi-line string (`"""`; a `"…"` or `'…'` literal ends with its line).
fn lines_in_code(text: &str) -> Vec<(usize, bool)> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Code,
        Comment,
        RawString,
    }
    let bytes = text.as_bytes();
    let mut lines = vec![(0, true)];
    let mut state = State::Code;
    let mut at = 0;
    // Skips a `"…"` or `'…'` literal opened at `from`, to its closing quote or its line's end.
    let literal_end = |from: usize, quote: u8| {
        let mut at = from + 1;
        while at < bytes.len() && bytes[at] != b'\n' {
            match bytes[at] {
                b'\\' => at += 2,
                byte if byte == quote => return at + 1,
                _ => at += 1,
            }
        }
        at.min(bytes.len())
    };
    while at < bytes.len() {
        let rest = &bytes[at..];
        match (state, rest[0]) {
            (_, b'\n') => {
                at += 1;
                lines.push((at, state == State::Code));
            }
            (State::Code, b'/') if rest.starts_with(b"//") => {
                at += rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            }
            (State::Code, b'/') if rest.starts_with(b"/*") => {
                state = State::Comment;
                at += 2;
            }
            (State::Code, b'"') if rest.starts_with(b"\"\"\"") => {
                state = State::RawString;
                at += 3;
            }
            (State::Code, quote @ (b'"' | b'\'')) => at = literal_end(at, quote),
            (State::Comment, b'*') if rest.starts_with(b"*/") => {
                state = State::Code;
                at += 2;
            }
            (State::RawString, b'"') if rest.starts_with(b"\"\"\"") => {
                // A raw string may end in more quotes than three (`""""`): they are its own.
                state = State::Code;
                at += rest.iter().take_while(|&&b| b == b'"').count();
            }
            _ => at += 1,
        }
    }
    if text.ends_with('\n') {
        // No line starts after the final newline.
        lines.pop();
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Regex {
        Regex::new(
            crate::repo::language_for_path("a.kt")
                .expect("Kotlin")
                .header_pattern,
        )
        .expect("valid pattern")
    }

    /// Each segment's first row and first line.
    fn segments(text: &str) -> Vec<(usize, &str)> {
        top_level_segments(text, &header())
            .into_iter()
            .map(|(range, row)| (row, text[range].lines().next().unwrap_or("")))
            .collect()
    }

    #[test]
    fn a_declaration_takes_its_annotations_and_comments_along() {
        let text = "package p\n\nimport a.B\n\n/**\n * Doc.\n */\n@Composable\nfun A() {\n    fun local() {}\n}\n\n// note\nprivate class B {\nfun misplaced() {}\n}\n@Ann fun C() = 1\n@Other\nobject D\n";
        assert_eq!(
            segments(text),
            [
                (0, "package p"),
                (4, "/**"),
                (12, "// note"),
                // A member at column 0 starts a segment too (its file had to fail to be cut).
                (14, "fun misplaced() {}"),
                (16, "@Ann fun C() = 1"),
                (17, "@Other"),
            ]
        );
        // The segments cover the text, in order.
        let cut = top_level_segments(text, &header());
        assert_eq!(cut.first().map(|(r, _)| r.start), Some(0));
        assert_eq!(cut.last().map(|(r, _)| r.end), Some(text.len()));
        assert!(cut.windows(2).all(|pair| pair[0].0.end == pair[1].0.start));
    }

    /// From a review: an annotation whose arguments run over several lines stayed in the
    /// segment before its declaration.
    #[test]
    fn a_multi_line_annotation_goes_with_its_declaration() {
        let text = "fun a() = 1\n\n/** Doc. */\n@Suppress(\n    \"x\",\n)\nfun f() = 1\n@SuppressWarnings({\n    \"unchecked\"\n})\nclass C\n)\nfun g() = 2\n";
        assert_eq!(
            segments(text),
            [
                (0, "fun a() = 1"),
                (2, "/** Doc. */"),
                (7, "@SuppressWarnings({"),
                (12, "fun g() = 2")
            ]
        );
    }

    #[test]
    fn headers_inside_comments_and_strings_start_nothing() {
        let text = "fun a() {\n    val code = \"\"\"\nfun inString() {}\n\"\"\"\n    val s = \"\\\"\\\"\\\"\"\n}\n/* a comment\nclass InComment\n*/\nval x = '\"'\nclass Real\n";
        assert_eq!(segments(text), [(0, "fun a() {"), (10, "class Real")]);
    }

    #[test]
    fn a_file_without_declarations_is_one_segment() {
        assert_eq!(segments("println(1)\n"), [(0, "println(1)")]);
        assert_eq!(segments(""), [(0, "")]);
        assert_eq!(top_level_segments("", &header()), [(0..0, 0)]);
    }
}
