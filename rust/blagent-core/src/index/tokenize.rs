//! A code-aware tokenizer: identifiers are split at `_`, `.` and camelCase boundaries, and the
//! whole identifier is kept too, so `QuerySet.bulk_create` matches `bulk_create`, `bulk`,
//! `query` and `queryset.bulk_create` alike. Tokens are lowercased; stop words and pure
//! numbers are dropped; single words (not compound identifiers) are Porter-stemmed, as
//! Pyserini does, so `ordering` in an issue meets `order` in code.

use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};

static STEMMER: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// English words too common in issue text to carry signal, plus words that fill every
/// GitHub issue template.
const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as",
    "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by",
    "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from",
    "further", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how",
    "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "no",
    "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "out", "over",
    "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "them",
    "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until",
    "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom",
    "why", "will", "with", "would", "you", "your", "yours",
];

/// For each first byte, a bit for each length (below 32) that a stop word starting with it
/// has: most tokens are told apart from every stop word by these two alone.
const STOP_WORD_SHAPES: [u32; 256] = {
    let mut shapes = [0u32; 256];
    let mut i = 0;
    while i < STOP_WORDS.len() {
        let word = STOP_WORDS[i].as_bytes();
        assert!(!word.is_empty() && word.len() < 32);
        shapes[word[0] as usize] |= 1 << word.len();
        i += 1;
    }
    shapes
};

fn is_stop_word(word: &str) -> bool {
    let bytes = word.as_bytes();
    let shape = bytes
        .first()
        .filter(|_| bytes.len() < 32)
        .map_or(0, |&first| {
            STOP_WORD_SHAPES[first as usize] & (1 << bytes.len())
        });
    shape != 0 && STOP_WORDS.binary_search(&word).is_ok()
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Tokens of `text`, in order, with repetitions.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    tokenize_into(text, &mut |token| out.push(token.to_owned()));
    out
}

/// Calls `sink` with each token of `text` (a callback, so indexing avoids allocating a vector
/// per document).
pub fn tokenize_into(text: &str, sink: &mut dyn FnMut(&str)) {
    let mut lower = String::new();
    for word in dotted_words(text) {
        let has_dot = word.contains('.');
        let parts: Vec<&str> = word.split('.').filter(|p| !p.is_empty()).collect();
        if has_dot && parts.len() > 1 {
            lower.clear();
            lower.push_str(&word.to_lowercase());
            sink(&lower);
        }
        for part in parts {
            emit_identifier(part, &mut lower, sink);
        }
    }
}

/// Maximal runs of identifier characters and inner dots (`a.b_c.D`), trimmed of dots: the
/// tokens of a text are those of each of these words in turn.
pub fn dotted_words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !is_ident_char(c) && c != '.')
        .map(|w| w.trim_matches('.'))
        .filter(|w| !w.is_empty())
}

fn emit_identifier(ident: &str, lower: &mut String, sink: &mut dyn FnMut(&str)) {
    let parts = identifier_parts(ident);
    let whole = ident.trim_matches('_');
    lower.clear();
    lower.extend(whole.chars().flat_map(char::to_lowercase));
    if parts.len() > 1 {
        if keep(lower) {
            sink(lower);
        }
        for part in parts {
            lower.clear();
            lower.extend(part.chars().flat_map(char::to_lowercase));
            emit_word(lower, sink);
        }
    } else {
        emit_word(lower, sink);
    }
}

/// Emits a lowercased single word, stemmed when it is alphabetic ASCII.
fn emit_word(word: &str, sink: &mut dyn FnMut(&str)) {
    if !keep(word) {
        return;
    }
    if word.bytes().all(|b| b.is_ascii_lowercase()) {
        let stem = STEMMER.stem(word);
        if keep(&stem) {
            sink(&stem);
        }
    } else {
        sink(word);
    }
}

fn keep(token: &str) -> bool {
    token.chars().count() > 1 && !token.chars().all(|c| c.is_ascii_digit()) && !is_stop_word(token)
}

/// The parts of an identifier: split at underscores and at camelCase boundaries
/// (`parseHTTPResponse2` → `parse`, `HTTP`, `Response2`).
pub fn identifier_parts(ident: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    for piece in ident.split('_').filter(|p| !p.is_empty()) {
        let chars: Vec<(usize, char)> = piece.char_indices().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (pos, c) = chars[i];
            let prev = chars[i - 1].1;
            let next_lower = chars.get(i + 1).is_some_and(|&(_, n)| n.is_lowercase());
            let boundary = (c.is_uppercase() && prev.is_lowercase())
                || (c.is_uppercase() && prev.is_uppercase() && next_lower)
                || (c.is_alphabetic() && prev.is_ascii_digit() && !c.is_lowercase());
            if boundary {
                parts.push(&piece[start..pos]);
                start = pos;
            }
        }
        parts.push(&piece[start..]);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn the_shape_filter_keeps_every_stop_word_and_only_them() {
        assert!(STOP_WORDS.iter().all(|w| is_stop_word(w)));
        for word in [
            "",
            "th",
            "thee",
            "bother",
            "queryset",
            "a_very_long_identifier_of_40_bytes",
        ] {
            assert!(!is_stop_word(word), "{word}");
        }
    }

    #[test]
    fn splits_snake_camel_and_dotted_keeping_the_whole() {
        assert_eq!(
            tokenize("QuerySet.bulk_create() fails"),
            [
                "queryset.bulk_create",
                "queryset",
                "queri",
                "set",
                "bulk_create",
                "bulk",
                "creat",
                "fail"
            ]
        );
        assert_eq!(
            identifier_parts("parseHTTPResponse2"),
            ["parse", "HTTP", "Response2"]
        );
        assert_eq!(identifier_parts("__init__"), ["init"]);
    }

    #[test]
    fn drops_stop_words_numbers_and_single_characters() {
        assert_eq!(
            tokenize("the value of x is 42 in django.db"),
            ["valu", "django.db", "django", "db"]
        );
    }

    #[test]
    fn stems_words_but_not_compound_identifiers() {
        assert_eq!(
            tokenize("ordering ordered order_by"),
            ["order", "order", "order_by", "order"]
        );
    }

    #[test]
    fn handles_unicode_identifiers() {
        assert_eq!(
            tokenize("größe = ÄnderungsZähler"),
            ["größe", "änderungszähler", "änderungs", "zähler"]
        );
    }
}
