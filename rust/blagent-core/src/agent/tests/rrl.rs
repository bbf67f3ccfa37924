use super::*;
use crate::agent::session::{MAX_LISTED_WARNINGS, MAX_WARNING_CHARS};

const EXTRACT: &str = r#"{"explanation": "percentage coupons give a negative total", "paths": [], "filenames": [], "identifiers": ["Coupon", "Cart.total"], "code_snippets": ["Coupon(\"SAVE10\", percent=Decimal(\"10\"))"], "stack_traces": [], "error_messages": [],}"#;
const SEARCH: &str = r#"{"tool": "bm25_topk", "group": "identifiers_snippets", "k": 10}"#;
const VIEW: &str = r#"{"tool": "view_file", "path": "minishop/pricing.py", "offset": 0}"#;
const FINISH: &str =
    r#"{"tool": "finish", "files": ["minishop/pricing.py", "minishop/ghost.py", "cart.py"]}"#;
const CHECK: &str = r#"{"ranking": ["minishop/pricing.py", "minishop/cart.py"]}"#;

#[test]
fn a_clean_rrl_run_searches_views_finishes_and_self_checks() {
    let index = minishop();
    let model = by_stage(&[
        ("extract", EXTRACT),
        ("agent", SEARCH),
        ("agent", VIEW),
        ("agent", FINISH),
        ("self_check", CHECK),
    ]);
    let result = run(&index, &issue(), &model, &options(Pipeline::Rrl, 5));
    let llm = &result.llm;
    assert!(
        llm.llm_ranked && llm.stats.fallbacks.is_empty(),
        "{:?}",
        llm.stats.fallbacks
    );
    assert_eq!(paths(&result)[0], "minishop/pricing.py");
    assert_eq!(paths(&result).len(), 5);
    assert!(llm.queries["identifiers_snippets"]
        .text
        .contains("Cart.total"));
    assert!(llm
        .stats
        .dropped_paths
        .iter()
        .any(|d| d.contains("minishop/ghost.py")));
    let requests = model.requests();
    let search = &requests[2].messages.last().unwrap().content;
    assert!(search.starts_with("minishop/"), "{search}");
    let view = &requests[3].messages.last().unwrap().content;
    assert!(
        view.contains("licence header and imports hidden") && !view.contains("import Decimal"),
        "{view}"
    );
    for (i, name) in [(0, "extract"), (1, "agent"), (4, "self_check")] {
        let text: Vec<&str> = requests[i]
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        insta::assert_snapshot!(format!("rrl_{name}"), text.join("\n---\n"));
    }
}

#[test]
fn repeated_views_draw_a_warning_and_are_refused_after_five() {
    let index = minishop();
    let mut script = vec![("extract", EXTRACT)];
    script.extend(std::iter::repeat_n(("agent", VIEW), 6));
    script.extend([("agent", FINISH), ("self_check", CHECK)]);
    let model = by_stage(&script);
    let mut options = options(Pipeline::Rrl, 5);
    options.max_steps = 8;
    let result = run(&index, &issue(), &model, &options);
    let agent: Vec<ChatRequest> = model
        .requests()
        .into_iter()
        .filter(|r| r.stage == "agent")
        .collect();
    let observation = |i: usize| agent[i].messages.last().unwrap().content.clone();
    assert!(!observation(1).contains("warning"));
    assert!(
        observation(2).starts_with("warning: you already viewed minishop/pricing.py at offset 0")
    );
    assert!(
        observation(6).starts_with("refused: minishop/pricing.py was already viewed 5 times"),
        "{}",
        observation(6)
    );
    assert!(
        observation(6).ends_with("Turns left: 2."),
        "{}",
        observation(6)
    );
    assert_eq!(
        result.llm.stats.tool_warnings.len(),
        5,
        "{:?}",
        result.llm.stats.tool_warnings
    );
    assert!(result.llm.llm_ranked);
}

/// Found by a review: a view of `~` and 42,000 control characters made one 210 KB tool
/// warning, and nothing bounded how many there were. The refusal quotes the path cut (here
/// 1,501 characters escaped); the warnings are listed 50 at most, the rest counted.
#[test]
fn refused_views_of_long_paths_make_bounded_warnings() {
    let index = minishop();
    let path = format!("~{}", "\u{1}".repeat(300));
    let call: &'static str = Box::leak(
        serde_json::json!({"tool": "view_file", "path": path, "offset": 0})
            .to_string()
            .into_boxed_str(),
    );
    let mut script = vec![("extract", EXTRACT)];
    script.extend(std::iter::repeat_n(("agent", call), 55));
    script.extend([("agent", FINISH), ("self_check", CHECK)]);
    let model = by_stage(&script);
    let mut options = options(Pipeline::Rrl, 5);
    options.max_steps = 60;
    options.max_prompt_tokens = None;
    let result = run(&index, &issue(), &model, &options);
    let stats = &result.llm.stats;
    assert_eq!(stats.tool_warnings.len(), MAX_LISTED_WARNINGS);
    assert_eq!(stats.tool_warnings_unlisted, 5);
    for warning in &stats.tool_warnings {
        assert!(warning.starts_with("agent: path `~\\u{1}"), "{warning}");
        assert!(
            warning.ends_with(
                "…` refused: `~` is not allowed; use a path relative to the repository root"
            ),
            "{warning}"
        );
        assert!(warning.chars().count() <= MAX_WARNING_CHARS, "{warning}");
    }
    let observation = &model
        .requests()
        .into_iter()
        .filter(|r| r.stage == "agent")
        .nth(1)
        .unwrap()
        .messages
        .last()
        .unwrap()
        .content
        .clone();
    assert!(observation.len() < 1000, "{observation}");
    assert!(result.llm.llm_ranked, "{:?}", stats.fallbacks);
}

#[test]
fn invalid_tool_calls_are_corrected_and_a_silent_agent_falls_back() {
    let index = minishop();
    let bad = r#"{"tool": "bm25_topk", "group": "identifiers_snippets", "k": 15}"#;
    let escape = r#"{"tool": "view_file", "path": "../../etc/passwd"}"#;
    let model = by_stage(&[
        ("extract", "not json"),
        ("agent", bad),
        ("agent", SEARCH),
        ("agent", escape),
        ("agent", FINISH),
        ("self_check", "[]"),
    ]);
    let result = run(&index, &issue(), &model, &options(Pipeline::Rrl, 5));
    let stats = &result.llm.stats;
    assert!(stats.fallbacks.iter().any(|f| f.starts_with("extract:")));
    assert!(stats.fallbacks.iter().any(|f| f.starts_with("self_check:")));
    let agent: Vec<ChatRequest> = model
        .requests()
        .into_iter()
        .filter(|r| r.stage == "agent")
        .collect();
    assert!(agent[1]
        .messages
        .last()
        .unwrap()
        .content
        .contains("$.k must be 10, 20 or 30, got 15"));
    assert!(agent[3]
        .messages
        .last()
        .unwrap()
        .content
        .contains("refused: `..` is not allowed"));
    assert!(!result.llm.queries["full"].from_model);
    assert_eq!(
        paths(&result)[0],
        "minishop/pricing.py",
        "the agent's answer stands"
    );
    assert_eq!(paths(&result).len(), 5);
}

/// Found by a review: a `k` that is present but not a whole number (-1, "30", 10.5) ran as the
/// default 10, where the tool's contract sends the call back with the exact error.
#[test]
fn a_k_that_is_not_10_20_or_30_is_sent_back_whatever_its_type() {
    let index = minishop();
    let model = by_stage(&[
        ("extract", "not json"),
        (
            "agent",
            r#"{"tool": "bm25_topk", "group": "identifiers_snippets", "k": -1}"#,
        ),
        (
            "agent",
            r#"{"tool": "bm25_topk", "group": "identifiers_snippets", "k": "30"}"#,
        ),
        (
            "agent",
            r#"{"tool": "bm25_topk", "group": "identifiers_snippets", "k": 10.5}"#,
        ),
        ("agent", FINISH),
        ("self_check", CHECK),
    ]);
    run(&index, &issue(), &model, &options(Pipeline::Rrl, 5));
    let agent: Vec<ChatRequest> = model
        .requests()
        .into_iter()
        .filter(|r| r.stage == "agent")
        .collect();
    for (i, k) in ["-1", "\"30\"", "10.5"].iter().enumerate() {
        let observation = &agent[i + 1].messages.last().unwrap().content;
        let expected = format!("$.k must be 10, 20 or 30, got {k}");
        assert!(observation.contains(&expected), "{observation}");
    }
}
