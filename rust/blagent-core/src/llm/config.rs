//! Endpoint configuration: where the model is, how long to wait, how often to retry. Filled from
//! CLI flags (as JSON) and the `BLAGENT_LLM_*` environment variables; the API key is a
//! [`Secret`] that never prints.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};

use super::redact::{
    proxy_secrets, redact_url_credentials, url_credentials_are_ascii, url_secrets, Redactor,
    Secret, MIN_KEY_CHARS, REDACTED,
};
use super::{ChatRequest, Message};
use crate::error::{Error, Result};

/// Environment variable holding the endpoint's base URL.
pub const ENV_BASE_URL: &str = "BLAGENT_LLM_BASE_URL";
/// Environment variable holding the model name.
pub const ENV_MODEL: &str = "BLAGENT_LLM_MODEL";
/// Environment variable holding the API key (preferred over the `--llm-api-key` flag).
pub const ENV_API_KEY: &str = "BLAGENT_LLM_API_KEY";

/// The longest connect or request timeout accepted, in seconds (a day).
pub const MAX_TIMEOUT_S: f64 = 86_400.0;

/// How to reach and drive the chat model. Every field has a default, so `{}` is a valid
/// (LLM-free) configuration; JSON keys are the field names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// Endpoint base URL (`http://localhost:11434` or `…/v1`; `/v1` is added when the URL has
    /// no path). None: no endpoint (LLM-free unless replaying). A password in it
    /// (`http://user:secret@host`) is sent as basic authentication and serialized as
    /// [`super::REDACTED`], like the key.
    #[serde(serialize_with = "serialize_redacted_url")]
    pub base_url: Option<String>,
    /// Model name sent with each request, part of every replay key.
    pub model: String,
    /// Bearer token, sent only when set.
    pub api_key: Option<Secret>,
    /// Sampling temperature for requests built by [`LlmConfig::request`].
    pub temperature: f32,
    /// Sampling seed for requests built by [`LlmConfig::request`].
    pub seed: Option<u64>,
    /// Completion token cap for requests built by [`LlmConfig::request`].
    pub max_tokens: Option<u32>,
    /// Seconds to establish a connection (at most [`MAX_TIMEOUT_S`]).
    pub connect_timeout_s: f64,
    /// Seconds for a whole request: connect, headers and the entire body (at most
    /// [`MAX_TIMEOUT_S`]). A request that used all of it is not retried.
    pub request_timeout_s: f64,
    /// Retries after the first attempt, on 408/429/5xx, connection errors, timeouts and
    /// malformed bodies.
    pub max_retries: u32,
    /// First backoff delay in milliseconds; doubled on each retry, with jitter.
    pub backoff_base_ms: u64,
    /// Requests in flight at once through one model (batch runs share it across threads).
    pub max_concurrency: usize,
    /// A JSON price table extending the built-in one.
    pub prices: Option<PathBuf>,
    /// A `tokenizer.json` for estimating tokens when a response has no `usage`.
    pub tokenizer: Option<PathBuf>,
    /// Serve responses from this cassette; with `base_url` too, the endpoint answers what the
    /// cassette does not.
    pub replay: Option<PathBuf>,
    /// Append every exchange of the run to this cassette (needs an endpoint).
    pub record: Option<PathBuf>,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            base_url: None,
            model: String::new(),
            api_key: None,
            temperature: 0.0,
            seed: None,
            max_tokens: None,
            connect_timeout_s: 10.0,
            request_timeout_s: 300.0,
            max_retries: 4,
            backoff_base_ms: 500,
            max_concurrency: 4,
            prices: None,
            tokenizer: None,
            replay: None,
            record: None,
        }
    }
}

impl LlmConfig {
    /// Parses a JSON configuration (CLI flags) and fills what it leaves unset from the
    /// environment, then validates and normalizes it.
    pub fn from_json(text: &str) -> Result<Self> {
        let mut config: LlmConfig = crate::json::from_object(text)
            .map_err(|e| Error::InvalidInput(format!("invalid LLM configuration: {e}")))?;
        // A variable that is not UTF-8 is an error, not unset (a review: a key with a stray
        // byte sent every request without one, and a base URL's made the run LLM-free).
        let unreadable = std::cell::Cell::new(None);
        config.fill_from(|name| match std::env::var(name) {
            Ok(value) => Some(value),
            Err(std::env::VarError::NotPresent) => None,
            Err(std::env::VarError::NotUnicode(_)) => {
                unreadable.set(Some(name.to_owned()));
                None
            }
        });
        if let Some(name) = unreadable.take() {
            return Err(Error::InvalidInput(format!(
                "{name} is not UTF-8 (its value not shown)"
            )));
        }
        config.validated()
    }

    /// Fills the base URL, model and key from `lookup` (an environment) where they are unset;
    /// empty values count as unset.
    pub fn fill_from(&mut self, lookup: impl Fn(&str) -> Option<String>) {
        let get = |name| lookup(name).filter(|v: &String| !v.trim().is_empty());
        if self.base_url.is_none() {
            self.base_url = get(ENV_BASE_URL);
        }
        if self.model.is_empty() {
            self.model = get(ENV_MODEL).unwrap_or_default();
        }
        if self.api_key.is_none() {
            self.api_key = get(ENV_API_KEY).map(Secret::new);
        }
    }

    /// `inputs` and the files this configuration reads (replay cassette, price table,
    /// tokenizer): no output of the run, the recorded cassette included, may be one of them.
    #[must_use]
    pub fn reads(&self, inputs: crate::repo::Inputs) -> crate::repo::Inputs {
        inputs
            .file(self.replay.as_ref())
            .file(self.prices.as_ref())
            .file(self.tokenizer.as_ref())
    }

    /// Checks the settings and normalizes the base URL (see [`normalize_base_url`]).
    pub fn validated(mut self) -> Result<Self> {
        let bad = |what: String| Err(Error::InvalidInput(format!("LLM configuration: {what}")));
        if let Some(url) = &self.base_url {
            self.base_url = Some(normalize_base_url(url)?);
            if self.model.trim().is_empty() {
                return bad(format!(
                    "an endpoint needs a model name (--llm-model or {ENV_MODEL})"
                ));
            }
        }
        if !(0.0..=2.0).contains(&self.temperature) {
            return bad(format!("temperature {} is outside 0..=2", self.temperature));
        }
        for (name, value) in [
            ("connect timeout", self.connect_timeout_s),
            ("request timeout", self.request_timeout_s),
        ] {
            if !(value.is_finite() && value > 0.0 && value <= MAX_TIMEOUT_S) {
                return bad(format!(
                    "{name} must be a positive number of seconds up to {MAX_TIMEOUT_S}, not {value}"
                ));
            }
        }
        if self.max_concurrency == 0 {
            return bad("max_concurrency must be at least 1".to_owned());
        }
        // A key travels in a header. Outside printable ASCII a server may read its bytes
        // another way (latin-1) and echo them in a form the redactor cannot recognise, so such
        // a key is refused; the message does not show it.
        if let Some(key) = &self.api_key {
            if !key.expose().bytes().all(|b| b.is_ascii_graphic()) {
                return bad(
                    "the API key holds characters other than printable ASCII (a space, a \
                     control character or a non-ASCII letter); API keys are ASCII"
                        .to_owned(),
                );
            }
        }
        // The same for credentials in the base URL, which go out as basic authentication.
        if !self
            .base_url
            .as_deref()
            .is_none_or(url_credentials_are_ascii)
        {
            return bad(
                "the base URL's user or password holds characters other than printable ASCII; \
                 credentials are ASCII"
                    .to_owned(),
            );
        }
        if self.replay.is_some() && self.replay == self.record {
            return bad("replay and record need two cassettes".to_owned());
        }
        if self.record.is_some() && self.base_url.is_none() {
            return bad(format!(
                "recording needs an endpoint (--llm-base-url or {ENV_BASE_URL})"
            ));
        }
        Ok(self)
    }

    /// The connect timeout.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.connect_timeout_s)
    }

    /// The whole-request timeout.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.request_timeout_s)
    }

    /// This configuration's secrets: the API key, the base URL's credentials ([`url_secrets`])
    /// and, with an endpoint, those of the proxies the HTTP client takes from the environment
    /// ([`proxy_secrets`]).
    fn secrets(&self) -> Vec<Secret> {
        // A key shorter than `MIN_KEY_CHARS` is a local server's placeholder, not a secret.
        let mut secrets: Vec<Secret> = self
            .api_key
            .iter()
            .filter(|key| key.expose().chars().count() >= MIN_KEY_CHARS)
            .cloned()
            .collect();
        if let Some(url) = &self.base_url {
            secrets.extend(url_secrets(url));
            secrets.extend(proxy_secrets());
        }
        secrets
    }

    /// The redactor of this configuration's secrets, whatever their length: for errors, logs,
    /// and everything else but a model's answers.
    pub fn redactor(&self) -> Redactor {
        Redactor::new(&self.secrets())
    }

    /// The redactor of a model's answers: [`LlmConfig::redactor`] without the secrets shorter
    /// than [`MIN_KEY_CHARS`] characters. A short password (`admin`, `p`) replaced wherever an
    /// answer holds it would rewrite the paths the answer names (`django/contrib/admin/…`),
    /// which are then dropped; a `user:password` pair, a long password and the key still go.
    pub fn answer_redactor(&self) -> Redactor {
        let secrets = self.secrets();
        Redactor::new(
            secrets
                .iter()
                .filter(|secret| secret.expose().chars().count() >= MIN_KEY_CHARS),
        )
    }

    /// A request for `stage` with this configuration's temperature, seed and token cap.
    pub fn request(&self, stage: &str, messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            stage: stage.to_owned(),
            messages,
            temperature: self.temperature,
            seed: self.seed,
            max_tokens: self.max_tokens,
            json: false,
        }
    }
}

/// Normalizes an endpoint base URL: `http(s)` only, trailing slashes and a trailing
/// `/chat/completions` dropped, and `/v1` added when the URL has no path
/// (`http://localhost:11434` → `http://localhost:11434/v1`). Other paths (`/api/v1`,
/// `/openai/v1`) are kept as given.
pub fn normalize_base_url(url: &str) -> Result<String> {
    // Quoted with everything before its last `@` past the scheme left out: a password holding
    // `#`, `/` or `?` does not parse as one, so no pattern could find it in the URL.
    let shown = match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}{REDACTED}@{}", &url[..scheme + 3], &url[at + 1..])
        }
        (None, Some(at)) => format!("{REDACTED}@{}", &url[at + 1..]),
        _ => url.to_owned(),
    };
    // A query or fragment (`?token=…`) may carry a key too: left out.
    let shown = match shown.find(['?', '#']) {
        Some(cut) => format!("{}…", &shown[..cut]),
        None => shown,
    };
    let bad = |why: &str| {
        Error::InvalidInput(redact_url_credentials(&format!(
            "LLM base URL {shown:?}: {why}"
        )))
    };
    let parsed = reqwest::Url::parse(url.trim()).map_err(|e| bad(&e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("the scheme must be http or https"));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(bad("no host"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(bad("a base URL takes no query or fragment"));
    }
    let mut text = parsed.as_str().trim_end_matches('/').to_owned();
    if let Some(stripped) = text.strip_suffix("/chat/completions") {
        text = stripped.trim_end_matches('/').to_owned();
    }
    if reqwest::Url::parse(&text).is_ok_and(|u| u.path() == "/") {
        text.push_str("/v1");
    }
    Ok(text)
}

#[allow(clippy::ref_option)] // serde's `serialize_with` passes the field by reference
fn serialize_redacted_url<S: Serializer>(
    url: &Option<String>,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    match url {
        Some(url) => serializer.serialize_some(&redact_url_credentials(url)),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::redact::REDACTED;
    use super::*;

    #[test]
    fn base_urls_are_normalized() {
        let n = |u| normalize_base_url(u).unwrap();
        assert_eq!(n("http://localhost:11434"), "http://localhost:11434/v1");
        assert_eq!(n("http://localhost:11434/"), "http://localhost:11434/v1");
        assert_eq!(n("http://h:8000/v1/"), "http://h:8000/v1");
        assert_eq!(n("https://api.openai.com/v1"), "https://api.openai.com/v1");
        assert_eq!(n("http://h/v1/chat/completions"), "http://h/v1");
        assert_eq!(n("http://h/api/v1"), "http://h/api/v1");
        for bad in [
            "localhost:8000",
            "ftp://h/v1",
            "not a url",
            "http://h/v1?x=1",
            "",
        ] {
            assert!(normalize_base_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn secrets_never_print() {
        let config = LlmConfig {
            api_key: Some(Secret::new("sk-very-secret")),
            ..LlmConfig::default()
        };
        assert!(!format!("{config:?}").contains("sk-very-secret"));
        let json = serde_json::to_string(&config).unwrap();
        assert!(!json.contains("sk-very-secret") && json.contains(REDACTED));
        assert_eq!(
            config
                .redactor()
                .redact("echo sk-very-secret and sk-very-secret"),
            "echo <redacted> and <redacted>"
        );
        assert_eq!(
            config.api_key.as_ref().map(Secret::expose),
            Some("sk-very-secret")
        );
    }

    /// A non-ASCII key sent in a header came back from a server as latin-1 JSON escapes
    /// (`sk-\u00c3\u00a9…`), past the redactor: such a key is refused, unnamed.
    #[test]
    fn a_key_outside_printable_ascii_is_refused_without_showing_it() {
        for key in ["sk-é€密钥", "sk has space", "sk-\u{7}"] {
            let config = LlmConfig {
                api_key: Some(Secret::new(key)),
                ..LlmConfig::default()
            };
            let err = config.validated().unwrap_err().to_string();
            assert!(
                err.contains("printable ASCII") && !err.contains(key),
                "{err}"
            );
        }
        let fine = LlmConfig {
            api_key: Some(Secret::new("sk-proj_AZaz09-._~+/=")),
            ..LlmConfig::default()
        };
        assert!(fine.validated().is_ok());
    }

    #[test]
    fn a_placeholder_key_is_not_redacted() {
        // Local servers take any key; `test` must not rewrite `tests/test_parser.py`.
        let config = |key: &str| LlmConfig {
            api_key: Some(Secret::new(key)),
            ..LlmConfig::default()
        };
        let shown = config("test").redactor().redact("tests/test_parser.py");
        assert_eq!(shown, "tests/test_parser.py");
        let shown = config("sk-abcdefgh").redactor().redact("test sk-abcdefgh");
        assert_eq!(shown, "test <redacted>");
    }

    /// Found by a review: with `http://admin:admin@host` every `admin` in the model's answers
    /// became `<redacted>` (`django/contrib/<redacted>/options.py`, then dropped); a URL's
    /// short credentials are kept out of errors but not replaced in answers.
    #[test]
    fn short_url_credentials_leave_answers_alone() {
        let config = |url: &str| LlmConfig {
            base_url: Some(url.to_owned()),
            model: "m".to_owned(),
            ..LlmConfig::default()
        };
        let short = config("http://admin:admin@h:1");
        let path = "django/contrib/admin/options.py";
        assert_eq!(short.answer_redactor().redact(path), path);
        assert_eq!(
            short.redactor().redact(path),
            "django/contrib/<redacted>/options.py"
        );
        // The pair sent as basic authentication is long enough to go from answers too.
        for form in ["admin:admin", "YWRtaW46YWRtaW4=", "YWRtaW46YWRtaW4"] {
            assert_eq!(
                short.answer_redactor().redact(&format!("echo {form}.")),
                "echo <redacted>.",
                "{form}"
            );
        }
        let long = config("http://user:s%40cretPW@h:1");
        for form in ["s@cretPW", "s%40cretPW", "user:s@cretPW"] {
            assert_eq!(
                long.answer_redactor().redact(&format!("echo {form}.")),
                "echo <redacted>.",
                "{form}"
            );
        }
    }

    #[test]
    fn url_passwords_never_print() {
        let config = LlmConfig {
            base_url: Some("http://user:s%40cret@h:1".to_owned()),
            model: "m".to_owned(),
            ..LlmConfig::default()
        }
        .validated()
        .unwrap();
        let json = serde_json::to_string(&config).unwrap();
        assert!(json.contains("http://user:<redacted>@h:1/v1"), "{json}");
        assert!(!json.contains("s%40cret"), "{json}");
        let redactor = config.redactor();
        for form in ["s%40cret", "s@cret", "dXNlcjpzQGNyZXQ=", "user:s@cret"] {
            let shown = redactor.redact(&format!("echo {form}."));
            assert_eq!(shown, "echo <redacted>.", "{form}");
        }
        let err = normalize_base_url("ftp://user:hunter2@h/v1").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
        // Passwords that do not parse as passwords are left out too.
        for url in [
            "http://alice:s3cr#etPW@127.0.0.1:9",
            "http://alice:s3/cr?etPW@127.0.0.1:9",
            "http://sk-abcdef#ghijklmnop@h:1",
            "http://127.0.0.1:9/v1?token=QSECRET",
            "http://127.0.0.1:9/v1#key=QSECRET",
        ] {
            let err = normalize_base_url(url).unwrap_err().to_string();
            assert!(
                !err.contains("s3cr")
                    && !err.contains("etPW")
                    && !err.contains("ghijk")
                    && !err.contains("QSECRET"),
                "{err}"
            );
        }
        assert_eq!(
            redact_url_credentials("see https://a:b@h/x and http://h/ and http://u@h/"),
            "see https://a:<redacted>@h/x and http://h/ and http://<redacted>@h/"
        );
    }

    #[test]
    fn timeouts_must_fit_a_duration() {
        for bad in [1e20, f64::NAN, f64::INFINITY, -1.0, 0.0] {
            let config = LlmConfig {
                request_timeout_s: bad,
                ..LlmConfig::default()
            };
            let err = config.validated().unwrap_err();
            assert!(err.is_input_error(), "{bad}: {err}");
            let config = LlmConfig {
                connect_timeout_s: bad,
                ..LlmConfig::default()
            };
            assert!(config.validated().is_err(), "{bad}");
        }
        let client = crate::llm::LlmClient::from_json(
            r#"{"base_url": "http://127.0.0.1:9", "model": "m", "request_timeout_s": 1e20}"#,
        );
        assert!(client.unwrap_err().is_input_error());
    }

    #[test]
    fn environment_fills_only_unset_fields() {
        let env = |name: &str| match name {
            ENV_BASE_URL => Some("http://env:1".to_owned()),
            ENV_MODEL => Some("env-model".to_owned()),
            ENV_API_KEY => Some("env-key".to_owned()),
            _ => None,
        };
        let mut config = LlmConfig {
            model: "flag-model".to_owned(),
            ..LlmConfig::default()
        };
        config.fill_from(env);
        assert_eq!(config.base_url.as_deref(), Some("http://env:1"));
        assert_eq!(config.model, "flag-model");
        assert_eq!(config.api_key.as_ref().map(Secret::expose), Some("env-key"));
    }

    #[test]
    fn validation_names_the_problem() {
        let err = |c: LlmConfig| c.validated().unwrap_err().to_string();
        let endpoint = LlmConfig {
            base_url: Some("http://h:1".to_owned()),
            model: "m".to_owned(),
            ..LlmConfig::default()
        };
        assert_eq!(
            endpoint.clone().validated().unwrap().base_url.as_deref(),
            Some("http://h:1/v1")
        );
        let no_model = LlmConfig {
            model: String::new(),
            ..endpoint.clone()
        };
        assert!(err(no_model).contains("model name"));
        let hot = LlmConfig {
            temperature: 3.0,
            ..endpoint.clone()
        };
        assert!(err(hot).contains("temperature"));
        let zero = LlmConfig {
            request_timeout_s: 0.0,
            ..endpoint.clone()
        };
        assert!(err(zero).contains("request timeout"));
        let same = LlmConfig {
            replay: Some("a".into()),
            record: Some("a".into()),
            ..endpoint.clone()
        };
        assert!(err(same).contains("two cassettes"));
        let both = LlmConfig {
            replay: Some("a".into()),
            record: Some("b".into()),
            ..endpoint
        };
        assert!(both.validated().is_ok());
        assert!(LlmConfig::default().validated().is_ok());
        assert!(serde_json::from_str::<LlmConfig>(r#"{"modle": "x"}"#).is_err());
    }
}
