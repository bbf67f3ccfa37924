//! A batch and an evaluation split as a distributed run splits them: workers localize
//! instances, their outcomes reach one sink in another order than the dataset's, and the sink
//! writes what a local run writes; an outcome it cannot take writes nothing. A panic in one
//! instance is that instance's failure, the others done.

use std::path::{Path, PathBuf};

use blagent_core::eval::{run_eval, EvalConfig, EvalJob, EvalSink, EvalWorker};
use blagent_core::interface::{
    drive, json_sink, json_worker, run_batch, BatchConfig, BatchFailure, BatchJob, BatchOutcome,
    BatchSink, BatchWorker, DatasetConfig,
};

use crate::shop::write_shop;

const ISSUES: [(&str, &str); 3] = [
    (
        "shop-1",
        "apply_discount in shop/pricing.py returns a negative total",
    ),
    ("shop-2", "Inventory.reserve ignores the stock"),
    ("shop-3", "Cart.total is always zero"),
];

/// The dataset (with gold files) and the trees of all three instances.
fn setup(dir: &Path) -> (PathBuf, PathBuf) {
    let repos = dir.join("trees");
    let mut rows = String::new();
    for (id, issue) in ISSUES {
        write_shop(&repos.join(id));
        let gold = ["shop/pricing.py", "shop/inventory.py", "shop/cart.py"][rows.lines().count()];
        rows += &serde_json::json!({"instance_id": id, "repo": "acme/shop", "problem_statement": issue, "gold_files": [gold]}).to_string();
        rows.push('\n');
    }
    let dataset = dir.join("data.jsonl");
    std::fs::write(&dataset, rows).expect("write");
    (dataset, repos)
}

fn batch_config(dataset: &Path, repos: &Path, out: PathBuf) -> BatchConfig {
    BatchConfig {
        run: DatasetConfig {
            top_k: 3,
            ..DatasetConfig::new(dataset.to_path_buf().clone(), repos.to_path_buf().clone())
        },
        ..BatchConfig::new(dataset.to_path_buf(), repos.to_path_buf(), out)
    }
}

/// Each line with its timings taken out, by instance.
fn lines_without_timings(path: &Path) -> Vec<(String, serde_json::Value)> {
    let mut lines: Vec<(String, serde_json::Value)> = std::fs::read_to_string(path)
        .expect("read")
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).expect("json");
            v["blagent"]["timings"] = serde_json::Value::Null;
            (v["instance_id"].as_str().expect("id").to_owned(), v)
        })
        .collect();
    lines.sort_by(|a, b| a.0.cmp(&b.0));
    lines
}

#[test]
fn outcomes_in_any_order_write_the_lines_of_a_local_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (dataset, repos) = setup(dir.path());
    let local = batch_config(&dataset, &repos, dir.path().join("local.jsonl"));
    run_batch(&local).expect("local batch");

    let split = batch_config(&dataset, &repos, dir.path().join("split.jsonl"));
    let worker = BatchWorker::new(&split).expect("worker");
    let mut sink = BatchSink::open(&split).expect("sink");
    let mut outcomes: Vec<BatchOutcome> = sink
        .todo()
        .iter()
        .map(|i| worker.localize(i).expect("outcome"))
        .collect();
    outcomes.reverse();
    let first = outcomes[0].clone();
    for outcome in outcomes {
        sink.record(outcome).expect("recorded");
    }
    assert!(sink.record(first).expect_err("twice").is_input_error());
    let report = sink.finish().expect("report");
    assert_eq!((report.written, report.failures.len()), (3, 0));
    assert_eq!(
        lines_without_timings(&local.out),
        lines_without_timings(&split.out)
    );
}

#[test]
fn a_sink_refuses_foreign_lines_and_reports_missing_outcomes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (dataset, repos) = setup(dir.path());
    let config = batch_config(&dataset, &repos, dir.path().join("out.jsonl"));
    let mut sink = BatchSink::open(&config).expect("sink");
    let foreign = BatchOutcome {
        instance_id: "shop-1".to_owned(),
        line: Some(r#"{"instance_id": "shop-2", "found_files": []}"#.to_owned()),
        failure: None,
        files: 0,
        llm_fallbacks: Vec::new(),
        seconds: 0.0,
    };
    assert!(sink.record(foreign).expect_err("foreign").is_input_error());
    let unknown = BatchOutcome::failed(
        BatchFailure {
            instance_id: "nope".to_owned(),
            kind: "worker_lost".to_owned(),
            error: "gone".to_owned(),
        },
        0.0,
    );
    assert!(sink.record(unknown).expect_err("unknown").is_input_error());
    let lost = BatchOutcome::failed(
        BatchFailure {
            instance_id: "shop-2".to_owned(),
            kind: "worker_lost".to_owned(),
            error: "the worker died".to_owned(),
        },
        0.0,
    );
    sink.record(lost).expect("a failure");
    assert!(sink.finish().expect_err("two missing").is_input_error());
    // Nothing was written to the output it created: it is removed again.
    assert!(!config.out.exists());
    // A batch that did not end replaces no earlier failures file (here: none is made).
    assert!(!config.failures_path().exists());
}

#[test]
fn an_evaluation_fed_out_of_order_reports_what_a_local_one_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (dataset, repos) = setup(dir.path());
    let config = |out: &str| EvalConfig {
        run: DatasetConfig {
            top_k: 3,
            ..DatasetConfig::new(dataset.clone(), repos.clone())
        },
        out: Some(dir.path().join(out)),
        ..EvalConfig::new(dataset.clone(), repos.clone())
    };
    let local = run_eval(&config("local.jsonl")).expect("local eval");
    let split = config("split.jsonl");
    let worker = EvalWorker::new(&split).expect("worker");
    let mut sink = EvalSink::open(&split).expect("sink");
    let mut outcomes: Vec<_> = sink
        .todo()
        .iter()
        .map(|item| worker.evaluate(item).expect("outcome"))
        .collect();
    outcomes.rotate_left(1);
    for outcome in outcomes {
        sink.record(outcome).expect("recorded");
    }
    let report = sink.finish().expect("report");
    assert_eq!(report.overall, local.overall);
    assert_eq!(report.per_repo, local.per_repo);
    assert_eq!(report.overall.instances, 3);
    let ids = |name: &str| -> Vec<String> {
        std::fs::read_to_string(dir.path().join(name))
            .expect("read")
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).expect("json")["instance_id"]
                    .to_string()
            })
            .collect()
    };
    assert_eq!(ids("split.jsonl"), ids("local.jsonl"));
}

/// The panic injected into one instance, and the failure message it must become.
const INJECTED: &str = "injected into shop-2";

#[test]
fn a_panic_in_one_instance_is_its_failure_in_a_batch_and_an_evaluation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (dataset, repos) = setup(dir.path());
    let batch = batch_config(&dataset, &repos, dir.path().join("loc.jsonl"));
    let worker = BatchWorker::new(&batch).expect("worker");
    let sink = BatchSink::open(&batch).expect("sink");
    let report = drive::<BatchJob>(sink, |instance| {
        assert!(instance.instance_id != "shop-2", "{INJECTED}");
        worker.localize(instance)
    })
    .expect("the batch runs on");
    assert_eq!(report.written, 2);
    let failed: Vec<(&str, &str)> = report
        .failures
        .iter()
        .map(|f| (f.instance_id.as_str(), f.kind.as_str()))
        .collect();
    assert_eq!(failed, [("shop-2", "internal")]);
    assert!(
        report.failures[0].error.contains(INJECTED),
        "{:?}",
        report.failures[0]
    );
    let lines = std::fs::read_to_string(&batch.out).expect("read");
    assert_eq!(lines.lines().count(), 2);
    assert!(!lines.contains("shop-2"));

    let eval = EvalConfig {
        run: DatasetConfig {
            top_k: 3,
            ..DatasetConfig::new(dataset.clone(), repos.clone())
        },
        ..EvalConfig::new(dataset, repos)
    };
    let worker = EvalWorker::new(&eval).expect("worker");
    let sink = EvalSink::open(&eval).expect("sink");
    let report = drive::<EvalJob>(sink, |item| {
        assert!(item.instance.instance_id != "shop-2", "{INJECTED}");
        worker.evaluate(item)
    })
    .expect("the evaluation runs on");
    assert_eq!(report.overall.instances, 2);
    assert_eq!(report.failures.len(), 1);
    assert_eq!(report.failures[0].0, "shop-2");
    assert!(
        report.failures[0].1.starts_with("internal error (panic)")
            && report.failures[0].1.contains(INJECTED),
        "{:?}",
        report.failures
    );
}

#[test]
fn the_json_face_runs_either_job_and_records_a_lost_item() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (dataset, repos) = setup(dir.path());
    let out = dir.path().join("loc.jsonl");
    let config = serde_json::json!({
        "dataset": dataset, "repos": repos, "out": out, "top_k": 3,
    })
    .to_string();
    let worker = json_worker::<BatchJob>(&config, None).expect("worker");
    let mut sink = json_sink::<BatchJob>(&config, None).expect("sink");
    let todo: Vec<serde_json::Value> =
        serde_json::from_str(&sink.todo_json().expect("todo")).expect("json");
    assert_eq!(todo.len(), 3);
    assert_eq!(todo[0]["instance"]["instance_id"], "shop-1");
    let item = todo[0]["item"].to_string();
    sink.record_json(&worker.run_json(&item).expect("outcome"))
        .expect("recorded");
    for entry in &todo[1..] {
        let item = entry["item"].to_string();
        sink.record_failure_json(&item, "worker_lost", "its worker died")
            .expect("recorded");
    }
    let message = sink
        .record_json("{}")
        .expect_err("not an outcome")
        .to_string();
    assert!(message.contains("invalid batch outcome"), "{message}");
    let report: serde_json::Value =
        serde_json::from_str(&sink.finish_json().expect("report")).expect("json");
    assert_eq!(report["written"], 1);
    assert_eq!(report["failures"][1]["kind"], "worker_lost");

    let unknown = json_sink::<EvalJob>(r#"{"dataset": "d", "repos": "r", "bogus": 1}"#, None);
    let message = unknown.err().expect("refused").to_string();
    assert!(message.contains("invalid evaluation config"), "{message}");
}
