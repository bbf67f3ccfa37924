//! The features that follow the mentions: functions it names (bare or qualified),
//! methods of classes it names, functions whose bodies use or call what it names, traceback
//! frames and quoted error messages.

use std::collections::{HashMap, HashSet};

use super::candidates::CandidateSet;
use super::features::Feature;
use crate::query::{IdentifierSource, Reformulation};
use crate::retrieve::signals::{message_fragments, source_weight};

/// Names shorter than this (`x`, `df`) are matched in bodies too often by chance.
const MIN_USED_NAME_CHARS: usize = 3;

/// The names an issue mentions, with how deliberately each was named.
#[derive(Debug, Default)]
pub(super) struct Mentions {
    /// Bare name (a dotted name's last part) → strongest source weight.
    names: HashMap<String, f32>,
    /// Dotted names, split at their dots, with their weights.
    dotted: Vec<(Vec<String>, f32)>,
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
            }
            if parts.len() > 1 {
                out.dotted.push((parts, weight));
            }
        }
        let dotted_weight = source_weight(IdentifierSource::Dotted);
        for module in &query.modules {
            out.dotted.push((
                module.split('.').map(str::to_owned).collect(),
                dotted_weight,
            ));
        }
        out
    }

    /// The weight of a mention of the bare name `name` (0 when not mentioned).
    fn name(&self, name: &str) -> f32 {
        self.names.get(name).copied().unwrap_or(0.0)
    }

    /// The weight of a mention of the class `name`: bare, or as a part of a dotted name
    /// before its last (`Cart` in `Cart.total`).
    fn class(&self, name: &str) -> f32 {
        self.dotted
            .iter()
            .filter(|(parts, _)| parts[..parts.len() - 1].iter().any(|p| p == name))
            .map(|&(_, w)| w)
            .fold(self.name(name), f32::max)
    }

    /// The weight of a dotted mention naming `qualified` (`Class.method`) in a file whose
    /// stem is `stem`: the dotted name ends with the qualified name (two parts at least), or,
    /// for a module-level function, with `stem.function`.
    fn qualified(&self, qualified: &str, stem: &str) -> f32 {
        let mut q: Vec<&str> = qualified.split('.').collect();
        if q.len() == 1 {
            q.insert(0, stem);
        }
        self.dotted
            .iter()
            .filter(|(parts, _)| {
                let k = parts.len().min(q.len());
                k >= 2
                    && parts[parts.len() - k..]
                        .iter()
                        .zip(&q[q.len() - k..])
                        .all(|(a, b)| a == b)
            })
            .map(|&(_, w)| w)
            .fold(0.0, f32::max)
    }
}

/// [`Feature::Name`], [`Feature::NameSpecific`], [`Feature::Qualified`] and [`Feature::Class`].
pub(super) fn name_mentions(set: &mut CandidateSet<'_>, mentions: &Mentions) {
    for item in 0..set.items.len() {
        let file = set.items[item].file;
        let symbol = set.symbol(item);
        let name = mentions.name(&symbol.name);
        let defining = set.index.definitions.get(&symbol.name).map_or(1, |defs| {
            defs.iter().map(|&(f, _)| f).collect::<HashSet<_>>().len()
        });
        let path = set.index.files[file].path();
        let base = path.rsplit('/').next().unwrap_or(path);
        let stem = base.split('.').next().unwrap_or(base);
        let qualified = mentions.qualified(&symbol.qualified, stem);
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
            .iter()
            .filter(|w| w.text != symbol.name && w.text.len() >= MIN_USED_NAME_CHARS)
            .filter(|w| !RECEIVERS.contains(&w.text))
            .map(|w| mentions.name(w.text))
            .fold(0.0, f32::max);
        set.items[item].raise(Feature::Parameter, value);
    }
}

/// An identifier-like word of a source text: its line, its text, whether a call follows it.
struct Word<'t> {
    line: usize,
    text: &'t str,
    call: bool,
}

/// The ASCII identifiers of `text` with their lines.
fn words(text: &str) -> Vec<Word<'_>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\n' {
            line += 1;
            i += 1;
        } else if b.is_ascii_alphabetic() || b == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let mut j = i;
            while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t') {
                j += 1;
            }
            let call = bytes.get(j) == Some(&b'(');
            out.push(Word {
                line,
                text: &text[start..i],
                call,
            });
        } else if b.is_ascii_digit() || !b.is_ascii() {
            // Skip the rest of a number or of a non-ASCII word, so `x2` parts are not words.
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || !bytes[i].is_ascii()) {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// [`Feature::Uses`] (a function's body refers to mentioned names other than its own) and
/// [`Feature::Callee`] (a function the issue names, by [`Feature::Name`] or
/// [`Feature::Qualified`], calls it). Run after [`name_mentions`].
pub(super) fn body_mentions(set: &mut CandidateSet<'_>, mentions: &Mentions) {
    let mut uses: HashMap<usize, HashMap<&str, f32>> = HashMap::new();
    let mut callees: HashMap<String, f32> = HashMap::new();
    for file in set.files.clone() {
        let text = &set.index.files[file].text;
        for word in words(text) {
            let Some(item) = set.at(file, (word.line, word.line)) else {
                continue;
            };
            let own = &set.symbol(item).name;
            let weight = mentions.name(word.text);
            if weight > 0.0 && word.text.len() >= MIN_USED_NAME_CHARS && word.text != own {
                let slot = uses.entry(item).or_default().entry(word.text).or_default();
                *slot = slot.max(weight);
            }
            let caller = &set.items[item];
            let named = caller
                .get(Feature::Name)
                .max(caller.get(Feature::Qualified));
            if word.call && named > 0.0 && word.text != own {
                let slot = callees.entry(word.text.to_owned()).or_default();
                *slot = slot.max(named);
            }
        }
    }
    for (item, names) in uses {
        let total: f32 = names.values().sum();
        set.items[item].raise(Feature::Uses, total.min(1.0));
    }
    for item in 0..set.items.len() {
        if let Some(&weight) = callees.get(&set.symbol(item).name) {
            set.items[item].raise(Feature::Callee, weight);
        }
    }
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
    let fragments: HashSet<String> = query
        .error_messages
        .iter()
        .flat_map(|m| message_fragments(m))
        .collect();
    for fragment in fragments {
        for file in set.files.clone() {
            let text = &set.index.files[file].text;
            let hits: Vec<usize> = text.match_indices(&fragment).map(|(at, _)| at).collect();
            for at in hits {
                let line = text[..at].matches('\n').count() + 1;
                set.raise_at(file, (line, line), Feature::Error, 1.0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_know_their_lines_and_calls() {
        let found: Vec<(usize, &str, bool)> = words("def f(x):\n    return g (x2) + 3e5\n")
            .into_iter()
            .map(|w| (w.line, w.text, w.call))
            .collect();
        assert_eq!(
            found,
            [
                (1, "def", false),
                (1, "f", true),
                (1, "x", false),
                (2, "return", false),
                (2, "g", true),
                (2, "x2", false),
            ]
        );
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
    }
}
