//! Calibration through the real pipeline: a scripted model that is right where retrieval is
//! wrong earns a scale that lets its order lead; the profile it writes changes `eval`'s
//! ranking, and a profile of another model is refused.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use blagent_core::agent::{LlmOptions, LlmProfile, LlmRun, Pipeline};
use blagent_core::eval::{run_calibration, run_eval, CalibrateConfig, EvalConfig};
use blagent_core::interface::DatasetConfig;
use blagent_core::llm::{LlmConfig, ScriptedModel};

/// Files of every tree: the issue names `parse_header` (in `net/headers.py`), the fix is in
/// `net/codec.py`.
const FILES: [(&str, &str); 6] = [
    (
        "net/headers.py",
        "def parse_header(line):\n    return line.split(':')\n",
    ),
    (
        "net/codec.py",
        "def decode(data):\n    return data.decode('latin-1')\n",
    ),
    (
        "net/client.py",
        "class Client:\n    def get(self, url):\n        return url\n",
    ),
    (
        "net/server.py",
        "class Server:\n    def serve(self):\n        return None\n",
    ),
    (
        "net/cookies.py",
        "def parse_cookie(text):\n    return text\n",
    ),
    (
        "net/urls.py",
        "def join(base, path):\n    return base + path\n",
    ),
];

fn dataset(dir: &Path, n: usize) -> PathBuf {
    let mut rows = String::new();
    for i in 0..n {
        let id = format!("net-{i}");
        for (rel, text) in FILES {
            let path = dir.join("trees").join(&id).join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        let row = serde_json::json!({
            "instance_id": id,
            "repo": "o/net",
            "problem_statement": format!("parse_header garbles non-ASCII header values (case {i})"),
            "patch": "diff --git a/net/codec.py b/net/codec.py\n",
        });
        rows.push_str(&row.to_string());
        rows.push('\n');
    }
    let path = dir.join("data.jsonl");
    std::fs::write(&path, rows).expect("write");
    path
}

/// A model that puts `net/codec.py` first at every stage, consistently.
fn knowing_model() -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::from_fn(|r| match r.stage.as_str() {
        "t0" | "t1" => r#"{"query": "decode header bytes"}"#.to_owned(),
        "phase1" => r#"{"action": "finish", "scores": {"net/codec.py": 10, "net/headers.py": 6}}"#
            .to_owned(),
        _ => {
            let ranking: Vec<serde_json::Value> = ["net/codec.py", "net/headers.py"]
                .iter()
                .chain(
                    FILES
                        .iter()
                        .map(|(p, _)| p)
                        .filter(|p| !p.contains("codec") && !p.contains("headers")),
                )
                .map(|p| serde_json::json!({"path": p, "reason": "decoding"}))
                .collect();
            serde_json::json!({ "ranking": ranking }).to_string()
        }
    }))
}

fn run(model: Arc<ScriptedModel>, options: LlmOptions) -> LlmRun {
    LlmRun {
        model,
        options,
        model_name: "knowing".to_owned(),
        reads: blagent_core::repo::Inputs::default(),
        recording: None,
    }
}

fn eval(dir: &Path, data: &Path, run: LlmRun) -> f64 {
    let config = EvalConfig {
        run: DatasetConfig {
            pipeline: Pipeline::Blagent,
            llm: Some(run),
            ..DatasetConfig::new(data.to_owned(), dir.join("trees").clone())
        },
        ..EvalConfig::new(data.to_owned(), dir.join("trees"))
    };
    run_eval(&config).expect("eval runs").overall.mrr
}

#[test]
fn a_model_right_where_retrieval_is_wrong_is_calibrated_to_lead() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Eight instances: few enough for a quick test, enough for eight wins to pass the exact
    // sign test (p 0.008; four could not go below p 0.125).
    let data = dataset(dir.path(), 8);
    let out = dir.path().join("profile.json");
    let config = CalibrateConfig {
        run: DatasetConfig {
            pipeline: Pipeline::Blagent,
            llm: Some(run(knowing_model(), LlmOptions::default())),
            ..DatasetConfig::new(data.clone(), dir.path().join("trees"))
        },
        folds: 2,
        out: out.clone(),
    };
    let report = run_calibration(&config).expect("calibrates");
    let fit = &report.profile.fit;
    assert_eq!(fit.instances, 8);
    assert!(
        fit.retrieval_only.mrr < 1.0,
        "retrieval ranks parse_header's file first"
    );
    assert!(
        fit.default.mrr < 1.0,
        "the default weight cannot overcome that"
    );
    assert!(report.profile.weight_scale > 1.0, "{fit:?}");
    assert!((fit.chosen.mrr - 1.0).abs() < 1e-9);
    assert_eq!(
        (report.sign_test.run_only, report.sign_test.baseline_only),
        (8, 0)
    );
    // Each fold's other four instances are too few to raise the scale: the cross-validated
    // procedure ranks every fold at the default.
    assert!((fit.cross_validated.mrr - fit.default.mrr).abs() < 1e-9);
    assert!(report.llm.total.calls > 0);

    let profile = LlmProfile::load(&out).expect("the profile reads back");
    assert_eq!(profile, report.profile);
    assert_eq!(profile.model, "knowing");

    let default_mrr = eval(
        dir.path(),
        &data,
        run(knowing_model(), LlmOptions::default()),
    );
    let options = LlmOptions {
        profile: Some(out.clone()),
        ..LlmOptions::default()
    };
    let config = LlmConfig {
        model: "knowing".to_owned(),
        ..LlmConfig::default()
    };
    let mut calibrated = LlmRun::from_config(options.clone(), &config).expect("loads the profile");
    calibrated.model = knowing_model();
    assert!((eval(dir.path(), &data, calibrated) - 1.0).abs() < 1e-9);
    assert!(default_mrr < 1.0);

    let other = LlmConfig {
        model: "another".to_owned(),
        ..LlmConfig::default()
    };
    let err = LlmRun::from_config(options, &other).expect_err("another model's profile");
    assert!(err.to_string().contains("fitted for model"), "{err}");
}

#[test]
fn calibration_needs_a_model_and_an_llm_pipeline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dataset(dir.path(), 2);
    let mut config = CalibrateConfig {
        run: DatasetConfig {
            pipeline: Pipeline::Fused,
            llm: Some(run(knowing_model(), LlmOptions::default())),
            ..DatasetConfig::new(data, dir.path().join("trees"))
        },
        folds: 2,
        out: dir.path().join("p.json"),
    };
    assert!(
        run_calibration(&config).is_err(),
        "fused is not an LLM pipeline"
    );
    config.run.pipeline = Pipeline::Blagent;
    config.run.llm = None;
    assert!(run_calibration(&config).is_err(), "no model");
    config.run.llm = Some(run(
        knowing_model(),
        LlmOptions {
            model_weight: Some(2.0),
            ..LlmOptions::default()
        },
    ));
    assert!(
        run_calibration(&config).is_err(),
        "a fixed weight leaves nothing to fit"
    );
    assert!(!dir.path().join("p.json").exists());
}
