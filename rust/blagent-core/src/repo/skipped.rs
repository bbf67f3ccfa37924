//! What the walk leaves out of an index, and why: read by the walk, the ignore rules and
//! every result's `skipped` list.

use serde::{Deserialize, Serialize};

/// Why a file or directory was left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SkipReason {
    /// A test directory or file (Agentless's rule), when tests are excluded.
    Test,
    /// Larger than [`super::WalkOptions::max_file_bytes`].
    TooLarge {
        /// The file's size.
        bytes: u64,
    },
    /// An ignore file with more rules than blagent compiles (a rule with `**` costs memory
    /// and time to build): [`super::ignores`]'s per-file and per-repository budgets.
    TooManyRules {
        /// The file's rules (lines that are not blank or comments).
        rules: usize,
    },
    /// Contains NUL bytes.
    Binary,
    /// A symlink whose target lies outside the repository.
    SymlinkOutside,
    /// A symlink to a file inside the repository: the target is indexed under its own path.
    SymlinkInside,
    /// A symlink whose target does not exist.
    BrokenSymlink,
    /// Not a regular file (a FIFO, socket or device), which reading could block on.
    NotRegularFile,
    /// The path is not valid UTF-8, so it could not be reported faithfully.
    NonUtf8Path,
    /// Part of an indexed file nests too deeply to follow (generated code, data literals,
    /// thousands of nested blocks): the lines are not split into smaller chunks, and
    /// definitions nested more than a hundred deep within them are not in the symbol table
    /// (those less deep are). The rest of the file is indexed as usual.
    NestedTooDeep {
        /// First line of the region, 1-based.
        start_line: usize,
        /// Last line, inclusive.
        end_line: usize,
    },
    /// Tree-sitter's parse ran past its time budget (garbled text, on which its error recovery
    /// can need quadratic time): the file is indexed as windows of lines, with no symbols.
    ParseTooSlow,
    /// Reading failed.
    Unreadable {
        /// The operating system's message.
        message: String,
    },
}

/// A file or directory the walk left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// Repository-relative path.
    pub path: String,
    /// Why it was skipped.
    #[serde(flatten)]
    pub reason: SkipReason,
}
