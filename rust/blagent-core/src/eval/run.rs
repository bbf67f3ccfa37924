//! The evaluation loop: every dataset instance whose repository tree exists is localized, its
//! prediction written as a JSONL line, and its ranking scored against the gold files. An
//! evaluation is a [`Job`]: the per-instance work is [`EvalWorker`]'s, the adding up
//! [`EvalSink`]'s (see `worker` and `sink`), so a distributed run (`blagent eval --ray`)
//! shares both.

use super::sink::EvalSink;
use super::types::{EvalConfig, EvalItem, EvalOutcome, EvalReport};
use super::worker::EvalWorker;
use crate::agent::LlmRun;
use crate::dataset::Instance;
use crate::error::{Error, Result};
use crate::interface::{
    json_sink, json_worker, run_job, AnySink, AnyWorker, BatchJob, DatasetConfig, Job, JobSink,
    JobWorker,
};

/// The jobs a driver can run by name ([`job_worker`], [`job_sink`]): a batch, an evaluation.
pub const JOB_KINDS: [&str; 2] = ["batch", "eval"];

/// The worker of the job named `kind` (one of [`JOB_KINDS`]) for `config_json` (its
/// configuration as JSON), with `llm` for the LLM pipelines, behind JSON.
pub fn job_worker(
    kind: &str,
    config_json: &str,
    llm: Option<LlmRun>,
) -> Result<Box<dyn AnyWorker>> {
    match kind {
        "batch" => json_worker::<BatchJob>(config_json, llm),
        "eval" => json_worker::<EvalJob>(config_json, llm),
        other => Err(unknown_kind(other)),
    }
}

/// The sink of the job named `kind` (one of [`JOB_KINDS`]) for `config_json`, with the
/// workers' `llm` (whose inputs no output may be), behind JSON.
pub fn job_sink(kind: &str, config_json: &str, llm: Option<LlmRun>) -> Result<Box<dyn AnySink>> {
    match kind {
        "batch" => json_sink::<BatchJob>(config_json, llm),
        "eval" => json_sink::<EvalJob>(config_json, llm),
        other => Err(unknown_kind(other)),
    }
}

fn unknown_kind(kind: &str) -> Error {
    Error::InvalidInput(format!(
        "unknown job {kind:?}: one of {}",
        JOB_KINDS.join(", ")
    ))
}

/// An evaluation, as a [`Job`]: its items are the instances with their place in the run.
#[derive(Debug, Clone, Copy)]
pub struct EvalJob;

impl Job for EvalJob {
    const NAME: &'static str = "evaluation";
    type Config = EvalConfig;
    type Item = EvalItem;
    type Outcome = EvalOutcome;
    type Report = EvalReport;
    type Worker = EvalWorker;
    type Sink = EvalSink;

    fn settings(config: &mut EvalConfig) -> &mut DatasetConfig {
        &mut config.run
    }

    fn instance(item: &EvalItem) -> &Instance {
        &item.instance
    }

    fn failed(item: &EvalItem, _kind: &str, error: String) -> EvalOutcome {
        EvalOutcome {
            position: item.position,
            instance_id: item.instance.instance_id.clone(),
            error: Some(error),
            ..EvalOutcome::default()
        }
    }

    fn took(report: &mut EvalReport, seconds: f64) {
        report.seconds = seconds;
    }
}

impl JobWorker<EvalJob> for EvalWorker {
    fn new(config: &EvalConfig) -> Result<Self> {
        EvalWorker::new(config)
    }

    fn run(&self, item: &EvalItem) -> Result<EvalOutcome> {
        self.evaluate(item)
    }
}

impl JobSink<EvalJob> for EvalSink {
    fn open(config: &EvalConfig) -> Result<Self> {
        EvalSink::open(config)
    }

    fn todo(&self) -> &[EvalItem] {
        EvalSink::todo(self)
    }

    fn started(&self, instance_id: &str) {
        EvalSink::started(self, instance_id);
    }

    fn note(&self, message: &str) {
        EvalSink::note(self, message);
    }

    fn record(&mut self, outcome: EvalOutcome) -> Result<()> {
        EvalSink::record(self, outcome)
    }

    fn finish(self) -> Result<EvalReport> {
        EvalSink::finish(self)
    }
}

/// Runs the localizer over the dataset and scores it: an [`EvalWorker`] evaluates each
/// instance in turn and an [`EvalSink`] adds them up.
pub fn run_eval(config: &EvalConfig) -> Result<EvalReport> {
    run_job::<EvalJob>(config)
}

/// A panic in one instance (injected with [`crate::fault`]) is that instance's failure.
#[cfg(test)]
mod fault_tests {
    use std::fs;
    use std::path::Path;

    use super::{run_eval, EvalConfig};
    use crate::interface::{run_batch, BatchConfig};

    /// Instances `ids` with trees and gold files; indexing `panics-here` panics.
    fn setup(dir: &Path, ids: &[&str]) -> (std::path::PathBuf, std::path::PathBuf) {
        let trees = dir.join("trees");
        for id in ids {
            fs::create_dir_all(trees.join(id).join("shop")).unwrap();
            fs::write(
                trees.join(id).join("shop/cart.py"),
                "def total(items):\n    return sum(items)\n",
            )
            .unwrap();
        }
        let dataset = dir.join("d.jsonl");
        let rows: Vec<String> = ids
            .iter()
            .map(|id| {
                serde_json::json!({"instance_id": id, "repo": "a/shop",
                    "problem_statement": "cart total is wrong", "gold_files": ["shop/cart.py"]})
                .to_string()
            })
            .collect();
        fs::write(&dataset, rows.join("\n") + "\n").unwrap();
        crate::fault::panic_in("panics-here");
        (dataset, trees)
    }

    #[test]
    fn a_panic_in_one_instance_is_its_failure_in_batch_and_eval() {
        let dir = tempfile::tempdir().unwrap();
        let (dataset, trees) = setup(dir.path(), &["works", "panics-here"]);
        let out = dir.path().join("loc_outputs.jsonl");
        let batch = run_batch(&BatchConfig::new(
            dataset.clone(),
            trees.clone(),
            out.clone(),
        ))
        .expect("the run goes on");
        assert_eq!(batch.written, 1);
        assert_eq!(batch.failures.len(), 1);
        let failure = serde_json::to_value(&batch.failures[0])
            .unwrap()
            .to_string();
        assert!(
            failure.contains("panics-here") && failure.contains("panic"),
            "{failure}"
        );
        assert!(fs::read_to_string(&out).unwrap().contains("\"works\""));

        let eval = run_eval(&EvalConfig::new(dataset, trees)).expect("the run goes on");
        assert_eq!(eval.overall.instances, 1);
        assert_eq!(eval.failures.len(), 1);
        let (id, why) = &eval.failures[0];
        assert_eq!(id, "panics-here");
        assert!(
            why.contains("panic") && why.contains("fault injected"),
            "{why}"
        );
    }

    #[test]
    fn a_panic_in_one_instance_is_its_failure_in_calibrate() {
        use crate::agent::{LlmOptions, LlmRun, Pipeline};
        use crate::eval::{run_calibration, CalibrateConfig};
        use crate::interface::DatasetConfig;

        let dir = tempfile::tempdir().unwrap();
        let (dataset, trees) = setup(dir.path(), &["works", "works-too", "panics-here"]);
        // A model that puts the one file first at every stage.
        let model = std::sync::Arc::new(crate::llm::ScriptedModel::from_fn(|r| {
            match r.stage.as_str() {
                "t0" | "t1" => r#"{"query": "cart total"}"#,
                "phase1" => r#"{"action": "finish", "scores": {"shop/cart.py": 10}}"#,
                _ => r#"{"ranking": [{"path": "shop/cart.py", "reason": "the total"}]}"#,
            }
            .to_owned()
        }));
        let config = CalibrateConfig {
            run: DatasetConfig {
                pipeline: Pipeline::Blagent,
                llm: Some(LlmRun {
                    model,
                    options: LlmOptions::default(),
                    model_name: "scripted".to_owned(),
                    reads: crate::repo::Inputs::default(),
                    recording: None,
                }),
                ..DatasetConfig::new(dataset, trees)
            },
            folds: 2,
            out: dir.path().join("profile.json"),
        };
        let report = run_calibration(&config).expect("the calibration goes on");
        assert_eq!(report.profile.fit.instances, 2);
        let [(id, why)] = &report.failures[..] else {
            panic!("one failure expected: {:?}", report.failures);
        };
        assert_eq!(id, "panics-here");
        assert!(
            why.contains("panic") && why.contains("fault injected"),
            "{why}"
        );
    }
}
