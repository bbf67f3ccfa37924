//! Token accounting: a thread-safe ledger of [`Usage`] per stage, and a [`TokenCounter`] that
//! estimates counts when a response carries no `usage`.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use super::prices::PriceTable;
use super::{Message, Usage};
use crate::error::{Error, Result};

/// Characters per token of the fallback estimate (the usual rule of thumb for English text and
/// code with BPE tokenizers).
pub const CHARS_PER_TOKEN: usize = 4;
/// Tokens added per message for the chat template's role markers in an estimate.
pub const TOKENS_PER_MESSAGE: u64 = 4;

/// Counts tokens locally: with a Hugging Face `tokenizer.json` when one is configured, else
/// `ceil(chars / 4)`.
#[derive(Debug, Default)]
pub enum TokenCounter {
    /// `ceil(chars / CHARS_PER_TOKEN)`.
    #[default]
    CharsPerToken,
    /// A real tokenizer (boxed: it is large).
    Tokenizer(Box<tokenizers::Tokenizer>),
}

impl TokenCounter {
    /// The tokenizer at `path`, or the chars/4 fallback when `path` is None.
    pub fn load(path: Option<&Path>) -> Result<Self> {
        let Some(path) = path else {
            return Ok(TokenCounter::CharsPerToken);
        };
        let bytes = crate::repo::read::read_bounded(path, crate::repo::read::MAX_DATA_FILE_BYTES)
            .map_err(|f| f.into_error(path, "tokenizer"))?;
        let mut tokenizer = tokenizers::Tokenizer::from_bytes(bytes)
            .map_err(|e| Error::InvalidInput(format!("tokenizer {}: {e}", path.display())))?;
        // Counting wants the text's own tokens: a padding the file asks for (a fixed length of
        // 10^11 allocates 400 GB) or a truncation would change the count.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(None)
            .map_err(|e| Error::InvalidInput(format!("tokenizer {}: {e}", path.display())))?;
        Ok(TokenCounter::Tokenizer(Box::new(tokenizer)))
    }

    /// Tokens in `text`. A tokenizer reads at most [`MAX_TOKENIZED_BYTES`] of it (it takes
    /// some 185 bytes of memory per character) and the rest is counted at the rate of that
    /// part.
    pub fn count(&self, text: &str) -> u64 {
        match self {
            TokenCounter::CharsPerToken => text.chars().count().div_ceil(CHARS_PER_TOKEN) as u64,
            TokenCounter::Tokenizer(tokenizer) => {
                let head = crate::text::head(text, MAX_TOKENIZED_BYTES);
                let cut = head.len();
                // A tokenizer that fails on the text, or panics on it (a regex Oniguruma gives
                // up on), is counted as if there were none.
                let tokens = catch_unwind(AssertUnwindSafe(|| tokenizer.encode(head, false)))
                    .ok()
                    .and_then(std::result::Result::ok)
                    .map_or_else(|| Self::CharsPerToken.count(head), |e| e.len() as u64);
                if cut == text.len() || cut == 0 {
                    return tokens;
                }
                (tokens as f64 * text.len() as f64 / cut as f64).ceil() as u64
            }
        }
    }

    /// An estimated [`Usage`] of an exchange (`estimated` set).
    pub fn estimate(&self, messages: &[Message], completion: &str) -> Usage {
        let prompt = messages
            .iter()
            .map(|m| self.count(&m.content) + TOKENS_PER_MESSAGE)
            .sum();
        Usage {
            prompt_tokens: prompt,
            completion_tokens: self.count(completion),
            estimated: true,
        }
    }
}

/// The most bytes of one text a tokenizer counts; the rest is extrapolated.
pub const MAX_TOKENIZED_BYTES: usize = 1 << 20;

/// Tokens and calls of one stage (or of all, in [`UsageSummary::total`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageUsage {
    /// Answered requests.
    pub calls: u64,
    /// Requests that ended in an error (no tokens counted for them).
    pub failed_calls: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Whether any count was estimated locally.
    pub estimated: bool,
    /// Estimated cost in USD, when the model is in the price table.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

impl StageUsage {
    /// Counts one answered request. Counts saturate at `u64::MAX` (a server may report any
    /// usage at all).
    pub fn record(&mut self, usage: &Usage) {
        self.calls = self.calls.saturating_add(1);
        self.prompt_tokens = self.prompt_tokens.saturating_add(usage.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(usage.completion_tokens);
        self.estimated |= usage.estimated;
    }

    /// Adds `other`'s counts, saturating at `u64::MAX`.
    pub fn add(&mut self, other: &StageUsage) {
        self.calls = self.calls.saturating_add(other.calls);
        self.failed_calls = self.failed_calls.saturating_add(other.failed_calls);
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
        self.estimated |= other.estimated;
    }

    /// Prompt and completion tokens as one [`Usage`].
    pub fn usage(&self) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            estimated: self.estimated,
        }
    }
}

/// The ledger's content: per stage, and totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageSummary {
    /// By stage name.
    pub stages: BTreeMap<String, StageUsage>,
    /// All stages together.
    pub total: StageUsage,
}

/// Accumulates token usage per stage; shared across threads (one per instance, or one per run).
#[derive(Debug, Default)]
pub struct TokenLedger {
    stages: Mutex<BTreeMap<String, StageUsage>>,
}

impl TokenLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        TokenLedger::default()
    }

    /// Counts one answered request of `stage`.
    pub fn record(&self, stage: &str, usage: &Usage) {
        let mut delta = StageUsage::default();
        delta.record(usage);
        self.add(stage, &delta);
    }

    /// Counts one failed request of `stage`.
    pub fn record_failure(&self, stage: &str) {
        self.add(
            stage,
            &StageUsage {
                failed_calls: 1,
                ..StageUsage::default()
            },
        );
    }

    fn add(&self, stage: &str, delta: &StageUsage) {
        let mut stages = self.stages.lock().unwrap_or_else(PoisonError::into_inner);
        stages.entry(stage.to_owned()).or_default().add(delta);
    }

    /// Per stage and total counts, without costs.
    pub fn summary(&self) -> UsageSummary {
        let stages = self
            .stages
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut total = StageUsage::default();
        for stage in stages.values() {
            total.add(stage);
        }
        UsageSummary { stages, total }
    }

    /// [`TokenLedger::summary`] with the cost of each stage and of the total for `model`
    /// (None where the model is not in `prices`).
    pub fn summary_with_cost(&self, prices: &PriceTable, model: &str) -> UsageSummary {
        let mut summary = self.summary();
        for stage in summary.stages.values_mut() {
            stage.cost_usd = prices.cost_usd(model, &stage.usage());
        }
        summary.total.cost_usd = prices.cost_usd(model, &summary.total.usage());
        summary
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(prompt: u64, completion: u64, estimated: bool) -> Usage {
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            estimated,
        }
    }

    #[test]
    fn fallback_counts_a_token_per_four_chars() {
        let counter = TokenCounter::default();
        assert_eq!(counter.count(""), 0);
        assert_eq!(counter.count("abcd"), 1);
        assert_eq!(counter.count("abcde"), 2);
        assert_eq!(counter.count("ééééé"), 2, "characters, not bytes");
        let estimate = counter.estimate(&[Message::user("12345678")], "abc");
        assert_eq!(estimate, usage(2 + TOKENS_PER_MESSAGE, 1, true));
    }

    /// A word-level tokenizer file (whitespace split, one known word) with the given
    /// truncation and padding settings, in `dir`.
    fn tokenizer_file(dir: &Path, truncation: &str, padding: &str) -> std::path::PathBuf {
        let path = dir.join("tokenizer.json");
        let json = format!(
            r#"{{"version": "1.0", "truncation": {truncation}, "padding": {padding},
                "added_tokens": [], "normalizer": null, "pre_tokenizer": {{"type": "Whitespace"}},
                "post_processor": null, "decoder": null,
                "model": {{"type": "WordLevel", "vocab": {{"[UNK]": 0, "hello": 1}},
                          "unk_token": "[UNK]"}}}}"#
        );
        std::fs::write(&path, json).unwrap();
        path
    }

    #[test]
    fn a_configured_tokenizer_counts_its_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let path = tokenizer_file(dir.path(), "null", "null");
        let counter = TokenCounter::load(Some(&path)).unwrap();
        assert!(matches!(counter, TokenCounter::Tokenizer(_)));
        // Four words; the chars/4 fallback would say 5.
        assert_eq!(counter.count("hello world foo bar"), 4);
        // A reply past the tokenized part (20 MB of it once took 3.8 GB) is counted at that
        // part's rate: "hello " is one token in six bytes.
        let long = "hello ".repeat(4 * MAX_TOKENIZED_BYTES / 6);
        let estimate = counter.count(&long);
        let words = (long.len() / 6) as u64;
        assert!(
            estimate.abs_diff(words) <= words / 1000,
            "{estimate} against {words}"
        );
    }

    /// A 600-byte file asking for padding to 10^11 tokens once made counting allocate 400 GB
    /// (an abort, or the OOM killer); truncation would undercount.
    #[test]
    fn a_tokenizers_padding_and_truncation_do_not_change_the_count() {
        let dir = tempfile::tempdir().unwrap();
        let path = tokenizer_file(
            dir.path(),
            r#"{"direction": "Right", "max_length": 2, "strategy": "LongestFirst", "stride": 0}"#,
            r#"{"strategy": {"Fixed": 100000000000}, "direction": "Right",
                "pad_to_multiple_of": null, "pad_id": 0, "pad_type_id": 0, "pad_token": "[UNK]"}"#,
        );
        let counter = TokenCounter::load(Some(&path)).unwrap();
        assert_eq!(counter.count("hello world foo bar"), 4);
    }

    /// A pre-tokenizer regex past Oniguruma's retry limit on a run of letters panicked inside
    /// the count.
    #[test]
    fn a_tokenizer_that_gives_up_on_a_text_counts_as_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = tokenizer_file(dir.path(), "null", "null");
        let json = std::fs::read_to_string(&path).unwrap().replace(
            r#"{"type": "Whitespace"}"#,
            r#"{"type": "Split", "pattern": {"Regex": "(\\w|\\w\\w)*\\W(?<=q)"},
                "behavior": "Isolated", "invert": false}"#,
        );
        std::fs::write(&path, json).unwrap();
        let counter = TokenCounter::load(Some(&path)).unwrap();
        let text = "a".repeat(60);
        assert_eq!(
            counter.count(&text),
            TokenCounter::CharsPerToken.count(&text)
        );
    }

    #[test]
    fn a_missing_tokenizer_is_a_clear_error() {
        let err = TokenCounter::load(Some(Path::new("/nonexistent/tokenizer.json"))).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/tokenizer.json"));
    }

    #[test]
    fn ledger_sums_per_stage_across_threads() {
        let ledger = TokenLedger::new();
        std::thread::scope(|scope| {
            for i in 0..8u64 {
                let ledger = &ledger;
                scope.spawn(move || {
                    let stage = if i % 2 == 0 { "t0" } else { "phase1" };
                    ledger.record(stage, &usage(10, i, i == 3));
                });
            }
        });
        ledger.record_failure("t0");
        let summary = ledger.summary();
        let t0 = &summary.stages["t0"];
        assert_eq!((t0.calls, t0.failed_calls, t0.prompt_tokens), (4, 1, 40));
        assert_eq!(t0.completion_tokens, 2 + 4 + 6);
        assert!(!t0.estimated && summary.stages["phase1"].estimated);
        assert_eq!(summary.total.calls, 8);
        assert_eq!(summary.total.completion_tokens, 28);
        assert!(summary.total.estimated);
        let json = serde_json::to_value(&summary).unwrap();
        assert_eq!(json["total"]["prompt_tokens"], 80);
    }

    #[test]
    fn counts_saturate_instead_of_wrapping() {
        let ledger = TokenLedger::new();
        ledger.record("t0", &usage(u64::MAX - 2, u64::MAX, false));
        ledger.record("t0", &usage(u64::MAX - 2, 1, false));
        ledger.record("t1", &usage(u64::MAX, u64::MAX, false));
        let summary = ledger.summary();
        let t0 = &summary.stages["t0"];
        assert_eq!(
            (t0.prompt_tokens, t0.completion_tokens),
            (u64::MAX, u64::MAX)
        );
        assert_eq!(t0.calls, 2);
        assert_eq!(
            (summary.total.prompt_tokens, summary.total.completion_tokens),
            (u64::MAX, u64::MAX)
        );
        let mut stage = StageUsage {
            calls: u64::MAX,
            failed_calls: u64::MAX,
            ..StageUsage::default()
        };
        stage.add(&summary.total);
        stage.record(&usage(1, 1, true));
        assert_eq!((stage.calls, stage.failed_calls), (u64::MAX, u64::MAX));
        assert_eq!(stage.prompt_tokens, u64::MAX);
    }

    #[test]
    fn costs_follow_the_price_table() {
        let ledger = TokenLedger::new();
        ledger.record("t0", &usage(1_000_000, 500_000, false));
        let prices =
            PriceTable::from_json(r#"{"models": {"m": {"prompt": 2.0, "completion": 8.0}}}"#)
                .unwrap();
        let summary = ledger.summary_with_cost(&prices, "m");
        assert_eq!(summary.total.cost_usd, Some(6.0));
        assert_eq!(summary.stages["t0"].cost_usd, Some(6.0));
        assert_eq!(
            ledger.summary_with_cost(&prices, "unknown").total.cost_usd,
            None
        );
    }
}
