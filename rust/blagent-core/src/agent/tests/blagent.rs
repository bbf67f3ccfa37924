use std::fmt::Write as _;

use super::*;
use crate::agent::retrieve_for_query;
use crate::llm::NoModel;
use crate::retrieve::{Ask, FusionWeights, Granularity};

const T0: &str = r#"{"query": "Coupon percent apply_coupon Cart.total"}"#;
const T1: &str = "```json\n{\"query\": \"percentage coupon discount applied as a fraction gives negative total\"}\n```";
const READ: &str = r#"{"thought": "pricing applies coupons", "action": "read_skeleton", "paths": ["minishop/pricing.py", "cart.py"]}"#;
const FINISH: &str = r#"<think>pricing first</think>{"thought": "done", "action": "finish", "scores": {"minishop/pricing.py": 9, "minishop/cart.py": "6", "minishop/cli.py": 1}}"#;
const RERANK: &str = r#"{"ranking": [{"path": "minishop/pricing.py", "functions": ["apply_coupon"], "reason": "percent used as a fraction"}, {"path": "minishop/cart.py", "functions": ["Cart::total"], "reason": "calls apply_coupon"}]}"#;

fn clean() -> ScriptedModel {
    by_stage(&[
        ("t0", T0),
        ("t1", T1),
        ("phase1", READ),
        ("phase1", FINISH),
        ("phase2", RERANK),
        ("phase2_permuted", RERANK),
    ])
}

#[test]
fn a_clean_run_ranks_the_models_files_first_within_budget() {
    let index = minishop();
    let model = clean();
    let mut options = options(Pipeline::Blagent, 5);
    options.ask = Ask::new(5, Granularity::Function).unwrap();
    let result = run(&index, &issue(), &model, &options);
    let llm = &result.llm;
    assert!(
        llm.llm_ranked && llm.stats.fallbacks.is_empty(),
        "{:?}",
        llm.stats.fallbacks
    );
    assert_eq!(
        (llm.stats.calls, llm.stats.parse_failures, llm.stats.retries),
        (6, 0, 0)
    );
    assert_eq!(llm.agreement, Some(1.0), "the same answer in both orders");
    assert!((llm.model_weight - 1.0).abs() < 1e-6);
    assert!(llm.queries["t0"].from_model && llm.queries["t1"].text.contains("fraction"));
    assert_eq!(paths(&result)[0], "minishop/pricing.py");
    assert_eq!(paths(&result).len(), 5);
    assert_eq!(
        llm.files[0].reason.as_deref(),
        Some("percent used as a fraction")
    );
    assert_eq!(llm.files[1].score, Some(6.0));
    // At the default weight the model's functions are fused with retrieval's, which ranks
    // `Cart.total` (the issue names it) first: the model's first pick ties it and goes second.
    let entities = result.entities.as_ref().unwrap();
    let top: Vec<&str> = entities[..2].iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        top,
        [
            "minishop/cart.py::Cart.total",
            "minishop/pricing.py::apply_coupon"
        ]
    );
    assert!(entities[..2].iter().all(|e| (e.score - 1.0).abs() < 1e-6));
    assert!(
        llm.prompt_tokens > 0 && llm.prompt_tokens <= 12_000,
        "{}",
        llm.prompt_tokens
    );
    assert_eq!(llm.stats.stages["phase1"].calls, 2);

    let requests = model.requests();
    let observation = &requests[3].messages[2].content;
    assert!(
        observation.starts_with("minishop/pricing.py:\nclass CouponError"),
        "{observation}"
    );
    assert_eq!(
        requests[3].messages[1].content,
        r#"{"action":"read_skeleton","paths":["minishop/pricing.py","cart.py"]}"#
    );
    for (i, name) in [
        (0, "t0"),
        (1, "t1"),
        (2, "phase1"),
        (3, "phase1_after_read"),
        (4, "phase2_functions"),
        (5, "phase2_permuted_functions"),
    ] {
        let text: Vec<&str> = requests[i]
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        insta::assert_snapshot!(format!("blagent_{name}"), text.join("\n---\n"));
    }
}

/// A trusted model (a calibrated scale) leads the functions as it leads the files.
#[test]
fn a_trusted_model_names_the_first_function() {
    let index = minishop();
    let mut options = options(Pipeline::Blagent, 5);
    options.ask = Ask::new(5, Granularity::Function).unwrap();
    options.model_weight = Some(8.0);
    let result = run(&index, &issue(), &clean(), &options);
    let entities = result.entities.as_ref().unwrap();
    assert_eq!(entities[0].id, "minishop/pricing.py::apply_coupon");
    assert_eq!(entities[1].id, "minishop/cart.py::Cart.total");
}

/// A clean run whose first phase-2 reply is `first`: the result, after the one repair request
/// it must draw, and that request.
fn phase2_sent_back(first: &'static str) -> (Ranked, String) {
    let index = minishop();
    let model = by_stage(&[
        ("t0", T0),
        ("t1", T1),
        ("phase1", FINISH),
        ("phase2", first),
        ("phase2", RERANK),
        ("phase2_permuted", RERANK),
    ]);
    let result = run(&index, &issue(), &model, &options(Pipeline::Blagent, 5));
    let stats = &result.llm.stats;
    assert_eq!((stats.parse_failures, stats.retries), (1, 1), "{stats:?}");
    assert!(stats.fallbacks.is_empty());
    let retry = model
        .requests()
        .into_iter()
        .filter(|r| r.stage == "phase2")
        .nth(1)
        .unwrap();
    let repair = retry.messages.last().unwrap().content.clone();
    (result, repair)
}

#[test]
fn malformed_json_is_fixed_on_retry_with_the_parse_error() {
    let truncated = "```json\n{\"ranking\": [{\"path\": \"minishop/pricing.py\"\n```";
    let (result, repair) = phase2_sent_back(truncated);
    assert!(
        repair.contains("the JSON is truncated") && repair.contains("\"ranking\""),
        "{repair}"
    );
    insta::assert_snapshot!("repair", repair);
    assert_eq!(paths(&result)[0], "minishop/pricing.py");
}

#[test]
fn a_ranking_that_lists_a_file_twice_is_sent_back() {
    let looping = r#"{"ranking": [{"path": "minishop/cart.py"}, {"path": "minishop/pricing.py"}, {"path": "cart.py"}]}"#;
    let (result, repair) = phase2_sent_back(looping);
    assert!(
        repair.contains("`cart.py` is already ranked above"),
        "{repair}"
    );
    assert_eq!(result.llm.files[0].path, "minishop/pricing.py");
}

#[test]
fn a_reply_cut_off_by_the_completion_cap_keeps_its_complete_scores() {
    let index = minishop();
    // Cut mid-path by the token cap, with the nested score form small models often write.
    let cut = r#"{"thought": "pricing", "action": "finish", "scores": {"minishop/pricing.py": {"score": 9}, "minishop/inven"#;
    let model = by_stage(&[
        ("t0", T0),
        ("t1", T1),
        ("phase1", cut),
        ("phase2", RERANK),
        ("phase2_permuted", RERANK),
    ]);
    let result = run(&index, &issue(), &model, &options(Pipeline::Blagent, 5));
    let stats = &result.llm.stats;
    assert_eq!((stats.parse_failures, stats.retries), (0, 0), "{stats:?}");
    let pricing = result
        .llm
        .files
        .iter()
        .find(|f| f.path == "minishop/pricing.py");
    assert_eq!(pricing.and_then(|f| f.score), Some(9.0));
}

#[test]
fn hallucinated_paths_are_dropped() {
    let index = minishop();
    let finish = r#"{"action": "finish", "scores": {"minishop/discounts.py": 10, "minishop/pricing.py": 8}}"#;
    let rerank = r#"{"ranking": [{"path": "src/ghost.py"}, {"path": "pricing.py"}, {"path": "minishop/inventory.py"}]}"#;
    let model = by_stage(&[
        ("t0", T0),
        ("t1", T1),
        ("phase1", finish),
        ("phase2", rerank),
        ("phase2_permuted", rerank),
    ]);
    let result = run(&index, &issue(), &model, &options(Pipeline::Blagent, 5));
    let dropped = &result.llm.stats.dropped_paths;
    assert!(
        dropped.iter().any(|d| d.contains("minishop/discounts.py")),
        "{dropped:?}"
    );
    assert!(
        dropped.iter().any(|d| d.contains("src/ghost.py")),
        "{dropped:?}"
    );
    assert_eq!(paths(&result)[0], "minishop/pricing.py");
    assert!(paths(&result)
        .iter()
        .all(|p| index.repo.files.iter().any(|f| f.path() == p)));
}

#[test]
fn a_model_that_never_answers_validly_falls_back_to_retrieval() {
    let index = minishop();
    // Different invalid replies: every stage uses its three retries.
    let count = std::sync::atomic::AtomicUsize::new(0);
    let model = ScriptedModel::from_fn(move |_| {
        let n = count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("I think the bug is in pricing ({n}).")
    });
    let mut unlimited = options(Pipeline::Blagent, 5);
    unlimited.max_prompt_tokens = None;
    let result = run(&index, &issue(), &model, &unlimited);
    let llm = &result.llm;
    assert!(!llm.llm_ranked);
    assert_eq!(
        llm.stats.calls,
        5 * 4,
        "five stages, each one try and three retries"
    );
    // Within the default budget the last repair requests are not sent.
    let budgeted = run(&index, &issue(), &model, &options(Pipeline::Blagent, 5));
    assert!(budgeted.llm.prompt_tokens <= 12_000 && budgeted.llm.stats.calls < 5 * 4);
    assert!(budgeted
        .llm
        .stats
        .fallbacks
        .iter()
        .any(|f| f.contains("budget")));
    assert_eq!(paths(&budgeted), llm_free(&index, &issue(), 5));
    // The same invalid reply twice ends a stage early.
    let same = ScriptedModel::from_fn(|_| "I think the bug is in pricing.".to_owned());
    let repeated = run(&index, &issue(), &same, &unlimited);
    assert_eq!(
        repeated.llm.stats.calls,
        5 * 2,
        "five stages, each one try and one retry"
    );
    assert_eq!(paths(&repeated), llm_free(&index, &issue(), 5));
    assert_eq!(llm.stats.fallbacks.len(), 5);
    assert!(!llm.queries["t0"].from_model);
    assert_eq!(paths(&result), llm_free(&index, &issue(), 5));

    let none = run(&index, &issue(), &NoModel, &options(Pipeline::Blagent, 5));
    assert_eq!((none.llm.stats.calls, none.llm.model.as_str()), (0, "none"));
    assert_eq!(paths(&none), llm_free(&index, &issue(), 5));
}

#[test]
fn the_final_list_is_always_top_k_long_when_the_repository_has_the_files() {
    let index = minishop();
    let narrow = "`restock` fails";
    let scored = crate::retrieve::score(&index, narrow, &FusionWeights::default(), None).unwrap();
    assert!(scored.ranked.len() < 5, "the issue matches few files");
    for k in [1, 3, 5, 50] {
        let result = run(&index, narrow, &clean(), &options(Pipeline::Blagent, k));
        assert_eq!(paths(&result).len(), k.min(index.repo.files.len()));
        let none = run(&index, narrow, &NoModel, &options(Pipeline::Blagent, k));
        assert_eq!(paths(&none).len(), k.min(index.repo.files.len()));
    }
}

#[test]
fn phase_two_sees_retrievals_best_file_when_phase_one_scores_all_alike() {
    // The rewrites point elsewhere (inventory), and phase 1 gives every candidate 10: phase 2
    // is shown the candidates in pool order, which starts with the raw issue's best file.
    let index = minishop();
    let elsewhere = r#"{"query": "Inventory OutOfStock restock stock level"}"#;
    let all_ten = r#"{"action": "finish", "scores": {"minishop/inventory.py": 10, "minishop/cli.py": 10, "minishop/cart.py": 10, "minishop/pricing.py": 10, "minishop/__init__.py": 10}}"#;
    let model = by_stage(&[
        ("t0", elsewhere),
        ("t1", elsewhere),
        ("phase1", all_ten),
        ("phase2", RERANK),
        ("phase2_permuted", RERANK),
    ]);
    let mut options = options(Pipeline::Blagent, 5);
    options.rerank_files = 2;
    let result = run(&index, &issue(), &model, &options);
    let best = llm_free(&index, &issue(), 1).remove(0);
    assert_eq!(best, "minishop/pricing.py");
    assert_eq!(result.llm.candidates[0], best);
    let t0_best = retrieve_for_query(
        &index.repo,
        None,
        "Inventory OutOfStock restock stock level",
        &FusionWeights::default(),
    );
    assert_eq!(
        index.repo.files[t0_best[0].file].path(),
        "minishop/inventory.py"
    );
    assert_eq!(result.llm.candidates[1], "minishop/inventory.py");
    let requests = model.requests();
    let phase2 = requests.iter().find(|r| r.stage == "phase2").unwrap();
    let shown = &phase2.messages[0].content;
    assert!(shown.contains("### minishop/pricing.py\n"), "{shown}");
    assert!(shown.contains("### minishop/inventory.py\n"), "{shown}");
    assert_eq!(shown.matches("\n### ").count(), 2, "{shown}");
}

#[test]
fn duplicate_reads_are_not_shown_again_and_end_the_reading() {
    let index = minishop();
    let again = r#"{"action": "read_skeleton", "paths": ["minishop/pricing.py"]}"#;
    let model = by_stage(&[
        ("t0", T0),
        ("t1", T1),
        ("phase1", again),
        ("phase1", again),
        ("phase1", again),
        ("phase1", again),
        ("phase1", FINISH),
        ("phase2", RERANK),
        ("phase2_permuted", RERANK),
    ]);
    let result = run(&index, &issue(), &model, &options(Pipeline::Blagent, 5));
    let phase1: Vec<ChatRequest> = model
        .requests()
        .into_iter()
        .filter(|r| r.stage == "phase1")
        .collect();
    let second_observation = &phase1[2].messages.last().unwrap().content;
    assert!(
        second_observation.contains("already read above; do not read it again"),
        "{second_observation}"
    );
    let third_observation = &phase1[3].messages.last().unwrap().content;
    assert!(
        third_observation.contains("No reads left"),
        "{third_observation}"
    );
    assert_eq!(
        phase1.len(),
        5,
        "the read on the fourth turn is refused once, then the model finishes"
    );
    let refused = &phase1[4].messages.last().unwrap().content;
    assert!(
        refused.contains("no reads left: reply with action"),
        "{refused}"
    );
    assert_eq!(result.llm.stats.tool_warnings.len(), 2);
    assert_eq!(result.llm.stats.retries, 1);
    assert!(result.llm.llm_ranked);
}

/// A model that reads as much as it is allowed: three new skeletons every turn, then scores
/// every candidate; phase 2 ranks every file shown.
fn greedy_reader(request: &ChatRequest) -> String {
    let first = &request.messages[0].content;
    let listed: Vec<&str> = first
        .lines()
        .filter_map(|l| l.split_once(": ").map(|(p, _)| p))
        .filter(|p| p.starts_with("pkg/"))
        .collect();
    match request.stage.as_str() {
        "t0" | "t1" => r#"{"query": "compute_total discount rounding"}"#.to_owned(),
        "phase1"
            if !request
                .messages
                .last()
                .unwrap()
                .content
                .contains("No reads left") =>
        {
            let turn = request.messages.len() / 2;
            let paths: Vec<&str> = listed.iter().skip(3 * turn).take(3).copied().collect();
            serde_json::json!({"action": "read_skeleton", "paths": paths}).to_string()
        }
        "phase1" => {
            let scores: serde_json::Map<String, serde_json::Value> =
                listed.iter().map(|p| ((*p).to_owned(), 5.into())).collect();
            serde_json::json!({"action": "finish", "scores": scores}).to_string()
        }
        _ => {
            let shown: Vec<serde_json::Value> = first
                .lines()
                .filter_map(|l| l.strip_prefix("### "))
                .map(|p| serde_json::json!({"path": p, "reason": "matches"}))
                .collect();
            serde_json::json!({"ranking": shown}).to_string()
        }
    }
}

#[test]
fn prompt_tokens_stay_under_12k_on_large_files_and_a_long_issue() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("pkg")).unwrap();
    for m in 0..30 {
        let mut text = String::from("import os\nimport sys\nfrom decimal import Decimal\n\n");
        for c in 0..4 {
            let _ = write!(
                text,
                "class Handler{m}x{c}(Base):\n    \"\"\"Handles case {c} of the totals computation.\"\"\"\n\n"
            );
            for f in 0..15 {
                let _ = write!(
                    text,
                    "    def compute_total_{f}(self, items, discount=None, rounding='half_up'):\n        \"\"\"Compute total {f}.\"\"\"\n{}\n",
                    "        value = sum(i.price for i in items) * Decimal('1.0') - (discount or 0)\n".repeat(6)
                );
            }
        }
        std::fs::write(dir.path().join(format!("pkg/mod_{m}.py")), text).unwrap();
    }
    let index: SearchIndex = RepoIndex::build(dir.path(), &crate::index::IndexOptions::default())
        .unwrap()
        .into();
    let issue = format!(
        "compute_total gives wrong totals with a discount\n\n{}\nTraceback (most recent call last):\n  File \"pkg/mod_3.py\", line 40, in compute_total_2\nValueError: negative total",
        "When the discount is applied the rounding goes wrong and the total is off. ".repeat(60)
    );
    let model = ScriptedModel::from_fn(greedy_reader);
    let mut options = options(Pipeline::Blagent, 10);
    options.ask = Ask::new(10, Granularity::Function).unwrap();
    let result = run(&index, &issue, &model, &options);
    let llm = &result.llm;
    // Its phase 2 echoes the order shown, so the model gives an order but gets no weight.
    assert!(
        llm.files.iter().any(|f| f.llm_rank.is_some()) && llm.stats.fallbacks.is_empty(),
        "{:?}",
        llm.stats.fallbacks
    );
    assert!(
        llm.stats.stages["phase1"].calls >= 3,
        "the reader read: {:?}",
        llm.stats.stages
    );
    assert!(llm.stats.calls <= 9);
    assert!(
        llm.prompt_tokens <= 12_000,
        "{} prompt tokens: {:?}",
        llm.prompt_tokens,
        llm.stats.stages
    );
    assert_eq!(paths(&result).len(), 10);
}

/// Phase 2 of a model that echoes the order it is shown.
fn echo_phase2(request: &ChatRequest) -> Option<String> {
    let shown: Vec<serde_json::Value> = request.messages[0]
        .content
        .lines()
        .filter_map(|l| l.strip_prefix("### "))
        .map(|p| serde_json::json!({"path": p, "reason": "looks relevant"}))
        .collect();
    request
        .stage
        .starts_with("phase2")
        .then(|| serde_json::json!({"ranking": shown}).to_string())
}

/// Phase-1 scores that put inventory first (retrieval has pricing first).
const INVENTORY_FIRST: &str = r#"{"action": "finish", "scores": {"minishop/inventory.py": 10, "minishop/cli.py": 8, "minishop/pricing.py": 3}}"#;

/// Where inventory is in a ranking.
fn inventory_place(paths: &[String]) -> Option<usize> {
    paths.iter().position(|p| p == "minishop/inventory.py")
}

#[test]
fn a_model_that_echoes_the_order_it_is_shown_leaves_retrievals_ranking() {
    // Phase 1 puts inventory first (retrieval has pricing first), and phase 2 returns the files
    // in whatever order it is shown them: the permuted ask contradicts the first, so the
    // model gets no weight and the ranking is LLM-free's.
    let index = minishop();
    let model = ScriptedModel::from_fn(move |request: &ChatRequest| {
        echo_phase2(request).unwrap_or_else(|| match request.stage.as_str() {
            "phase1" => INVENTORY_FIRST.to_owned(),
            _ => T0.to_owned(),
        })
    });
    let mut options = options(Pipeline::Blagent, 5);
    options.rerank_files = 3;
    let result = run(&index, &issue(), &model, &options);
    let llm = &result.llm;
    assert!(llm.stats.fallbacks.is_empty(), "{:?}", llm.stats.fallbacks);
    assert_eq!(llm.agreement, Some(0.0));
    assert!(llm.model_weight.abs() < 1e-6);
    assert_eq!(
        llm.files[0].path, "minishop/inventory.py",
        "the model's own order"
    );
    assert_eq!(paths(&result), llm_free(&index, &issue(), 5));

    let requests = model.requests();
    let listing = |stage: &str| -> Vec<String> {
        let request = requests.iter().find(|r| r.stage == stage).unwrap();
        request.messages[0]
            .content
            .lines()
            .filter_map(|l| l.strip_prefix("### "))
            .map(str::to_owned)
            .collect()
    };
    let first = listing("phase2");
    assert_eq!(
        first,
        [
            "minishop/inventory.py",
            "minishop/cli.py",
            "minishop/pricing.py"
        ]
    );
    // Reversed, and the middle file moved off the middle.
    assert_eq!(
        listing("phase2_permuted"),
        [
            "minishop/pricing.py",
            "minishop/inventory.py",
            "minishop/cli.py"
        ]
    );

    // Without the check, the echo moves its first file up.
    options.permutation_check = false;
    let unchecked = run(&index, &issue(), &model, &options);
    assert_eq!(unchecked.llm.agreement, None);
    assert!(inventory_place(&paths(&unchecked)) < inventory_place(&llm_free(&index, &issue(), 5)));
}

#[test]
fn an_agreement_chance_reaches_often_gives_the_model_no_weight() {
    // Phase 1 puts inventory first, retrieval has pricing first. Phase 2 names inventory alone
    // in both orders: the same one file of five, which a model naming a file at random does
    // one time in five. Naming inventory and cli in the same order in both (one time in
    // twenty) is a judgement, and moves inventory up.
    const ONE: &str = r#"{"ranking": [{"path": "minishop/inventory.py", "reason": "stock"}]}"#;
    const TWO: &str = r#"{"ranking": [{"path": "minishop/inventory.py", "reason": "stock"}, {"path": "minishop/cli.py", "reason": "reads stock"}]}"#;
    let index = minishop();
    let answering = |rerank: &'static str| {
        by_stage(&[
            ("t0", T0),
            ("t1", T1),
            ("phase1", INVENTORY_FIRST),
            ("phase2", rerank),
            ("phase2_permuted", rerank),
        ])
    };
    let options = options(Pipeline::Blagent, 5);

    let chance = run(&index, &issue(), &answering(ONE), &options);
    let one = &chance.llm;
    assert!(one.candidates.len() >= 5, "five files shown");
    assert_eq!(one.agreement, Some(1.0));
    assert!((one.agreement_p.unwrap() - 0.2).abs() < 1e-6);
    assert!(one.model_weight.abs() < f32::EPSILON);
    assert!(
        !one.llm_ranked,
        "an order with no weight does not shape the ranking"
    );
    assert_eq!(paths(&chance), llm_free(&index, &issue(), 5));

    let two = run(&index, &issue(), &answering(TWO), &options);
    assert!((two.llm.agreement_p.unwrap() - 0.05).abs() < 1e-6);
    assert!((two.llm.model_weight - 1.0).abs() < 1e-6);
    assert!(two.llm.llm_ranked);
    assert!(inventory_place(&paths(&two)) < inventory_place(&llm_free(&index, &issue(), 5)));
}
