//! Choosing the model from a configuration ([`model_from_config`]), and [`LlmClient`]: a model
//! with its configuration, price table and token ledger, the one handle stages need.

use std::sync::Arc;

use super::config::LlmConfig;
use super::http::HttpModel;
use super::prices::PriceTable;
use super::replay::{RecordingModel, ReplayModel};
use super::usage::{TokenLedger, UsageSummary};
use super::{ChatModel, ChatRequest, ChatResponse, Message, NoModel};
use crate::error::Result;
use crate::repo::Inputs;

/// The model a configuration asks for: replay (`replay` set; keyed with `model` when given,
/// else the cassette's one model), HTTP (`base_url` set), replay with HTTP answering what the
/// cassette does not (both set), any of those with an endpoint recorded to a cassette
/// (`record`: every exchange of the run, replayed ones included, so the new cassette alone
/// reproduces it), or none (LLM-free). The configuration is validated first.
pub fn model_from_config(config: &LlmConfig) -> Result<Box<dyn ChatModel>> {
    model_reading(config, &config.reads(Inputs::new()))
}

/// [`model_from_config`] for a run that reads `inputs` (its prompts folder, its profile, the
/// configuration's own files: [`LlmConfig::reads`]), which the cassette it records may not
/// be, nor lie inside.
pub fn model_reading(config: &LlmConfig, inputs: &Inputs) -> Result<Box<dyn ChatModel>> {
    model_named_reading(config, inputs).map(|(model, _)| model)
}

/// [`model_reading`] and the name of the model the run asks: the configured one, or, replaying
/// a cassette without one, the cassette's (what a profile must have been fitted for).
pub fn model_named_reading(
    config: &LlmConfig,
    inputs: &Inputs,
) -> Result<(Box<dyn ChatModel>, String)> {
    let config = config.clone().validated()?;
    let replay = match &config.replay {
        Some(path) if config.model.is_empty() => Some(ReplayModel::open(path)?),
        Some(path) => Some(ReplayModel::open_with_model(path, &config.model)?),
        None => None,
    };
    let name = replay
        .as_ref()
        .map_or(config.model.clone(), |r| r.model().to_owned());
    Ok((model_around(replay, &config, inputs)?, name))
}

/// The model of `config` (validated) around the cassette `replay` it replays, if any.
fn model_around(
    replay: Option<ReplayModel>,
    config: &LlmConfig,
    inputs: &Inputs,
) -> Result<Box<dyn ChatModel>> {
    let model: Box<dyn ChatModel> = match (replay, &config.base_url) {
        (Some(replay), None) => return Ok(Box::new(replay)),
        (None, None) => return Ok(Box::new(NoModel)),
        (None, Some(_)) => Box::new(HttpModel::new(config)?),
        (Some(replay), Some(_)) => Box::new(replay.then_live(Box::new(HttpModel::new(config)?))),
    };
    Ok(match &config.record {
        Some(path) => Box::new(RecordingModel::create(
            model,
            config.model.clone(),
            path,
            inputs,
        )?),
        None => model,
    })
}

/// A chat model with its configuration, prices and a token ledger, behind the Python
/// `LlmClient` (`blagent llm-check` asks the endpoint through it). [`LlmClient::chat`] asks the
/// model and counts each call, or its failure, under its stage in the ledger. Batch and
/// evaluation runs do not use it: they share the model itself across instances (the agent's
/// `LlmRun`).
#[derive(Clone)]
pub struct LlmClient {
    model: Arc<dyn ChatModel>,
    config: Arc<LlmConfig>,
    prices: Arc<PriceTable>,
    ledger: Arc<TokenLedger>,
}

impl std::fmt::Debug for LlmClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmClient")
            .field("model", &self.model.name())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl LlmClient {
    /// The client `config` asks for (see [`model_from_config`]), with the built-in price
    /// table extended by `config.prices`.
    pub fn new(config: &LlmConfig) -> Result<Self> {
        let model: Arc<dyn ChatModel> = Arc::from(model_from_config(config)?);
        LlmClient::with_model(config, model)
    }

    /// A client for a JSON configuration (CLI flags), the environment filling the gaps.
    pub fn from_json(config_json: &str) -> Result<Self> {
        LlmClient::new(&LlmConfig::from_json(config_json)?)
    }

    /// A client around a given model (a test double, a shared model).
    pub fn with_model(config: &LlmConfig, model: Arc<dyn ChatModel>) -> Result<Self> {
        let config = config.clone().validated()?;
        let prices = PriceTable::load(config.prices.as_deref())?;
        Ok(LlmClient {
            model,
            config: Arc::new(config),
            prices: Arc::new(prices),
            ledger: Arc::new(TokenLedger::new()),
        })
    }

    /// The model's name (`http:…`, `replay:…`, `none`).
    pub fn name(&self) -> String {
        self.model.name()
    }

    /// Whether requests can be answered at all (false in LLM-free mode).
    pub fn is_enabled(&self) -> bool {
        self.config.replay.is_some() || self.config.base_url.is_some()
    }

    /// The validated configuration.
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// The model.
    pub fn model(&self) -> &Arc<dyn ChatModel> {
        &self.model
    }

    /// The ledger this client counts into.
    pub fn ledger(&self) -> &TokenLedger {
        &self.ledger
    }

    /// Asks `messages` for `stage` with the configured temperature, seed and token cap.
    pub fn chat(&self, stage: &str, messages: Vec<Message>) -> Result<ChatResponse> {
        self.send(&self.config.request(stage, messages))
    }

    /// Sends a prepared request and counts its tokens (or its failure) under its stage.
    pub fn send(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let result = self.model.chat(request);
        match &result {
            Ok(response) => self.ledger.record(&request.stage, &response.usage),
            Err(_) => self.ledger.record_failure(&request.stage),
        }
        result
    }

    /// Tokens and calls so far, per stage and in total, with the cost for the configured model
    /// where the price table knows it.
    pub fn usage(&self) -> UsageSummary {
        self.ledger
            .summary_with_cost(&self.prices, &self.config.model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Usage;

    struct Fixed;

    impl ChatModel for Fixed {
        fn name(&self) -> String {
            "fixed".into()
        }
        fn chat(&self, request: &ChatRequest) -> Result<ChatResponse> {
            if request.stage == "broken" {
                return Err(crate::Error::Llm("broken".into()));
            }
            Ok(ChatResponse {
                content: format!("t={} seed={:?}", request.temperature, request.seed),
                usage: Usage {
                    prompt_tokens: 1000,
                    completion_tokens: 100,
                    estimated: false,
                },
                finish_reason: None,
            })
        }
    }

    #[test]
    fn no_endpoint_means_no_model() {
        let client = LlmClient::new(&LlmConfig::default()).unwrap();
        assert_eq!(client.name(), "none");
        assert!(!client.is_enabled());
        assert!(client.chat("t0", vec![Message::user("x")]).is_err());
        assert_eq!(client.usage().stages["t0"].failed_calls, 1);
    }

    #[test]
    fn chat_uses_the_configured_sampling_and_counts_per_stage() {
        let config = LlmConfig {
            model: "gpt-4o".into(),
            temperature: 0.5,
            seed: Some(3),
            ..LlmConfig::default()
        };
        let client = LlmClient::with_model(&config, Arc::new(Fixed)).unwrap();
        let answer = client.chat("t0", vec![Message::user("x")]).unwrap();
        assert_eq!(answer.content, "t=0.5 seed=Some(3)");
        assert!(client.chat("broken", vec![]).is_err());
        let usage = client.usage();
        assert_eq!((usage.total.calls, usage.total.failed_calls), (1, 1));
        assert_eq!(
            usage.total.cost_usd,
            Some((1000.0 * 2.5 + 100.0 * 10.0) / 1e6)
        );
        assert_eq!(
            (
                usage.stages["t0"].calls,
                usage.stages["broken"].failed_calls
            ),
            (1, 1)
        );
    }

    /// A cassette named inside a folder the run reads (its prompts), or naming one of the
    /// configuration's own files (the price table), is refused before anything is created.
    #[test]
    fn a_cassette_may_not_be_or_lie_inside_what_the_run_reads() {
        let dir = tempfile::tempdir().unwrap();
        let prompts = dir.path().join("prompts");
        std::fs::create_dir(&prompts).unwrap();
        let prices = dir.path().join("prices.json");
        std::fs::write(&prices, r#"{"models": {}}"#).unwrap();
        let base = LlmConfig {
            base_url: Some("http://127.0.0.1:9".into()),
            model: "m".into(),
            prices: Some(prices.clone()),
            ..LlmConfig::default()
        };
        let inside = LlmConfig {
            record: Some(prompts.join("rec.md")),
            ..base.clone()
        };
        let err = model_reading(&inside, &Inputs::new().folder(Some(&prompts)))
            .err()
            .unwrap();
        assert!(err.to_string().contains("which this run reads"), "{err}");
        assert!(!prompts.join("rec.md").exists(), "nothing created");
        let over = LlmConfig {
            record: Some(prices.clone()),
            ..base
        };
        let err = model_from_config(&over).err().unwrap();
        assert!(err.to_string().contains("an input of this run"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&prices).unwrap(),
            r#"{"models": {}}"#
        );
    }

    #[test]
    fn record_without_endpoint_and_missing_cassette_are_errors() {
        let record = LlmConfig {
            record: Some("x.jsonl".into()),
            ..LlmConfig::default()
        };
        assert!(model_from_config(&record).is_err());
        let replay = LlmConfig {
            replay: Some("/nonexistent/cassette.jsonl".into()),
            ..LlmConfig::default()
        };
        let err = model_from_config(&replay).err().unwrap().to_string();
        assert!(err.contains("/nonexistent/cassette.jsonl"), "{err}");
    }
}
