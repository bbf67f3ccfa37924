//! The pipeline flows one way: a module may use only modules of lower layers (and the crate
//! root's error type and helpers). This test reads every `crate::…` path in the sources and
//! fails on an arrow that points up or sideways, so a cycle cannot come back unnoticed. Inside
//! a folder the files may use each other, but never in a circle: the second test follows the
//! `super::…` and `crate::…` paths between the files (and subfolders) of each folder.

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
    "timing",
    "text",
    "cancel",
    "fault",
    "json",
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

/// Whether a path starts at byte `at` of `code`: no identifier or `::` runs into it.
fn starts_path(code: &str, at: usize) -> bool {
    !code[..at]
        .chars()
        .next_back()
        .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
}

/// `(module it names, line)` of every path to another top-level module in `text`, the code of
/// module `path` (`["eval", "run"]` for `src/eval/run.rs`): `crate::x`, `crate::{x::…, y}`,
/// and `super::` chains that climb out of the top-level module. Comments and strings are
/// skipped; whitespace around `::` is not a way around the check.
fn crate_paths(text: &str, path: &[&str]) -> Vec<(String, usize)> {
    let code = code_only(text);
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let starts_path = |at: usize| starts_path(&code, at);
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

/// Every path of the use tree at the start of `tail` (`a::{b, c::d}` gives `[a, b]` and
/// `[a, c, d]`), identifiers only; `self` items name the prefix itself.
fn use_tree(tail: &str) -> Vec<Vec<String>> {
    fn tree(s: &[char], at: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
        let mut path = prefix.to_vec();
        loop {
            let start = *at;
            while *at < s.len() && (s[*at].is_alphanumeric() || s[*at] == '_') {
                *at += 1;
            }
            if *at > start {
                let ident: String = s[start..*at].iter().collect();
                if ident != "self" {
                    path.push(ident);
                }
            } else if s.get(*at) == Some(&'{') {
                *at += 1;
                loop {
                    while s.get(*at).is_some_and(|c| c.is_whitespace() || *c == ',') {
                        *at += 1;
                    }
                    match s.get(*at) {
                        None => return,
                        Some('}') => {
                            *at += 1;
                            return;
                        }
                        Some(_) => {
                            let before = *at;
                            tree(s, at, &path, out);
                            if *at == before {
                                *at += 1;
                            }
                        }
                    }
                }
            }
            if s.get(*at) == Some(&':') && s.get(*at + 1) == Some(&':') {
                *at += 2;
            } else {
                if path.len() > prefix.len() {
                    out.push(path);
                }
                return;
            }
        }
    }
    let chars: Vec<char> = tail.chars().collect();
    let mut out = Vec::new();
    tree(&chars, &mut 0, &[], &mut out);
    out
}

/// The absolute module paths (`["interface", "job", "run_one"]`) that the non-test code of a
/// file of module `module` (a folder's own module for its `mod.rs`) names through `crate::`
/// and `super::`. Code from the first `#[cfg(test)]` on is left out: tests may use any file.
fn absolute_paths(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let code = code_only(text);
    let code = &code[..code.find("#[cfg(test)]").unwrap_or(code.len())];
    let starts_path = |at: usize| starts_path(code, at);
    let mut out = Vec::new();
    for (start, _) in code.match_indices("crate::") {
        if starts_path(start) {
            out.extend(use_tree(&code[start + "crate::".len()..]));
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
        let Some(base) = module.len().checked_sub(climbs) else {
            continue;
        };
        let base = &module[..base];
        for path in use_tree(tail) {
            out.push(base.iter().cloned().chain(path).collect());
        }
    }
    out
}

/// The arrows between the files and subfolders of each folder: (folder, from, to).
type Arrows = BTreeSet<(Vec<String>, String, String)>;

/// The arrows of `files` (module path, text; a `mod.rs` has its folder's), inside every
/// folder below the crate root (the layers test keeps the root's).
fn sibling_arrows(files: &[(Vec<String>, String)]) -> Arrows {
    let mut units: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for (module, _) in files {
        for depth in 1..module.len() {
            units
                .entry(module[..depth].to_vec())
                .or_default()
                .insert(module[depth].clone());
        }
    }
    let mut arrows = Arrows::new();
    for (module, text) in files {
        for path in absolute_paths(text, module) {
            for depth in 1..module.len() {
                let folder = &module[..depth];
                let (from, to) = (&module[depth], path.get(depth));
                let Some(to) = to.filter(|to| *to != from && path[..depth] == *folder) else {
                    continue;
                };
                if units.get(folder).is_some_and(|u| u.contains(to)) {
                    arrows.insert((folder.to_vec(), from.clone(), to.clone()));
                }
            }
        }
    }
    arrows
}

/// Each circle among `arrows`, as `folder: a -> b -> a`.
fn circles(arrows: &Arrows) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (folder, start, _) in arrows {
        let next = |unit: &str| -> Vec<String> {
            arrows
                .iter()
                .filter(|(f, from, _)| f == folder && from == unit)
                .map(|(_, _, to)| to.clone())
                .collect()
        };
        // Depth-first from `start`, looking for a way back to it.
        let mut stack = vec![vec![start.clone()]];
        while let Some(trail) = stack.pop() {
            for to in next(trail.last().expect("not empty")) {
                if to == *start {
                    let mut ring = trail.clone();
                    let least = ring.iter().min().expect("not empty").clone();
                    let at = ring.iter().position(|u| *u == least).expect("in it");
                    ring.rotate_left(at);
                    if seen.insert((folder.clone(), ring.clone())) {
                        ring.push(least);
                        out.push(format!("{}: {}", folder.join("::"), ring.join(" -> ")));
                    }
                } else if !trail.contains(&to) {
                    let mut longer = trail.clone();
                    longer.push(to);
                    stack.push(longer);
                }
            }
        }
    }
    out.sort();
    out
}

#[test]
fn no_folder_has_a_circle_between_its_files() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    sources(&src, &mut paths);
    let mut files = Vec::new();
    for file in &paths {
        let relative = file.strip_prefix(&src).expect("under src");
        let mut module: Vec<String> = relative
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if module.iter().any(|c| c == "tests") || module == ["lib"] {
            continue;
        }
        if module.last().is_some_and(|m| m == "mod") {
            module.pop();
        }
        let text = std::fs::read_to_string(file).expect("reads a source");
        files.push((module, text));
    }
    let arrows = sibling_arrows(&files);
    assert!(arrows.len() > 50, "found the arrows: {arrows:?}");
    let found = circles(&arrows);
    assert!(
        found.is_empty(),
        "files of one folder using each other in a circle:\n{}",
        found.join("\n")
    );
}

/// Files (module path, text), and the circles among them.
type CircleCase = (
    &'static [(&'static [&'static str], &'static str)],
    &'static [&'static str],
);

/// The circle check sees a circle through `super::`, through `crate::` and through a use
/// group, and from a subfolder; it passes arrows one way and test code.
#[test]
fn the_circle_check_sees_circles_between_files() {
    let file = |module: &[&str], text: &str| {
        let module: Vec<String> = module.iter().map(|m| (*m).to_owned()).collect();
        (module, text.to_owned())
    };
    let cases: &[CircleCase] = &[
        (
            &[
                (&["a", "x"], "use super::y::Y;"),
                (&["a", "y"], "use crate::a::x::X;"),
            ],
            &["a: x -> y -> x"],
        ),
        (
            &[
                (&["a", "x"], "use super::{y::Y, z};"),
                (&["a", "y"], "fn f() { crate::a::z::g(); }"),
                (&["a", "z"], "use crate::{a::{x::X}};"),
            ],
            &["a: x -> y -> z -> x", "a: x -> z -> x"],
        ),
        (
            &[
                (&["a", "t"], "mod q;"),
                (&["a", "t", "q"], "use super::super::x::X;"),
                (&["a", "x"], "use super::t::Q;"),
            ],
            &["a: t -> x -> t"],
        ),
        (
            &[
                (&["a", "x"], "use super::y::Y;"),
                (
                    &["a", "y"],
                    "#[cfg(test)]\nmod tests { use super::super::x; }",
                ),
                (&["a", "z"], "// crate::a::x\nuse crate::b::x;"),
            ],
            &[],
        ),
    ];
    for (files, expected) in cases {
        let files: Vec<_> = files.iter().map(|(m, t)| file(m, t)).collect();
        let found = circles(&sibling_arrows(&files));
        assert_eq!(found, *expected, "{files:?}");
    }
}

/// The arrows between the files of a crate with one flat folder (the bindings), and each use
/// of an item of the crate root (`lib.rs`, which declares the files: such a use runs back up).
fn flat_arrows(files: &[(String, String)]) -> (Arrows, Vec<String>) {
    let stems: BTreeSet<&str> = files.iter().map(|(stem, _)| stem.as_str()).collect();
    let mut arrows = Arrows::new();
    let mut up = Vec::new();
    for (stem, text) in files.iter().filter(|(stem, _)| stem != "lib") {
        for path in absolute_paths(text, std::slice::from_ref(stem)) {
            match path.first() {
                Some(to) if to == stem => {}
                Some(to) if stems.contains(to.as_str()) => {
                    arrows.insert((Vec::new(), stem.clone(), to.clone()));
                }
                Some(item) => up.push(format!("{stem} uses crate::{item} of lib.rs")),
                None => {}
            }
        }
    }
    (arrows, up)
}

/// The bindings' files use each other one way only and nothing of `lib.rs`.
#[test]
fn the_bindings_have_no_circle_and_no_arrow_up() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../blagent-py/src");
    let mut paths = Vec::new();
    sources(&src, &mut paths);
    let files: Vec<(String, String)> = paths
        .iter()
        .map(|path| {
            let stem = path.file_stem().expect("a file name");
            let text = std::fs::read_to_string(path).expect("reads a source");
            (stem.to_string_lossy().into_owned(), text)
        })
        .collect();
    let (arrows, up) = flat_arrows(&files);
    assert!(arrows.len() >= 3, "found the arrows: {arrows:?}");
    assert!(up.is_empty(), "{}", up.join("\n"));
    let found = circles(&arrows);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The bindings check sees a use of the root's items and a circle between two files.
#[test]
fn the_bindings_check_sees_arrows_up_and_circles() {
    let file = |stem: &str, text: &str| (stem.to_owned(), text.to_owned());
    let files = [
        file("lib", "mod a; mod b; pub fn helper() {}"),
        file("a", "use crate::b::f; use crate::helper;"),
        file("b", "use super::a::g;"),
        file("c", "use crate::{a, b::h};"),
    ];
    let (arrows, up) = flat_arrows(&files);
    assert_eq!(up, ["a uses crate::helper of lib.rs"]);
    assert_eq!(circles(&arrows), [": a -> b -> a"]);
    assert_eq!(arrows.len(), 4);
}
