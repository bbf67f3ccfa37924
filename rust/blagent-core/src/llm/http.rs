//! [`HttpModel`]: any OpenAI-compatible `POST {base}/chat/completions` (Ollama, vLLM, the
//! `llama.cpp` server, OpenAI-hosted models), on a blocking `reqwest` client with rustls.
//! Timeouts on connect and on the whole request (connect, headers and the entire body: an
//! endpoint that dribbles its body holds an attempt no longer than one request timeout);
//! bounded retries ([`Backoff`]) on 408, 429, 5xx gateway errors, connection errors and
//! malformed bodies; a concurrency limit shared by all threads using the model. A request that
//! used its whole timeout is not retried (an endpoint that accepts connections and never
//! answers costs one request timeout, not one per attempt), response bodies are read up to
//! [`MAX_BODY_BYTES`], every wait ends early on [`crate::cancel::request`], and everything the
//! server sends back (errors and answers) passes the configuration's [`Redactor`].

use std::io::Read;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use reqwest::header::{CONTENT_TYPE, RETRY_AFTER};
use serde::{Deserialize, Serialize};

use super::backoff::{parse_retry_after, Backoff};
use super::config::LlmConfig;
use super::limit::ConcurrencyLimit;
use super::redact::Redactor;
use super::redact::Secret;
use super::usage::TokenCounter;
use super::{ChatModel, ChatRequest, ChatResponse, Message, Usage};
use crate::error::{Error, Result};

/// Statuses worth retrying: request timeout, rate limit, and transient server errors.
pub const RETRYABLE_STATUSES: [u16; 6] = [408, 429, 500, 502, 503, 504];
/// Characters of a response body quoted in an error.
const SNIPPET_CHARS: usize = 300;
/// The largest response body read.
pub const MAX_BODY_BYTES: u64 = 64 << 20;
/// Bytes asked of the body per read (the deadline is checked between reads).
const READ_CHUNK_BYTES: usize = 64 << 10;
/// How the message of a failure retried until the retries ran out begins, after the endpoint
/// and the model (`http://h/v1/chat/completions (model m): gave up after 5 attempt(s) …`).
const GAVE_UP: &str = "gave up after";
/// How every message of a request that used its whole timeout names it.
const WHOLE_TIMEOUT: &str = "request timeout of";

/// Whether `message`, the text of an [`Error::Llm`] that [`HttpModel`] returned (as a cassette
/// records it), tells of a transient failure, one that asking again later may not repeat: a
/// failure retried until the retries ran out (408, 429, 5xx, a connection failure, a truncated
/// or malformed body) or a request that used its whole timeout. A permanent one (another 4xx,
/// a body too large, a request that cannot be built) is not. The message is read for the words
/// these failures are told in, so a permanent failure whose quoted body holds them passes for
/// a transient one: that costs one more request, never a wrong answer.
pub fn is_transient_failure(message: &str) -> bool {
    message.contains(&format!("): {GAVE_UP} ")) || message.contains(&format!("{WHOLE_TIMEOUT} "))
}

/// A chat model behind an OpenAI-compatible HTTP endpoint. Share one across threads: its
/// concurrency limit then bounds the whole run.
#[derive(Debug)]
pub struct HttpModel {
    url: String,
    model: String,
    api_key: Option<Secret>,
    /// Scrubs the key and the base URL's credentials, in every form, from what the server
    /// sends back.
    redactor: Redactor,
    /// The same for a model's answers, but for credentials too short to tell from words
    /// ([`LlmConfig::answer_redactor`]).
    answer_redactor: Redactor,
    request_timeout_s: f64,
    client: reqwest::blocking::Client,
    max_retries: u32,
    backoff: Backoff,
    limit: ConcurrencyLimit,
    counter: TokenCounter,
}

/// What went wrong with one attempt.
enum Failure {
    /// Transient: try again, after `retry_after` when the server said so.
    Retry {
        message: String,
        retry_after: Option<Duration>,
    },
    /// Permanent (a 4xx other than 408/429, a request that used its whole timeout): give up
    /// now.
    Fatal(String),
    /// A stop was asked for ([`crate::cancel`]).
    Cancelled,
}

/// What the request thread of one attempt saw.
enum Exchange {
    NotSent(reqwest::Error),
    Answered {
        status: reqwest::StatusCode,
        retry_after: Option<Duration>,
        body: std::io::Result<Vec<u8>>,
    },
}

impl Failure {
    fn retry(message: String) -> Self {
        Failure::Retry {
            message,
            retry_after: None,
        }
    }
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: &'a [Message],
    temperature: f32,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<serde_json::Value>,
    stream: bool,
}

#[derive(Deserialize)]
struct WireResponse {
    choices: Vec<WireChoice>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireChoice {
    message: WireMessage,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    content: Option<String>,
}

/// The usage a server reports. A count that is missing, null or not a whole number of tokens
/// (servers send all three) leaves the usage to be estimated rather than failing the answer.
#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: serde_json::Value,
    #[serde(default)]
    completion_tokens: serde_json::Value,
}

impl WireUsage {
    /// Both counts, where both are whole numbers.
    fn counts(&self) -> Option<(u64, u64)> {
        Some((
            self.prompt_tokens.as_u64()?,
            self.completion_tokens.as_u64()?,
        ))
    }
}

/// The most redirects a request follows.
const MAX_REDIRECTS: usize = 5;

/// Redirects are followed only within the endpoint's origin (scheme, host and port), at most
/// [`MAX_REDIRECTS`]: a prompt carries the repository's code, and a redirect elsewhere would
/// send it to a host the user never named. Any other redirect is the endpoint's answer, an
/// HTTP error.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first();
        let same_origin = first.is_some_and(|from| from.origin() == attempt.url().origin());
        if !same_origin || attempt.previous().len() > MAX_REDIRECTS {
            attempt.stop()
        } else {
            attempt.follow()
        }
    })
}

impl HttpModel {
    /// A model for `config`'s endpoint (validated first). Loads the configured tokenizer for
    /// estimates, if any.
    pub fn new(config: &LlmConfig) -> Result<Self> {
        let config = config.clone().validated()?;
        let base = config.base_url.as_deref().ok_or_else(|| {
            Error::InvalidInput("LLM configuration: no endpoint base URL".to_owned())
        })?;
        let client = reqwest::blocking::Client::builder()
            .connect_timeout(config.connect_timeout())
            .timeout(config.request_timeout())
            .redirect(same_origin_redirects())
            .build()
            .map_err(|e| Error::Llm(format!("cannot create the HTTP client: {}", chain(&e))))?;
        Ok(HttpModel {
            url: format!("{base}/chat/completions"),
            model: config.model.clone(),
            api_key: config.api_key.clone(),
            redactor: config.redactor(),
            answer_redactor: config.answer_redactor(),
            request_timeout_s: config.request_timeout_s,
            client,
            max_retries: config.max_retries,
            backoff: Backoff::new(Duration::from_millis(config.backoff_base_ms)),
            limit: ConcurrencyLimit::new(config.max_concurrency),
            counter: TokenCounter::load(config.tokenizer.as_deref())?,
        })
    }

    /// One attempt, holding a concurrency permit. The request runs on a thread of its own, so
    /// that neither a cancellation nor the request timeout waits for a hanging or dribbling
    /// endpoint: the attempt ends at its deadline, one request timeout after it was sent,
    /// whatever the server is doing. The thread stops reading at that deadline too (or at
    /// reqwest's timeout on a read that receives nothing).
    fn attempt(
        &self,
        body: &[u8],
        request: &ChatRequest,
    ) -> std::result::Result<ChatResponse, Failure> {
        let _permit = self.limit.acquire();
        if crate::cancel::is_requested() {
            return Err(Failure::Cancelled);
        }
        let (receiver, deadline) = self.send(body);
        let exchange = self.wait(&receiver, deadline)?;
        let text = self.answer(exchange)?;
        self.parse_answer(&text, request)
    }

    /// Sends `body` on a thread of its own, which reads the answer until the deadline (one
    /// request timeout from now, returned too) and then sends what it saw on the channel.
    fn send(&self, body: &[u8]) -> (mpsc::Receiver<Exchange>, Instant) {
        let mut builder = self
            .client
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key.expose());
        }
        let deadline = Instant::now() + Duration::from_secs_f64(self.request_timeout_s);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let exchange = match builder.send() {
                Err(e) => Exchange::NotSent(e),
                Ok(response) => {
                    let status = response.status();
                    let retry_after = response
                        .headers()
                        .get(RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(parse_retry_after);
                    Exchange::Answered {
                        status,
                        retry_after,
                        body: read_body(response, deadline),
                    }
                }
            };
            let _ = tx.send(exchange);
        });
        (rx, deadline)
    }

    /// What the request thread saw, awaited until `deadline` (its end is fatal: not retried)
    /// or a cancellation, whichever comes first.
    fn wait(
        &self,
        receiver: &mpsc::Receiver<Exchange>,
        deadline: Instant,
    ) -> std::result::Result<Exchange, Failure> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let waited = if left.is_zero() {
                receiver.try_recv().map_err(|e| match e {
                    mpsc::TryRecvError::Empty => mpsc::RecvTimeoutError::Timeout,
                    mpsc::TryRecvError::Disconnected => mpsc::RecvTimeoutError::Disconnected,
                })
            } else {
                receiver.recv_timeout(left.min(crate::cancel::POLL))
            };
            match waited {
                Ok(exchange) => return Ok(exchange),
                Err(mpsc::RecvTimeoutError::Timeout) if crate::cancel::is_requested() => {
                    return Err(Failure::Cancelled)
                }
                Err(mpsc::RecvTimeoutError::Timeout) if left.is_zero() => {
                    return Err(Failure::Fatal(format!(
                        "no complete answer (connect, headers and body) within the \
                         {WHOLE_TIMEOUT} {} s; not retried",
                        self.request_timeout_s
                    )))
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Failure::Fatal("the request thread ended abnormally".into()))
                }
            }
        }
    }

    /// The body text of a successful answer; a request that was not sent, a body that could
    /// not be read or is too large, and an error status are failures (retried or not, by their
    /// kind).
    fn answer(&self, exchange: Exchange) -> std::result::Result<String, Failure> {
        let (status, retry_after, body) = match exchange {
            Exchange::NotSent(e) => {
                return Err(transport_failure(&e.without_url(), self.request_timeout_s))
            }
            Exchange::Answered {
                status,
                retry_after,
                body,
            } => (status, retry_after, body),
        };
        let bytes = body.map_err(|e| {
            let message = format!("HTTP {status}, reading the body failed: {e}");
            if is_timeout(&e) {
                Failure::Fatal(format!(
                    "{message} (the whole {WHOLE_TIMEOUT} {} s was used; not retried)",
                    self.request_timeout_s
                ))
            } else {
                Failure::retry(message)
            }
        })?;
        if bytes.len() as u64 > MAX_BODY_BYTES {
            return Err(Failure::Fatal(format!(
                "HTTP {status}: the response body is larger than {} MiB",
                MAX_BODY_BYTES >> 20
            )));
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if !status.is_success() {
            let message = format!("HTTP {status}: {}", self.snippet(&text));
            return Err(if RETRYABLE_STATUSES.contains(&status.as_u16()) {
                Failure::Retry {
                    message,
                    retry_after,
                }
            } else {
                Failure::Fatal(message)
            });
        }
        Ok(text)
    }

    /// The response in a successful answer's body `text`: its first choice, redacted as an
    /// answer ([`LlmConfig::answer_redactor`]), with the usage the server reported or, without
    /// one, an estimate. A body that is not a chat completion is retried.
    fn parse_answer(
        &self,
        text: &str,
        request: &ChatRequest,
    ) -> std::result::Result<ChatResponse, Failure> {
        let wire: WireResponse = serde_json::from_str(text).map_err(|e| {
            Failure::retry(format!(
                "malformed response body ({e}): {}",
                self.snippet(text)
            ))
        })?;
        let choice = wire.choices.into_iter().next().ok_or_else(|| {
            Failure::retry(format!("response without choices: {}", self.snippet(text)))
        })?;
        let content = self
            .answer_redactor
            .redact(&choice.message.content.unwrap_or_default());
        let usage = match wire.usage.as_ref().and_then(WireUsage::counts) {
            Some((prompt_tokens, completion_tokens)) => Usage {
                prompt_tokens,
                completion_tokens,
                estimated: false,
            },
            None => self.counter.estimate(&request.messages, &content),
        };
        Ok(ChatResponse {
            content,
            usage,
            finish_reason: choice
                .finish_reason
                .map(|r| self.answer_redactor.redact(&r)),
        })
    }

    /// The start of a body for an error message, redacted before it is cut: a secret that
    /// straddles the cut would no longer match in what is left of it.
    fn snippet(&self, text: &str) -> String {
        let head: String = text
            .trim()
            .chars()
            .take(SNIPPET_CHARS + MAX_SECRET_SPAN)
            .collect();
        snippet(&self.redactor.redact(&head))
    }

    fn error(&self, message: &str) -> Error {
        let text = format!("{} (model {}): {message}", self.url, self.model);
        Error::Llm(self.redactor.redact(&text))
    }
}

impl ChatModel for HttpModel {
    fn name(&self) -> String {
        format!("http:{}", self.model)
    }

    fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let body = serde_json::to_vec(&WireRequest {
            model: &self.model,
            messages: &request.messages,
            temperature: request.temperature,
            seed: request.seed,
            max_tokens: request.max_tokens,
            response_format: request
                .json
                .then(|| serde_json::json!({"type": "json_object"})),
            stream: false,
        })?;
        let mut retry = 0;
        loop {
            let (message, retry_after) = match self.attempt(&body, request) {
                Ok(response) => return Ok(response),
                Err(Failure::Fatal(message)) => return Err(self.error(&message)),
                Err(Failure::Cancelled) => return Err(Error::Cancelled),
                Err(Failure::Retry {
                    message,
                    retry_after,
                }) => (message, retry_after),
            };
            if retry >= self.max_retries {
                let attempts = retry + 1;
                return Err(self.error(&format!(
                    "{GAVE_UP} {attempts} attempt(s) (stage {}); last error: {message}",
                    request.stage
                )));
            }
            crate::cancel::sleep(self.backoff.delay(retry, retry_after))?;
            retry += 1;
        }
    }
}

/// The body of `response`, up to `MAX_BODY_BYTES` and a chunk, read a chunk at a time until
/// `deadline`: a body still arriving then is a timeout.
fn read_body(mut response: impl Read, deadline: Instant) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut chunk = vec![0; READ_CHUNK_BYTES];
    while bytes.len() as u64 <= MAX_BODY_BYTES {
        if Instant::now() >= deadline {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the body was still arriving at the request timeout",
            ));
        }
        match response.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(bytes)
}

/// Whether an error reading a body is a timeout.
fn is_timeout(err: &std::io::Error) -> bool {
    err.kind() == std::io::ErrorKind::TimedOut
        || err
            .get_ref()
            .and_then(|e| e.downcast_ref::<reqwest::Error>())
            .is_some_and(reqwest::Error::is_timeout)
}

/// A failure to send or to get a response: retried, except a request that cannot be built and
/// one that used the whole request timeout (`timeout_s`).
fn transport_failure(err: &reqwest::Error, timeout_s: f64) -> Failure {
    if err.is_builder() {
        return Failure::Fatal(format!("invalid request: {}", chain(err)));
    }
    if err.is_timeout() && !err.is_connect() {
        return Failure::Fatal(format!(
            "no answer within the {WHOLE_TIMEOUT} {timeout_s} s; not retried: {}",
            chain(err)
        ));
    }
    let what = if err.is_connect() {
        "cannot connect (is the server running?)"
    } else if err.is_timeout() {
        "timed out"
    } else {
        "request failed"
    };
    Failure::retry(format!("{what}: {}", chain(err)))
}

/// An error and its sources, `outer: inner: innermost` (reqwest's own message alone rarely
/// says *why*).
fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        let line = inner.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = inner.source();
    }
    text
}

/// How many characters of a body past its snippet are redacted with it: more than any form
/// of a key (as written, percent-encoded or JSON-escaped, six characters to one) spans.
const MAX_SECRET_SPAN: usize = 8192;

/// The start of a body, for error messages (redacted first: [`HttpModel::snippet`]).
fn snippet(text: &str) -> String {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return "(empty body)".to_owned();
    }
    crate::text::cut_chars(trimmed.chars(), SNIPPET_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> HttpModel {
        HttpModel::new(&LlmConfig {
            base_url: Some("http://127.0.0.1:9".to_owned()),
            model: "m".to_owned(),
            api_key: Some(Secret::new("sk-test-key")),
            ..LlmConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn url_name_and_debug_hide_the_key() {
        let m = model();
        assert_eq!(m.url, "http://127.0.0.1:9/v1/chat/completions");
        assert_eq!(m.name(), "http:m");
        assert!(!format!("{m:?}").contains("sk-test-key"));
        let err = m.error("server said: bad key sk-test-key").to_string();
        assert!(
            !err.contains("sk-test-key") && err.contains("<redacted>"),
            "{err}"
        );
    }

    #[test]
    fn snippets_are_bounded() {
        assert_eq!(snippet("  "), "(empty body)");
        let long = "x".repeat(1000);
        assert_eq!(snippet(&long).chars().count(), SNIPPET_CHARS + 1);
    }

    /// Found by a review: a key crossing the snippet's cut lost its last characters before it
    /// was redacted, so what was left no longer matched and was shown.
    #[test]
    fn a_key_across_the_cut_is_redacted_before_the_cut() {
        let m = model();
        for at in SNIPPET_CHARS - 8..SNIPPET_CHARS + 2 {
            let body = format!("{}sk-test-key and more", "-".repeat(at));
            let shown = m.snippet(&body);
            assert!(!shown.contains("sk-test"), "{at}: {shown}");
        }
    }

    /// A usage with a count that is null or not a whole number is estimated, not a failure.
    #[test]
    fn odd_usage_counts_are_estimated() {
        let m = model();
        let request = ChatRequest {
            stage: "t0".into(),
            messages: vec![super::super::Message::user("hello there")],
            temperature: 0.0,
            seed: None,
            max_tokens: None,
            json: false,
        };
        let answer = |usage: &str| {
            format!(
                r#"{{"choices": [{{"message": {{"content": "hi"}}, "finish_reason": "stop"}}], "usage": {usage}}}"#
            )
        };
        for odd in [
            r#"{"prompt_tokens": 10, "completion_tokens": null}"#,
            r#"{"prompt_tokens": 1e30, "completion_tokens": 2}"#,
            "{}",
            "null",
        ] {
            let parsed = m.parse_answer(&answer(odd), &request).ok().expect(odd);
            assert!(parsed.usage.estimated, "{odd}");
        }
        let exact = m
            .parse_answer(
                &answer(r#"{"prompt_tokens": 10, "completion_tokens": 2}"#),
                &request,
            )
            .ok()
            .unwrap();
        assert!(!exact.usage.estimated && exact.usage.prompt_tokens == 10);
    }
}
