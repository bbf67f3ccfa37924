//! Dropping what issue templates add to every report: HTML comments, and sections that list
//! versions and environments, whose package names would otherwise match every file that
//! imports them.

use std::sync::LazyLock;

use regex::Regex;

static HTML_COMMENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)<!--.*?-->").expect("valid"));
static HEADING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(#{1,6}\s+|\*\*[^*]+\*\*\s*:?\s*$)").expect("valid"));
static ENVIRONMENT_HEADING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(versions?|environment|system (details|info)|installation|operating system|platform|python version)\b")
        .expect("valid")
});
/// `numpy: 1.19.2`, `Python 3.8.5`, `- OS: macOS 10.15` — a name then a version.
static VERSION_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*[-*]?\s*[\w .\-/()]{1,40}?:?\s*v?\d+\.\d+(\.\w+)*\S*\s*$").expect("valid")
});

/// The issue text without HTML comments, environment/version sections and version lines.
pub fn strip_boilerplate(issue: &str) -> String {
    let text = HTML_COMMENT.replace_all(issue, "");
    let mut out = String::with_capacity(text.len());
    let mut in_environment = false;
    for line in text.lines() {
        if HEADING.is_match(line) {
            in_environment = ENVIRONMENT_HEADING.is_match(line);
            if in_environment {
                continue;
            }
        }
        if in_environment || VERSION_LINE.is_match(line) {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_comments_environment_sections_and_version_lines() {
        let issue =
            "### Bug summary\n<!--A short summary-->\nBar fails.\n\n### Matplotlib Version\n\
                     3.5.1\nnumpy 1.21\n### Code\nplt.bar([1])\nPython 3.9.7\n";
        assert_eq!(
            strip_boilerplate(issue),
            "### Bug summary\n\nBar fails.\n\n### Code\nplt.bar([1])\n"
        );
    }

    #[test]
    fn keeps_ordinary_text() {
        let issue = "QuerySet.none() on combined queries returns all results.\n";
        assert_eq!(strip_boilerplate(issue), issue);
    }
}
