//! A patch seen against the base tree: each file's code lines and the functions they fall in,
//! found with the tree-sitter symbol tables of the file before and after the patch.

use std::collections::BTreeSet;
use std::path::Path;

use super::functions::{enclosing, FunctionRef};
use super::lines::{code_lines, CodeLine};
use super::patch::{apply, ChangeKind, FilePatch};
use crate::chunk::{parse_file, ChunkOptions, Symbol};
use crate::repo::{language_for_path, SourceFile};

/// One file of a patch, mapped onto the base tree.
#[derive(Debug, Clone)]
pub struct FileView {
    /// The parsed file patch.
    pub patch: FilePatch,
    /// Its changed code lines, in patch order.
    pub code_lines: Vec<CodeLine>,
    /// The functions (or classes) its code lines fall in; empty without a tree.
    pub functions: Vec<FunctionRef>,
}

/// A whole patch mapped onto the base tree.
#[derive(Debug, Clone, Default)]
pub struct PatchView {
    /// Its files, in patch order.
    pub files: Vec<FileView>,
}

impl PatchView {
    /// Maps `files` onto the base tree at `tree` (if any); what could not be mapped is
    /// described in `notes`, prefixed with `label` ("gold patch", "generated patch").
    pub fn new(
        files: Vec<FilePatch>,
        tree: Option<&Path>,
        label: &str,
        notes: &mut Vec<String>,
    ) -> Self {
        let files = files
            .into_iter()
            .map(|patch| view_file(patch, tree, label, notes))
            .collect();
        PatchView { files }
    }

    /// Every function touched, deduplicated, in (path, name) order.
    pub fn functions(&self) -> Vec<FunctionRef> {
        let set: BTreeSet<FunctionRef> = self
            .files
            .iter()
            .flat_map(|f| f.functions.iter().cloned())
            .collect();
        set.into_iter().collect()
    }

    /// The first changed code line, in patch order.
    pub fn first_code_line(&self) -> Option<&CodeLine> {
        self.files.iter().find_map(|f| f.code_lines.first())
    }

    /// The first changed code line in `path`, if the patch changes code there.
    pub fn first_code_line_in(&self, path: &str) -> Option<&CodeLine> {
        self.files
            .iter()
            .filter(|f| f.patch.path == path)
            .find_map(|f| f.code_lines.first())
    }
}

fn symbols_of(path: &str, text: &str) -> Option<Vec<Symbol>> {
    let language = language_for_path(path)?;
    let file = SourceFile {
        path: path.to_owned(),
        language,
        text: text.to_owned(),
        lossy: false,
    };
    Some(parse_file(&file, &ChunkOptions::default()).symbols)
}

fn view_file(
    patch: FilePatch,
    tree: Option<&Path>,
    label: &str,
    notes: &mut Vec<String>,
) -> FileView {
    let Some(tree) = tree else {
        let code_lines = code_lines(&patch, None, None);
        return FileView {
            patch,
            code_lines,
            functions: Vec::new(),
        };
    };
    let file_path = &patch.path;
    let base = if patch.is_new {
        Some(String::new())
    } else {
        let text =
            crate::repo::read::read_inside(tree, file_path, crate::repo::read::MAX_ISSUE_BYTES)
                .map(|b| String::from_utf8_lossy(&b).into_owned());
        if text.is_none() {
            notes.push(format!("{label}: {file_path} is not in the base tree"));
        }
        text
    };
    let new = base.as_deref().and_then(|b| {
        let applied = if patch.is_deleted { Some(String::new()) } else { apply(b, &patch) };
        if applied.is_none() {
            notes.push(format!("{label}: hunks of {file_path} do not match the base file; added lines placed by base position"));
        }
        applied
    });
    let code = code_lines(&patch, base.as_deref(), new.as_deref());
    let base_symbols = base
        .as_deref()
        .and_then(|t| symbols_of(file_path, t))
        .unwrap_or_default();
    let new_symbols = new.as_deref().and_then(|t| symbols_of(file_path, t));
    let mut functions: BTreeSet<FunctionRef> = BTreeSet::new();
    for line in &code {
        let symbol = match (line.kind, &new_symbols) {
            (ChangeKind::Removed, _) => enclosing(&base_symbols, line.line),
            (ChangeKind::Added, Some(symbols)) => enclosing(symbols, line.new_line),
            // Inserted between base lines `line - 1` and `line`: the line above decides first.
            (ChangeKind::Added, None) => enclosing(&base_symbols, line.line.saturating_sub(1))
                .or_else(|| enclosing(&base_symbols, line.line)),
        };
        let Some(symbol) = symbol else { continue };
        let in_base = base_symbols
            .iter()
            .find(|s| s.qualified == symbol.qualified && !s.in_function);
        functions.insert(FunctionRef {
            path: file_path.clone(),
            qualified: symbol.qualified.clone(),
            base_lines: in_base.map(|s| (s.start_line, s.end_line)),
        });
    }
    FileView {
        patch,
        code_lines: code,
        functions: functions.into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::patch::parse_patch;
    use super::*;

    const BASE: &str = "import os\n\n\nclass Cart:\n    \"\"\"A cart.\"\"\"\n\n    def total(self):\n        return sum(self.items)\n\n    def add(self, item):\n        self.items.append(item)\n";

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("shop")).unwrap();
        std::fs::write(dir.path().join("shop/cart.py"), BASE).unwrap();
        dir
    }

    #[test]
    fn changed_code_lines_map_to_methods_before_and_after_the_patch() {
        let dir = tree();
        let patch = "--- a/shop/cart.py\n+++ b/shop/cart.py\n@@ -5,7 +5,11 @@ class Cart:\n     \"\"\"A cart.\"\"\"\n \n     def total(self):\n-        return sum(self.items)\n+        return sum(i.price for i in self.items)\n+\n+    def count(self):\n+        # how many\n+        return len(self.items)\n \n     def add(self, item):\n         self.items.append(item)\n";
        let mut notes = Vec::new();
        let view = PatchView::new(
            parse_patch(patch).unwrap(),
            Some(dir.path()),
            "gold patch",
            &mut notes,
        );
        assert!(notes.is_empty(), "{notes:?}");
        let ids: Vec<_> = view
            .functions()
            .iter()
            .map(|f| (f.id(), f.base_lines))
            .collect();
        assert_eq!(
            ids,
            [
                ("shop/cart.py::Cart.count".into(), None),
                ("shop/cart.py::Cart.total".into(), Some((7, 8)))
            ]
        );
        assert_eq!(
            view.first_code_line().unwrap().text,
            "return sum(self.items)"
        );
        assert_eq!(view.first_code_line_in("shop/cart.py").unwrap().line, 8);
        assert!(view.first_code_line_in("other.py").is_none());
    }

    #[test]
    fn missing_files_and_mismatched_hunks_are_noted() {
        let dir = tree();
        let patch = "--- a/shop/none.py\n+++ b/shop/none.py\n@@ -1 +1 @@\n-a\n+b\n--- a/shop/cart.py\n+++ b/shop/cart.py\n@@ -8 +8 @@\n-        return 0\n+        return 1\n";
        let mut notes = Vec::new();
        let view = PatchView::new(
            parse_patch(patch).unwrap(),
            Some(dir.path()),
            "generated patch",
            &mut notes,
        );
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert_eq!(
            view.functions().len(),
            1,
            "removed line still maps onto the base file"
        );
        let no_tree = PatchView::new(
            parse_patch(patch).unwrap(),
            None,
            "generated patch",
            &mut notes,
        );
        assert!(no_tree.functions().is_empty());
        assert_eq!(no_tree.first_code_line().unwrap().text, "a");
    }
}
