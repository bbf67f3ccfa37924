//! What a hostile probe broke (issue 18), as tests: a hanging endpoint, secrets in the base URL,
//! instance ids that leave the trees folder, duplicated ids, special and oversized input files.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::scripted_server::{Action, ScriptedServer};
use blagent_core::agent::{LlmOptions, LlmRun, Pipeline};
use blagent_core::eval::{run_eval, EvalConfig};
use blagent_core::interface::{run_batch, BatchConfig, DatasetConfig};
use blagent_core::llm::{model_from_config, ChatModel, LlmConfig, Message};
use blagent_core::{LocalizationResult, LocalizeOptions, LocalizeRequest, Localizer};

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn write_tree(root: &Path) {
    write(
        root,
        "shop/pricing.py",
        "def apply_discount(total, percent):\n    return total - total * percent\n",
    );
    write(
        root,
        "shop/cart.py",
        "class Cart:\n    def total(self):\n        return 0\n",
    );
    write(root, "shop/inventory.py", "class Inventory:\n    pass\n");
}

fn dataset(dir: &Path, ids: &[&str]) -> PathBuf {
    let mut text = String::new();
    for id in ids {
        let row = serde_json::json!({
            "instance_id": id,
            "repo": "o/shop",
            "problem_statement": "apply_discount returns a negative total",
            "patch": "diff --git a/shop/pricing.py b/shop/pricing.py\n",
        });
        writeln!(text, "{row}").unwrap();
    }
    let path = dir.join("data.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

fn llm_config(base_url: &str) -> LlmConfig {
    LlmConfig {
        base_url: Some(base_url.to_owned()),
        model: "m".to_owned(),
        backoff_base_ms: 10,
        ..LlmConfig::default()
    }
}

fn blagent(model: Arc<dyn ChatModel>) -> LlmRun {
    LlmRun {
        model,
        options: LlmOptions::default(),
        model_name: String::new(),
        reads: blagent_core::repo::Inputs::default(),
        recording: None,
    }
}

/// The blagent pipeline's answer for `issue` in the tree `repo`, `model` answering.
fn localize_with(repo: &Path, issue: &str, model: Arc<dyn ChatModel>) -> LocalizationResult {
    let localizer = Localizer::new(LocalizeOptions::default())
        .unwrap()
        .with_llm(blagent(model));
    let mut request = LocalizeRequest::new("x", repo, issue);
    request.top_k = 3;
    request.pipeline = Pipeline::Blagent;
    localizer.localize(&request).unwrap()
}

fn batch_config(dir: &Path, data: PathBuf, llm: Option<LlmRun>) -> BatchConfig {
    BatchConfig {
        run: DatasetConfig {
            top_k: 3,
            pipeline: Pipeline::Blagent,
            llm,
            ..DatasetConfig::new(data.clone(), dir.join("trees").clone())
        },
        ..BatchConfig::new(data, dir.join("trees"), dir.join("out/loc.jsonl"))
    }
}

fn eval_config(dir: &Path, data: PathBuf) -> EvalConfig {
    EvalConfig::new(data, dir.join("trees"))
}

/// With the default retries, an endpoint that accepts connections and never answers costs one
/// request timeout for the whole run: the request is not retried, and the run stops asking.
#[test]
fn a_hanging_endpoint_costs_one_request_timeout_and_the_ranking_is_complete() {
    let server = ScriptedServer::start(vec![Action::Stall(Duration::from_secs(60))]);
    let config = LlmConfig {
        request_timeout_s: 1.0,
        ..llm_config(&server.base_url())
    };
    assert_eq!(config.max_retries, LlmConfig::default().max_retries);
    let model = model_from_config(&config).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_tree(dir.path());
    let start = Instant::now();
    let result = localize_with(dir.path(), "apply_discount is wrong", model.into());
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(server.received().len(), 1);
    assert_eq!(result.files.len(), 3, "a complete ranking");
    let fallbacks = &result.llm.as_ref().unwrap().stats.fallbacks;
    assert!(
        fallbacks[0].starts_with("t0: ") && fallbacks[0].contains("not retried"),
        "{fallbacks:?}"
    );
    assert!(
        fallbacks.iter().any(|f| f.starts_with("phase1: ")),
        "{fallbacks:?}"
    );
}

/// A password in the base URL is redacted wherever the key would be: errors, fallbacks, the
/// serialized configuration and a recorded cassette.
#[test]
fn a_password_in_the_base_url_never_shows() {
    let server = ScriptedServer::start(vec![Action::status_with_body(
        400,
        r#"{"error": {"message": "bad request"}}"#,
    )]);
    let url = server
        .base_url()
        .replace("http://", "http://alice:hunter2@");
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let config = LlmConfig {
        record: Some(cassette.clone()),
        ..llm_config(&url)
    };
    let client = blagent_core::llm::LlmClient::new(&config).unwrap();
    let err = client
        .chat("t0", vec![Message::user("x")])
        .unwrap_err()
        .to_string();
    assert!(
        !err.contains("hunter2") && err.contains("<redacted>"),
        "{err}"
    );
    let shown = serde_json::to_string(client.config()).unwrap();
    assert!(!shown.contains("hunter2"), "{shown}");
    let recorded = std::fs::read_to_string(&cassette).unwrap();
    assert!(recorded.contains("\"error\""), "{recorded}");
    assert!(!recorded.contains("hunter2"), "{recorded}");
    let basic = server.received()[0]
        .header("authorization")
        .map(str::to_owned);
    assert!(
        basic.is_some_and(|h| h.starts_with("Basic ")),
        "credentials still sent"
    );

    write_tree(&dir.path().join("repo"));
    let model = model_from_config(&llm_config(&url)).unwrap();
    let result = localize_with(&dir.path().join("repo"), "apply_discount", model.into());
    let fallbacks = result.llm.as_ref().unwrap().stats.fallbacks.join("\n");
    assert!(
        !fallbacks.contains("hunter2") && fallbacks.contains("<redacted>"),
        "{fallbacks}"
    );
}

const ESCAPES: [&str; 4] = ["../outside", "/abs/tree", "inst/../../outside", ".."];

fn escaping_layout(dir: &Path) -> PathBuf {
    write_tree(&dir.join("trees/ok"));
    write_tree(&dir.join("trees/nested/a/1"));
    write_tree(&dir.join("outside"));
    write_tree(&dir.join("trees/inst/x"));
    let mut ids = vec!["ok", "nested/a/1"];
    ids.extend(ESCAPES);
    dataset(dir, &ids)
}

#[test]
fn batch_refuses_ids_that_leave_the_trees_folder() {
    let dir = tempfile::tempdir().unwrap();
    let data = escaping_layout(dir.path());
    let report = run_batch(&batch_config(dir.path(), data, None)).unwrap();
    assert_eq!(report.written, 2, "{report:?}");
    let failed: Vec<(&str, &str)> = report
        .failures
        .iter()
        .map(|f| (f.instance_id.as_str(), f.kind.as_str()))
        .collect();
    assert_eq!(
        failed,
        ESCAPES.iter().map(|id| (*id, "input")).collect::<Vec<_>>()
    );
    assert!(report.failures[0].error.contains("inside the trees folder"));
}

#[test]
fn eval_refuses_ids_that_leave_the_trees_folder() {
    let dir = tempfile::tempdir().unwrap();
    let data = escaping_layout(dir.path());
    let report = run_eval(&eval_config(dir.path(), data)).unwrap();
    assert_eq!(report.overall.instances, 2);
    let failed: Vec<&str> = report.failures.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(failed, ESCAPES);
}

#[test]
fn eval_counts_a_duplicated_id_once_as_batch_does() {
    let dir = tempfile::tempdir().unwrap();
    write_tree(&dir.path().join("trees/a"));
    let data = dataset(dir.path(), &["a", "a"]);
    let report = run_eval(&eval_config(dir.path(), data.clone())).unwrap();
    assert_eq!(report.overall.instances, 1);
    let batch = run_batch(&batch_config(dir.path(), data, None)).unwrap();
    assert_eq!((batch.selected, batch.written), (1, 1));
}

#[cfg(unix)]
#[test]
fn special_input_and_output_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_tree(&dir.path().join("trees/a"));
    let data = dataset(dir.path(), &["a"]);
    // A FIFO made here stands for every special file, so the test needs no device.
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let is_fifo_refusal =
        |err: &blagent_core::Error| err.is_input_error() && err.to_string().contains("FIFO");
    // A dataset that is a FIFO, an output that is a FIFO.
    let err = run_eval(&eval_config(dir.path(), fifo.clone())).unwrap_err();
    assert!(is_fifo_refusal(&err), "{err}");
    let err = run_batch(&batch_config(dir.path(), fifo.clone(), None)).unwrap_err();
    assert!(is_fifo_refusal(&err), "{err}");
    let config = BatchConfig {
        out: fifo.clone(),
        ..batch_config(dir.path(), data, None)
    };
    let err = run_batch(&config).unwrap_err();
    assert!(is_fifo_refusal(&err), "{err}");
    // A cassette that is a FIFO, to read or to record.
    let err = model_from_config(&LlmConfig {
        replay: Some(fifo.clone()),
        ..LlmConfig::default()
    })
    .err()
    .unwrap();
    assert!(is_fifo_refusal(&err), "{err}");
    let err = model_from_config(&LlmConfig {
        record: Some(fifo),
        ..llm_config("http://127.0.0.1:9")
    })
    .err()
    .unwrap();
    assert!(is_fifo_refusal(&err), "{err}");
}
