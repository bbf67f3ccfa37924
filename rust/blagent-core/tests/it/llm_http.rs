//! The HTTP chat model against a scripted OpenAI-compatible server on loopback: every path
//! (clean call, rate limits, server errors, timeouts, refused connections, truncated bodies)
//! ends with an answer or a clear error within bounded time; recorded runs replay exactly.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::scripted_server::{dead_base_url, Action, ScriptedServer};
use blagent_core::llm::{
    is_transient_failure, model_from_config, request_key, ChatModel, ChatRequest, HttpModel,
    LlmClient, LlmConfig, Message, Secret,
};
use blagent_core::Error;

const KEY: &str = "sk-scripted-secret-0123";

fn config(base_url: &str) -> LlmConfig {
    LlmConfig {
        base_url: Some(base_url.to_owned()),
        model: "test-model".to_owned(),
        connect_timeout_s: 2.0,
        request_timeout_s: 2.0,
        max_retries: 3,
        backoff_base_ms: 10,
        ..LlmConfig::default()
    }
}

fn request(stage: &str, text: &str) -> ChatRequest {
    ChatRequest {
        stage: stage.to_owned(),
        messages: vec![Message::system("You localize bugs."), Message::user(text)],
        temperature: 0.0,
        seed: None,
        max_tokens: None,
        json: false,
    }
}

fn llm_error(result: blagent_core::Result<blagent_core::llm::ChatResponse>) -> String {
    match result {
        Err(Error::Llm(message)) => message,
        other => panic!("expected an LLM error, got {other:?}"),
    }
}

#[test]
fn clean_call_sends_model_messages_sampling_and_key() {
    let server = ScriptedServer::start(vec![Action::reply("src/app.py")]);
    let model = HttpModel::new(&LlmConfig {
        api_key: Some(Secret::new(KEY)),
        ..config(&server.base_url())
    })
    .unwrap();
    let mut req = request("t0", "Which file?");
    req.temperature = 0.25;
    req.seed = Some(42);
    req.max_tokens = Some(64);
    let answer = model.chat(&req).unwrap();
    assert_eq!(answer.content, "src/app.py");
    assert_eq!(answer.finish_reason.as_deref(), Some("stop"));
    assert_eq!(
        (
            answer.usage.prompt_tokens,
            answer.usage.completion_tokens,
            answer.usage.estimated
        ),
        (11, 7, false)
    );

    let received = server.received();
    assert_eq!(received.len(), 1);
    let got = &received[0];
    assert_eq!(
        (got.method.as_str(), got.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(got.body["model"], "test-model");
    assert_eq!(got.body["temperature"], 0.25);
    assert_eq!(got.body["seed"], 42);
    assert_eq!(got.body["max_tokens"], 64);
    assert_eq!(got.body["stream"], false);
    assert_eq!(got.body["messages"][0]["role"], "system");
    assert_eq!(got.body["messages"][1]["content"], "Which file?");
    assert!(got.body.get("stage").is_none(), "the stage is not sent");
    assert_eq!(
        got.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[test]
fn no_key_no_authorization_header_and_optional_fields_omitted() {
    let server = ScriptedServer::start(vec![Action::reply("ok")]);
    HttpModel::new(&config(&server.base_url()))
        .unwrap()
        .chat(&request("t0", "x"))
        .unwrap();
    let got = &server.received()[0];
    assert_eq!(got.header("authorization"), None);
    assert!(got.body.get("seed").is_none() && got.body.get("max_tokens").is_none());
    assert!(got.body.get("response_format").is_none());
}

#[test]
fn json_requests_ask_for_a_json_object() {
    let server = ScriptedServer::start(vec![Action::reply("{}")]);
    let mut req = request("phase2", "Rank.");
    req.json = true;
    HttpModel::new(&config(&server.base_url()))
        .unwrap()
        .chat(&req)
        .unwrap();
    assert_eq!(
        server.received()[0].body["response_format"]["type"],
        "json_object"
    );
    let plain = request("phase2", "Rank.");
    assert_ne!(request_key("m", &req), request_key("m", &plain));
}

#[test]
fn rate_limit_waits_for_retry_after() {
    let server = ScriptedServer::start(vec![
        Action::status(429).retry_after("1"),
        Action::reply("after the wait"),
    ]);
    let model = HttpModel::new(&config(&server.base_url())).unwrap();
    let start = Instant::now();
    assert_eq!(
        model.chat(&request("t0", "x")).unwrap().content,
        "after the wait"
    );
    let elapsed = start.elapsed();
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    assert_eq!(server.received().len(), 2);
}

#[test]
fn server_errors_are_retried() {
    let server = ScriptedServer::start(vec![
        Action::status(500),
        Action::status(503),
        Action::reply("third time"),
    ]);
    let model = HttpModel::new(&config(&server.base_url())).unwrap();
    assert_eq!(
        model.chat(&request("t0", "x")).unwrap().content,
        "third time"
    );
    assert_eq!(server.received().len(), 3);
}

#[test]
fn persistent_server_errors_give_up_after_max_retries() {
    let server = ScriptedServer::start(vec![Action::status(500)]);
    let model = HttpModel::new(&config(&server.base_url())).unwrap();
    let start = Instant::now();
    let message = llm_error(model.chat(&request("phase1", "x")));
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(server.received().len(), 4, "1 attempt + 3 retries");
    for part in [
        "gave up after 4 attempt(s)",
        "500",
        "stage phase1",
        "scripted status 500",
    ] {
        assert!(message.contains(part), "{part:?} not in {message}");
    }
}

#[test]
fn a_request_that_used_its_whole_timeout_is_not_retried() {
    let server = ScriptedServer::start(vec![Action::Stall(Duration::from_secs(5))]);
    let model = HttpModel::new(&LlmConfig {
        request_timeout_s: 0.3,
        max_retries: 4,
        ..config(&server.base_url())
    })
    .unwrap();
    let start = Instant::now();
    let message = llm_error(model.chat(&request("t0", "x")));
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert!(message.contains("request timeout"), "{message}");
    assert!(message.contains("not retried"), "{message}");
    assert_eq!(server.received().len(), 1, "one attempt, not five");

    let recovering = ScriptedServer::start(vec![
        Action::Stall(Duration::from_secs(5)),
        Action::reply("on time"),
    ]);
    let model = HttpModel::new(&LlmConfig {
        request_timeout_s: 0.3,
        ..config(&recovering.base_url())
    })
    .unwrap();
    assert!(model.chat(&request("t0", "x")).is_err());
    assert_eq!(model.chat(&request("t0", "x")).unwrap().content, "on time");
}

#[test]
fn connection_refused_is_a_quick_clear_error() {
    let url = dead_base_url();
    let model = HttpModel::new(&LlmConfig {
        max_retries: 2,
        ..config(&url)
    })
    .unwrap();
    let start = Instant::now();
    let message = llm_error(model.chat(&request("t0", "x")));
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert!(message.contains("cannot connect"), "{message}");
    assert!(message.contains(&url), "{message}");
    assert!(message.contains("gave up after 3 attempt(s)"), "{message}");
}

#[test]
fn truncated_responses_are_retried() {
    let server = ScriptedServer::start(vec![
        Action::CloseMidBody,
        Action::TruncatedJson,
        Action::Hangup,
        Action::reply("whole"),
    ]);
    let model = HttpModel::new(&config(&server.base_url())).unwrap();
    assert_eq!(model.chat(&request("t0", "x")).unwrap().content, "whole");
    assert_eq!(server.received().len(), 4);

    for action in [Action::CloseMidBody, Action::TruncatedJson, Action::Hangup] {
        let server = ScriptedServer::start(vec![action.clone()]);
        let model = HttpModel::new(&config(&server.base_url())).unwrap();
        let start = Instant::now();
        let message = llm_error(model.chat(&request("t0", "x")));
        assert!(start.elapsed() < Duration::from_secs(2), "{action:?}");
        assert!(message.contains("gave up after 4"), "{action:?}: {message}");
    }
    let server = ScriptedServer::start(vec![Action::TruncatedJson]);
    let message = llm_error(
        HttpModel::new(&config(&server.base_url()))
            .unwrap()
            .chat(&request("t0", "x")),
    );
    assert!(message.contains("malformed response body"), "{message}");
}

#[test]
fn missing_usage_is_estimated() {
    let server = ScriptedServer::start(vec![Action::reply_without_usage("abcdefgh")]);
    let model = HttpModel::new(&config(&server.base_url())).unwrap();
    let answer = model.chat(&request("t0", "x")).unwrap();
    assert!(answer.usage.estimated);
    assert_eq!(answer.usage.completion_tokens, 2, "8 chars / 4");
    assert!(answer.usage.prompt_tokens > 0);
}

#[test]
fn client_errors_fail_at_once_without_the_key() {
    let echo = format!(r#"{{"error": {{"message": "Incorrect API key provided: {KEY}"}}}}"#);
    let server = ScriptedServer::start(vec![Action::status_with_body(401, &echo)]);
    let cfg = LlmConfig {
        api_key: Some(Secret::new(KEY)),
        ..config(&server.base_url())
    };
    let model = HttpModel::new(&cfg).unwrap();
    let message = llm_error(model.chat(&request("t0", "x")));
    assert_eq!(server.received().len(), 1, "4xx is not retried");
    assert!(
        message.contains("401") && message.contains("Incorrect API key"),
        "{message}"
    );
    assert!(!message.contains(KEY), "{message}");
    assert!(!format!("{model:?}").contains(KEY));
    assert!(!format!("{cfg:?}").contains(KEY));
    assert!(!serde_json::to_string(&cfg).unwrap().contains(KEY));

    let server = ScriptedServer::start(vec![Action::status(400)]);
    let message = llm_error(
        HttpModel::new(&config(&server.base_url()))
            .unwrap()
            .chat(&request("t0", "x")),
    );
    assert!(
        message.contains("400") && message.contains("scripted status 400"),
        "{message}"
    );
    assert_eq!(server.received().len(), 1);
}

#[test]
fn concurrency_limit_bounds_requests_in_flight() {
    let server = ScriptedServer::start(vec![Action::slow_reply("ok", Duration::from_millis(150))]);
    let model = Arc::new(
        HttpModel::new(&LlmConfig {
            max_concurrency: 2,
            ..config(&server.base_url())
        })
        .unwrap(),
    );
    std::thread::scope(|scope| {
        for i in 0..8 {
            let model = Arc::clone(&model);
            scope.spawn(move || model.chat(&request("t0", &format!("q{i}"))).unwrap());
        }
    });
    assert_eq!(server.received().len(), 8);
    assert_eq!(server.max_in_flight(), 2);
}

#[test]
fn recorded_run_replays_identically() {
    let server = ScriptedServer::start(vec![
        Action::reply("first"),
        Action::reply_without_usage("second"),
        Action::status(400),
        Action::reply("fourth"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run.jsonl");
    let questions = [("t0", "a"), ("t1", "b"), ("phase1", "c"), ("phase1", "a")];
    let run = |client: &LlmClient| -> Vec<Result<String, String>> {
        questions
            .iter()
            .map(|(stage, text)| {
                client
                    .chat(stage, vec![Message::user(*text)])
                    .map(|r| serde_json::to_string(&r).unwrap())
                    .map_err(|e| e.to_string())
            })
            .collect()
    };
    let recording = LlmClient::new(&LlmConfig {
        record: Some(cassette.clone()),
        seed: Some(1),
        ..config(&server.base_url())
    })
    .unwrap();
    let recorded = run(&recording);
    assert!(recorded[2].is_err() && recorded[3].is_ok());
    assert_eq!(
        std::fs::read_to_string(&cassette).unwrap().lines().count(),
        4
    );

    let replay_config = LlmConfig {
        replay: Some(cassette.clone()),
        seed: Some(1),
        ..LlmConfig::default()
    };
    let replaying = LlmClient::new(&replay_config).unwrap();
    assert_eq!(replaying.name(), "replay:test-model");
    assert_eq!(run(&replaying), recorded);
    assert_eq!(replaying.usage(), recording.usage());
    assert_eq!(server.received().len(), 4, "replay never calls the server");

    let model = model_from_config(&replay_config).unwrap();
    let message = llm_error(model.chat(&request("t9", "never asked")));
    assert!(
        message.contains("stage t9") && message.contains("not recorded"),
        "{message}"
    );
    let other_seed = LlmClient::new(&LlmConfig {
        seed: Some(2),
        ..replay_config
    })
    .unwrap();
    assert!(
        other_seed.chat("t0", vec![Message::user("a")]).is_err(),
        "seed is part of the key"
    );
}

#[test]
fn replay_with_an_endpoint_asks_it_only_what_the_cassette_lacks_and_records_the_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.jsonl");
    let first = ScriptedServer::start(vec![Action::reply("A"), Action::reply("B")]);
    let recording = LlmClient::new(&LlmConfig {
        record: Some(old.clone()),
        ..config(&first.base_url())
    })
    .unwrap();
    recording.chat("t0", vec![Message::user("a")]).unwrap();
    recording.chat("t1", vec![Message::user("b")]).unwrap();

    // The changed run asks "a" again and "c" instead of "b".
    let second = ScriptedServer::start(vec![Action::reply("C")]);
    let new = dir.path().join("new.jsonl");
    let mixed = LlmClient::new(&LlmConfig {
        replay: Some(old.clone()),
        record: Some(new.clone()),
        ..config(&second.base_url())
    })
    .unwrap();
    assert!(
        mixed.name().starts_with("replay:test-model+"),
        "{}",
        mixed.name()
    );
    let answers: Vec<String> = ["a", "c"]
        .iter()
        .map(|q| mixed.chat("t0", vec![Message::user(*q)]).unwrap().content)
        .collect();
    assert_eq!(answers, ["A", "C"]);
    assert_eq!(
        second.received().len(),
        1,
        "only the new request reaches the endpoint"
    );
    drop(mixed);

    // The new cassette alone replays the whole changed run, with no endpoint.
    let replaying = LlmClient::new(&LlmConfig {
        replay: Some(new),
        ..LlmConfig::default()
    })
    .unwrap();
    for (q, a) in [("a", "A"), ("c", "C")] {
        assert_eq!(
            replaying
                .chat("t0", vec![Message::user(q)])
                .unwrap()
                .content,
            a
        );
    }
    assert!(replaying.chat("t1", vec![Message::user("b")]).is_err());
}

/// Found by a review: a cassette that recorded a rate limit replayed it as the answer even with
/// an endpoint given, so re-running a run an outage hit reproduced the outage and the endpoint
/// got no request. With an endpoint, a recorded transient failure (429, 5xx, a timeout, a
/// refused connection) is asked again; a permanent one (401) is replayed.
#[test]
fn replay_with_an_endpoint_asks_again_what_failed_transiently() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("outage.jsonl");
    let outage = ScriptedServer::start(vec![
        Action::status(429),
        Action::status(503),
        Action::Stall(Duration::from_secs(5)),
        Action::status(401),
    ]);
    let record = |url: &str, question: &str| {
        let client = LlmClient::new(&LlmConfig {
            record: Some(cassette.clone()),
            max_retries: 0,
            request_timeout_s: 0.5,
            ..config(url)
        })
        .unwrap();
        client
            .chat("t0", vec![Message::user(question)])
            .unwrap_err()
            .to_string()
    };
    let mut recorded = Vec::new();
    for question in ["rate", "gateway", "hang"] {
        recorded.push(record(&outage.base_url(), question));
    }
    recorded.push(record(&dead_base_url(), "refused"));
    let denied = record(&outage.base_url(), "denied");
    for (message, expected) in
        recorded
            .iter()
            .zip(["429", "503", "request timeout", "cannot connect"])
    {
        assert!(message.contains(expected), "{message}");
        assert!(is_transient_failure(message), "{message}");
    }
    assert!(
        denied.contains("401") && !is_transient_failure(&denied),
        "{denied}"
    );

    let live = ScriptedServer::start(vec![Action::reply("fresh")]);
    let again = LlmClient::new(&LlmConfig {
        replay: Some(cassette.clone()),
        ..config(&live.base_url())
    })
    .unwrap();
    for question in ["rate", "gateway", "hang", "refused"] {
        let answer = again.chat("t0", vec![Message::user(question)]).unwrap();
        assert_eq!(answer.content, "fresh", "{question}");
    }
    let replayed = again
        .chat("t0", vec![Message::user("denied")])
        .unwrap_err()
        .to_string();
    assert_eq!(replayed, denied);
    assert_eq!(
        live.received().len(),
        4,
        "the endpoint is asked what failed transiently"
    );

    // Without an endpoint the outage replays exactly.
    let exact = LlmClient::new(&LlmConfig {
        replay: Some(cassette),
        ..LlmConfig::default()
    })
    .unwrap();
    for (question, message) in ["rate", "gateway", "hang", "refused"].iter().zip(&recorded) {
        let err = exact
            .chat("t0", vec![Message::user(*question)])
            .unwrap_err()
            .to_string();
        assert_eq!(&err, message);
    }
}
