//! The RRL pipeline: the issue extracted into a JSON schema (explanation, paths, file names,
//! identifiers, code snippets, stack traces, error messages), BM25 queries built from groups of
//! those fields, a tool-using agent (`bm25_topk`, `view_file`, `view_readme`, `finish`), then a
//! self-check in a fresh context that re-ranks the agent's answer and what its searches found.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::json::{parse_checked, Shape};
use super::paths::resolve_all;
use super::rewrite::Rewrite;
use super::session::Session;
use super::{rrl_agent, Context, LlmFileEvidence, Outcome};
use crate::llm::Message;
use crate::query::Reformulation;

/// The extraction schema's list fields, in prompt order.
const LIST_FIELDS: [&str; 6] = [
    "paths",
    "filenames",
    "identifiers",
    "code_snippets",
    "stack_traces",
    "error_messages",
];
const EXTRACT_SHAPE: &str = r#"{"explanation": "<one sentence>", "paths": [], "filenames": [], "identifiers": [], "code_snippets": [], "stack_traces": [], "error_messages": []}"#;
const CHECK_SHAPE: &str = r#"{"ranking": ["<path as listed>"]}"#;

/// The query groups, by name: which fields each joins.
pub const QUERY_GROUPS: [(&str, &[&str]); 5] = [
    ("explanation", &["explanation"]),
    ("identifiers_snippets", &["identifiers", "code_snippets"]),
    (
        "explanation_identifiers_snippets",
        &["explanation", "identifiers", "code_snippets"],
    ),
    (
        "code_signals",
        &[
            "paths",
            "filenames",
            "identifiers",
            "code_snippets",
            "stack_traces",
            "error_messages",
        ],
    ),
    (
        "full",
        &[
            "explanation",
            "paths",
            "filenames",
            "identifiers",
            "code_snippets",
            "stack_traces",
            "error_messages",
        ],
    ),
];

/// The extracted fields: `explanation` and the list fields, as text.
type Fields = HashMap<&'static str, Vec<String>>;

fn heuristic_fields(query: &Reformulation, issue: &str) -> Fields {
    let frames = query
        .stack_frames
        .iter()
        .map(|f| {
            format!(
                "{}:{} {}",
                f.path,
                f.line,
                f.function.clone().unwrap_or_default()
            )
        })
        .collect();
    [
        ("explanation", vec![issue.to_owned()]),
        ("paths", query.paths.clone()),
        ("filenames", query.filenames.clone()),
        (
            "identifiers",
            query.identifiers.iter().map(|i| i.name.clone()).collect(),
        ),
        ("code_snippets", query.code_snippets.clone()),
        ("stack_traces", frames),
        ("error_messages", query.error_messages.clone()),
    ]
    .into_iter()
    .collect()
}

fn extract(session: &mut Session<'_>, ctx: &Context<'_>) -> crate::Result<(Fields, bool)> {
    let list = || Shape::List(Box::new(Shape::Str));
    let mut fields = vec![("explanation", Shape::Str, true)];
    fields.extend(LIST_FIELDS.iter().map(|&f| (f, list(), false)));
    let shape = Shape::Object(fields);
    let prompt = session
        .prompts
        .render("rrl_extract", &[("issue", &ctx.issue)])?;
    let extracted = session.ask(
        "extract",
        &mut vec![Message::user(prompt)],
        EXTRACT_SHAPE,
        |r| {
            let value = parse_checked(r, &shape)?;
            let strings = |key: &str| -> Vec<String> {
                match &value[key] {
                    Value::String(s) => vec![s.clone()],
                    Value::Array(items) => items
                        .iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect(),
                    _ => Vec::new(),
                }
            };
            Ok(std::iter::once("explanation")
                .chain(LIST_FIELDS)
                .map(|k| (k, strings(k)))
                .collect::<Fields>())
        },
    );
    Ok(match extracted {
        Some(fields) => (fields, true),
        None => (heuristic_fields(ctx.query, &ctx.issue), false),
    })
}

/// The non-empty query text of every selected group.
/// Refuses `rrl_groups` entries that name no group of [`QUERY_GROUPS`] (an unknown name would
/// leave the agent without the search it was meant to have).
pub fn validate_rrl_groups(groups: &[String]) -> crate::Result<()> {
    let unknown: Vec<&str> = groups
        .iter()
        .map(String::as_str)
        .filter(|g| !QUERY_GROUPS.iter().any(|(name, _)| name == g))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let known: Vec<&str> = QUERY_GROUPS.iter().map(|(name, _)| *name).collect();
    Err(crate::Error::InvalidInput(format!(
        "unknown rrl_groups {unknown:?}: the groups are {}",
        known.join(", ")
    )))
}

fn group_queries(
    fields: &Fields,
    selected: &[String],
    from_model: bool,
) -> BTreeMap<String, Rewrite> {
    QUERY_GROUPS
        .iter()
        .filter(|(name, _)| selected.is_empty() || selected.iter().any(|s| s == name))
        .filter_map(|(name, keys)| {
            let text: Vec<&str> = keys
                .iter()
                .flat_map(|k| fields[k].iter().map(String::as_str))
                .collect();
            let text = text.join("\n");
            (!text.trim().is_empty()).then(|| ((*name).to_owned(), Rewrite { text, from_model }))
        })
        .collect()
}

fn self_check(
    session: &mut Session<'_>,
    ctx: &Context<'_>,
    candidates: &[usize],
) -> crate::Result<Option<Vec<usize>>> {
    let listing = super::context::summary_lines(ctx.index, candidates);
    let prompt = session.prompts.render(
        "self_check",
        &[("issue", &ctx.issue), ("candidates", &listing)],
    )?;
    let shape = Shape::Object(vec![("ranking", Shape::List(Box::new(Shape::Str)), true)]);
    let mut dropped = Vec::new();
    let ranked = session.ask(
        "self_check",
        &mut vec![Message::user(prompt)],
        CHECK_SHAPE,
        |r| {
            let value = parse_checked(r, &shape)?;
            let paths = value["ranking"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str);
            let (files, refused) = resolve_all(ctx.index, paths);
            let (kept, outside): (Vec<usize>, Vec<usize>) =
                files.into_iter().partition(|f| candidates.contains(f));
            dropped = refused;
            dropped.extend(
                outside
                    .iter()
                    .map(|&f| format!("`{}` is not a candidate", ctx.index.files[f].path())),
            );
            if kept.is_empty() {
                return Err(format!(
                    "no ranked path is a listed candidate ({})",
                    dropped.join("; ")
                ));
            }
            Ok(kept)
        },
    );
    session.stats.drop_paths(dropped);
    Ok(ranked)
}

pub(crate) fn run(session: &mut Session<'_>, ctx: &Context<'_>) -> crate::Result<Outcome> {
    let options = ctx.options;
    let (fields, from_model) = extract(session, ctx)?;
    let queries = group_queries(&fields, &options.rrl_groups, from_model);
    let agent = rrl_agent::run(session, ctx, &queries)?;
    let mut candidates: Vec<usize> = Vec::new();
    let pool = agent
        .answer
        .iter()
        .flatten()
        .chain(&agent.found)
        .chain(&ctx.retrieval);
    for &file in pool {
        if candidates.len() >= options.candidates {
            break;
        }
        if !candidates.contains(&file) {
            candidates.push(file);
        }
    }
    let checked = self_check(session, ctx, &candidates)?;
    let order = checked.or(agent.answer).unwrap_or_default();
    let evidence = order
        .iter()
        .map(|&f| (f, LlmFileEvidence::default()))
        .collect();
    Ok(Outcome {
        order,
        evidence,
        functions: HashMap::new(),
        queries,
        candidates,
        agreement: None,
    })
}

#[cfg(test)]
mod group_tests {
    use super::*;

    #[test]
    fn unknown_rrl_groups_are_refused_with_the_valid_ones() {
        assert!(validate_rrl_groups(&[]).is_ok());
        assert!(validate_rrl_groups(&["explanation".to_owned()]).is_ok());
        let err = validate_rrl_groups(&["bogus".to_owned()]).unwrap_err();
        assert!(err.is_input_error());
        let text = err.to_string();
        assert!(
            text.contains("bogus") && text.contains("identifiers_snippets"),
            "{text}"
        );
    }
}
