//! The standardized interface end to end on a small repository written by the test: hints,
//! entities, and a resumable batch that survives a failing instance.

use std::path::Path;

use blagent_core::interface::{
    run_batch, AgentlessLine, BatchConfig, DatasetConfig, Granularity, LocalizeRequest, HINT_SIGNAL,
};
use blagent_core::{LocalizeOptions, Localizer};

const ISSUE: &str =
    "apply_discount returns a negative total\n\n`apply_discount(100, 10)` returns -900.\n\
Traceback (most recent call last):\n  File \"shop/pricing.py\", line 9, in apply_discount\n";

fn write_repo(root: &Path) {
    let files = [
        ("shop/__init__.py", "from .pricing import apply_discount\n"),
        (
            "shop/pricing.py",
            "class Pricer:\n    def rate(self):\n        return 1\n\n\n\
             def apply_discount(total, percent):\n    \"\"\"Apply a discount.\"\"\"\n    rate = percent\n    return total - total * rate\n",
        ),
        ("shop/cart.py", "class Cart:\n    def total(self):\n        return 0\n"),
        ("shop/inventory.py", "class Inventory:\n    def reserve(self, sku):\n        return sku\n"),
    ];
    for (rel, text) in files {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
}

#[test]
fn a_hint_boosts_a_file_as_a_path_mention_would() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_repo(dir.path());
    let localizer = Localizer::default();
    let mut request = LocalizeRequest::new("shop-1", dir.path(), ISSUE);
    let plain = localizer.localize(&request).expect("localizes");
    assert_eq!(plain.paths()[0], "shop/pricing.py");
    let before = plain
        .files
        .iter()
        .find(|f| f.path == "shop/inventory.py")
        .map_or(0.0, |f| f.score);
    assert!(plain
        .files
        .iter()
        .all(|f| !f.hinted
            && (f.path != "shop/inventory.py" || !f.signals.contains_key("path_mention"))));
    assert_eq!(plain.usage.prompt_tokens + plain.usage.completion_tokens, 0);

    request.hints.files = vec![
        "./shop/inventory.py".to_owned(),
        "shop/missing.py".to_owned(),
    ];
    request.hints.language = Some("cobol".to_owned());
    let hinted = localizer.localize(&request).expect("localizes");
    let inventory = hinted
        .files
        .iter()
        .find(|f| f.path == "shop/inventory.py")
        .expect("hinted file ranked");
    let boost = LocalizeOptions::default().weights.path_mention;
    assert!(inventory.hinted);
    assert!(
        (inventory.score - before - boost).abs() < 1e-5,
        "not mentioned: the full boost"
    );
    assert_eq!(inventory.evidence[0].signal, HINT_SIGNAL);
    assert_eq!(hinted.warnings.len(), 2, "{:?}", hinted.warnings);
    assert!(hinted
        .warnings
        .iter()
        .any(|w| w.contains("shop/missing.py")));
    assert!(hinted.warnings.iter().any(|w| w.contains("cobol")));

    // A file the issue already names in full gets no second credit.
    let mut named = LocalizeRequest::new(
        "shop-1",
        dir.path(),
        "Wrong total in shop/cart.py when empty",
    );
    let without = localizer.localize(&named).expect("localizes");
    named.hints.files = vec!["shop/cart.py".to_owned()];
    let with = localizer.localize(&named).expect("localizes");
    assert_eq!(without.files[0].path, "shop/cart.py");
    assert!((with.files[0].score - without.files[0].score).abs() < 1e-6);
    assert!(with.files[0].hinted);
}

/// Each file says what every signal added to its score, and the parts add up to it: a hinted
/// file's boost included, a file with no signal with none.
#[test]
fn contributions_add_up_to_each_files_score() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_repo(dir.path());
    let mut request = LocalizeRequest::new("shop-1", dir.path(), ISSUE);
    request.hints.files = vec!["shop/inventory.py".to_owned()];
    let result = Localizer::default().localize(&request).expect("localizes");
    let weights = LocalizeOptions::default().weights;
    let top = &result.files[0];
    assert_eq!(top.path, "shop/pricing.py");
    assert!((top.contributions["stack_frame"] - weights.stack_frame).abs() < 1e-6);
    assert!(top
        .contributions
        .keys()
        .all(|k| top.signals.contains_key(k)));
    let inventory = result
        .files
        .iter()
        .find(|f| f.path == "shop/inventory.py")
        .expect("hinted file ranked");
    assert!((inventory.contributions[HINT_SIGNAL] - weights.path_mention).abs() < 1e-6);
    for file in &result.files {
        let sum: f32 = file.contributions.values().sum();
        assert!(
            (sum - file.score).abs() < 1e-5,
            "{}: {:?} sum to {sum}, not {}",
            file.path,
            file.contributions,
            file.score
        );
        assert!(file.contributions.values().all(|&v| v > 0.0));
    }
}

#[test]
fn function_granularity_lists_entities_of_the_top_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_repo(dir.path());
    let mut request = LocalizeRequest::new("shop-1", dir.path(), ISSUE);
    request.granularity = Granularity::Function;
    request.top_k = 2;
    let result = Localizer::default().localize(&request).expect("localizes");
    let entities = result.entities.expect("entities for function granularity");
    assert_eq!(entities[0].id, "shop/pricing.py::apply_discount");
    assert_eq!(entities[0].kind, "function");
    assert_eq!(entities[0].lines, (6, 9));
    assert!(entities.iter().all(|e| result
        .files
        .iter()
        .any(|f| f.path == e.path && f.rank == e.file_rank)));
    request.granularity = Granularity::File;
    assert!(Localizer::default()
        .localize(&request)
        .expect("localizes")
        .entities
        .is_none());
}

#[test]
fn batch_resumes_and_records_failures_without_losing_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repos = dir.path().join("trees");
    write_repo(&repos.join("shop-1"));
    write_repo(&repos.join("shop-3"));
    let rows = [
        serde_json::json!({"instance_id": "shop-1", "problem_statement": ISSUE}),
        serde_json::json!({"instance_id": "shop-2", "problem_statement": ISSUE}),
        serde_json::json!({"instance_id": "shop-3", "problem_statement": "Inventory.reserve ignores stock"}),
    ];
    let dataset = dir.path().join("data.jsonl");
    let text: Vec<String> = rows.iter().map(ToString::to_string).collect();
    std::fs::write(&dataset, text.join("\n") + "\n").expect("write");
    let out = dir.path().join("out/loc_outputs.jsonl");
    let config = BatchConfig {
        run: DatasetConfig {
            top_k: 3,
            ..DatasetConfig::new(dataset.clone(), repos.clone())
        },
        ..BatchConfig::new(dataset, repos, out.clone())
    };
    assert_eq!(
        config.failures_path(),
        dir.path().join("out/loc_outputs.failures.jsonl"),
        "named as the command line names it"
    );
    let first = run_batch(&config).expect("runs");
    assert_eq!((first.selected, first.resumed, first.written), (3, 0, 2));
    assert_eq!(first.failures.len(), 1);
    assert_eq!(
        (
            first.failures[0].instance_id.as_str(),
            first.failures[0].kind.as_str()
        ),
        ("shop-2", "missing_tree")
    );
    assert!(config.failures_path().is_file());
    let lines: Vec<AgentlessLine> = std::fs::read_to_string(&out)
        .expect("read")
        .lines()
        .map(|l| serde_json::from_str(l).expect("line parses"))
        .collect();
    assert_eq!(lines[0].found_files[0], "shop/pricing.py");
    assert_eq!(lines[1].found_files[0], "shop/inventory.py");
    assert!(lines
        .iter()
        .all(|l| l.found_files.len() <= 3 && l.file_traj.is_empty()));

    write_repo(&config.run.repos.join("shop-2"));
    let second = run_batch(&config).expect("runs");
    assert_eq!(
        (second.resumed, second.written, second.failures.len()),
        (2, 1, 0)
    );
    assert_eq!(
        std::fs::read_to_string(config.failures_path()).expect("read"),
        "",
        "a clean run leaves an empty failures file"
    );
    assert_eq!(
        std::fs::read_to_string(&out).expect("read").lines().count(),
        3
    );

    let unknown = BatchConfig {
        run: DatasetConfig {
            ids: Some(vec!["nope".to_owned()]),
            ..config.run
        },
        ..config
    };
    assert!(run_batch(&unknown)
        .expect_err("unknown id")
        .is_input_error());
}
