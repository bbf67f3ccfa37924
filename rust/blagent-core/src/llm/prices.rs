//! Cost estimates: USD per million prompt and completion tokens, per model. A built-in table of
//! examples (`prices.json`, dated) that a user file of the same shape extends or overrides.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Usage;
use crate::error::{Error, Result};

/// The built-in example prices, embedded at build time.
const BUILTIN: &str = include_str!("prices.json");

/// The price of one model, in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Per million prompt tokens.
    pub prompt: f64,
    /// Per million completion tokens.
    pub completion: f64,
}

/// Prices by model name. The file format is `{"models": {"name": {"prompt": 2.5, "completion":
/// 10.0}}}`; other top-level keys (`note`, `as_of`) are ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PriceTable {
    /// Prices by model name or name prefix.
    pub models: BTreeMap<String, ModelPrice>,
}

impl PriceTable {
    /// Parses a table.
    pub fn from_json(text: &str) -> Result<Self> {
        let table: PriceTable = crate::json::from_object(text)
            .map_err(|e| Error::InvalidInput(format!("price table: {e}")))?;
        // A price is a finite number of at least 0 (a review: -5 gave negative costs).
        let most = 1e9;
        let bad = table.models.iter().find(|(_, p)| {
            ![p.prompt, p.completion]
                .iter()
                .all(|usd| usd.is_finite() && (0.0..=most).contains(usd))
        });
        if let Some((name, _)) = bad {
            return Err(Error::InvalidInput(format!(
                "price table: the prices of {name:?} must be numbers from 0 to {most:e} (USD per \
                 million tokens)"
            )));
        }
        Ok(table)
    }

    /// The built-in example table.
    pub fn builtin() -> Self {
        PriceTable::from_json(BUILTIN).expect("the built-in price table parses")
    }

    /// The built-in table extended (and overridden) by the file at `user`, if any.
    pub fn load(user: Option<&Path>) -> Result<Self> {
        let mut table = PriceTable::builtin();
        if let Some(path) = user {
            let text = crate::repo::read::read_user_json(
                path,
                crate::repo::read::MAX_SMALL_FILE_BYTES,
                "price table",
            )?;
            let extra = PriceTable::from_json(&text)
                .map_err(|e| Error::InvalidInput(format!("{}: {e}", path.display())))?;
            table.models.extend(extra.models);
        }
        Ok(table)
    }

    /// The price of `model`: its exact entry, else the longest entry that prefixes it (so
    /// `gpt-4o-2024-08-06` is priced as `gpt-4o`, `qwen2.5-coder:7b` as `qwen2.5-coder`).
    /// Case-insensitive; a provider prefix (`openai/gpt-4o`) is ignored.
    pub fn price(&self, model: &str) -> Option<ModelPrice> {
        let lower = model.to_lowercase();
        let name = lower.rsplit('/').next().unwrap_or(&lower);
        self.models
            .iter()
            .filter(|(key, _)| name.starts_with(&key.to_lowercase()))
            .max_by_key(|(key, _)| key.len())
            .map(|(_, price)| *price)
    }

    /// The cost of `usage` with `model` in USD, or None for a model not in the table.
    pub fn cost_usd(&self, model: &str, usage: &Usage) -> Option<f64> {
        self.price(model).map(|p| {
            (usage.prompt_tokens as f64 * p.prompt + usage.completion_tokens as f64 * p.completion)
                / 1_000_000.0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(prompt: u64, completion: u64) -> Usage {
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            estimated: false,
        }
    }

    #[test]
    fn builtin_table_prices_by_longest_prefix() {
        let table = PriceTable::builtin();
        let cost = |m| table.cost_usd(m, &usage(1_000_000, 1_000_000));
        assert_eq!(cost("gpt-4o"), Some(12.5));
        assert_eq!(cost("gpt-4o-2024-08-06"), Some(12.5));
        assert_eq!(cost("gpt-4o-mini"), Some(0.75));
        assert_eq!(cost("openai/GPT-4o-mini"), Some(0.75));
        assert_eq!(cost("qwen2.5-coder:32b"), Some(0.0));
        assert_eq!(cost("some-private-model"), None);
    }

    #[test]
    fn a_price_below_0_or_absurd_is_refused() {
        for price in ["-5", "1e308", "1e10"] {
            let text = format!(r#"{{"models": {{"m1": {{"prompt": 1, "completion": {price}}}}}}}"#);
            let err = PriceTable::from_json(&text).unwrap_err().to_string();
            assert!(
                err.contains("\"m1\"") && err.contains("from 0 to"),
                "{price}: {err}"
            );
        }
        assert!(
            PriceTable::from_json(r#"{"models": {"m1": {"prompt": 0, "completion": 1e9}}}"#)
                .is_ok()
        );
    }

    #[test]
    fn user_file_extends_and_overrides() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prices.json");
        std::fs::write(
            &path,
            r#"{"as_of": "2026-01", "models": {"gpt-4o": {"prompt": 1.0, "completion": 1.0},
                "mine": {"prompt": 0.5, "completion": 0.25}}}"#,
        )
        .unwrap();
        let table = PriceTable::load(Some(&path)).unwrap();
        assert_eq!(table.cost_usd("gpt-4o", &usage(2_000_000, 0)), Some(2.0));
        assert_eq!(table.cost_usd("mine", &usage(0, 4_000_000)), Some(1.0));
        assert!(table.price("gpt-4.1").is_some(), "built-ins kept");

        std::fs::write(&path, r#"{"models": {"x": {"prompt": "cheap"}}}"#).unwrap();
        let err = PriceTable::load(Some(&path)).unwrap_err().to_string();
        assert!(err.contains("prices.json"), "{err}");
        assert!(PriceTable::load(Some(&dir.path().join("absent.json"))).is_err());
        // Found by a review: serde read a model's price from a list, `[prompt, completion]`.
        std::fs::write(&path, r#"{"models": {"x": [2.0, 8.0]}}"#).unwrap();
        let err = PriceTable::load(Some(&path)).unwrap_err().to_string();
        assert!(
            err.contains("ModelPrice: expected a JSON object, found an array (at models.x)"),
            "{err}"
        );
    }
}
