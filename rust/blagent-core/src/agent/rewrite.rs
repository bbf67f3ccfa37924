//! The T0 (structural) and T1 (behavioral) rewrites of the issue into search queries; without a
//! valid answer the rule-based rewrites of [`crate::query`] stand in, the same ones LLM-free
//! dense retrieval uses.

use super::json::{parse_checked, Shape};
use super::session::Session;

/// The shape quoted in repair requests.
const SHAPE: &str = r#"{"query": "<text>"}"#;

/// A rewritten query and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Rewrite {
    /// The query text.
    pub text: String,
    /// Whether the model wrote it (else the heuristic fallback did).
    pub from_model: bool,
}

/// Asks for one rewrite (`stage` is `t0` or `t1`, `prompt` its prompt's name); the fallback
/// when the model gives no valid query.
pub(crate) fn rewrite(
    session: &mut Session<'_>,
    stage: &str,
    prompt: &str,
    issue: &str,
    fallback: String,
) -> crate::Result<Rewrite> {
    let shape = Shape::Object(vec![("query", Shape::Str, true)]);
    let mut messages = vec![crate::llm::Message::user(
        session.prompts.render(prompt, &[("issue", issue)])?,
    )];
    let query = session.ask(stage, &mut messages, SHAPE, |reply| {
        let value = parse_checked(reply, &shape)?;
        let text = value["query"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .to_owned();
        if text.is_empty() {
            return Err("$.query is empty".to_owned());
        }
        Ok(text)
    });
    Ok(match query {
        Some(text) => Rewrite {
            text,
            from_model: true,
        },
        None => Rewrite {
            text: fallback,
            from_model: false,
        },
    })
}
