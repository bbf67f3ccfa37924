//! The summary of an analysis: counts and shares per stage, rendered as a markdown table.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::lines::LineVerdict;
use super::stage::{Criteria, FunctionRule, InstanceAnalysis, Stage};

/// How many instances ended at one stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageCount {
    /// The stage.
    pub stage: Stage,
    /// Instances.
    pub count: usize,
    /// Percent of the unresolved instances with a patch (failure stages) or of all instances
    /// (empty patch, resolved; every stage without an evaluation report).
    pub percent: f64,
}

impl StageCount {
    /// This stage's row of a summary table: label, count, share.
    fn write_row(&self, md: &mut String) {
        let _ = writeln!(
            md,
            "| {} | {} | {:.1}% |",
            self.stage.label(),
            self.count,
            self.percent
        );
    }
}

/// Counts over all analysed instances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Instances analysed (every instance the report lists that the dataset holds).
    pub instances: usize,
    /// Resolved instances.
    pub resolved: usize,
    /// Instances counted at the empty-patch stage.
    pub empty_patch: usize,
    /// Instances whose generated patch is empty, whatever their stage (without a report an
    /// empty patch is counted at the first localization stage it fails).
    #[serde(default)]
    pub patches_empty: usize,
    /// Unresolved instances with a patch: the denominator of the failure stages.
    pub unresolved: usize,
    /// One entry per stage, in [`Stage::ALL`] order.
    pub stages: Vec<StageCount>,
    /// Unresolved instances whose first lines matched exactly (≤ 5 lines apart).
    pub line_correct: usize,
    /// Unresolved instances whose first lines matched approximately.
    pub line_approximate: usize,
    /// Instances whose base tree was missing.
    pub missing_trees: usize,
    /// The k of the file stage.
    pub top_k: usize,
    /// The k of the function stage (function-level localization entries read).
    pub function_top_k: usize,
    /// Whether the function stage asks for any or all gold functions.
    pub function_rule: FunctionRule,
    /// The function stage's rule in words.
    pub function_criterion: String,
    /// Whether an evaluation report was given; without one only the localization stages
    /// (file, function, line) are judged and nothing counts as resolved.
    pub evaluated: bool,
}

fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

impl Summary {
    /// Counts `instances`.
    pub fn new(instances: &[InstanceAnalysis], criteria: &Criteria, evaluated: bool) -> Self {
        let count = |stage: Stage| instances.iter().filter(|i| i.stage == stage).count();
        let resolved = count(Stage::Resolved);
        let empty_patch = count(Stage::EmptyPatch);
        let unresolved = instances.len() - resolved - empty_patch;
        let stages = Stage::ALL
            .iter()
            .map(|&stage| {
                let n = count(stage);
                let whole = if !evaluated || matches!(stage, Stage::Resolved | Stage::EmptyPatch) {
                    instances.len()
                } else {
                    unresolved
                };
                StageCount {
                    stage,
                    count: n,
                    percent: percent(n, whole),
                }
            })
            .collect();
        let failed = || {
            instances
                .iter()
                .filter(|i| !matches!(i.stage, Stage::Resolved | Stage::EmptyPatch))
        };
        Summary {
            instances: instances.len(),
            resolved,
            empty_patch,
            patches_empty: instances.iter().filter(|i| i.patch_empty).count(),
            unresolved,
            stages,
            line_correct: failed()
                .filter(|i| i.line.verdict == LineVerdict::Correct)
                .count(),
            line_approximate: failed()
                .filter(|i| i.line.verdict == LineVerdict::Approximate)
                .count(),
            missing_trees: instances.iter().filter(|i| !i.tree_found).count(),
            top_k: criteria.top_k,
            function_top_k: criteria.function_top_k,
            function_rule: criteria.function_rule,
            function_criterion: criteria.describe_function_rule(),
            evaluated,
        }
    }

    /// The count of one stage.
    pub fn count(&self, stage: Stage) -> usize {
        self.stages
            .iter()
            .find(|s| s.stage == stage)
            .map_or(0, |s| s.count)
    }

    /// The summary as markdown: a table of the first failed stage of the unresolved
    /// instances, then empty patches and resolved instances apart (without an evaluation
    /// report: one table of every instance's first failed localization stage).
    pub fn to_markdown(&self) -> String {
        let mut md = String::from("# Failure-stage analysis\n\n");
        if !self.evaluated {
            return self.unevaluated_markdown(md);
        }
        let _ = writeln!(
            md,
            "{} instances: {} resolved, {} with an empty patch, {} unresolved with a patch.",
            self.instances, self.resolved, self.empty_patch, self.unresolved
        );
        self.criteria_line(&mut md);
        let (denominator, total) = ("% of unresolved", "unresolved with a patch");
        let _ = writeln!(
            md,
            "| first failed stage | instances | {denominator} |\n|---|---:|---:|"
        );
        for s in self
            .stages
            .iter()
            .filter(|s| !matches!(s.stage, Stage::Resolved | Stage::EmptyPatch))
        {
            if !matches!(s.stage, Stage::Unclassified | Stage::Localized) || s.count > 0 {
                s.write_row(&mut md);
            }
        }
        let _ = writeln!(
            md,
            "| **{total}** | **{}** | {:.1}% |\n",
            self.unresolved,
            percent(self.unresolved, self.unresolved)
        );
        md.push_str("| counted apart | instances | % of all |\n|---|---:|---:|\n");
        for stage in [Stage::EmptyPatch, Stage::Resolved] {
            let n = self.count(stage);
            let _ = writeln!(
                md,
                "| {} | {} | {:.1}% |",
                stage.label(),
                n,
                percent(n, self.instances)
            );
        }
        let _ = writeln!(md, "| **all** | **{}** | 100.0% |", self.instances);
        let _ = write!(
            md,
            "\nFirst changed code lines of the unresolved patches: {} within 5 lines of the gold patch's, {} approximate (same file, ≤ 10 lines, similarity ≥ 0.6).\n",
            self.line_correct, self.line_approximate
        );
        if self.missing_trees > 0 {
            let _ = writeln!(
                md,
                "\n{} instances had no base tree: their function stage was not checked.",
                self.missing_trees
            );
        }
        md
    }

    fn criteria_line(&self, md: &mut String) {
        let _ = writeln!(
            md,
            "File stage: every gold file in the top {} localized files. Function stage: {}.\n",
            self.top_k, self.function_criterion
        );
    }

    /// Without a report nothing is resolved and empty patches are not set apart: each
    /// instance is counted at the first localization stage it fails, else as localized (or
    /// as an empty patch when its localization held and no patch came of it).
    fn unevaluated_markdown(&self, mut md: String) -> String {
        let _ = writeln!(
            md,
            "{} instances, no evaluation report: the localization stages of every instance, those with an empty patch included ({} of them).",
            self.instances, self.patches_empty
        );
        self.criteria_line(&mut md);
        md.push_str("| first failed stage | instances | % of all |\n|---|---:|---:|\n");
        for s in self.stages.iter().filter(|s| s.stage != Stage::Resolved) {
            let always = matches!(s.stage, Stage::File | Stage::Function | Stage::Line);
            if always || s.count > 0 {
                s.write_row(&mut md);
            }
        }
        let _ = writeln!(md, "| **all** | **{}** | 100.0% |", self.instances);
        if self.missing_trees > 0 {
            let _ = writeln!(
                md,
                "\n{} instances had no base tree: their function stage was not checked.",
                self.missing_trees
            );
        }
        md
    }
}
