//! Cassettes: recorded exchanges, one JSON line each (`{"key", "request", "response"}`, or
//! `"error"` for a request that failed), so any run can be reproduced exactly. The key is a
//! BLAKE3 hash of what the model sees ([`request_key`]); the stage is recorded but not hashed.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use super::http::is_transient_failure;
use super::{ChatModel, ChatRequest, ChatResponse, Message};
use crate::error::{Error, Result};
use crate::repo::{
    check_output, complete_last_line, json_lines_with, open_output, Inputs, Output, OutputMode,
};

/// A request as a cassette stores it: the model name and everything sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// Model name (part of the key).
    pub model: String,
    /// The stage that asked (not part of the key).
    pub stage: String,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Sampling temperature.
    pub temperature: f32,
    /// Sampling seed.
    pub seed: Option<u64>,
    /// Completion token cap.
    pub max_tokens: Option<u32>,
}

/// One cassette line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CassetteEntry {
    /// [`request_key`] of the request.
    pub key: String,
    /// The request.
    pub request: RecordedRequest,
    /// The answer, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<ChatResponse>,
    /// The error message, when the request failed (replayed as the same error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Serialize)]
struct KeyMaterial<'a> {
    model: &'a str,
    messages: &'a [Message],
    temperature: f32,
    seed: Option<u64>,
    max_tokens: Option<u32>,
    /// Only when set, so keys of plain requests are what they always were.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    json: bool,
}

/// The replay key of `request` sent to `model`: BLAKE3 (hex) over the JSON of (model,
/// messages, temperature, seed, `max_tokens`), in that field order. The stage is left out, so a
/// renamed stage still replays.
pub fn request_key(model: &str, request: &ChatRequest) -> String {
    let material = KeyMaterial {
        model,
        messages: &request.messages,
        temperature: request.temperature,
        seed: request.seed,
        max_tokens: request.max_tokens,
        json: request.json,
    };
    let bytes = serde_json::to_vec(&material).expect("plain data serializes");
    blake3::hash(&bytes).to_hex().to_string()
}

/// Serves the exchanges of a cassette. Identical requests are answered in recorded order; a
/// request not in the cassette, or asked more often than recorded, is an [`Error::Llm`], or,
/// with a live model behind it ([`ReplayModel::then_live`]), that model's answer: a changed
/// pipeline then re-asks only what it asks differently. A recorded failure is replayed as the
/// same error, except a transient one ([`is_transient_failure`]: a rate limit, a timeout, a
/// 5xx, a refused connection) with a live model, which that model is asked again: re-running a
/// run an outage hit must not reproduce the outage.
pub struct ReplayModel {
    path: PathBuf,
    model: String,
    recorded: HashSet<String>,
    queues: Mutex<HashMap<String, VecDeque<std::result::Result<ChatResponse, String>>>>,
    live: Option<Box<dyn ChatModel>>,
}

impl std::fmt::Debug for ReplayModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayModel")
            .field("path", &self.path)
            .field("model", &self.model)
            .field("live", &self.live.as_ref().map(ChatModel::name))
            .finish_non_exhaustive()
    }
}

impl ReplayModel {
    /// Opens a cassette recorded with one model (whose name then keys the requests).
    pub fn open(path: &Path) -> Result<Self> {
        let entries = read_cassette(path)?;
        let models: HashSet<&str> = entries.iter().map(|e| e.request.model.as_str()).collect();
        if models.len() > 1 {
            let mut names: Vec<&str> = models.into_iter().collect();
            names.sort_unstable();
            return Err(Error::InvalidInput(format!(
                "cassette {} holds several models ({}); name the one to replay",
                path.display(),
                names.join(", ")
            )));
        }
        let model = models.into_iter().next().unwrap_or_default().to_owned();
        Ok(Self::from_entries(path, model, entries))
    }

    /// Opens a cassette and replays the exchanges of `model`.
    pub fn open_with_model(path: &Path, model: &str) -> Result<Self> {
        let entries = read_cassette(path)?;
        Ok(Self::from_entries(path, model.to_owned(), entries))
    }

    fn from_entries(path: &Path, model: String, entries: Vec<ReplayEntry>) -> Self {
        let mut queues: HashMap<_, VecDeque<_>> = HashMap::new();
        for entry in entries {
            let outcome = match (entry.response, entry.error) {
                (Some(response), _) => Ok(response),
                (None, error) => Err(error.unwrap_or_else(|| "recorded without a response".into())),
            };
            queues.entry(entry.key).or_default().push_back(outcome);
        }
        ReplayModel {
            path: path.to_owned(),
            model,
            recorded: queues.keys().cloned().collect(),
            queues: Mutex::new(queues),
            live: None,
        }
    }

    /// Asks `live` what the cassette does not answer, and again what it recorded as a transient
    /// failure (it must send the model name the cassette is keyed with).
    #[must_use]
    pub fn then_live(mut self, live: Box<dyn ChatModel>) -> Self {
        self.live = Some(live);
        self
    }

    /// The model name whose requests are replayed.
    pub fn model(&self) -> &str {
        &self.model
    }
}

impl ChatModel for ReplayModel {
    fn name(&self) -> String {
        match &self.live {
            Some(live) => format!("replay:{}+{}", self.model, live.name()),
            None => format!("replay:{}", self.model),
        }
    }

    fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let key = request_key(&self.model, request);
        let next = self
            .queues
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(&key)
            .and_then(VecDeque::pop_front);
        match (next, &self.live) {
            (Some(Ok(response)), _) => Ok(response),
            // An outage recorded (a rate limit, a timeout, a 5xx, a refused connection) is not
            // the model's answer: with an endpoint it is asked again, as a stopped call is.
            (Some(Err(message)), Some(live)) if is_transient_failure(&message) => {
                live.chat(request)
            }
            (Some(Err(message)), _) => Err(Error::Llm(message)),
            (None, Some(live)) => live.chat(request),
            (None, None) => {
                let why = if self.recorded.contains(&key) {
                    "asked more often than recorded"
                } else {
                    "not recorded"
                };
                Err(Error::Llm(format!(
                    "replay {}: request {key} (stage {}, model {}) {why}",
                    self.path.display(),
                    request.stage,
                    self.model
                )))
            }
        }
    }
}

/// What replay keeps of a cassette line: the conversation is left unread, since the key
/// stands for it, so a cassette takes about the size of its answers in memory.
#[derive(Deserialize)]
struct ReplayEntry {
    key: String,
    request: ReplayRequest,
    #[serde(default)]
    response: Option<ChatResponse>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct ReplayRequest {
    model: String,
}

/// Reads every entry; a malformed last line without a newline (an interrupted recording) is
/// dropped, any other malformed line is an error naming it.
fn read_cassette(path: &Path) -> Result<Vec<ReplayEntry>> {
    crate::dataset::read_jsonl_appended(path)
}

/// What a cassette holds: one exchange a line, appended to.
pub const CASSETTE: OutputMode = OutputMode {
    append: true,
    holds: "cassette lines (JSON with key and request)",
    is_ours: |bytes| json_lines_with(bytes, &["key", "request"], b"{\"key\":"),
};

/// Wraps a model and appends each exchange (answer or error) to a cassette, one flushed line
/// per request; safe when several threads share it.
#[derive(Debug)]
pub struct RecordingModel<M> {
    inner: M,
    model: String,
    path: PathBuf,
    inputs: Inputs,
    /// Opened at the first exchange, so a run refused before it asks anything leaves no
    /// cassette behind.
    file: Mutex<Option<Output>>,
}

impl<M: ChatModel> RecordingModel<M> {
    /// Records `inner`'s exchanges, keyed with `model` (the name it sends), to `path`
    /// (appended to; created with its folder at the first exchange). A special file, or a
    /// file that holds anything but cassette lines, is refused now; a cassette that exists is
    /// opened and locked now (a second run on it is refused at once), a new one from its first
    /// exchange, while the model lives.
    /// `inputs` are what the run reads: the cassette may not be one of them, nor lie inside.
    pub fn create(
        inner: M,
        model: impl Into<String>,
        path: &Path,
        inputs: &Inputs,
    ) -> Result<Self> {
        // An existing cassette is checked as it is opened; a new one only where it would go.
        let file = if path.exists() {
            Some(open_cassette(path, inputs)?)
        } else {
            check_output(path, CASSETTE, inputs, "cassette")?;
            None
        };
        Ok(RecordingModel {
            inner,
            model: model.into(),
            path: path.to_owned(),
            inputs: inputs.clone(),
            file: Mutex::new(file),
        })
    }

    /// Appends `line` to the cassette, opening it first if this is the first exchange.
    fn append(&self, line: &str) -> Result<()> {
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        if file.is_none() {
            *file = Some(open_cassette(&self.path, &self.inputs)?);
        }
        let file = file.as_mut().expect("opened above");
        file.write_all(line.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|e| Error::io(&self.path, e))
    }
}

/// Opens the cassette `path` for appending, its last line completed first: one cut short by
/// an interrupted write is dropped, whole JSON without its newline gets it
/// ([`complete_last_line`]).
fn open_cassette(path: &Path, inputs: &Inputs) -> Result<Output> {
    let mut file = open_output(path, CASSETTE, inputs, "cassette")?;
    complete_last_line(&mut file, path)?;
    Ok(file)
}

impl<M: ChatModel> ChatModel for RecordingModel<M> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let result = self.inner.chat(request);
        if matches!(result, Err(Error::Cancelled)) {
            // A stop the user asked for is not the model's answer: a replay, or a resumed
            // run, asks again.
            return result;
        }
        let entry = CassetteEntry {
            key: request_key(&self.model, request),
            request: RecordedRequest {
                model: self.model.clone(),
                stage: request.stage.clone(),
                messages: request.messages.clone(),
                temperature: request.temperature,
                seed: request.seed,
                max_tokens: request.max_tokens,
            },
            response: result.as_ref().ok().cloned(),
            error: result.as_ref().err().map(|e| match e {
                Error::Llm(message) => message.clone(),
                other => other.to_string(),
            }),
        };
        let mut line = serde_json::to_string(&entry)?;
        line.push('\n');
        self.append(&line)?;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Usage;

    /// Answers with the last message reversed; fails on "fail".
    struct Echo;

    impl ChatModel for Echo {
        fn name(&self) -> String {
            "echo".into()
        }
        fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
            let last = &request.messages.last().unwrap().content;
            if last == "fail" {
                return Err(Error::Llm("echo refused".into()));
            }
            if last == "stop" {
                return Err(Error::Cancelled);
            }
            Ok(ChatResponse {
                content: last.chars().rev().collect(),
                usage: Usage::default(),
                finish_reason: Some("stop".into()),
            })
        }
    }

    fn ask(stage: &str, text: &str) -> ChatRequest {
        ChatRequest {
            stage: stage.into(),
            messages: vec![Message::user(text)],
            temperature: 0.0,
            seed: Some(7),
            max_tokens: None,
            json: false,
        }
    }

    #[test]
    fn key_ignores_the_stage_but_not_what_is_sent() {
        let base = request_key("m", &ask("t0", "hi"));
        assert_eq!(base, request_key("m", &ask("phase1", "hi")));
        assert_ne!(base, request_key("m2", &ask("t0", "hi")));
        assert_ne!(base, request_key("m", &ask("t0", "hi!")));
        let mut hot = ask("t0", "hi");
        hot.temperature = 0.7;
        assert_ne!(base, request_key("m", &hot));
        assert_eq!(base.len(), 64);
    }

    #[test]
    fn records_then_replays_answers_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/run.jsonl");
        let recorder = RecordingModel::create(Echo, "m", &path, &Inputs::new()).unwrap();
        let first = recorder.chat(&ask("t0", "abc")).unwrap();
        recorder.chat(&ask("t0", "xyz")).unwrap();
        recorder.chat(&ask("t1", "abc")).unwrap();
        assert!(recorder.chat(&ask("t0", "fail")).is_err());
        drop(recorder);
        // An interrupted recording leaves half a line; it is dropped.
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"key\": \"trunc");
        std::fs::write(&path, text).unwrap();

        let replay = ReplayModel::open(&path).unwrap();
        assert_eq!(replay.name(), "replay:m");
        assert_eq!(replay.chat(&ask("other-stage", "abc")).unwrap(), first);
        assert_eq!(replay.chat(&ask("t0", "xyz")).unwrap().content, "zyx");
        assert_eq!(replay.chat(&ask("t1", "abc")).unwrap().content, "cba");
        let err = replay.chat(&ask("t0", "abc")).unwrap_err().to_string();
        assert!(err.contains("more often than recorded"), "{err}");
        assert_eq!(
            replay.chat(&ask("t0", "fail")).unwrap_err().to_string(),
            "LLM error: echo refused"
        );
        let missing = replay.chat(&ask("phase2", "new")).unwrap_err().to_string();
        let key = request_key("m", &ask("phase2", "new"));
        assert!(
            missing.contains(&key) && missing.contains("phase2"),
            "{missing}"
        );
    }

    /// A stop the user asked for is not recorded: a replay or a resumed run asks again.
    #[test]
    fn a_cancelled_call_is_not_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        let recorder = RecordingModel::create(Echo, "m", &path, &Inputs::new()).unwrap();
        assert!(matches!(
            recorder.chat(&ask("t0", "stop")),
            Err(Error::Cancelled)
        ));
        recorder.chat(&ask("t0", "abc")).unwrap();
        drop(recorder);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        let missing = ReplayModel::open(&path)
            .unwrap()
            .chat(&ask("t0", "stop"))
            .unwrap_err()
            .to_string();
        // Not an error replayed: a request the cassette does not hold.
        let key = request_key("m", &ask("t0", "stop"));
        assert!(missing.contains(&key), "{missing}");
    }

    /// Fails every request with its own last message as the error.
    struct Fails;

    impl ChatModel for Fails {
        fn name(&self) -> String {
            "fails".into()
        }
        fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
            Err(Error::Llm(request.messages.last().unwrap().content.clone()))
        }
    }

    /// Found by a review: a recorded 429 was replayed as the answer even with an endpoint, so
    /// re-running a run an outage hit reproduced the outage and the endpoint was not asked.
    #[test]
    fn a_recorded_transient_failure_is_asked_again_of_a_live_model() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let at = "http://h/v1/chat/completions (model m)";
        let transient = [
            format!("{at}: gave up after 1 attempt(s) (stage t0); last error: HTTP 429 Too Many Requests: slow down"),
            format!("{at}: gave up after 5 attempt(s) (stage t0); last error: cannot connect (is the server running?): refused"),
            format!("{at}: no answer within the request timeout of 2 s; not retried: timed out"),
        ];
        let permanent = [
            format!("{at}: HTTP 401 Unauthorized: bad key"),
            format!("{at}: HTTP 400 Bad Request: gave up after nothing"),
        ];
        let recorder = RecordingModel::create(Fails, "m", &path, &Inputs::new()).unwrap();
        for message in transient.iter().chain(&permanent) {
            assert!(recorder.chat(&ask("t0", message)).is_err());
        }
        drop(recorder);
        let live = ReplayModel::open(&path).unwrap().then_live(Box::new(Echo));
        for message in &transient {
            assert!(is_transient_failure(message), "{message}");
            let answer = live.chat(&ask("t0", message)).unwrap().content;
            assert_eq!(answer, message.chars().rev().collect::<String>());
        }
        for message in &permanent {
            assert!(!is_transient_failure(message), "{message}");
            let err = live.chat(&ask("t0", message)).unwrap_err().to_string();
            assert_eq!(err, format!("LLM error: {message}"));
        }
        // Without an endpoint every recorded failure replays as it was.
        let replay = ReplayModel::open(&path).unwrap();
        for message in transient.iter().chain(&permanent) {
            let err = replay.chat(&ask("t0", message)).unwrap_err().to_string();
            assert_eq!(err, format!("LLM error: {message}"));
        }
    }

    #[test]
    fn malformed_lines_and_mixed_models_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        std::fs::write(&path, "not json\n").unwrap();
        assert!(ReplayModel::open(&path)
            .unwrap_err()
            .to_string()
            .contains(":1:"));
        std::fs::write(&path, "").unwrap();
        RecordingModel::create(Echo, "a", &path, &Inputs::new())
            .unwrap()
            .chat(&ask("s", "x"))
            .unwrap();
        RecordingModel::create(Echo, "b", &path, &Inputs::new())
            .unwrap()
            .chat(&ask("s", "x"))
            .unwrap();
        assert!(ReplayModel::open(&path)
            .unwrap_err()
            .to_string()
            .contains("a, b"));
        let b = ReplayModel::open_with_model(&path, "b").unwrap();
        assert_eq!(b.chat(&ask("s", "x")).unwrap().content, "x");
    }

    /// Nothing is created before the first exchange; a last line cut short is dropped and a
    /// whole one without its newline completed before the next is appended.
    #[test]
    fn the_cassette_is_made_at_the_first_exchange_and_its_last_line_mended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/c.jsonl");
        let recorder = RecordingModel::create(Echo, "m", &path, &Inputs::new()).unwrap();
        assert!(!path.exists());
        recorder.chat(&ask("s", "one")).unwrap();
        drop(recorder);
        let whole = std::fs::read_to_string(&path).unwrap();
        for (damaged, kept) in [
            (whole.trim_end().to_owned(), 1),
            (format!("{whole}{}", &whole[..20]), 1),
        ] {
            std::fs::write(&path, &damaged).unwrap();
            RecordingModel::create(Echo, "m", &path, &Inputs::new())
                .unwrap()
                .chat(&ask("s", "two"))
                .unwrap();
            let replay = ReplayModel::open(&path).unwrap();
            assert_eq!(
                replay.chat(&ask("s", "two")).unwrap().content,
                Echo.chat(&ask("s", "two")).unwrap().content
            );
            assert_eq!(
                std::fs::read_to_string(&path).unwrap().lines().count(),
                kept + 1
            );
        }
        // Whole JSON that is not an exchange blagent wrote is ended, not cut: it is not
        // blagent's to drop (it used to be).
        let foreign = r#"{"key": "k", "request": "GET /a", "note": "kept"}"#;
        std::fs::write(&path, format!("{whole}{foreign}")).unwrap();
        RecordingModel::create(Echo, "m", &path, &Inputs::new())
            .unwrap()
            .chat(&ask("s", "three"))
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(&format!("{foreign}\n")), "{text}");
        assert_eq!(text.lines().count(), 3, "{text}");
    }
}
