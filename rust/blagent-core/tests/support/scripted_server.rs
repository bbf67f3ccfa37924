//! A scripted OpenAI-compatible chat server on 127.0.0.1, standard library only, for tests that
//! must drive every path of an HTTP client without a network or a model: each request takes the
//! next [`Action`] of the script (the last one repeats), and the server records what it was
//! asked and how many requests it held at once.
//!
//! ```ignore
//! mod support;
//! use support::scripted_server::{Action, ScriptedServer};
//! let server =
//!     ScriptedServer::start(vec![Action::status(429).retry_after("1"), Action::reply("ok")]);
//! let url = server.base_url(); // http://127.0.0.1:PORT/v1
//! ```

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum Action {
    /// 200 with a chat completion of `content`, with a `usage` block or not, after `delay`.
    Reply {
        content: String,
        usage: bool,
        delay: Duration,
    },
    /// Any status, an optional `Retry-After`, and a body.
    Status {
        code: u16,
        retry_after: Option<String>,
        body: String,
    },
    /// Read the request, wait this long, and close without answering (a hung server).
    Stall(Duration),
    /// 200 with a `Content-Length` of the full completion, half of it sent, then the connection
    /// closed.
    CloseMidBody,
    /// 200 with a complete HTTP message whose JSON body is cut off mid-object.
    TruncatedJson,
    /// Close the connection right after reading the request.
    Hangup,
    /// 200 with a `Content-Length` of the full completion of `content`, its body sent one byte
    /// per `interval` (an endpoint that never stalls long enough for a read timeout).
    Dribble { content: String, interval: Duration },
    /// This status with the request's `Authorization` header echoed: in the completion's
    /// content for a 200, in an OpenAI-style error message otherwise.
    EchoAuthorization(u16),
}

impl Action {
    /// A completion with usage (prompt 11, completion 7).
    pub fn reply(content: &str) -> Self {
        Action::Reply {
            content: content.to_owned(),
            usage: true,
            delay: Duration::ZERO,
        }
    }

    /// A completion without a `usage` block.
    pub fn reply_without_usage(content: &str) -> Self {
        Action::Reply {
            content: content.to_owned(),
            usage: false,
            delay: Duration::ZERO,
        }
    }

    /// A completion sent after `delay`.
    pub fn slow_reply(content: &str, delay: Duration) -> Self {
        Action::Reply {
            content: content.to_owned(),
            usage: true,
            delay,
        }
    }

    /// A status with an OpenAI-style error body.
    pub fn status(code: u16) -> Self {
        Action::Status {
            code,
            retry_after: None,
            body: format!(
                r#"{{"error": {{"message": "scripted status {code}", "type": "scripted"}}}}"#
            ),
        }
    }

    /// The same status with a `Retry-After` header (only for [`Action::Status`]).
    pub fn retry_after(self, value: &str) -> Self {
        match self {
            Action::Status { code, body, .. } => Action::Status {
                code,
                retry_after: Some(value.to_owned()),
                body,
            },
            other => other,
        }
    }

    /// A status with a given body.
    pub fn status_with_body(code: u16, body: &str) -> Self {
        Action::Status {
            code,
            retry_after: None,
            body: body.to_owned(),
        }
    }
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Received {
    /// Request method.
    pub method: String,
    /// Request path.
    pub path: String,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The JSON body (Null when it did not parse).
    pub body: serde_json::Value,
}

impl Received {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == &name.to_lowercase())
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    script: Mutex<VecDeque<Action>>,
    received: Mutex<Vec<Received>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

/// The running server; its threads live until the test process ends.
pub struct ScriptedServer {
    port: u16,
    state: Arc<State>,
}

impl ScriptedServer {
    /// Starts serving `script` on an ephemeral loopback port.
    pub fn start(script: Vec<Action>) -> Self {
        assert!(!script.is_empty(), "a script needs at least one action");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(State {
            script: Mutex::new(script.into()),
            ..State::default()
        });
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        ScriptedServer { port, state }
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The requests received so far, oldest first.
    pub fn received(&self) -> Vec<Received> {
        self.state.received.lock().unwrap().clone()
    }

    /// The most requests held at once.
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }
}

/// A base URL on which nothing listens (a port bound, then released).
pub fn dead_base_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

/// The JSON of a chat completion.
pub fn completion_json(content: &str, usage: bool) -> String {
    let mut body = serde_json::json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "model": "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
    });
    if usage {
        body["usage"] =
            serde_json::json!({"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18});
    }
    body.to_string()
}

fn next_action(state: &State) -> Action {
    let mut script = state.script.lock().unwrap();
    if script.len() > 1 {
        script.pop_front().unwrap()
    } else {
        script.front().cloned().unwrap()
    }
}

fn serve(mut stream: TcpStream, state: &State) {
    let Some(received) = read_request(&stream) else {
        return;
    };
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    state.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let authorization = received
        .header("authorization")
        .unwrap_or_default()
        .to_owned();
    state.received.lock().unwrap().push(received);
    let action = next_action(state);
    respond(&mut stream, &action, &authorization);
    state.in_flight.fetch_sub(1, Ordering::SeqCst);
    let _ = stream.shutdown(Shutdown::Both);
}

fn respond(stream: &mut TcpStream, action: &Action, authorization: &str) {
    let head = |code: u16, length: usize, extra: &str| {
        format!(
            "HTTP/1.1 {code} Scripted\r\nContent-Type: application/json\r\n\
             Content-Length: {length}\r\nConnection: close\r\n{extra}\r\n"
        )
    };
    let _ = match action {
        Action::Reply {
            content,
            usage,
            delay,
        } => {
            std::thread::sleep(*delay);
            let body = completion_json(content, *usage);
            write!(stream, "{}{body}", head(200, body.len(), ""))
        }
        Action::Status {
            code,
            retry_after,
            body,
        } => {
            let extra = retry_after
                .as_ref()
                .map(|v| format!("Retry-After: {v}\r\n"))
                .unwrap_or_default();
            write!(stream, "{}{body}", head(*code, body.len(), &extra))
        }
        Action::Stall(wait) => {
            std::thread::sleep(*wait);
            Ok(())
        }
        Action::CloseMidBody => {
            let body = completion_json("never complete", true);
            let half = &body[..body.len() / 2];
            write!(stream, "{}{half}", head(200, body.len(), "")).and_then(|()| stream.flush())
        }
        Action::TruncatedJson => {
            let body = completion_json("cut", true);
            let cut = &body[..body.len() - 20];
            write!(stream, "{}{cut}", head(200, cut.len(), ""))
        }
        Action::Hangup => Ok(()),
        Action::Dribble { content, interval } => {
            let body = completion_json(content, true);
            write!(stream, "{}", head(200, body.len(), "")).and_then(|()| {
                for byte in body.as_bytes() {
                    stream.write_all(&[*byte])?;
                    stream.flush()?;
                    std::thread::sleep(*interval);
                }
                Ok(())
            })
        }
        Action::EchoAuthorization(code) => {
            let echoed = format!("you sent Authorization: {authorization}");
            let body = if *code == 200 {
                completion_json(&echoed, true)
            } else {
                serde_json::json!({"error": {"message": echoed, "type": "scripted"}}).to_string()
            };
            write!(stream, "{}{body}", head(*code, body.len(), ""))
        }
    };
    let _ = stream.flush();
}

fn read_request(stream: &TcpStream) -> Option<Received> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        let (name, value) = trimmed.split_once(':')?;
        headers.push((name.trim().to_lowercase(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Received {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
    })
}
