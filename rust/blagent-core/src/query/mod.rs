//! Reformulating an issue without an LLM: the Reformulate-Retrieve-Localize schema (explanation,
//! paths, filenames, modules, identifiers, code snippets, stack frames, error messages) filled by
//! pattern extraction, with issue-template boilerplate dropped.

mod boilerplate;
mod extract;
mod rewrite;

use serde::{Deserialize, Serialize};

pub use self::boilerplate::strip_boilerplate;
pub use self::extract::{reformulate, MAX_STACK_FRAMES};
pub use self::rewrite::{behavioral_query, structural_query};

/// Where an identifier was seen, which says how deliberately the reporter named it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdentifierSource {
    /// Inside backticks in prose: named on purpose.
    Backtick,
    /// Written as a call (`name(`).
    Call,
    /// A dotted name's last component (`module.Name`).
    Dotted,
    /// Imported in a code snippet (`from m import Name`).
    Import,
    /// CamelCase word in prose.
    CamelCase,
    /// `snake_case` word in prose.
    SnakeCase,
}

/// An identifier the issue names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identifier {
    /// The identifier, possibly dotted (`QuerySet.bulk_create`).
    pub name: String,
    /// The strongest way it was named.
    pub source: IdentifierSource,
}

/// One frame of a Python traceback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackFrame {
    /// The path as printed (often absolute, under site-packages).
    pub path: String,
    /// Line number.
    pub line: usize,
    /// Function name, when printed.
    pub function: Option<String>,
    /// Position from the innermost frame: 0 is where the exception was raised.
    pub depth: usize,
}

/// The issue, reformulated into the fields the retrievers use.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reformulation {
    /// The issue text without template boilerplate (what BM25 is queried with).
    pub explanation: String,
    /// The title: its first line of prose (headings and template labels skipped).
    pub title: String,
    /// Paths the issue mentions (with at least one `/`), in order of first mention.
    pub paths: Vec<String>,
    /// Bare file names the issue mentions (`utils.py`).
    pub filenames: Vec<String>,
    /// Dotted names that may be modules or module members (`django.db.models.Q`).
    pub modules: Vec<String>,
    /// Identifiers, strongest source first per name, in order of first mention.
    pub identifiers: Vec<Identifier>,
    /// Fenced, indented and doctest code blocks.
    pub code_snippets: Vec<String>,
    /// Traceback frames, innermost first.
    pub stack_frames: Vec<StackFrame>,
    /// Exception messages and other error lines.
    pub error_messages: Vec<String>,
}
