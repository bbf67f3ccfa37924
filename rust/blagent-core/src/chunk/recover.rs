//! The text of a brace language read without its tree, for the regions tree-sitter could not
//! parse: where each `{` closes, where a definition's header ends and its body starts, and
//! which bytes are code (not strings or comments). One pass over the file, then lookups by
//! binary search, so recovery stays linear in the file's size however many regions it has.

/// The code punctuation of a file, in order, with each brace's partner.
pub(super) struct Braces {
    /// Byte offset and byte of each `{ } ( ) ; =` and line break outside strings and comments
    /// (`=` only alone: not `==`, `<=`, `+=`, `=>`).
    tokens: Vec<(usize, u8)>,
    /// For each token, the index of its matching brace (`{` ↔ `}`), if it is a matched brace.
    partner: Vec<Option<usize>>,
    /// The byte ranges of strings and comments, in order, not overlapping.
    not_code: Vec<(usize, usize)>,
}

/// Where a recovered definition's header leads.
pub(super) struct Extent {
    /// One past its last byte: its body's closing `}`, the end of its expression body, or the
    /// end of its header.
    pub end: usize,
}

/// What the lexer is inside of, innermost last; plain code has nothing open.
enum Open {
    /// A string literal (`"…"`, or raw `"""…"""`).
    Str { raw: bool },
    /// A template's code (`${…}`) in a string, with the braces opened in it so far.
    Template { braces: usize },
}

impl Braces {
    /// Reads `source`. `templates`: strings hold code in `${…}` (Kotlin).
    pub(super) fn new(source: &str, templates: bool) -> Self {
        let b = source.as_bytes();
        let mut tokens = Vec::new();
        let mut not_code = Vec::new();
        let mut open: Vec<Open> = Vec::new();
        // Where the outermost string or comment being read began.
        let mut outer_start = 0;
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if let Some(Open::Str { raw }) = open.last() {
                let raw = *raw;
                if raw && b[i..].starts_with(b"\"\"\"") {
                    i += 3;
                    while b.get(i) == Some(&b'"') {
                        i += 1;
                    }
                    open.pop();
                } else if !raw && (c == b'"' || c == b'\n') {
                    // A line break ends an unterminated one-line string.
                    i += usize::from(c == b'"');
                    open.pop();
                } else if !raw && c == b'\\' {
                    i += 2;
                    continue;
                } else if templates && b[i..].starts_with(b"${") {
                    i += 2;
                    open.push(Open::Template { braces: 0 });
                    continue;
                } else {
                    i += 1;
                    continue;
                }
                if open.is_empty() {
                    not_code.push((outer_start, i.min(b.len())));
                }
                continue;
            }
            let top_level = open.is_empty();
            match c {
                b'/' if b.get(i + 1) == Some(&b'/') => {
                    let end = b[i..]
                        .iter()
                        .position(|&c| c == b'\n')
                        .map_or(b.len(), |n| i + n);
                    if top_level {
                        not_code.push((i, end));
                    }
                    i = end;
                    continue;
                }
                b'/' if b.get(i + 1) == Some(&b'*') => {
                    let end = find(b, i + 2, b"*/").map_or(b.len(), |at| at + 2);
                    if top_level {
                        not_code.push((i, end));
                    }
                    i = end;
                    continue;
                }
                b'"' => {
                    outer_start = if top_level { i } else { outer_start };
                    let raw = b[i..].starts_with(b"\"\"\"");
                    i += if raw { 3 } else { 1 };
                    open.push(Open::Str { raw });
                    continue;
                }
                b'\'' => {
                    // A character literal (`'{'`, `'\''`, `'\u007B'`): its closing quote is a
                    // few bytes on, on the same line; a lone `'` is skipped.
                    let from = i + if b.get(i + 1) == Some(&b'\\') { 3 } else { 2 };
                    let close = (from..(i + 10).min(b.len()))
                        .take_while(|&j| b[j] != b'\n')
                        .find(|&j| b[j] == b'\'');
                    i = close.map_or(i + 1, |j| j + 1);
                    continue;
                }
                b'{' => {
                    if let Some(Open::Template { braces }) = open.last_mut() {
                        *braces += 1;
                    }
                    tokens.push((i, c));
                }
                b'}' => match open.last_mut() {
                    Some(Open::Template { braces: 0 }) => {
                        open.pop();
                    }
                    Some(Open::Template { braces }) => {
                        *braces -= 1;
                        tokens.push((i, c));
                    }
                    _ => tokens.push((i, c)),
                },
                b'(' | b')' | b';' | b'\n' => tokens.push((i, c)),
                b'=' => {
                    let before = i.checked_sub(1).map(|j| b[j]);
                    let joined = matches!(
                        before,
                        Some(
                            b'=' | b'!'
                                | b'<'
                                | b'>'
                                | b'+'
                                | b'-'
                                | b'*'
                                | b'/'
                                | b'%'
                                | b'&'
                                | b'|'
                                | b'^'
                        )
                    ) || matches!(b.get(i + 1), Some(b'=' | b'>'));
                    if !joined {
                        tokens.push((i, c));
                    }
                }
                _ => {}
            }
            i += 1;
        }
        if !open.is_empty() {
            not_code.push((outer_start, b.len()));
        }
        let mut partner = vec![None; tokens.len()];
        let mut unclosed = Vec::new();
        for (k, &(_, c)) in tokens.iter().enumerate() {
            match c {
                b'{' => unclosed.push(k),
                b'}' => {
                    if let Some(o) = unclosed.pop() {
                        partner[o] = Some(k);
                        partner[k] = Some(o);
                    }
                }
                _ => {}
            }
        }
        Braces {
            tokens,
            partner,
            not_code,
        }
    }

    /// Where the `{` at byte `open` closes: the byte of its partner `}`, if it has one.
    pub(super) fn closing(&self, open: usize) -> Option<usize> {
        let k = self.tokens.partition_point(|&(at, _)| at < open);
        match self.tokens.get(k) {
            Some(&(at, b'{')) if at == open => self.partner[k].map(|close| self.tokens[close].0),
            _ => None,
        }
    }

    /// Whether the byte at `at` is code, not inside a string or a comment.
    pub(super) fn is_code(&self, at: usize) -> bool {
        let i = self.not_code.partition_point(|&(start, _)| start <= at);
        i == 0 || self.not_code[i - 1].1 <= at
    }

    /// Where the definition whose header's name ends at `from` ends, reading no further than
    /// `bound` for its body: after its parameters (parentheses skipped whole), a `{` opens a
    /// body that ends at its partner (or at `bound` when the file never closes it); a
    /// function's `=` opens an expression body that ends with the first line break outside
    /// brackets once the expression has begun; `;`, `}` or, for a class, `=` end the header.
    /// A line break ends the header unless the next line goes on with it
    /// ([`header_goes_on`]).
    pub(super) fn extent(&self, source: &str, from: usize, bound: usize, function: bool) -> Extent {
        let mut k = self.tokens.partition_point(|&(at, _)| at < from);
        let mut parens = 0usize;
        let mut end = from;
        while let Some(&(at, c)) = self.tokens.get(k).filter(|(at, _)| *at < bound) {
            match c {
                b'(' => parens += 1,
                b')' => parens = parens.saturating_sub(1),
                b'{' if parens > 0 => match self.partner[k] {
                    Some(close) => k = close,
                    None => break,
                },
                b'{' => {
                    let close = self.partner[k].map_or(bound, |close| self.tokens[close].0 + 1);
                    return Extent { end: close };
                }
                b'=' if parens == 0 && function => {
                    return Extent {
                        end: self.expression_end(source, k, bound),
                    };
                }
                b'\n'
                    if parens == 0
                        && !header_goes_on(&source[..at], &source[at + 1..], function) =>
                {
                    break
                }
                b'\n' => {
                    k += 1;
                    continue;
                }
                b'=' | b';' | b'}' if parens == 0 => break,
                _ => {}
            }
            end = self.tokens[k].0 + 1;
            k += 1;
        }
        Extent { end }
    }

    /// The end of the expression body whose `=` is token `k`: the first line break outside
    /// brackets after some code, braces jumped over whole.
    fn expression_end(&self, source: &str, k: usize, bound: usize) -> usize {
        let mut parens = 0usize;
        // The end of the code read so far: where a line break is looked back from.
        let mut read = self.tokens[k].0 + 1;
        let mut begun = false;
        let mut k = k + 1;
        while let Some(&(at, c)) = self.tokens.get(k).filter(|(at, _)| *at < bound) {
            match c {
                b'\n' => {
                    begun |= !source[read..at].trim().is_empty();
                    if begun && parens == 0 {
                        return at;
                    }
                    read = at;
                }
                b'(' => parens += 1,
                b')' => parens = parens.saturating_sub(1),
                b'{' => match self.partner[k] {
                    Some(close) => k = close,
                    None => return bound,
                },
                b';' | b'}' if parens == 0 => return at,
                _ => {}
            }
            if c != b'\n' {
                begun = true;
                read = self.tokens[k].0 + 1;
            }
            k += 1;
        }
        bound.max(read).min(source.len())
    }
}

/// Whether a header goes on over a line break outside parentheses, `before` and `next` being
/// the text before and after it: the line ends with `,` or `:`, or the next one goes on with
/// its body or return type (`{`, `=`, `:`), a `where` clause, or, for a class, its
/// constructor and supertypes (`internal actual constructor(`, `@Inject constructor(`,
/// `extends`, `implements`, `,`).
fn header_goes_on(before: &str, next: &str, function: bool) -> bool {
    if before.trim_end().ends_with([',', ':']) {
        return true;
    }
    let next = next.trim_start();
    let word = next
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .unwrap_or_default();
    let goes_on = next.starts_with(['{', '=', ':']) || word == "where";
    goes_on
        || !function
            && (next.starts_with(['(', ',', '@'])
                || matches!(
                    word,
                    "constructor"
                        | "internal"
                        | "private"
                        | "protected"
                        | "public"
                        | "actual"
                        | "expect"
                        | "extends"
                        | "implements"
                        | "permits"
                ))
}

/// The first occurrence of `needle` in `b` at or after `from`.
fn find(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    b.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|at| from + at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn braces_in_strings_comments_and_characters_are_not_code() {
        let source = "class A {\n  val s = \"}{ ${ f { 1 } } \"\n  // }\n  /* } */ val c = '}'\n  val r = \"\"\"\n}\n\"\"\"\n}\nfun g() {}\n";
        let braces = Braces::new(source, true);
        let open = source.find('{').unwrap();
        let extent = braces.extent(source, open - 1, source.len(), false);
        assert_eq!(
            &source[..extent.end],
            &source[..=source.find("}\nfun").unwrap()]
        );
        assert!(!braces.is_code(source.find("// }").unwrap()));
        assert!(braces.is_code(source.find("fun g").unwrap()));
    }

    #[test]
    fn headers_end_at_their_body_or_expression() {
        let source = "fun a() = g(\n  1)\nfun b(): Int\nval x = 1\nclass C\ninternal constructor(\n  val d: Int,\n) {\n}\n";
        let braces = Braces::new(source, true);
        let end_of = |header: &str, function: bool| {
            let from = source.find(header).unwrap() + header.len();
            let end = braces.extent(source, from, source.len(), function).end;
            source[..end].lines().count()
        };
        assert_eq!(
            end_of("fun a", true),
            2,
            "the expression goes on in its parentheses"
        );
        assert_eq!(
            end_of("fun b", true),
            3,
            "no body: the property after is not its"
        );
        assert_eq!(
            end_of("class C", false),
            9,
            "the constructor on the next line leads on"
        );
    }
}
