//! The analysis loop: read the inputs, classify every instance the report lists (every
//! instance with a generated patch, without a report), summarize,
//! and write the per-instance JSON, `summary.md`, `chart.svg` and `chart.png`.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::chart::{is_chart_png, is_chart_svg, render_chart};
use super::inputs::{load_gold, load_localizations, load_predictions, load_report, Outcome};
use super::report::Summary;
use super::stage::{classify, Criteria, FunctionRule, InstanceAnalysis};
use crate::error::{Error, Result};
use crate::repo::read::{read_bounded, MAX_DATA_FILE_BYTES};
use crate::repo::{json_object_with, open_outputs, Inputs, OutputMode};

/// What to analyse.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnalysisConfig {
    /// Dataset JSONL: `instance_id`, `patch` (gold), `repo`.
    pub dataset: PathBuf,
    /// Localization outputs JSONL: `instance_id`, `found_files`, optional function entries.
    pub locs: PathBuf,
    /// Generated patches: SWE-bench predictions JSONL (`instance_id`, `model_patch`).
    pub predictions: PathBuf,
    /// Evaluation report JSON (see [`super::load_report`] for the accepted shapes). Without
    /// one, every dataset instance with a generated patch is analysed for the localization
    /// stages only (file, function, line).
    #[serde(default)]
    pub report: Option<PathBuf>,
    /// Directory of base trees, `<repos>/<instance_id>`; without it no function stage.
    #[serde(default)]
    pub repos: Option<PathBuf>,
    /// How many localized files the file stage looks at.
    #[serde(default = "default_top_k")]
    pub top_k: usize,
    /// How many function-level localization entries the function stage reads.
    #[serde(default = "default_top_k")]
    pub function_top_k: usize,
    /// Whether the function stage asks for any gold function (the study's rule) or all.
    #[serde(default)]
    pub function_rule: FunctionRule,
    /// Where to write the per-instance evidence, the summaries and the chart
    /// ([`write_outputs`]); nothing is written when `None`.
    #[serde(default)]
    pub out_dir: Option<PathBuf>,
}

/// Localized files the file stage looks at by default (Agentless repairs its top 3).
pub const DEFAULT_ANALYSIS_TOP_K: usize = 3;

fn default_top_k() -> usize {
    DEFAULT_ANALYSIS_TOP_K
}

/// The analysis of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AnalysisReport {
    /// Counts per stage.
    pub summary: Summary,
    /// One analysis per instance, in report order (sorted by id).
    pub instances: Vec<InstanceAnalysis>,
    /// Inconsistencies between the inputs (unknown ids, duplicates, missing records).
    pub warnings: Vec<String>,
    /// The files written to the configuration's `out_dir` (summary, JSON summary, chart).
    #[serde(default)]
    pub outputs: Vec<PathBuf>,
}

/// Runs the analysis. Fails on unreadable or malformed inputs, a zero `top_k`, or a report
/// that shares no instance with the dataset; everything else becomes a warning or a note.
pub fn analyze_failures(config: &AnalysisConfig) -> Result<AnalysisReport> {
    if config.top_k == 0 || config.function_top_k == 0 {
        return Err(Error::InvalidInput("top-k must be at least 1".into()));
    }
    let criteria = Criteria {
        top_k: config.top_k,
        function_top_k: config.function_top_k,
        function_rule: config.function_rule,
    };
    if let Some(repos) = config.repos.as_deref().filter(|r| !r.is_dir()) {
        return Err(Error::RepoNotFound(repos.to_path_buf()));
    }
    let mut warnings = Vec::new();
    let gold = load_gold(&config.dataset, &mut warnings)?;
    let locs = load_localizations(&config.locs, &mut warnings)?;
    let predictions = load_predictions(&config.predictions, &mut warnings)?;
    let outcomes = match &config.report {
        Some(report) => load_report(report, &mut warnings)?,
        None => predictions
            .keys()
            .map(|id| (id.clone(), Outcome::NotEvaluated))
            .collect(),
    };

    let known: HashSet<&str> = gold.iter().map(|g| g.instance_id.as_str()).collect();
    let unknown =
        |what: &str, ids: &mut dyn Iterator<Item = &String>, warnings: &mut Vec<String>| {
            let mut ids: Vec<&String> = ids.filter(|id| !known.contains(id.as_str())).collect();
            ids.sort();
            for id in ids {
                warnings.push(format!(
                    "{what} for unknown instance {id} (not in the dataset); ignored"
                ));
            }
        };
    if config.report.is_some() {
        unknown("evaluation outcome", &mut outcomes.keys(), &mut warnings);
    }
    unknown("prediction", &mut predictions.keys(), &mut warnings);
    unknown("localization", &mut locs.keys(), &mut warnings);
    let mut not_evaluated: Vec<&String> = predictions
        .keys()
        .filter(|id| known.contains(id.as_str()) && !outcomes.contains_key(*id))
        .collect();
    not_evaluated.sort();
    for id in not_evaluated {
        warnings.push(format!(
            "prediction for {id} has no outcome in the report; skipped"
        ));
    }

    let by_id: HashMap<&str, _> = gold.iter().map(|g| (g.instance_id.as_str(), g)).collect();
    let selected: Vec<_> = outcomes
        .iter()
        .filter_map(|(id, &o)| by_id.get(id.as_str()).map(|g| (*g, o)))
        .collect();
    if let Some(repos) = &config.repos {
        for (g, _) in &selected {
            if let Err(err) = crate::dataset::instance_tree(repos, &g.instance_id) {
                warnings.push(format!("{err}: its tree is not read"));
            }
        }
    }
    if selected.is_empty() {
        let source = match &config.report {
            Some(report) => format!("the report {}", report.display()),
            None => format!("the predictions {}", config.predictions.display()),
        };
        return Err(Error::InvalidInput(format!(
            "no instance of {source} is in the dataset {}",
            config.dataset.display()
        )));
    }
    // A stop is heard between instances and before anything is written: an interrupted run
    // leaves the last analysis in `--out-dir` as it was.
    let instances: Vec<InstanceAnalysis> = selected
        .par_iter()
        .map(|&(g, outcome)| {
            crate::cancel::check()?;
            let tree = config
                .repos
                .as_deref()
                .and_then(|r| crate::dataset::instance_tree(r, &g.instance_id).ok())
                .filter(|t| t.is_dir());
            let patch = predictions.get(&g.instance_id).map(String::as_str);
            Ok(classify(
                g,
                locs.get(&g.instance_id),
                patch,
                outcome,
                tree.as_deref(),
                &criteria,
            ))
        })
        .collect::<Result<_>>()?;
    crate::cancel::check()?;
    let mut report = AnalysisReport {
        summary: Summary::new(&instances, &criteria, config.report.is_some()),
        instances,
        warnings,
        outputs: Vec::new(),
    };
    if let Some(dir) = &config.out_dir {
        // Each tree read, too: a tree may be a link to a checkout elsewhere.
        let trees = config.repos.as_deref().map_or_else(Vec::new, |repos| {
            selected
                .iter()
                .filter_map(|(g, _)| crate::dataset::instance_tree(repos, &g.instance_id).ok())
                .collect()
        });
        let inputs = Inputs::new()
            .file(Some(&config.dataset))
            .file(Some(&config.locs))
            .file(Some(&config.predictions))
            .file(config.report.as_ref())
            .folder(config.repos.as_ref())
            .folders(trees);
        let (outputs, no_chart) = write_outputs(&report, dir, &inputs)?;
        report.outputs = outputs;
        if let Some(why) = no_chart {
            report.warnings.push(format!("no chart written: {why}"));
        }
    }
    Ok(report)
}

/// The longest id kept whole in a file name: file systems take names of 255 bytes.
const MAX_NAME_ID: usize = 200;

/// A file name for an instance id: characters other than letters, digits, `-`, `_` and `.`
/// become `_`, as do the dots an id begins with (no hidden file: `..` is `__.json`), and an
/// empty id is `_`; an id longer than [`MAX_NAME_ID`] is cut there and told by its hash. Two
/// ids that read alike then (`acme/shop`, `acme_shop`) are told apart by [`file_names`].
fn file_name(instance_id: &str) -> String {
    let mut leading = true;
    let safe: String = instance_id
        .chars()
        .map(|c| {
            leading &= c == '.';
            if !leading && (c.is_ascii_alphanumeric() || "-_.".contains(c)) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let safe = if safe.is_empty() {
        "_".to_owned()
    } else {
        safe
    };
    if safe.len() > MAX_NAME_ID {
        return format!("{}-{}.json", &safe[..MAX_NAME_ID], id_hash(instance_id));
    }
    format!("{safe}.json")
}

/// The first 8 hex digits of `instance_id`'s hash.
fn id_hash(instance_id: &str) -> String {
    blake3::hash(instance_id.as_bytes()).to_hex()[..8].to_owned()
}

/// Each instance's file name ([`file_name`]). An id that is a file name as it is (`acme_shop`)
/// keeps it; an id [`file_name`] rewrote (`acme/shop`) gets that name only if no id holds it,
/// else the first 8 hex digits of its id's hash (`acme_shop-1a2b3c4d.json`), and one taken even
/// so (an id written to look like another's hashed name) the whole hash, so no instance's file
/// replaces another's and none holds another instance under that one's own name.
fn file_names<'a>(ids: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let ids: Vec<&str> = ids.into_iter().collect();
    let as_is = |id: &str| file_name(id) == format!("{id}.json");
    let mut taken: HashSet<String> = ids
        .iter()
        .filter(|id| as_is(id))
        .map(|id| file_name(id))
        .collect();
    ids.into_iter()
        .map(|id| {
            let [name, short, full] = instance_file_names(id);
            if as_is(id) {
                return name;
            }
            [name, short]
                .into_iter()
                .find(|name| taken.insert(name.clone()))
                .unwrap_or_else(|| {
                    taken.insert(full.clone());
                    full
                })
        })
        .collect()
}

/// The names an instance's file may have, in the order [`file_names`] tries them.
fn instance_file_names(id: &str) -> [String; 3] {
    let name = file_name(id);
    let stem = name.trim_end_matches(".json").to_owned();
    let full = blake3::hash(id.as_bytes()).to_hex().to_string();
    [
        name,
        format!("{stem}-{}.json", id_hash(id)),
        format!("{stem}-{full}.json"),
    ]
}

/// An output file of the analysis, and what an existing file there must hold to be replaced:
/// what blagent writes there.
fn output_mode(is_ours: fn(&[u8]) -> bool) -> OutputMode {
    OutputMode {
        append: false,
        holds: "what blagent analyze-failures writes there (a chart from before charts were \
                marked as blagent's is not recognised: remove it)",
        is_ours,
    }
}

/// `summary.json`: the summary and the warnings.
fn is_summary_json(bytes: &[u8]) -> bool {
    json_object_with(bytes, &["summary", "warnings"])
}

/// `summary.md`: the report's Markdown, under its heading.
fn is_summary_markdown(bytes: &[u8]) -> bool {
    bytes.starts_with(MARKDOWN_HEADING.as_bytes())
}

/// The first line of `summary.md`.
const MARKDOWN_HEADING: &str = "# Failure-stage analysis\n";

/// `instances/<id>.json`: one instance's analysis.
fn is_instance_json(bytes: &[u8]) -> bool {
    json_object_with(bytes, &["instance_id", "outcome", "stage"])
}

/// Writes `out_dir/instances/<instance_id>.json` (one per instance), `out_dir/summary.md`,
/// `out_dir/summary.json` (summary and warnings) and the chart as `out_dir/chart.svg` and
/// `out_dir/chart.png`; returns the paths of the summaries and the chart, and why the chart
/// is missing when no font for its text was found. No file written may be one of `inputs` or
/// lie inside their folders, and a file already there is replaced only when blagent wrote it.
/// Every file is checked before any is written, so a refusal leaves the folder as it was.
pub fn write_outputs(
    report: &AnalysisReport,
    out_dir: &Path,
    inputs: &Inputs,
) -> Result<(Vec<PathBuf>, Option<String>)> {
    let summary = serde_json::json!({"summary": report.summary, "warnings": report.warnings});
    let markdown = report.summary.to_markdown();
    debug_assert!(is_summary_markdown(markdown.as_bytes()));
    let mut files: Vec<(PathBuf, Vec<u8>, OutputMode)> = vec![
        (
            out_dir.join("summary.md"),
            markdown.into_bytes(),
            output_mode(is_summary_markdown),
        ),
        (
            out_dir.join("summary.json"),
            serde_json::to_vec_pretty(&summary)?,
            output_mode(is_summary_json),
        ),
    ];
    let chart = render_chart(&report.summary)?;
    if let Ok(chart) = &chart {
        files.push((
            out_dir.join("chart.svg"),
            chart.svg.clone().into_bytes(),
            output_mode(is_chart_svg),
        ));
        files.push((
            out_dir.join("chart.png"),
            chart.png.clone(),
            output_mode(is_chart_png),
        ));
    }
    let shown = files.len();
    let instances_dir = out_dir.join("instances");
    let names = file_names(report.instances.iter().map(|i| i.instance_id.as_str()));
    for (instance, name) in report.instances.iter().zip(names) {
        files.push((
            instances_dir.join(name),
            serde_json::to_vec_pretty(instance)?,
            output_mode(is_instance_json),
        ));
    }
    let outputs: Vec<(&Path, OutputMode, &str)> = files
        .iter()
        .map(|(path, _, mode)| (path.as_path(), *mode, "analysis output"))
        .collect();
    // A stop asked for while the chart was drawn (a second) or the files written is heard
    // before any file replaces the last run's: the caller reports the run interrupted, and the
    // folder must then hold the last analysis as it was.
    crate::cancel::check()?;
    // Folders are made once every check has passed (see `open_outputs`).
    let mut opened = open_outputs(&outputs, inputs)?;
    for ((path, bytes, _), file) in files.iter().zip(&mut opened) {
        file.write_all(bytes).map_err(|e| Error::io(path, e))?;
    }
    crate::cancel::check()?;
    // Every file is written before any replaces the last run's: a run that fails on the way
    // (a full disk) leaves the last analysis whole.
    for file in opened {
        file.commit()?;
    }
    let kept: HashSet<&Path> = files.iter().map(|f| f.0.as_path()).collect();
    remove_stale(out_dir, &kept);
    let written = files.into_iter().take(shown).map(|f| f.0).collect();
    Ok((written, chart.err()))
}

/// Removes what an earlier analysis wrote into `out_dir` and this one did not (`kept`): the
/// files of instances it no longer has, a chart it could not draw this time. Only regular
/// files holding what blagent writes there, under the name it gives them, are removed, and
/// an `instances` folder that is a link is not looked into: the folder never mixes two runs,
/// and a file someone else put there (a copy under another name) or another analysis's stays.
fn remove_stale(out_dir: &Path, kept: &HashSet<&Path>) {
    let stale_and_ours = |path: &Path, ours: &dyn Fn(&[u8]) -> bool| {
        let regular = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file());
        regular
            && !kept.contains(path)
            && read_bounded(path, MAX_DATA_FILE_BYTES).is_ok_and(|bytes| ours(&bytes))
    };
    let charts = [
        (out_dir.join("chart.svg"), is_chart_svg as fn(&[u8]) -> bool),
        (out_dir.join("chart.png"), is_chart_png),
    ];
    for (chart, is_chart) in charts {
        if stale_and_ours(&chart, &is_chart) {
            let _ = std::fs::remove_file(&chart);
        }
    }
    let folder = out_dir.join("instances");
    if !std::fs::symlink_metadata(&folder).is_ok_and(|m| m.is_dir()) {
        return;
    }
    for path in std::fs::read_dir(&folder)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
    {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        // An instance's file, under the name [`file_names`] gives it.
        let own_file = |bytes: &[u8]| {
            is_instance_json(bytes)
                && serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|value| {
                    value["instance_id"]
                        .as_str()
                        .is_some_and(|id| instance_file_names(id).iter().any(|own| own == name))
                })
        };
        let json = path.extension().is_some_and(|e| e == "json");
        if json && stale_and_ours(&path, &own_file) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_safe() {
        assert_eq!(
            file_name("django__django-11099"),
            "django__django-11099.json"
        );
        assert_eq!(file_name("../x y"), "___x_y.json");
        let long = "a".repeat(300);
        let name = file_name(&long);
        assert!(
            name.len() < 255 && name.starts_with(&long[..MAX_NAME_ID]),
            "{name}"
        );
        assert_ne!(name, file_name(&"a".repeat(301)), "told apart by the hash");
    }

    #[test]
    fn ids_that_read_alike_get_files_of_their_own() {
        // The id that is a file name as it is keeps it, in either order (a review found
        // `instances/x_y.json` holding `x/y`'s analysis).
        let names = file_names(["acme/shop", "acme_shop", "acme/shop2"]);
        assert!(names[0].starts_with("acme_shop-") && names[0].len() == "acme_shop-".len() + 13);
        assert_eq!(names[1], "acme_shop.json");
        assert_eq!(names[2], "acme_shop2.json");
        assert_eq!(
            file_names(["acme_shop", "acme/shop"]),
            [names[1].clone(), names[0].clone()]
        );
        let names = file_names(["a/b", "a?b"]);
        assert_eq!(names[0], "a_b.json");
        assert!(names[1].starts_with("a_b-"));
    }

    /// Found by a review: the ids `""`, `..` and `../evil` were written as the hidden files
    /// `.json`, `...json` and `.._evil.json`. An id's leading dots are rewritten, and an empty
    /// id named `_`, like any rewritten id: told apart by its hash from an id of that name.
    #[test]
    fn no_instance_file_is_hidden() {
        assert_eq!(
            file_names(["", "..", "../evil", ".hidden", "a.b.", "x"]),
            [
                "_.json",
                "__.json",
                "___evil.json",
                "_hidden.json",
                "a.b..json",
                "x.json"
            ]
        );
        let names = file_names(["..", "__", "", "_"]);
        assert_eq!(names[1], "__.json");
        assert_eq!(names[3], "_.json");
        assert!(names[0].starts_with("__-") && names[0].len() == "__-".len() + 13);
        assert!(names[2].starts_with("_-") && names[2].len() == "_-".len() + 13);
    }
}
