//! Failure-stage analysis of automated program repair runs: for every unresolved instance,
//! the first stage that failed.
//!
//! ```text
//! gold patch ─parse─▶ hunks ─map onto base tree─▶ gold files, functions, first code line ─┐
//! generated patch ─parse─▶ hunks ─map onto base tree─▶ edited functions, first code line ─┼─▶ stage
//! localization output ─▶ top-k files, function entries, line ranges ──────────────────────┘
//! ```
//!
//! Hunks are placed where `git apply` finds them ([`locate_hunks`]), not at their stated
//! line numbers. Stages, in order: **file** (a gold file is not among the top-k localized
//! files), **function** (no gold function, a function or method of the base commit a gold hunk
//! touches, is among the top localized functions, or edited by the generated patch when the
//! localization has no function level; [`FunctionRule::All`] asks for every one), **line**
//! (the first changed code lines differ: see [`match_first_lines`]), **patch generation** (all
//! localized, the patch still wrong). Empty patches and resolved instances are counted apart;
//! without an evaluation report an instance that passes all three is **localized**.
//! [`analyze_failures`] runs it; [`write_outputs`] writes the per-instance JSON, the markdown
//! summary and the chart (SVG and PNG).

mod chart;
mod docstrings;
mod functions;
mod inputs;
mod lines;
mod report;
mod run;
mod stage;
mod view;

// Unified diffs are read where datasets are; the submodules reach them as `super::patch`.
use crate::dataset::patch;

pub use self::chart::{render_chart, Chart, FONT_FILES};
pub use self::docstrings::{docstring_mask, hunk_docstring_mask};
pub use self::functions::{collect_entries, enclosing, FunctionRef, LocEntry};
pub use self::inputs::{
    load_gold, load_localizations, load_predictions, load_report, result_entity_ids, Localization,
    Outcome, FUNCTION_FIELDS,
};
pub use self::lines::{
    code_lines, line_similarity, match_first_lines, CodeLine, LineMatch, LineVerdict,
    APPROX_LINE_DISTANCE, APPROX_SIMILARITY, EXACT_LINE_DISTANCE,
};
pub use self::report::{StageCount, Summary};
pub use self::run::{
    analyze_failures, write_outputs, AnalysisConfig, AnalysisReport, DEFAULT_ANALYSIS_TOP_K,
};
pub use self::stage::{
    classify, Criteria, FileEvidence, FunctionEvidence, FunctionRule, FunctionSource,
    InstanceAnalysis, Stage,
};
pub use self::view::{FileView, PatchView, Touch};
pub use crate::dataset::patch::{
    apply, locate_hunks, parse_patch, ChangeKind, FilePatch, Hunk, HunkLine, Placement,
    MAX_HUNK_OFFSET,
};
