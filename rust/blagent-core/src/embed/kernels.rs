//! Element-wise kernels of the BERT forward pass (masked softmax, GELU, layer norm), applied
//! in place by the fused ops of `blas`, with branch-free `exp` and `erf` approximations that
//! the compiler vectorizes (the libm functions they replace are scalar). Each public kernel is
//! compiled for AVX-512 and AVX2 as well as the baseline, and picks one at run time.

use multiversion::multiversion;

/// `e^x` for `x` in the range softmax and GELU use, relative error below 5e-7; inputs below
/// -87 give about 1e-38 instead of a denormal or 0.
#[inline]
#[allow(clippy::many_single_char_names)] // the textbook's names
fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    // Adding and subtracting 1.5·2²³ rounds to the nearest integer without a libm call.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let t = x * LOG2E + ROUND;
    let n = t - ROUND;
    let r = (-n).mul_add(LN2_LO, (-n).mul_add(LN2_HI, x));
    // Taylor polynomial of e^r on |r| ≤ ln2/2, Horner form on fused multiply-adds (one
    // instruction each in the kernels compiled for AVX2 and AVX-512).
    let p = [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0]
        .into_iter()
        .fold(1.0f32 / 720.0, |p, c| p.mul_add(r, c));
    // `t` lies in [2²³, 2²⁴), where floats are consecutive integers: its bits minus ROUND's are
    // `n` itself, which becomes 2ⁿ's exponent without a float-to-int conversion (those
    // saturate in Rust and do not vectorize).
    let exponent = t.to_bits().wrapping_sub(ROUND.to_bits()).wrapping_add(127);
    let scale = f32::from_bits(exponent << 23);
    p * scale
}

/// `erf(x)` by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7).
#[inline]
fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t * [-1.453_152_1, 1.421_413_7, -0.284_496_74, 0.254_829_6]
        .into_iter()
        .fold(1.061_405_4f32, |p, c| p.mul_add(t, c));
    let y = (-poly).mul_add(exp(-a * a), 1.0);
    y.copysign(x)
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

/// `Σ x²` over eight interleaved accumulators (as [`lanes`]).
#[inline]
fn sum_of_squares(xs: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = xs.chunks_exact(8);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (a, &x) in acc.iter_mut().zip(chunk) {
            *a += x * x;
        }
    }
    acc.iter().sum::<f32>() + rest.iter().map(|x| x * x).sum::<f32>()
}

/// The larger of two values, without `f32::max`'s NaN handling (which does not vectorize).
#[inline]
fn larger(a: f32, b: f32) -> f32 {
    if b > a {
        b
    } else {
        a
    }
}

/// Adds the additive `mask` to a row of attention scores and replaces the row by its softmax.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma"))]
pub(super) fn masked_softmax(row: &mut [f32], mask: &[f32]) {
    for (o, &m) in row.iter_mut().zip(mask) {
        *o += m;
    }
    let max = lanes(row, f32::MIN, larger);
    for o in row.iter_mut() {
        *o = exp(*o - max);
    }
    let inv = 1.0 / lanes(row, 0.0, |a, b| a + b);
    for o in row.iter_mut() {
        *o *= inv;
    }
}

/// The exact (erf) GELU of every value, in place.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma"))]
pub(super) fn gelu(xs: &mut [f32]) {
    for v in xs {
        *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// Layer normalization of each row of `xs` (rows of `gamma.len()` values), in place, after
/// adding `shift` (a bias left out of the product) to each row where given.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma"))]
pub(super) fn layer_norm(
    xs: &mut [f32],
    shift: Option<&[f32]>,
    gamma: &[f32],
    beta: &[f32],
    eps: f32,
) {
    let n = gamma.len();
    for row in xs.chunks_exact_mut(n) {
        if let Some(shift) = shift {
            for (v, &s) in row.iter_mut().zip(shift) {
                *v += s;
            }
        }
        let mean = lanes(row, 0.0, |a, b| a + b) / n as f32;
        for v in row.iter_mut() {
            *v -= mean;
        }
        let var = sum_of_squares(row) / n as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, &g), &b) in row.iter_mut().zip(gamma).zip(beta) {
            *v = *v * inv * g + b;
        }
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

    #[test]
    fn softmax_ignores_masked_positions() {
        let mut row = [1.0, 2.0, 3.0, 50.0];
        masked_softmax(&mut row, &[0.0, 0.0, 0.0, f32::MIN]);
        let e: Vec<f32> = [1.0f32, 2.0, 3.0].iter().map(|x| x.exp()).collect();
        let total: f32 = e.iter().sum();
        for (got, want) in row.iter().zip(e.iter().map(|x| x / total)) {
            assert!((got - want).abs() < 1e-6);
        }
        assert!(row[3] < 1e-30);
    }

    #[test]
    fn layer_norm_centres_and_scales_rows() {
        let mut xs = [1.0, 2.0, 3.0, 4.0, -1.0, -1.0, 5.0, 5.0];
        layer_norm(
            &mut xs,
            None,
            &[1.0, 1.0, 2.0, 1.0],
            &[0.0, 0.0, 0.0, 1.0],
            1e-12,
        );
        let inv = 1.0 / 1.25f32.sqrt();
        let want = [-1.5 * inv, -0.5 * inv, 2.0 * 0.5 * inv, 1.5 * inv + 1.0];
        for (got, want) in xs[..4].iter().zip(want) {
            assert!((got - want).abs() < 1e-5, "{got} vs {want}");
        }
        assert!((xs[4] + 1.0).abs() < 1e-5 && (xs[6] - 2.0).abs() < 1e-5);
    }
}
