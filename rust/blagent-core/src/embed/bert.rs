//! A BERT encoder forward pass for inference on the CPU, tuned for sentence embeddings.
//!
//! It reads the weight names of Hugging Face's `BertModel` (the same tensors candle-transformers'
//! `bert` loads) and computes the same function with fewer passes over memory: the query, key
//! and value projections are one matrix multiplication with concatenated weights, the attention
//! scale is folded into the query weights, the attention mask becomes an additive bias once per
//! batch, attention is one fused op and each linear layer adds its bias, activation or residual
//! in its own output buffer (`blas`), and layer norm follows in the
//! same buffer.

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{Embedding, VarBuilder};
use candle_transformers::models::bert::{Config, HiddenAct};

use super::blas::{Attention, BlasLinear, Norm, Precision};
use super::int8_ranges::{self, LayerRanges};

/// One transformer layer: self-attention, then the feed-forward block, each with a residual
/// connection and a post layer norm.
struct Layer {
    /// Query, key and value projections stacked into one `(3 × hidden, hidden)` matrix.
    qkv: BlasLinear,
    attention_out: BlasLinear,
    attention_norm: Norm,
    intermediate: BlasLinear,
    output: BlasLinear,
    output_norm: Norm,
    attention: Attention,
}

/// A BERT encoder (embeddings and transformer layers, no pooler) ready for inference.
pub struct Bert {
    word_embeddings: Embedding,
    /// Position embeddings with the token-type-0 embedding already added (blagent never sets
    /// token types), so the embedding step is one lookup and one addition.
    positions: Tensor,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    act: HiddenAct,
}

fn linear(
    vb: &VarBuilder,
    (inputs, outputs): (usize, usize),
    precision: Precision,
    ranges: Option<&int8_ranges::Linear>,
) -> candle_core::Result<BlasLinear> {
    let weight = vb.get((outputs, inputs), "weight")?;
    let bias = vb.get(outputs, "bias")?;
    let input_max = int8_input_max(ranges, &[&weight])?;
    BlasLinear::with_precision(&weight, Some(&bias), precision, input_max)
}

/// The calibrated input ranges of a layer whose weight is `parts` (query, key and value for
/// the fused projection), where they were measured on this very weight.
fn int8_input_max<'a>(
    ranges: Option<&'a int8_ranges::Linear>,
    parts: &[&Tensor],
) -> candle_core::Result<Option<&'a [f32]>> {
    let Some(ranges) = ranges else {
        return Ok(None);
    };
    let mut sum = 0.0;
    for part in parts {
        sum += part.to_dtype(DType::F64)?.sum_all()?.to_scalar::<f64>()?;
    }
    Ok(ranges.for_weight(sum))
}

fn layer_norm(vb: &VarBuilder, size: usize, eps: f64) -> candle_core::Result<Norm> {
    Norm::new(&vb.get(size, "weight")?, &vb.get(size, "bias")?, eps)
}

impl Layer {
    /// One block; `ranges` (its calibration, for [`Precision::Int8Avx512`]) where there are some.
    fn load(
        vb: &VarBuilder,
        config: &Config,
        precision: Precision,
        ranges: Option<&LayerRanges>,
    ) -> candle_core::Result<Self> {
        let hidden = config.hidden_size;
        let head_size = hidden / config.num_attention_heads;
        let attention = vb.pp("attention");
        let projections = attention.pp("self");
        let part = |name: &str| -> candle_core::Result<(Tensor, Tensor)> {
            let vb = projections.pp(name);
            Ok((vb.get((hidden, hidden), "weight")?, vb.get(hidden, "bias")?))
        };
        let (query, key, value) = (part("query")?, part("key")?, part("value")?);
        let qkv_max = int8_input_max(ranges.map(|r| &r.qkv), &[&query.0, &key.0, &value.0])?;
        // Scaling the query projection scales the scores: q·k / √d without a pass over them.
        let scale = 1.0 / (head_size as f64).sqrt();
        let weight = Tensor::cat(&[(query.0 * scale)?, key.0, value.0], 0)?;
        let bias = Tensor::cat(&[(query.1 * scale)?, key.1, value.1], 0)?;
        let eps = config.layer_norm_eps;
        let intermediate = vb.pp("intermediate").pp("dense");
        Ok(Layer {
            qkv: BlasLinear::with_precision(&weight, Some(&bias), precision, qkv_max)?,
            attention_out: linear(
                &attention.pp("output").pp("dense"),
                (hidden, hidden),
                precision,
                ranges.map(|r| &r.attention_out),
            )?,
            attention_norm: layer_norm(&attention.pp("output").pp("LayerNorm"), hidden, eps)?,
            intermediate: linear(
                &intermediate,
                (hidden, config.intermediate_size),
                precision,
                ranges.map(|r| &r.intermediate),
            )?,
            // The feed-forward output stays in bf16 in every precision but f32: its input,
            // GELU's output, rounds to u8 with the most loss (docs/dense.md).
            output: linear(
                &vb.pp("output").pp("dense"),
                (config.intermediate_size, hidden),
                precision,
                None,
            )?,
            output_norm: layer_norm(&vb.pp("output").pp("LayerNorm"), hidden, eps)?,
            attention: Attention::new(config.num_attention_heads, head_size, precision),
        })
    }

    /// `x` is `(batch × seq, hidden)`; `bias` is the additive mask, `(batch, seq)`.
    fn forward(&self, x: &Tensor, bias: &Tensor, act: HiddenAct) -> candle_core::Result<Tensor> {
        let context = self
            .qkv
            .forward(x)?
            .apply_op2_no_bwd(bias, &self.attention)?;
        let attended = self
            .attention_out
            .forward_add_norm(&context, x, &self.attention_norm)?;
        let inner = match act {
            HiddenAct::Gelu => self.intermediate.forward_gelu(&attended)?,
            HiddenAct::GeluApproximate => self.intermediate.forward(&attended)?.gelu()?,
            HiddenAct::Relu => self.intermediate.forward(&attended)?.relu()?,
        };
        self.output
            .forward_add_norm(&inner, &attended, &self.output_norm)
    }
}

impl Bert {
    /// Loads the weights under `vb` (with or without a leading `bert.`), as laid out by
    /// Hugging Face's `BertModel`, for linear layers in `precision`.
    pub fn load(
        vb: &VarBuilder,
        config: &Config,
        precision: Precision,
    ) -> candle_core::Result<Self> {
        let vb = if vb.contains_tensor("embeddings.word_embeddings.weight") {
            vb.clone()
        } else {
            vb.pp("bert")
        };
        let hidden = config.hidden_size;
        let embeddings = vb.pp("embeddings");
        let word = embeddings.get((config.vocab_size, hidden), "word_embeddings.weight")?;
        let positions = embeddings.get(
            (config.max_position_embeddings, hidden),
            "position_embeddings.weight",
        )?;
        let token_types = embeddings.get(
            (config.type_vocab_size, hidden),
            "token_type_embeddings.weight",
        )?;
        let positions = positions.broadcast_add(&token_types.get(0)?)?;
        // The shipped int8 calibration, block by block, where it has as many blocks (each
        // layer then checks that it was measured on its weight).
        let shipped = int8_ranges::shipped();
        let ranges = |i: usize| {
            (precision == Precision::Int8Avx512 && shipped.len() == config.num_hidden_layers)
                .then(|| &shipped[i])
        };
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                Layer::load(
                    &vb.pp(format!("encoder.layer.{i}")),
                    config,
                    precision,
                    ranges(i),
                )
            })
            .collect::<candle_core::Result<_>>()?;
        Ok(Bert {
            word_embeddings: Embedding::new(word, hidden),
            positions,
            embedding_norm: layer_norm(&embeddings.pp("LayerNorm"), hidden, config.layer_norm_eps)?,
            layers,
            act: config.hidden_act,
        })
    }

    /// The last hidden states, `(batch, seq, hidden)`, of token `ids` (`(batch, seq)`, u32)
    /// whose padding is marked by zeros in `mask` (one flag per token, row-major).
    pub fn forward(&self, ids: &Tensor, mask: &[u32]) -> candle_core::Result<Tensor> {
        let (batch, seq) = ids.dims2()?;
        let hidden = self.positions.dim(1)?;
        let x = self
            .word_embeddings
            .forward(ids)?
            .broadcast_add(&self.positions.narrow(0, 0, seq)?)?;
        let mut x = x
            .apply_op1_no_bwd(&self.embedding_norm)?
            .reshape((batch * seq, hidden))?;
        let bias = attention_bias(mask, (batch, seq), ids.device())?;
        for layer in &self.layers {
            x = layer.forward(&x, &bias, self.act)?;
        }
        x.reshape((batch, seq, hidden))
    }
}

/// The additive attention bias, `(batch, seq)`: 0 where a token is attended, the most
/// negative f32 where it is padding (as Hugging Face's `get_extended_attention_mask` does).
fn attention_bias(
    mask: &[u32],
    (batch, seq): (usize, usize),
    device: &Device,
) -> candle_core::Result<Tensor> {
    let bias: Vec<f32> = mask
        .iter()
        .map(|&m| if m == 0 { f32::MIN } else { 0.0 })
        .collect();
    Tensor::from_vec(bias, (batch, seq), device)
}
