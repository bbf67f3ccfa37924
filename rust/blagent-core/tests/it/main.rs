//! blagent-core's integration tests as one binary: every test binary links the whole crate and
//! its dependencies (a few minutes each with the release profile's LTO), so the modules share
//! one. `tests/cancel.rs` stays a binary of its own: it raises the process-wide cancellation
//! flag, which would stop the tests running beside it.

#[path = "../support/mod.rs"]
mod support;

mod analysis;
mod calibrate;
mod distributed;
mod fixtures;
mod hardening;
mod interface;
mod jvm;
mod layers;
mod llm_hostile;
mod llm_http;
mod llm_mode;
mod shop;
