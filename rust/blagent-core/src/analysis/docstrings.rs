//! Which lines are docstring lines: a statement that starts with a triple-quoted string, through
//! the line that closes it. Exact over a whole file; over a hunk, which may start inside a
//! docstring, the first delimiter tells which reading holds.

/// For each line of a whole file, whether it lies in a docstring: a statement that starts with
/// a triple-quoted string (optionally prefixed `r`, `u`, `b`, …), through the line that closes it.
pub fn docstring_mask<'a>(lines: impl IntoIterator<Item = &'a str>) -> Vec<bool> {
    scan_docstrings(lines, None).0
}

/// For each line of a whole file, whether it is not code: a docstring line, or a `#` comment
/// line that does not continue a triple-quoted string (in `x = """…` a `#` line is text).
pub fn comment_mask(lines: &[&str]) -> Vec<bool> {
    let (doc, _, continued) = scan_docstrings(lines.iter().copied(), None);
    not_code(lines, &doc, &continued)
}

/// [`comment_mask`] of one side of a hunk, its docstrings read as [`hunk_docstring_mask`] reads
/// them.
pub fn hunk_comment_mask(lines: &[&str]) -> Vec<bool> {
    let (doc, continued) = hunk_scan(lines);
    not_code(lines, &doc, &continued)
}

fn not_code(lines: &[&str], doc: &[bool], continued: &[bool]) -> Vec<bool> {
    lines
        .iter()
        .zip(doc.iter().zip(continued))
        .map(|(line, (&doc, &continued))| doc || (!continued && line.trim().starts_with('#')))
        .collect()
}

const QUOTES: [&str; 2] = ["\"\"\"", "'''"];

/// [`docstring_mask`] from a given state (`Some(quote)`: inside a docstring opened by `quote`);
/// also returns the state after the last line, and for each line whether it begins inside a
/// triple-quoted string opened above. Triple-quoted strings that do not start their statement
/// (`x = """…`) are followed too, so that their closing line opens nothing, but their lines are
/// not docstring lines.
fn scan_docstrings<'a>(
    lines: impl IntoIterator<Item = &'a str>,
    start: Option<&'static str>,
) -> (Vec<bool>, Option<&'static str>, Vec<bool>) {
    let mut open: Option<(&'static str, bool)> = start.map(|q| (q, true));
    let mut mask = Vec::new();
    let mut continued = Vec::new();
    for line in lines {
        let t = line.trim();
        continued.push(open.is_some());
        if let Some((quote, doc)) = open {
            mask.push(doc);
            if t.matches(quote).count() % 2 == 1 {
                open = None;
            }
            continue;
        }
        let Some(quote) = QUOTES
            .into_iter()
            .filter_map(|q| t.find(q).map(|i| (i, q)))
            .min()
            .map(|(_, q)| q)
        else {
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
    (
        mask,
        open.filter(|(_, doc)| *doc).map(|(q, _)| q),
        continued,
    )
}

/// The docstring mask of one side of a hunk, which may start inside a docstring. The first
/// triple-quote delimiter decides: alone on its line it opens a docstring after a line ending
/// in `:` and closes one after any other line; at the start of a line it opens one; ending a
/// line of text it closes one. A hunk that starts with a lone delimiter takes the reading that
/// leaves no docstring open at its end.
pub fn hunk_docstring_mask(lines: &[&str]) -> Vec<bool> {
    hunk_scan(lines).0
}

/// [`hunk_docstring_mask`], and for each line whether it begins inside a triple-quoted string
/// opened above, in the reading it chose.
fn hunk_scan(lines: &[&str]) -> (Vec<bool>, Vec<bool>) {
    let first = lines
        .iter()
        .enumerate()
        .find_map(|(i, l)| QUOTES.into_iter().find(|q| l.contains(q)).map(|q| (i, q)));
    let Some((at, quote)) = first else {
        return (vec![false; lines.len()], vec![false; lines.len()]);
    };
    let (outside, open_outside, outside_continued) = scan_docstrings(lines.iter().copied(), None);
    let (inside, open_inside, inside_continued) =
        scan_docstrings(lines.iter().copied(), Some(quote));
    let t = lines[at].trim();
    let previous = lines[..at]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| !l.is_empty());
    let body = t.trim_start_matches(['r', 'R', 'u', 'U', 'b', 'B', 'f', 'F']);
    let start_inside = if t == quote {
        previous.map_or(open_outside.is_some() && open_inside.is_none(), |p| {
            !p.ends_with(':')
        })
    } else if body.starts_with(quote) {
        false
    } else {
        let before = t[..t.find(quote).unwrap_or(0)].trim_end();
        t.ends_with(quote) && !before.ends_with(['=', '(', ',', '[', '{', ':', '+'])
    };
    if start_inside {
        (inside, inside_continued)
    } else {
        (outside, outside_continued)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hunk_starting_inside_a_docstring_is_recognized() {
        let hunk = [
            "        parse the arguments.",
            "        \"\"\"",
            "        kwargs.setdefault(1)",
            "        parser = Parser(",
        ];
        assert_eq!(hunk_docstring_mask(&hunk), [true, true, false, false]);
        let opening = [
            "    def f(self):",
            "        \"\"\"Doc.",
            "        more\"\"\"",
            "        return 1",
        ];
        assert_eq!(hunk_docstring_mask(&opening), [false, true, true, false]);
        let one_liners = ["    \"\"\"One.\"\"\"", "    x = 1", "    '''Two.'''"];
        assert_eq!(hunk_docstring_mask(&one_liners), [true, false, true]);
        assert_eq!(hunk_docstring_mask(&["x = 1"]), [false]);
        let next_docstring = [
            "            setattr(cls, name)",
            "",
            "    def get(self, obj):",
            "        \"\"\"",
        ];
        assert_eq!(
            hunk_docstring_mask(&next_docstring),
            [false, false, false, true]
        );
        let closer = ["        more text.\"\"\"", "        return 1"];
        assert_eq!(hunk_docstring_mask(&closer), [true, false]);
        let assignment = ["    x = \"\"\"", "    text", "    \"\"\"", "    y = 2"];
        assert_eq!(
            hunk_docstring_mask(&assignment),
            [false, false, false, false]
        );
    }

    #[test]
    fn docstring_mask_handles_prefixes_and_one_line_docstrings() {
        let mask = docstring_mask([
            "r'''raw",
            "body'''",
            "x = 1",
            "\"\"\"One.\"\"\"",
            "y = '''not a docstring",
            "z'''",
            "w = 1",
        ]);
        assert_eq!(mask, [true, true, false, true, false, false, false]);
    }
}
