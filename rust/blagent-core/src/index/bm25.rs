//! Okapi BM25 over a fixed set of documents, with Lucene's (and Pyserini's) formula:
//! `idf(t) · tf · (k1 + 1) / (tf + k1 · (1 − b + b · len / avg_len))` with
//! `idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5))`.

use std::collections::HashMap;
use std::ops::Range;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::tokenize::{dotted_words, tokenize_into};

/// Pyserini's default term-frequency saturation.
pub const DEFAULT_K1: f32 = 0.9;
/// Pyserini's default length normalization.
pub const DEFAULT_B: f32 = 0.4;

/// BM25's two free parameters.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Bm25Params {
    /// Term-frequency saturation.
    pub k1: f32,
    /// Length normalization, 0 (none) to 1 (full).
    pub b: f32,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Bm25Params {
            k1: DEFAULT_K1,
            b: DEFAULT_B,
        }
    }
}

/// The collection statistics BM25 needs: an index answers them for itself, and could answer
/// them from a larger collection than the documents it scores.
pub trait Statistics {
    /// Number of documents.
    fn num_docs(&self) -> usize;
    /// Number of documents containing the term with this id.
    fn doc_freq(&self, term: u32) -> usize;

    /// Lucene's smoothed inverse document frequency.
    fn idf(&self, term: u32) -> f32 {
        let n = self.num_docs() as f32;
        let df = self.doc_freq(term) as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }
}

/// An inverted index over tokenized documents, scored with BM25.
#[derive(Debug, Default)]
pub struct Bm25 {
    params: Bm25Params,
    vocabulary: HashMap<String, u32>,
    /// Per term: (document, term frequency), documents ascending.
    postings: Vec<Vec<(u32, u32)>>,
    doc_lengths: Vec<u32>,
    average_length: f32,
    /// Every word of the documents ([`dotted_words`]) → where the ids of its tokens lie in
    /// `word_ids`: each distinct word is tokenized once, and a text made of the collection's
    /// own words (a function of an indexed file) is counted without tokenizing.
    words: FxHashMap<Box<str>, Range<u32>>,
    word_ids: Vec<u32>,
}

impl Statistics for Bm25 {
    fn num_docs(&self) -> usize {
        self.doc_lengths.len()
    }

    fn doc_freq(&self, term: u32) -> usize {
        self.postings.get(term as usize).map_or(0, Vec::len)
    }
}

/// The term counts of a text outside the collection ([`TextCounter::count`]).
#[derive(Debug, Clone, Default)]
pub struct TextCounts {
    /// `(term id, count)`, in id order.
    terms: Vec<(u32, u32)>,
    /// Tokens in the text.
    length: u32,
}

/// Counts the terms of texts outside the collection, for [`Bm25::score_counts`], remembering the
/// tokens of each word it has read: source code repeats its words, and tokenizing (splitting,
/// stemming) is most of the work.
pub struct TextCounter<'b, 't> {
    bm25: &'b Bm25,
    /// A word ([`dotted_words`]) → its number of tokens and where the ids of those in the
    /// vocabulary lie in `ids`.
    words: FxHashMap<&'t str, (u32, Range<u32>)>,
    /// The vocabulary ids of every word read, word after word.
    ids: Vec<u32>,
}

impl<'b, 't> TextCounter<'b, 't> {
    /// A counter with the vocabulary of `bm25`.
    pub fn new(bm25: &'b Bm25) -> Self {
        TextCounter {
            bm25,
            words: FxHashMap::default(),
            ids: Vec::new(),
        }
    }

    /// The counts of the terms `wanted` keeps in the text made of `pieces` (as if joined),
    /// and its length: the tokens [`tokenize_into`] gives it.
    pub fn count(
        &mut self,
        pieces: impl IntoIterator<Item = &'t str>,
        wanted: impl Fn(u32) -> bool,
    ) -> TextCounts {
        let mut counts: FxHashMap<u32, u32> = FxHashMap::default();
        let mut length = 0u32;
        for piece in pieces {
            for word in dotted_words(piece) {
                let (tokens, found) = self.word(word);
                length += tokens;
                for &id in found.iter().filter(|&&id| wanted(id)) {
                    *counts.entry(id).or_insert(0) += 1;
                }
            }
        }
        let mut terms: Vec<(u32, u32)> = counts.into_iter().collect();
        terms.sort_unstable_by_key(|&(term, _)| term);
        TextCounts { terms, length }
    }

    /// The number of tokens of `word` and the vocabulary ids among them: looked up when the
    /// collection has the word, else tokenized once and remembered.
    fn word(&mut self, word: &'t str) -> (u32, &[u32]) {
        let (bm25, ids) = (self.bm25, &mut self.ids);
        if let Some(range) = bm25.words.get(word) {
            let found = &bm25.word_ids[range.start as usize..range.end as usize];
            return (found.len() as u32, found);
        }
        let (tokens, range) = self.words.entry(word).or_insert_with(|| {
            let mut tokens = 0u32;
            let start = ids.len() as u32;
            tokenize_into(word, &mut |token| {
                tokens += 1;
                ids.extend(bm25.term_id(token));
            });
            (tokens, start..ids.len() as u32)
        });
        (*tokens, &self.ids[range.start as usize..range.end as usize])
    }
}

/// A query's tokens, each with how often it occurs: tokenized once, then looked up in each
/// index the query is put to (whole files, chunks, defined names) by [`Bm25::terms_of`].
#[derive(Debug, Clone, Default)]
pub struct QueryTokens(Vec<(String, f32)>);

impl QueryTokens {
    /// The tokens of `query`, each counted as often as it occurs.
    pub fn of(query: &str) -> Self {
        let mut counts: HashMap<String, f32> = HashMap::new();
        tokenize_into(query, &mut |token| match counts.get_mut(token) {
            Some(n) => *n += 1.0,
            None => {
                counts.insert(token.to_owned(), 1.0);
            }
        });
        QueryTokens(counts.into_iter().collect())
    }

    /// Whether the query has no token.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Bm25 {
    /// Indexes `docs` (document `i` is the `i`-th item).
    pub fn build<T: AsRef<str>>(docs: impl IntoIterator<Item = T>, params: Bm25Params) -> Self {
        let mut index = Bm25 {
            params,
            ..Bm25::default()
        };
        let mut counts: HashMap<u32, u32> = HashMap::new();
        for (doc, text) in docs.into_iter().enumerate() {
            let text = text.as_ref();
            counts.clear();
            let mut length = 0u32;
            for word in dotted_words(text) {
                let range = index.word_tokens(word);
                length += range.len() as u32;
                for &id in &index.word_ids[range] {
                    *counts.entry(id).or_insert(0) += 1;
                }
            }
            index.postings.resize_with(index.vocabulary.len(), Vec::new);
            let mut terms: Vec<(u32, u32)> = counts.iter().map(|(&t, &c)| (t, c)).collect();
            terms.sort_unstable();
            for (term, tf) in terms {
                index.postings[term as usize].push((doc as u32, tf));
            }
            index.doc_lengths.push(length);
        }
        let total: u64 = index.doc_lengths.iter().map(|&l| u64::from(l)).sum();
        index.average_length = total as f32 / index.doc_lengths.len().max(1) as f32;
        index
    }

    /// Where the ids of the tokens of `word` (one of [`dotted_words`]) lie in `word_ids`,
    /// tokenizing it and adding its new tokens to the vocabulary the first time it is seen.
    fn word_tokens(&mut self, word: &str) -> Range<usize> {
        if let Some(range) = self.words.get(word) {
            return range.start as usize..range.end as usize;
        }
        let start = self.word_ids.len();
        let (vocabulary, word_ids) = (&mut self.vocabulary, &mut self.word_ids);
        tokenize_into(word, &mut |token| {
            let id = if let Some(&id) = vocabulary.get(token) {
                id
            } else {
                let id = vocabulary.len() as u32;
                vocabulary.insert(token.to_owned(), id);
                id
            };
            word_ids.push(id);
        });
        let end = self.word_ids.len();
        self.words.insert(word.into(), start as u32..end as u32);
        start..end
    }

    /// The term id of an already-lowercased token, if any document has it.
    pub fn term_id(&self, token: &str) -> Option<u32> {
        self.vocabulary.get(token).copied()
    }

    /// BM25 score of every document for `query` (one entry per document; 0 where no term
    /// matches). Each query token counts as often as it occurs, as in Lucene's bag-of-words
    /// queries.
    pub fn score(&self, query: &str) -> Vec<f32> {
        self.score_tokens(&QueryTokens::of(query))
    }

    /// [`Bm25::score`] of a query tokenized once, which other indexes can read as well.
    pub fn score_tokens(&self, tokens: &QueryTokens) -> Vec<f32> {
        self.score_terms(&self.terms_of(tokens))
    }

    /// The `k` best documents for `tokens` that match at all, as (document, score), best
    /// first (ties: the earlier document).
    pub fn top_k(&self, tokens: &QueryTokens, k: usize) -> Vec<(usize, f32)> {
        let mut scored: Vec<(usize, f32)> = self
            .score_tokens(tokens)
            .into_iter()
            .enumerate()
            .filter(|&(_, s)| s > 0.0)
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(k);
        scored
    }

    /// The known terms of a query tokenized once ([`QueryTokens`]), with how often each
    /// occurs.
    pub fn terms_of(&self, tokens: &QueryTokens) -> HashMap<u32, f32> {
        tokens
            .0
            .iter()
            .filter_map(|(token, n)| Some((self.term_id(token)?, *n)))
            .collect()
    }

    /// The query's known terms with how often each occurs.
    pub fn query_terms(&self, query: &str) -> HashMap<u32, f32> {
        self.terms_of(&QueryTokens::of(query))
    }

    /// BM25 score of every document for weighted term ids. Terms are added in id order, not
    /// the map's (which differs between maps and processes), so a document's score is the
    /// same float wherever it is computed and equal scores rank the same way.
    pub fn score_terms(&self, weights: &HashMap<u32, f32>) -> Vec<f32> {
        self.score_range(weights, 0..self.num_docs() as u32)
    }

    /// BM25 score of the documents `docs` (a range of ids) for weighted term ids: entry `i` is
    /// document `docs.start + i`, the same float [`Bm25::score_terms`] gives it. Each posting
    /// list is entered by binary search, so scoring a few files' chunks costs little however
    /// large the collection.
    pub fn score_range(&self, weights: &HashMap<u32, f32>, docs: Range<u32>) -> Vec<f32> {
        let mut scores = vec![0.0f32; docs.len()];
        let mut terms: Vec<(u32, f32)> = weights.iter().map(|(&t, &w)| (t, w)).collect();
        terms.sort_unstable_by_key(|&(term, _)| term);
        for (term, weight) in terms {
            let postings = &self.postings[term as usize];
            let lo = postings.partition_point(|&(d, _)| d < docs.start);
            let hi = postings.partition_point(|&(d, _)| d < docs.end);
            if lo == hi {
                continue;
            }
            let idf = self.idf(term) * weight;
            for &(doc, tf) in &postings[lo..hi] {
                let norm = self.length_norm(self.doc_lengths[doc as usize]);
                scores[(doc - docs.start) as usize] += self.term_score(idf, tf, norm);
            }
        }
        scores
    }

    /// The length normalizer of a document of `length` tokens: `k1 (1 - b + b length / avg)`.
    #[inline]
    fn length_norm(&self, length: u32) -> f32 {
        let Bm25Params { k1, b } = self.params;
        k1 * (1.0 - b + b * length as f32 / self.average_length.max(1.0))
    }

    /// One term's share of a document's score: `idf` (times the query's weight of the term),
    /// its count `tf` in the document, the document's [`Bm25::length_norm`]. The one place the
    /// BM25 formula is written.
    #[inline]
    fn term_score(&self, idf: f32, tf: u32, norm: f32) -> f32 {
        let tf = tf as f32;
        idf * tf * (self.params.k1 + 1.0) / (tf + norm)
    }

    /// The BM25 score of counted text for weighted term ids (terms the counts lack add 0).
    pub fn score_counts(&self, weights: &HashMap<u32, f32>, counts: &TextCounts) -> f32 {
        let norm = self.length_norm(counts.length);
        counts
            .terms
            .iter()
            .filter_map(|&(term, tf)| {
                let weight = weights.get(&term)?;
                Some(self.term_score(self.idf(term) * weight, tf, norm))
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tokenize::tokenize;
    use super::*;

    #[test]
    fn a_text_scores_as_the_same_document_would() {
        let docs = [
            "alpha beta beta gamma",
            "beta delta",
            "gamma gamma epsilon zeta",
        ];
        let index = Bm25::build(docs, Bm25Params::default());
        let terms = index.query_terms("beta gamma");
        let scores = index.score_terms(&terms);
        // A text counted for the query's terms and scored on its own, as the function stage
        // scores a method of a chunk.
        let score_text = |pieces: &[&str]| {
            let counts = TextCounter::new(&index)
                .count(pieces.iter().copied(), |id| terms.contains_key(&id));
            index.score_counts(&terms, &counts)
        };
        for (doc, text) in docs.iter().enumerate() {
            let pieces: Vec<&str> = text.split_inclusive(' ').collect();
            let own = score_text(&pieces);
            assert!(
                (own - scores[doc]).abs() < 1e-5,
                "{doc}: {own} vs {}",
                scores[doc]
            );
        }
        assert!(score_text(&["nothing here"]).abs() < f32::EPSILON);
        // A counter that has read other texts counts the same as a fresh one, to the bit, and
        // both count what the tokenizer emits, whether a word is the collection's (looked up)
        // or new to it (tokenized).
        let mut counter = TextCounter::new(&index);
        let others = [
            "Beta.gamma_beta betaGamma",
            "beta unseen_word gamma.delta Beta",
        ];
        for text in docs.iter().chain(&others) {
            let shared = counter.count([*text], |_| true);
            let fresh = TextCounter::new(&index).count([*text], |_| true);
            assert_eq!((&shared.terms, shared.length), (&fresh.terms, fresh.length));
            let tokens = tokenize(text);
            let mut expected: HashMap<u32, u32> = HashMap::new();
            for id in tokens.iter().filter_map(|token| index.term_id(token)) {
                *expected.entry(id).or_insert(0) += 1;
            }
            let tallied: HashMap<u32, u32> = shared.terms.iter().copied().collect();
            assert_eq!(
                (tallied, shared.length),
                (expected, tokens.len() as u32),
                "{text}"
            );
            assert_eq!(
                index.score_counts(&terms, &shared).to_bits(),
                score_text(&[*text]).to_bits()
            );
        }
    }

    #[test]
    fn scores_do_not_depend_on_the_order_of_the_query_map() {
        let words: Vec<String> = (0..40).map(|i| format!("w{i}")).collect();
        let docs: Vec<String> = (0..8)
            .map(|d| {
                words
                    .iter()
                    .skip(d)
                    .step_by(d + 1)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let index = Bm25::build(docs.iter().map(String::as_str), Bm25Params::default());
        let query = words.join(" ");
        let first: Vec<u32> = index.score(&query).iter().map(|s| s.to_bits()).collect();
        for _ in 0..20 {
            // Every map has its own hash keys, so its own iteration order.
            let again: Vec<u32> = index.score(&query).iter().map(|s| s.to_bits()).collect();
            assert_eq!(again, first);
        }
    }

    #[test]
    fn matches_the_lucene_formula_by_hand() {
        let index = Bm25::build(
            ["alpha beta", "alpha alpha gamma delta"],
            Bm25Params::default(),
        );
        let scores = index.score("alpha");
        // N = 2, df = 2: idf = ln(1 + 0.5 / 2.5); avg length 3.
        let idf = (1.0f32 + 0.5 / 2.5).ln();
        let doc0 = idf * 1.0 * 1.9 / (1.0 + 0.9 * (0.6 + 0.4 * 2.0 / 3.0));
        let doc1 = idf * 2.0 * 1.9 / (2.0 + 0.9 * (0.6 + 0.4 * 4.0 / 3.0));
        assert!((scores[0] - doc0).abs() < 1e-6);
        assert!((scores[1] - doc1).abs() < 1e-6);
    }

    #[test]
    fn rare_terms_outweigh_common_ones_and_unknown_terms_score_zero() {
        let docs = ["common rare", "common", "common", "common"];
        let index = Bm25::build(docs, Bm25Params::default());
        let scores = index.score("common rare");
        assert!(scores[0] > scores[1] * 3.0);
        assert_eq!(index.score("absent"), vec![0.0; 4]);
        assert_eq!(index.num_docs(), 4);
    }

    #[test]
    fn a_range_scores_as_the_whole_collection_does() {
        let docs = [
            "alpha beta",
            "beta gamma",
            "alpha alpha",
            "delta",
            "gamma alpha",
        ];
        let index = Bm25::build(docs, Bm25Params::default());
        let terms = index.query_terms("alpha gamma gamma");
        let all = index.score_terms(&terms);
        let part = index.score_range(&terms, 1..4);
        let bits = |v: &[f32]| v.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&part), bits(&all[1..4]));
        assert!(index.score_range(&terms, 2..2).is_empty());
    }

    /// A query tokenized once reads the same terms in each index as the text does: repeated
    /// tokens counted, split identifiers and the whole one, unknown tokens left out.
    #[test]
    fn tokens_counted_once_are_the_terms_of_each_index() {
        let files = Bm25::build(
            [
                "def parse_header(raw): return raw",
                "class HeaderParser: pass",
            ],
            Bm25Params::default(),
        );
        let names = Bm25::build(["parse_header", "HeaderParser"], Bm25Params::default());
        let query = "HeaderParser.parse_header fails: header header raw `absent_name`";
        let tokens = QueryTokens::of(query);
        for index in [&files, &names] {
            let (once, text) = (index.terms_of(&tokens), index.query_terms(query));
            assert_eq!(once, text);
            let bits = |v: Vec<f32>| v.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(index.score_terms(&once)), bits(index.score(query)));
        }
        // `HeaderParser`, `parse_header` and `header header`.
        let header = files.terms_of(&tokens)[&files.term_id("header").unwrap()];
        assert_eq!(header.to_bits(), 4.0f32.to_bits());
        assert!(QueryTokens::of(" ,;: ").is_empty());
    }

    #[test]
    fn empty_collection_scores_nothing() {
        let index = Bm25::build(std::iter::empty::<&str>(), Bm25Params::default());
        assert!(index.score("anything").is_empty());
    }
}
