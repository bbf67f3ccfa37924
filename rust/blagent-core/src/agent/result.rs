//! What an LLM run takes and gives: its options, and its ranking with an `llm` report (the
//! pipeline, the model, what it cost, where it fell back, the model's evidence per file) that
//! the interface turns into the one result type.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::pipeline::Pipeline;
use super::rewrite::Rewrite;
use super::session::LlmStats;
use super::trust::{FusionInputs, LlmProfile};
use crate::retrieve::{Entity, Scored};

/// Options of [`super::localize`]: how the model is asked, not what the caller asks (the
/// pipeline, `top_k` and granularity are the request's). Every budget is in approximate tokens.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmOptions {
    /// Agent turns (phase 1 of BLAgent, the RRL agent loop), the final answer included.
    pub max_steps: usize,
    /// Repair requests after an invalid reply, per stage.
    pub max_retries: u32,
    /// Candidates the agents judge.
    pub candidates: usize,
    /// Files taken from each query's ranking into the candidates.
    pub per_query: usize,
    /// Files of the phase-2 rerank.
    pub rerank_files: usize,
    /// The issue text as shown to the model.
    pub issue_tokens: usize,
    /// One skeleton read by phase 1.
    pub skeleton_tokens: usize,
    /// One file's pruned context in phase 2.
    pub context_tokens: usize,
    /// One `view_file` window.
    pub view_tokens: usize,
    /// Prompt tokens phase 1 may spend over all its turns before it must answer.
    pub phase1_budget_tokens: usize,
    /// Prompt tokens the whole run may spend (spent, from usage, plus the next request at about
    /// four characters a token): a call that would pass it is not made and its stage falls
    /// back. `None`: no limit.
    pub max_prompt_tokens: Option<usize>,
    /// The model order's weight against retrieval's in the final ranking (`agent::fuse`);
    /// `None`: the profile's scale (1 without one) times the share of the model's replies that
    /// were valid in this run, times the phase-2 agreement when `permutation_check` ran (0
    /// unless significant). See the `trust` module. Read as a JSON number and range-checked
    /// before it is narrowed to `f32` (`1e308` is refused as itself, not as `inf`).
    #[serde(deserialize_with = "super::options::model_weight")]
    pub model_weight: Option<f32>,
    /// A calibrated profile of the model (`blagent calibrate`), read by [`LlmRun::from_config`].
    pub profile: Option<PathBuf>,
    /// The profile read from `profile`.
    #[serde(skip)]
    pub trust: Option<LlmProfile>,
    /// BLAgent: ask phase 2 a second time with its files reversed, none left in its place
    /// (`consistency::second_order`), merge the two answers by mean position, and scale the
    /// default model weight by their agreement (Kendall's τ-b, negatives cut to 0) when it is
    /// significant (p ≤ 0.05; else by 0). One more call, about 2k prompt tokens.
    pub permutation_check: bool,
    /// Sampling temperature: the run's configuration's (`LlmConfig::temperature`, set by
    /// [`LlmRun::from_config`]), not an option a caller gives (as one it is refused as unknown:
    /// it used to be taken and then overwritten).
    #[serde(skip)]
    pub temperature: f32,
    /// Sampling seed.
    pub seed: Option<u64>,
    /// Completion cap per call.
    pub max_completion_tokens: Option<u32>,
    /// Ask the endpoint for JSON objects (every stage answers in JSON); turn off for endpoints
    /// that refuse `response_format`.
    pub json_mode: bool,
    /// RRL's BM25 query groups the agent may use (all when empty).
    pub rrl_groups: Vec<String>,
    /// A folder of prompt overrides (`<name>.md`).
    pub prompts_dir: Option<PathBuf>,
}

impl Default for LlmOptions {
    fn default() -> Self {
        LlmOptions {
            max_steps: 6,
            max_retries: 3,
            candidates: 15,
            per_query: 5,
            rerank_files: 5,
            issue_tokens: 400,
            skeleton_tokens: 160,
            context_tokens: 320,
            view_tokens: 512,
            phase1_budget_tokens: 5000,
            max_prompt_tokens: Some(12_000),
            model_weight: None,
            profile: None,
            trust: None,
            permutation_check: true,
            temperature: 0.0,
            seed: Some(0),
            max_completion_tokens: Some(512),
            json_mode: true,
            rrl_groups: Vec::new(),
            prompts_dir: None,
        }
    }
}

/// The model's evidence about one file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmFileEvidence {
    /// Repository-relative path.
    pub path: String,
    /// Phase-1 score, 0–10, when the model gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
    /// Position in the model's final ranking (1-based), when it ranked the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_rank: Option<usize>,
    /// The model's stated reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Functions the model named in the file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<String>,
}

/// The `llm` section of an LLM run's result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmReport {
    /// The pipeline run.
    pub pipeline: Pipeline,
    /// The model's name (`none` when LLM-free).
    pub model: String,
    /// Whether valid model output shaped the ranking: the model gave an order and its weight is
    /// above 0 (false: retrieval's ranking alone).
    pub llm_ranked: bool,
    /// The model order's weight in the final fusion (`agent::fuse`).
    pub model_weight: f32,
    /// The scale of the default weight: the profile's for this pipeline, else 1.
    pub weight_scale: f32,
    /// Agreement of phase 2 with itself on the files permuted (Kendall's τ-b, 0–1), when
    /// checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreement: Option<f32>,
    /// The chance that a model ranking at random the second time agrees as much (one-sided
    /// p-value); the agreement scales the default model weight only when this is at most 0.05.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreement_p: Option<f32>,
    /// Prompt tokens over all stages.
    pub prompt_tokens: u64,
    /// Completion tokens over all stages.
    pub completion_tokens: u64,
    /// Calls, failures, retries, fallbacks, tokens per stage, wall time.
    #[serde(flatten)]
    pub stats: LlmStats,
    /// The queries used, by name (`t0`, `t1`, RRL groups), with their origin.
    pub queries: BTreeMap<String, Rewrite>,
    /// The candidates the agents judged, in order.
    pub candidates: Vec<String>,
    /// The model's evidence per file, in its ranking order.
    pub files: Vec<LlmFileEvidence>,
}

/// An LLM run's ranking: the LLM-free scoring it started from, the final order, and the report.
#[derive(Debug, Clone)]
pub struct LlmRanking {
    /// The LLM-free scoring of the issue (its signals are every file's evidence).
    pub scored: Scored,
    /// `(file, fused LLM-free score)` of the final ranking, best first, `top_k` long when the
    /// repository has that many files.
    pub ranked: Vec<(usize, f32)>,
    /// What the model did.
    pub llm: LlmReport,
    /// `path::Class.method` entities of the ranked files, when the request asks for functions.
    pub entities: Option<Vec<Entity>>,
    /// What the final fusion worked from (for calibration).
    pub fusion: FusionInputs,
}

/// A model and the pipeline options to run it with, for batch and evaluation runs.
#[derive(Clone)]
pub struct LlmRun {
    /// The model (shared across instances).
    pub model: std::sync::Arc<dyn crate::llm::ChatModel>,
    /// The pipeline options (`top_k` is set by the run).
    pub options: LlmOptions,
    /// The name of the model the run asks (`LlmConfig::model`, or the replayed cassette's when
    /// that is not set), which profiles are fitted for.
    pub model_name: String,
    /// What the run reads besides its options' files: the configuration's (replay cassette,
    /// price table, tokenizer) and those given to [`LlmRun::from_config_reading`]. With the
    /// prompts folder and the profile they make [`LlmRun::inputs`].
    pub reads: crate::repo::Inputs,
    /// The cassette the run records to (`LlmConfig::record`): it may not lie inside a
    /// repository the run indexes.
    pub recording: Option<std::path::PathBuf>,
}

impl LlmRun {
    /// Everything the run reads, which no output may be or lie inside: [`LlmRun::reads`], the
    /// prompts folder and the profile.
    pub fn inputs(&self) -> crate::repo::Inputs {
        with_options(&self.reads, &self.options)
    }

    /// The run `config` describes (an HTTP endpoint, a replay cassette, recording, or none:
    /// then every LLM stage falls back to retrieval), with `options`; the configuration's
    /// sampling settings (temperature, seed, completion cap) override the options'. The
    /// options are checked ([`LlmOptions::validate`]) and the prompt overrides loaded first, so
    /// bad input is refused before anything runs.
    pub fn from_config(options: LlmOptions, config: &crate::llm::LlmConfig) -> crate::Result<Self> {
        LlmRun::from_config_reading(options, config, crate::repo::Inputs::new())
    }

    /// [`LlmRun::from_config`] for a run that also reads `inputs` (its dataset and trees): the
    /// cassette it records may not be one of them or lie inside, and they join
    /// [`LlmRun::reads`].
    pub fn from_config_reading(
        mut options: LlmOptions,
        config: &crate::llm::LlmConfig,
        inputs: crate::repo::Inputs,
    ) -> crate::Result<Self> {
        options.temperature = config.temperature;
        if config.seed.is_some() {
            options.seed = config.seed;
        }
        if config.max_tokens.is_some() {
            options.max_completion_tokens = config.max_tokens;
        }
        options.validate()?;
        super::prompts::Prompts::load(options.prompts_dir.as_deref())?;
        let reads = config.reads(inputs);
        let (model, model_name) =
            crate::llm::model_named_reading(config, &with_options(&reads, &options))?;
        if let Some(path) = &options.profile {
            let profile = LlmProfile::load(path)?;
            if !model_name.is_empty() && profile.model != model_name {
                return Err(crate::Error::InvalidInput(format!(
                    "LLM profile {} was fitted for model {:?}, this run's model is {:?}: \
                     calibrate this model (blagent calibrate) or leave the profile out",
                    path.display(),
                    profile.model,
                    model_name
                )));
            }
            options.trust = Some(profile);
        }
        Ok(LlmRun {
            model: model.into(),
            options,
            model_name,
            reads,
            recording: config.record.clone(),
        })
    }
}

/// `reads` with the prompts folder and profile that `options` name.
fn with_options(reads: &crate::repo::Inputs, options: &LlmOptions) -> crate::repo::Inputs {
    reads
        .clone()
        .folder(options.prompts_dir.as_ref())
        .file(options.profile.as_ref())
}

impl std::fmt::Debug for LlmRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmRun")
            .field("model", &self.model.name())
            .field("options", &self.options)
            .field("model_name", &self.model_name)
            .field("reads", &self.reads)
            .field("recording", &self.recording)
            .finish()
    }
}
