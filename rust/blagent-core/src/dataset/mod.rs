//! Datasets and the JSONL files every run reads and writes: one instance type for SWE-bench and
//! Long Code Arena rows, gold files from a reference patch, and the one JSONL reader and writer
//! that evaluation, batch runs, failure analysis and LLM cassettes share.

mod instance;
mod jsonl;
mod select;

pub use self::instance::{gold_files_from_patch, load_dataset, Instance};
pub use self::jsonl::{
    read_jsonl, read_jsonl_appended, read_records, JsonlWriter, Record, MAX_JSONL_BYTES,
};
pub use self::select::{first_of_each_id, instance_tree, select_ids};
