//! Pattern extraction of the reformulation fields.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

use super::boilerplate::strip_boilerplate;
use super::{Identifier, IdentifierSource, Reformulation, StackFrame};
use crate::repo::confine::strip_current_dir;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid pattern")
}

static FENCED: LazyLock<Regex> = LazyLock::new(|| re(r"(?ms)^\s*```[^\n]*\n(.*?)^\s*```"));
static FRAME: LazyLock<Regex> =
    LazyLock::new(|| re(r#"File "([^"\n]+)", line (\d+)(?:, in ([\w<>.]+))?"#));
/// A JVM stack frame: `at com.foo.Bar$Inner.baz(Bar.java:42)`, after a class loader or
/// module prefix if one is printed (`app//`, `java.base/`).
static JVM_FRAME: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\bat\s+(?:[\w.$@\-]*/+)?((?:[A-Za-z_$][\w$]*\.)+)([\w$<>\-]+)\(([\w$\-]+\.(?:java|kt|kts)):(\d+)\)",
    )
});
static CAUSED_BY: LazyLock<Regex> = LazyLock::new(|| re(r"(?m)^\s*Caused by:"));
static PATH: LazyLock<Regex> =
    LazyLock::new(|| re(r"[\w.\-]*(?:/[\w.\-]+)+|[\w\-]+\.(?:py|java|kt|kts)\b"));
static DOTTED: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b"));
static BACKTICK: LazyLock<Regex> = LazyLock::new(|| re(r"`([^`\n]{1,200})`"));
static CALL: LazyLock<Regex> = LazyLock::new(|| re(r"\b([A-Za-z_][A-Za-z0-9_]*)\("));
static WORD: LazyLock<Regex> = LazyLock::new(|| re(r"\b[A-Za-z_][A-Za-z0-9_]*\b"));
static SNAKE: LazyLock<Regex> = LazyLock::new(|| re(r"\b_*[A-Za-z][A-Za-z0-9]*_\w*[A-Za-z0-9]\b"));
static IDENT: LazyLock<Regex> =
    LazyLock::new(|| re(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"));
static IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?m)^[ \t]*(?:>>>[ \t]*)?(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+(?:\(([\w\s,]+)\)|([\w \t,]+))|import[ \t]+(?:static[ \t]+)?([\w.]+(?:[ \t]*,[ \t]*[\w.]+)*))",
    )
});
static ERROR_LINE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?m)^\s*(?:[\w.]+\.)?(\w*(?:Error|Exception|Warning|Exit|Interrupt))(?::[ \t]*(.+))?$")
});

/// File extensions that end a dotted word which is a file name, not a module path.
const FILE_EXTENSIONS: &[&str] = &[
    "py", "txt", "rst", "md", "cfg", "toml", "json", "yaml", "yml", "html", "ini", "png", "csv",
    "java", "kt", "kts",
];

/// Dotted words that are prose, not code.
const PROSE_DOTTED: &[&str] = &["e.g", "i.e", "etc", "vs"];

/// Fills the reformulation schema from an issue's text.
pub fn reformulate(issue: &str) -> Reformulation {
    let explanation = strip_boilerplate(issue);
    let code_snippets = code_snippets(&explanation);
    let stack_frames = stack_frames(&explanation);
    let (mut paths, mut filenames) = paths(&explanation);
    // Traceback paths are the frames' business, not mentions.
    let frame_paths: HashSet<&str> = stack_frames
        .iter()
        .map(|f| f.path.trim_matches('/'))
        .collect();
    paths.retain(|p| !frame_paths.contains(p.as_str()));
    let jvm_frame_files: HashSet<&str> = JVM_FRAME
        .captures_iter(&explanation)
        .filter_map(|c| c.get(3).map(|m| m.as_str()))
        .collect();
    filenames.retain(|f| !jvm_frame_files.contains(f.as_str()));
    let mut modules = Vec::new();
    let mut identifiers = Identifiers::default();
    collect_prose_identifiers(&explanation, &mut modules, &mut identifiers);
    collect_imports(&code_snippets, &mut modules, &mut identifiers);
    let error_messages = error_messages(&explanation);
    Reformulation {
        title: title(&explanation),
        explanation,
        paths,
        filenames,
        modules: dedup(modules),
        identifiers: identifiers.into_vec(),
        code_snippets,
        stack_frames,
        error_messages,
    }
}

/// The first line that is prose: not blank, not a markdown heading, not a bold template label
/// (`**Describe the bug**`), not a code fence; its first [`MAX_TITLE_BYTES`] (an issue of one
/// 15 MiB line was its own title, tokenized and scored twice).
fn title(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| {
            let template_label = l.starts_with("**") && l.trim_end_matches(':').ends_with("**");
            !(l.is_empty() || l.starts_with('#') || l.starts_with("```") || template_label)
        })
        .unwrap_or_default();
    crate::text::head(line, MAX_TITLE_BYTES).to_owned()
}

/// The longest title kept, in bytes: the longest of the 659 SWE-bench Lite, development and
/// LCA issues is 123.
const MAX_TITLE_BYTES: usize = 1000;

fn dedup(items: Vec<String>) -> Vec<String> {
    let mut seen = HashSet::new();
    items
        .into_iter()
        .filter(|item| seen.insert(item.clone()))
        .collect()
}

/// Identifiers in order of first mention, each with the strongest source seen.
#[derive(Default)]
struct Identifiers {
    items: Vec<Identifier>,
    /// Where each name is in `items` (a long issue names many: no search of the list).
    index: std::collections::HashMap<String, usize>,
}

impl Identifiers {
    fn add(&mut self, name: &str, source: IdentifierSource) {
        let name = name.trim_matches(|c: char| c == '.' || c == '(' || c == ')');
        if name.len() < 2 || is_keyword(name) {
            return;
        }
        if let Some(&at) = self.index.get(name) {
            self.items[at].source = self.items[at].source.min(source);
            return;
        }
        self.index.insert(name.to_owned(), self.items.len());
        self.items.push(Identifier {
            name: name.to_owned(),
            source,
        });
    }

    fn into_vec(self) -> Vec<Identifier> {
        self.items
    }
}

fn is_keyword(word: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
        "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
        "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "print", "raise",
        "return", "self", "try", "while", "with", "yield",
    ];
    KEYWORDS.contains(&word)
}

/// Fenced blocks, doctest sessions and indented blocks (four spaces or a tab after a blank line).
fn code_snippets(text: &str) -> Vec<String> {
    let mut snippets: Vec<String> = FENCED
        .captures_iter(text)
        .map(|c| c[1].to_owned())
        .collect();
    let outside = FENCED.replace_all(text, "\n");
    let mut block: Vec<&str> = Vec::new();
    let mut doctest: Vec<&str> = Vec::new();
    let mut previous_blank = true;
    for line in outside.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with(">>> ") || (!doctest.is_empty() && trimmed.starts_with("... ")) {
            doctest.push(trimmed[4..].trim_end());
            previous_blank = false;
            continue;
        } else if !doctest.is_empty() {
            snippets.push(doctest.join("\n"));
            doctest.clear();
        }
        let indented = line.starts_with("    ") || line.starts_with('\t');
        if indented && (previous_blank || !block.is_empty()) && !trimmed.is_empty() {
            block.push(line);
        } else if !block.is_empty() && !trimmed.is_empty() {
            snippets.push(block.join("\n"));
            block.clear();
        }
        previous_blank = trimmed.is_empty();
    }
    for rest in [block, doctest] {
        if !rest.is_empty() {
            snippets.push(rest.join("\n"));
        }
    }
    snippets.retain(|s| !s.trim().is_empty());
    snippets
}

/// The traceback frames read from an issue at most: a report's tracebacks hold tens of
/// frames, and every frame kept is echoed in the result (300,000 frames made 129 MB of it).
pub const MAX_STACK_FRAMES: usize = 500;

/// Python traceback frames (each traceback's innermost frame gets depth 0), then JVM frames,
/// the first [`MAX_STACK_FRAMES`] of them.
fn stack_frames(text: &str) -> Vec<StackFrame> {
    let mut frames = python_frames(text);
    frames.extend(jvm_frames(text));
    frames.truncate(MAX_STACK_FRAMES);
    frames
}

/// JVM frames as `package/dirs/File.java` paths, root cause first: the frames of the last
/// `Caused by:` block, then the block before it, each innermost first (a JVM trace prints the
/// innermost frame at the top). The function is `Class.method` (`BarKt.baz` for a Kotlin
/// top-level function).
fn jvm_frames(text: &str) -> Vec<StackFrame> {
    let causes: Vec<usize> = CAUSED_BY.find_iter(text).map(|m| m.start()).collect();
    let mut frames: Vec<(usize, StackFrame)> = JVM_FRAME
        .captures_iter(text)
        .map(|c| {
            let qualified = c[1].trim_end_matches('.');
            let (package, class) = qualified.rsplit_once('.').unwrap_or(("", qualified));
            let class = class.split('$').next().unwrap_or(class);
            let path = if package.is_empty() {
                c[3].to_owned()
            } else {
                format!("{}/{}", package.replace('.', "/"), &c[3])
            };
            let block = causes.partition_point(|&cause| cause < c.get(0).map_or(0, |m| m.start()));
            let frame = StackFrame {
                path,
                line: c[4].parse().unwrap_or(0),
                function: Some(format!("{class}.{}", &c[2])),
                depth: 0,
            };
            (block, frame)
        })
        .collect();
    frames.sort_by_key(|(block, _)| std::cmp::Reverse(*block));
    frames
        .into_iter()
        .enumerate()
        .map(|(depth, (_, frame))| StackFrame { depth, ..frame })
        .collect()
}

/// Python traceback frames; each traceback's innermost frame gets depth 0.
fn python_frames(text: &str) -> Vec<StackFrame> {
    let mut frames: Vec<StackFrame> = FRAME
        .captures_iter(text)
        .map(|c| StackFrame {
            path: c[1].to_owned(),
            line: c[2].parse().unwrap_or(0),
            function: c.get(3).map(|m| m.as_str().to_owned()),
            depth: 0,
        })
        .collect();
    let count = frames.len();
    for (i, frame) in frames.iter_mut().enumerate() {
        frame.depth = count - 1 - i;
    }
    frames.reverse();
    frames
}

/// Paths with a `/` (URLs reduced to their path) and bare `*.py` names.
fn paths(text: &str) -> (Vec<String>, Vec<String>) {
    let mut paths = Vec::new();
    let mut filenames = Vec::new();
    for m in PATH.find_iter(text) {
        let raw = m.as_str().trim_matches(|c| c == '.' || c == '-');
        if raw.contains('/') {
            let path = strip_current_dir(raw).trim_matches('/');
            let is_source_or_dir =
                is_source_file(path) || !path.rsplit('/').next().unwrap_or("").contains('.');
            if !path.is_empty() && is_source_or_dir && !path.starts_with("http") {
                paths.push(path.to_owned());
            }
        } else if is_source_file(raw) {
            filenames.push(raw.to_owned());
        }
    }
    (dedup(paths), dedup(filenames))
}

/// A Python, Java or Kotlin file by its extension.
fn is_source_file(path: &str) -> bool {
    std::path::Path::new(path).extension().is_some_and(|ext| {
        ["py", "java", "kt", "kts"]
            .iter()
            .any(|known| ext.eq_ignore_ascii_case(known))
    })
}

fn collect_imports(snippets: &[String], modules: &mut Vec<String>, identifiers: &mut Identifiers) {
    for snippet in snippets {
        for c in IMPORT.captures_iter(snippet) {
            if let (Some(module), Some(names)) = (c.get(1), c.get(2).or_else(|| c.get(3))) {
                modules.push(module.as_str().to_owned());
                for name in names
                    .as_str()
                    .split(',')
                    .map(|n| n.split_whitespace().next().unwrap_or(""))
                {
                    if !name.is_empty() {
                        modules.push(format!("{}.{name}", module.as_str()));
                        identifiers.add(name, IdentifierSource::Import);
                    }
                }
            } else if let Some(list) = c.get(4) {
                modules.extend(list.as_str().split(',').map(|m| m.trim().to_owned()));
            }
        }
    }
}

/// `OneModel`, `getItem`, `HTTPResponse`: an uppercase letter after the first character and a
/// lowercase letter somewhere. Not `Model` (a capitalized word) nor `INNER` (shouting).
fn is_camel_case(word: &str) -> bool {
    let word = word.trim_start_matches('_');
    word.chars().skip(1).any(char::is_uppercase)
        && word.chars().any(char::is_lowercase)
        && !word.contains('_')
}

fn is_file_name(dotted: &str) -> bool {
    dotted
        .rsplit_once('.')
        .is_some_and(|(_, ext)| FILE_EXTENSIONS.contains(&ext))
}

fn collect_prose_identifiers(text: &str, modules: &mut Vec<String>, identifiers: &mut Identifiers) {
    for c in BACKTICK.captures_iter(text) {
        for m in IDENT.find_iter(&c[1]) {
            identifiers.add(m.as_str(), IdentifierSource::Backtick);
            if let Some((_, last)) = m.as_str().rsplit_once('.') {
                identifiers.add(last, IdentifierSource::Backtick);
            }
        }
    }
    for m in DOTTED.find_iter(text) {
        let dotted = m.as_str();
        if is_file_name(dotted) || PROSE_DOTTED.contains(&dotted.to_lowercase().as_str()) {
            continue;
        }
        modules.push(dotted.to_owned());
        identifiers.add(dotted, IdentifierSource::Dotted);
        if let Some((_, last)) = dotted.rsplit_once('.') {
            identifiers.add(last, IdentifierSource::Dotted);
        }
    }
    for c in CALL.captures_iter(text) {
        identifiers.add(&c[1], IdentifierSource::Call);
    }
    for m in WORD.find_iter(text) {
        let word = m.as_str();
        if is_camel_case(word) {
            identifiers.add(word, IdentifierSource::CamelCase);
        }
        // Django-style lookups (`record__root_id`, `__isnull`) name their parts.
        if word.contains("__") && !(word.starts_with("__") && word.ends_with("__")) {
            for part in word.split("__").filter(|p| p.len() > 1) {
                identifiers.add(part, IdentifierSource::SnakeCase);
            }
        }
    }
    for m in SNAKE.find_iter(text) {
        identifiers.add(m.as_str(), IdentifierSource::SnakeCase);
    }
}

/// Exception lines (`ValueError: message`) and bare exception names at line start.
fn error_messages(text: &str) -> Vec<String> {
    let messages = ERROR_LINE
        .captures_iter(text)
        .map(|c| match c.get(2) {
            Some(message) => format!("{}: {}", &c[1], message.as_str().trim()),
            None => c[1].to_owned(),
        })
        .collect();
    dedup(messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISSUE: &str = r#"Calling `QuerySet.bulk_create()` with `update_conflicts=True` crashes.

See django/db/models/query.py and also sql/compiler.py; related: https://github.com/django/django/blob/main/django/db/backends/base/schema.py#L10

```python
from django.db.models import Q, F
from myapp.models import Thing
Thing.objects.bulk_create(objs)
```

    >>> parse_expr("1+1")

Traceback (most recent call last):
  File "/venv/lib/python3.9/site-packages/django/db/models/query.py", line 503, in bulk_create
    objs = self._prepare(objs)
  File "/venv/lib/python3.9/site-packages/django/db/models/sql/compiler.py", line 1200, in execute_sql
ValueError: Unknown format code 'd' for object of type 'float'
"#;

    #[test]
    fn extracts_every_field() {
        let r = reformulate(ISSUE);
        assert_eq!(
            r.title,
            "Calling `QuerySet.bulk_create()` with `update_conflicts=True` crashes."
        );
        assert_eq!(
            r.paths,
            [
                "django/db/models/query.py",
                "sql/compiler.py",
                "github.com/django/django/blob/main/django/db/backends/base/schema.py"
            ]
        );
        assert!(r.filenames.is_empty());
        assert_eq!(r.stack_frames.len(), 2);
        assert_eq!(r.stack_frames[0].function.as_deref(), Some("execute_sql"));
        assert_eq!(r.stack_frames[0].depth, 0);
        assert_eq!(r.stack_frames[1].line, 503);
        assert_eq!(
            r.error_messages,
            ["ValueError: Unknown format code 'd' for object of type 'float'"]
        );
        assert!(r.modules.contains(&"django.db.models.Q".to_owned()));
        assert!(r.modules.contains(&"django.db.models".to_owned()));
        assert_eq!(r.code_snippets.len(), 2, "{:?}", r.code_snippets);
        let first = &r.identifiers[0];
        assert_eq!(
            (first.name.as_str(), first.source),
            ("QuerySet.bulk_create", IdentifierSource::Backtick)
        );
        let find = |name: &str| {
            r.identifiers
                .iter()
                .find(|i| i.name == name)
                .map(|i| i.source)
        };
        assert_eq!(find("bulk_create"), Some(IdentifierSource::Backtick));
        assert_eq!(find("update_conflicts"), Some(IdentifierSource::Backtick));
        assert_eq!(find("Q"), None, "single letters are too short");
        assert_eq!(find("Thing"), Some(IdentifierSource::Import));
        assert_eq!(find("parse_expr"), Some(IdentifierSource::Call));
    }

    #[test]
    fn jvm_traces_imports_and_file_names() {
        let issue =
            "Crash in `LottieAnimation.kt` and Parser.java, see core/src/main/java/com/x/Y.java

```
Exception in thread \"main\" java.lang.IllegalStateException: wrapped
\tat com.example.app.Main.run(Main.java:10)
\tat java.base/java.lang.Thread.run(Thread.java:833)
Caused by: java.lang.NullPointerException
\tat com.example.shop.Cart$Line.total(Cart.java:42)
\tat com.example.shop.ShopKt.checkout(Shop.kt:7)
```

```kotlin
import com.example.shop.Cart
import static com.example.util.Strings.slugify;
```
";
        let r = reformulate(issue);
        let frames: Vec<(&str, usize, Option<&str>, usize)> = r
            .stack_frames
            .iter()
            .map(|f| (f.path.as_str(), f.line, f.function.as_deref(), f.depth))
            .collect();
        assert_eq!(
            frames,
            [
                ("com/example/shop/Cart.java", 42, Some("Cart.total"), 0),
                ("com/example/shop/Shop.kt", 7, Some("ShopKt.checkout"), 1),
                ("com/example/app/Main.java", 10, Some("Main.run"), 2),
                ("java/lang/Thread.java", 833, Some("Thread.run"), 3),
            ],
            "root cause first, innermost first"
        );
        assert_eq!(r.filenames, ["LottieAnimation.kt", "Parser.java"]);
        assert!(r
            .paths
            .contains(&"core/src/main/java/com/x/Y.java".to_owned()));
        assert!(r.modules.contains(&"com.example.shop.Cart".to_owned()));
        assert!(r
            .modules
            .contains(&"com.example.util.Strings.slugify".to_owned()));
        assert!(!r
            .modules
            .iter()
            .any(|m| m == "static" || m.contains("LottieAnimation")));
    }

    #[test]
    fn title_skips_template_headings_and_labels() {
        assert_eq!(
            title("### Bug report\n\n**Bug summary**\n\nBar plots crash on NaN\n"),
            "Bar plots crash on NaN"
        );
        assert_eq!(title("\n  \n"), "");
    }

    #[test]
    fn empty_and_hostile_text_yield_empty_fields() {
        assert_eq!(reformulate("").paths, Vec::<String>::new());
        let hostile = "`".repeat(10_000) + &"(".repeat(10_000) + "\u{0}\u{202e}";
        let r = reformulate(&hostile);
        assert!(r.identifiers.is_empty());
    }
}
