//! Measuring localization on SWE-bench-style datasets: the ranking metrics the papers report
//! and the loop that runs every instance.

mod calibrate;
mod compare;
mod functions;
mod llm;

mod rewrites;
mod run;
mod select;
mod signals;
mod sink;
mod types;
mod worker;

pub use self::calibrate::{run_calibration, CalibrateConfig, CalibrationReport, DEFAULT_FOLDS};
pub use self::compare::{
    compare_runs, CompareConfig, CompareReport, Difference, RunMetrics, COMPARE_KS,
    DEFAULT_RESAMPLES, MAX_RESAMPLES,
};
pub use self::functions::{gold_functions, ranked_functions, FunctionAccumulator, FunctionReport};
pub use self::llm::{LlmInstanceStats, LlmMeans, LlmTotals};
pub use self::rewrites::{load_rewrites, RewriteReport, RewriteSample, POOL_CAP, POOL_PER_QUERY};
pub use self::run::{job_sink, job_worker, run_eval, EvalJob, JOB_KINDS};
pub use self::sink::EvalSink;
pub use self::types::{
    DenseTotals, EvalConfig, EvalItem, EvalOutcome, EvalReport, Evaluated, Prediction,
};
pub use self::worker::EvalWorker;
pub use crate::dataset::paired::{Interval, McNemar, Wilcoxon};
pub use crate::dataset::{
    all_within, any_within, average_precision_at, first_hit_rank, reciprocal_rank, Metrics,
    MetricsAccumulator, ACC_KS, MAP_KS,
};
