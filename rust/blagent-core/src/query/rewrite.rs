//! The two query rewrites BLAgent asks an LLM for, written here by rule from the extracted
//! fields, so dense retrieval has both views without an LLM:
//! - structural (T0): the title, then the code-level cues — paths, modules, identifiers,
//!   traceback frames, error messages;
//! - behavioral (T1): the issue's prose with code blocks and tracebacks removed — what happens
//!   and what was expected.

use super::Reformulation;

/// Most identifiers a structural query lists (strongest first).
const MAX_IDENTIFIERS: usize = 24;
/// Most traceback frames a structural query lists (innermost first).
const MAX_FRAMES: usize = 6;

/// The structural (T0) query.
pub fn structural_query(query: &Reformulation) -> String {
    let mut parts: Vec<String> = vec![query.title.clone()];
    parts.extend(query.paths.iter().cloned());
    parts.extend(query.filenames.iter().cloned());
    parts.extend(query.modules.iter().cloned());
    parts.extend(
        query
            .identifiers
            .iter()
            .take(MAX_IDENTIFIERS)
            .map(|i| i.name.clone()),
    );
    for frame in query.stack_frames.iter().take(MAX_FRAMES) {
        let file = frame.path.rsplit('/').next().unwrap_or(&frame.path);
        parts.push(match &frame.function {
            Some(function) => format!("{file} {function}"),
            None => file.to_owned(),
        });
    }
    parts.extend(query.error_messages.iter().cloned());
    dedup_join(parts)
}

/// The behavioral (T1) query.
pub fn behavioral_query(query: &Reformulation) -> String {
    let mut prose = String::with_capacity(query.explanation.len());
    let mut in_fence = false;
    for line in query.explanation.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        let code_like = line.starts_with("    ")
            || line.starts_with('\t')
            || trimmed.starts_with(">>>")
            || trimmed.starts_with("File \"")
            || trimmed.starts_with("Traceback (most recent call last)");
        if !in_fence && !code_like && !trimmed.is_empty() {
            prose.push_str(trimmed);
            prose.push('\n');
        }
    }
    if prose.trim().is_empty() {
        query.explanation.clone()
    } else {
        prose
    }
}

fn dedup_join(parts: Vec<String>) -> String {
    let mut seen = std::collections::HashSet::new();
    parts
        .into_iter()
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty() && seen.insert(p.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::reformulate;

    const ISSUE: &str = "QuerySet.bulk_create crashes on mixed-case columns\n\n\
        When calling `bulk_create` with `update_conflicts=True` the SQL uses the field name, not db_column.\n\n\
        ```python\nActivity.objects.bulk_create(instances, update_conflicts=True)\n```\n\n\
        Traceback (most recent call last):\n  File \"/app/django/db/models/query.py\", line 804, in bulk_create\n\
        psycopg2.errors.UndefinedColumn: column \"blacklistid\" does not exist\n\n\
        Expected: the db_column is used.\n";

    #[test]
    fn structural_query_has_the_code_cues_once() {
        let t0 = structural_query(&reformulate(ISSUE));
        assert!(t0.starts_with("QuerySet.bulk_create crashes on mixed-case columns"));
        assert!(t0.contains("bulk_create"));
        assert!(t0.contains("query.py bulk_create"));
        assert_eq!(t0.lines().filter(|l| *l == "bulk_create").count(), 1);
    }

    #[test]
    fn behavioral_query_is_the_prose() {
        let t1 = behavioral_query(&reformulate(ISSUE));
        assert!(t1.contains("Expected: the db_column is used."));
        assert!(!t1.contains("Activity.objects"));
        assert!(!t1.contains("File \""));
    }

    #[test]
    fn an_all_code_issue_keeps_its_text_as_behavioral_query() {
        let r = reformulate("```\nx = 1\n```\n");
        assert_eq!(behavioral_query(&r), r.explanation);
    }
}
