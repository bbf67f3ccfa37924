//! Measuring localization on SWE-bench-style datasets: the ranking metrics the papers report
//! and the loop that runs every instance.

mod llm;
mod metrics;
mod run;

pub use self::llm::{LlmInstanceStats, LlmMeans, LlmTotals};
pub use self::metrics::{
    average_precision_at, first_hit_rank, Metrics, MetricsAccumulator, ACC_KS, MAP_KS,
};
pub use self::run::{
    gold_files_from_patch, load_dataset, run_eval, EvalConfig, EvalReport, Instance, Prediction,
};
