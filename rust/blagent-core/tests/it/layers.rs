//! The pipeline flows one way: a module may use only modules of lower layers (and the crate
//! root's error type and helpers). This test reads every `crate::…` path in the sources and
//! fails on an arrow that points up or sideways, so a cycle cannot come back unnoticed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The declared order, lowest first; modules on one line are one layer (and may not use each
/// other).
const LAYERS: &[&[&str]] = &[
    &["repo"],
    &["dataset"],
    &["chunk"],
    &["index", "embed"],
    &["dense"],
    &["query"],
    &["retrieve"],
    &["llm"],
    &["agent"],
    &["interface"],
    &["analysis"],
    &["eval"],
];

/// Items of the crate root that every module may use.
const ROOT_ITEMS: &[&str] = &[
    "error",
    "Error",
    "ErrorKind",
    "Result",
    "clock",
    "cancel",
    "fault",
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The code of `text` with comments and the contents of string and character literals blanked
/// (newlines kept, so line numbers hold), and no whitespace around `::`.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let at = |i: usize| chars.get(i).copied();
    let mut i = 0;
    while i < chars.len() {
        match (chars[i], at(i + 1)) {
            ('/', Some('/')) => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            ('/', Some('*')) => {
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i] == '/' && at(i + 1) == Some('*') {
                        depth += 1;
                        i += 2;
                    } else if chars[i] == '*' && at(i + 1) == Some('/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        out.push(blank(chars[i]));
                        i += 1;
                    }
                }
            }
            ('r', Some('"' | '#'))
                if !chars[..i]
                    .last()
                    .is_some_and(|c| c.is_alphanumeric() || *c == '_') =>
            {
                let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
                i += 1 + hashes;
                if chars.get(i) != Some(&'"') {
                    continue;
                }
                i += 1;
                let close: Vec<char> = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                while i < chars.len() && !chars[i..].starts_with(&close) {
                    out.push(blank(chars[i]));
                    i += 1;
                }
                i += close.len();
                out.push_str("\"\"");
            }
            ('"', _) => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    if let Some(&c) = chars.get(i) {
                        out.push(blank(c));
                    }
                    i += 1;
                }
                i += 1;
                out.push_str("\"\"");
            }
            ('\'', _) if at(i + 2) == Some('\'') || at(i + 1) == Some('\\') => {
                // A character literal ('x' or an escape); a lifetime ('a) has no closing quote.
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("' '");
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    collapse_path_spaces(&out)
}

/// `a :: b` as `a::b`, keeping newlines.
fn collapse_path_spaces(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut pending = String::new();
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' ' || c == '\t' {
            pending.push(c);
            continue;
        }
        if c == ':' && chars.peek() == Some(&':') {
            pending.clear();
            chars.next();
            out.push_str("::");
            while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
                chars.next();
            }
            continue;
        }
        out.push_str(&pending);
        pending.clear();
        out.push(c);
    }
    out
}

/// The top-level modules a path after `crate::` names: one identifier, or each item of a
/// `{…}` group (`crate::{eval::X, agent}` names eval and agent).
fn named_modules(tail: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let Some(group) = tail.strip_prefix('{') else {
        return std::iter::once(ident(tail))
            .filter(|n| !n.is_empty())
            .collect();
    };
    let mut names = Vec::new();
    let mut depth = 0;
    let mut item_start = true;
    for (at, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => item_start = true,
            c if c.is_whitespace() => {}
            _ if item_start && depth == 0 => {
                names.push(ident(&group[at..]));
                item_start = false;
            }
            _ => {}
        }
    }
    names.retain(|n| !n.is_empty() && n != "self");
    names
}

/// `(module it names, line)` of every path to another top-level module in `text`, the code of
/// module `path` (`["eval", "run"]` for `src/eval/run.rs`): `crate::x`, `crate::{x::…, y}`,
/// and `super::` chains that climb out of the top-level module. Comments and strings are
/// skipped; whitespace around `::` is not a way around the check.
fn crate_paths(text: &str, path: &[&str]) -> Vec<(String, usize)> {
    let code = code_only(text);
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let starts_path = |at: usize| {
        !code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
    };
    let mut out = Vec::new();
    for (start, _) in code.match_indices("crate::") {
        if starts_path(start) {
            let tail = &code[start + "crate::".len()..];
            out.extend(named_modules(tail).into_iter().map(|m| (m, line_of(start))));
        }
    }
    for (start, _) in code.match_indices("super::") {
        if !starts_path(start) {
            continue;
        }
        let mut tail = &code[start..];
        let mut climbs = 0;
        while let Some(rest) = tail.strip_prefix("super::") {
            climbs += 1;
            tail = rest;
        }
        // Climbing out of the file's top-level module reaches the crate root; an inline
        // `mod tests` climbs one step less than the file path says, so only names of
        // top-level modules count.
        if climbs >= path.len() {
            let modules = named_modules(tail)
                .into_iter()
                .filter(|m| layer(m).is_some());
            out.extend(modules.map(|m| (m, line_of(start))));
        }
    }
    out.sort_by_key(|(_, line)| *line);
    out
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("reads src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn modules_use_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut modules = BTreeSet::new();
    let mut wrong = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).expect("under src");
        let first = relative.components().next().expect("a component");
        let module = first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_owned();
        if module == "lib" || ROOT_ITEMS.contains(&module.as_str()) {
            continue;
        }
        modules.insert(module.clone());
        let Some(from) = layer(&module) else {
            wrong.push(format!("{module} is in no layer: add it to LAYERS"));
            continue;
        };
        let text = std::fs::read_to_string(file).expect("reads a source");
        let components: Vec<String> = relative
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .filter(|c| c != "mod")
            .collect();
        let path: Vec<&str> = components.iter().map(String::as_str).collect();
        for (target, line) in crate_paths(&text, &path) {
            if target == module || ROOT_ITEMS.contains(&target.as_str()) {
                continue;
            }
            match layer(&target) {
                Some(to) if to < from => {}
                _ => wrong.push(format!(
                    "{}:{line}: {module} uses crate::{target}",
                    relative.display()
                )),
            }
        }
    }
    assert!(modules.len() >= 12, "found the modules: {modules:?}");
    assert!(
        wrong.is_empty(),
        "arrows against the layer order:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_scanner_sees_paths_and_skips_comments() {
    let text = "use crate::index::RepoIndex;\n// crate::agent in a comment\nlet x = crate::retrieve::score(a); // crate::eval\n";
    let found: Vec<String> = crate_paths(text, &["agent"])
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    assert_eq!(found, ["index", "retrieve"]);
}

/// A source text, the module path of its file, and the (module, line) pairs it names.
type Case = (
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, usize)],
);

/// Each form a path to another module can take is seen, with its line; none in a comment or a
/// string is.
#[test]
fn the_scanner_sees_every_form_of_path() {
    let cases: &[Case] = &[
        (
            "use crate::{eval::X, agent::{a, b}};",
            &["llm"],
            &[("eval", 1), ("agent", 1)],
        ),
        (
            "use crate::{\n    eval::X,\n    self,\n};",
            &["llm"],
            &[("eval", 1)],
        ),
        (
            "use super::super::eval::X;",
            &["llm", "client"],
            &[("eval", 1)],
        ),
        (
            "use super::super::{eval, agent::Y};",
            &["llm", "client"],
            &[("eval", 1), ("agent", 1)],
        ),
        ("use super::client::X;", &["llm", "mod_a"], &[]),
        ("use super::eval::X;", &["llm"], &[("eval", 1)]),
        ("let x = crate :: eval :: run();", &["llm"], &[("eval", 1)]),
        (
            "let url = \"http://x\"; let y = crate::eval::f();",
            &["llm"],
            &[("eval", 1)],
        ),
        (
            "let s = \"crate::eval\"; /* crate::agent */ let t = 'c';",
            &["llm"],
            &[],
        ),
        (
            "let s = r#\"crate::eval \"quoted\"\"#; let y = crate::agent::f();",
            &["llm"],
            &[("agent", 1)],
        ),
        (
            "fn f<'a>(x: &'a str) -> crate::eval::X {}",
            &["llm"],
            &[("eval", 1)],
        ),
        (
            "/* a\n crate::eval\n */\nuse crate::agent;",
            &["llm"],
            &[("agent", 4)],
        ),
        ("let c = '\\''; use crate::eval;", &["llm"], &[("eval", 1)]),
    ];
    for (text, path, expected) in cases {
        let found = crate_paths(text, path);
        let found: Vec<(&str, usize)> = found.iter().map(|(m, l)| (m.as_str(), *l)).collect();
        assert_eq!(found, *expected, "{text}");
    }
}

/// The sibling files of its folder that `text`, the code of file `path` (`["eval", "run"]`),
/// names: `super::sibling`, `super::{a::X, b}` and `crate::folder::sibling`. An inline
/// `mod tests` that climbs to its own file names no file, so it adds nothing.
fn sibling_paths(text: &str, path: &[&str], siblings: &BTreeSet<String>) -> BTreeSet<String> {
    let code = code_only(text);
    let mut out = BTreeSet::new();
    if path.len() != 2 {
        return out;
    }
    let own_folder = format!("crate::{}::", path[0]);
    for prefix in ["super::", own_folder.as_str()] {
        for (start, _) in code.match_indices(prefix) {
            let before = code[..start].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let tail = &code[start + prefix.len()..];
            if tail.starts_with("super::") {
                continue;
            }
            out.extend(
                named_modules(tail)
                    .into_iter()
                    .filter(|m| siblings.contains(m) && m != path[1]),
            );
        }
    }
    out
}

/// A circle in `edges` (file → the files it names), as the files along it, if there is one.
fn find_circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut circle = stack[at..].to_vec();
            circle.push(node.to_owned());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, edges, stack, done) {
                return Some(circle);
            }
        }
        stack.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|node| visit(node, edges, &mut Vec::new(), &mut done))
}

/// The files of one folder import each other one way only: no circle through `super::`, so
/// each file can be read after the ones it names.
#[test]
fn no_files_of_one_folder_import_each_other_in_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut folders: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(&src).expect("under src");
        let parts: Vec<String> = relative
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.len() == 2 && parts[1] != "mod" {
            let text = std::fs::read_to_string(file).expect("reads a source");
            folders
                .entry(parts[0].clone())
                .or_default()
                .insert(parts[1].clone(), text);
        }
    }
    assert!(
        folders.len() >= 10,
        "found the folders: {:?}",
        folders.keys()
    );
    let mut circles = Vec::new();
    for (folder, texts) in &folders {
        let siblings: BTreeSet<String> = texts.keys().cloned().collect();
        let edges: BTreeMap<String, BTreeSet<String>> = texts
            .iter()
            .map(|(name, text)| {
                let path = [folder.as_str(), name.as_str()];
                (name.clone(), sibling_paths(text, &path, &siblings))
            })
            .collect();
        if let Some(circle) = find_circle(&edges) {
            circles.push(format!("{folder}: {}", circle.join(" → ")));
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_circle_finder_sees_sibling_paths_and_circles() {
    let siblings: BTreeSet<String> = ["run", "sink", "worker"].map(String::from).into();
    let names = |text: &str, file: &str| -> Vec<String> {
        sibling_paths(text, &["eval", file], &siblings)
            .into_iter()
            .collect()
    };
    assert_eq!(
        names("use super::{sink::S, worker};\n// super::run\n", "run"),
        ["sink", "worker"]
    );
    assert_eq!(names("use crate::eval::run::X;", "sink"), ["run"]);
    assert_eq!(
        names("use crate :: eval :: { run, sink };", "worker"),
        ["run", "sink"]
    );
    assert!(names("mod tests { use super::*; use super::super::run; }", "sink").is_empty());
    let edges = |pairs: &[(&str, &str)]| {
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, to) in pairs {
            out.entry((*from).to_owned())
                .or_default()
                .insert((*to).to_owned());
        }
        out
    };
    assert_eq!(
        find_circle(&edges(&[
            ("run", "sink"),
            ("sink", "worker"),
            ("worker", "run")
        ])),
        Some(
            vec!["run", "sink", "worker", "run"]
                .into_iter()
                .map(String::from)
                .collect()
        )
    );
    assert_eq!(
        find_circle(&edges(&[
            ("run", "sink"),
            ("run", "worker"),
            ("sink", "worker")
        ])),
        None
    );
}
