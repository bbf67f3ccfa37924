//! The signal dump of `blagent eval --signals-out`: every candidate file's raw signal scores,
//! for tuning the fusion weights offline.

use std::collections::HashSet;

use crate::dataset::Instance;
use crate::index::RepoIndex;
use crate::retrieve::{entity_id, Candidate, Feature, FileSignals, Signal};

/// Files per signal kept in a signal dump (the union over signals is dumped).
const DUMP_TOP_PER_SIGNAL: usize = 50;

/// Raw scores of the files that any signal ranks in its top [`DUMP_TOP_PER_SIGNAL`], plus the
/// gold files, for offline tuning of the fusion weights.
pub(super) fn signal_dump(
    index: &RepoIndex,
    signals: &[FileSignals],
    instance: &Instance,
) -> serde_json::Value {
    let mut keep: HashSet<usize> = HashSet::new();
    // The unimplemented share scales a file's score down; it ranks no file up.
    for signal in Signal::ALL
        .into_iter()
        .filter(|&s| s != Signal::Unimplemented)
    {
        let mut order: Vec<(usize, f32)> = signals
            .iter()
            .enumerate()
            .map(|(i, s)| (i, s.get(signal)))
            .filter(|&(_, v)| v > 0.0)
            .collect();
        order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        keep.extend(order.iter().take(DUMP_TOP_PER_SIGNAL).map(|&(i, _)| i));
    }
    for (i, file) in index.files.iter().enumerate() {
        if instance.gold_files.iter().any(|g| g == file.path()) {
            keep.insert(i);
        }
    }
    let mut keep: Vec<usize> = keep.into_iter().collect();
    keep.sort_unstable();
    let max: Vec<f32> = Signal::ALL
        .iter()
        .map(|&s| signals.iter().map(|f| f.get(s)).fold(0.0, f32::max))
        .collect();
    let min: Vec<f32> = Signal::ALL
        .iter()
        .map(|&s| {
            let lowest = signals
                .iter()
                .map(|f| f.get(s))
                .filter(|&v| v > 0.0)
                .fold(f32::INFINITY, f32::min);
            if lowest.is_finite() {
                lowest
            } else {
                0.0
            }
        })
        .collect();
    let files: Vec<serde_json::Value> = keep
        .iter()
        .map(|&i| serde_json::json!({"path": index.files[i].path(), "scores": signals[i].scores, "lines": index.files[i].text.lines().count()}))
        .collect();
    serde_json::json!({
        "instance_id": instance.instance_id,
        "repo": instance.repo,
        "gold": instance.gold_files,
        "indexed_files": index.files.len(),
        "max": max,
        "min": min,
        "files": files,
    })
}

/// The function-level part of a signal dump: every candidate function's features (named by
/// `feature_names`), with its `path::Class.method` id and its file's rank, and the gold
/// functions, for fitting the function weights offline (`bench/fit_function_weights.py`).
pub(super) fn function_dump(
    index: &RepoIndex,
    candidates: &[Candidate],
    gold: &[String],
) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = candidates
        .iter()
        .map(|c| {
            let file = &index.files[c.file];
            let id = entity_id(file.path(), &file.parsed.symbols[c.symbol].qualified);
            serde_json::json!({"id": id, "file_rank": c.file_rank, "features": c.features})
        })
        .collect();
    let names: Vec<&str> = Feature::ALL.iter().map(|f| f.name()).collect();
    serde_json::json!({"feature_names": names, "candidates": rows, "gold": gold})
}
