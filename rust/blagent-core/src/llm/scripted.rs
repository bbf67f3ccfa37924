//! A scripted [`ChatModel`] for tests and demonstrations: canned replies in order, or a function
//! of the request, with every request recorded. Token counts are estimated (4 bytes a token).

use std::collections::VecDeque;
use std::sync::Mutex;

use super::{ChatModel, ChatRequest, ChatResponse, Usage};
use crate::error::{Error, Result};

type Reply = Box<dyn Fn(&ChatRequest) -> String + Send + Sync>;

/// Answers from a script; see the module documentation.
pub struct ScriptedModel {
    queue: Mutex<VecDeque<String>>,
    reply: Option<Reply>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl std::fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("requests", &self.requests().len())
            .finish_non_exhaustive()
    }
}

impl ScriptedModel {
    /// Replies with `replies` in order; once they run out every request fails with
    /// [`Error::Llm`].
    pub fn new<S: Into<String>>(replies: impl IntoIterator<Item = S>) -> Self {
        ScriptedModel {
            queue: Mutex::new(replies.into_iter().map(Into::into).collect()),
            reply: None,
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Replies with `reply(request)` to every request.
    pub fn from_fn(reply: impl Fn(&ChatRequest) -> String + Send + Sync + 'static) -> Self {
        ScriptedModel {
            queue: Mutex::new(VecDeque::new()),
            reply: Some(Box::new(reply)),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// Estimated tokens of a text: 4 bytes a token.
fn estimate(text: &str) -> u64 {
    text.len().div_ceil(4) as u64
}

impl ChatModel for ScriptedModel {
    fn name(&self) -> String {
        "scripted".to_owned()
    }

    fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(request.clone());
        let content = match &self.reply {
            Some(reply) => reply(request),
            None => self
                .queue
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .pop_front()
                .ok_or_else(|| Error::Llm(format!("script exhausted (stage {})", request.stage)))?,
        };
        let prompt: u64 = request.messages.iter().map(|m| estimate(&m.content)).sum();
        Ok(ChatResponse {
            usage: Usage {
                prompt_tokens: prompt,
                completion_tokens: estimate(&content),
                estimated: true,
            },
            content,
            finish_reason: Some("stop".to_owned()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Message;

    fn request(stage: &str) -> ChatRequest {
        ChatRequest {
            stage: stage.to_owned(),
            messages: vec![Message::user("12345678")],
            temperature: 0.0,
            seed: None,
            max_tokens: None,
            json: false,
        }
    }

    #[test]
    fn replies_in_order_records_requests_and_runs_out() {
        let model = ScriptedModel::new(["a", "bb"]);
        assert_eq!(model.chat(&request("x")).unwrap().content, "a");
        let second = model.chat(&request("y")).unwrap();
        assert_eq!(
            (second.content.as_str(), second.usage.prompt_tokens),
            ("bb", 2)
        );
        assert!(model
            .chat(&request("z"))
            .unwrap_err()
            .to_string()
            .contains("stage z"));
        assert_eq!(model.requests().len(), 3);
        let echo = ScriptedModel::from_fn(|r| r.stage.clone());
        assert_eq!(echo.chat(&request("t0")).unwrap().content, "t0");
    }
}
