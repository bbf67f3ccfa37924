//! BLAgent phase 1: a `ReAct` loop over the candidates. Each turn the model either reads the
//! skeletons of up to three candidates (`read_skeleton`) or finishes with a 0–10 score per
//! candidate. Turns are bounded by `max_steps` and by a prompt-token budget; a candidate read
//! twice is not shown again (the duplicate-read guard), and after two turns that read nothing
//! new the model must finish. Only the compact action is kept in the conversation, never the
//! model's thoughts, so later turns stay short.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use super::json::{as_number, extract_json};
use super::paths::resolve;
use super::session::Session;
use super::tools::{approx_tokens, read_skeleton};
use super::LlmOptions;
use crate::index::RepoIndex;
use crate::llm::Message;

/// Skeletons one turn may read.
const READS_PER_TURN: usize = 3;
/// Turns that read nothing new before the model must finish.
const MAX_IDLE_TURNS: usize = 2;
const SHAPE: &str = r#"{"thought": "<short>", "action": "read_skeleton", "paths": ["<candidate path>"]} or {"thought": "<short>", "action": "finish", "scores": {"<candidate path>": <integer 0-10>}}"#;

enum Action {
    Read(Vec<String>),
    Finish(HashMap<usize, f32>),
}

fn string_list(value: &Value, key: &str) -> Result<Vec<String>, String> {
    match value.get(key) {
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("$.{key} must hold strings, got {v}"))
            })
            .collect(),
        _ => Err(format!(
            "$.{key} must be a non-empty list of candidate paths"
        )),
    }
}

fn parse_action(
    reply: &str,
    index: &RepoIndex,
    candidates: &[usize],
    may_read: bool,
    dropped: &mut Vec<String>,
) -> Result<Action, String> {
    let value = extract_json(reply)?;
    let action = value
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match action {
        "read_skeleton" if !may_read => {
            Err("no reads left: reply with action \"finish\" and your scores".to_owned())
        }
        "read_skeleton" => {
            let paths = string_list(&value, "paths").or_else(|_| string_list(&value, "path"))?;
            Ok(Action::Read(
                paths.into_iter().take(READS_PER_TURN).collect(),
            ))
        }
        "finish" => {
            let scores = value
                .get("scores")
                .and_then(Value::as_object)
                .ok_or("$.scores must be an object mapping candidate paths to integers 0-10")?;
            let mut out = HashMap::new();
            let mut refused = Vec::new();
            for (path, score) in scores {
                // `{"path": {"score": 7}}` is a common variant of `{"path": 7}`.
                let score = as_number(score)
                    .or_else(|| score.get("score").and_then(as_number))
                    .filter(|s| (0.0..=10.0).contains(s))
                    .ok_or_else(|| {
                        format!("$.scores[{path:?}] must be an integer 0-10, got {score}")
                    })?;
                match resolve(index, path) {
                    Ok((file, _)) if candidates.contains(&file) => {
                        out.insert(file, score as f32);
                    }
                    Ok(_) => refused.push(format!("`{path}` is not a candidate")),
                    Err(why) => refused.push(why),
                }
            }
            if out.is_empty() {
                return Err(format!(
                    "no score is for a listed candidate ({}); use the paths exactly as listed",
                    refused.join("; ")
                ));
            }
            dropped.extend(refused);
            Ok(Action::Finish(out))
        }
        other => Err(format!(
            "$.action must be \"read_skeleton\" or \"finish\", got {other:?}"
        )),
    }
}

/// Runs phase 1; the scores per candidate file, or `None` when the model gave none.
pub(crate) fn score_candidates(
    session: &mut Session<'_>,
    index: &RepoIndex,
    issue: &str,
    candidates: &[usize],
    options: &LlmOptions,
) -> crate::Result<Option<HashMap<usize, f32>>> {
    let max_reads = options.max_steps.saturating_sub(1);
    let listing = super::context::summary_lines(index, candidates);
    let prompt = session.prompts.render(
        "phase1_scoring",
        &[
            ("issue", issue),
            ("candidates", &listing),
            ("max_reads", &max_reads.to_string()),
        ],
    )?;
    let mut messages = vec![Message::user(prompt)];
    let mut read: Vec<usize> = Vec::new();
    let (mut spent, mut idle) = (0usize, 0usize);
    let mut may_read = options.max_steps > 1;
    for step in 0..options.max_steps.max(1) {
        let size: usize = messages.iter().map(|m| approx_tokens(&m.content)).sum();
        spent += size;
        let mut dropped = Vec::new();
        let action = session.ask("phase1", &mut messages, SHAPE, |reply| {
            dropped.clear();
            parse_action(reply, index, candidates, may_read, &mut dropped)
        });
        session.stats.drop_paths(dropped);
        let paths = match action {
            None => return Ok(None),
            Some(Action::Finish(scores)) => return Ok(Some(scores)),
            Some(Action::Read(paths)) => paths,
        };
        let mut observation = String::new();
        let mut new_reads = 0;
        for path in &paths {
            let text = match resolve(index, path) {
                Ok((file, _)) if read.contains(&file) => {
                    session.stats.warn(&format!(
                        "phase1: duplicate read of {}",
                        index.files[file].path()
                    ));
                    format!(
                        "{}: already read above; do not read it again.\n",
                        index.files[file].path()
                    )
                }
                Ok((file, _)) if !candidates.contains(&file) => {
                    format!("{path}: not a candidate.\n")
                }
                Ok((file, _)) => {
                    read.push(file);
                    new_reads += 1;
                    read_skeleton(index, index.files[file].path(), options.skeleton_tokens)
                        .unwrap_or_else(|e| format!("{e}\n"))
                }
                Err(why) => format!("{why}.\n"),
            };
            observation.push_str(&text);
        }
        idle = if new_reads == 0 { idle + 1 } else { 0 };
        let left = options.max_steps.saturating_sub(step + 2);
        let next_size = size + approx_tokens(&observation) + 40;
        may_read = left > 0
            && idle < MAX_IDLE_TURNS
            && spent + next_size + options.skeleton_tokens * READS_PER_TURN
                <= options.phase1_budget_tokens;
        if may_read {
            let _ = write!(observation, "Reads left: {left}. Reply with JSON only.");
        } else {
            observation
                .push_str("No reads left: reply now with action \"finish\" and your scores.");
        }
        messages.push(Message::assistant(
            json!({"action": "read_skeleton", "paths": paths}).to_string(),
        ));
        messages.push(Message::user(observation));
    }
    session.fallback("phase1", "the step budget ran out without scores");
    Ok(None)
}
