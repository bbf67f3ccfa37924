//! The command line's `--llm-*` flags: which [`LlmConfig`] fields they set, their types and
//! their help, defaults read from [`LlmConfig::default`]. The CLI builds its flags from this
//! list, so the names and defaults live here only.

use serde::Serialize;

use super::config::{LlmConfig, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, MAX_TIMEOUT_S};

/// One `--llm-<flag>` flag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigFlag {
    /// The flag's name after `--llm-`.
    pub flag: &'static str,
    /// The [`LlmConfig`] field it sets (its JSON key).
    pub key: &'static str,
    /// The value's type: `str`, `float` (finite, at least 0), `seconds` (above 0, at most
    /// [`MAX_TIMEOUT_S`]), `int` or `path`.
    pub kind: &'static str,
    /// The value's name in usage lines.
    pub metavar: &'static str,
    /// The help text.
    pub help: String,
}

/// Every `--llm-*` flag, in the order `--help` lists them.
pub fn config_flags() -> Vec<ConfigFlag> {
    let d = LlmConfig::default();
    let flag = |flag, key, kind, metavar, help: String| ConfigFlag {
        flag,
        key,
        kind,
        metavar,
        help,
    };
    vec![
        flag(
            "base-url",
            "base_url",
            "str",
            "URL",
            format!("endpoint base URL, with or without /v1 (env {ENV_BASE_URL})"),
        ),
        flag(
            "model",
            "model",
            "str",
            "NAME",
            format!("model name sent with each request (env {ENV_MODEL})"),
        ),
        flag(
            "api-key",
            "api_key",
            "str",
            "KEY",
            format!(
                "API key; discouraged, other users can read command lines: prefer {ENV_API_KEY}"
            ),
        ),
        flag(
            "temperature",
            "temperature",
            "float",
            "T",
            format!("sampling temperature (default {})", d.temperature),
        ),
        flag(
            "seed",
            "seed",
            "int",
            "N",
            "sampling seed, for endpoints that honour one".to_owned(),
        ),
        flag(
            "timeout",
            "request_timeout_s",
            "seconds",
            "SECONDS",
            format!(
                "seconds for a whole request, connect, headers and body (default {}, at most \
                 {MAX_TIMEOUT_S}); a timed-out request is not retried",
                d.request_timeout_s
            ),
        ),
        flag(
            "max-retries",
            "max_retries",
            "int",
            "N",
            format!(
                "retries on 429/5xx/connection errors (default {})",
                d.max_retries
            ),
        ),
        flag(
            "concurrency",
            "max_concurrency",
            "int",
            "N",
            format!("requests in flight at once (default {})", d.max_concurrency),
        ),
        flag(
            "replay",
            "replay",
            "path",
            "FILE",
            "answer from this recorded cassette (JSONL); \
             with an endpoint, it asks only what is not recorded"
                .to_owned(),
        ),
        flag(
            "record",
            "record",
            "path",
            "FILE",
            "append every exchange of the run to this \
             cassette (JSONL); needs an endpoint"
                .to_owned(),
        ),
        flag(
            "prices",
            "prices",
            "path",
            "FILE",
            "JSON price table extending the built-in one, \
             for cost estimates"
                .to_owned(),
        ),
        flag(
            "tokenizer",
            "tokenizer",
            "path",
            "FILE",
            "tokenizer.json for token estimates when \
             a response has no usage"
                .to_owned(),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_sets_a_field_of_the_configuration() {
        let config = serde_json::to_value(LlmConfig::default()).expect("json");
        let fields = config.as_object().expect("an object");
        let flags = config_flags();
        for f in &flags {
            assert!(
                fields.contains_key(f.key),
                "{} sets no field {}",
                f.flag,
                f.key
            );
            assert!(
                ["str", "float", "seconds", "int", "path"].contains(&f.kind),
                "{}",
                f.flag
            );
        }
        let timeout = flags.iter().find(|f| f.flag == "timeout").expect("timeout");
        assert!(timeout.help.contains("default 300,"), "{}", timeout.help);
        let mut names: Vec<_> = flags.iter().map(|f| f.flag).collect();
        names.dedup();
        assert_eq!(names.len(), flags.len());
    }
}
