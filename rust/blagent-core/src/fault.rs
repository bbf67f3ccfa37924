//! A test-only fault injector: unit tests name repository trees whose indexing panics, to check
//! that a panic in one instance becomes that instance's failure in `batch` and `eval` while the
//! others go on. Outside `cfg(test)` [`check`] is an empty function.

#[cfg(test)]
use std::sync::Mutex;

/// Trees (by their last path component) whose indexing panics.
#[cfg(test)]
static PANIC_IN: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Makes indexing a tree whose last component is `name` panic (tests only).
#[cfg(test)]
pub(crate) fn panic_in(name: &str) {
    PANIC_IN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(name.to_owned());
}

/// Panics when `tree` is one [`panic_in`] named (tests only; a no-op otherwise).
#[cfg(test)]
pub(crate) fn check(tree: &std::path::Path) {
    let named = PANIC_IN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .any(|name| tree.file_name().is_some_and(|n| n == name.as_str()));
    assert!(!named, "fault injected while indexing {}", tree.display());
}

/// Panics when `tree` is one `panic_in` named (tests only; a no-op otherwise).
#[cfg(not(test))]
#[inline(always)]
pub(crate) fn check(_tree: &std::path::Path) {}
