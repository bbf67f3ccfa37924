//! Classifying one instance: the first stage (file, function, line, patch generation) that
//! failed, with the evidence for each stage.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::inputs::{GoldInstance, Localization, Outcome};
use super::lines::{match_first_lines, LineMatch, LineVerdict};
use super::patch::parse_patch;
use super::view::PatchView;
use crate::eval::gold_files_from_patch;

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
    pub const ALL: [Stage; 7] =
        [Stage::File, Stage::Function, Stage::Line, Stage::PatchGeneration, Stage::Unclassified, Stage::EmptyPatch, Stage::Resolved];

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
    gold: &GoldInstance,
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
        notes.push("the evaluation reported an error for this instance; analysed as unresolved".to_owned());
    }
    let gold_parsed = parse_patch(&gold.patch).map_err(|e| notes.push(format!("gold patch does not parse: {e}"))).ok();
    let gold_view = PatchView::new(gold_parsed.clone().unwrap_or_default(), tree, "gold patch", &mut notes);
    let model_patch = model_patch.unwrap_or_else(|| {
        notes.push("no generated patch in the predictions".to_owned());
        ""
    });
    let empty = model_patch.trim().is_empty();
    let generated = if empty { Some(Vec::new()) } else { parse_patch(model_patch).map_err(|e| notes.push(format!("generated patch does not parse: {e}"))).ok() };
    let gen_view = PatchView::new(generated.clone().unwrap_or_default(), tree, "generated patch", &mut notes);

    let mut gold_files = gold_files_from_patch(&gold.patch);
    if gold_files.is_empty() {
        gold_files = gold_view.files.iter().map(|f| f.patch.path.clone()).collect();
    }
    if loc.is_none() {
        notes.push("no localization output".to_owned());
    }
    let localized: Vec<String> = loc.map(|l| l.found_files.iter().take(top_k).cloned().collect()).unwrap_or_default();
    let missing: Vec<String> = gold_files.iter().filter(|g| !localized.contains(g)).cloned().collect();
    let file = FileEvidence { passed: !gold_files.is_empty() && missing.is_empty(), gold: gold_files, localized, missing };

    let gold_functions = gold_view.functions();
    let edited = gen_view.functions();
    let entries = loc.map(|l| l.entries.as_slice()).unwrap_or_default();
    let mut function = FunctionEvidence { edited: edited.iter().map(|f| f.id()).collect(), ..FunctionEvidence::default() };
    for g in &gold_functions {
        function.gold.push(g.id());
        let by_loc = entries.iter().any(|e| e.covers(g));
        if by_loc {
            function.localized.push(g.id());
        }
        if !by_loc && !edited.iter().any(|e| e.path == g.path && e.qualified == g.qualified) {
            function.missing.push(g.id());
        }
    }
    if tree.is_some() {
        function.passed = Some(function.missing.is_empty());
        if gold_functions.is_empty() && gold_parsed.is_some() {
            notes.push("the gold patch changes no function or class (module-level code only)".to_owned());
        }
    }

    let gold_line = gold_view.first_code_line();
    let gen_line = gold_line.and_then(|g| gen_view.first_code_line_in(&g.path)).or_else(|| gen_view.first_code_line());
    let line = match_first_lines(gold_line, gen_line);

    let stage = if outcome == Outcome::Resolved {
        Stage::Resolved
    } else if outcome == Outcome::EmptyPatch || empty {
        if outcome != Outcome::EmptyPatch {
            notes.push("the generated patch is empty although the report does not list it as such".to_owned());
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
        if function.passed.is_none() { Stage::Unclassified } else { Stage::Line }
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
