//! Function-level scoring: the functions and methods a localization ranks (its entities)
//! against the gold functions of each instance, the functions and methods of the base commit
//! whose lines the gold patch touches, mapped as the failure analysis maps them
//! ([`crate::analysis::PatchView`]: hunks placed where `git apply` finds them).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::analysis::{parse_patch, FunctionRef, PatchView, Touch};
use crate::dataset::Instance;
use crate::dataset::{GroupedAccumulator, Metrics};
use crate::retrieve::Entity;

/// `path::Class.method` of every function and method of the base tree at `tree` whose lines
/// the patch touches (any non-blank changed line, a docstring's or a comment's too:
/// [`Touch::AnyLine`]), in (path, name) order; empty when the patch touches only module-level
/// code, class bodies or new functions. `None` when they are not known: the patch does not
/// parse, or a patched file's parse ran past its time budget.
pub fn gold_functions(patch: &str, tree: &Path) -> Option<Vec<String>> {
    let files = parse_patch(patch).ok()?;
    let mut notes = Vec::new();
    let view = PatchView::placed(files, Some(tree), Touch::AnyLine, "gold patch", &mut notes);
    // Two namesakes touched (overloads) are one id.
    let ids: BTreeSet<String> = view.functions().iter().map(FunctionRef::id).collect();
    view.functions_known().then(|| ids.into_iter().collect())
}

/// The function-level ranking of a result: its function and method entities in their order
/// (class entities are left out, as gold functions are never classes).
pub fn ranked_functions(entities: &[Entity]) -> Vec<String> {
    entities
        .iter()
        .filter(|e| e.kind != "class")
        .map(|e| e.id.clone())
        .collect()
}

/// Function-level metrics of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionReport {
    /// All instances with gold functions.
    pub overall: Metrics,
    /// Per `owner/name`.
    pub per_repo: BTreeMap<String, Metrics>,
    /// Per language, for datasets that name each instance's language (LCA).
    #[serde(default)]
    pub per_language: BTreeMap<String, Metrics>,
    /// Instances left out: the gold patch touches no function or method of the base commit.
    pub no_gold_functions: Vec<String>,
    /// Instances left out: the gold patch does not parse, or a patched file took longer to
    /// parse than its time budget, so their functions are not known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions_not_known: Vec<String>,
}

/// Sums function-level rankings; [`FunctionAccumulator::finish`] averages them.
#[derive(Debug, Default)]
pub struct FunctionAccumulator {
    metrics: GroupedAccumulator,
    no_gold: Vec<String>,
    not_known: Vec<String>,
}

impl FunctionAccumulator {
    /// Adds one instance's ranked functions against its gold functions (`None`: not known).
    pub fn add(&mut self, instance: &Instance, ranked: &[String], gold: Option<&[String]>) {
        let Some(gold) = gold else {
            self.not_known.push(instance.instance_id.clone());
            return;
        };
        if gold.is_empty() {
            self.no_gold.push(instance.instance_id.clone());
            return;
        }
        self.metrics
            .add(&instance.repo, &instance.language, ranked, gold);
    }

    /// The means, and the instances left out.
    pub fn finish(self) -> FunctionReport {
        let metrics = self.metrics.finish();
        FunctionReport {
            overall: metrics.overall,
            per_repo: metrics.per_repo,
            per_language: metrics.per_language,
            no_gold_functions: self.no_gold,
            functions_not_known: self.not_known,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gold_functions_are_the_base_functions_a_hunk_touches() {
        let dir = tempfile::tempdir().unwrap();
        let base = "def helper():\n    return 1\n\n\nclass Cart:\n    def total(self):\n        return 0\n";
        std::fs::write(dir.path().join("cart.py"), base).unwrap();
        let patch = "--- a/cart.py\n+++ b/cart.py\n@@ -6,2 +6,5 @@ class Cart:\n     def total(self):\n-        return 0\n+        return sum(self.items)\n+\n+    def count(self):\n+        return len(self.items)\n";
        assert_eq!(
            gold_functions(patch, dir.path()).unwrap(),
            ["cart.py::Cart.total"]
        );
        // Found by a review: a malformed gold patch was counted as touching no function.
        assert_eq!(gold_functions("@@ -1 +1 @@\n x\n", dir.path()), None);
        assert_eq!(gold_functions("not a patch", dir.path()), Some(Vec::new()));
        // Found by a review: a file parsed past its time budget read as touching no function.
        let garbled = format!("{base}{}", "}{)(][><\n".repeat(20_000));
        std::fs::write(dir.path().join("cart.py"), garbled).unwrap();
        assert_eq!(gold_functions(patch, dir.path()), None);
    }

    /// Found by a review: a gold file that is there but cannot be read (a FIFO, one larger
    /// than any read) was "not in the base tree", so the instance touched no function.
    #[cfg(unix)]
    #[test]
    fn a_gold_file_that_cannot_be_read_has_functions_not_known() {
        let dir = tempfile::tempdir().unwrap();
        let patch =
            "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n";
        std::fs::write(dir.path().join("m.py"), "def f():\n    return 1\n").unwrap();
        assert_eq!(gold_functions(patch, dir.path()).unwrap(), ["m.py::f"]);
        std::fs::remove_file(dir.path().join("m.py")).unwrap();
        assert_eq!(
            gold_functions(patch, dir.path()),
            Some(Vec::new()),
            "not there"
        );
        crate::repo::read::mkfifo(&dir.path().join("m.py"));
        assert_eq!(gold_functions(patch, dir.path()), None, "a FIFO");
        std::fs::remove_file(dir.path().join("m.py")).unwrap();
        let huge = "def f():\n    return 1\n".repeat(1 << 20);
        std::fs::write(dir.path().join("m.py"), huge).unwrap();
        assert_eq!(
            gold_functions(patch, dir.path()),
            None,
            "past the read bound"
        );
        // Found by a review of that change: a submodule's folder, which no grammar reads, made
        // the instance's functions unknown.
        std::fs::write(dir.path().join("m.py"), "def f():\n    return 1\n").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let bump = format!(
            "{patch}--- a/sub\n+++ b/sub\n@@ -1 +1 @@\n-Subproject commit 1\n+Subproject commit 2\n"
        );
        assert_eq!(gold_functions(&bump, dir.path()).unwrap(), ["m.py::f"]);
    }

    /// A tree holding `Shop.java` ([`SHOP`]).
    fn shop_tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Shop.java"), SHOP).unwrap();
        dir
    }

    const SHOP: &str = "package shop;\n\nclass Shop {\n    /**\n     * The total.\n     */\n    int total(int a) {\n        return a;\n    }\n\n    int total(String s) {\n        return s.length();\n    }\n}\n";

    /// Found by a review: an edit of a Java method's Javadoc alone touched no function (a
    /// Python docstring's edit touches its function).
    #[test]
    fn a_javadoc_edit_touches_the_method_it_documents() {
        let dir = shop_tree();
        let patch = "--- a/Shop.java\n+++ b/Shop.java\n@@ -2,7 +2,7 @@ package shop;\n \n class Shop {\n     /**\n-     * The total.\n+     * The total, in cents.\n      */\n     int total(int a) {\n         return a;\n";
        assert_eq!(
            gold_functions(patch, dir.path()).unwrap(),
            ["Shop.java::Shop.total"]
        );
    }

    /// Found by a review: a definition the patch adds under a name the file already defines (an
    /// overload, a property's setter) counted as an edit of the existing one; an edit of either
    /// of two namesakes is one id.
    #[test]
    fn an_added_namesake_is_not_an_edit_of_the_existing_definition() {
        let dir = shop_tree();
        let overload = "--- a/Shop.java\n+++ b/Shop.java\n@@ -11,4 +11,8 @@ class Shop {\n     int total(String s) {\n         return s.length();\n     }\n+\n+    int total(CharSequence s) {\n+        return s.length();\n+    }\n }\n";
        assert_eq!(
            gold_functions(overload, dir.path()).unwrap(),
            Vec::<String>::new()
        );
        let both = overload.replace(
            "@@ -11,4 +11,8 @@ class Shop {\n     int total(String s) {\n         return s.length();\n",
            "@@ -11,4 +11,8 @@ class Shop {\n     int total(String s) {\n-        return s.length();\n+        return s.trim().length();\n",
        );
        assert_eq!(
            gold_functions(&both, dir.path()).unwrap(),
            ["Shop.java::Shop.total"],
            "the edited overload is touched, the added one is not"
        );
        // Found by a review of the fix: an overload added before the existing one, with a copy
        // of its Javadoc, as a diff that keeps the old Javadoc as context (git's myers without
        // the indent heuristic): the kept Javadoc named `total` in its prose.
        let base = "class Shop {\n    /**\n     * The total.\n     */\n    int total(String s) {\n        return s.length();\n    }\n}\n";
        std::fs::write(dir.path().join("S.java"), base).unwrap();
        let before = "--- a/S.java\n+++ b/S.java\n@@ -2,6 +2,13 @@ class Shop {\n     /**\n      * The total.\n      */\n+    int total(int a) {\n+        return a;\n+    }\n+\n+    /**\n+     * The total.\n+     */\n     int total(String s) {\n         return s.length();\n     }\n";
        assert_eq!(
            gold_functions(before, dir.path()).unwrap(),
            Vec::<String>::new()
        );
        let base = "class Box:\n    @property\n    def size(self):\n        return self._size\n\n    def other(self):\n        return 1\n";
        std::fs::write(dir.path().join("m.py"), base).unwrap();
        let setter = "--- a/m.py\n+++ b/m.py\n@@ -3,5 +3,9 @@ class Box:\n     def size(self):\n         return self._size\n \n+    @size.setter\n+    def size(self, value):\n+        self._size = value\n+\n     def other(self):\n         return 1\n";
        assert_eq!(
            gold_functions(setter, dir.path()).unwrap(),
            Vec::<String>::new()
        );
        let getter = setter.replace("-3,5 +3,9", "-3,5 +3,10").replace(
            "         return self._size\n \n+    @size",
            "-        return self._size\n+        return self._size or 0\n+        # sized\n \n+    @size",
        );
        assert_eq!(
            gold_functions(&getter, dir.path()).unwrap(),
            ["m.py::Box.size"]
        );
    }

    /// Found by a review: a lone carriage return is a line end to the parser, not to git, and
    /// the functions of such a file were placed on the patch's lines by the parser's count (a
    /// patch on `second` gave `first`).
    #[test]
    fn a_patch_on_a_file_with_a_lone_carriage_return_touches_the_right_function() {
        let dir = tempfile::tempdir().unwrap();
        let patch = "--- a/m.py\n+++ b/m.py\n@@ -4,2 +4,2 @@\n-def second():\n+def second(x):\n     return 2\n";
        for (base, hunk_at) in [
            (
                "# a\rb\ndef first():\n    return 1\ndef second():\n    return 2\n",
                4,
            ),
            (
                "# a\r\r\ndef first():\n    return 1\ndef second():\n    return 2\n",
                4,
            ),
        ] {
            std::fs::write(dir.path().join("m.py"), base).unwrap();
            let patch = patch.replace("-4,2 +4,2", &format!("-{hunk_at},2 +{hunk_at},2"));
            assert_eq!(
                gold_functions(&patch, dir.path()).unwrap(),
                ["m.py::second"],
                "{base:?}"
            );
        }
        let touching_c =
            "--- a/m.py\n+++ b/m.py\n@@ -2,2 +2,2 @@\n-def c():\n+def c(x):\n     return 3\n";
        std::fs::write(
            dir.path().join("m.py"),
            "def b():\r    return 2\r\r\ndef c():\n    return 3\n",
        )
        .unwrap();
        assert_eq!(gold_functions(touching_c, dir.path()).unwrap(), ["m.py::c"]);
    }

    /// Found by a review: a hunk that edits only a function's docstring or a comment in it
    /// counted as touching no function (the instance left the function metrics), where the
    /// gold functions are those a gold hunk touches.
    #[test]
    fn a_docstring_or_comment_edit_touches_its_function() {
        let dir = tempfile::tempdir().unwrap();
        let base = "def helper():\n    \"\"\"Help.\n\n    More text.\n    \"\"\"\n    return 1\n\n\nclass Widget:\n    def render(self):\n        # render it\n        return 2\n";
        std::fs::write(dir.path().join("mod.py"), base).unwrap();
        let docstring = "--- a/mod.py\n+++ b/mod.py\n@@ -3,3 +3,3 @@ def helper():\n \n-    More text.\n+    More words.\n     \"\"\"\n";
        assert_eq!(
            gold_functions(docstring, dir.path()).unwrap(),
            ["mod.py::helper"]
        );
        let comment = "--- a/mod.py\n+++ b/mod.py\n@@ -10,3 +10,3 @@ class Widget:\n     def render(self):\n-        # render it\n+        # draw it\n         return 2\n";
        assert_eq!(
            gold_functions(comment, dir.path()).unwrap(),
            ["mod.py::Widget.render"]
        );
        // Found by a review: a renamed and edited file had no gold function (its base was
        // read at the new path); its functions are the base commit's, under the old path.
        std::fs::create_dir(dir.path().join("pkg")).unwrap();
        std::fs::write(
            dir.path().join("pkg/old.py"),
            "def doomed():\n    return 1\n",
        )
        .unwrap();
        let renamed = "diff --git a/pkg/old.py b/pkg/new.py\nsimilarity index 80%\n\
            rename from pkg/old.py\nrename to pkg/new.py\n--- a/pkg/old.py\n+++ b/pkg/new.py\n\
            @@ -1,2 +1,2 @@\n def doomed():\n-    return 1\n+    return 2\n";
        assert_eq!(
            gold_functions(renamed, dir.path()).unwrap(),
            ["pkg/old.py::doomed"]
        );
        // Found by the review of that fix: only git's `rename from` says a file was renamed;
        // a `diff -u` from a backup (`--- mod.py.orig`) and a copy keep the new path.
        let backup = "--- mod.py.orig\t2024-01-01 00:00:00\n+++ mod.py\t2024-01-02 00:00:00\n\
            @@ -3,3 +3,3 @@ def helper():\n \n-    More text.\n+    More words.\n     \"\"\"\n";
        assert_eq!(
            gold_functions(backup, dir.path()).unwrap(),
            ["mod.py::helper"]
        );
        let copy = "diff --git a/mod.py b/mod2.py\nsimilarity index 90%\ncopy from mod.py\n\
            copy to mod2.py\n--- a/mod.py\n+++ b/mod2.py\n@@ -3,3 +3,3 @@ def helper():\n \n\
            -    More text.\n+    More words.\n     \"\"\"\n";
        assert_eq!(
            gold_functions(copy, dir.path()).unwrap(),
            Vec::<String>::new()
        );
        // A blank line added between two functions touches neither.
        let blank =
            "--- a/mod.py\n+++ b/mod.py\n@@ -6,2 +6,3 @@ def helper():\n     return 1\n+\n \n";
        assert_eq!(
            gold_functions(blank, dir.path()).unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn instances_without_gold_functions_are_left_out_and_named() {
        let mut acc = FunctionAccumulator::default();
        let one = |id: &str| Instance {
            instance_id: id.into(),
            repo: "a/b".into(),
            ..Instance::default()
        };
        let ranked = vec!["f.py::g".to_owned(), "f.py::h".to_owned()];
        acc.add(&one("x"), &ranked, Some(&["f.py::h".to_owned()]));
        acc.add(&one("y"), &ranked, Some(&[]));
        acc.add(&one("z"), &ranked, None);
        let report = acc.finish();
        assert_eq!(report.overall.instances, 1);
        assert!((report.overall.mrr - 0.5).abs() < 1e-12);
        assert_eq!(report.no_gold_functions, ["y"]);
        assert_eq!(report.functions_not_known, ["z"]);
        assert_eq!(report.per_repo["a/b"].instances, 1);
        assert!(report.per_language.is_empty());
    }

    #[test]
    fn instances_that_name_a_language_are_also_grouped_by_it() {
        let mut acc = FunctionAccumulator::default();
        let task = |id: &str, language: &str| Instance {
            instance_id: id.into(),
            repo: "o/r".into(),
            language: language.into(),
            ..Instance::default()
        };
        let ranked = vec!["A.kt::a".to_owned(), "B.java::B.b".to_owned()];
        acc.add(&task("k", "kt"), &ranked, Some(&["A.kt::a".to_owned()]));
        acc.add(
            &task("j", "java"),
            &ranked,
            Some(&["B.java::B.b".to_owned()]),
        );
        let report = acc.finish();
        assert!((report.per_language["kt"].mrr - 1.0).abs() < 1e-12);
        assert!((report.per_language["java"].mrr - 0.5).abs() < 1e-12);
        assert_eq!(report.per_repo["o/r"].instances, 2);
    }
}
