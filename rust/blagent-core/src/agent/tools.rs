//! The tools a model can call, each confined to the repository (see `confine`): a file's
//! skeleton, a window of a file without its licence header and imports, the README, and a BM25
//! search. Only indexed files can be read, and the README at the root. Every refusal is an
//! `Err` with a message for the model.

use std::fmt::Write as _;
use std::io::Read as _;

use super::confine::{check_syntax, confine};
use super::paths::resolve;
use crate::index::{QueryTokens, RepoIndex};

/// Approximate tokens of `text` (4 bytes a token, the usual rule for code and English).
pub fn approx_tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// `text` cut to about `tokens` tokens at a line boundary, with a note of what was left out.
pub fn truncate_lines(text: &str, tokens: usize) -> String {
    let budget = tokens * 4;
    if text.len() <= budget {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut lines = text.lines();
    for line in lines.by_ref() {
        if out.len() + line.len() + 1 > budget {
            let left = 1 + lines.count();
            let _ = writeln!(out, "… ({left} more lines)");
            return out;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The indexed file the model means, after the path passed confinement.
fn indexed_file(index: &RepoIndex, path: &str) -> Result<usize, String> {
    check_syntax(path)?;
    let (file, _) = resolve(index, path)?;
    confine(&index.root, index.files[file].path())?;
    Ok(file)
}

/// `read_skeleton(path)`: the file's classes and signatures, cut to about `tokens` tokens.
pub fn read_skeleton(index: &RepoIndex, path: &str, tokens: usize) -> Result<String, String> {
    let file = indexed_file(index, path)?;
    let indexed = &index.files[file];
    let skeleton = &indexed.parsed.skeleton;
    let body = if skeleton.trim().is_empty() {
        "(no classes or functions)\n".to_owned()
    } else {
        truncate_lines(skeleton, tokens)
    };
    Ok(format!("{}:\n{body}", indexed.path()))
}

fn is_licence_line(line: &str) -> bool {
    let lower = line.to_lowercase();
    ["licen", "copyright", "spdx", "all rights reserved"]
        .iter()
        .any(|w| lower.contains(w))
}

/// 1-based numbers of the lines `view_file` leaves out: a leading comment block or module
/// docstring that mentions a licence or copyright, and top-level imports (continuations
/// included).
fn hidden_lines(text: &str) -> Vec<bool> {
    let lines: Vec<&str> = text.lines().collect();
    let mut hidden = vec![false; lines.len()];
    let header_end = lines
        .iter()
        .position(|l| !(l.trim().is_empty() || l.starts_with('#')))
        .unwrap_or(lines.len());
    if lines[..header_end].iter().any(|l| is_licence_line(l)) {
        hidden[..header_end].fill(true);
    }
    let mut i = header_end;
    if let Some(quote) = lines.get(i).and_then(|l| {
        ["\"\"\"", "'''"]
            .into_iter()
            .find(|q| l.trim_start().starts_with(q))
    }) {
        let end = (i..lines.len())
            .find(|&j| lines[j].matches(quote).count() >= if j == i { 2 } else { 1 })
            .unwrap_or(lines.len() - 1);
        if lines[i..=end].iter().any(|l| is_licence_line(l)) {
            hidden[i..=end].fill(true);
        }
        i = end + 1;
    }
    let (mut depth, mut continued) = (0isize, false);
    for (j, line) in lines.iter().enumerate().skip(i) {
        let starts_import = line.starts_with("import ") || line.starts_with("from ");
        if depth > 0 || continued || starts_import {
            hidden[j] = true;
            depth += line
                .chars()
                .map(|c| match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                })
                .sum::<isize>();
            continued = line.trim_end().ends_with('\\');
        }
    }
    hidden
}

/// `view_file(path, offset)`: about `tokens` tokens of the file from line `offset` (0 or 1 is
/// the start), licence header and imports left out, each line numbered, with the offset to
/// pass for the next window.
pub fn view_file(
    index: &RepoIndex,
    path: &str,
    offset: usize,
    tokens: usize,
) -> Result<String, String> {
    let file = indexed_file(index, path)?;
    let indexed = &index.files[file];
    Ok(window(indexed.path(), &indexed.text, offset, tokens))
}

fn window(name: &str, text: &str, offset: usize, tokens: usize) -> String {
    let hidden = hidden_lines(text);
    let total = hidden.len();
    let budget = tokens * 4;
    let mut body = String::new();
    let mut last = None;
    for (i, line) in text.lines().enumerate().skip(offset.saturating_sub(1)) {
        if hidden[i] {
            continue;
        }
        let numbered = format!("{:>4} {line}\n", i + 1);
        if body.len() + numbered.len() > budget {
            if body.is_empty() {
                // A line longer than the window (generated code: 2 MB on one line) is cut.
                let shown = crate::text::head(line, budget);
                let _ = writeln!(
                    body,
                    "{:>4} {shown} … (line cut: {} of its {} bytes shown)",
                    i + 1,
                    shown.len(),
                    line.len()
                );
                last = Some(i + 1);
            }
            break;
        }
        body.push_str(&numbered);
        last = Some(i + 1);
    }
    let Some(last) = last else {
        return format!("{name}: nothing to show from line {offset} ({total} lines)\n");
    };
    let more = if last < total {
        format!("(next offset: {})", last + 1)
    } else {
        "(end of file)".to_owned()
    };
    format!("{name} ({total} lines; licence header and imports hidden):\n{body}{more}\n")
}

/// `view_readme()`: the first window of the README at the repository root. A README that is a
/// link is read only where it leads to another README of the repository (a file named
/// `README…`) none of whose folders is hidden (`docs/README.md`, not `.git/config`, `.env` or
/// an ignored `secrets.py`), and neither the README nor where it leads may be ignored by the
/// repository's ignore rules (`secret/README.md` under an ignored `secret/`): what the model is
/// shown goes to the endpoint, and a repository's link must not send the user's local secrets
/// there.
pub fn view_readme(index: &RepoIndex, tokens: usize) -> Result<String, String> {
    // An ignored README is passed over for the next name (a generated `README.md` ignored
    // beside the `README.rst` the repository ships); said only where none is shown.
    let mut ignored = None;
    for name in ["README.md", "README.rst", "README.txt", "README"] {
        if !index.root.join(name).exists() {
            continue;
        }
        let path = confine(&index.root, name)?;
        let root = index
            .root
            .canonicalize()
            .map_err(|e| format!("cannot read {name}: {e}"))?;
        let hidden = path.strip_prefix(&root).map_or(true, |inside| {
            inside
                .components()
                .any(|part| part.as_os_str().as_encoded_bytes().starts_with(b"."))
        });
        if hidden {
            return Err(format!(
                "{name} is a link to a hidden file of the repository; not shown"
            ));
        }
        let a_readme = path.file_name().is_some_and(|target| {
            let target = target.as_encoded_bytes();
            target.len() >= 6 && target[..6].eq_ignore_ascii_case(b"readme")
        });
        if !a_readme {
            return Err(format!(
                "{name} is a link to a file that is not a README; not shown"
            ));
        }
        if crate::repo::ignored_on_the_way(&root, &[&root.join(name), &path]) {
            ignored.get_or_insert(format!(
                "{name} is ignored by the repository's ignore rules; not shown"
            ));
            continue;
        }
        // Only the first window is shown: its first megabyte is all that is read.
        let mut text = Vec::new();
        crate::repo::read::open_regular(&path)
            .map_err(|f| format!("cannot read {name}: {}", f.into_error(&path, "README")))?
            .take(crate::repo::read::MAX_SMALL_FILE_BYTES)
            .read_to_end(&mut text)
            .map_err(|e| format!("cannot read {name}: {e}"))?;
        return Ok(truncate_lines(&String::from_utf8_lossy(&text), tokens));
    }
    Err(ignored.unwrap_or_else(|| "the repository has no README at its root".to_owned()))
}

/// `bm25_topk(query, k)`: the `k` files whose text best matches `query`, best first, with their
/// BM25 scores (files that match nothing are left out).
pub fn bm25_topk(index: &RepoIndex, query: &str, k: usize) -> Vec<(usize, f32)> {
    index.file_bm25.top_k(&QueryTokens::of(query), k)
}

#[cfg(test)]
mod tests;
