//! Fused CPU kernels for the BERT forward pass, as candle custom ops: each replaces several
//! passes over a large tensor by one, and uses branch-free `exp` and `erf` approximations
//! that the compiler vectorizes (the libm functions it replaces are scalar).

use candle_core::{bail, CpuStorage, CustomOp2, Layout, Result, Shape};
use rayon::prelude::*;

/// Rows handed to one rayon task at a time.
const ROWS_PER_TASK: usize = 64;

/// `e^x` for `x` in the range softmax and GELU use, relative error below 5e-7; inputs below
/// -87 give about 1e-38 instead of a denormal or 0.
#[inline]
fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    // Adding and subtracting 1.5·2²³ rounds to the nearest integer without a libm call.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let n = (x * LOG2E + ROUND) - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    // Taylor polynomial of e^r on |r| ≤ ln2/2, Horner form.
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
    p * scale
}

/// `erf(x)` by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7).
#[inline]
fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let y = 1.0 - poly * exp(-a * a);
    y.copysign(x)
}

/// The f32 slices of two contiguous inputs.
fn inputs<'a>(
    a: &'a CpuStorage,
    la: &Layout,
    b: &'a CpuStorage,
    lb: &Layout,
) -> Result<(&'a [f32], &'a [f32])> {
    let (CpuStorage::F32(a), CpuStorage::F32(b)) = (a, b) else {
        bail!("fused kernels take f32 tensors")
    };
    let (Some((a0, a1)), Some((b0, b1))) = (la.contiguous_offsets(), lb.contiguous_offsets())
    else {
        bail!("fused kernels take contiguous tensors")
    };
    Ok((&a[a0..a1], &b[b0..b1]))
}

/// Reduces `xs` with `f` over eight interleaved accumulators, which the compiler keeps in one
/// vector register (a single accumulator would be a serial chain).
#[inline]
fn lanes(xs: &[f32], init: f32, f: impl Fn(f32, f32) -> f32) -> f32 {
    let mut acc = [init; 8];
    let chunks = xs.chunks_exact(8);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (a, &x) in acc.iter_mut().zip(chunk) {
            *a = f(*a, x);
        }
    }
    let mut total = acc.into_iter().fold(init, &f);
    for &x in rest {
        total = f(total, x);
    }
    total
}

/// Softmax over the last dimension of attention scores `(batch, …, seq)` after adding a
/// per-batch additive mask `(batch, seq)`.
pub struct MaskedSoftmax;

impl CustomOp2 for MaskedSoftmax {
    fn name(&self) -> &'static str {
        "masked-softmax"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (scores, bias) = inputs(s1, l1, s2, l2)?;
        let seq = l1.dims().last().copied().unwrap_or(0);
        let batch = l1.dims().first().copied().unwrap_or(0);
        if seq == 0 || bias.len() != batch * seq {
            bail!("masked softmax: a mask of {batch}×{seq} expected");
        }
        let rows_per_batch = scores.len() / (batch * seq);
        let mut out = vec![0f32; scores.len()];
        out.par_chunks_mut(seq * ROWS_PER_TASK)
            .enumerate()
            .for_each(|(task, chunk)| {
                for (i, row) in chunk.chunks_exact_mut(seq).enumerate() {
                    let index = task * ROWS_PER_TASK + i;
                    let src = &scores[index * seq..(index + 1) * seq];
                    let mask = &bias[(index / rows_per_batch) * seq..][..seq];
                    for ((o, &s), &m) in row.iter_mut().zip(src).zip(mask) {
                        *o = s + m;
                    }
                    let max = lanes(row, f32::MIN, f32::max);
                    for o in row.iter_mut() {
                        *o = exp(*o - max);
                    }
                    let inv = 1.0 / lanes(row, 0.0, |a, b| a + b);
                    for o in row.iter_mut() {
                        *o *= inv;
                    }
                }
            });
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }
}

/// `gelu(x + bias)` with the exact (erf) GELU, for `x` of `(rows, features)` and `bias` of
/// `(features)`: the bias of the intermediate projection and its activation in one pass.
pub struct BiasGelu;

impl CustomOp2 for BiasGelu {
    fn name(&self) -> &'static str {
        "bias-gelu"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (x, bias) = inputs(s1, l1, s2, l2)?;
        let features = bias.len();
        if features == 0 || x.len() % features != 0 {
            bail!("bias-gelu: a bias of {features} does not fit the input");
        }
        let mut out = vec![0f32; x.len()];
        out.par_chunks_mut(features * ROWS_PER_TASK)
            .zip(x.par_chunks(features * ROWS_PER_TASK))
            .for_each(|(out, x)| {
                for (o_row, x_row) in out.chunks_exact_mut(features).zip(x.chunks_exact(features)) {
                    for ((o, &v), &b) in o_row.iter_mut().zip(x_row).zip(bias) {
                        let v = v + b;
                        *o = 0.5 * v * (1.0 + erf(v * std::f32::consts::FRAC_1_SQRT_2));
                    }
                }
            });
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_and_erf_are_close_to_libm() {
        for i in -2000..=2000 {
            let x = i as f32 / 100.0;
            let (want, got) = (x.exp(), exp(x));
            assert!(
                (got - want).abs() <= 5e-7 * want,
                "exp({x}): {got} vs {want}"
            );
        }
        // erf against values computed to double precision.
        for (x, want) in [
            (0.0, 0.0),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (-2.0, -0.995_322_3),
        ] {
            assert!((erf(x) - want).abs() < 3e-7, "erf({x})");
        }
    }
}
