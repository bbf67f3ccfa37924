use super::*;
use crate::index::IndexOptions;

const MODULE: &str = r#"# Copyright 2020 The Authors
# Licensed under the MIT licence.

"""Pricing rules."""
import os
from decimal import (
    Decimal,
    ROUND_HALF_UP,
)
from x import a, \
    b

RATE = Decimal("0.1")


class Pricer:
    """Prices things."""

    def total(self, items):
        return sum(items)
"#;

fn index_with(files: &[(&str, &str)]) -> (tempfile::TempDir, RepoIndex) {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let index = RepoIndex::build(dir.path(), &IndexOptions::default()).unwrap();
    (dir, index)
}

#[test]
fn hides_licence_header_and_imports_only() {
    let hidden = hidden_lines(MODULE);
    let shown: Vec<&str> = MODULE
        .lines()
        .zip(&hidden)
        .filter(|(_, &h)| !h)
        .map(|(l, _)| l)
        .collect();
    assert_eq!(shown[0], "\"\"\"Pricing rules.\"\"\"", "{shown:?}");
    assert!(shown.contains(&"RATE = Decimal(\"0.1\")"));
    assert!(!shown.iter().any(|l| l.contains("import")
        || l.contains("ROUND_HALF_UP")
        || l.trim() == "b"
        || l.contains("Licensed")));
    assert!(shown.contains(&"class Pricer:"));
    let plain = "\"\"\"Docs.\"\"\"\nx = 1\n";
    assert!(hidden_lines(plain).iter().all(|h| !h), "no licence: kept");
}

#[test]
fn views_windows_with_offsets_to_page_on() {
    let long: String = (0..300).fold(String::new(), |s, i| s + &format!("VALUE_{i} = {i}\n"));
    let (_dir, index) = index_with(&[("pkg/pricing.py", MODULE), ("pkg/long.py", &long)]);
    let first = view_file(&index, "pkg/long.py", 0, 64).unwrap();
    assert!(first.starts_with("pkg/long.py (300 lines"), "{first}");
    assert!(approx_tokens(&first) <= 64 + 20, "{}", first.len());
    let next: usize = first
        .rsplit("next offset: ")
        .next()
        .and_then(|s| s.trim_end().trim_end_matches(')').parse().ok())
        .unwrap();
    let second = view_file(&index, "long.py", next, 64).unwrap();
    assert!(
        second.contains(&format!("{next:>4} VALUE_{} =", next - 1)),
        "{second}"
    );
    let end = view_file(&index, "pkg/long.py", 299, 64).unwrap();
    assert!(end.ends_with("(end of file)\n"), "{end}");
    assert!(view_file(&index, "pkg/long.py", 999, 64)
        .unwrap()
        .contains("nothing to show"));
    let pricing = view_file(&index, "pkg/pricing.py", 0, 512).unwrap();
    assert!(
        !pricing.contains("import os")
            && !pricing.contains("Decimal,")
            && pricing.contains("  19     def total"),
        "{pricing}"
    );
}

#[test]
fn tools_refuse_escapes_and_unindexed_files() {
    let (dir, index) = index_with(&[("pkg/pricing.py", MODULE), ("notes.txt", "secret")]);
    let skeleton = read_skeleton(&index, "pricing.py", 100).unwrap();
    assert!(
        skeleton.starts_with("pkg/pricing.py:\nclass Pricer:"),
        "{skeleton}"
    );
    for bad in [
        "../x.py",
        "/etc/passwd",
        "pkg/%2e%2e/x.py",
        "pkg\\pricing.py",
        "~/x.py",
    ] {
        assert!(read_skeleton(&index, bad, 100)
            .unwrap_err()
            .contains("refused"));
        assert!(view_file(&index, bad, 0, 100)
            .unwrap_err()
            .contains("refused"));
    }
    let err = view_file(&index, "notes.txt", 0, 100).unwrap_err();
    assert!(err.contains("no file"), "not indexed: {err}");
    assert!(view_readme(&index, 100).unwrap_err().contains("no README"));
    std::fs::write(dir.path().join("README.md"), "# Shop\nSells things.\n").unwrap();
    assert_eq!(view_readme(&index, 100).unwrap(), "# Shop\nSells things.\n");
}

#[cfg(unix)]
#[test]
fn a_readme_linking_outside_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.md"), "secret").unwrap();
    let (dir, index) = index_with(&[("pkg/pricing.py", MODULE)]);
    std::os::unix::fs::symlink(
        outside.path().join("secret.md"),
        dir.path().join("README.md"),
    )
    .unwrap();
    assert!(view_readme(&index, 100)
        .unwrap_err()
        .contains("outside the repository"));
}

/// Found by a review: `README.md -> .git/config` sent the remote's token to the endpoint.
#[cfg(unix)]
#[test]
fn a_readme_linking_to_a_hidden_file_is_not_shown() {
    let (dir, index) = index_with(&[
        ("pkg/pricing.py", MODULE),
        (".git/config", "[remote] url = https://alice:TOKEN@h/r"),
        ("docs/README.md", "# Shop\nPrices things."),
    ]);
    let readme = dir.path().join("README.md");
    std::os::unix::fs::symlink(".git/config", &readme).unwrap();
    let refused = view_readme(&index, 100).unwrap_err();
    assert!(
        refused.contains("hidden") && !refused.contains("TOKEN"),
        "{refused}"
    );
    std::fs::remove_file(&readme).unwrap();
    std::os::unix::fs::symlink("docs/README.md", &readme).unwrap();
    assert!(view_readme(&index, 100).unwrap().contains("Prices things"));
    // Found by a later review: a link to an ignored, unindexed file (`secrets.py`, listed in
    // `.gitignore`) went to the endpoint; a link is followed only to another README.
    std::fs::write(dir.path().join("secrets.py"), "KEY = 'CANARY'").unwrap();
    std::fs::remove_file(&readme).unwrap();
    std::os::unix::fs::symlink("secrets.py", &readme).unwrap();
    let refused = view_readme(&index, 100).unwrap_err();
    assert!(
        refused.contains("not a README") && !refused.contains("CANARY"),
        "{refused}"
    );
}

/// Found by a review: a README under an ignored folder (`.gitignore`, `.git/info/exclude`), or
/// an ignored README at the root, went to the endpoint.
#[cfg(unix)]
#[test]
fn an_ignored_readme_is_not_shown() {
    let (dir, index) = index_with(&[
        ("pkg/pricing.py", MODULE),
        ("secret/README.md", "SECRET_IGNORED"),
        ("priv/README.txt", "SECRET_EXCLUDED"),
        ("docs/README.md", "# Shop\nPrices things."),
        (".gitignore", "secret/\n"),
        (".git/info/exclude", "priv/\n"),
    ]);
    let readme = dir.path().join("README.md");
    for target in ["secret/README.md", "priv/README.txt"] {
        std::os::unix::fs::symlink(target, &readme).unwrap();
        let refused = view_readme(&index, 100).unwrap_err();
        assert!(
            refused.contains("ignored") && !refused.contains("SECRET"),
            "{target}: {refused}"
        );
        std::fs::remove_file(&readme).unwrap();
    }
    std::os::unix::fs::symlink("docs/README.md", &readme).unwrap();
    assert!(view_readme(&index, 100).unwrap().contains("Prices things"));
    std::fs::remove_file(&readme).unwrap();
    std::fs::write(&readme, "SECRET_ROOT_IGNORED").unwrap();
    assert_eq!(view_readme(&index, 100).unwrap(), "SECRET_ROOT_IGNORED");
    std::fs::write(dir.path().join(".gitignore"), "secret/\nREADME.md\n").unwrap();
    let refused = view_readme(&index, 100).unwrap_err();
    assert!(
        refused.contains("ignored") && !refused.contains("SECRET"),
        "{refused}"
    );
    // Found by the review of this fix: the README a repository ships beside an ignored one
    // is shown.
    std::fs::write(dir.path().join("README.rst"), "Shop\n====\n").unwrap();
    assert_eq!(view_readme(&index, 100).unwrap(), "Shop\n====\n");
}

#[test]
fn skeletons_are_truncated_and_bm25_ranks_matching_files() {
    let many: String = (0..80).fold(String::new(), |s, i| {
        s + &format!(
            "def function_{i}(a, b):
    return a

"
        )
    });
    let (_dir, index) = index_with(&[
        ("pkg/pricing.py", MODULE),
        ("pkg/many.py", &many),
        ("pkg/other.py", "def unrelated():\n    pass\n"),
    ]);
    let skeleton = read_skeleton(&index, "pkg/many.py", 50).unwrap();
    assert!(skeleton.contains("more lines)") && approx_tokens(&skeleton) <= 60);
    let top = bm25_topk(&index, "Pricer total", 10);
    assert_eq!(index.files[top[0].0].path(), "pkg/pricing.py");
    assert!(top
        .iter()
        .all(|&(f, _)| index.files[f].path() != "pkg/other.py"));
    assert_eq!(bm25_topk(&index, "function", 1).len(), 1);
}

/// A window shows at least one line, and showed it whole: a 2 MB line of generated code went to
/// the model as one 2 MB message. It is cut to the window, and the next offset pages on.
#[test]
fn a_line_longer_than_the_window_is_cut() {
    let long = format!("class Gen {{ int[] t = {{{}0}}; }}", "1, ".repeat(500_000));
    let text = format!("{long}\nclass After {{}}\n");
    let (_dir, index) = index_with(&[("Gen.java", &text)]);
    let shown = view_file(&index, "Gen.java", 0, 100).unwrap();
    assert!(shown.len() < 1_000, "{} bytes", shown.len());
    assert!(
        shown.contains("(line cut: 400 of its 1500028 bytes shown)"),
        "{shown}"
    );
    assert!(shown.contains("(next offset: 2)"), "{shown}");
    let next = view_file(&index, "Gen.java", 2, 100).unwrap();
    assert!(next.contains("   2 class After {}"), "{next}");
}
