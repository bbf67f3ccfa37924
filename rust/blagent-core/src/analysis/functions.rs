//! The function level: which functions a patch touches (its code lines mapped onto symbol
//! tables) and which functions a localization output names (Agentless, LocAgent and
//! `path::Class.method` entries, line ranges).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::chunk::Symbol;
use crate::retrieve::entity_id;

/// A function (or class, for changes in a class body) of a file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FunctionRef {
    /// Repository-relative path.
    pub path: String,
    /// Qualified name within the file (`Class.method`).
    pub qualified: String,
    /// Its lines in the base file, when it exists there.
    pub base_lines: Option<(usize, usize)>,
}

impl FunctionRef {
    /// `path::Class.method` ([`entity_id`]), the form used in reports.
    pub fn id(&self) -> String {
        entity_id(&self.path, &self.qualified)
    }
}

/// The symbol a line belongs to for the function stage: the innermost class, function or
/// method holding it that is not nested in a function (a closure's line counts for the
/// function that defines it). `None` for module-level code.
pub fn enclosing(symbols: &[Symbol], line: usize) -> Option<&Symbol> {
    crate::chunk::enclosing(symbols, (line, line)).map(|i| &symbols[i])
}

/// One function-level entry of a localization output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocEntry {
    /// A named function, method or class, with its file when the entry gives one.
    Function {
        /// The file, if known.
        path: Option<String>,
        /// The name as written: qualified (`Class.method`), bare (`method`) or a class.
        name: String,
        /// Whether it came as a blagent id (`path::name`, as `found_functions` writes them),
        /// whose name is qualified in full: a name without a dot is a top-level function there,
        /// where in Agentless's `function: name` it may be any method of that name.
        full: bool,
    },
    /// A line range of a file.
    Lines {
        /// The file.
        path: String,
        /// First line.
        start: usize,
        /// Last line, inclusive.
        end: usize,
    },
}

impl LocEntry {
    /// Whether the entry localizes `function`: same file (when it names one) and the same
    /// qualified name, its class, or (unless it is a [full](LocEntry::Function::full) id) its
    /// bare name; for a line range, an overlap with the function's base lines.
    pub fn covers(&self, function: &FunctionRef) -> bool {
        match self {
            LocEntry::Function { path, name, full } => {
                if path.as_ref().is_some_and(|p| p != &function.path) {
                    return false;
                }
                let q = &function.qualified;
                q == name
                    || q.strip_prefix(name.as_str())
                        .is_some_and(|rest| rest.starts_with('.'))
                    || (!full && !name.contains('.') && q.rsplit('.').next() == Some(name.as_str()))
            }
            LocEntry::Lines { path, start, end } => {
                path == &function.path
                    && function
                        .base_lines
                        .is_some_and(|(s, e)| s <= *end && *start <= e)
            }
        }
    }
}

/// Collects the entries of one localization field. Accepts strings (`path::Class.method`,
/// `path:Class.method`, `path:10-20`, or Agentless's `function: X` / `class: X` /
/// `method: X` / `line: N` lines), objects keyed by path (read in `found_files`' order), lists
/// of any of these, and lists aligned with `found_files` (one element per file, Agentless's
/// `found_related_locs`).
pub fn collect_entries(
    value: &Value,
    path: Option<&str>,
    found_files: &[String],
    out: &mut Vec<LocEntry>,
) {
    match value {
        Value::String(text) => out.extend(text.lines().filter_map(|line| parse_entry(line, path))),
        Value::Object(map) => {
            // Keyed by path: the files in `found_files`' rank order first (a JSON object's
            // keys carry no order), then the others as they come.
            let ranked = found_files.iter().filter(|f| map.contains_key(f.as_str()));
            let rest = map.keys().filter(|k| !found_files.contains(k));
            for key in ranked.chain(rest) {
                collect_entries(&map[key.as_str()], Some(key), found_files, out);
            }
        }
        Value::Array(items) => {
            let per_file = |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
            let aligned = path.is_none()
                && items.len() <= found_files.len()
                && items.iter().any(Value::is_array)
                && items.iter().all(|v| v.is_string() || per_file(v));
            for (i, item) in items.iter().enumerate() {
                let item_path = if aligned {
                    Some(found_files[i].as_str())
                } else {
                    path
                };
                collect_entries(item, item_path, found_files, out);
            }
        }
        _ => {}
    }
}

fn parse_entry(line: &str, path: Option<&str>) -> Option<LocEntry> {
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    if let Some((kind, value)) = line.split_once(": ") {
        let value = value.trim();
        match kind.trim() {
            "function" | "method" | "class" => return entry(path, value),
            "line" | "lines" => return path.and_then(|p| lines_entry(p, value)),
            "variable" => return None,
            _ => {}
        }
    }
    entry(path, line)
}

/// An entry from `value`, which may carry its own path (`path::name`, `path:name`).
fn entry(path: Option<&str>, value: &str) -> Option<LocEntry> {
    let full = value.contains("::");
    let split = value.split_once("::").or_else(|| value.split_once(':'));
    let (path, name) = match split {
        Some((p, n)) if !p.is_empty() && !n.trim().is_empty() => (Some(p.trim()), n.trim()),
        _ => (path, value),
    };
    if let Some(p) = path {
        if let Some(lines) = lines_entry(p, name) {
            return Some(lines);
        }
    }
    if name.is_empty() {
        return None;
    }
    Some(LocEntry::Function {
        path: path.map(str::to_owned),
        name: name.to_owned(),
        full,
    })
}

fn lines_entry(path: &str, value: &str) -> Option<LocEntry> {
    let (a, b) = value.split_once('-').unwrap_or((value, value));
    let (start, end) = (
        a.trim().parse::<usize>().ok()?,
        b.trim().parse::<usize>().ok()?,
    );
    Some(LocEntry::Lines {
        path: path.to_owned(),
        start: start.min(end),
        end: start.max(end),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::{parse_file, ChunkOptions};
    use crate::repo::{language_for_path, SourceFile};

    fn f(path: &str, q: &str, lines: Option<(usize, usize)>) -> FunctionRef {
        FunctionRef {
            path: path.into(),
            qualified: q.into(),
            base_lines: lines,
        }
    }

    #[test]
    fn enclosing_rolls_closures_up_and_stops_at_module_level() {
        let text = "import os\n\nclass A:\n    x = 1\n\n    def m(self):\n        def inner():\n            return 1\n        return inner\n";
        let language = language_for_path("a.py").unwrap();
        let file = SourceFile::new("a.py".into(), language, text.into(), false);
        let symbols = parse_file(&file, &ChunkOptions::default()).symbols;
        let at = |line| enclosing(&symbols, line).map(|s| s.qualified.clone());
        assert_eq!(at(1), None);
        assert_eq!(at(4).as_deref(), Some("A"));
        assert_eq!(at(8).as_deref(), Some("A.m"));
    }

    #[test]
    fn entries_from_every_shape() {
        let found = vec!["a.py".to_owned(), "b.py".to_owned()];
        let mut out = Vec::new();
        let value = serde_json::json!(["a.py::Cart.total", "b.py:helper", "a.py:10-20", "c.py::7"]);
        collect_entries(&value, None, &found, &mut out);
        let related = serde_json::json!([
            ["class: Cart\nfunction: Cart.add\nvariable: X"],
            ["function: helper\nline: 33"]
        ]);
        collect_entries(&related, None, &found, &mut out);
        collect_entries(
            &serde_json::json!({"d.py": ["run"]}),
            None,
            &found,
            &mut out,
        );
        let func = |p: &str, n: &str| LocEntry::Function {
            path: Some(p.into()),
            name: n.into(),
            full: false,
        };
        let id = |p: &str, n: &str| LocEntry::Function {
            path: Some(p.into()),
            name: n.into(),
            full: true,
        };
        let lines = |p: &str, s, e| LocEntry::Lines {
            path: p.into(),
            start: s,
            end: e,
        };
        assert_eq!(
            out,
            [
                id("a.py", "Cart.total"),
                func("b.py", "helper"),
                lines("a.py", 10, 20),
                lines("c.py", 7, 7),
                func("a.py", "Cart"),
                func("a.py", "Cart.add"),
                func("b.py", "helper"),
                lines("b.py", 33, 33),
                func("d.py", "run"),
            ]
        );
    }

    #[test]
    fn objects_keyed_by_path_are_read_in_rank_order() {
        let found = vec!["z.py".to_owned(), "a.py".to_owned()];
        let mut out = Vec::new();
        let value = serde_json::json!({"a.py": ["function: second"], "m.py": ["third"], "z.py": ["function: first"]});
        collect_entries(&value, None, &found, &mut out);
        let names: Vec<String> = out
            .iter()
            .map(|e| match e {
                LocEntry::Function { path, name, .. } => {
                    entity_id(path.as_deref().unwrap_or(""), name)
                }
                LocEntry::Lines { path, .. } => path.clone(),
            })
            .collect();
        assert_eq!(names, ["z.py::first", "a.py::second", "m.py::third"]);
    }

    #[test]
    fn coverage_by_name_class_bare_name_and_lines() {
        let gold = f("a.py", "Cart.total", Some((10, 20)));
        let func = |p: Option<&str>, n: &str| LocEntry::Function {
            path: p.map(Into::into),
            name: n.into(),
            full: false,
        };
        assert!(func(Some("a.py"), "Cart.total").covers(&gold));
        assert!(func(Some("a.py"), "Cart").covers(&gold));
        assert!(func(None, "total").covers(&gold));
        assert!(!func(Some("b.py"), "Cart.total").covers(&gold));
        assert!(!func(Some("a.py"), "Car").covers(&gold));
        assert!(!func(Some("a.py"), "Other.total").covers(&gold));
        // Found by a review: a blagent id `a.py::total` is the top-level function `total`,
        // not the method `Cart.total` (Agentless's `function: total` may be either).
        let mut out = Vec::new();
        collect_entries(
            &serde_json::json!(["a.py::total", "a.py::Cart"]),
            None,
            &[],
            &mut out,
        );
        assert!(!out[0].covers(&gold));
        assert!(out[1].covers(&gold));
        assert!(LocEntry::Lines {
            path: "a.py".into(),
            start: 18,
            end: 30
        }
        .covers(&gold));
        assert!(!LocEntry::Lines {
            path: "a.py".into(),
            start: 21,
            end: 30
        }
        .covers(&gold));
        assert!(!LocEntry::Lines {
            path: "a.py".into(),
            start: 1,
            end: 99
        }
        .covers(&f("a.py", "new", None)));
    }
}
