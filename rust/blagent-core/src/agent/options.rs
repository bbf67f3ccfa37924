//! Checking [`LlmOptions`] by type and range before anything runs: the JSON types are serde's
//! (an unknown key, a string for a number or a negative count is refused when parsing); the
//! ranges are here, so a negative or non-finite weight, a zero-step agent or an absurd budget
//! is bad input naming the option, not a silent misbehaviour mid-run.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

use super::rrl::validate_rrl_groups;
use super::LlmOptions;
use crate::error::{Error, Result};

/// The largest `model_weight`: the largest scale a calibration tries, at which the model's
/// order already decides the ranking.
pub const MAX_MODEL_WEIGHT: f32 = 1000.0;
/// The most agent turns and repair requests (more would only spend tokens).
const MAX_STEPS: usize = 1000;
/// The largest token budget or size an option may name.
const MAX_TOKENS: usize = 100_000_000;

/// `model_weight` as written: a number past `f32`'s range would become `inf` when serde
/// narrows it, and the message would name a value the user never wrote.
pub(super) fn model_weight<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<f32>, D::Error> {
    match Option::<f64>::deserialize(d)? {
        #[allow(clippy::cast_possible_truncation)]
        Some(weight) if (0.0..=f64::from(MAX_MODEL_WEIGHT)).contains(&weight) => Ok(Some(weight as f32)),
        Some(weight) => Err(D::Error::custom(format!(
            "LLM option model_weight: {weight:?} is out of range (a number from 0 to {MAX_MODEL_WEIGHT})"
        ))),
        None => Ok(None),
    }
}

impl LlmOptions {
    /// Checks every option's range (see the module documentation), and that every RRL group
    /// exists.
    pub fn validate(&self) -> Result<()> {
        let bad = |name: &str, value: String, wanted: String| {
            Err(Error::InvalidInput(format!(
                "LLM option {name}: {value} is out of range ({wanted})"
            )))
        };
        if let Some(weight) = self.model_weight {
            if !(weight.is_finite() && (0.0..=MAX_MODEL_WEIGHT).contains(&weight)) {
                return bad(
                    "model_weight",
                    weight.to_string(),
                    format!("a number from 0 to {MAX_MODEL_WEIGHT}"),
                );
            }
        }
        let counts = [
            ("max_steps", self.max_steps, 1, MAX_STEPS),
            ("max_retries", self.max_retries as usize, 0, MAX_STEPS),
            ("candidates", self.candidates, 1, MAX_TOKENS),
            ("per_query", self.per_query, 1, MAX_TOKENS),
            ("rerank_files", self.rerank_files, 1, MAX_TOKENS),
            ("issue_tokens", self.issue_tokens, 1, MAX_TOKENS),
            ("skeleton_tokens", self.skeleton_tokens, 1, MAX_TOKENS),
            ("context_tokens", self.context_tokens, 1, MAX_TOKENS),
            ("view_tokens", self.view_tokens, 1, MAX_TOKENS),
            (
                "phase1_budget_tokens",
                self.phase1_budget_tokens,
                0,
                MAX_TOKENS,
            ),
        ];
        let optional = [
            ("max_prompt_tokens", self.max_prompt_tokens, 0),
            (
                "max_completion_tokens",
                self.max_completion_tokens.map(|t| t as usize),
                1,
            ),
        ];
        let all = counts.into_iter().chain(
            optional
                .into_iter()
                .filter_map(|(name, value, min)| value.map(|v| (name, v, min, MAX_TOKENS))),
        );
        for (name, value, min, max) in all {
            if !(min..=max).contains(&value) {
                return bad(
                    name,
                    value.to_string(),
                    format!("a whole number from {min} to {max}"),
                );
            }
        }
        validate_rrl_groups(&self.rrl_groups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(options: &LlmOptions) -> String {
        let err = options.validate().unwrap_err();
        assert!(err.is_input_error(), "{err}");
        err.to_string()
    }

    #[test]
    fn the_defaults_and_sensible_values_pass() {
        LlmOptions::default().validate().unwrap();
        let options = LlmOptions {
            model_weight: Some(0.0),
            max_retries: 0,
            phase1_budget_tokens: 0,
            max_prompt_tokens: Some(0),
            ..LlmOptions::default()
        };
        options.validate().unwrap();
        let options = LlmOptions {
            model_weight: Some(MAX_MODEL_WEIGHT),
            max_prompt_tokens: None,
            max_completion_tokens: None,
            ..LlmOptions::default()
        };
        options.validate().unwrap();
    }

    #[test]
    fn out_of_range_values_name_the_option() {
        for weight in [-1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e9] {
            let options = LlmOptions {
                model_weight: Some(weight),
                ..LlmOptions::default()
            };
            assert!(error(&options).contains("model_weight"), "{weight}");
        }
        // Found by a review: a number past f32's range was named as `inf`.
        for (text, named) in [
            ("1e308", "1e308"),
            ("-1e300", "-1e300"),
            ("1000.5", "1000.5"),
        ] {
            let json = format!(r#"{{"model_weight": {text}}}"#);
            let err = serde_json::from_str::<LlmOptions>(&json)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&format!("model_weight: {named} is out of range")),
                "{err}"
            );
        }
        let read: LlmOptions = serde_json::from_str(r#"{"model_weight": 2.5}"#).unwrap();
        assert_eq!(read.model_weight, Some(2.5));
        let read: LlmOptions = serde_json::from_str(r#"{"model_weight": null}"#).unwrap();
        assert_eq!(read.model_weight, None);
        // The temperature is the configuration's (`LlmConfig` checks it), not an option.
        let refused = serde_json::from_str::<LlmOptions>(r#"{"temperature": 0.7}"#).unwrap_err();
        assert!(
            refused.to_string().contains("unknown field `temperature`"),
            "{refused}"
        );
        let cases: [(&str, LlmOptions); 5] = [
            (
                "max_steps",
                LlmOptions {
                    max_steps: 0,
                    ..LlmOptions::default()
                },
            ),
            (
                "candidates",
                LlmOptions {
                    candidates: 0,
                    ..LlmOptions::default()
                },
            ),
            (
                "max_retries",
                LlmOptions {
                    max_retries: u32::MAX,
                    ..LlmOptions::default()
                },
            ),
            (
                "max_completion_tokens",
                LlmOptions {
                    max_completion_tokens: Some(0),
                    ..LlmOptions::default()
                },
            ),
            (
                "issue_tokens",
                LlmOptions {
                    issue_tokens: usize::MAX,
                    ..LlmOptions::default()
                },
            ),
        ];
        for (name, options) in cases {
            let message = error(&options);
            assert!(message.contains(name), "{name}: {message}");
        }
        let options = LlmOptions {
            rrl_groups: vec!["bogus".into()],
            ..LlmOptions::default()
        };
        assert!(error(&options).contains("bogus"));
    }
}
