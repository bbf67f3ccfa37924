//! The LLM as an input to stages: a [`ChatModel`] answers chat requests. Implementations: HTTP
//! (any OpenAI-compatible `/v1/chat/completions`), replay (recorded exchanges), and none
//! (LLM-free mode, which refuses every request so a stage falls back to retrieval).
//!
//! [`LlmConfig`] says which (CLI flags as JSON, `BLAGENT_LLM_*` environment variables);
//! [`model_from_config`] builds the model and [`LlmClient`] adds token accounting
//! ([`TokenLedger`]) and cost estimates ([`PriceTable`]).

mod backoff;
mod client;
mod config;
mod flags;
mod http;
mod limit;
mod prices;
mod redact;
mod replay;
mod usage;

use std::sync::Arc;

mod scripted;

use serde::{Deserialize, Serialize};

pub use self::backoff::{parse_retry_after, Backoff, BACKOFF_CAP, RETRY_AFTER_CAP};
pub use self::client::{model_from_config, model_named_reading, model_reading, LlmClient};
pub use self::config::{
    normalize_base_url, LlmConfig, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, MAX_TIMEOUT_S,
};
pub use self::flags::{config_flags, ConfigFlag};
pub use self::http::{is_transient_failure, HttpModel, RETRYABLE_STATUSES};
pub use self::limit::{ConcurrencyLimit, Permit};
pub use self::prices::{ModelPrice, PriceTable};
pub use self::redact::{redact_url_credentials, url_secrets, Redactor, Secret, REDACTED};
pub use self::replay::{request_key, CassetteEntry, RecordedRequest, RecordingModel, ReplayModel};
pub use self::scripted::ScriptedModel;
pub use self::usage::{
    StageUsage, TokenCounter, TokenLedger, UsageSummary, CHARS_PER_TOKEN, TOKENS_PER_MESSAGE,
};

use crate::error::{Error, Result};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions.
    System,
    /// Our side of the conversation (prompts, tool observations).
    User,
    /// The model's replies.
    Assistant,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Message {
    /// Author.
    pub role: Role,
    /// Text.
    pub content: String,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message {
            role: Role::System,
            content: content.into(),
        }
    }
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }
    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// One request to a chat model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The pipeline stage asking (`t0`, `t1`, `phase1`, …), for token accounting; not sent.
    pub stage: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Sampling temperature.
    pub temperature: f32,
    /// Sampling seed, when the endpoint honours one.
    pub seed: Option<u64>,
    /// Cap on completion tokens.
    pub max_tokens: Option<u32>,
    /// Ask for a JSON object (`response_format: {"type": "json_object"}`, which llama.cpp,
    /// vLLM, Ollama and OpenAI honour, llama.cpp and vLLM by constraining decoding).
    #[serde(default)]
    pub json: bool,
}

/// Token counts of one exchange.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Whether the counts were estimated locally because the response had no `usage`.
    #[serde(default)]
    pub estimated: bool,
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The assistant message text.
    pub content: String,
    /// Tokens spent.
    pub usage: Usage,
    /// The endpoint's finish reason (`stop`, `length`, …) when given.
    pub finish_reason: Option<String>,
}

/// Anything that answers chat requests. Implementations are shared across threads.
pub trait ChatModel: Send + Sync {
    /// A short identity for logs and results (`http:qwen2.5-coder`, `replay:file`, `none`); never
    /// contains a key.
    fn name(&self) -> String;

    /// Answers one request, retrying transient failures as the implementation sees fit. An error
    /// means no answer could be had; the stage falls back to retrieval.
    fn chat(&self, request: &ChatRequest) -> Result<ChatResponse>;

    /// Whether requests can be answered at all: false only for the LLM-free [`NoModel`].
    fn is_enabled(&self) -> bool {
        true
    }
}

impl<M: ChatModel + ?Sized> ChatModel for Box<M> {
    fn name(&self) -> String {
        (**self).name()
    }

    fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
        (**self).chat(request)
    }

    fn is_enabled(&self) -> bool {
        (**self).is_enabled()
    }
}

impl<M: ChatModel + ?Sized> ChatModel for Arc<M> {
    fn name(&self) -> String {
        (**self).name()
    }

    fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
        (**self).chat(request)
    }

    fn is_enabled(&self) -> bool {
        (**self).is_enabled()
    }
}

/// The LLM-free model: every request is refused, so every stage uses its retrieval fallback.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoModel;

impl ChatModel for NoModel {
    fn name(&self) -> String {
        "none".to_owned()
    }

    fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
        Err(Error::Llm(format!(
            "no LLM configured (stage {})",
            request.stage
        )))
    }

    fn is_enabled(&self) -> bool {
        false
    }
}
