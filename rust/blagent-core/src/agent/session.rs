//! One pipeline run's conversation with the model: every reply is parsed and validated; an
//! invalid one is answered with the exact error and the expected shape, at most
//! `max_retries` times; then the caller falls back. Calls, tokens per stage, parse failures,
//! retries and fallbacks are counted in [`LlmStats`]. A model that fails outright (no endpoint,
//! retries exhausted in the transport) is not asked again in the same run, and a call that
//! would take the run past its prompt-token budget is not made.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::prompts::Prompts;
use super::tools::{approx_tokens, truncate_lines};
use crate::llm::{ChatModel, ChatRequest, Message, StageUsage};

/// A failed reply is echoed back to the model cut to this many tokens.
const ECHO_TOKENS: usize = 120;

/// The longest reply a stage reads: a query, a field list or a file's score is a few KB, and
/// whatever a reply holds is kept in the result (a 50 MB "query" made a 106 MB output line).
/// A longer reply counts as an invalid one (repaired, then the stage falls back).
pub const MAX_REPLY_BYTES: usize = 256 * 1024;

/// What one LLM run cost and where it fell short.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmStats {
    /// Calls made to the model (retries included).
    pub calls: u64,
    /// Replies that could not be parsed or failed validation.
    pub parse_failures: u64,
    /// Repair requests sent after a failure.
    pub retries: u64,
    /// Stages that used their fallback, with why (`phase1: no valid reply after 3 retries`),
    /// each cut to [`MAX_FALLBACK_CHARS`] characters (a reason may quote the model's reply).
    pub fallbacks: Vec<String>,
    /// Model paths that named no single file and were dropped: the first
    /// [`MAX_LISTED_DROPPED`], each cut to [`MAX_DROPPED_CHARS`] characters.
    pub dropped_paths: Vec<String>,
    /// Dropped paths past those listed (a model can name thousands).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_paths_unlisted: u64,
    /// Tool calls refused or warned (duplicate reads, repeated views, escapes): the first
    /// [`MAX_LISTED_WARNINGS`], each cut to [`MAX_WARNING_CHARS`] characters.
    pub tool_warnings: Vec<String>,
    /// Tool warnings past those listed (a model can make a refused call every turn).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tool_warnings_unlisted: u64,
    /// Tokens and calls per stage (`t0`, `t1`, `phase1`, …).
    pub stages: BTreeMap<String, StageUsage>,
    /// Wall-clock milliseconds of the whole pipeline.
    pub wall_ms: f64,
}

/// Dropped model paths listed in [`LlmStats::dropped_paths`].
pub const MAX_LISTED_DROPPED: usize = 50;
/// Characters of a dropped path listed.
pub const MAX_DROPPED_CHARS: usize = 300;
/// Tool warnings listed in [`LlmStats::tool_warnings`].
pub const MAX_LISTED_WARNINGS: usize = 50;
/// Characters of a tool warning listed.
pub const MAX_WARNING_CHARS: usize = 300;
/// Characters of a fallback's reason kept in [`LlmStats::fallbacks`], the stage's name
/// included: more than an endpoint's error with its quoted body takes.
pub const MAX_FALLBACK_CHARS: usize = 1000;

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl LlmStats {
    /// Notes model paths that were dropped: listed up to [`MAX_LISTED_DROPPED`], counted past
    /// that, so a model that names thousands cannot swell the result.
    pub fn drop_paths(&mut self, dropped: impl IntoIterator<Item = String>) {
        for path in dropped {
            if self.dropped_paths.len() < MAX_LISTED_DROPPED {
                self.dropped_paths
                    .push(crate::text::cut_chars(path.chars(), MAX_DROPPED_CHARS));
            } else {
                self.dropped_paths_unlisted += 1;
            }
        }
    }

    /// Notes a tool warning: listed up to [`MAX_LISTED_WARNINGS`], each cut to
    /// [`MAX_WARNING_CHARS`] characters, and counted past that, so a model that repeats a
    /// refused call, or names a path of any length, cannot swell the result.
    pub fn warn(&mut self, warning: &str) {
        if self.tool_warnings.len() < MAX_LISTED_WARNINGS {
            self.tool_warnings
                .push(crate::text::cut_chars(warning.chars(), MAX_WARNING_CHARS));
        } else {
            self.tool_warnings_unlisted = self.tool_warnings_unlisted.saturating_add(1);
        }
    }

    /// Prompt and completion tokens over every stage.
    pub fn total_tokens(&self) -> (u64, u64) {
        self.stages.values().fold((0, 0), |(p, c), s| {
            (
                p.saturating_add(s.prompt_tokens),
                c.saturating_add(s.completion_tokens),
            )
        })
    }
}

/// Generation settings shared by every call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallSettings {
    pub temperature: f32,
    pub seed: Option<u64>,
    pub max_tokens: Option<u32>,
    pub max_retries: u32,
    pub json: bool,
    /// Prompt tokens the whole run may spend.
    pub max_prompt_tokens: Option<u64>,
}

pub(crate) struct Session<'a> {
    model: &'a dyn ChatModel,
    pub prompts: &'a Prompts,
    settings: CallSettings,
    pub stats: LlmStats,
    unavailable: bool,
}

impl<'a> Session<'a> {
    pub fn new(model: &'a dyn ChatModel, prompts: &'a Prompts, settings: CallSettings) -> Self {
        Session {
            model,
            prompts,
            settings,
            stats: LlmStats::default(),
            unavailable: false,
        }
    }

    /// Why sending `messages` would take the run past its prompt-token budget (spent, counted
    /// from usage, plus this request at about four characters a token), if it would.
    fn over_budget(&self, messages: &[Message]) -> Option<String> {
        let budget = self.settings.max_prompt_tokens?;
        let spent = self.stats.total_tokens().0;
        let next: u64 = messages
            .iter()
            .map(|m| approx_tokens(&m.content) as u64)
            .sum();
        (spent.saturating_add(next) > budget).then(|| {
            format!("the prompt-token budget ({budget}) is spent: {spent} used, this call needs about {next}")
        })
    }

    /// Records that `stage` used its fallback, the reason cut to [`MAX_FALLBACK_CHARS`]
    /// characters (it may quote a reply of up to [`MAX_REPLY_BYTES`]).
    pub fn fallback(&mut self, stage: &str, why: &str) {
        self.stats.fallbacks.push(crate::text::cut_chars(
            format!("{stage}: {why}").chars(),
            MAX_FALLBACK_CHARS,
        ));
    }

    fn call(&mut self, stage: &str, messages: &[Message]) -> Result<String, String> {
        let request = ChatRequest {
            stage: stage.to_owned(),
            messages: messages.to_vec(),
            temperature: self.settings.temperature,
            seed: self.settings.seed,
            max_tokens: self.settings.max_tokens,
            json: self.settings.json,
        };
        let response = self.model.chat(&request).map_err(|e| e.to_string())?;
        self.stats.calls = self.stats.calls.saturating_add(1);
        self.stats
            .stages
            .entry(stage.to_owned())
            .or_default()
            .record(&response.usage);
        Ok(response.content)
    }

    /// Asks until `parse` accepts a reply: the conversation is `messages` (failed attempts and
    /// repair requests are appended while retrying and removed again once a reply is accepted,
    /// so later turns do not carry them). `shape` is the JSON shape quoted in repair requests.
    /// A model that answers a repair request with the same invalid reply again is not asked a
    /// third time (at temperature 0 it would repeat itself until the retries run out).
    /// `None` means the stage must fall back; the reason is recorded.
    pub fn ask<T>(
        &mut self,
        stage: &str,
        messages: &mut Vec<Message>,
        shape: &str,
        mut parse: impl FnMut(&str) -> Result<T, String>,
    ) -> Option<T> {
        if self.unavailable {
            self.fallback(stage, "the model is unavailable");
            return None;
        }
        let base = messages.len();
        let mut attempt = 0;
        let mut previous: Option<String> = None;
        let outcome = loop {
            if let Some(why) = self.over_budget(messages) {
                self.fallback(stage, &why);
                break None;
            }
            let reply = match self.call(stage, messages) {
                Ok(reply) => reply,
                Err(e) => {
                    self.unavailable = true;
                    self.fallback(stage, &e);
                    break None;
                }
            };
            let parsed = if reply.len() > MAX_REPLY_BYTES {
                Err(format!(
                    "the reply is {} bytes, more than the {MAX_REPLY_BYTES} a reply may be",
                    reply.len()
                ))
            } else {
                parse(&reply)
            };
            match parsed {
                Ok(value) => break Some(value),
                Err(error) => {
                    self.stats.parse_failures += 1;
                    if previous.as_deref() == Some(reply.trim()) {
                        let why = format!("the model repeated an invalid reply ({error})");
                        self.fallback(stage, &why);
                        break None;
                    }
                    if attempt >= self.settings.max_retries {
                        let why =
                            format!("no valid reply after {attempt} retries (last error: {error})");
                        self.fallback(stage, &why);
                        break None;
                    }
                    previous = Some(reply.trim().to_owned());
                    attempt += 1;
                    self.stats.retries += 1;
                    let repair = self
                        .prompts
                        .render("repair", &[("error", &error), ("shape", shape)])
                        .unwrap_or_else(|e| format!("{error}\n{e}"));
                    messages.push(Message::assistant(truncate_lines(&reply, ECHO_TOKENS)));
                    messages.push(Message::user(repair));
                }
            }
        };
        messages.truncate(base);
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by a review: a reply naming 300,000 made-up paths made an 18.8 MB result.
    #[test]
    fn dropped_paths_are_listed_up_to_a_bound_and_counted_past_it() {
        let mut stats = LlmStats::default();
        stats.drop_paths((0..1000).map(|i| format!("made/up/{i}.py")));
        stats.drop_paths(["x".repeat(10_000)]);
        assert_eq!(stats.dropped_paths.len(), MAX_LISTED_DROPPED);
        assert_eq!(
            stats.dropped_paths_unlisted,
            1000 + 1 - MAX_LISTED_DROPPED as u64
        );
        let mut few = LlmStats::default();
        few.drop_paths(["y".repeat(10_000)]);
        assert_eq!(few.dropped_paths[0].chars().count(), MAX_DROPPED_CHARS + 1);
        let json = serde_json::to_value(&few).unwrap();
        assert!(json.get("dropped_paths_unlisted").is_none());
    }

    /// Found by a review: a refused view of a 42,000-character path made one 210 KB tool
    /// warning, and nothing bounded their number.
    #[test]
    fn tool_warnings_are_listed_up_to_a_bound_each_cut_and_counted_past_it() {
        let mut stats = LlmStats::default();
        stats.warn(&"w".repeat(210_000));
        assert_eq!(
            stats.tool_warnings[0].chars().count(),
            MAX_WARNING_CHARS + 1
        );
        assert!(stats.tool_warnings[0].ends_with('…'));
        let json = serde_json::to_value(&stats).unwrap();
        assert!(json.get("tool_warnings_unlisted").is_none());
        for i in 0..1000 {
            stats.warn(&format!("agent: repeated view of f{i}.py"));
        }
        assert_eq!(stats.tool_warnings.len(), MAX_LISTED_WARNINGS);
        assert_eq!(
            stats.tool_warnings[1..],
            (0..MAX_LISTED_WARNINGS - 1)
                .map(|i| format!("agent: repeated view of f{i}.py"))
                .collect::<Vec<_>>()
        );
        assert_eq!(
            stats.tool_warnings_unlisted,
            1001 - MAX_LISTED_WARNINGS as u64
        );
        let json = serde_json::to_value(&stats).unwrap();
        assert_eq!(
            json["tool_warnings_unlisted"],
            1001 - MAX_LISTED_WARNINGS as u64
        );
    }
    use crate::llm::{NoModel, ScriptedModel};

    const SETTINGS: CallSettings = CallSettings {
        temperature: 0.0,
        seed: Some(1),
        max_tokens: Some(64),
        max_retries: 3,
        json: true,
        max_prompt_tokens: None,
    };

    fn number(reply: &str) -> Result<u32, String> {
        reply
            .trim()
            .parse()
            .map_err(|_| format!("`{reply}` is not a number"))
    }

    #[test]
    fn huge_reported_usage_saturates_and_spends_the_budget() {
        let mut stats = LlmStats::default();
        for stage in ["t0", "t1"] {
            stats.stages.insert(
                stage.to_owned(),
                StageUsage {
                    prompt_tokens: u64::MAX - 2,
                    completion_tokens: u64::MAX - 2,
                    ..StageUsage::default()
                },
            );
        }
        assert_eq!(stats.total_tokens(), (u64::MAX, u64::MAX));
        let model = NoModel;
        let prompts = Prompts::default();
        let mut session = Session::new(
            &model,
            &prompts,
            CallSettings {
                max_prompt_tokens: Some(u64::MAX - 1),
                ..SETTINGS
            },
        );
        session.stats = stats;
        assert!(session.over_budget(&[Message::user("x")]).is_some());
    }

    #[test]
    fn retries_with_the_exact_error_then_accepts() {
        let model = ScriptedModel::new(["seven", "7"]);
        let prompts = Prompts::default();
        let mut session = Session::new(&model, &prompts, SETTINGS);
        let mut messages = vec![Message::user("a number?")];
        assert_eq!(session.ask("s", &mut messages, "<n>", number), Some(7));
        assert_eq!(messages.len(), 1, "failed attempts are not kept");
        let requests = model.requests();
        assert_eq!(requests.len(), 2);
        let repair = &requests[1].messages[2].content;
        assert!(repair.contains("`seven` is not a number") && repair.contains("<n>"));
        assert_eq!(requests[1].messages[1].content, "seven");
        assert_eq!(
            (
                session.stats.calls,
                session.stats.parse_failures,
                session.stats.retries
            ),
            (2, 1, 1)
        );
        assert_eq!(session.stats.stages["s"].calls, 2);
        let estimated: u64 = requests
            .iter()
            .flat_map(|r| &r.messages)
            .map(|m| m.content.len().div_ceil(4) as u64)
            .sum();
        assert_eq!(session.stats.stages["s"].prompt_tokens, estimated);
    }

    /// Found by a hostile review: a 50 MB reply was kept whole as a query (a 106 MB output
    /// line); a reply past [`MAX_REPLY_BYTES`] is an invalid one, whatever it holds.
    #[test]
    fn a_reply_too_long_to_be_an_answer_is_invalid() {
        let huge = "7".repeat(MAX_REPLY_BYTES + 1);
        let model = ScriptedModel::new([huge.as_str(), "7"]);
        let prompts = Prompts::default();
        let mut session = Session::new(&model, &prompts, SETTINGS);
        let mut messages = vec![Message::user("a number?")];
        assert_eq!(session.ask("s", &mut messages, "<n>", number), Some(7));
        let requests = model.requests();
        assert_eq!(requests.len(), 2);
        let repair = &requests[1].messages[2].content;
        assert!(repair.contains("more than the 262144"), "{repair}");
        assert!(
            requests[1].messages[1].content.len() < 1000,
            "the echo is cut"
        );
    }

    /// Found by a review: a fallback's reason quoted the model's invalid reply whole (a parse
    /// error names what it got), up to [`MAX_REPLY_BYTES`] of it.
    #[test]
    fn a_fallback_reason_quoting_the_reply_is_cut() {
        let long = "x".repeat(200_000);
        let model = ScriptedModel::new([long.as_str(), long.as_str()]);
        let prompts = Prompts::default();
        let mut session = Session::new(&model, &prompts, SETTINGS);
        let mut messages = vec![Message::user("a number?")];
        assert_eq!(session.ask("s", &mut messages, "<n>", number), None);
        let reason = &session.stats.fallbacks[0];
        assert!(
            reason.starts_with("s: the model repeated an invalid reply (`xxx"),
            "{reason}"
        );
        assert_eq!(reason.chars().count(), MAX_FALLBACK_CHARS + 1);
        assert!(reason.ends_with('…'));
        session.fallback("t", "short");
        assert_eq!(session.stats.fallbacks[1], "t: short");
    }

    #[test]
    fn stops_when_the_model_repeats_an_invalid_reply() {
        let model = ScriptedModel::new(["seven", " seven\n", "7"]);
        let prompts = Prompts::default();
        let mut session = Session::new(&model, &prompts, SETTINGS);
        let mut messages = vec![Message::user("a number?")];
        assert_eq!(session.ask("s", &mut messages, "<n>", number), None);
        assert_eq!(model.requests().len(), 2);
        assert!(session.stats.fallbacks[0].starts_with("s: the model repeated an invalid reply"));
    }

    #[test]
    fn gives_up_after_three_retries_and_stops_calling_an_unavailable_model() {
        let model = ScriptedModel::new(["a", "b", "c", "d", "e"]);
        let prompts = Prompts::default();
        let mut session = Session::new(&model, &prompts, SETTINGS);
        let mut messages = vec![Message::user("n?")];
        assert_eq!(session.ask("s", &mut messages, "<n>", number), None);
        assert_eq!(model.requests().len(), 4);
        assert!(session.stats.fallbacks[0].starts_with("s: no valid reply after 3 retries"));

        let mut session = Session::new(&NoModel, &prompts, SETTINGS);
        assert_eq!(session.ask("a", &mut messages, "<n>", number), None);
        assert_eq!(session.ask("b", &mut messages, "<n>", number), None);
        assert_eq!(session.stats.calls, 0);
        assert!(session.stats.fallbacks[0].contains("no LLM configured"));
        assert_eq!(session.stats.fallbacks[1], "b: the model is unavailable");
    }

    #[test]
    fn a_call_past_the_prompt_token_budget_is_not_made() {
        // Each request costs its characters / 4 (the scripted model estimates usage the same way).
        let model = ScriptedModel::new(["seven", "7", "8"]);
        let prompts = Prompts::default();
        let settings = CallSettings {
            max_prompt_tokens: Some(40),
            ..SETTINGS
        };
        let mut session = Session::new(&model, &prompts, settings);
        let mut messages = vec![Message::user("a number, please?".repeat(4))];
        // 17 tokens spent on the first try; the repair request would need far more.
        assert_eq!(session.ask("s", &mut messages, "<n>", number), None);
        assert_eq!(model.requests().len(), 1);
        assert!(
            session.stats.fallbacks[0].starts_with("s: the prompt-token budget (40) is spent"),
            "{:?}",
            session.stats.fallbacks
        );
        let mut short = vec![Message::user("n?")];
        assert_eq!(session.ask("t", &mut short, "<n>", number), Some(7));
        let mut long = vec![Message::user("x".repeat(100))];
        assert_eq!(session.ask("u", &mut long, "<n>", number), None);
        assert_eq!(model.requests().len(), 2, "the long request was never sent");
    }
}
