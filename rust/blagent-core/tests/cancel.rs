//! Cancellation ([`blagent_core::cancel`]): a request in flight to a hanging endpoint, a retry's
//! backoff and a batch all stop within a fraction of a second, and the batch writes no line for
//! the instance it was cut short in; a repository walk and a JSONL read stop too. One test: the flag is process-wide.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use blagent_core::agent::{LlmOptions, LlmRun, Pipeline};
use blagent_core::dataset::read_jsonl;
use blagent_core::interface::{run_batch, BatchConfig, DatasetConfig};
use blagent_core::llm::{model_from_config, ChatModel, LlmConfig, Message};
use blagent_core::repo::{walk, WalkOptions};
use blagent_core::{cancel, Error};
use support::scripted_server::{Action, ScriptedServer};

/// Runs `work` in a scope and asks for a stop after `after`; returns the result and how long
/// `work` took.
fn cancelled_after<T>(after: Duration, work: impl FnOnce() -> T) -> (T, Duration) {
    let _scope = cancel::Scope::enter();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(after);
        cancel::request();
    });
    let start = Instant::now();
    let value = work();
    let took = start.elapsed();
    canceller.join().unwrap();
    (value, took)
}

#[test]
fn cancellation_stops_llm_waits_and_batches_promptly() {
    // A request in flight to an endpoint that never answers.
    let server = ScriptedServer::start(vec![Action::Stall(Duration::from_secs(60))]);
    let config = LlmConfig {
        base_url: Some(server.base_url()),
        model: "m".to_owned(),
        request_timeout_s: 60.0,
        ..LlmConfig::default()
    };
    let model: Arc<dyn ChatModel> = model_from_config(&config).unwrap().into();
    let request = config.request("t0", vec![Message::user("x")]);
    let (result, took) = cancelled_after(Duration::from_millis(300), || model.chat(&request));
    assert!(matches!(result, Err(Error::Cancelled)), "{result:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");

    // A retry's backoff (the server keeps answering 503 with a long Retry-After).
    let busy = ScriptedServer::start(vec![Action::status(503).retry_after("50")]);
    let config = LlmConfig {
        base_url: Some(busy.base_url()),
        ..config
    };
    let flaky = model_from_config(&config).unwrap();
    let (result, took) = cancelled_after(Duration::from_millis(300), || flaky.chat(&request));
    assert!(matches!(result, Err(Error::Cancelled)), "{result:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");

    // A batch against the hanging endpoint: it stops, and the instance is not written.
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("trees/a/shop.py");
    std::fs::create_dir_all(tree.parent().unwrap()).unwrap();
    std::fs::write(&tree, "def total():\n    return 0\n").unwrap();
    let row = serde_json::json!({"instance_id": "a", "problem_statement": "total is wrong"});
    std::fs::write(dir.path().join("data.jsonl"), format!("{row}\n")).unwrap();
    let batch = BatchConfig {
        run: DatasetConfig {
            top_k: 3,
            pipeline: Pipeline::Blagent,
            llm: Some(LlmRun {
                model,
                options: LlmOptions::default(),
                model_name: String::new(),
                reads: blagent_core::repo::Inputs::default(),
                recording: None,
            }),
            ..DatasetConfig::new(
                dir.path().join("data.jsonl").clone(),
                dir.path().join("trees").clone(),
            )
        },
        ..BatchConfig::new(
            dir.path().join("data.jsonl"),
            dir.path().join("trees"),
            dir.path().join("loc.jsonl"),
        )
    };
    let (result, took) = cancelled_after(Duration::from_millis(500), || run_batch(&batch));
    assert!(matches!(result, Err(Error::Cancelled)), "{result:?}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    let written = std::fs::read_to_string(dir.path().join("loc.jsonl")).unwrap_or_default();
    assert_eq!(written, "", "no line for the interrupted instance");

    // The walk of a repository, asked to stop before it starts.
    {
        let _scope = cancel::Scope::enter();
        cancel::request();
        let walked = walk(&dir.path().join("trees"), &WalkOptions::default());
        assert!(matches!(walked, Err(Error::Cancelled)), "{walked:?}");
        // Reading a dataset or a cassette (300 MB once took 4 s before a stop was seen).
        let rows = read_jsonl::<serde_json::Value>(&dir.path().join("data.jsonl"));
        assert!(matches!(rows, Err(Error::Cancelled)), "{rows:?}");
    }

    // An analysis stopped after it was made, while its outputs were being written (the chart
    // takes a second to draw): the folder keeps the last analysis (a review found a Ctrl-C
    // then reported as an interruption with every output replaced).
    let data = dir.path().join("analysis");
    std::fs::create_dir_all(&data).unwrap();
    let patch = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n";
    let rows = [
        (
            "data.jsonl",
            serde_json::json!({"instance_id": "i", "repo": "o/r", "patch": patch, "problem_statement": "x"}),
        ),
        (
            "locs.jsonl",
            serde_json::json!({"instance_id": "i", "found_files": ["a.py"]}),
        ),
        (
            "preds.jsonl",
            serde_json::json!({"instance_id": "i", "model_patch": patch}),
        ),
    ];
    for (name, row) in rows {
        std::fs::write(data.join(name), format!("{row}\n")).unwrap();
    }
    let out_dir = data.join("out");
    let config = blagent_core::analysis::AnalysisConfig {
        dataset: data.join("data.jsonl"),
        locs: data.join("locs.jsonl"),
        predictions: data.join("preds.jsonl"),
        report: None,
        repos: None,
        top_k: 3,
        function_top_k: 3,
        function_rule: blagent_core::analysis::FunctionRule::Any,
        out_dir: Some(out_dir.clone()),
    };
    let mut report = {
        let _scope = cancel::Scope::enter();
        blagent_core::analysis::analyze_failures(&config).unwrap()
    };
    let summary = std::fs::read(out_dir.join("summary.json")).unwrap();
    report.warnings.push("a later run".to_owned());
    {
        let _scope = cancel::Scope::enter();
        cancel::request();
        let written = blagent_core::analysis::write_outputs(
            &report,
            &out_dir,
            &blagent_core::repo::Inputs::default(),
        );
        assert!(matches!(written, Err(Error::Cancelled)), "{written:?}");
    }
    assert_eq!(
        std::fs::read(out_dir.join("summary.json")).unwrap(),
        summary
    );

    // A new scope starts clean.
    drop(cancel::Scope::enter());
    let scope = cancel::Scope::enter();
    assert!(!cancel::is_requested());
    drop(scope);

    // A call that starts while a cancelled one is stopping waits for it, then runs clean: a
    // stop reaches only the calls in progress when it was asked for (a Ctrl-C handled in one
    // Python thread failed every later call of the others).
    let cancelled = cancel::Scope::enter();
    cancel::request();
    let (tx, rx) = std::sync::mpsc::channel();
    let later = std::thread::spawn(move || {
        let _scope = cancel::Scope::enter();
        tx.send(cancel::is_requested()).unwrap();
    });
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "it waits while the cancelled call is in progress"
    );
    drop(cancelled);
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(false));
    later.join().unwrap();
}
