//! Finding the source files of a repository: which languages, which files, and what was skipped.

mod ignores;
mod lang;
pub mod read;
mod walk;

pub use self::lang::{language_for_path, Language, LANGUAGES};
pub use self::walk::{
    is_test_path, walk, SkipReason, Skipped, SourceFile, WalkOptions, WalkOutput,
};
