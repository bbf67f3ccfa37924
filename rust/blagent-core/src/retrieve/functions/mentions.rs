//! The features that follow the issue's mentions: functions it names (bare or qualified),
//! methods of classes it names, functions whose bodies use or call what it names, traceback
//! frames, quoted error messages and links to lines.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use regex::{Regex, RegexBuilder};

use super::candidates::CandidateSet;
use super::features::Feature;
use crate::error::{Error, Result};
use crate::query::{IdentifierSource, Reformulation};
use crate::retrieve::signals::{issue_fragments, source_weight};

/// A link to lines of a file, as GitHub and GitLab write them: a path ending in a file name,
/// `#L` and a line, and maybe `-L` (or `-`) and a last line.
static LINE_LINK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"([\w./-]*[\w-]+\.\w+)#L(\d{1,7})(?:-L?(\d{1,7}))?").expect("valid")
});

/// Names shorter than this (`x`, `df`) are matched in bodies too often by chance.
const MIN_USED_NAME_CHARS: usize = 3;

/// The names an issue mentions, with how deliberately each was named.
#[derive(Debug, Default)]
pub(super) struct Mentions {
    /// Bare name (a dotted name's last part) → strongest source weight.
    names: HashMap<String, f32>,
    /// The lengths of the bare names, a bit each (63: 63 bytes or more), so that most words of
    /// a source file are told apart from every name without hashing them.
    lengths: u64,
    /// Dotted names, split at their dots, each once with its strongest weight, listed under
    /// their last two parts (a qualified mention matches on two parts at least).
    dotted: HashMap<(String, String), HashMap<Vec<String>, f32>>,
    /// Each part of a dotted name before its last (`Cart` in `Cart.total`) → strongest weight.
    prefixes: HashMap<String, f32>,
}

impl Mentions {
    /// The mentions of `query`: its identifiers and dotted module names.
    pub fn of(query: &Reformulation) -> Self {
        let mut out = Mentions::default();
        for identifier in &query.identifiers {
            let weight = source_weight(identifier.source);
            let parts: Vec<String> = identifier.name.split('.').map(str::to_owned).collect();
            if let Some(bare) = parts.last() {
                let slot = out.names.entry(bare.clone()).or_default();
                *slot = slot.max(weight);
                out.lengths |= length_bit(bare);
            }
            if parts.len() > 1 {
                out.add_dotted(parts, weight);
            }
        }
        let dotted_weight = source_weight(IdentifierSource::Dotted);
        for module in &query.modules {
            out.add_dotted(
                module.split('.').map(str::to_owned).collect(),
                dotted_weight,
            );
        }
        out
    }

    /// Adds the dotted name `parts` at `weight`; a name of one part (a module `shop`) names no
    /// class or qualified function.
    fn add_dotted(&mut self, parts: Vec<String>, weight: f32) {
        let n = parts.len();
        if n < 2 {
            return;
        }
        for part in &parts[..n - 1] {
            let slot = self.prefixes.entry(part.clone()).or_default();
            *slot = slot.max(weight);
        }
        let listed = self
            .dotted
            .entry((parts[n - 2].clone(), parts[n - 1].clone()))
            .or_default();
        let slot = listed.entry(parts).or_default();
        *slot = slot.max(weight);
    }

    /// The weight of a mention of the bare name `name` (0 when not mentioned).
    fn name(&self, name: &str) -> f32 {
        if self.lengths & length_bit(name) == 0 {
            return 0.0;
        }
        self.names.get(name).copied().unwrap_or(0.0)
    }

    /// Searches that find every mentioned bare name a function body can use (an ASCII
    /// identifier of [`MIN_USED_NAME_CHARS`] or more), longest first where names share a start,
    /// so that a name standing alone is never hidden by a longer one that does not. The names
    /// are split into searches of at most [`SEARCH_BYTES`] of pattern each.
    fn searches(&self) -> Result<Vec<Regex>> {
        let mut names: Vec<&str> = self
            .names
            .iter()
            .filter(|&(name, &weight)| weight > 0.0 && is_usable_name(name))
            .map(|(name, _)| name.as_str())
            .collect();
        names.sort_unstable_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        let mut groups: Vec<Vec<&str>> = Vec::new();
        let mut bytes = 0;
        for name in names {
            match groups.last_mut() {
                Some(group) if bytes + name.len() <= SEARCH_BYTES => group.push(name),
                _ => {
                    bytes = 0;
                    groups.push(vec![name]);
                }
            }
            bytes += name.len();
        }
        groups
            .into_iter()
            .map(|group| {
                RegexBuilder::new(&group.join("|"))
                    .size_limit(SEARCH_SIZE_LIMIT)
                    .build()
                    .map_err(|e| Error::Internal(format!("searching the mentioned names: {e}")))
            })
            .collect()
    }

    /// The weight of a mention of the class `name`: bare, or as a part of a dotted name
    /// before its last (`Cart` in `Cart.total`).
    fn class(&self, name: &str) -> f32 {
        self.prefixes
            .get(name)
            .copied()
            .unwrap_or(0.0)
            .max(self.name(name))
    }

    /// The weight of a dotted mention naming `qualified` (`Class.method`) in a file whose
    /// stem is `stem`: the dotted name ends with the qualified name (two parts at least), or,
    /// for a module-level function, with `stem.function`.
    fn qualified(&self, qualified: &str, stem: &str) -> f32 {
        let mut q: Vec<&str> = qualified.split('.').collect();
        if q.len() == 1 {
            q.insert(0, stem);
        }
        let key = (q[q.len() - 2].to_owned(), q[q.len() - 1].to_owned());
        let Some(listed) = self.dotted.get(&key) else {
            return 0.0;
        };
        listed
            .iter()
            .filter(|(parts, _)| {
                let k = parts.len().min(q.len());
                k >= 2
                    && parts[parts.len() - k..]
                        .iter()
                        .zip(&q[q.len() - k..])
                        .all(|(a, b)| a == b)
            })
            .map(|(_, &w)| w)
            .fold(0.0, f32::max)
    }
}

/// Bytes of names one search of [`Mentions::searches`] holds.
const SEARCH_BYTES: usize = 64 << 10;
/// The compiled size a search may take (names are plain identifiers: no pattern comes near).
const SEARCH_SIZE_LIMIT: usize = 256 << 20;

/// Whether a mentioned name can be a word of a body: an ASCII identifier of at least
/// [`MIN_USED_NAME_CHARS`] bytes.
fn is_usable_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() >= MIN_USED_NAME_CHARS
        && (bytes[0].is_ascii_alphabetic() || bytes[0] == b'_')
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The bit of [`Mentions::lengths`] for `name`.
fn length_bit(name: &str) -> u64 {
    1 << name.len().min(63)
}

/// [`Feature::Name`], [`Feature::NameSpecific`], [`Feature::Qualified`] and [`Feature::Class`].
pub(super) fn name_mentions(set: &mut CandidateSet<'_>, mentions: &Mentions) {
    // Per name, how many files define it; per qualified name and file stem, its mention:
    // each counted once, however many candidates share them.
    let mut defining_files: HashMap<String, usize> = HashMap::new();
    let mut qualified_seen: HashMap<(String, String), f32> = HashMap::new();
    for item in 0..set.items.len() {
        let file = set.items[item].file;
        let symbol = set.symbol(item);
        let name = mentions.name(&symbol.name);
        let defining = if name > 0.0 {
            *defining_files
                .entry(symbol.name.clone())
                .or_insert_with(|| {
                    set.index.definitions.get(&symbol.name).map_or(1, |defs| {
                        defs.iter().map(|&(f, _)| f).collect::<HashSet<_>>().len()
                    })
                })
        } else {
            1
        };
        let path = set.index.files[file].path();
        let base = path.rsplit('/').next().unwrap_or(path);
        let stem = base.split('.').next().unwrap_or(base);
        let qualified = *qualified_seen
            .entry((symbol.qualified.clone(), stem.to_owned()))
            .or_insert_with(|| mentions.qualified(&symbol.qualified, stem));
        let class = symbol
            .qualified
            .rsplit('.')
            .nth(1)
            .map_or(0.0, |class| mentions.class(class));
        let candidate = &mut set.items[item];
        candidate.raise(Feature::Name, name);
        candidate.raise(Feature::NameSpecific, name / defining.max(1) as f32);
        candidate.raise(Feature::Qualified, qualified);
        candidate.raise(Feature::Class, class);
    }
}

/// Parameter names that say nothing about a function.
const RECEIVERS: [&str; 3] = ["self", "cls", "this"];

/// [`Feature::Parameter`]: the strongest mention of one of a function's parameters (a word of
/// its signature other than its own name, at least [`MIN_USED_NAME_CHARS`] long).
pub(super) fn parameter_mentions(set: &mut CandidateSet<'_>, mentions: &Mentions) {
    for item in 0..set.items.len() {
        let symbol = set.symbol(item);
        let value = words(&symbol.signature)
            .filter(|w| w.text != symbol.name && w.text.len() >= MIN_USED_NAME_CHARS)
            .filter(|w| !RECEIVERS.contains(&w.text))
            .map(|w| mentions.name(w.text))
            .fold(0.0, f32::max);
        set.items[item].raise(Feature::Parameter, value);
    }
}

/// An identifier-like word of a source text: its text, whether a call follows it.
struct Word<'t> {
    text: &'t str,
    call: bool,
}

/// The ASCII identifiers of `text`, as they are read (a whole file's words are never held at
/// once).
fn words(text: &str) -> impl Iterator<Item = Word<'_>> {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let b = bytes[i];
            if b.is_ascii_alphabetic() || b == b'_' {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                let mut j = i;
                while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t') {
                    j += 1;
                }
                return Some(Word {
                    text: &text[start..i],
                    call: bytes.get(j) == Some(&b'('),
                });
            } else if b.is_ascii_digit() || !b.is_ascii() {
                // Skip the rest of a number or of a non-ASCII word, so `x2` parts are not words.
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || !bytes[i].is_ascii())
                {
                    i += 1;
                }
            } else {
                i += 1;
            }
        }
        None
    })
}

/// [`Feature::Uses`] (a function's body refers to mentioned names other than its own) and
/// [`Feature::Callee`] (a function the issue names, by [`Feature::Name`] or
/// [`Feature::Qualified`], calls it). Run after [`name_mentions`].
///
/// A use is a mentioned name standing as a whole word (as [`words`] reads them) on a line of
/// the function: the names are found with one search per file, not by reading every word.
/// Calls are read word by word, on the lines the named functions hold only.
pub(super) fn body_mentions(set: &mut CandidateSet<'_>, mentions: &Mentions) -> Result<()> {
    let mut uses: HashMap<usize, HashMap<&str, f32>> = HashMap::new();
    let searches = mentions.searches()?;
    for file in set.files.clone() {
        let text: &str = &set.index.files[file].text;
        let owners = set.owners(file);
        for search in &searches {
            for found in search.find_iter(text) {
                let (start, end) = (found.start(), found.end());
                if !stands_alone(text.as_bytes(), start, end) {
                    continue;
                }
                let line = set.line_at(file, start);
                let Some(item) = owners.get(line - 1).copied().flatten() else {
                    continue;
                };
                let item = item as usize;
                let name = found.as_str();
                if name != set.symbol(item).name {
                    let slot = uses.entry(item).or_default().entry(name).or_default();
                    *slot = slot.max(mentions.name(name));
                }
            }
        }
    }
    let mut callees: HashMap<&str, f32> = HashMap::new();
    for item in 0..set.items.len() {
        let caller = &set.items[item];
        let named = caller
            .get(Feature::Name)
            .max(caller.get(Feature::Qualified));
        if named <= 0.0 {
            continue;
        }
        let own = &set.symbol(item).name;
        for word in set.held_lines(item).flat_map(words) {
            if word.call && word.text != own {
                let slot = callees.entry(word.text).or_default();
                *slot = slot.max(named);
            }
        }
    }
    let callees: HashMap<String, f32> = callees
        .into_iter()
        .map(|(name, weight)| (name.to_owned(), weight))
        .collect();
    for (item, names) in uses {
        let total: f32 = names.values().sum();
        set.items[item].raise(Feature::Uses, total.min(1.0));
    }
    for item in 0..set.items.len() {
        if let Some(&weight) = callees.get(&set.symbol(item).name) {
            set.items[item].raise(Feature::Callee, weight);
        }
    }
    Ok(())
}

/// Whether `text[start..end]` is a whole word as [`words`] reads it: no identifier byte (or,
/// as `words` skips a number's or a non-ASCII word's tail, non-ASCII byte) before it, and no
/// identifier byte after it.
fn stands_alone(text: &[u8], start: usize, end: usize) -> bool {
    let before = start
        .checked_sub(1)
        .map(|i| text[i])
        .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || !b.is_ascii());
    let after = text
        .get(end)
        .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_');
    !before && !after
}

/// [`Feature::Frame`]: the function holding each resolved traceback frame (innermost first),
/// or, when no function holds its line, the function of its file the frame names.
pub(super) fn frames(set: &mut CandidateSet<'_>, query: &Reformulation) {
    let mut rank = 0usize;
    for frame in &query.stack_frames {
        let files = set.index.resolver.resolve_source(&frame.path);
        if files.len() != 1 {
            continue;
        }
        let file = files[0] as usize;
        let value = 1.0 / (1.0 + rank as f32);
        rank += 1;
        if !set.has_file(file) {
            continue;
        }
        let item = set.at(file, (frame.line, frame.line)).or_else(|| {
            let name = frame.function.as_deref()?;
            let symbols = set.symbols(file);
            let s = symbols.iter().position(|s| s.name == name)?;
            set.slot(file, s)
        });
        if let Some(item) = item {
            set.items[item].raise(Feature::Frame, value);
        }
    }
}

/// [`Feature::Error`]: functions holding the literal text of a quoted error message.
pub(super) fn errors(set: &mut CandidateSet<'_>, query: &Reformulation) {
    let fragments = issue_fragments(query);
    for fragment in fragments {
        for file in set.files.clone() {
            let text = &set.index.files[file].text;
            let hits: Vec<usize> = text.match_indices(&fragment).map(|(at, _)| at).collect();
            for at in hits {
                let line = set.line_at(file, at);
                set.raise_at(file, (line, line), Feature::Error, 1.0);
            }
        }
    }
}

/// [`Feature::LineLink`]: functions holding lines the issue links to
/// (`https://github.com/o/r/blob/<ref>/pkg/mod.py#L428-L433`). The link's path after
/// `/blob/<ref>/` is resolved as a mentioned path, and must name one file; every function
/// with a line in the range gets 1. The ref may not be the checkout's commit, so the lines are
/// where they were then; on the development set they still mostly fall in the function meant.
pub(super) fn line_links(set: &mut CandidateSet<'_>, query: &Reformulation) {
    // The linked line ranges of each file, merged before they are walked: an issue that links
    // the same long range many times walks it once.
    let mut ranges: HashMap<usize, Vec<(usize, usize)>> = HashMap::new();
    for link in LINE_LINK.captures_iter(&query.explanation) {
        let path = &link[1];
        let path = match path.split_once("/blob/") {
            Some((_, after)) => after.split_once('/').map_or(after, |(_, path)| path),
            None => path,
        };
        let files = set.index.resolver.resolve_source(path);
        let (Ok(first), &[file]) = (link[2].parse::<usize>(), files.as_slice()) else {
            continue;
        };
        let file = file as usize;
        if !set.has_file(file) {
            continue;
        }
        let last = link
            .get(3)
            .and_then(|m| m.as_str().parse::<usize>().ok())
            .unwrap_or(first)
            .max(first);
        ranges.entry(file).or_default().push((first, last));
    }
    for (file, mut spans) in ranges {
        spans.sort_unstable();
        let owners = set.owners(file);
        let mut held: HashSet<usize> = HashSet::new();
        // Lines already walked end before `walked`.
        let mut walked = 0;
        for (first, last) in spans {
            let from = first.saturating_sub(1).max(walked);
            let to = last.min(owners.len());
            if from < to {
                held.extend(owners[from..to].iter().flatten().map(|&item| item as usize));
                walked = to;
            }
        }
        for item in held {
            set.items[item].raise(Feature::LineLink, 1.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_know_their_calls() {
        let found: Vec<(&str, bool)> = words("def f(x):\n    return g (x2) + 3e5\n")
            .map(|w| (w.text, w.call))
            .collect();
        assert_eq!(
            found,
            [
                ("def", false),
                ("f", true),
                ("x", false),
                ("return", false),
                ("g", true),
                ("x2", false),
            ]
        );
    }

    /// The searches find a name exactly where [`words`] reads it as a whole word.
    #[test]
    fn searches_find_names_where_words_read_them() {
        let text =
            "foo foox xfoo _foo 2foo 3e5foo éfoo foo_ foo() foo.bar(foo)\nfoobar fo\tfoo\r\nfooé\n";
        let query =
            crate::query::reformulate("Calling `foo` and `foobar` fails; `fo` too, and `é`.");
        let mentions = Mentions::of(&query);
        let searches = mentions.searches().unwrap();
        let found: Vec<(usize, &str)> = searches
            .iter()
            .flat_map(|s| s.find_iter(text))
            .filter(|m| stands_alone(text.as_bytes(), m.start(), m.end()))
            .map(|m| (m.start(), m.as_str()))
            .collect();
        let read: Vec<(usize, &str)> = words(text)
            .filter(|w| ["foo", "foobar"].contains(&w.text))
            .map(|w| (w.text.as_ptr() as usize - text.as_ptr() as usize, w.text))
            .collect();
        assert_eq!(found, read);
        assert_eq!(found.len(), 7, "{found:?}");
    }

    #[test]
    fn qualified_mentions_need_two_matching_parts() {
        let query = crate::query::reformulate(
            "Calling `QuerySet.bulk_create` fails, and so does utils.helper(x) in django.db.models.Q",
        );
        let mentions = Mentions::of(&query);
        assert!(mentions.qualified("QuerySet.bulk_create", "query") > 0.0);
        assert!(mentions.qualified("Other.bulk_create", "query") == 0.0);
        assert!(mentions.qualified("helper", "utils") > 0.0);
        assert!(mentions.qualified("helper", "other") == 0.0);
        assert!(mentions.name("bulk_create") > 0.0);
        // A module of one part (`shop`) names nothing qualified and breaks nothing.
        let query = crate::query::reformulate("Importing shop fails in shop/pricing.py");
        let mentions = Mentions::of(&query);
        assert!(mentions.qualified("pricing", "shop") == 0.0 && mentions.class("shop") == 0.0);
    }
}
