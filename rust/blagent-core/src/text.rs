//! Cutting text without splitting a character: by bytes, or by characters with a mark.

/// The longest start of `text` of at most `max` bytes that ends at a character boundary (all
/// of `text` when it is no longer).
pub(crate) fn head(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    &text[..cut]
}

/// The first `max` characters of `chars`, `…` marking a cut: for quoting a text of any length
/// in a message or a result.
pub(crate) fn cut_chars(mut chars: impl Iterator<Item = char>, max: usize) -> String {
    let mut shown: String = chars.by_ref().take(max).collect();
    if chars.next().is_some() {
        shown.push('…');
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::{cut_chars, head};

    #[test]
    fn cuts_mark_what_they_leave_out() {
        assert_eq!(cut_chars("naïve".chars(), 3), "naï…");
        assert_eq!(cut_chars("naïve".chars(), 5), "naïve");
        assert_eq!(cut_chars("".chars(), 0), "");
        assert_eq!(cut_chars("a".chars(), 0), "…");
    }

    #[test]
    fn heads_end_at_character_boundaries() {
        assert_eq!(head("naïve", 3), "na");
        assert_eq!(head("naïve", 4), "naï");
        assert_eq!(head("abc", 10), "abc");
        assert_eq!(head("é", 1), "");
        assert_eq!(head("", 0), "");
    }
}
