//! Which lines are docstring lines: a statement that starts with a triple-quoted string, through
//! the line that closes it. Exact over a whole file; over a hunk, which may start inside a
//! docstring, the first delimiter tells which reading holds.

/// For each line of a whole file, whether it lies in a docstring: a statement that starts with
/// a triple-quoted string (optionally prefixed `r`, `u`, `b`, …), through the line that closes it.
pub fn docstring_mask<'a>(lines: impl IntoIterator<Item = &'a str>) -> Vec<bool> {
    scan_docstrings(lines, None).docstring
}

/// For each line of a whole file, whether it is not code: a docstring line, or a `#` comment
/// line that does not continue a string value (in `x = """…` a `#` line is text).
pub fn comment_mask(lines: &[&str]) -> Vec<bool> {
    scan_docstrings(lines.iter().copied(), None).not_code(lines)
}

/// [`comment_mask`] of one side of a hunk, its docstrings read as [`hunk_docstring_mask`] reads
/// them.
pub fn hunk_comment_mask(lines: &[&str]) -> Vec<bool> {
    hunk_scan(lines).not_code(lines)
}

const QUOTES: [&str; 2] = ["\"\"\"", "'''"];

/// String prefixes (`r"""`, `b'''`, `f"""`).
const PREFIXES: [char; 8] = ['r', 'R', 'u', 'U', 'b', 'B', 'f', 'F'];

/// What [`scan_docstrings`] finds, line by line.
struct Scan {
    /// Whether each line lies in a docstring.
    docstring: Vec<bool>,
    /// Whether each line begins inside a string value opened on a line above (`x = """`,
    /// `f("""`), where a `#` line is text, not a comment.
    in_value: Vec<bool>,
    /// The quote of the docstring still open after the last line.
    open: Option<&'static str>,
}

impl Scan {
    fn not_code(&self, lines: &[&str]) -> Vec<bool> {
        lines
            .iter()
            .zip(self.docstring.iter().zip(&self.in_value))
            .map(|(line, (&doc, &value))| doc || (!value && line.trim().starts_with('#')))
            .collect()
    }
}

/// What a triple-quoted string opened on a line is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Opened {
    /// It starts its statement.
    Docstring,
    /// It follows `=`, `(`, `,`, `return`, …: a value, whose lines are text.
    Value,
    /// Anything else (a quote inside a one-line string such as `'"""'`): followed only so that
    /// its closing line opens nothing.
    Other,
}

/// [`docstring_mask`] from a given state (`Some(quote)`: inside a docstring opened by `quote`),
/// with the state after the last line and which lines continue a string value. Triple-quoted
/// strings that do not start their statement (`x = """…`) are followed too, so that their
/// closing line opens nothing, but their lines are not docstring lines. A `#` comment line
/// opens nothing (`# a """ block`).
fn scan_docstrings<'a>(
    lines: impl IntoIterator<Item = &'a str>,
    start: Option<&'static str>,
) -> Scan {
    let mut open: Option<(&'static str, Opened)> = start.map(|q| (q, Opened::Docstring));
    let mut scan = Scan {
        docstring: Vec::new(),
        in_value: Vec::new(),
        open: None,
    };
    for line in lines {
        let t = line.trim();
        scan.in_value.push(matches!(open, Some((_, Opened::Value))));
        if let Some((quote, opened)) = open {
            scan.docstring.push(opened == Opened::Docstring);
            if t.matches(quote).count() % 2 == 1 {
                open = None;
            }
            continue;
        }
        let first = QUOTES
            .into_iter()
            .filter_map(|q| t.find(q).map(|i| (i, q)))
            .min();
        let Some((at, quote)) = first.filter(|_| !t.starts_with('#')) else {
            scan.docstring.push(false);
            continue;
        };
        let body = t.trim_start_matches(PREFIXES);
        let doc = body.starts_with(quote) && t.len() - body.len() <= 2;
        scan.docstring.push(doc);
        if t.matches(quote).count() % 2 == 1 {
            let before = t[..at].trim_end_matches(PREFIXES).trim_end();
            let value = before.ends_with(['=', '(', ',', '[', '{', ':', '+', '%'])
                || before.ends_with("return")
                || before.ends_with("yield");
            let opened = match (doc, value) {
                (true, _) => Opened::Docstring,
                (false, true) => Opened::Value,
                (false, false) => Opened::Other,
            };
            open = Some((quote, opened));
        }
    }
    scan.open = open
        .filter(|(_, opened)| *opened == Opened::Docstring)
        .map(|(q, _)| q);
    scan
}

/// The docstring mask of one side of a hunk, which may start inside a docstring. The first
/// triple-quote delimiter decides: alone on its line it opens a docstring after a line ending
/// in `:` and closes one after any other line; at the start of a line it opens one; ending a
/// line of text it closes one. A hunk that starts with a lone delimiter takes the reading that
/// leaves no docstring open at its end.
pub fn hunk_docstring_mask(lines: &[&str]) -> Vec<bool> {
    hunk_scan(lines).docstring
}

/// [`hunk_docstring_mask`]'s reading of a hunk, whole.
fn hunk_scan(lines: &[&str]) -> Scan {
    let first = lines
        .iter()
        .enumerate()
        .find_map(|(i, l)| QUOTES.into_iter().find(|q| l.contains(q)).map(|q| (i, q)));
    let Some((at, quote)) = first else {
        return Scan {
            docstring: vec![false; lines.len()],
            in_value: vec![false; lines.len()],
            open: None,
        };
    };
    let outside = scan_docstrings(lines.iter().copied(), None);
    let inside = scan_docstrings(lines.iter().copied(), Some(quote));
    let t = lines[at].trim();
    let previous = lines[..at]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| !l.is_empty());
    let body = t.trim_start_matches(PREFIXES);
    let start_inside = if t == quote {
        previous.map_or(outside.open.is_some() && inside.open.is_none(), |p| {
            !p.ends_with(':')
        })
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
