//! Classifying one instance: the first stage (file, function, line, patch generation) that
//! failed, with the evidence for each stage.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::functions::{FunctionRef, LocEntry};
use super::inputs::{Localization, Outcome};
use super::lines::{match_first_lines, LineMatch, LineVerdict};
use super::patch::parse_patch;
use super::view::PatchView;
use crate::dataset::Instance;

/// Where an instance ended up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// A gold file is not in the top-k localized files.
    File,
    /// A gold function is neither localized nor edited by the generated patch.
    Function,
    /// The first changed code lines do not match (see [`LineVerdict`]).
    Line,
    /// Everything was localized; the patch is still wrong (or does not parse).
    PatchGeneration,
    /// Without an evaluation report: file, function and first line all localized (whether
    /// the patch resolves the issue is not known).
    Localized,
    /// Not enough evidence to tell (no tree and the first lines differ, or a gold patch that
    /// does not parse).
    Unclassified,
    /// No patch was generated (counted apart).
    EmptyPatch,
    /// The patch resolved the issue.
    Resolved,
}

impl Stage {
    /// The failure stages in pipeline order, then the rest, as the summary lists them.
    pub const ALL: [Stage; 8] = [
        Stage::File,
        Stage::Function,
        Stage::Line,
        Stage::PatchGeneration,
        Stage::Localized,
        Stage::Unclassified,
        Stage::EmptyPatch,
        Stage::Resolved,
    ];

    /// A human label.
    pub fn label(self) -> &'static str {
        match self {
            Stage::File => "file",
            Stage::Function => "function",
            Stage::Line => "line",
            Stage::PatchGeneration => "patch generation",
            Stage::Localized => "localized (not evaluated)",
            Stage::Unclassified => "unclassified",
            Stage::EmptyPatch => "empty patch",
            Stage::Resolved => "resolved",
        }
    }
}

/// File-level evidence.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileEvidence {
    /// Files the gold patch changes.
    pub gold: Vec<String>,
    /// The top-k localized files.
    pub localized: Vec<String>,
    /// Gold files missing from them.
    pub missing: Vec<String>,
    /// Whether every gold file is localized.
    pub passed: bool,
}

/// How many gold functions the function stage asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FunctionRule {
    /// The study's criterion: some gold function is found.
    #[default]
    Any,
    /// The stricter reading: every gold function is found.
    All,
}

/// What the stages look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Criteria {
    /// Localized files the file stage reads (Agentless repairs its top 3).
    pub top_k: usize,
    /// Function-level localization entries the function stage reads, in their order: each
    /// entry, a named function or a line range (`path:10-20`, Agentless's `line: N`), is one.
    pub function_top_k: usize,
    /// Any or all gold functions.
    pub function_rule: FunctionRule,
}

impl Criteria {
    /// The function stage's rule in words, for summaries.
    pub fn describe_function_rule(&self) -> String {
        let which = match self.function_rule {
            FunctionRule::Any => "some gold function",
            FunctionRule::All => "every gold function",
        };
        format!(
            "{which} (a function or method of the base commit whose lines a gold hunk touches) is among the functions the first {} function-level localization entries name or overlap (each named function or line range is one entry), or, for an instance without function-level localization, edited by the generated patch",
            self.function_top_k
        )
    }
}

/// What the function stage compared the gold functions with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FunctionSource {
    /// The localization output's function-level entries.
    Localization,
    /// The functions the generated patch edits (no function-level localization given).
    #[default]
    GeneratedPatch,
}

/// Function-level evidence, as `path::Class.method` ids.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionEvidence {
    /// Functions and methods of the base commit whose lines the gold patch's code lines touch.
    pub gold: Vec<String>,
    /// Functions, methods or classes the gold patch adds: facts, not required.
    pub gold_added: Vec<String>,
    /// Base classes whose body outside methods the gold patch changes: facts, not required.
    pub gold_class_edits: Vec<String>,
    /// What the gold functions were compared with.
    pub source: FunctionSource,
    /// Gold functions among the top localized functions.
    pub localized: Vec<String>,
    /// Base functions the generated patch's code lines touch.
    pub edited: Vec<String>,
    /// Gold functions not found in `source`.
    pub missing: Vec<String>,
    /// `None` when it could not be checked (no base tree).
    pub passed: Option<bool>,
}

/// The analysis of one instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceAnalysis {
    /// Instance id.
    pub instance_id: String,
    /// `owner/name`.
    pub repo: String,
    /// What the evaluation report says.
    pub outcome: Outcome,
    /// The first failed stage (or resolved / empty patch).
    pub stage: Stage,
    /// Whether the base tree was found at `<repos>/<instance_id>`.
    pub tree_found: bool,
    /// Whether the generated patch is empty (or missing).
    #[serde(default)]
    pub patch_empty: bool,
    /// File-level evidence.
    pub file: FileEvidence,
    /// Function-level evidence.
    pub function: FunctionEvidence,
    /// Line-level evidence.
    pub line: LineMatch,
    /// What could not be checked, and why.
    pub notes: Vec<String>,
}

/// Analyses one instance. `model_patch` is `None` when the predictions hold no line for it;
/// `tree` is the base tree when it exists.
pub fn classify(
    gold: &Instance,
    loc: Option<&Localization>,
    model_patch: Option<&str>,
    outcome: Outcome,
    tree: Option<&Path>,
    criteria: &Criteria,
) -> InstanceAnalysis {
    let mut notes = Vec::new();
    if tree.is_none() {
        notes.push("base tree not found: function stage not checked".to_owned());
    }
    if outcome == Outcome::Error {
        notes.push(
            "the evaluation reported an error for this instance; analysed as unresolved".to_owned(),
        );
    }
    let views = parse_views(&gold.patch, model_patch, tree, &mut notes);
    let file = file_stage(gold, loc, criteria, &mut notes);

    // A file whose parse ran past its budget has no known functions: the stage is not judged
    // (as without a tree) rather than passed for a patch that "changes no function".
    let functions_known = views.gold.functions_known() && views.generated.functions_known();
    if tree.is_some() && !functions_known {
        notes.push(
            "function stage not checked: a patched file's functions are not known".to_owned(),
        );
    }
    let function = function_stage(
        &views.gold,
        &views.generated,
        loc.map(|l| l.entries.as_slice()).unwrap_or_default(),
        criteria,
        tree.is_some() && functions_known,
    );
    let function = unjudged_without_edits(function, &views, &mut notes);
    if tree.is_some() && functions_known && views.gold_parses && function.gold.is_empty() {
        notes.push(
            "the gold patch changes no function or method of the base commit (module-level code, class bodies or new functions only)"
                .to_owned(),
        );
    }

    let gold_line = views.gold.first_code_line();
    let gen_line = gold_line
        .and_then(|g| views.generated.first_code_line_in(&g.path))
        .or_else(|| views.generated.first_code_line());
    let line = match_first_lines(gold_line, gen_line);

    let stage = decide_stage(outcome, &views, &file, &function, &line, &mut notes);
    InstanceAnalysis {
        instance_id: gold.instance_id.clone(),
        repo: gold.repo.clone(),
        outcome,
        stage,
        tree_found: tree.is_some(),
        patch_empty: views.empty,
        file,
        function,
        line,
        notes,
    }
}

/// The function stage's evidence, not judged (`passed: None`, with a note) where it had to
/// read the functions the generated patch edits and that patch does not parse: it edits no
/// function anyone can tell, and an unparsable patch is the patch generation's failure whether
/// or not the localization had a function level.
fn unjudged_without_edits(
    mut function: FunctionEvidence,
    views: &Views,
    notes: &mut Vec<String>,
) -> FunctionEvidence {
    if function.source == FunctionSource::GeneratedPatch
        && !views.generated_parses
        && function.passed.is_some()
    {
        function.passed = None;
        notes.push(
            "function stage not checked: without function-level localization it reads the generated patch's edits, and that patch does not parse"
                .to_owned(),
        );
    }
    function
}

/// The gold and generated patches of an instance, parsed and mapped onto the base tree.
struct Views {
    /// Whether the gold patch parses.
    gold_parses: bool,
    /// The gold patch on the base tree (no file when it does not parse).
    gold: PatchView,
    /// Whether the generated patch is empty (or missing).
    empty: bool,
    /// Whether the generated patch parses (an empty one does).
    generated_parses: bool,
    /// The generated patch on the base tree (no file when it is empty or does not parse).
    generated: PatchView,
}

/// Parses the gold patch and the generated one (`None`: the predictions hold no line for the
/// instance) and maps both onto `tree`; what could not be parsed or mapped goes to `notes`.
fn parse_views(
    gold_patch: &str,
    model_patch: Option<&str>,
    tree: Option<&Path>,
    notes: &mut Vec<String>,
) -> Views {
    let parsed_gold = parse_patch(gold_patch)
        .map_err(|e| notes.push(format!("gold patch does not parse: {e}")))
        .ok();
    let gold_parses = parsed_gold.is_some();
    let gold = PatchView::new(parsed_gold.unwrap_or_default(), tree, "gold patch", notes);
    let model_patch = model_patch.unwrap_or_else(|| {
        notes.push("no generated patch in the predictions".to_owned());
        ""
    });
    let empty = model_patch.trim().is_empty();
    let parsed_generated = if empty {
        Some(Vec::new())
    } else {
        // Text with no file diff in it ("I could not produce a patch.") is no patch either.
        parse_patch(model_patch)
            .and_then(|files| {
                if files.is_empty() {
                    Err(crate::error::Error::InvalidInput(
                        "it holds no file diff (no `---`/`+++` or `diff --git` header)".into(),
                    ))
                } else {
                    Ok(files)
                }
            })
            .map_err(|e| notes.push(format!("generated patch does not parse: {e}")))
            .ok()
    };
    let generated_parses = parsed_generated.is_some();
    let generated = PatchView::new(
        parsed_generated.unwrap_or_default(),
        tree,
        "generated patch",
        notes,
    );
    Views {
        gold_parses,
        gold,
        empty,
        generated_parses,
        generated,
    }
}

/// The file stage: the instance's gold files (as [`crate::dataset::load_dataset`] fills them:
/// its `gold_files`, else those its patch changes) against the top `criteria.top_k` files of
/// the localization output (none without one, which `notes` records).
fn file_stage(
    gold: &Instance,
    loc: Option<&Localization>,
    criteria: &Criteria,
    notes: &mut Vec<String>,
) -> FileEvidence {
    let gold_files = gold.gold_files.clone();
    if loc.is_none() {
        notes.push("no localization output".to_owned());
    }
    let localized: Vec<String> = loc
        .map(|l| l.found_files.iter().take(criteria.top_k).cloned().collect())
        .unwrap_or_default();
    let missing: Vec<String> = gold_files
        .iter()
        .filter(|g| !localized.contains(g))
        .cloned()
        .collect();
    FileEvidence {
        passed: !gold_files.is_empty() && missing.is_empty(),
        gold: gold_files,
        localized,
        missing,
    }
}

/// The stage an instance ends up at, from the report's `outcome` and the evidence of each
/// stage, in pipeline order: the first that failed, else patch generation (or, without a
/// report, localized).
///
/// With a report, empty patches are counted apart, as the study does. Without one, an empty
/// patch still has its localization judged: it lands at the first localization stage that
/// failed, else at the empty patch (a function stage that could only be read from the patch's
/// edits is not judged on an empty one).
fn decide_stage(
    outcome: Outcome,
    views: &Views,
    file: &FileEvidence,
    function: &FunctionEvidence,
    line: &LineMatch,
    notes: &mut Vec<String>,
) -> Stage {
    let empty = views.empty;
    let evaluated = outcome != Outcome::NotEvaluated;
    let function_judged = !empty || function.source == FunctionSource::Localization;
    if outcome == Outcome::Resolved {
        Stage::Resolved
    } else if outcome == Outcome::EmptyPatch || (empty && evaluated) {
        if outcome != Outcome::EmptyPatch {
            notes.push(
                "the generated patch is empty although the report does not list it as such"
                    .to_owned(),
            );
        }
        Stage::EmptyPatch
    } else if !views.gold_parses || file.gold.is_empty() {
        Stage::Unclassified
    } else if !file.passed {
        Stage::File
    } else if function.passed == Some(false) && function_judged {
        Stage::Function
    } else if empty {
        Stage::EmptyPatch
    } else if !views.generated_parses {
        Stage::PatchGeneration
    } else if line.verdict == LineVerdict::Failed {
        if function.passed.is_none() {
            Stage::Unclassified
        } else {
            Stage::Line
        }
    } else if outcome == Outcome::NotEvaluated {
        Stage::Localized
    } else {
        Stage::PatchGeneration
    }
}

/// The function stage: the gold functions of the base commit against the first
/// `function_top_k` function-level localization entries (each entry one rank, a named function
/// or a line range alike) or, without any, the functions the generated patch edits.
fn function_stage(
    gold: &PatchView,
    generated: &PatchView,
    entries: &[LocEntry],
    criteria: &Criteria,
    checked: bool,
) -> FunctionEvidence {
    let ids = |refs: Vec<FunctionRef>| refs.iter().map(FunctionRef::id).collect::<Vec<_>>();
    let edited = generated.functions();
    let top: Vec<&LocEntry> = entries.iter().take(criteria.function_top_k).collect();
    let source = if top.is_empty() {
        FunctionSource::GeneratedPatch
    } else {
        FunctionSource::Localization
    };
    let gold_functions = gold.functions();
    let mut evidence = FunctionEvidence {
        gold: ids(gold_functions.clone()),
        gold_added: ids(gold.added()),
        gold_class_edits: ids(gold.class_edits()),
        source,
        edited: ids(edited.clone()),
        ..FunctionEvidence::default()
    };
    for g in &gold_functions {
        let localized = top.iter().any(|e| e.covers(g));
        if localized {
            evidence.localized.push(g.id());
        }
        let found = match source {
            FunctionSource::Localization => localized,
            FunctionSource::GeneratedPatch => edited
                .iter()
                .any(|e| e.path == g.path && e.qualified == g.qualified),
        };
        if !found {
            evidence.missing.push(g.id());
        }
    }
    if checked {
        let found = gold_functions.len() - evidence.missing.len();
        evidence.passed = Some(match criteria.function_rule {
            _ if gold_functions.is_empty() => true,
            FunctionRule::Any => found > 0,
            FunctionRule::All => evidence.missing.is_empty(),
        });
    }
    evidence
}

#[cfg(test)]
mod tests {
    use super::super::functions::LocEntry;
    use super::*;
    use crate::dataset::gold_files_from_patch;
    use crate::repo::DEFAULT_MAX_FILE_BYTES;

    const BASE: &str = "class Pricer:\n    def discount(self, price, percent):\n        # percent is 0..100\n        factor = 1 - percent / 100\n        return price * factor\n\n    def total(self, items):\n        subtotal = 0\n        for item in items:\n            subtotal += item.price\n        taxed = subtotal * 1.2\n        shipping = 5 if taxed < 50 else 0\n        rounded = round(taxed + shipping, 2)\n        return rounded\n";
    const PATH: &str = "shop/pricing.py";
    const CRITERIA: Criteria = Criteria {
        top_k: 3,
        function_top_k: 3,
        function_rule: FunctionRule::Any,
    };

    /// A git-style patch of `PATH` replacing `from` with `to`.
    fn patch(from: &str, to: &str) -> String {
        let new = BASE.replacen(from, to, 1);
        let diff = similar::TextDiff::from_lines(BASE, &new);
        format!(
            "diff --git a/{PATH} b/{PATH}\n{}",
            diff.unified_diff()
                .header(&format!("a/{PATH}"), &format!("b/{PATH}"))
        )
    }

    /// An instance as `load_dataset` gives it: gold files from its patch.
    fn instance(id: &str, repo: &str, patch: String) -> Instance {
        Instance {
            instance_id: id.into(),
            repo: repo.into(),
            gold_files: gold_files_from_patch(&patch),
            patch,
            ..Instance::default()
        }
    }

    fn gold() -> Instance {
        instance(
            "i",
            "acme/shop",
            patch("percent / 100", "min(percent, 100) / 100"),
        )
    }

    fn loc(files: &[&str], functions: &[&str]) -> Localization {
        let entries = functions
            .iter()
            .map(|f| LocEntry::Function {
                path: Some(PATH.into()),
                name: (*f).into(),
                full: false,
            })
            .collect();
        Localization {
            found_files: files.iter().map(|f| (*f).to_owned()).collect(),
            entries,
        }
    }

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("shop")).unwrap();
        std::fs::write(dir.path().join(PATH), BASE).unwrap();
        dir
    }

    fn stage(
        loc: &Localization,
        generated: &str,
        outcome: Outcome,
        tree: Option<&Path>,
    ) -> InstanceAnalysis {
        classify(
            &gold(),
            Some(loc),
            Some(generated),
            outcome,
            tree,
            &CRITERIA,
        )
    }

    #[test]
    fn each_stage() {
        let dir = tree();
        let t = Some(dir.path());
        let found = loc(&["a.py", PATH], &[]);
        let wrong_total = patch("taxed + shipping, 2", "taxed + shipping, 3");
        let same_line = patch("percent / 100", "percent / 10");
        let far = loc(&["a.py", "b.py", "c.py", PATH], &[]);
        assert_eq!(
            stage(&far, &same_line, Outcome::Unresolved, t).stage,
            Stage::File
        );
        let a = stage(&found, &wrong_total, Outcome::Unresolved, t);
        assert_eq!(a.stage, Stage::Function);
        assert_eq!(a.function.gold, ["shop/pricing.py::Pricer.discount"]);
        assert_eq!(a.function.edited, ["shop/pricing.py::Pricer.total"]);
        let a = stage(
            &loc(&[PATH], &["Pricer"]),
            &wrong_total,
            Outcome::Unresolved,
            t,
        );
        assert_eq!((a.stage, a.line.distance), (Stage::Line, Some(9)));
        let a = stage(&found, &same_line, Outcome::Unresolved, t);
        assert_eq!(
            (a.stage, a.line.verdict),
            (Stage::PatchGeneration, LineVerdict::Correct)
        );
        assert_eq!(
            a.line.gold.as_ref().unwrap().text,
            "factor = 1 - percent / 100",
            "the comment is skipped"
        );
        assert_eq!(
            stage(&found, &same_line, Outcome::Resolved, t).stage,
            Stage::Resolved
        );
        assert_eq!(
            stage(&found, "", Outcome::EmptyPatch, t).stage,
            Stage::EmptyPatch
        );
        let a = stage(&found, "  \n", Outcome::Unresolved, t);
        assert_eq!(a.stage, Stage::EmptyPatch);
        assert!(a.notes.iter().any(|n| n.contains("empty")));
    }

    /// A patched file whose parse runs past its time budget has no known functions: the
    /// function stage is not judged, rather than passed for a patch that "changes no function".
    #[test]
    fn a_file_parsed_past_its_budget_leaves_the_function_stage_unchecked() {
        let dir = tempfile::tempdir().unwrap();
        let garbled = "}{)(][><\n".repeat(20_000);
        std::fs::create_dir_all(dir.path().join("shop")).unwrap();
        std::fs::write(dir.path().join(PATH), format!("{BASE}{garbled}")).unwrap();
        let found = loc(&[PATH], &[]);
        let wrong_total = patch("taxed + shipping, 2", "taxed + shipping, 3");
        let a = stage(&found, &wrong_total, Outcome::Unresolved, Some(dir.path()));
        assert_eq!(a.function.passed, None, "{a:?}");
        assert!(a.function.gold.is_empty());
        assert_ne!(a.stage, Stage::Function);
        assert!(
            a.notes.iter().any(|n| n.contains("time budget")),
            "{:?}",
            a.notes
        );
        assert!(
            !a.notes.iter().any(|n| n.contains("changes no function")),
            "{:?}",
            a.notes
        );
        // The same patch on a file that parses is judged at the function stage.
        let a = stage(
            &found,
            &wrong_total,
            Outcome::Unresolved,
            Some(tree().path()),
        );
        assert_eq!(a.stage, Stage::Function);
    }

    /// Found by a hostile review: a 15 MB source, which the localizer skips as too large, was
    /// parsed twice (50 s, 3.7 GB); its functions are now left unknown, the lines still read.
    #[test]
    fn a_file_larger_than_any_source_read_leaves_the_function_stage_unchecked() {
        let dir = tempfile::tempdir().unwrap();
        let filler =
            "# padding\n".repeat(usize::try_from(DEFAULT_MAX_FILE_BYTES).unwrap() / 10 + 1);
        std::fs::create_dir_all(dir.path().join("shop")).unwrap();
        std::fs::write(dir.path().join(PATH), format!("{BASE}{filler}")).unwrap();
        let found = loc(&[PATH], &[]);
        let wrong_total = patch("taxed + shipping, 2", "taxed + shipping, 3");
        let a = stage(&found, &wrong_total, Outcome::Unresolved, Some(dir.path()));
        assert_eq!(a.function.passed, None, "{a:?}");
        assert!(
            a.notes.iter().any(|n| n.contains("larger than the 2 MiB")),
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn without_a_tree_what_can_be_classified_is() {
        let found = loc(&[PATH], &[]);
        let a = stage(
            &found,
            &patch("percent / 100", "percent / 10"),
            Outcome::Unresolved,
            None,
        );
        assert_eq!((a.stage, a.function.passed), (Stage::PatchGeneration, None));
        assert!(a.notes[0].contains("base tree not found"));
        let a = stage(
            &found,
            &patch("taxed + shipping, 2", "taxed + shipping, 3"),
            Outcome::Unresolved,
            None,
        );
        assert_eq!(a.stage, Stage::Unclassified);
        let a = stage(
            &loc(&["x.py"], &[]),
            &patch("taxed + shipping, 2", "taxed + shipping, 3"),
            Outcome::Unresolved,
            None,
        );
        assert_eq!(a.stage, Stage::File);
    }

    #[test]
    fn unparsable_patches_are_noted_not_fatal() {
        let dir = tree();
        let broken = "--- a/shop/pricing.py\n+++ b/shop/pricing.py\n@@ -4,2 +4,2 @@\n garbage\n";
        let a = stage(
            &loc(&[PATH], &["Pricer.discount"]),
            broken,
            Outcome::Unresolved,
            Some(dir.path()),
        );
        assert_eq!(a.stage, Stage::PatchGeneration);
        assert!(
            a.notes
                .iter()
                .any(|n| n.starts_with("generated patch does not parse")),
            "{:?}",
            a.notes
        );
        let mut bad_gold = gold();
        bad_gold.patch = broken.into();
        let a = classify(
            &bad_gold,
            None,
            Some(""),
            Outcome::Unresolved,
            Some(dir.path()),
            &CRITERIA,
        );
        assert_eq!(a.stage, Stage::EmptyPatch);
        let a = classify(
            &bad_gold,
            None,
            Some(&patch("a", "b")),
            Outcome::Unresolved,
            Some(dir.path()),
            &CRITERIA,
        );
        assert_eq!(a.stage, Stage::Unclassified);
        assert!(a
            .notes
            .iter()
            .any(|n| n.starts_with("gold patch does not parse")));
    }

    /// `patch` with each hunk header's two counts moved by `delta`.
    fn recounted(patch: &str, delta: isize) -> String {
        let line = |l: &str| -> String {
            let Some(ranges) = l.strip_prefix("@@ -").and_then(|r| r.strip_suffix(" @@")) else {
                return l.to_owned();
            };
            let (old, new) = ranges.split_once(" +").unwrap();
            let shift = |range: &str| {
                let (start, len) = range.split_once(',').unwrap();
                let len = len.parse::<usize>().unwrap().saturating_add_signed(delta);
                format!("{start},{len}")
            };
            format!("@@ -{} +{} @@", shift(old), shift(new))
        };
        patch.lines().map(|l| line(l) + "\n").collect()
    }

    /// Found by a review: a generated patch that does not parse was blamed on the function
    /// stage when the localization had no function level (the stage then reads the patch's
    /// edits, of which an unparsable patch has none), on patch generation when it had one.
    #[test]
    fn an_unparsable_patch_is_patch_generation_whatever_the_localization_holds() {
        let dir = tree();
        let t = Some(dir.path());
        let wrong = patch("percent / 100", "percent / 1000");
        assert!(parse_patch(&recounted(&wrong, 0)).is_ok());
        let unparsable = [
            recounted(&wrong, 1),
            recounted(&wrong, -4),
            "this is not a diff at all\n@@ bogus @@\n".to_owned(),
            "I could not produce a patch.".to_owned(),
        ];
        let files_only = loc(&[PATH], &[]);
        let with_functions = loc(&[PATH], &["Pricer.discount"]);
        for generated in &unparsable {
            for (localization, source) in [
                (&files_only, FunctionSource::GeneratedPatch),
                (&with_functions, FunctionSource::Localization),
            ] {
                for outcome in [Outcome::Unresolved, Outcome::NotEvaluated] {
                    let a = stage(localization, generated, outcome, t);
                    assert_eq!(a.stage, Stage::PatchGeneration, "{generated:?} {a:?}");
                    assert_eq!(a.function.source, source);
                    assert!(
                        a.notes
                            .iter()
                            .any(|n| n.starts_with("generated patch does not parse")),
                        "{:?}",
                        a.notes
                    );
                }
            }
            let a = stage(&files_only, generated, Outcome::Unresolved, t);
            assert_eq!(a.function.passed, None, "not judged without edits");
            let a = stage(&with_functions, generated, Outcome::Unresolved, t);
            assert_eq!(a.function.passed, Some(true));
            // A function-level localization that misses the gold function still fails first.
            let a = stage(
                &loc(&[PATH], &["Pricer.total"]),
                generated,
                Outcome::Unresolved,
                t,
            );
            assert_eq!(a.stage, Stage::Function);
        }
    }

    /// `BASE` as the tree has it: a function added above the class, so the gold patch's
    /// stated line numbers (made against `BASE`) point into `unit`.
    fn drifted_tree() -> (tempfile::TempDir, String) {
        let drifted = format!("def unit(x):\n    y = x\n    z = y\n    return z\n\n\n{BASE}");
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("shop")).unwrap();
        std::fs::write(dir.path().join(PATH), &drifted).unwrap();
        (dir, drifted)
    }

    #[test]
    fn gold_hunks_are_placed_where_git_apply_finds_them() {
        let (dir, drifted) = drifted_tree();
        // The generated patch was made against the tree itself and edits `discount`.
        let new = drifted.replacen("percent / 100", "percent / 10", 1);
        let generated = format!(
            "--- a/{PATH}\n+++ b/{PATH}\n{}",
            similar::TextDiff::from_lines(drifted.as_str(), &new).unified_diff()
        );
        let a = classify(
            &gold(),
            Some(&loc(&[PATH], &[])),
            Some(&generated),
            Outcome::Unresolved,
            Some(dir.path()),
            &CRITERIA,
        );
        assert_eq!(
            a.function.gold,
            ["shop/pricing.py::Pricer.discount"],
            "not unit"
        );
        assert_eq!(a.function.passed, Some(true));
        assert_eq!(
            a.line.gold.as_ref().unwrap().line,
            10,
            "line 4 of BASE is line 10 of the tree"
        );
        assert_eq!(
            (a.stage, a.line.verdict),
            (Stage::PatchGeneration, LineVerdict::Correct)
        );
        assert!(
            a.notes.iter().any(|n| n.contains("applies +6 lines away")),
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn added_functions_and_class_body_edits_are_facts_not_requirements() {
        let base = "class Pricer:\n    RATE = 1.2\n\n    def discount(self, price):\n        return price\n";
        let new = "class Pricer:\n    RATE = 1.25\n\n    def discount(self, price):\n        return price\n\n    def tax(self, price):\n        return price * self.RATE\n";
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p.py"), base).unwrap();
        let diff = |to: &str| {
            format!(
                "--- a/p.py\n+++ b/p.py\n{}",
                similar::TextDiff::from_lines(base, to).unified_diff()
            )
        };
        let gold = instance("i", "", diff(new));
        let generated = diff(&base.replacen("return price\n", "return price * 2\n", 1));
        let files = Localization {
            found_files: vec!["p.py".into()],
            entries: Vec::new(),
        };
        let a = classify(
            &gold,
            Some(&files),
            Some(&generated),
            Outcome::Unresolved,
            Some(dir.path()),
            &CRITERIA,
        );
        assert!(a.function.gold.is_empty());
        assert_eq!(a.function.gold_added, ["p.py::Pricer.tax"]);
        assert_eq!(a.function.gold_class_edits, ["p.py::Pricer"]);
        assert_eq!(
            a.function.passed,
            Some(true),
            "nothing of the base commit to find"
        );
        assert_ne!(a.stage, Stage::Function);
    }

    #[test]
    fn any_or_all_gold_functions_and_only_the_top_localized_ones() {
        let dir = tree();
        let t = Some(dir.path());
        let mut both = gold();
        let new = BASE.replacen("percent / 100", "percent / 10", 1).replacen(
            "taxed + shipping, 2",
            "taxed + shipping, 3",
            1,
        );
        both.patch = format!(
            "--- a/{PATH}\n+++ b/{PATH}\n{}",
            similar::TextDiff::from_lines(BASE, &new).unified_diff()
        );
        let generated = patch("percent / 100", "percent / 1000");
        let files = loc(&[PATH], &[]);
        let any = classify(
            &both,
            Some(&files),
            Some(&generated),
            Outcome::Unresolved,
            t,
            &CRITERIA,
        );
        assert_eq!(any.function.gold.len(), 2);
        assert_eq!(
            (any.function.source, any.function.passed),
            (FunctionSource::GeneratedPatch, Some(true))
        );
        let all = Criteria {
            function_rule: FunctionRule::All,
            ..CRITERIA
        };
        let strict = classify(
            &both,
            Some(&files),
            Some(&generated),
            Outcome::Unresolved,
            t,
            &all,
        );
        assert_eq!(
            (strict.stage, strict.function.missing.len()),
            (Stage::Function, 1)
        );

        let fourth = loc(
            &[PATH],
            &["Pricer.a", "Pricer.b", "Pricer.c", "Pricer.discount"],
        );
        let a = classify(
            &gold(),
            Some(&fourth),
            Some(&generated),
            Outcome::Unresolved,
            t,
            &CRITERIA,
        );
        assert_eq!(
            (a.function.source, a.stage),
            (FunctionSource::Localization, Stage::Function),
            "the fourth is not read"
        );
        let four = Criteria {
            function_top_k: 4,
            ..CRITERIA
        };
        let a = classify(
            &gold(),
            Some(&fourth),
            Some(&generated),
            Outcome::Unresolved,
            t,
            &four,
        );
        assert_eq!(a.function.localized, ["shop/pricing.py::Pricer.discount"]);
        assert_ne!(a.stage, Stage::Function);
    }

    /// Found by a review: line ranges were read past `function_top_k` (a whole-file range at
    /// rank 4 localized every function); each entry is now one rank, a range or a name.
    #[test]
    fn line_ranges_count_towards_the_top_k_like_named_functions() {
        let dir = tree();
        let t = Some(dir.path());
        let generated = patch("taxed + shipping, 2", "taxed + shipping, 3");
        let named = |n: &str| LocEntry::Function {
            path: Some(PATH.into()),
            name: n.into(),
            full: true,
        };
        let range = |start, end| LocEntry::Lines {
            path: PATH.into(),
            start,
            end,
        };
        let with = |entries: Vec<LocEntry>| Localization {
            found_files: vec![PATH.into()],
            entries,
        };
        let classified = |l: &Localization, criteria: &Criteria| {
            classify(
                &gold(),
                Some(l),
                Some(&generated),
                Outcome::Unresolved,
                t,
                criteria,
            )
        };
        let whole_file_fourth = with(vec![
            named("Pricer.total"),
            named("Pricer.a"),
            named("Pricer.b"),
            range(1, 100_000),
        ]);
        let a = classified(&whole_file_fourth, &CRITERIA);
        assert_eq!(a.stage, Stage::Function, "{a:?}");
        assert!(a.function.localized.is_empty());
        let four = Criteria {
            function_top_k: 4,
            ..CRITERIA
        };
        let a = classified(&whole_file_fourth, &four);
        assert_eq!(a.function.localized, ["shop/pricing.py::Pricer.discount"]);
        assert_ne!(a.stage, Stage::Function);
        // Agentless's `line: N` entries are one rank each: line 4 (in `discount`) third is
        // read, fourth is not.
        let lines = |at: &[usize]| with(at.iter().map(|&n| range(n, n)).collect());
        let a = classified(&lines(&[10, 11, 4]), &CRITERIA);
        assert_eq!(a.function.localized, ["shop/pricing.py::Pricer.discount"]);
        let a = classified(&lines(&[10, 11, 12, 4]), &CRITERIA);
        assert_eq!(
            (a.stage, a.function.source),
            (Stage::Function, FunctionSource::Localization)
        );
    }

    #[test]
    fn without_a_report_an_instance_that_passes_every_localization_stage_is_localized() {
        let dir = tree();
        let a = stage(
            &loc(&[PATH], &[]),
            &patch("percent / 100", "percent / 10"),
            Outcome::NotEvaluated,
            Some(dir.path()),
        );
        assert_eq!(a.stage, Stage::Localized);
        let a = stage(
            &loc(&[PATH], &[]),
            &patch("taxed + shipping, 2", "taxed + shipping, 3"),
            Outcome::NotEvaluated,
            Some(dir.path()),
        );
        assert_eq!(a.stage, Stage::Function);
    }

    #[test]
    fn without_a_report_an_empty_patch_keeps_its_localization_stages() {
        let dir = tree();
        let t = Some(dir.path());
        let far = loc(&["a.py", "b.py", "c.py", PATH], &[]);
        let a = stage(&far, "", Outcome::NotEvaluated, t);
        assert_eq!((a.stage, a.patch_empty), (Stage::File, true));
        assert!(
            a.notes.iter().all(|n| !n.contains("report")),
            "{:?}",
            a.notes
        );
        let a = stage(
            &loc(&[PATH], &["Pricer.total"]),
            "",
            Outcome::NotEvaluated,
            t,
        );
        assert_eq!(a.stage, Stage::Function);
        let a = stage(
            &loc(&[PATH], &["Pricer.discount"]),
            "",
            Outcome::NotEvaluated,
            t,
        );
        assert_eq!(a.stage, Stage::EmptyPatch);
        // Without function-level localization the function stage reads the patch's edits,
        // which an empty patch does not have: it is not judged.
        let a = stage(&loc(&[PATH], &[]), "", Outcome::NotEvaluated, t);
        assert_eq!(a.stage, Stage::EmptyPatch);
        assert!(
            a.notes.iter().all(|n| !n.contains("report")),
            "{:?}",
            a.notes
        );
    }
}
