//! The AVX-512 kernels of the bfloat16 encoder: rounding to bf16 (`vcvtneps2bf16`), attention's
//! softmax straight into bf16 and GELU, with `e^x` by range reduction, a degree-5 polynomial
//! and `vscalefps`; and the linear layers' product by `vdpbf16ps` for CPUs without AMX
//! ([`dot_block`]).
//!
//! They serve the AMX path ([`super::amx`]), which needs AVX-512 BF16 anyway (every CPU with
//! AMX has it): the compiler's vectorization of the portable kernels (`kernels`) spends a
//! dozen instructions on each bf16 rounding and does not reach `vscalefps`, and these passes
//! were half of the bf16 encoder's time once its products ran on tiles. Rust's AVX-512
//! intrinsics are stable from 1.89, the crate's minimum.
#![allow(unsafe_code)]

use std::arch::x86_64::{
    __m256bh, __m256i, __m512, __m512bh, __m512i, _mm256_storeu_epi16, _mm512_abs_ps,
    _mm512_add_ps, _mm512_and_si512, _mm512_castps_si512, _mm512_castsi512_ps, _mm512_cvtneps_pbh,
    _mm512_dpbf16_ps, _mm512_fmadd_ps, _mm512_fnmadd_ps, _mm512_loadu_ps, _mm512_loadu_si512,
    _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps, _mm512_max_ps, _mm512_mul_ps, _mm512_or_si512,
    _mm512_rcp14_ps, _mm512_reduce_add_ps, _mm512_reduce_max_ps, _mm512_roundscale_ps,
    _mm512_scalef_ps, _mm512_set1_epi32, _mm512_set1_ps, _mm512_setzero_ps, _mm512_setzero_si512,
    _mm512_storeu_ps, _mm512_sub_ps, _MM_FROUND_NO_EXC, _MM_FROUND_TO_NEAREST_INT,
};
use std::sync::OnceLock;

/// f32 values per AVX-512 register.
const LANES: usize = 16;

/// Whether the CPU has AVX-512 F, BW, VL and BF16 (every CPU with AMX does). Asked once.
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512bf16")
    })
}

/// Whether bf16 dot products (`vdpbf16ps`, [`dot_block`]) outrun f32 FMAs here: the CPU has
/// them ([`available`]) and is AMD's. Measured by a loop of independent instructions: on Zen 4,
/// 116 billion bf16 multiply-adds a second per core against 58 in f32; on a Sapphire Rapids
/// Xeon, half of f32's (55 against 115).
pub fn bf16_dots_pay() -> bool {
    available() && vendor_is_amd()
}

/// Whether CPUID's vendor string is AMD's.
// `__cpuid` is a safe function from Rust 1.87 on and unsafe before (the crate's minimum is 1.85).
#[allow(unused_unsafe)]
fn vendor_is_amd() -> bool {
    // SAFETY: CPUID is present on every x86-64 CPU; leaf 0 always exists.
    let id = unsafe { std::arch::x86_64::__cpuid(0) };
    let mut vendor = [0u8; 12];
    for (bytes, register) in vendor.chunks_exact_mut(4).zip([id.ebx, id.edx, id.ecx]) {
        bytes.copy_from_slice(&register.to_le_bytes());
    }
    &vendor == b"AuthenticAMD"
}

/// `e^x` of each lane, relative error below 3e-6 (far under bf16's 4e-3): `2ⁿ·e^t` with
/// `n = round(x·log₂e)`, `t = x − n·ln2` and Taylor to degree 5 on `|t| ≤ ln2/2`; below -100
/// it is 0.
#[inline]
#[target_feature(enable = "avx512f")]
fn exp(x: __m512) -> __m512 {
    let x = _mm512_max_ps(x, _mm512_set1_ps(-100.0));
    let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
        _mm512_mul_ps(x, _mm512_set1_ps(std::f32::consts::LOG2_E)),
    );
    let t = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693_145_75), x);
    let t = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428_606_8e-6), t);
    let mut p = _mm512_set1_ps(1.0 / 120.0);
    for c in [1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(c));
    }
    _mm512_scalef_ps(p, n)
}

/// Stores 16 bf16 values at `dst`.
///
/// # Safety
/// The CPU has AVX-512 BW and VL; 16 values at `dst` are writable.
#[inline]
#[target_feature(enable = "avx512bw,avx512vl")]
unsafe fn store_bf16(dst: *mut u16, values: __m256bh) {
    // SAFETY: the caller's; an unaligned store.
    unsafe {
        _mm256_storeu_epi16(
            dst.cast::<i16>(),
            std::mem::transmute::<__m256bh, __m256i>(values),
        );
    }
}

/// The exact (erf) GELU of each lane, `x/2·(1 + erf(x/√2))`, erf by Abramowitz and Stegun
/// 7.1.26 (absolute error below 1.5e-7; `1/(1 + p·|z|)` by `vrcp14ps` and a Newton step).
#[inline]
#[target_feature(enable = "avx512f")]
#[allow(clippy::many_single_char_names)] // the textbook's names
fn gelu_lanes(x: __m512) -> __m512 {
    let z = _mm512_mul_ps(x, _mm512_set1_ps(std::f32::consts::FRAC_1_SQRT_2));
    let a = _mm512_abs_ps(z);
    let one = _mm512_set1_ps(1.0);
    let d = _mm512_fmadd_ps(_mm512_set1_ps(0.327_591_1), a, one);
    let r = _mm512_rcp14_ps(d);
    let t = _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0)));
    let mut p = _mm512_set1_ps(1.061_405_4);
    for c in [-1.453_152_1, 1.421_413_7, -0.284_496_74, 0.254_829_6] {
        p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(c));
    }
    let p = _mm512_mul_ps(p, t);
    let y = _mm512_fnmadd_ps(
        p,
        exp(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), a), a)),
        one,
    );
    // erf(z) = y with z's sign (y ≥ 0).
    let sign = _mm512_and_si512(_mm512_castps_si512(z), _mm512_set1_epi32(i32::MIN));
    let erf = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(y), sign));
    _mm512_mul_ps(
        _mm512_mul_ps(_mm512_set1_ps(0.5), x),
        _mm512_add_ps(one, erf),
    )
}

/// The exact (erf) GELU of every value, in place. Must only be called when [`available`].
pub fn gelu(xs: &mut [f32]) {
    assert!(available(), "AVX-512 GELU called without AVX-512");
    // SAFETY: `available` checked AVX-512 F.
    unsafe { gelu_avx512(xs) }
}

/// # Safety
/// The CPU has AVX-512 F.
#[target_feature(enable = "avx512f")]
unsafe fn gelu_avx512(xs: &mut [f32]) {
    let whole = xs.len() / LANES;
    let p = xs.as_mut_ptr();
    // SAFETY: whole vectors at `i·16 .. i·16 + 16 ≤ len`, and the tail by masked loads and
    // stores of its `rest` lanes only.
    unsafe {
        for i in 0..whole {
            let v = gelu_lanes(_mm512_loadu_ps(p.add(i * LANES)));
            _mm512_storeu_ps(p.add(i * LANES), v);
        }
        let rest = xs.len() - whole * LANES;
        if rest > 0 {
            let keep = (1u16 << rest) - 1;
            let v = gelu_lanes(_mm512_maskz_loadu_ps(keep, p.add(whole * LANES)));
            _mm512_mask_storeu_ps(p.add(whole * LANES), keep, v);
        }
    }
}

/// `xs` rounded to bfloat16 (`vcvtneps2bf16`: to nearest, ties to even, subnormals to zero, NaN
/// to a quiet NaN), as raw bits appended to `out`. Must only be called when [`available`].
pub fn to_bf16(xs: &[f32], out: &mut Vec<u16>) {
    assert!(available(), "bf16 rounding called without AVX-512 BF16");
    // Written straight into the spare capacity: filling it with zeros first was 2% of the
    // bf16 encoder's time.
    out.reserve(xs.len());
    let start = out.len();
    // SAFETY: `available` checked AVX-512 BF16; `reserve` made room for `xs.len()` values
    // after `start`, all of which `round_bf16` writes before the length covers them.
    unsafe {
        round_bf16(xs, out.as_mut_ptr().add(start));
        out.set_len(start + xs.len());
    }
}

/// Writes `xs` rounded to bf16 to the `xs.len()` values at `out`.
///
/// # Safety
/// The CPU has AVX-512 F, BF16, BW and VL; `xs.len()` values at `out` are writable.
#[target_feature(enable = "avx512f,avx512bf16,avx512bw,avx512vl")]
pub(super) unsafe fn round_bf16(xs: &[f32], out: *mut u16) {
    let whole = xs.len() / LANES;
    // SAFETY: whole vectors at `i·16 .. i·16 + 16 ≤ len` of `xs` and of `out` (the caller's);
    // the intrinsics need only the features this function enables.
    unsafe {
        for i in 0..whole {
            let bits = _mm512_cvtneps_pbh(_mm512_loadu_ps(xs.as_ptr().add(i * LANES)));
            store_bf16(out.add(i * LANES), bits);
        }
        let rest = xs.len() - whole * LANES;
        if rest > 0 {
            // The tail through a masked load (lanes past the end read nothing) and a copy.
            let keep = (1u16 << rest) - 1;
            let last = _mm512_maskz_loadu_ps(keep, xs.as_ptr().add(whole * LANES));
            let bits = std::mem::transmute::<__m256bh, [u16; LANES]>(_mm512_cvtneps_pbh(last));
            std::ptr::copy_nonoverlapping(bits.as_ptr(), out.add(whole * LANES), rest);
        }
    }
}

/// The softmax of `row + mask` rounded to bf16 into `out` (`vcvtneps2bf16`: to nearest, ties
/// to even), leaving the exponentials in `row`; the three are as long, a multiple of 16.
/// In AVX-512 because this pass over every score was a fifth of the encoder's time.
///
/// # Safety
/// The CPU has AVX-512 F, BF16, BW and VL.
#[target_feature(enable = "avx512f,avx512bf16,avx512bw,avx512vl")]
pub(super) unsafe fn softmax_bf16(row: &mut [f32], mask: &[f32], out: &mut [u16]) {
    assert!(
        row.len() == mask.len() && row.len() == out.len() && row.len().is_multiple_of(LANES),
        "softmax: rows of whole vectors expected"
    );
    let steps = row.len() / LANES;
    let (r, m, o) = (row.as_mut_ptr(), mask.as_ptr(), out.as_mut_ptr());
    // SAFETY: every access is at `i·16 .. i·16 + 16` for `i < steps`, inside the three
    // slices (checked above); the intrinsics need only the features this function enables.
    unsafe {
        let mut max = _mm512_set1_ps(f32::MIN);
        for i in 0..steps {
            let x = _mm512_add_ps(
                _mm512_loadu_ps(r.add(i * LANES)),
                _mm512_loadu_ps(m.add(i * LANES)),
            );
            _mm512_storeu_ps(r.add(i * LANES), x);
            max = _mm512_max_ps(max, x);
        }
        let top = _mm512_set1_ps(_mm512_reduce_max_ps(max));
        let mut sum = _mm512_setzero_ps();
        for i in 0..steps {
            let e = exp(_mm512_sub_ps(_mm512_loadu_ps(r.add(i * LANES)), top));
            _mm512_storeu_ps(r.add(i * LANES), e);
            sum = _mm512_add_ps(sum, e);
        }
        let inv = _mm512_set1_ps(1.0 / _mm512_reduce_add_ps(sum));
        for i in 0..steps {
            let p = _mm512_mul_ps(_mm512_loadu_ps(r.add(i * LANES)), inv);
            store_bf16(o.add(i * LANES), _mm512_cvtneps_pbh(p));
        }
    }
}

/// Rows of `a` per register block of [`dot_block`].
const DOT_ROWS: usize = 4;
/// Input pairs per pass of [`dot_block`]: 64 outputs' weights for them (16 KiB) stay in the
/// L1 cache while every row of the block is multiplied by them.
const DOT_PAIRS: usize = 128;
/// bf16 values of one packed weight row: a pair of inputs for 16 outputs (64 bytes).
const PAIR_ROW: usize = 2 * LANES;

/// `c = start + a·Wᵀ` for a block of `rows` (a multiple of [`DOT_ROWS`]) with `vdpbf16ps`,
/// f32 accumulation: `a` is `rows × k` bf16 values, rows `a_row` values apart, `weights` the
/// layer packed as [`super::amx::PackedWeight`] lays it out, which is also what `vdpbf16ps`
/// multiplies by: for each 16 outputs, `k/2` rows of 64 bytes, each a pair of inputs for the
/// 16 (their `n/16` streams one after another). `c` is `rows × n` f32 values, rows `c_row`
/// apart; `start` is `rows × n` f32 values, rows `stride` apart (stride 0: one row under
/// all), or none (zeros). 4 rows × 64 outputs are accumulated at once in 16 registers (4 × 32
/// where `n` is not a multiple of 64, for the last 32 outputs).
///
/// # Safety
/// The CPU has AVX-512 F, BF16, BW and VL; `k` is even and `n` a multiple of 32; the
/// pointers have the values above behind them (`start`: `(rows − 1)·stride + n`).
#[target_feature(enable = "avx512f,avx512bf16,avx512bw,avx512vl")]
#[allow(clippy::many_single_char_names)] // a matrix product's names
pub(super) unsafe fn dot_block(
    (a, rows, a_row, k): (*const u16, usize, usize, usize),
    (weights, n): (*const u16, usize),
    (c, c_row): (*mut f32, usize),
    start: Option<(*const f32, usize)>,
) {
    let streams = n / LANES;
    let stream = k / 2 * PAIR_ROW;
    let mut first = 0;
    // SAFETY: the caller's, for every group of 4 (or 2) streams, 4 rows and pass of pairs;
    // the first pass starts from `start`, the others from what the previous one stored in `c`.
    unsafe {
        while first < streams {
            let group = if streams - first >= 4 { 4 } else { 2 };
            for pairs in (0..k / 2).step_by(DOT_PAIRS) {
                let pairs = pairs..(pairs + DOT_PAIRS).min(k / 2);
                for row in (0..rows).step_by(DOT_ROWS) {
                    let a = a.add(row * a_row);
                    let w = weights.add(first * stream);
                    let c = c.add(row * c_row + first * LANES);
                    let s = match start {
                        _ if pairs.start > 0 => Some((c.cast_const(), c_row)),
                        Some((start, stride)) => {
                            Some((start.add(row * stride + first * LANES), stride))
                        }
                        None => None,
                    };
                    let block = ((a, a_row), (w, stream), pairs.clone(), (c, c_row), s);
                    if group == 4 {
                        dot_registers::<4>(block);
                    } else {
                        dot_registers::<2>(block);
                    }
                }
            }
            first += group;
        }
    }
}

/// What [`dot_registers`] reads and writes: `a` (rows `a_row` apart), the weight streams
/// (`stream` apart), the input pairs, `c` (rows `c_row` apart) and where the sums start (rows
/// `stride` apart; none: zeros).
type DotBlock = (
    (*const u16, usize),
    (*const u16, usize),
    std::ops::Range<usize>,
    (*mut f32, usize),
    Option<(*const f32, usize)>,
);

/// The register block of [`dot_block`]: 4 rows × `J` streams of 16 outputs, over a range of
/// input pairs.
///
/// # Safety
/// As [`dot_block`]'s, for these 4 rows, `J` streams and pairs.
#[inline]
#[target_feature(enable = "avx512f,avx512bf16,avx512bw,avx512vl")]
#[allow(clippy::many_single_char_names)] // a matrix product's names
unsafe fn dot_registers<const J: usize>(
    ((a, a_row), (w, stream), pairs, (c, c_row), start): DotBlock,
) {
    // SAFETY: the caller's; every load and store is unaligned.
    unsafe {
        let mut acc = [[_mm512_setzero_ps(); J]; DOT_ROWS];
        if let Some((start, stride)) = start {
            for (r, row) in acc.iter_mut().enumerate() {
                for (j, v) in row.iter_mut().enumerate() {
                    *v = _mm512_loadu_ps(start.add(r * stride + j * LANES));
                }
            }
        }
        for pair in pairs {
            let mut ws = [_mm512_setzero_si512(); J];
            for (j, v) in ws.iter_mut().enumerate() {
                *v = _mm512_loadu_si512(w.add(j * stream + pair * PAIR_ROW).cast());
            }
            for (r, row) in acc.iter_mut().enumerate() {
                // The row's two inputs of this pair, under all 16 lanes.
                let x = a.add(r * a_row + 2 * pair).cast::<i32>().read_unaligned();
                let x = std::mem::transmute::<__m512i, __m512bh>(_mm512_set1_epi32(x));
                for (v, &wj) in row.iter_mut().zip(&ws) {
                    *v = _mm512_dpbf16_ps(*v, x, std::mem::transmute::<__m512i, __m512bh>(wj));
                }
            }
        }
        for (r, row) in acc.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                _mm512_storeu_ps(c.add(r * c_row + j * LANES), *v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use half::bf16;

    use super::*;

    #[test]
    fn bf16_rounding_matches_half() {
        if !available() {
            // No AVX-512 BF16 on this CPU: the bf16 path cannot run here.
            return;
        }
        let mut xs: Vec<f32> = (0..200_003u32)
            .map(|i| f32::from_bits(i.wrapping_mul(2_654_435_761)))
            .collect();
        xs.extend([
            0.0,
            -0.0,
            1.0,
            f32::MAX,
            f32::MIN_POSITIVE,
            f32::INFINITY,
            f32::NAN,
        ]);
        // Ties: exactly halfway between two bf16 values, below and above an even one.
        xs.extend([f32::from_bits(0x3f80_8000), f32::from_bits(0x3f81_8000)]);
        let mut got = vec![7];
        to_bf16(&xs, &mut got);
        assert_eq!(
            (got.len(), got[0]),
            (xs.len() + 1, 7),
            "appended after what was there"
        );
        for (x, &g) in xs.iter().zip(&got[1..]) {
            if x.is_nan() {
                assert!(bf16::from_bits(g).is_nan());
            } else if x.is_subnormal() {
                assert_eq!(g & 0x7fff, 0, "{x:e} to zero");
            } else {
                assert_eq!(g, bf16::from_f32(*x).to_bits(), "{x:e}");
            }
        }
    }

    #[test]
    fn the_bf16_softmax_is_the_softmax_rounded() {
        if !available() {
            // No AVX-512 BF16 on this CPU: the bf16 path cannot run here.
            return;
        }
        let mut mask = vec![0f32; 48];
        mask[40..].fill(f32::MIN);
        mask[3] = f32::MIN;
        let scores: Vec<f32> = (0..48)
            .map(|i| ((i * 29 % 17) as f32 - 8.0) / 1.7)
            .collect();
        let mut exact = scores.clone();
        super::super::kernels::masked_softmax(&mut exact, &mask);
        let mut row = scores;
        let mut out = vec![0u16; 48];
        // SAFETY: `available` checked AVX-512 F, BF16, BW and VL; the three are 48 long.
        unsafe { softmax_bf16(&mut row, &mask, &mut out) };
        for (i, (&want, &got)) in exact.iter().zip(&out).enumerate() {
            if mask[i] != 0.0 {
                continue;
            }
            let want = bf16::from_f32(want).to_bits();
            // The same softmax, rounded to bf16, give or take one bf16 step (sums in another
            // order, another exp).
            assert!(got.abs_diff(want) <= 1, "{i}: {got:#x} vs {want:#x}");
        }
        assert!(out[3] == 0 && out[40..].iter().all(|&p| p == 0));
    }

    #[test]
    fn gelu_matches_the_portable_kernel() {
        if !available() {
            // No AVX-512 BF16 on this CPU: the bf16 path cannot run here.
            return;
        }
        // 16 lanes and a tail of 5, from -9 to 9 and beyond.
        let xs: Vec<f32> = (0..37)
            .map(|i| (i as f32 - 18.0) / 2.0)
            .chain([-30.0, 40.0])
            .collect();
        let mut want = xs.clone();
        super::super::kernels::gelu(&mut want);
        let mut got = xs;
        gelu(&mut got);
        for (w, g) in want.iter().zip(&got) {
            assert!((w - g).abs() <= 1e-5 * w.abs().max(1.0), "{g} vs {w}");
        }
    }
}
