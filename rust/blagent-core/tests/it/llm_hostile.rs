//! What a hostile endpoint or hostile flags broke in the LLM client, as tests: a body dribbled
//! past the request timeout, secrets echoed back encoded, usage that overflows the counters,
//! out-of-range options, calibrating without a model, and missing input files.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::scripted_server::{completion_json, Action, ScriptedServer};
use blagent_core::agent::{LlmOptions, LlmRun, Pipeline};
use blagent_core::eval::{run_calibration, CalibrateConfig};
use blagent_core::interface::DatasetConfig;
use blagent_core::llm::{
    model_from_config, ChatModel, LlmClient, LlmConfig, Message, NoModel, Secret,
};
use blagent_core::{Error, ErrorKind, LocalizeOptions, LocalizeRequest, Localizer};

fn config(base_url: &str) -> LlmConfig {
    LlmConfig {
        base_url: Some(base_url.to_owned()),
        model: "m".to_owned(),
        request_timeout_s: 5.0,
        max_retries: 2,
        backoff_base_ms: 10,
        ..LlmConfig::default()
    }
}

fn ask(client: &LlmClient) -> blagent_core::Result<String> {
    client
        .chat("t0", vec![Message::user("which file?")])
        .map(|r| r.content)
}

fn with_credentials(url: &str, userinfo: &str) -> String {
    url.replace("http://", &format!("http://{userinfo}@"))
}

/// An endpoint that sends its body a byte at a time never lets a read time out; the request
/// timeout still bounds the whole attempt (connect, headers and body), which is not retried.
#[test]
fn a_dribbled_body_is_bounded_by_the_request_timeout() {
    let server = ScriptedServer::start(vec![Action::Dribble {
        content: "a long answer".to_owned(),
        interval: Duration::from_millis(100),
    }]);
    let client = LlmClient::new(&LlmConfig {
        request_timeout_s: 1.0,
        max_retries: 4,
        ..config(&server.base_url())
    })
    .unwrap();
    let start = Instant::now();
    let err = ask(&client).unwrap_err();
    let took = start.elapsed();
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(err.kind(), ErrorKind::Llm, "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("request timeout of 1 s") && message.contains("not retried"),
        "{message}"
    );
    assert_eq!(server.received().len(), 1);

    // A body that dribbles in within the timeout is read whole.
    let quick = ScriptedServer::start(vec![Action::Dribble {
        content: "on time".to_owned(),
        interval: Duration::from_micros(200),
    }]);
    let client = LlmClient::new(&config(&quick.base_url())).unwrap();
    assert_eq!(ask(&client).unwrap(), "on time");
}

/// Every form the base URL's credentials and the key could come back in, for a server to echo.
fn forms(secret: &str) -> Vec<String> {
    // Reference encodings, written out (not computed by the code under test).
    let table: &[(&str, &[&str])] = &[
        (
            "alice:hunt%er 2/",
            &[
                "YWxpY2U6aHVudCVlciAyLw==",
                "YWxpY2U6aHVudCVlciAyLw",
                "alice%3Ahunt%25er%202%2F",
            ],
        ),
        (
            "hunt%er 2/",
            &[
                "aHVudCVlciAyLw==",
                "aHVudCVlciAyLw",
                "hunt%25er%202%2F",
                "hunt%25er+2%2f",
                "hunt%er 2\\/",
            ],
        ),
        (
            "sk-k3y/+?~>>",
            &[
                "c2stazN5Lys/fj4+",
                "c2stazN5Lys_fj4-",
                "sk-k3y%2F%2B%3F~%3E%3E",
                "sk-k3y\\u002f\\u002B?~>>",
            ],
        ),
    ];
    let (_, encoded) = table.iter().find(|(s, _)| *s == secret).expect("a form");
    let mut all = vec![secret.to_owned()];
    all.extend(encoded.iter().map(|s| (*s).to_owned()));
    all
}

const PASSWORD: &str = "hunt%er 2/";
const PASSWORD_IN_URL: &str = "hunt%25er%202%2F";
const KEY: &str = "sk-k3y/+?~>>";

fn assert_hidden(text: &str, what: &str) {
    for secret in ["alice:hunt%er 2/", PASSWORD, KEY] {
        for form in forms(secret) {
            assert!(!text.contains(&form), "{what} shows {form:?}: {text}");
        }
    }
    assert!(text.contains("<redacted>"), "{what}: {text}");
}

/// A server that echoes the basic authentication of the base URL's credentials (base64 of
/// `user:password`) or the bearer key in an error: neither shows in the error.
#[test]
fn echoed_credentials_never_show_in_errors() {
    let server = ScriptedServer::start(vec![Action::EchoAuthorization(401)]);
    let url = with_credentials(&server.base_url(), &format!("alice:{PASSWORD_IN_URL}"));
    let client = LlmClient::new(&config(&url)).unwrap();
    let message = ask(&client).unwrap_err().to_string();
    let sent = server.received()[0]
        .header("authorization")
        .unwrap()
        .to_owned();
    assert_eq!(sent, "Basic YWxpY2U6aHVudCVlciAyLw==", "what went out");
    assert!(message.contains("401"), "{message}");
    assert_hidden(&message, "the error");

    let client = LlmClient::new(&LlmConfig {
        api_key: Some(Secret::new(KEY)),
        ..config(&server.base_url())
    })
    .unwrap();
    assert_hidden(&ask(&client).unwrap_err().to_string(), "the error");
}

/// A 200 reply whose content echoes the secrets, in every form, shows none of them in the
/// answer (what `llm-check` prints and the pipelines quote) or in a recorded cassette.
#[test]
fn echoed_secrets_never_show_in_answers_or_cassettes() {
    let mut content = String::from("echo:");
    for secret in ["alice:hunt%er 2/", PASSWORD, KEY] {
        for form in forms(secret) {
            content.push(' ');
            content.push_str(&form);
        }
    }
    let server = ScriptedServer::start(vec![
        Action::status_with_body(200, &completion_json(&content, true)),
        Action::EchoAuthorization(200),
    ]);
    let url = with_credentials(&server.base_url(), &format!("alice:{PASSWORD_IN_URL}"));
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let client = LlmClient::new(&LlmConfig {
        api_key: Some(Secret::new(KEY)),
        record: Some(cassette.clone()),
        ..config(&url)
    })
    .unwrap();
    let answer = ask(&client).unwrap();
    assert!(answer.starts_with("echo: <redacted>"), "{answer}");
    assert_hidden(&answer, "the answer");
    let echoed = ask(&client).unwrap();
    let sent = server.received()[1]
        .header("authorization")
        .unwrap()
        .to_owned();
    let scheme = sent.split(' ').next().unwrap();
    assert_eq!(
        echoed,
        format!("you sent Authorization: {scheme} <redacted>")
    );
    let recorded = std::fs::read_to_string(&cassette).unwrap();
    assert_eq!(recorded.lines().count(), 2);
    assert_hidden(&recorded, "the cassette");
}

/// Found by a review: with `http://admin:admin@host` every `admin` of an answer became
/// `<redacted>`, so the paths it named (`django/contrib/admin/options.py`) were dropped. A
/// password shorter than the shortest key redacted is left alone in answers, as a placeholder
/// key is; it still never shows in an error.
#[test]
fn a_short_url_password_leaves_answers_alone_and_stays_out_of_errors() {
    let path = "django/contrib/admin/options.py";
    let server = ScriptedServer::start(vec![
        Action::reply(path),
        Action::status_with_body(401, r#"{"error": {"message": "user admin: bad password"}}"#),
    ]);
    let url = with_credentials(&server.base_url(), "admin:admin");
    let client = LlmClient::new(&LlmConfig {
        max_retries: 0,
        ..config(&url)
    })
    .unwrap();
    assert_eq!(ask(&client).unwrap(), path);
    let message = ask(&client).unwrap_err().to_string();
    assert!(message.contains("401"), "{message}");
    assert!(!message.to_lowercase().contains("admin"), "{message}");
    assert!(
        message.contains("user <redacted>: bad password"),
        "{message}"
    );
}

/// Usage that would overflow a `u64` saturates in the client's ledger and in a run's report.
#[test]
fn huge_reported_usage_saturates() {
    let mut body: serde_json::Value =
        serde_json::from_str(&completion_json("{\"query\": \"discount\"}", true)).unwrap();
    body["usage"] = serde_json::json!({
        "prompt_tokens": u64::MAX - 2,
        "completion_tokens": u64::MAX - 2,
    });
    let server = ScriptedServer::start(vec![Action::status_with_body(200, &body.to_string())]);
    let client = LlmClient::new(&config(&server.base_url())).unwrap();
    ask(&client).unwrap();
    ask(&client).unwrap();
    let total = client.usage().total;
    assert_eq!(
        (total.prompt_tokens, total.completion_tokens),
        (u64::MAX, u64::MAX)
    );
    assert_eq!(total.calls, 2);

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("pricing.py"),
        "def apply_discount(total, percent):\n    return total - total * percent\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("cart.py"), "class Cart:\n    pass\n").unwrap();
    let model = model_from_config(&config(&server.base_url())).unwrap();
    let localizer = Localizer::new(LocalizeOptions::default())
        .unwrap()
        .with_llm(LlmRun {
            model: model.into(),
            options: LlmOptions {
                max_prompt_tokens: None,
                ..LlmOptions::default()
            },
            model_name: "m".to_owned(),
            reads: blagent_core::repo::Inputs::default(),
            recording: None,
        });
    let mut request = LocalizeRequest::new("x", dir.path(), "apply_discount is wrong");
    request.pipeline = Pipeline::Blagent;
    let result = localizer.localize(&request).unwrap();
    let llm = result.llm.unwrap();
    assert!(llm.stats.calls >= 2, "{:?}", llm.stats);
    assert_eq!(
        (llm.prompt_tokens, llm.completion_tokens),
        (u64::MAX, u64::MAX)
    );
}

fn input_error<T: std::fmt::Debug>(result: blagent_core::Result<T>) -> String {
    let err = result.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Input, "{err:?}");
    assert_eq!(err.kind().exit_code(), 1);
    err.to_string()
}

/// Options out of range are bad input naming the option, before any model is built.
#[test]
fn options_out_of_range_are_refused_before_running() {
    for (json, name) in [
        (r#"{"model_weight": -1}"#, "model_weight"),
        (r#"{"model_weight": 1e39}"#, "model_weight"),
        (r#"{"max_steps": 0}"#, "max_steps"),
        (r#"{"candidates": 0}"#, "candidates"),
        (r#"{"max_completion_tokens": 0}"#, "max_completion_tokens"),
    ] {
        // `model_weight` is range-checked as it is read (past f32's range it would be `inf`).
        let message = match serde_json::from_str::<LlmOptions>(json) {
            Ok(options) => input_error(LlmRun::from_config(options, &LlmConfig::default())),
            Err(refused) if name == "model_weight" => refused.to_string(),
            Err(refused) => panic!("{json}: {refused}"),
        };
        assert!(message.contains(name), "{json}: {message}");
    }
    let localizer = Localizer::new(LocalizeOptions::default())
        .unwrap()
        .with_llm(LlmRun {
            model: Arc::new(NoModel),
            options: LlmOptions {
                model_weight: Some(f32::NAN),
                ..LlmOptions::default()
            },
            model_name: String::new(),
            reads: blagent_core::repo::Inputs::default(),
            recording: None,
        });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.py"), "def f():\n    pass\n").unwrap();
    let mut request = LocalizeRequest::new("x", dir.path(), "f fails");
    request.pipeline = Pipeline::Blagent;
    assert!(input_error(localizer.localize(&request)).contains("model_weight"));
}

/// `calibrate` with neither an endpoint nor a cassette (the LLM-free model) is bad input, and
/// nothing is written.
#[test]
fn calibrating_without_a_model_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("trees/i-1");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("a.py"), "def f():\n    pass\n").unwrap();
    let data = dir.path().join("data.jsonl");
    let row = serde_json::json!({"instance_id": "i-1", "problem_statement": "f fails",
                                 "gold_files": ["a.py"]});
    std::fs::write(&data, format!("{row}\n")).unwrap();
    let config = CalibrateConfig {
        run: DatasetConfig {
            pipeline: Pipeline::Blagent,
            llm: Some(LlmRun::from_config(LlmOptions::default(), &LlmConfig::default()).unwrap()),
            ..DatasetConfig::new(data, dir.path().join("trees"))
        },
        folds: 2,
        out: dir.path().join("profile.json"),
    };
    let message = input_error(run_calibration(&config));
    assert!(message.contains("calibrate needs a model"), "{message}");
    assert!(!config.out.exists());
}

/// A cassette, prompts folder, tokenizer or price table that does not exist is bad input
/// naming it; a file that exists but cannot be used stays what it was.
#[test]
fn missing_llm_inputs_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let absent = dir.path().join("absent.jsonl");
    let replay = LlmConfig {
        replay: Some(absent.clone()),
        ..LlmConfig::default()
    };
    let message = input_error(model_from_config(&replay).map(|m| m.name()));
    assert!(
        message.contains("does not exist") && message.contains("absent.jsonl"),
        "{message}"
    );
    let options = LlmOptions {
        prompts_dir: Some(dir.path().join("no-prompts")),
        ..LlmOptions::default()
    };
    let message = input_error(LlmRun::from_config(options, &LlmConfig::default()).map(|_| ()));
    assert!(message.contains("prompts folder"), "{message}");
    for config in [
        LlmConfig {
            tokenizer: Some(dir.path().join("tokenizer.json")),
            ..config("http://127.0.0.1:9")
        },
        LlmConfig {
            prices: Some(dir.path().join("prices.json")),
            ..LlmConfig::default()
        },
    ] {
        let message = input_error(LlmClient::new(&config).map(|_| ()));
        assert!(message.contains("does not exist"), "{message}");
    }
    // A cassette that is a folder is bad input too; a malformed one is a dataset error.
    assert!(matches!(
        model_from_config(&LlmConfig {
            replay: Some(dir.path().to_owned()),
            ..LlmConfig::default()
        }),
        Err(Error::InvalidInput(_))
    ));
    std::fs::write(&absent, "not json\n").unwrap();
    assert!(model_from_config(&replay)
        .err()
        .is_some_and(|e| e.is_input_error()));
}
