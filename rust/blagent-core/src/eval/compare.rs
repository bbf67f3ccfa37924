//! Comparing localization runs on the same instances: the metrics side by side, overall and
//! per repository, and the paired significance of each run's difference from the first
//! (`paired`): ΔMRR and ΔAcc@1/5/10 with a bootstrap 95% interval, McNemar's exact test on
//! Acc@1 and Wilcoxon's signed-rank test on the reciprocal ranks.
//!
//! Both Acc@k readings are compared: every gold item within the top k (LocAgent's reading)
//! and some gold item within it (SWE-bench papers'); they agree for a single gold item. A run
//! that has no line for an instance ranks nothing there.
//!
//! At file level the items are files (`found_files` against the gold files). At function level
//! they are `path::Class.method` ids (`found_functions`, as `eval --granularity function --out`
//! writes them) against the gold functions, which need the instances' base trees; instances
//! whose gold patch touches no function are left out.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use super::functions::gold_functions;
use crate::analysis::{load_localizations, result_entity_ids};
use crate::dataset::paired::{bootstrap, mcnemar, wilcoxon, Interval, McNemar, Wilcoxon};
use crate::dataset::{all_within, any_within, reciprocal_rank, Metrics, MetricsAccumulator};
use crate::dataset::{instance_tree, load_dataset, read_records, select_ids, Instance};
use crate::error::{Error, Result};
use crate::interface::Granularity;

/// The k of the compared Acc@k.
pub const COMPARE_KS: [usize; 3] = [1, 5, 10];

/// What to compare.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareConfig {
    /// The dataset with the gold files (JSONL: `instance_id`, `repo`, `gold_files` or `patch`).
    pub dataset: PathBuf,
    /// Runs as JSONL with `instance_id` and `found_files` (`eval --out`, `batch`, Agentless,
    /// LocAgent); the first one is the baseline unless `peers` come first.
    #[serde(default)]
    pub runs: Vec<PathBuf>,
    /// Published rankings `{run name: {instance_id: [files]}}`, read as runs after `runs`.
    #[serde(default)]
    pub peers: Option<PathBuf>,
    /// Only these peer runs (all when empty).
    #[serde(default)]
    pub peer_names: Vec<String>,
    /// Only these instances (all of the dataset with gold files when `None`).
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    /// Bootstrap resamples, 1 to [`MAX_RESAMPLES`].
    #[serde(default = "default_resamples")]
    pub resamples: usize,
    /// The bootstrap generator's seed.
    #[serde(default)]
    pub seed: u64,
    /// Files, or functions (`found_functions` against the gold functions; needs `repos`).
    #[serde(default)]
    pub granularity: Granularity,
    /// The base trees at `repos/<instance_id>`, where the gold functions are found.
    #[serde(default)]
    pub repos: Option<PathBuf>,
}

/// Bootstrap resamples when the config names none.
pub use crate::dataset::paired::DEFAULT_RESAMPLES;

fn default_resamples() -> usize {
    DEFAULT_RESAMPLES
}

/// The most bootstrap resamples a comparison draws: the interval's ends stop moving long before
/// this, and each resample keeps one number per compared series in memory.
pub const MAX_RESAMPLES: usize = 1_000_000;

/// One run's metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMetrics {
    /// The file name or peer name.
    pub name: String,
    /// Compared instances the run has no line for (counted as ranking nothing).
    pub missing: usize,
    /// All compared instances.
    pub overall: Metrics,
    /// Per `owner/name`.
    pub per_repo: BTreeMap<String, Metrics>,
}

/// A run against the baseline on one scope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// The run.
    pub run: String,
    /// `overall` or a repository.
    pub scope: String,
    /// Instances.
    pub instances: usize,
    /// ΔMRR.
    pub mrr: Interval,
    /// ΔAcc@1, @5, @10, every gold item within the top k.
    pub acc: [Interval; 3],
    /// ΔAcc@1, @5, @10, some gold item within the top k.
    pub acc_any: [Interval; 3],
    /// McNemar on Acc@1 (every gold item first: a single gold item).
    pub mcnemar_acc1: McNemar,
    /// McNemar on Acc@1, some gold item first.
    pub mcnemar_acc1_any: McNemar,
    /// Wilcoxon on the reciprocal ranks.
    pub wilcoxon_rr: Wilcoxon,
}

/// The comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareReport {
    /// The baseline's name.
    pub baseline: String,
    /// What was compared: files or functions.
    pub granularity: Granularity,
    /// Compared instances.
    pub instances: usize,
    /// Each run, baseline first.
    pub runs: Vec<RunMetrics>,
    /// Each other run against the baseline, overall then per repository.
    pub differences: Vec<Difference>,
    /// Bootstrap resamples and seed.
    pub resamples: usize,
    /// The seed.
    pub seed: u64,
    /// Inconsistencies in the inputs.
    pub warnings: Vec<String>,
}

/// A run: its name and its ranking per instance id.
type Run = (String, HashMap<String, Vec<String>>);

/// Per-instance outcomes of one run, in instance order: the reciprocal rank, then 1 or 0 for
/// Acc@k at each of [`COMPARE_KS`] in the "every gold item" reading, then in the "some gold
/// item" reading.
type Scores = [Vec<f64>; 7];

fn scores(instances: &[Instance], rankings: &HashMap<String, Vec<String>>) -> Scores {
    let empty = Vec::new();
    let mut out = Scores::default();
    for instance in instances {
        let ranked = rankings.get(&instance.instance_id).unwrap_or(&empty);
        let gold = &instance.gold_files;
        out[0].push(reciprocal_rank(ranked, gold));
        for (i, &k) in COMPARE_KS.iter().enumerate() {
            out[1 + i].push(f64::from(u8::from(all_within(ranked, gold, k))));
            out[4 + i].push(f64::from(u8::from(any_within(ranked, gold, k))));
        }
    }
    out
}

/// The ranked items of each line of a run: `found_files`, or at function level
/// `found_functions` (else the function ids of a blagent result's `entities`).
fn run_rankings(
    path: &std::path::Path,
    granularity: Granularity,
    warnings: &mut Vec<String>,
) -> Result<HashMap<String, Vec<String>>> {
    if granularity == Granularity::File {
        return Ok(load_localizations(path, warnings)?
            .into_iter()
            .map(|(id, l)| (id, l.found_files))
            .collect());
    }
    let mut out = HashMap::new();
    let mut without = Vec::new();
    for (id, map) in read_records(path, warnings)? {
        let functions = match map.get("found_functions") {
            Some(serde_json::Value::Array(items))
                if items.iter().all(serde_json::Value::is_string) =>
            {
                items
                    .iter()
                    .filter_map(serde_json::Value::as_str)
                    .map(str::to_owned)
                    .collect()
            }
            Some(serde_json::Value::Null) | None => {
                result_entity_ids(&map, false).unwrap_or_else(|| {
                    without.push(id.clone());
                    Vec::new()
                })
            }
            Some(_) => {
                return Err(Error::InvalidInput(format!(
                    "{}: {id}: `found_functions` is not a list of `path::Class.method` ids",
                    path.display()
                )))
            }
        };
        out.insert(id, functions);
    }
    // A run of another kind (Agentless's related locations, a file ranking) is not scored as
    // ranking no function.
    if !out.is_empty() && without.len() == out.len() {
        return Err(Error::InvalidInput(format!(
            "{}: no record ranks functions (`found_functions`, as `eval --granularity function \
             --out` writes, or the `entities` of a `batch --granularity function` result); \
             Agentless's locations are judged by `analyze-failures`",
            path.display()
        )));
    }
    if !without.is_empty() {
        without.sort();
        warnings.push(format!(
            "{}: {} record(s) rank no function (no `found_functions` or result `entities`), \
             scored as ranking none: {}",
            path.display(),
            without.len(),
            crate::dataset::first_ids(&without)
        ));
    }
    Ok(out)
}

/// Reads the runs: each JSONL file, then the selected peers.
fn load_runs(config: &CompareConfig, warnings: &mut Vec<String>) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    let base_name = |path: &PathBuf| {
        path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    for path in &config.runs {
        // A run is named by its file name, or by its path where two runs share a file name
        // (`a/run.jsonl`, `b/run.jsonl`).
        let name = base_name(path);
        let shared = config.runs.iter().filter(|p| base_name(p) == name).count() > 1;
        let name = if shared {
            path.display().to_string()
        } else {
            name
        };
        runs.push((name, run_rankings(path, config.granularity, warnings)?));
    }
    if let Some(path) = &config.peers {
        if config.granularity == Granularity::Function {
            return Err(Error::InvalidInput(format!(
                "the peer rankings of {} rank files, not functions: compare them at file level",
                path.display()
            )));
        }
        let text = crate::repo::read::read_user_json(
            path,
            crate::repo::read::MAX_DATA_FILE_BYTES,
            "peer rankings",
        )?;
        let peers: BTreeMap<String, HashMap<String, Vec<String>>> = crate::json::value(&text)
            .and_then(serde_json::from_value)
            .map_err(|e| {
                Error::InvalidInput(format!(
                    "{}: expected {{run name: {{instance_id: [files]}}}}: {e}",
                    path.display()
                ))
            })?;
        for name in &config.peer_names {
            if !peers.contains_key(name) {
                let known: Vec<&str> = peers.keys().map(String::as_str).collect();
                return Err(Error::InvalidInput(format!(
                    "no peer run {name:?} in {} (it has: {})",
                    path.display(),
                    known.join("; ")
                )));
            }
        }
        let files = runs.len();
        for (name, rankings) in peers {
            if config.peer_names.is_empty() || config.peer_names.contains(&name) {
                // A peer named as a run file is (`run.jsonl`) is told apart from it.
                let name = if runs[..files].iter().any(|(taken, _)| *taken == name) {
                    format!("peers:{name}")
                } else {
                    name
                };
                runs.push((name, rankings));
            }
        }
    }
    // Whatever still shares a name (a run file given twice, a peer named `peers:run.jsonl`
    // too) is told apart by its place in the list: `run.jsonl #2`.
    let mut taken = std::collections::HashSet::new();
    for (name, _) in &mut runs {
        if !taken.insert(name.clone()) {
            let mut k = 2;
            let unique = loop {
                let candidate = format!("{name} #{k}");
                if !taken.contains(&candidate) {
                    break candidate;
                }
                k += 1;
            };
            taken.insert(unique.clone());
            *name = unique;
        }
    }
    Ok(runs)
}

/// Compares the runs of `config`. Fails on unreadable inputs, fewer than two runs, or no
/// instance with gold files.
pub fn compare_runs(config: &CompareConfig) -> Result<CompareReport> {
    if !(1..=MAX_RESAMPLES).contains(&config.resamples) {
        return Err(Error::InvalidInput(format!(
            "resamples must be between 1 and {MAX_RESAMPLES}, not {}",
            config.resamples
        )));
    }
    let mut warnings = Vec::new();
    let runs = load_runs(config, &mut warnings)?;
    if runs.len() < 2 {
        return Err(Error::InvalidInput(format!(
            "compare needs at least two runs, got {}",
            runs.len()
        )));
    }
    // Each id's first row, as `eval` reads it (an id the dataset lacks is an input error, as
    // there), then only those with gold files.
    let mut instances = select_ids(
        load_dataset(&config.dataset)?,
        config.ids.as_deref(),
        &config.dataset,
    )?;
    instances.retain(|i| !i.gold_files.is_empty());
    if config.granularity == Granularity::Function {
        with_gold_functions(&mut instances, config.repos.as_deref(), &mut warnings)?;
    }
    if instances.is_empty() {
        return Err(Error::InvalidInput(format!(
            "no selected instance of the dataset has gold {}s",
            config.granularity.name()
        )));
    }
    let mut by_repo: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, instance) in instances.iter().enumerate() {
        by_repo.entry(instance.repo.clone()).or_default().push(i);
    }
    // A run with no line for any instance compared is a run of another dataset (or ids):
    // scoring it 0 would read as a result.
    for (name, rankings) in &runs {
        if !instances
            .iter()
            .any(|i| rankings.contains_key(&i.instance_id))
        {
            return Err(Error::InvalidInput(format!(
                "{name} has no line for any of the {} instances compared: is it a run of \
                 another dataset?",
                instances.len()
            )));
        }
    }
    if config.granularity == Granularity::Function {
        for (name, rankings) in &runs {
            if let Some(warning) = unmatched_function_ids(name, rankings, &instances) {
                warnings.push(warning);
            }
        }
    }
    let all: Vec<usize> = (0..instances.len()).collect();
    let scored: Vec<Scores> = runs.iter().map(|(_, r)| scores(&instances, r)).collect();
    let mut report = CompareReport {
        baseline: runs[0].0.clone(),
        granularity: config.granularity,
        instances: instances.len(),
        runs: Vec::new(),
        differences: Vec::new(),
        resamples: config.resamples,
        seed: config.seed,
        warnings,
    };
    for (name, rankings) in &runs {
        let metrics = |subset: &[usize]| {
            let mut acc = MetricsAccumulator::default();
            let empty = Vec::new();
            for &i in subset {
                let ranked = rankings.get(&instances[i].instance_id).unwrap_or(&empty);
                acc.add(ranked, &instances[i].gold_files);
            }
            acc.finish()
        };
        report.runs.push(RunMetrics {
            name: name.clone(),
            missing: instances
                .iter()
                .filter(|i| !rankings.contains_key(&i.instance_id))
                .count(),
            overall: metrics(&all),
            per_repo: by_repo
                .iter()
                .map(|(repo, subset)| (repo.clone(), metrics(subset)))
                .collect(),
        });
    }
    let scopes = std::iter::once(("overall".to_owned(), all.clone()))
        .chain(by_repo.iter().map(|(r, s)| (r.clone(), s.clone())));
    let scopes: Vec<(String, Vec<usize>)> = scopes.collect();
    for (run, score) in runs.iter().zip(&scored).skip(1) {
        for (scope, subset) in &scopes {
            report.differences.push(difference(
                &run.0, scope, subset, &scored[0], score, config,
            )?);
        }
    }
    Ok(report)
}

/// A warning for a run at function level whose ids match no gold function of the compared
/// instances and none of which is written `path::Class.method` (`path:Class.method`, say):
/// every id is compared as written, and such a run would score 0 without a word.
fn unmatched_function_ids(
    name: &str,
    rankings: &HashMap<String, Vec<String>>,
    instances: &[Instance],
) -> Option<String> {
    let ranked = || {
        instances
            .iter()
            .filter_map(|i| rankings.get(&i.instance_id).map(|r| (i, r)))
    };
    let mut ids = ranked().flat_map(|(_, r)| r.iter());
    let example = ids.next()?;
    if std::iter::once(example)
        .chain(ids)
        .any(|id| id.contains("::"))
        || ranked().any(|(i, r)| r.iter().any(|id| i.gold_files.contains(id)))
    {
        return None;
    }
    Some(format!(
        "{name}: none of its function ids matches a gold function, and none is written \
         `path::Class.method` as they are compared (its first: {:?}): it scores 0",
        example.chars().take(200).collect::<String>()
    ))
}

/// Replaces each instance's gold files by its gold functions, found in its base tree under
/// `repos`; instances without a tree or without gold functions are left out (a warning counts
/// them).
fn with_gold_functions(
    instances: &mut Vec<Instance>,
    repos: Option<&std::path::Path>,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let repos = repos.ok_or_else(|| {
        Error::InvalidInput(
            "comparing functions needs the base trees (`repos`): the gold functions are \
             the base commit's functions that the gold patch touches"
                .into(),
        )
    })?;
    crate::repo::read::user_folder(repos, "the trees folder")?;
    let (mut no_tree, mut no_gold, mut unknown) = (0usize, 0usize, 0usize);
    let mut kept = Vec::with_capacity(instances.len());
    for mut instance in instances.drain(..) {
        // An id that names no folder of its own (`..`, a path) is left out, as `eval` fails
        // only that instance.
        let tree = match instance_tree(repos, &instance.instance_id) {
            Ok(tree) if tree.is_dir() => tree,
            Ok(_) => {
                no_tree += 1;
                continue;
            }
            Err(err) => {
                warnings.push(format!("{err}: left out"));
                continue;
            }
        };
        match gold_functions(&instance.patch, &tree) {
            None => unknown += 1,
            Some(gold) if gold.is_empty() => no_gold += 1,
            Some(gold) => {
                instance.gold_files = gold;
                kept.push(instance);
            }
        }
    }
    if no_tree > 0 {
        warnings.push(format!(
            "{no_tree} instance(s) left out: no tree under {}",
            repos.display()
        ));
    }
    if unknown > 0 {
        warnings.push(format!(
            "{unknown} instance(s) left out: the gold patch does not parse, or a patched file \
             took longer to parse than its time budget, so its functions are not known"
        ));
    }
    if no_gold > 0 {
        warnings.push(format!(
            "{no_gold} instance(s) left out: the gold patch touches no function or method"
        ));
    }
    *instances = kept;
    Ok(())
}

fn difference(
    run: &str,
    scope: &str,
    subset: &[usize],
    base: &Scores,
    other: &Scores,
    config: &CompareConfig,
) -> Result<Difference> {
    let pick = |v: &[f64]| subset.iter().map(|&i| v[i]).collect::<Vec<f64>>();
    // (baseline, run) per series: reciprocal ranks, then Acc@1, @5, @10 in both readings.
    let pairs: Vec<(Vec<f64>, Vec<f64>)> = base
        .iter()
        .zip(other)
        .map(|(b, o)| (pick(b), pick(o)))
        .collect();
    let mut rng = StdRng::seed_from_u64(config.seed);
    let intervals = bootstrap(&pairs, config.resamples, &mut rng)?;
    Ok(Difference {
        run: run.to_owned(),
        scope: scope.to_owned(),
        instances: subset.len(),
        mrr: intervals[0],
        acc: [intervals[1], intervals[2], intervals[3]],
        acc_any: [intervals[4], intervals[5], intervals[6]],
        mcnemar_acc1: mcnemar(&pairs[1].0, &pairs[1].1),
        mcnemar_acc1_any: mcnemar(&pairs[4].0, &pairs[4].1),
        wilcoxon_rr: wilcoxon(&pairs[0].0, &pairs[0].1),
    })
}
