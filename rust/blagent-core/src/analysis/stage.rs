//! Classifying one instance: the first stage (file, function, line, patch generation) that
//! failed, with the evidence for each stage.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::functions::FunctionRef;
use super::inputs::{Localization, Outcome};
use super::lines::{match_first_lines, LineMatch, LineVerdict};
use super::patch::parse_patch;
use super::view::PatchView;
use crate::dataset::{gold_files_from_patch, Instance};

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
    pub const ALL: [Stage; 7] = [
        Stage::File,
        Stage::Function,
        Stage::Line,
        Stage::PatchGeneration,
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

/// Function-level evidence, as `path::Class.method` ids.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionEvidence {
    /// Functions (or classes, for class-body changes) the gold patch's code lines fall in.
    pub gold: Vec<String>,
    /// Gold functions some localization entry covers.
    pub localized: Vec<String>,
    /// Functions the generated patch's code lines fall in.
    pub edited: Vec<String>,
    /// Gold functions neither localized nor edited.
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
    top_k: usize,
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
    let gold_parsed = parse_patch(&gold.patch)
        .map_err(|e| notes.push(format!("gold patch does not parse: {e}")))
        .ok();
    let gold_view = PatchView::new(
        gold_parsed.clone().unwrap_or_default(),
        tree,
        "gold patch",
        &mut notes,
    );
    let model_patch = model_patch.unwrap_or_else(|| {
        notes.push("no generated patch in the predictions".to_owned());
        ""
    });
    let empty = model_patch.trim().is_empty();
    let generated = if empty {
        Some(Vec::new())
    } else {
        parse_patch(model_patch)
            .map_err(|e| notes.push(format!("generated patch does not parse: {e}")))
            .ok()
    };
    let gen_view = PatchView::new(
        generated.clone().unwrap_or_default(),
        tree,
        "generated patch",
        &mut notes,
    );

    let mut gold_files = gold_files_from_patch(&gold.patch);
    if gold_files.is_empty() {
        gold_files = gold_view
            .files
            .iter()
            .map(|f| f.patch.path.clone())
            .collect();
    }
    if loc.is_none() {
        notes.push("no localization output".to_owned());
    }
    let localized: Vec<String> = loc
        .map(|l| l.found_files.iter().take(top_k).cloned().collect())
        .unwrap_or_default();
    let missing: Vec<String> = gold_files
        .iter()
        .filter(|g| !localized.contains(g))
        .cloned()
        .collect();
    let file = FileEvidence {
        passed: !gold_files.is_empty() && missing.is_empty(),
        gold: gold_files,
        localized,
        missing,
    };

    let gold_functions = gold_view.functions();
    let edited = gen_view.functions();
    let entries = loc.map(|l| l.entries.as_slice()).unwrap_or_default();
    let mut function = FunctionEvidence {
        edited: edited.iter().map(FunctionRef::id).collect(),
        ..FunctionEvidence::default()
    };
    for g in &gold_functions {
        function.gold.push(g.id());
        let by_loc = entries.iter().any(|e| e.covers(g));
        if by_loc {
            function.localized.push(g.id());
        }
        if !by_loc
            && !edited
                .iter()
                .any(|e| e.path == g.path && e.qualified == g.qualified)
        {
            function.missing.push(g.id());
        }
    }
    if tree.is_some() {
        function.passed = Some(function.missing.is_empty());
        if gold_functions.is_empty() && gold_parsed.is_some() {
            notes.push(
                "the gold patch changes no function or class (module-level code only)".to_owned(),
            );
        }
    }

    let gold_line = gold_view.first_code_line();
    let gen_line = gold_line
        .and_then(|g| gen_view.first_code_line_in(&g.path))
        .or_else(|| gen_view.first_code_line());
    let line = match_first_lines(gold_line, gen_line);

    let stage = if outcome == Outcome::Resolved {
        Stage::Resolved
    } else if outcome == Outcome::EmptyPatch || empty {
        if outcome != Outcome::EmptyPatch {
            notes.push(
                "the generated patch is empty although the report does not list it as such"
                    .to_owned(),
            );
        }
        Stage::EmptyPatch
    } else if gold_parsed.is_none() || file.gold.is_empty() {
        Stage::Unclassified
    } else if !file.passed {
        Stage::File
    } else if function.passed == Some(false) {
        Stage::Function
    } else if generated.is_none() {
        Stage::PatchGeneration
    } else if line.verdict == LineVerdict::Failed {
        if function.passed.is_none() {
            Stage::Unclassified
        } else {
            Stage::Line
        }
    } else {
        Stage::PatchGeneration
    };
    InstanceAnalysis {
        instance_id: gold.instance_id.clone(),
        repo: gold.repo.clone(),
        outcome,
        stage,
        tree_found: tree.is_some(),
        file,
        function,
        line,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::super::functions::LocEntry;
    use super::*;

    const BASE: &str = "class Pricer:\n    def discount(self, price, percent):\n        # percent is 0..100\n        factor = 1 - percent / 100\n        return price * factor\n\n    def total(self, items):\n        subtotal = 0\n        for item in items:\n            subtotal += item.price\n        taxed = subtotal * 1.2\n        shipping = 5 if taxed < 50 else 0\n        rounded = round(taxed + shipping, 2)\n        return rounded\n";
    const PATH: &str = "shop/pricing.py";

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

    fn gold() -> Instance {
        Instance {
            instance_id: "i".into(),
            repo: "acme/shop".into(),
            patch: patch("percent / 100", "min(percent, 100) / 100"),
            ..Instance::default()
        }
    }

    fn loc(files: &[&str], functions: &[&str]) -> Localization {
        let entries = functions
            .iter()
            .map(|f| LocEntry::Function {
                path: Some(PATH.into()),
                name: (*f).into(),
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
        classify(&gold(), Some(loc), Some(generated), outcome, tree, 3)
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
            3,
        );
        assert_eq!(a.stage, Stage::EmptyPatch);
        let a = classify(
            &bad_gold,
            None,
            Some(&patch("a", "b")),
            Outcome::Unresolved,
            Some(dir.path()),
            3,
        );
        assert_eq!(a.stage, Stage::Unclassified);
        assert!(a
            .notes
            .iter()
            .any(|n| n.starts_with("gold patch does not parse")));
    }
}
