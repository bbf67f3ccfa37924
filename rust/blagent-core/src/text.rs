//! Cutting text by bytes without splitting a character.

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

#[cfg(test)]
mod tests {
    use super::head;

    #[test]
    fn heads_end_at_character_boundaries() {
        assert_eq!(head("naïve", 3), "na");
        assert_eq!(head("naïve", 4), "naï");
        assert_eq!(head("abc", 10), "abc");
        assert_eq!(head("é", 1), "");
        assert_eq!(head("", 0), "");
    }
}
