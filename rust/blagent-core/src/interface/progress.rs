//! Progress of `batch`, `eval` and `calibrate` on stderr: an indicatif bar on a terminal, one
//! line per instance otherwise (logs and CI), nothing when turned off.

use std::io::{IsTerminal, Write};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How progress is shown.
#[derive(Debug)]
pub(crate) enum Progress {
    /// A bar redrawn in place.
    Bar(ProgressBar),
    /// One line per finished instance.
    Lines {
        /// Instances to do.
        total: u64,
        /// Instances done.
        done: u64,
    },
    /// Nothing.
    Off,
}

impl Progress {
    /// Progress over `total` instances; a bar when `enabled` and stderr is a terminal.
    pub fn new(enabled: bool, total: u64) -> Self {
        if !enabled {
            return Progress::Off;
        }
        if !std::io::stderr().is_terminal() {
            return Progress::Lines { total, done: 0 };
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(
            "{bar:30} {pos}/{len} [{elapsed_precise}<{eta_precise}, {per_sec}] {msg}",
        ) {
            bar.set_style(style);
        }
        Progress::Bar(bar)
    }

    /// A note above the bar (or a line), e.g. how many instances a resumed run skips.
    pub fn note(&self, message: &str) {
        let message = printable(message);
        match self {
            Progress::Bar(bar) => bar.println(message),
            Progress::Lines { .. } => {
                let _ = writeln!(std::io::stderr(), "{message}");
            }
            Progress::Off => {}
        }
    }

    /// Shows which instance is being worked on.
    pub fn start(&self, instance_id: &str) {
        if let Progress::Bar(bar) = self {
            bar.set_message(printable(instance_id).into_owned());
        }
    }

    /// Records one finished instance with its outcome in words.
    pub fn finish_one(&mut self, instance_id: &str, outcome: &str) {
        let (instance_id, outcome) = (printable(instance_id), printable(outcome));
        match self {
            Progress::Bar(bar) => {
                if outcome.starts_with("FAILED") {
                    bar.println(format!("{instance_id}: {outcome}"));
                }
                bar.inc(1);
            }
            Progress::Lines { total, done } => {
                *done += 1;
                let _ = writeln!(
                    std::io::stderr(),
                    "[{done}/{total}] {instance_id}: {outcome}"
                );
            }
            Progress::Off => {}
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}

/// `text` with control characters escaped (`\u{1b}`), and the format characters that reorder
/// or hide text (bidirectional overrides and isolates, zero-width characters): instance ids and
/// messages come from the dataset and must not drive the terminal, nor show other text than
/// they hold. Cut at [`MAX_SHOWN_CHARS`] characters (a 100 KB id made 100 KB progress lines).
fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    // Outside ASCII only letters and digits are shown as they are, and the few signs
    // blagent's own messages use: any other character may be invisible or reorder the line
    // (a review: tag characters, soft hyphens and variation selectors showed `tagx` for
    // another id), and a hand-made list of them missed some.
    let hidden = |c: char| {
        c.is_control() || (!c.is_ascii() && !c.is_alphanumeric() && !"…—–→×≥≤·".contains(c))
    };
    let long = text.len() > MAX_SHOWN_CHARS && text.chars().nth(MAX_SHOWN_CHARS).is_some();
    if !long && !text.chars().any(hidden) {
        return text.into();
    }
    let mut shown: String = text
        .chars()
        .take(MAX_SHOWN_CHARS)
        .map(|c| {
            if hidden(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect();
    if long {
        shown.push('…');
    }
    shown.into()
}

/// The most characters of an id or message a progress line shows.
const MAX_SHOWN_CHARS: usize = 500;

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(super::printable("a\u{1b}]0;x\u{7}b"), "a\\u{1b}]0;x\\u{7}b");
        // From a review: a right-to-left override showed `live` as `evil`.
        assert_eq!(super::printable("\u{202e}live"), "\\u{202e}live");
        assert_eq!(
            super::printable("tag\u{e0041}x\u{ad}é…"),
            "tag\\u{e0041}x\\u{ad}é…"
        );
        let long = "x".repeat(100_000);
        assert_eq!(
            super::printable(&long).chars().count(),
            super::MAX_SHOWN_CHARS + 1
        );
        assert!(matches!(
            super::printable("plain é"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
