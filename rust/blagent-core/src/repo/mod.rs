//! Finding the source files of a repository: which languages, which files, and what was skipped.

pub mod confine;
pub mod history;
mod ignores;
mod lang;
mod output;
pub mod read;
mod skipped;
mod walk;

pub use self::ignores::ignored_on_the_way;
pub use self::lang::{
    is_test_entry, language_for_path, language_named, DocStyle, Language, JAVA, KOTLIN, LANGUAGES,
    PYTHON,
};
pub use self::output::{
    check_distinct, check_folder_place, check_output, check_place, complete_last_line,
    end_last_line, fs_is_link, json_lines_with, json_object_with, open_output, open_outputs,
    open_outputs_checked, read_output, refuse_linked_folders, Inputs, Output, OutputMode,
};
pub use self::skipped::{SkipReason, Skipped};
pub use self::walk::{
    git_lines, is_test_path, walk, SourceFile, WalkOptions, WalkOutput, DEFAULT_MAX_FILE_BYTES,
};
