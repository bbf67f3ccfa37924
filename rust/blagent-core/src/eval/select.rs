//! The instances of an evaluation or a calibration, and the progress bar over them.

use std::path::PathBuf;

use crate::dataset::{instance_tree, load_dataset, select_ids, Instance};
use crate::error::Result;

/// The instances of a run: those selected whose tree exists, with it.
pub(super) struct Selection {
    /// Each instance with its tree.
    pub present: Vec<(Instance, PathBuf)>,
    /// Selected instances whose tree was not found.
    pub missing: Vec<String>,
    /// Instances whose id cannot name a tree, with the reason.
    pub refused: Vec<(String, String)>,
}

/// The instances of `dataset` (only `ids` when given, each id once; an unknown id is an input
/// error) and their trees under `repos`.
pub(super) fn select(
    dataset: &std::path::Path,
    repos: &std::path::Path,
    ids: Option<&[String]>,
) -> Result<Selection> {
    let instances = select_ids(load_dataset(dataset)?, ids, dataset)?;
    let mut selection = Selection {
        present: Vec::new(),
        missing: Vec::new(),
        refused: Vec::new(),
    };
    for instance in instances {
        match instance_tree(repos, &instance.instance_id) {
            Ok(tree) if tree.is_dir() => selection.present.push((instance, tree)),
            Ok(_) => selection.missing.push(instance.instance_id),
            Err(err) => selection
                .refused
                .push((instance.instance_id, err.to_string())),
        }
    }
    Ok(selection)
}
