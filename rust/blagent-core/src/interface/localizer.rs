//! The one [`Localizer`]: index a repository once, answer [`LocalizeRequest`]s in it with the
//! pipeline each request names.

use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::request::LocalizeRequest;
use super::result::LocalizationResult;
use crate::agent::LlmRun;
use crate::dense::{DenseModel, DenseOptions};
use crate::error::{Error, Result};
use crate::index::{IndexOptions, RepoIndex};
use crate::retrieve::{score, FusionWeights, Rewrites, Scored, SearchIndex};

/// How a [`Localizer`] indexes and scores; what each request asks (its issue, pipeline,
/// `top_k`, granularity, hints) is in the request.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LocalizeOptions {
    /// How to walk and chunk the repository.
    pub index: IndexOptions,
    /// How to weigh the signals.
    pub weights: FusionWeights,
    /// Dense retrieval (the embedding model and its cache); lexical signals only when `None`.
    pub dense: Option<DenseOptions>,
    /// The encoder (model and cache) that compares each candidate function's summary with the
    /// issue's title at function level ([`crate::retrieve::functions`]); no chunk is embedded
    /// for it. Left out of the JSON when `None`, as earlier builds wrote these options.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summaries: Option<DenseOptions>,
}

/// Localizes bug reports in repositories: LLM-free, or with the model of its [`LlmRun`] for
/// the requests that name an LLM pipeline.
#[derive(Debug, Clone, Default)]
pub struct Localizer {
    options: LocalizeOptions,
    dense: Option<DenseModel>,
    summaries: Option<DenseModel>,
    llm: Option<LlmRun>,
}

impl Localizer {
    /// A localizer with these options (the embedding model is loaded when dense retrieval is
    /// on).
    pub fn new(options: LocalizeOptions) -> Result<Self> {
        if options.index.chunk.max_bytes == 0 {
            return Err(Error::InvalidInput(
                "chunk max_bytes must be at least 1".to_owned(),
            ));
        }
        options.weights.check()?;
        let dense = options.dense.clone().map(DenseModel::load).transpose()?;
        // Dense retrieval's model serves the summaries too where they name the same one.
        let summaries = match (&options.summaries, &dense) {
            (Some(wanted), Some(model))
                if (&wanted.model_dir, &wanted.cache_dir, wanted.max_tokens)
                    == (
                        &model.options().model_dir,
                        &model.options().cache_dir,
                        model.options().max_tokens,
                    ) =>
            {
                Some(model.clone())
            }
            (Some(wanted), _) => Some(DenseModel::load(wanted.clone())?),
            (None, _) => None,
        };
        Ok(Localizer {
            options,
            dense,
            summaries,
            llm: None,
        })
    }

    /// The same localizer, answering the LLM pipelines with `run`'s model and options (without
    /// one they run with no model: every LLM stage falls back to retrieval).
    #[must_use]
    pub fn with_llm(mut self, run: LlmRun) -> Self {
        self.llm = Some(run);
        self
    }

    /// The options in force.
    pub fn options(&self) -> &LocalizeOptions {
        &self.options
    }

    /// The options an index is built with: [`IndexOptions`] (walk, chunks, BM25, history) and
    /// dense retrieval's model, vector index and truncation (not its cache or progress bar). A
    /// [`SearchIndex`] built by a localizer with other such settings gives results of neither
    /// ([`Localizer::check_index`]).
    pub fn index_settings(&self) -> serde_json::Value {
        let dense = self.options.dense.as_ref().map(|d| {
            serde_json::json!({"model_dir": d.model_dir, "kind": d.kind, "max_tokens": d.max_tokens})
        });
        let mut settings = serde_json::json!({"index": self.options.index, "dense": dense});
        if let Some(s) = &self.options.summaries {
            settings["summaries"] =
                serde_json::json!({"model_dir": s.model_dir, "max_tokens": s.max_tokens});
        }
        settings
    }

    /// Refuses to answer `request` in `index`, a prebuilt index handed in with the settings it
    /// was `built_with` ([`Localizer::index_settings`] of the localizer that built it), where
    /// those settings are not this localizer's (its dense signals, languages or chunks would
    /// be silently another's) or where the request names another repository than the index's.
    pub fn check_index(
        &self,
        built_with: &serde_json::Value,
        index: &SearchIndex,
        request: &LocalizeRequest,
    ) -> Result<()> {
        let mine = self.index_settings();
        if *built_with != mine {
            let mut differ = Vec::new();
            settings_differences("", (built_with, &mine), "this localizer", &mut differ);
            differ.truncate(8);
            return Err(Error::InvalidInput(format!(
                "the index was built with other options than this localizer's ({}): index the \
                 repository with this localizer",
                differ.join(", ")
            )));
        }
        if !request.repo_path.as_os_str().is_empty() {
            let named = std::fs::canonicalize(&request.repo_path).ok();
            if named.as_deref() != Some(index.repo.root.as_path()) {
                return Err(Error::InvalidInput(format!(
                    "the request names the repository {} but the index is of {}",
                    request.repo_path.display(),
                    index.repo.root.display()
                )));
            }
        }
        Ok(())
    }

    /// The model and options of the LLM pipelines, when given.
    pub fn llm(&self) -> Option<&LlmRun> {
        self.llm.as_ref()
    }

    /// Indexes a repository (reusable across requests on the same tree), with its dense part
    /// when dense retrieval is on.
    /// Refused as bad input, before anything is read: a repository that holds the cassette
    /// the LLM run records to (its recording would change the tree it localizes in).
    pub fn index(&self, repo: &std::path::Path) -> Result<SearchIndex> {
        crate::fault::check(repo);
        if let Some(cassette) = self.llm.as_ref().and_then(|run| run.recording.as_deref()) {
            let repo_only = crate::repo::Inputs::new().folder(Some(repo));
            crate::repo::check_place(cassette, &repo_only, "cassette")?;
        }
        let lexical = RepoIndex::build(repo, &self.options.index)?;
        if let Some(model) = &self.summaries {
            model.check_cache_place(&lexical.root, None)?;
        }
        let dense = self.dense.as_ref().map(|m| m.index(&lexical)).transpose()?;
        Ok(SearchIndex {
            repo: lexical,
            dense,
            summaries: self.summaries.clone(),
        })
    }

    /// Answers `request`: indexes its repository, then [`Localizer::localize_in`].
    pub fn localize(&self, request: &LocalizeRequest) -> Result<LocalizationResult> {
        self.localize_indexed(request).map(|(result, _)| result)
    }

    /// [`Localizer::localize`], with the index it built, for a caller that reads more of the
    /// repository's parsed files (`batch --related-locs` reads their symbols).
    pub fn localize_indexed(
        &self,
        request: &LocalizeRequest,
    ) -> Result<(LocalizationResult, SearchIndex)> {
        let start = Instant::now();
        request.validate()?;
        let index = self.index(&request.repo_path)?;
        let mut result = self.localize_in(&index, request)?;
        result.timings.index_reused = false;
        result.timings.total_ms = crate::timing::elapsed_ms(start);
        Ok((result, index))
    }

    /// Answers `request` in an index already built for its repository, with the pipeline the
    /// request names.
    pub fn localize_in(
        &self,
        index: &SearchIndex,
        request: &LocalizeRequest,
    ) -> Result<LocalizationResult> {
        request.validate()?;
        super::run::answer(&self.options.weights, self.llm.as_ref(), index, request)
    }

    /// The LLM-free scoring of `issue`: every file's signals and the fused ranking before any
    /// cut, for callers that read it whole (`blagent eval --signals-out`). `rewrites` replace
    /// the rule-based T0/T1 rewrites of the dense views.
    pub fn score(
        &self,
        index: &SearchIndex,
        issue: &str,
        rewrites: Option<&Rewrites>,
    ) -> Result<Scored> {
        score(index, issue, &self.options.weights, rewrites)
    }
}

/// Where `theirs` and `ours` (two settings, as a batch line records them or as
/// [`Localizer::index_settings`] gives them) differ, as `path theirs
/// (<ours_are>: ours)`.
pub(super) fn settings_differences(
    path: &str,
    (theirs, ours): (&Value, &Value),
    ours_are: &str,
    out: &mut Vec<String>,
) {
    match (theirs, ours) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let null = Value::Null;
                let (x, y) = (a.get(key).unwrap_or(&null), b.get(key).unwrap_or(&null));
                settings_differences(&format!("{path}.{key}"), (x, y), ours_are, out);
            }
        }
        _ if theirs != ours => out.push(format!(
            "{} {theirs} ({ours_are}: {ours})",
            path.trim_start_matches('.')
        )),
        _ => {}
    }
}
