//! How far the final ranking trusts a model: its calibrated profile, and the fit that writes one.
//!
//! The final ranking fuses the model's order with retrieval's ([`super::fuse`]) at weight
//! `w = scale × base`. `base` is the run's own check of the model on this instance: the share of
//! its replies that were valid, times (BLAgent) the significant agreement of its phase-2 rerank
//! with itself on the files reversed. `scale` is the model's trust. Without a profile it is 1:
//! the model moves a file up only where retrieval roughly agrees, which keeps a weak but
//! consistent model from costing accuracy, and also keeps a strong one from leading. A
//! profile, fitted once on labelled instances ([`fit`]), sets `scale` for one model and
//! pipeline: large for a model whose order beats retrieval's (its order then leads), small or
//! 0 for one that does not. `base` keeps its role either way: an instance where the model
//! answered badly or inconsistently still falls back towards retrieval.
//!
//! [`fit`] chooses the scale from [`SCALES`] that ranks the gold files best (MRR, then Acc@1,
//! then the default scale, then the smaller one), keeps a scale above the default only where
//! its gain is significant ([`trusted`]), and reports what that procedure is worth on instances
//! it did not see: k-fold cross-validation, the whole choice made again on each fold's
//! complement and scored on the fold.

use std::path::Path;

use serde::{Deserialize, Serialize};

use rand::rngs::StdRng;
use rand::SeedableRng;

use super::pipeline::Pipeline;
use super::rank::fuse;
use crate::dataset::paired::{bootstrap, sign_test, Interval, McNemar, DEFAULT_RESAMPLES};
use crate::dataset::{all_within, reciprocal_rank};
use crate::error::{Error, Result};
use crate::repo::read::MAX_SMALL_FILE_BYTES;

/// The profile format's version.
pub const PROFILE_SCHEMA_VERSION: &str = "1";

/// The scales a fit chooses from: 0 is retrieval alone, 1 the default, 1000 lets the model's
/// order lead (its ranks outweigh any retrieval rank once `base` is above 0.01).
pub const SCALES: [f32; 9] = [0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 1000.0];

/// The scale without a profile.
pub const DEFAULT_SCALE: f32 = 1.0;

/// Ranks a fit scores (the `Acc@10`/MRR cut of `blagent eval`).
const SCORED_RANKS: usize = 10;

/// The bootstrap's seed in [`trusted`]: a calibration is reproducible.
const GAIN_SEED: u64 = 20_261_203;

/// The sign test's level for a raised scale ([`trusted`]).
const SIGN_TEST_LEVEL: f64 = 0.05;

/// A model's calibrated trust, as `blagent calibrate` writes it and `--llm-profile` reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmProfile {
    /// [`PROFILE_SCHEMA_VERSION`].
    pub schema_version: String,
    /// The model it was fitted for (the endpoint configuration's `model`).
    pub model: String,
    /// The pipeline it was fitted for; other pipelines keep the default scale.
    pub pipeline: Pipeline,
    /// The chosen scale of the model's weight.
    pub weight_scale: f32,
    /// How it was chosen and what it is worth.
    pub fit: TrustFit,
}

impl LlmProfile {
    /// Reads and checks a profile.
    pub fn load(path: &Path) -> Result<Self> {
        let text = crate::repo::read::read_user_json(path, MAX_SMALL_FILE_BYTES, "LLM profile")?;
        let profile: LlmProfile = crate::json::from_object(&text).map_err(|e| {
            Error::InvalidInput(format!("invalid LLM profile {}: {e}", path.display()))
        })?;
        if profile.schema_version.split('.').next() != Some(PROFILE_SCHEMA_VERSION) {
            return Err(Error::InvalidInput(format!(
                "LLM profile {} has schema_version {:?}; this blagent reads {PROFILE_SCHEMA_VERSION}",
                path.display(),
                profile.schema_version
            )));
        }
        if !(profile.weight_scale.is_finite() && profile.weight_scale >= 0.0) {
            return Err(Error::InvalidInput(format!(
                "LLM profile {}: weight_scale must be a finite number >= 0",
                path.display()
            )));
        }
        Ok(profile)
    }

    /// The scale for a run of `pipeline`: the profile's when it was fitted for it, else 1.
    pub fn scale_for(profile: Option<&LlmProfile>, pipeline: Pipeline) -> f32 {
        profile
            .filter(|p| p.pipeline == pipeline)
            .map_or(DEFAULT_SCALE, |p| p.weight_scale)
    }
}

/// What the final fusion of one instance works from: enough to rank it again at another
/// scale. Files are index positions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FusionInputs {
    /// Retrieval's complete ranking.
    pub retrieval: Vec<usize>,
    /// The model's order (empty when every stage fell back).
    pub model: Vec<usize>,
    /// The run's own check of the model (`base` in the module documentation).
    pub base_weight: f32,
}

/// One labelled instance of a fit.
#[derive(Debug, Clone, PartialEq)]
pub struct TrustSample {
    /// Its final fusion's inputs.
    pub fusion: FusionInputs,
    /// The gold files found in the index.
    pub gold: Vec<usize>,
}

/// MRR and Acc@1 of some instances at one scale, as `blagent eval` counts them
/// ([`crate::dataset::reciprocal_rank`], [`crate::dataset::all_within`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TrustScore {
    /// The scale (for a cross-validated score: the one chosen on all instances).
    pub scale: f32,
    /// Mean reciprocal rank of the first gold file in the top 10.
    pub mrr: f64,
    /// Share of instances whose gold files are all ranked first (one gold file: it is first).
    pub acc1: f64,
}

/// A fit's report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrustFit {
    /// Labelled instances fitted on.
    pub instances: usize,
    /// Cross-validation folds.
    pub folds: usize,
    /// Every candidate scale scored on all instances (training scores).
    pub scales: Vec<TrustScore>,
    /// The chosen scale's training score.
    pub chosen: TrustScore,
    /// The fit's score on instances it did not see: each fold ranked at the scale the whole
    /// procedure (the best scale, kept above the default only where [`trusted`]) gives on the
    /// other folds; its `scale` is what the procedure gives on all instances.
    pub cross_validated: TrustScore,
    /// Retrieval alone (scale 0) on the same instances.
    pub retrieval_only: TrustScore,
    /// The default (scale 1) on the same instances.
    pub default: TrustScore,
}

/// `sample`'s files ranked at `scale`, the top [`SCORED_RANKS`].
fn ranked_at(sample: &TrustSample, scale: f32) -> Vec<usize> {
    let inputs = &sample.fusion;
    fuse(
        &inputs.model,
        &inputs.retrieval,
        scale * inputs.base_weight,
        SCORED_RANKS,
    )
}

/// Each sample's reciprocal rank of its first gold file at `scale` (0 outside the top
/// [`SCORED_RANKS`]): the per-instance terms of a fit's MRR, for paired statistics.
pub fn reciprocal_ranks<'a>(
    samples: impl IntoIterator<Item = &'a TrustSample>,
    scale: f32,
) -> Vec<f64> {
    samples
        .into_iter()
        .map(|s| reciprocal_rank(&ranked_at(s, scale), &s.gold))
        .collect()
}

/// Scores `samples` ranked at `scale`.
fn score(samples: &[&TrustSample], scale: f32) -> TrustScore {
    let mut out = TrustScore {
        scale,
        ..TrustScore::default()
    };
    if samples.is_empty() {
        return out;
    }
    for sample in samples {
        let ranked = ranked_at(sample, scale);
        out.mrr += reciprocal_rank(&ranked, &sample.gold);
        out.acc1 += f64::from(u8::from(all_within(&ranked, &sample.gold, 1)));
    }
    #[allow(clippy::cast_precision_loss)]
    let n = samples.len() as f64;
    out.mrr /= n;
    out.acc1 /= n;
    out
}

/// `samples` scored at every scale of `SCALES`, in its order.
fn score_all(samples: &[&TrustSample]) -> Vec<TrustScore> {
    SCALES.iter().map(|&scale| score(samples, scale)).collect()
}

/// The best of `scores` (in `SCALES` order): highest MRR, then Acc@1, then the default scale,
/// then the smaller scale. Where every scale ranks alike (a model that agrees with retrieval
/// everywhere) the default stays: nothing says the model should be turned down.
#[allow(clippy::float_cmp)] // scales are the exact constants of `SCALES`
fn best(scores: &[TrustScore]) -> TrustScore {
    let mut best = scores[0];
    for &candidate in &scores[1..] {
        let (new, old) = ((candidate.mrr, candidate.acc1), (best.mrr, best.acc1));
        if new > old || (new == old && candidate.scale == DEFAULT_SCALE) {
            best = candidate;
        }
    }
    best
}

/// A scale's standing against the default on some instances ([`trusted`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trusted {
    /// The scale a profile gets.
    pub scale: f32,
    /// MRR at the chosen scale minus MRR at the default, with its paired bootstrap 95% interval.
    pub gain: Interval,
    /// The exact sign test of the same per-instance reciprocal ranks: instances the default
    /// ranks better (`baseline_only`), those the chosen scale does (`run_only`), and p.
    pub sign: McNemar,
}

/// The scale a profile gets for `chosen` on `samples`: `chosen`, except that a scale above the
/// default stands only where its gain over the default is significant both ways: the paired
/// bootstrap's 95% interval lies above 0 and the exact sign test gives p < 0.05. On a small
/// calibration set the best scale is often best by chance, and a raised scale hands the model
/// the lead on every instance after it; a percentile bootstrap on a few instances is too
/// narrow (4 better and none worse of 8 gave [+0.031, +0.366], where no exact test goes below
/// p 0.125), which the sign test is not. Lowering the trust needs no evidence.
pub fn trusted(samples: &[&TrustSample], chosen: f32) -> Result<Trusted> {
    let default = reciprocal_ranks(samples.iter().copied(), DEFAULT_SCALE);
    let at = reciprocal_ranks(samples.iter().copied(), chosen);
    let sign = sign_test(&default, &at);
    let mut rng = StdRng::seed_from_u64(GAIN_SEED);
    let gain = bootstrap(&[(default, at)], DEFAULT_RESAMPLES, &mut rng)?[0];
    let raised_without_evidence =
        chosen > DEFAULT_SCALE && (gain.low <= 0.0 || sign.p >= SIGN_TEST_LEVEL);
    Ok(Trusted {
        scale: if raised_without_evidence {
            DEFAULT_SCALE
        } else {
            chosen
        },
        gain,
        sign,
    })
}

/// Fits the scale on `samples` with `folds`-fold cross-validation (instance `i` is in fold
/// `i % folds`; at least 2 folds and 2 instances), with the chosen scale's standing on all of
/// them ([`trusted`]), whose `scale` is the one a profile gets.
pub fn fit(samples: &[TrustSample], folds: usize) -> Result<(TrustFit, Trusted)> {
    if samples.len() < 2 || folds < 2 {
        return Err(Error::InvalidInput(format!(
            "a fit needs at least 2 labelled instances and 2 folds (got {} and {folds})",
            samples.len()
        )));
    }
    let folds = folds.min(samples.len());
    let all: Vec<&TrustSample> = samples.iter().collect();
    let scales = score_all(&all);
    let chosen = best(&scales);
    let trust = trusted(&all, chosen.scale)?;
    let mut held_out = TrustScore {
        scale: trust.scale,
        ..TrustScore::default()
    };
    for fold in 0..folds {
        let part = |held: bool| -> Vec<&TrustSample> {
            samples
                .iter()
                .enumerate()
                .filter(|(i, _)| (i % folds == fold) == held)
                .map(|(_, s)| s)
                .collect()
        };
        let (test, train) = (part(true), part(false));
        let on_test = score(
            &test,
            trusted(&train, best(&score_all(&train)).scale)?.scale,
        );
        #[allow(clippy::cast_precision_loss)]
        let weight = test.len() as f64;
        held_out.mrr += on_test.mrr * weight;
        held_out.acc1 += on_test.acc1 * weight;
    }
    #[allow(clippy::cast_precision_loss)]
    let n = samples.len() as f64;
    held_out.mrr /= n;
    held_out.acc1 /= n;
    let fit = TrustFit {
        instances: samples.len(),
        folds,
        scales,
        chosen,
        cross_validated: held_out,
        retrieval_only: score(&all, 0.0),
        default: score(&all, DEFAULT_SCALE),
    };
    Ok((fit, trust))
}

#[cfg(test)]
// Scales are compared with the exact constants of `SCALES`.
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    /// Retrieval ranks `gold` at `retrieval_rank` (0-based) of 20 files; the model answers
    /// `model`.
    fn sample(retrieval_rank: usize, model: Vec<usize>, gold: usize) -> TrustSample {
        let mut retrieval: Vec<usize> = (0..20).filter(|&f| f != gold).collect();
        retrieval.insert(retrieval_rank, gold);
        TrustSample {
            fusion: FusionInputs {
                retrieval,
                model,
                base_weight: 1.0,
            },
            gold: vec![gold],
        }
    }

    /// The model is right where retrieval is not: gold third in retrieval, the model ranks it
    /// first and retrieval's first file second (which weight 1 cannot overcome).
    fn trust_pays() -> TrustSample {
        sample(2, vec![7, 0], 7)
    }

    /// The model is wrong where retrieval is right.
    fn trust_costs() -> TrustSample {
        sample(0, vec![9], 4)
    }

    /// The model ranks what retrieval ranks: every scale scores alike.
    fn agrees() -> TrustSample {
        sample(0, vec![5, 6], 5)
    }

    #[test]
    fn a_raised_scale_stands_only_on_a_significant_gain() {
        let many: Vec<TrustSample> = (0..30).map(|_| trust_pays()).collect();
        let all: Vec<&TrustSample> = many.iter().collect();
        let trust = trusted(&all, 8.0).unwrap();
        assert!(trust.gain.delta > 0.4 && trust.gain.low > 0.0, "{trust:?}");
        assert_eq!((trust.sign.run_only, trust.sign.baseline_only), (30, 0));
        assert_eq!(trust.scale, 8.0);

        // One instance of ten where the model helps: the best scale by MRR, but by chance.
        let few: Vec<TrustSample> = (0..10)
            .map(|i| if i == 0 { trust_pays() } else { agrees() })
            .collect();
        let all: Vec<&TrustSample> = few.iter().collect();
        let trust = trusted(&all, 8.0).unwrap();
        assert!(trust.gain.delta > 0.0 && trust.gain.low <= 0.0, "{trust:?}");
        assert_eq!(trust.scale, DEFAULT_SCALE);
        // Lowering the trust needs no evidence.
        assert_eq!(trusted(&all, 0.25).unwrap().scale, 0.25);
    }

    #[test]
    fn a_bootstrap_on_a_few_instances_is_not_evidence_enough() {
        // Four of eight better, none worse: the percentile interval lies above 0, but no exact
        // test of four wins goes below p 0.125 (a review's case from a real calibration).
        let eight: Vec<TrustSample> = (0..8)
            .map(|i| if i % 2 == 0 { trust_pays() } else { agrees() })
            .collect();
        let all: Vec<&TrustSample> = eight.iter().collect();
        let trust = trusted(&all, 8.0).unwrap();
        assert!(trust.gain.low > 0.0, "{trust:?}");
        assert_eq!((trust.sign.run_only, trust.sign.baseline_only), (4, 0));
        assert!((trust.sign.p - 0.125).abs() < 1e-9, "{trust:?}");
        assert_eq!(trust.scale, DEFAULT_SCALE);
    }

    #[test]
    fn scales_that_rank_alike_keep_the_default() {
        // The model agrees with retrieval everywhere: no scale is better, so nothing turns the
        // model down (scale 0 was chosen before, as the smallest of equals).
        let samples: Vec<TrustSample> = (0..12).map(|_| agrees()).collect();
        let (fit, _) = fit(&samples, 3).unwrap();
        assert!(fit.scales.iter().all(|s| s.mrr == fit.scales[0].mrr));
        assert_eq!(fit.chosen.scale, DEFAULT_SCALE);
    }

    #[test]
    fn cross_validation_scores_the_gated_choice() {
        // Two instances where trust pays among many where the model agrees: scale 8 is the
        // best on every fold's complement, but never significantly, so every fold is ranked at
        // the default, and the cross-validated score is the default's.
        let samples: Vec<TrustSample> = (0..20)
            .map(|i| if i % 10 == 0 { trust_pays() } else { agrees() })
            .collect();
        let (fit, _) = fit(&samples, 5).unwrap();
        assert!(fit.chosen.scale > DEFAULT_SCALE, "{fit:?}");
        assert_eq!(fit.cross_validated.scale, DEFAULT_SCALE);
        assert!(
            (fit.cross_validated.mrr - fit.default.mrr).abs() < 1e-12,
            "{fit:?}"
        );
    }

    #[test]
    fn a_model_that_is_right_where_retrieval_is_wrong_earns_more_weight() {
        let samples: Vec<TrustSample> = (0..10).map(|_| trust_pays()).collect();
        let (fit, _) = fit(&samples, 5).expect("fits");
        assert_eq!(
            fit.chosen.scale, 2.0,
            "the smallest scale that ranks gold first"
        );
        assert!((fit.chosen.mrr - 1.0).abs() < 1e-9);
        assert!((fit.cross_validated.mrr - 1.0).abs() < 1e-9);
        assert!((fit.retrieval_only.mrr - 1.0 / 3.0).abs() < 1e-9);
        assert!((fit.default.mrr - 0.5).abs() < 1e-9);
    }

    #[test]
    fn a_model_that_is_wrong_where_retrieval_is_right_gets_no_weight() {
        let samples: Vec<TrustSample> = (0..8).map(|_| trust_costs()).collect();
        let (fit, _) = fit(&samples, 4).expect("fits");
        assert_eq!(fit.chosen.scale, 0.0, "ties go to the smaller scale");
        assert!((fit.cross_validated.mrr - 1.0).abs() < 1e-9);
        assert_eq!(fit.scales.len(), SCALES.len());
        assert!((fit.scales.last().expect("scales").mrr - 0.5).abs() < 1e-9);
    }

    #[test]
    fn cross_validation_scores_each_fold_with_a_choice_made_without_it() {
        // Fold 0 holds the instances that reward trust, fold 1 those that punish it: each is
        // ranked at the scale the other fold chose (0 for fold 0, 2 for fold 1).
        let samples = vec![trust_pays(), trust_costs(), trust_pays(), trust_costs()];
        let (fit, _) = fit(&samples, 2).expect("fits");
        // On all four, 0.25 keeps the punishing instances first and the rewarding ones second
        // (MRR 0.75), as 2 does the other way round: the tie goes to the smaller scale.
        assert_eq!(fit.chosen.scale, 0.25);
        assert!((fit.chosen.mrr - 0.75).abs() < 1e-9);
        assert!((fit.cross_validated.mrr - (2.0 / 3.0 + 1.0) / 4.0).abs() < 1e-9);
        assert!(super::fit(&samples[..1], 3).is_err());
        assert!(super::fit(&samples, 1).is_err());
    }

    /// A fit scores a scale as `blagent eval` scores the ranking it gives: MRR over the top 10
    /// and Acc@1 in LocAgent's reading (several gold files are never all first).
    #[test]
    fn a_fit_scores_as_eval_does() {
        let mut two_gold = trust_pays();
        two_gold.gold.push(0);
        let far = sample(15, vec![], 3);
        let samples = [trust_pays(), trust_costs(), two_gold, far];
        let refs: Vec<&TrustSample> = samples.iter().collect();
        for scale in SCALES {
            let mut eval = crate::dataset::MetricsAccumulator::default();
            for s in &samples {
                let names = |files: &[usize]| -> Vec<String> {
                    files.iter().map(ToString::to_string).collect()
                };
                eval.add(&names(&ranked_at(s, scale)), &names(&s.gold));
            }
            let eval = eval.finish();
            let fit = score(&refs, scale);
            assert!((fit.mrr - eval.mrr).abs() < 1e-12, "{scale}");
            assert!((fit.acc1 - eval.acc[0]).abs() < 1e-12, "{scale}");
        }
        assert_eq!(
            reciprocal_ranks(&samples[3..], 1.0),
            [0.0],
            "outside the top 10"
        );
    }

    #[test]
    fn the_base_weight_still_holds_a_trusted_model_back() {
        let mut held = trust_pays();
        held.fusion.base_weight = 0.0;
        assert!((score(&[&held], 1000.0).mrr - 1.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn profiles_apply_to_their_pipeline_and_refuse_bad_files() {
        let profile = LlmProfile {
            schema_version: PROFILE_SCHEMA_VERSION.to_owned(),
            model: "m".to_owned(),
            pipeline: Pipeline::Blagent,
            weight_scale: 8.0,
            fit: TrustFit::default(),
        };
        assert_eq!(
            LlmProfile::scale_for(Some(&profile), Pipeline::Blagent),
            8.0
        );
        assert_eq!(LlmProfile::scale_for(Some(&profile), Pipeline::Rrl), 1.0);
        assert_eq!(LlmProfile::scale_for(None, Pipeline::Blagent), 1.0);

        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("p.json");
        std::fs::write(&path, serde_json::to_string(&profile).expect("json")).expect("write");
        assert_eq!(LlmProfile::load(&path).expect("loads"), profile);
        for bad in [
            r#"{"schema_version": "2", "model": "m", "pipeline": "blagent", "weight_scale": 1, "fit": {}}"#,
            r#"{"schema_version": "1", "model": "m", "pipeline": "blagent", "weight_scale": -1, "fit": {}}"#,
            r#"{"schema_version": "1", "model": "m", "pipeline": "blagent", "weight_scale": 1, "fit": {}, "x": 1}"#,
        ] {
            std::fs::write(&path, bad).expect("write");
            assert!(LlmProfile::load(&path).is_err(), "{bad}");
        }
    }
}
