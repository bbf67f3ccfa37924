//! A patch seen against the base tree: each file's hunks found where `git apply` would apply
//! them, its code lines, and what they touch, from the tree-sitter symbol tables of the file
//! before and after the patch: functions and methods of the base commit, functions the patch
//! adds, and class bodies outside any method.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use super::functions::FunctionRef;
use super::lines::{changed_lines, code_lines, CodeLine};
use super::patch::{apply_traced, locate_hunks, ChangeKind, FilePatch, Placement};
use crate::chunk::{documented_enclosing_by_line, parse_file, ChunkOptions, Symbol, SymbolKind};
use crate::repo::{language_for_path, SourceFile, DEFAULT_MAX_FILE_BYTES};

/// One file of a patch, mapped onto the base tree.
#[derive(Debug, Clone)]
pub struct FileView {
    /// The parsed file patch.
    pub patch: FilePatch,
    /// Its changed code lines, in patch order.
    pub code_lines: Vec<CodeLine>,
    /// Functions and methods of the base file that its code lines fall in; empty without a
    /// tree.
    pub functions: Vec<FunctionRef>,
    /// Functions, methods and classes the patch adds (not in the base file).
    pub added: Vec<FunctionRef>,
    /// Classes of the base file whose body outside any method its code lines change.
    pub class_edits: Vec<FunctionRef>,
    /// Its functions could not be read (the parse ran past its time budget): `functions`,
    /// `added` and `class_edits` say nothing.
    pub functions_unknown: bool,
}

/// A whole patch mapped onto the base tree.
#[derive(Debug, Clone, Default)]
pub struct PatchView {
    /// Its files, in patch order.
    pub files: Vec<FileView>,
}

/// Which changed lines place a patch on the functions they lie in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Touch {
    /// Code lines only ([`code_lines`]): the failure analysis, whose stages ask where a fix's
    /// code goes (as the analysis it reproduces does).
    Code,
    /// Every non-blank changed line, comments and docstrings included ([`changed_lines`]):
    /// gold functions, the functions a gold hunk touches.
    AnyLine,
}

impl PatchView {
    /// Maps `files` onto the base tree at `tree` (if any), placing them on functions by their
    /// code lines ([`Touch::Code`]); what could not be mapped is described in `notes`,
    /// prefixed with `label` ("gold patch", "generated patch").
    pub fn new(
        files: Vec<FilePatch>,
        tree: Option<&Path>,
        label: &str,
        notes: &mut Vec<String>,
    ) -> Self {
        Self::placed(files, tree, Touch::Code, label, notes)
    }

    /// [`PatchView::new`], placing the files on functions by the lines `touch` names.
    pub fn placed(
        files: Vec<FilePatch>,
        tree: Option<&Path>,
        touch: Touch,
        label: &str,
        notes: &mut Vec<String>,
    ) -> Self {
        let files = files
            .into_iter()
            .map(|patch| view_file(patch, tree, touch, label, notes))
            .collect();
        PatchView { files }
    }

    /// Whether the functions of every file are known (no parse ran past its time budget).
    pub fn functions_known(&self) -> bool {
        self.files.iter().all(|f| !f.functions_unknown)
    }

    /// Every base function or method touched, deduplicated, in (path, name) order.
    pub fn functions(&self) -> Vec<FunctionRef> {
        self.gather(|f| &f.functions)
    }

    /// Every function, method or class the patch adds, in (path, name) order.
    pub fn added(&self) -> Vec<FunctionRef> {
        self.gather(|f| &f.added)
    }

    /// Every base class whose body outside methods is changed, in (path, name) order.
    pub fn class_edits(&self) -> Vec<FunctionRef> {
        self.gather(|f| &f.class_edits)
    }

    fn gather(&self, part: impl Fn(&FileView) -> &Vec<FunctionRef>) -> Vec<FunctionRef> {
        let set: BTreeSet<FunctionRef> = self
            .files
            .iter()
            .flat_map(|f| part(f).iter().cloned())
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

/// The classes, functions and methods of `text` read as `path`'s language (`None` for a file
/// no grammar reads), and whether they are all there: a parse that ran past its time budget,
/// or that a stop cut short, gives none of them. Their lines are numbered as git numbers the
/// patch's (a carriage return ending a line on its own is a line end to the parser, not to git).
fn symbols_of(path: &str, text: &str) -> Option<(Vec<Symbol>, bool)> {
    let language = language_for_path(path)?;
    let file = SourceFile::new(path.to_owned(), language, text.to_owned(), false);
    let mut parsed = parse_file(&file, &ChunkOptions::default());
    let complete = !parsed.parse_too_slow && !crate::cancel::is_requested();
    if let Some(git) = crate::repo::git_lines(text) {
        let git_line = |line: usize| {
            line.checked_sub(1)
                .and_then(|i| git.get(i))
                .map_or(line, |l| *l)
        };
        for symbol in &mut parsed.symbols {
            symbol.start_line = git_line(symbol.start_line);
            symbol.end_line = git_line(symbol.end_line);
            symbol.body_line = symbol.body_line.map(git_line);
            symbol.doc_line = symbol.doc_line.map(git_line);
        }
    }
    Some((parsed.symbols, complete))
}

fn view_file(
    mut patch: FilePatch,
    tree: Option<&Path>,
    touch: Touch,
    label: &str,
    notes: &mut Vec<String>,
) -> FileView {
    // A file git renamed is seen under the path it had in the base commit, whose functions and
    // lines these are (a localization ranks the base tree's paths).
    if !patch.base_path.is_empty() {
        patch.path = std::mem::take(&mut patch.base_path);
    }
    let Some(tree) = tree else {
        return FileView {
            code_lines: code_lines(&patch, None, None),
            patch,
            functions: Vec::new(),
            added: Vec::new(),
            class_edits: Vec::new(),
            functions_unknown: false,
        };
    };
    let file_path = patch.path.clone();
    // A base source that is there but cannot be read (a FIFO, one too large) has functions no
    // one knows; one that is not there has none, and neither has a file no grammar reads (a
    // submodule's folder, a data file).
    let source = language_for_path(&file_path).is_some();
    let mut unreadable = false;
    let base = if patch.is_new {
        Some(String::new())
    } else {
        let limit = crate::repo::read::MAX_ISSUE_BYTES;
        match crate::repo::read::read_inside_or_why(tree, &file_path, limit) {
            Ok(Some(bytes)) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            Ok(None) => {
                notes.push(format!("{label}: {file_path} is not in the base tree"));
                None
            }
            Err(why) => {
                let unknown = if source {
                    ": its functions are not known"
                } else {
                    ""
                };
                notes.push(format!("{label}: {file_path} {}{unknown}", why.reason()));
                unreadable = source;
                None
            }
        }
    };
    if let Some(base) = base.as_deref().filter(|_| !patch.is_new) {
        let placements = locate_hunks(base, &mut patch);
        for (hunk, placement) in patch.hunks.iter().zip(&placements) {
            match placement {
                Placement::Unmatched => notes.push(format!(
                    "{label}: the hunk stated at line {} of {file_path} matches nowhere in the base file; its lines keep the stated numbers",
                    hunk.old_start
                )),
                Placement::Found(offset) if *offset != 0 => notes.push(format!(
                    "{label}: the hunk stated at line {} of {file_path} applies {offset:+} lines away, at line {}",
                    hunk.old_start.saturating_add_signed(-offset),
                    hunk.old_start
                )),
                Placement::Found(_) => {}
            }
        }
    }
    // The patched file, and the base line each of its lines was kept from (`None`: added).
    let (new, origin) = base
        .as_deref()
        .and_then(|b| {
            let applied = if patch.is_deleted {
                Some((String::new(), Vec::new()))
            } else {
                apply_traced(b, &patch)
            };
            if applied.is_none() {
                notes.push(format!("{label}: hunks of {file_path} do not match the base file; added lines placed by base position"));
            }
            applied
        })
        .unzip();
    let code = code_lines(&patch, base.as_deref(), new.as_deref());
    // A source larger than any the localizer reads is not parsed (a 15 MB one took 50 s and
    // 3.7 GB): no ranking can have listed its functions, so they are left unknown.
    let too_large = source
        && [&base, &new]
            .into_iter()
            .flatten()
            .any(|text| text.len() as u64 > DEFAULT_MAX_FILE_BYTES);
    let mut too_slow = false;
    let mut symbols = |text: Option<&str>| {
        let (symbols, complete) = symbols_of(&file_path, text.filter(|_| !too_large)?)?;
        too_slow |= !complete;
        Some(symbols)
    };
    let base_symbols = symbols(base.as_deref()).unwrap_or_default();
    let new_symbols = symbols(new.as_deref());
    if too_large {
        notes.push(format!(
            "{label}: {file_path} is larger than the {} MiB a source may be: its functions are not known",
            DEFAULT_MAX_FILE_BYTES >> 20
        ));
    } else if too_slow {
        notes.push(format!(
            "{label}: {file_path} took longer to parse than its time budget: its functions are not known"
        ));
    }
    let functions_unknown = too_large || unreadable || too_slow;
    // What each line lies in, and each name's base symbol, looked up once (scanning the
    // symbol tables for each code line took lines × symbols: 17 s for a 1 MB patch).
    let base_at = Holders::of(&base_symbols);
    let new_at = new_symbols.as_deref().map(Holders::of);
    let base_named = namesakes(&base_symbols);
    let new_named = new_symbols.as_deref().map(namesakes).unwrap_or_default();
    let new_text: Vec<&str> = new
        .as_deref()
        .map_or_else(Vec::new, |t| t.lines().collect());
    let base_text: Vec<&str> = base
        .as_deref()
        .map_or_else(Vec::new, |t| t.lines().collect());
    let kept = Kept {
        base: &base_named,
        new: &new_named,
        origin: origin.as_deref().unwrap_or_default(),
        text: &new_text,
    };
    // Each patched definition's base one, found once: finding it reads the definition's lines,
    // and a review's patch adding 32,000 lines to an overloaded method took 58 s.
    let mut counterparts: HashMap<*const Symbol, Option<&Symbol>> = HashMap::new();
    let [mut functions, mut added, mut classes] = [(); 3].map(|()| BTreeSet::new());
    let touching = match touch {
        Touch::Code => None,
        Touch::AnyLine => Some(changed_lines(&patch)),
    };
    for line in touching.as_ref().unwrap_or(&code) {
        // A base line lies in a base symbol; a line of the patched file in a symbol of it,
        // which is a base symbol only where the patch kept it.
        let in_base = match (line.kind, &new_at) {
            (ChangeKind::Removed, _) => base_at.at(line.line).map(|s| (s, Some(s))),
            (ChangeKind::Added, Some(new_at)) => new_at.at(line.new_line).map(|s| {
                let base = *counterparts
                    .entry(std::ptr::from_ref(s))
                    .or_insert_with(|| kept.counterpart(s));
                (s, base)
            }),
            // Inserted between base lines `line - 1` and `line`: the line above decides first.
            (ChangeKind::Added, None) => base_at
                .at(line.line.saturating_sub(1))
                .or_else(|| base_at.at(line.line))
                .map(|s| (s, Some(s))),
        };
        let Some((symbol, in_base)) = in_base else {
            continue;
        };
        // An added line of a kept definition's Javadoc that reads as its Javadoc read before
        // the patch is a move (a diff may keep the old comment for a definition added above
        // and add its copy), not an edit of its documentation.
        if line.kind == ChangeKind::Added
            && line.new_line < symbol.start_line
            && in_base.is_some_and(|b| doc_lines(&new_text, symbol) == doc_lines(&base_text, b))
        {
            continue;
        }
        let reference = FunctionRef {
            path: file_path.clone(),
            qualified: symbol.qualified.clone(),
            base_lines: in_base.map(|s| (s.start_line, s.end_line)),
        };
        match in_base.map(|s| s.kind) {
            None => added.insert(reference),
            Some(SymbolKind::Class) => classes.insert(reference),
            Some(SymbolKind::Function | SymbolKind::Method) => functions.insert(reference),
        };
    }
    FileView {
        patch,
        code_lines: code,
        functions: functions.into_iter().collect(),
        added: added.into_iter().collect(),
        class_edits: classes.into_iter().collect(),
        functions_unknown,
    }
}

/// A symbol table with [`crate::chunk::enclosing`] of each line at hand, a definition's lines
/// beginning at its Javadoc or KDoc ([`documented_enclosing_by_line`]): an edit of the
/// documentation alone touches what it documents, as a Python docstring's edit does.
struct Holders<'a> {
    symbols: &'a [Symbol],
    by_line: Vec<Option<u32>>,
}

impl<'a> Holders<'a> {
    fn of(symbols: &'a [Symbol]) -> Self {
        Holders {
            symbols,
            by_line: documented_enclosing_by_line(symbols),
        }
    }

    /// What [`crate::chunk::enclosing`] gives for `line`.
    fn at(&self, line: usize) -> Option<&'a Symbol> {
        let held = self.by_line.get(line).copied().flatten()?;
        Some(&self.symbols[held as usize])
    }
}

/// Each qualified name's definitions not nested in a function, in file order.
fn namesakes(symbols: &[Symbol]) -> HashMap<&str, Vec<&Symbol>> {
    let mut named: HashMap<&str, Vec<&Symbol>> = HashMap::new();
    for symbol in symbols.iter().filter(|s| !s.in_function) {
        named
            .entry(symbol.qualified.as_str())
            .or_default()
            .push(symbol);
    }
    named
}

/// What a patch kept of a file: its definitions by name before and after, the base line each
/// line of the patched file was kept from, and that file's lines.
struct Kept<'a, 'b> {
    base: &'a HashMap<&'b str, Vec<&'b Symbol>>,
    new: &'a HashMap<&'a str, Vec<&'a Symbol>>,
    origin: &'a [Option<usize>],
    text: &'a [&'a str],
}

impl<'b> Kept<'_, 'b> {
    /// The base definition `symbol` of the patched file is, `None` for one the patch adds. A
    /// name defined once before and once after the patch is the same definition, whatever the
    /// patch rewrote of it (its header too). A name defined more than once on either side (an
    /// overload, a property's setter, a definition under two branches) is the base definition
    /// holding a kept line of `symbol` that names it (its header, a recursive call); failing
    /// that, the namesake in the same place where the patch added or removed none, else new.
    fn counterpart(&self, symbol: &Symbol) -> Option<&'b Symbol> {
        let before = self.base.get(symbol.qualified.as_str())?;
        let after = self
            .new
            .get(symbol.qualified.as_str())
            .map_or(&[][..], Vec::as_slice);
        if before.len() == 1 && after.len() == 1 {
            return Some(before[0]);
        }
        let names_it = |line: &usize| {
            self.text
                .get(line - 1)
                .is_some_and(|text| names(text, &symbol.name))
        };
        let kept = (symbol.start_line..=symbol.end_line)
            .filter(names_it)
            .find_map(|line| self.origin.get(line - 1).copied().flatten());
        if let Some(line) = kept {
            return before
                .iter()
                .find(|b| b.start_line <= line && line <= b.end_line)
                .copied();
        }
        let place = after.iter().position(|s| std::ptr::eq(*s, symbol))?;
        (before.len() == after.len()).then(|| before[place])
    }
}

/// The lines of `symbol`'s Javadoc or KDoc in `text` (a file's lines), empty where it has none.
fn doc_lines<'t>(text: &'t [&'t str], symbol: &Symbol) -> &'t [&'t str] {
    let doc = symbol.documented_start();
    text.get(doc.saturating_sub(1)..symbol.start_line.saturating_sub(1))
        .unwrap_or_default()
}

/// Whether `name` stands in `text` as a whole identifier.
fn names(text: &str, name: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    text.match_indices(name)
        .any(|(at, _)| !text[..at].ends_with(ident) && !text[at + name.len()..].starts_with(ident))
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
        assert_eq!(ids, [("shop/cart.py::Cart.total".into(), Some((7, 8)))]);
        let added: Vec<_> = view.added().iter().map(FunctionRef::id).collect();
        assert_eq!(
            added,
            ["shop/cart.py::Cart.count"],
            "a new method is not a base function"
        );
        assert!(view.class_edits().is_empty());
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
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(
            notes[1].contains("stated at line 8 of shop/cart.py matches nowhere"),
            "{notes:?}"
        );
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

    /// Each code line's function was found by scanning the symbol tables (and its base symbol
    /// by name): a patch rewriting each of 40,000 functions took lines × symbols, over 20 s.
    #[test]
    fn a_patch_touching_many_functions_maps_its_lines_at_once() {
        use std::fmt::Write as _;

        let (mut base, mut body) = (String::new(), String::new());
        let n = 40_000;
        for i in 0..n {
            let _ = write!(base, "def f{i}():\n    return {i}\n");
            let _ = write!(
                body,
                " def f{i}():\n-    return {i}\n+    return {}\n",
                i + 1
            );
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("alt.py"), base).unwrap();
        let patch = format!(
            "--- a/alt.py\n+++ b/alt.py\n@@ -1,{0} +1,{0} @@\n{body}",
            2 * n
        );
        let mut notes = Vec::new();
        let view = PatchView::new(
            parse_patch(&patch).unwrap(),
            Some(dir.path()),
            "generated patch",
            &mut notes,
        );
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(view.functions().len(), n);
    }

    /// The table answers as `enclosing` does for every line: closures roll up, the innermost
    /// class or method wins, module-level lines have none.
    #[test]
    fn the_line_table_agrees_with_enclosing() {
        let (symbols, _) = symbols_of("shop/cart.py", BASE).unwrap();
        let nested = "class A:\n    x = 1\n\n    def m(self):\n        def inner():\n            return 1\n        class B:\n            def n(self):\n                pass\n        return inner\n\n\ndef top():\n    pass\n";
        let (more, _) = symbols_of("a.py", nested).unwrap();
        for (symbols, lines) in [
            (&symbols, BASE.lines().count()),
            (&more, nested.lines().count()),
        ] {
            let table = Holders::of(symbols);
            for line in 0..lines + 3 {
                let scan = crate::chunk::enclosing(symbols, (line, line)).map(|i| &symbols[i]);
                let fast = table.at(line);
                assert_eq!(
                    fast.map(|s| &s.qualified),
                    scan.map(|s| &s.qualified),
                    "line {line}"
                );
            }
        }
    }
}
