//! RRL's tool-using agent. Each turn the model sends one tool call as JSON; it is validated
//! (known tool, `k` in {10, 20, 30}, a known query group, a path inside the repository, a
//! non-negative offset) and an invalid call is sent back with the exact error. Viewing the same
//! window twice draws a warning; a file viewed [`MAX_VIEWS_PER_FILE`] times is refused. The last
//! turn must be `finish`.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::json::extract_json;
use super::paths::resolve_all;
use super::rewrite::Rewrite;
use super::session::Session;
use super::tools::{bm25_topk, view_file, view_readme};
use super::Context;
use crate::llm::Message;

/// Views of one file before further views are refused.
pub const MAX_VIEWS_PER_FILE: usize = 5;
const KS: [u64; 3] = [10, 20, 30];
const SHAPE: &str = r#"{"tool": "bm25_topk", "group": "<query name>", "k": 10} or {"tool": "view_file", "path": "<file path>", "offset": 0} or {"tool": "view_readme"} or {"tool": "finish", "files": ["<file path>"]}"#;

enum Call {
    Search(String, usize),
    View(String, usize),
    Readme,
    Finish(Vec<usize>),
}

/// What the agent produced: its answer (when it finished validly) and every file its searches
/// returned, in order.
pub(crate) struct AgentRun {
    pub answer: Option<Vec<usize>>,
    pub found: Vec<usize>,
}

fn parse_call(
    reply: &str,
    ctx: &Context<'_>,
    groups: &BTreeMap<String, Rewrite>,
    last: bool,
    dropped: &mut Vec<String>,
) -> Result<(Call, Value), String> {
    let value = extract_json(reply)?;
    let args = value
        .get("args")
        .filter(|a| a.is_object())
        .unwrap_or(&value);
    let tool = value
        .get("tool")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if last && tool != "finish" {
        return Err("this is your last turn: call \"finish\" with your files".to_owned());
    }
    let call = match tool {
        "bm25_topk" => {
            let group = args.get("group").and_then(Value::as_str).unwrap_or_default();
            if !groups.contains_key(group) {
                let names: Vec<&str> = groups.keys().map(String::as_str).collect();
                return Err(format!("$.group must be one of {names:?}, got {group:?}"));
            }
            let k = match args.get("k") {
                None | Some(Value::Null) => 10,
                Some(v) => v.as_u64().filter(|k| KS.contains(k)).ok_or_else(|| {
                    format!("$.k must be 10, 20 or 30, got {v}")
                })?,
            };
            Call::Search(group.to_owned(), k as usize)
        }
        "view_file" => {
            let path = args.get("path").and_then(Value::as_str).ok_or("$.path must be a string")?;
            let offset = match args.get("offset") {
                None | Some(Value::Null) => 0,
                Some(v) => v.as_u64().ok_or_else(|| format!("$.offset must be a non-negative integer, got {v}"))?,
            };
            Call::View(path.to_owned(), offset as usize)
        }
        "view_readme" => Call::Readme,
        "finish" => {
            let paths = args.get("files").and_then(Value::as_array).ok_or("$.files must be a list of file paths")?;
            let (files, refused) = resolve_all(ctx.index, paths.iter().filter_map(Value::as_str));
            if files.is_empty() {
                return Err(format!("no listed file exists in the repository ({})", refused.join("; ")));
            }
            dropped.extend(refused);
            Call::Finish(files)
        }
        other => return Err(format!("$.tool must be one of \"bm25_topk\", \"view_file\", \"view_readme\", \"finish\", got {other:?}")),
    };
    Ok((call, value))
}

pub(crate) fn run(
    session: &mut Session<'_>,
    ctx: &Context<'_>,
    groups: &BTreeMap<String, Rewrite>,
) -> crate::Result<AgentRun> {
    let options = ctx.options;
    let listing: Vec<String> = groups
        .iter()
        .map(|(name, q)| {
            format!(
                "  {name}: {}",
                q.text
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(60)
                    .collect::<String>()
            )
        })
        .collect();
    let prompt = session.prompts.render(
        "rrl_agent",
        &[
            ("issue", &ctx.issue),
            ("groups", &listing.join("\n")),
            ("top_k", &ctx.ask.top_k().to_string()),
            ("max_steps", &options.max_steps.to_string()),
        ],
    )?;
    let mut messages = vec![Message::user(prompt)];
    let mut found: Vec<usize> = Vec::new();
    let mut views: HashMap<usize, Vec<usize>> = HashMap::new();
    let steps = options.max_steps.max(1);
    for step in 0..steps {
        let last = step + 1 == steps;
        let mut dropped = Vec::new();
        let call = session.ask("agent", &mut messages, SHAPE, |reply| {
            dropped.clear();
            parse_call(reply, ctx, groups, last, &mut dropped)
        });
        session.stats.drop_paths(dropped);
        let Some((call, value)) = call else {
            return Ok(AgentRun {
                answer: None,
                found,
            });
        };
        let observation = match call {
            Call::Finish(files) => {
                return Ok(AgentRun {
                    answer: Some(files),
                    found,
                })
            }
            Call::Search(group, k) => {
                let hits = bm25_topk(ctx.index, &groups[&group].text, k);
                found.extend(
                    hits.iter()
                        .map(|h| h.0)
                        .filter(|f| !found.contains(f))
                        .collect::<Vec<_>>(),
                );
                let lines: Vec<String> = hits
                    .iter()
                    .map(|&(f, s)| format!("{} ({s:.1})", ctx.index.files[f].path()))
                    .collect();
                if lines.is_empty() {
                    "no file matches".to_owned()
                } else {
                    lines.join("\n")
                }
            }
            Call::Readme => view_readme(ctx.index, options.view_tokens).unwrap_or_else(|e| e),
            Call::View(path, offset) => view(session, ctx, &mut views, &path, offset),
        };
        let turns = if step + 2 == steps {
            "Last turn: call finish.".to_owned()
        } else {
            format!("Turns left: {}.", steps - step - 1)
        };
        messages.push(Message::assistant(value.to_string()));
        messages.push(Message::user(format!("{observation}\n{turns}")));
    }
    Ok(AgentRun {
        answer: None,
        found,
    })
}

fn view(
    session: &mut Session<'_>,
    ctx: &Context<'_>,
    views: &mut HashMap<usize, Vec<usize>>,
    path: &str,
    offset: usize,
) -> String {
    if let Err(why) = super::confine::check_syntax(path) {
        session.stats.warn(&format!("agent: {why}"));
        return why;
    }
    let file = match super::paths::resolve(ctx.index, path) {
        Ok((file, _)) => file,
        Err(why) => return why,
    };
    let seen = views.entry(file).or_default();
    let name = ctx.index.files[file].path();
    if seen.len() >= MAX_VIEWS_PER_FILE {
        session
            .stats
            .warn(&format!("agent: view of {name} refused"));
        return format!("refused: {name} was already viewed {MAX_VIEWS_PER_FILE} times; use what you have read or call finish");
    }
    let repeated = seen.contains(&offset);
    seen.push(offset);
    let text = view_file(ctx.index, path, offset, ctx.options.view_tokens).unwrap_or_else(|e| e);
    if repeated {
        session
            .stats
            .warn(&format!("agent: repeated view of {name}"));
        format!(
            "warning: you already viewed {name} at offset {offset}; do not repeat views.\n{text}"
        )
    } else {
        text
    }
}
