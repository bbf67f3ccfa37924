//! Datasets and the JSONL files every run reads and writes: one instance type for SWE-bench and
//! Long Code Arena rows, unified diffs (a row's reference patch, a run's generated one) and the
//! gold files they touch, and the one JSONL reader and writer that evaluation, batch runs,
//! failure analysis and LLM cassettes share; and the ranking metrics that measure a ranking
//! against an instance's gold items.

mod instance;
mod jsonl;
mod metrics;
pub(crate) mod paired;
pub(crate) mod patch;
mod select;

pub use self::instance::{gold_files_from_patch, load_dataset, Instance};
pub use self::jsonl::{
    read_jsonl, read_jsonl_appended, read_jsonl_or_array, read_records, JsonlWriter, Record,
    MAX_JSONL_BYTES,
};
pub use self::metrics::{
    all_within, any_within, average_precision_at, first_hit_rank, reciprocal_rank,
    GroupedAccumulator, GroupedMetrics, Metrics, MetricsAccumulator, ACC_KS, MAP_KS,
};
pub use self::select::{first_ids, first_of_each_id, instance_tree, select_ids};
