//! The input ranges the int8 encoder ([`super::vnni`]) smooths by: for each linear layer of a
//! model, the largest `|input|` of each input channel over calibration texts, measured once in
//! f32 by `bench/fit_int8_ranges.py` (development trees and issues, never the test set) and
//! shipped in `int8_ranges.json`. Each layer carries the sum of its weight, so ranges are used
//! only for the model they were measured on; any other model runs its layers in bf16.

use std::sync::OnceLock;

use serde::Deserialize;

/// The ranges of the linear layers of one BERT block that run in int8 (the feed-forward output
/// stays in bf16: its input, GELU's output, rounds to u8 with the most loss).
#[derive(Deserialize)]
pub struct LayerRanges {
    /// The query, key and value projections (one input).
    pub qkv: Linear,
    /// Attention's output projection.
    pub attention_out: Linear,
    /// The feed-forward layer's first product.
    pub intermediate: Linear,
}

/// One linear layer's calibration.
#[derive(Deserialize)]
pub struct Linear {
    /// The sum of the layer's weight as the model file holds it (for query, key and value,
    /// of the three).
    weight_sum: f64,
    /// Per input channel, the largest `|value|` seen.
    input_max: Vec<f32>,
}

impl Linear {
    /// The ranges, where `weight_sum` (the loaded layer's) is the one they were measured with.
    pub fn for_weight(&self, weight_sum: f64) -> Option<&[f32]> {
        ((weight_sum - self.weight_sum).abs() <= 1e-6 * (1.0 + self.weight_sum.abs()))
            .then_some(self.input_max.as_slice())
    }
}

#[derive(Deserialize)]
struct Shipped {
    layers: Vec<LayerRanges>,
}

/// The shipped ranges, block by block (all-MiniLM-L6-v2's); parsed once.
pub fn shipped() -> &'static [LayerRanges] {
    static SHIPPED: OnceLock<Vec<LayerRanges>> = OnceLock::new();
    SHIPPED.get_or_init(|| {
        // A file of this crate, checked by `shipped_ranges_parse`: a parse error is a build
        // defect, and no ranges only means bf16.
        serde_json::from_str::<Shipped>(include_str!("int8_ranges.json"))
            .map(|s| s.layers)
            .unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_ranges_parse() {
        let layers = shipped();
        assert_eq!(layers.len(), 6, "all-MiniLM-L6-v2 has six blocks");
        for layer in layers {
            assert_eq!(layer.qkv.input_max.len(), 384);
            assert_eq!(layer.intermediate.input_max.len(), 384);
            assert!(layer
                .qkv
                .input_max
                .iter()
                .all(|&m| m > 0.0 && m.is_finite()));
        }
        let qkv = &layers[0].qkv;
        assert!(qkv.for_weight(qkv.weight_sum).is_some());
        assert!(
            qkv.for_weight(qkv.weight_sum + 0.01).is_none(),
            "another model's layer"
        );
    }
}
