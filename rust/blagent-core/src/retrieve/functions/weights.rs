//! The weights that combine a function's features into its score, read from `weights.json`
//! (fitted on the development set by `bench/fit_function_weights.py`, which rewrites it).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::features::{Feature, Features, NUM_FEATURES};
use crate::error::{Error, Result};

/// The fitted weights, as shipped.
const FITTED: &str = include_str!("weights.json");

/// The weights file: a version, a note on how it was fitted, one weight per feature name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WeightsFile {
    version: u32,
    #[serde(default)]
    note: String,
    weights: BTreeMap<String, f32>,
}

/// One weight per [`Feature`]: a function's score is the weighted sum of its features.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FunctionWeights {
    /// The version of the weights file they came from.
    pub version: u32,
    weights: Features,
}

static DEFAULT: LazyLock<FunctionWeights> = LazyLock::new(|| {
    FunctionWeights::from_json(FITTED).expect("the shipped weights file is valid")
});

impl Default for FunctionWeights {
    fn default() -> Self {
        *DEFAULT
    }
}

impl FunctionWeights {
    /// Weights from the JSON of a weights file (`{"version", "note", "weights": {name: w}}`);
    /// a feature it leaves out weighs 0, a name that is no feature is an error.
    pub fn from_json(json: &str) -> Result<Self> {
        let file: WeightsFile = crate::json::from_object(json)
            .map_err(|e| Error::InvalidInput(format!("function weights: {e}")))?;
        let mut weights = [0.0; NUM_FEATURES];
        for (name, weight) in &file.weights {
            let feature = Feature::ALL
                .iter()
                .find(|f| f.name() == name)
                .ok_or_else(|| {
                    Error::InvalidInput(format!("function weights: unknown feature `{name}`"))
                })?;
            weights[feature.index()] = *weight;
        }
        Ok(FunctionWeights {
            version: file.version,
            weights,
        })
    }

    /// The weight of `feature`.
    pub fn weight(&self, feature: Feature) -> f32 {
        self.weights[feature.index()]
    }

    /// The weighted sum of `features`.
    pub fn score(&self, features: &Features) -> f32 {
        features.iter().zip(&self.weights).map(|(f, w)| f * w).sum()
    }

    /// What each feature adds to [`Self::score`] (its weight times its value), by feature
    /// name, those that add nothing left out: a ranked function's `contributions`.
    pub fn contributions(&self, features: &Features) -> BTreeMap<String, f32> {
        Feature::ALL
            .into_iter()
            .map(|feature| (feature, features[feature.index()] * self.weight(feature)))
            .filter(|(_, added)| *added != 0.0)
            .map(|(feature, added)| (feature.name().to_owned(), added))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_file_names_every_feature_and_unknown_names_fail() {
        let shipped: WeightsFile = serde_json::from_str(FITTED).unwrap();
        for feature in Feature::ALL {
            assert!(shipped.weights.contains_key(feature.name()), "{feature:?}");
        }
        let weights = FunctionWeights::from_json(r#"{"version": 3, "weights": {"name": 2}}"#);
        let weights = weights.unwrap();
        assert_eq!(weights.version, 3);
        assert!((weights.weight(Feature::Name) - 2.0).abs() < f32::EPSILON);
        assert!(weights.weight(Feature::FileRank).abs() < f32::EPSILON);
        assert!(FunctionWeights::from_json(r#"{"version": 1, "weights": {"nope": 1}}"#).is_err());
    }

    #[test]
    fn contributions_name_what_each_feature_added_and_sum_to_the_score() {
        let weights = FunctionWeights::default();
        let mut features = [0.0; NUM_FEATURES];
        features[Feature::FileScore.index()] = 0.9;
        features[Feature::Frame.index()] = 0.5;
        features[Feature::Dense.index()] = 0.7; // weighs 0: adds nothing, not listed
        let added = weights.contributions(&features);
        assert_eq!(added.keys().collect::<Vec<_>>(), ["file_score", "frame"]);
        assert!((added["frame"] - 0.5 * weights.weight(Feature::Frame)).abs() < 1e-6);
        let sum: f32 = added.values().sum();
        assert!((sum - weights.score(&features)).abs() < 1e-6);
    }
}
