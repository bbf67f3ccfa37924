//! The pipeline flows one way: a module may use only modules of lower layers (and the crate
//! root's error type and helpers). This test reads every `crate::…` path in the sources and
//! fails on an arrow that points up or sideways, so a cycle cannot come back unnoticed.

use std::collections::BTreeSet;
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
    "elapsed_ms",
    "cancel",
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// `(module it names, line)` of every `crate::x` path outside comments.
fn crate_paths(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let tail = &rest[at + "crate::".len()..];
            let name: String = tail
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push((name, i + 1));
            }
            rest = tail;
        }
    }
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
        for (target, line) in crate_paths(&text) {
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
    let found: Vec<String> = crate_paths(text).into_iter().map(|(m, _)| m).collect();
    assert_eq!(found, ["index", "retrieve"]);
}
