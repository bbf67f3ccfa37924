use super::*;
use crate::index::{IndexOptions, RepoIndex};

const PRICING: &str = r#"import os
from decimal import Decimal

RATE = Decimal("0.1")
LIMIT: int = 5


class Pricer:
    """Prices."""

    @property
    def rate(self):
        return RATE

    def apply(
        self,
        total,
    ):
        x = total
        y = x * RATE
        return total - y


def helper(a):
    if a == 1:
        return 2
    return 3
"#;

fn index() -> (tempfile::TempDir, RepoIndex) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("shop")).unwrap();
    std::fs::write(dir.path().join("shop/pricing.py"), PRICING).unwrap();
    let index = RepoIndex::build(dir.path(), &IndexOptions::default()).unwrap();
    (dir, index)
}

#[test]
fn pruned_context_keeps_anchored_bodies_signatures_assignments_imports() {
    let (_dir, index) = index();
    let file = &index.files[0];
    let chunk = ChunkHit {
        lines: (20, 21),
        symbol: Some("Pricer.apply".into()),
        score: 3.0,
    };
    let context = pruned_context(file, &[chunk], 300);
    insta::assert_snapshot!(context);
    assert!(
        context.contains("        y = x * RATE"),
        "anchored body kept"
    );
    assert!(!context.contains("return 2"), "other bodies left out");
    let small = pruned_context(file, &[], 20);
    assert!(
        small.len() <= 36 * 4 && small.contains("class Pricer:"),
        "{small}"
    );
}

#[test]
fn issue_excerpt_keeps_head_and_tail_and_summaries_name_top_level_symbols() {
    let issue = format!(
        "Title line\n{}\nTraceback: the end",
        "filler words ".repeat(200)
    );
    let excerpt = issue_excerpt(&issue, 50);
    assert!(excerpt.starts_with("Title line") && excerpt.ends_with("Traceback: the end"));
    assert!(excerpt.contains("[…]") && excerpt.len() <= 50 * 4 + 10);
    assert_eq!(issue_excerpt("short", 50), "short");
    let (_dir, index) = index();
    assert_eq!(
        summary_line(&index.files[0]),
        "shop/pricing.py: Pricer, helper"
    );
}
