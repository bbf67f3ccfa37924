//! BLAgent phase 2: one call over the best few candidates, each shown as its pruned context
//! (imports, module assignments, signatures, and the full bodies of the functions holding the
//! retriever's top chunks), answered with an order, a reason per file and, in the
//! function-level variant, the functions to edit. A ranking that lists a file twice is invalid
//! (sent back for repair like any other invalid reply).

use serde_json::Value;

#[cfg(doc)]
use super::context::pruned_context;
use super::paths::resolve;
use super::session::Session;
use crate::index::RepoIndex;
use crate::llm::Message;

const SHAPE: &str = r#"{"ranking": [{"path": "<path as shown>", "reason": "<short evidence>"}]}"#;
const SHAPE_FUNCTIONS: &str = r#"{"ranking": [{"path": "<path as shown>", "functions": ["<Class.method or function>"], "reason": "<short evidence>"}]}"#;

/// One file as phase 2 ranked it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reranked {
    pub file: usize,
    pub reason: Option<String>,
    pub functions: Vec<String>,
}

fn parse(
    reply: &str,
    index: &RepoIndex,
    files: &[usize],
    dropped: &mut Vec<String>,
) -> Result<Vec<Reranked>, String> {
    let value = super::json::extract_json(reply)?;
    let items = value
        .get("ranking")
        .and_then(Value::as_array)
        .or_else(|| value.as_array())
        .ok_or("$.ranking must be a list of {\"path\": ..., \"reason\": ...} objects")?;
    let mut out: Vec<Reranked> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let path = item
            .as_str()
            .or_else(|| item.get("path").and_then(Value::as_str))
            .ok_or_else(|| format!("$.ranking[{i}].path must be a string"))?;
        let file = match resolve(index, path) {
            Ok((file, _)) if files.contains(&file) => file,
            Ok(_) => {
                dropped.push(format!("`{path}` is not one of the files shown"));
                continue;
            }
            Err(why) => {
                dropped.push(why);
                continue;
            }
        };
        if out.iter().any(|r| r.file == file) {
            // A ranking holds each file once; a repeat (small models loop) leaves its place
            // undefined, and the permutation check compares places.
            return Err(format!(
                "$.ranking[{i}]: `{path}` is already ranked above; list each file once, best first"
            ));
        }
        let functions = item
            .get("functions")
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let reason = item
            .get("reason")
            .and_then(Value::as_str)
            .map(str::to_owned);
        out.push(Reranked {
            file,
            reason,
            functions,
        });
    }
    if out.is_empty() {
        return Err(format!(
            "no ranked path is one of the files shown ({}); use the paths after ###",
            dropped.join("; ")
        ));
    }
    Ok(out)
}

/// Runs phase 2 as `stage` over `files`, each with its pruned context (see [`pruned_context`]),
/// in the order shown; the model's order, or `None` when it gave none.
pub(crate) fn rerank(
    session: &mut Session<'_>,
    stage: &str,
    index: &RepoIndex,
    issue: &str,
    files: &[(usize, String)],
    functions: bool,
) -> crate::Result<Option<Vec<Reranked>>> {
    let contexts: Vec<&str> = files.iter().map(|(_, context)| context.as_str()).collect();
    let (prompt, shape) = if functions {
        ("phase2_rerank_functions", SHAPE_FUNCTIONS)
    } else {
        ("phase2_rerank", SHAPE)
    };
    let text = session
        .prompts
        .render(prompt, &[("issue", issue), ("files", &contexts.join("\n"))])?;
    let shown: Vec<usize> = files.iter().map(|f| f.0).collect();
    let mut dropped = Vec::new();
    let ranked = session.ask(stage, &mut vec![Message::user(text)], shape, |reply| {
        dropped.clear();
        parse(reply, index, &shown, &mut dropped)
    });
    session.stats.drop_paths(dropped);
    Ok(ranked)
}
