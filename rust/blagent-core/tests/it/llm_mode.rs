//! LLM mode through the evaluation loop and the batch, with a scripted model and with none.

use std::path::Path;
use std::sync::Arc;

use blagent_core::agent::{LlmOptions, LlmRun, Pipeline};
use blagent_core::eval::{run_eval, EvalConfig};
use blagent_core::interface::{run_batch, BatchConfig, DatasetConfig, Granularity};
use blagent_core::llm::{NoModel, ScriptedModel};

use crate::shop::write_shop;

fn dataset(dir: &Path) -> std::path::PathBuf {
    write_shop(&dir.join("trees/shop-1"));
    let row = serde_json::json!({
        "instance_id": "shop-1",
        "repo": "o/shop",
        "problem_statement": "apply_discount returns a negative total",
        "patch": "diff --git a/shop/pricing.py b/shop/pricing.py\n",
    });
    let path = dir.join("data.jsonl");
    std::fs::write(&path, format!("{row}\n")).expect("write");
    path
}

fn run(model: Arc<dyn blagent_core::llm::ChatModel>) -> LlmRun {
    LlmRun {
        model,
        options: LlmOptions::default(),
        model_name: String::new(),
        reads: blagent_core::repo::Inputs::default(),
        recording: None,
    }
}

#[test]
fn eval_reports_llm_cost_per_instance_and_in_total() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dataset(dir.path());
    let model = ScriptedModel::from_fn(|r| match r.stage.as_str() {
        "t0" | "t1" => r#"{"query": "apply_discount"}"#.to_owned(),
        "phase1" => r#"{"action": "finish", "scores": {"shop/pricing.py": 9}}"#.to_owned(),
        _ => "{\"ranking\": [{\"path\": \"shop/pricing.py\"".to_owned(),
    });
    let out = dir.path().join("preds.jsonl");
    let config = EvalConfig {
        run: DatasetConfig {
            pipeline: Pipeline::Blagent,
            llm: Some(run(Arc::new(model))),
            ..DatasetConfig::new(data.clone(), dir.path().join("trees").clone())
        },
        out: Some(out.clone()),
        ..EvalConfig::new(data, dir.path().join("trees"))
    };
    let report = run_eval(&config).expect("runs");
    assert!((report.overall.mrr - 1.0).abs() < 1e-9);
    let totals = report.llm.expect("llm totals");
    assert_eq!(
        (
            totals.instances,
            totals.llm_ranked,
            totals.pipeline.as_str()
        ),
        (1, 0, "blagent"),
        "phase 1 gave an order, but with no weight it did not shape the ranking"
    );
    assert_eq!(
        totals.total.parse_failures, 4,
        "phase 2 (both asks) never closes its JSON, and repeats itself after the repair request"
    );
    assert_eq!(totals.total.retries, 2);
    assert_eq!(totals.total.fallbacks, 2);
    assert!(
        totals.total.model_weight.abs() < 1e-9,
        "no consistent phase 2: no weight"
    );
    assert!(totals.mean.prompt_tokens > 0.0);
    let line: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&out).expect("read").trim()).expect("json");
    assert_eq!(line["llm"]["calls"], 3 + 2 + 2);
    assert_eq!(line["llm"]["model_weight"], 0.0);
    assert_eq!(line["found_files"].as_array().expect("files").len(), 3);
}

#[test]
fn batch_runs_a_pipeline_without_a_model_by_falling_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dataset(dir.path());
    let out = dir.path().join("out/loc_outputs.jsonl");
    let config = BatchConfig {
        run: DatasetConfig {
            top_k: 3,
            pipeline: Pipeline::Blagent,
            llm: Some(run(Arc::new(NoModel))),
            ..DatasetConfig::new(data.clone(), dir.path().join("trees").clone())
        },
        granularity: Granularity::Function,
        ..BatchConfig::new(data, dir.path().join("trees"), out.clone())
    };
    let report = run_batch(&config).expect("runs");
    assert_eq!(report.written, 1);
    let line: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&out).expect("read").trim()).expect("json");
    let files = line["found_files"].as_array().expect("files");
    assert_eq!(files.len(), 3, "completed to top_k: {line}");
    assert_eq!(files[0], "shop/pricing.py");
    let text = line.to_string();
    assert!(text.contains("llm:blagent:none"), "{text}");
}
