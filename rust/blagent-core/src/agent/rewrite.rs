//! The T0 (structural) and T1 (behavioral) rewrites of the issue into search queries, each with
//! an LLM-free fallback built from the pattern-extracted fields.

use super::json::{parse_checked, Shape};
use super::session::Session;
use crate::query::Reformulation;

/// The shape quoted in repair requests.
const SHAPE: &str = r#"{"query": "<text>"}"#;
/// A heuristic query keeps at most this many bytes.
const MAX_HEURISTIC_BYTES: usize = 1200;

/// A rewritten query and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Rewrite {
    /// The query text.
    pub text: String,
    /// Whether the model wrote it (else the heuristic fallback did).
    pub from_model: bool,
}

fn cut(mut text: String) -> String {
    if text.len() > MAX_HEURISTIC_BYTES {
        let mut end = MAX_HEURISTIC_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// T0 without a model: the paths, file names, modules, identifiers and traceback frames the
/// issue names; its title when it names none.
pub fn heuristic_structural(query: &Reformulation) -> String {
    let mut parts: Vec<String> = Vec::new();
    parts.extend(query.paths.iter().cloned());
    parts.extend(query.filenames.iter().cloned());
    parts.extend(query.modules.iter().cloned());
    parts.extend(query.identifiers.iter().map(|i| i.name.clone()));
    for frame in &query.stack_frames {
        parts.push(frame.path.clone());
        parts.extend(frame.function.clone());
    }
    let mut seen = std::collections::HashSet::new();
    parts.retain(|p| seen.insert(p.clone()));
    if parts.is_empty() {
        return query.title.clone();
    }
    cut(parts.join(" "))
}

/// T1 without a model: the title, the error messages, then the explanation.
pub fn heuristic_behavioral(query: &Reformulation) -> String {
    let mut parts = vec![query.title.clone()];
    parts.extend(query.error_messages.iter().cloned());
    parts.push(query.explanation.clone());
    cut(parts.join("\n"))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::reformulate;

    #[test]
    fn heuristics_use_the_extracted_fields() {
        let q = reformulate(
            "Cart total is negative\n\nCalling `Cart.total()` in shop/cart.py raises \
             ValueError: negative amount",
        );
        let t0 = heuristic_structural(&q);
        assert!(
            t0.contains("shop/cart.py") && t0.contains("Cart.total"),
            "{t0}"
        );
        let t1 = heuristic_behavioral(&q);
        assert!(t1.starts_with("Cart total is negative"), "{t1}");
        let plain = reformulate("it does not work at all");
        assert_eq!(heuristic_structural(&plain), plain.title);
    }
}
