//! Calibrating a model's trust: run an LLM pipeline once over labelled instances, fit the
//! scale of the model's weight in the final ranking (`agent::fit`), write the profile that
//! `--llm-profile` reads.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::llm::{LlmInstanceStats, LlmTotals};
use super::select::select;
use crate::agent::{fit, LlmProfile, Pipeline, TrustSample, PROFILE_SCHEMA_VERSION};
use crate::dataset::paired::{Interval, McNemar};
use crate::error::{Error, Result};
use crate::interface::progress::Progress;
use crate::interface::{catch_panic, DatasetConfig, Localizer};
use crate::repo::{check_output, json_object_with, open_output, OutputMode};
use crate::retrieve::{Ask, Granularity};

/// What to calibrate on.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrateConfig {
    /// The labelled dataset (JSONL with gold files or patches), its trees, the selection,
    /// the localizer options as the runs will use them, the ranks each run asks for
    /// (`top_k`), the LLM pipeline to calibrate (`blagent` or `rrl`), progress and the model
    /// (an endpoint or a cassette).
    #[serde(flatten)]
    pub run: DatasetConfig,
    /// Cross-validation folds.
    #[serde(default = "default_folds")]
    pub folds: usize,
    /// Where to write the profile.
    pub out: PathBuf,
}

/// Cross-validation folds when the config names none.
pub const DEFAULT_FOLDS: usize = 5;

fn default_folds() -> usize {
    DEFAULT_FOLDS
}

/// What a calibration did.
#[derive(Debug, Clone, Serialize)]
pub struct CalibrationReport {
    /// The profile written to `out`.
    pub profile: LlmProfile,
    /// MRR at the fit's chosen scale minus MRR at the default scale on the calibration
    /// instances, with its paired bootstrap 95% interval: a scale above the default is written
    /// only when the interval lies above 0 and [`CalibrationReport::sign_test`] is significant.
    pub gain_over_default: Interval,
    /// The exact sign test of the same comparison: instances the default ranks better
    /// (`baseline_only`), those the chosen scale does (`run_only`), two-sided p.
    pub sign_test: McNemar,
    /// Where it was written.
    pub out: PathBuf,
    /// Selected instances whose tree was not found.
    pub missing_trees: Vec<String>,
    /// Instances that failed, with the error (left out of the fit).
    pub failures: Vec<(String, String)>,
    /// Instances without a gold file in their index (left out of the fit).
    pub no_gold: Vec<String>,
    /// LLM cost totals and means.
    pub llm: LlmTotals,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// Runs the calibration `config` describes and writes its profile.
pub fn run_calibration(config: &CalibrateConfig) -> Result<CalibrationReport> {
    let start = Instant::now();
    let settings = &config.run;
    let run = settings.llm.as_ref().filter(|run| run.model.is_enabled());
    let run = run.ok_or_else(|| {
        Error::InvalidInput(
            "calibrate needs a model: an endpoint (--llm-base-url, --llm-model) or a cassette \
             (--llm-replay)"
                .to_owned(),
        )
    })?;
    if settings.pipeline == Pipeline::Fused {
        return Err(Error::InvalidInput(
            "calibrate fits an LLM pipeline: use --pipeline blagent or rrl".to_owned(),
        ));
    }
    if run.options.model_weight.is_some() || run.options.profile.is_some() {
        return Err(Error::InvalidInput(
            "calibrate fits the model's weight: leave out model_weight and the profile".to_owned(),
        ));
    }
    if config.folds < 2 {
        return Err(Error::InvalidInput(format!(
            "a fit needs at least 2 folds (got {})",
            config.folds
        )));
    }
    let ask = Ask::new(settings.top_k, Granularity::File)?;
    let selection = select(&settings.dataset, &settings.repos, settings.ids.as_deref())?;
    // Checked now (with every instance's tree an input), written only once the fit is done: an
    // interrupted or failed run leaves the last profile as it was, and no new file.
    let profile_mode = OutputMode {
        append: false,
        holds: "a blagent profile (JSON with schema_version, model, pipeline, weight_scale)",
        is_ours: |b| json_object_with(b, &["schema_version", "model", "pipeline", "weight_scale"]),
    };
    let inputs = settings
        .inputs()
        .folders(selection.present.iter().map(|(_, tree)| tree));
    check_output(&config.out, profile_mode, &inputs, "--out")?;
    settings.check_recording(&[(&config.out, "--out")], &inputs)?;
    let mut failures = selection.refused;
    let mut no_gold = Vec::new();
    let mut totals = LlmTotals {
        pipeline: settings.pipeline.name().to_owned(),
        model: run.model.name(),
        ..LlmTotals::default()
    };
    let localizer = Localizer::new(settings.options.clone())?;
    let weights = &settings.options.weights;
    let mut progress = Progress::new(settings.progress, selection.present.len() as u64);
    let mut samples = Vec::new();
    for (instance, tree) in &selection.present {
        crate::cancel::check()?;
        progress.start(&instance.instance_id);
        let outcome = catch_panic(|| {
            let index = localizer.index(tree)?;
            let ranking = crate::agent::localize(
                &index,
                &instance.problem_statement,
                settings.pipeline,
                ask,
                run.model.as_ref(),
                &run.options,
                weights,
            )?;
            let gold: Vec<usize> = index
                .repo
                .files
                .iter()
                .enumerate()
                .filter(|(_, f)| instance.gold_files.iter().any(|g| g == f.path()))
                .map(|(i, _)| i)
                .collect();
            Ok((ranking, gold))
        });
        crate::cancel::check()?;
        let done = match &outcome {
            Ok(_) => "done".to_owned(),
            Err(err) => format!("FAILED: {err}"),
        };
        progress.finish_one(&instance.instance_id, &done);
        match outcome {
            Ok((ranking, gold)) => {
                totals.add(&LlmInstanceStats::from(&ranking.llm));
                if gold.is_empty() {
                    no_gold.push(instance.instance_id.clone());
                } else {
                    samples.push(TrustSample {
                        fusion: ranking.fusion,
                        gold,
                    });
                }
            }
            Err(err) => failures.push((instance.instance_id.clone(), err.to_string())),
        }
    }
    progress.finish();
    let (fit, trust) = fit(&samples, config.folds)?;
    // Every scale ranks alike when the model gave no order with a weight above 0 (it never
    // answered, every answer failed, or it never agreed with itself): such a fit chooses
    // nothing, and its profile would only turn the model off.
    let informative = samples
        .iter()
        .any(|s| !s.fusion.model.is_empty() && s.fusion.base_weight > 0.0);
    if !informative {
        let t = &totals.total;
        return Err(Error::Llm(format!(
            "the model shaped none of the {} rankings ({} calls, {} replies that failed parsing, \
             {} stages fell back): nothing to calibrate; no profile written",
            totals.instances, t.calls, t.parse_failures, t.fallbacks
        )));
    }
    let profile = LlmProfile {
        schema_version: PROFILE_SCHEMA_VERSION.to_owned(),
        model: run.model_name.clone(),
        pipeline: settings.pipeline,
        weight_scale: trust.scale,
        fit,
    };
    let text = serde_json::to_string_pretty(&profile)?;
    let mut out = open_output(&config.out, profile_mode, &inputs, "--out")?;
    out.write_all((text + "\n").as_bytes())
        .map_err(|e| Error::io(&config.out, e))?;
    out.commit()?;
    Ok(CalibrationReport {
        profile,
        gain_over_default: trust.gain,
        sign_test: trust.sign,
        out: config.out.clone(),
        missing_trees: selection.missing,
        failures,
        no_gold,
        llm: totals,
        seconds: start.elapsed().as_secs_f64(),
    })
}
