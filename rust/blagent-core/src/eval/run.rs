//! The evaluation loop: every dataset instance whose repository tree exists is localized, its
//! prediction written as a JSONL line, and its ranking scored against the gold files. The
//! per-instance work is [`EvalWorker`]'s, the adding up [`EvalSink`]'s (see `worker` and
//! `sink`), so a distributed run (`blagent eval --ray`) shares both.

use std::time::Instant;

use super::config::EvalConfig;
use super::report::EvalReport;
use super::sink::EvalSink;
use super::worker::EvalWorker;
use crate::error::Result;

/// Runs the localizer over the dataset and scores it: an [`EvalWorker`] evaluates each
/// instance in turn and an [`EvalSink`] adds them up.
pub fn run_eval(config: &EvalConfig) -> Result<EvalReport> {
    let start = Instant::now();
    let worker = EvalWorker::new(config)?;
    let mut sink = EvalSink::open(config)?;
    let todo = sink.todo().to_vec();
    for item in &todo {
        crate::cancel::check()?;
        sink.started(&item.instance.instance_id);
        let outcome = worker.evaluate(item)?;
        sink.record(outcome)?;
    }
    let mut report = sink.finish()?;
    report.seconds = start.elapsed().as_secs_f64();
    Ok(report)
}

/// A panic in one instance (injected with [`crate::fault`]) is that instance's failure.
#[cfg(test)]
mod fault_tests {
    use std::fs;
    use std::path::Path;

    use super::{run_eval, EvalConfig};
    use crate::interface::{run_batch, BatchConfig};

    /// Two instances with trees; indexing `panics-here` panics.
    fn setup(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
        let trees = dir.join("trees");
        for id in ["works", "panics-here"] {
            fs::create_dir_all(trees.join(id).join("shop")).unwrap();
            fs::write(
                trees.join(id).join("shop/cart.py"),
                "def total(items):\n    return sum(items)\n",
            )
            .unwrap();
        }
        let dataset = dir.join("d.jsonl");
        let rows: Vec<String> = ["works", "panics-here"]
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
        let (dataset, trees) = setup(dir.path());
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
}
