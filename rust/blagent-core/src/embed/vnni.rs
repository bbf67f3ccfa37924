//! The encoder's linear layers in int8, by AVX-512 VNNI's `vpdpbusd`, for CPUs without AMX.
//!
//! `vpdpbusd` multiplies unsigned 8-bit values by signed 8-bit ones, four pairs per 32-bit lane,
//! and adds them to the lane: 64 multiply-adds per instruction, twice `vdpbf16ps`'s at the same
//! rate on AMD Zen 4 (docs/dense.md). So a layer's input is rounded per row (per token) to u8
//! with a zero point, its weight per output channel to symmetric int8, and the product is
//! `scale_row · scale_out · (Σ q·w − zero_row · Σ w)`, exact in 32-bit integers before the
//! scales.
//!
//! Rounding the inputs plainly loses too much where a few channels carry values far wider than
//! the rest (cosine to f32 0.998 on django chunks). SmoothQuant (Xiao et al., 2023) moves that
//! range into the weight: each input channel `j` is divided by `s_j = √(a_j / w_j)`, with `a_j`
//! the largest `|input|` the channel takes on calibration texts and `w_j` the largest `|weight|`
//! it meets, and the weight's column is multiplied by it. The product is unchanged; both sides
//! round with far less loss. The ranges `a_j` are measured once per model
//! (`bench/fit_int8_ranges.py`) and shipped ([`super::int8_ranges`]). The feed-forward output
//! layer stays in bf16: with it in int8 too, the vectors of the reference texts fell to cosine
//! 0.9977 of f32's (docs/dense.md).
//!
//! Rust's AVX-512 intrinsics (VNNI among them) are stable from 1.89, the crate's minimum.
#![allow(unsafe_code)]

use std::arch::x86_64::{
    __m512i, _mm512_add_epi32, _mm512_cvtepi32_ps, _mm512_cvtps_epi32, _mm512_cvtusepi32_epi8,
    _mm512_dpbusd_epi32, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_loadu_si512, _mm512_max_epi32,
    _mm512_max_ps, _mm512_min_ps, _mm512_mul_ps, _mm512_mullo_epi32, _mm512_reduce_max_ps,
    _mm512_reduce_min_ps, _mm512_set1_epi32, _mm512_set1_ps, _mm512_setzero_si512,
    _mm512_storeu_ps, _mm512_sub_epi32, _mm_storeu_si128,
};
use std::cell::RefCell;
use std::sync::OnceLock;

/// 32-bit lanes per AVX-512 register: the outputs of one weight stream.
const LANES: usize = 16;
/// Inputs per `vpdpbusd` lane.
const QUAD: usize = 4;
/// Bytes of one packed weight row: a quad of inputs for 16 outputs.
const QUAD_ROW: usize = QUAD * LANES;
/// Rows of activations per register block.
const DOT_ROWS: usize = 4;
/// Rows of a block of the product (as [`super::amx`]'s).
const BLOCK: usize = 32;

/// Whether the CPU has AVX-512 F, BW, VL and VNNI. Asked once.
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    })
}

/// A linear layer's weight, `(outputs, inputs)`, smoothed and rounded to int8 per output
/// channel, laid out as `vpdpbusd` multiplies it: for each 16 outputs, `inputs / 4` rows of 64
/// bytes, each four consecutive inputs of the 16.
pub struct Int8Weight {
    inputs: usize,
    outputs: usize,
    quads: Vec<i8>,
    /// Per output: what one step of its int8 weights is worth.
    scale: Vec<f32>,
    /// Per output: the sum of its int8 weights, for the activations' zero points.
    sum: Vec<i32>,
    /// Per input: `1 / s_j`, applied to the activations before they are rounded.
    inv_smooth: Vec<f32>,
}

/// A block of a product's input rounded to u8 row by row, `x ≈ scale · (q − zero)`, and the
/// f32 row it rounds from.
#[derive(Default)]
struct Rows {
    bytes: Vec<u8>,
    scale: Vec<f32>,
    zero: Vec<i32>,
    row: Vec<f32>,
}

impl Int8Weight {
    /// Smooths a row-major `(outputs, inputs)` weight by `input_max` (each input's largest
    /// `|value|` on calibration texts, SmoothQuant with α = ½) and rounds it; `None` unless
    /// this CPU runs VNNI, the inputs are a multiple of 16, the outputs of 32, and the sizes
    /// agree.
    pub fn new(weight: &[f32], outputs: usize, inputs: usize, input_max: &[f32]) -> Option<Self> {
        if !available()
            || inputs == 0
            || outputs == 0
            || !inputs.is_multiple_of(LANES)
            || !outputs.is_multiple_of(2 * LANES)
            || weight.len() != outputs * inputs
            || input_max.len() != inputs
        {
            return None;
        }
        // Each input's largest |weight|, row by row (the weight is row-major by output).
        let mut weight_max = vec![0.0f32; inputs];
        for row in weight.chunks_exact(inputs) {
            for (m, w) in weight_max.iter_mut().zip(row) {
                *m = m.max(w.abs());
            }
        }
        let smooth: Vec<f32> = input_max
            .iter()
            .zip(&weight_max)
            .map(|(a, w)| {
                let s = (a.max(1e-5) / w.max(1e-5)).sqrt();
                if s.is_finite() && s > 0.0 {
                    s
                } else {
                    1.0
                }
            })
            .collect();
        let mut quads = vec![0i8; outputs * inputs];
        let (mut scale, mut sum) = (Vec::with_capacity(outputs), Vec::with_capacity(outputs));
        let (mut row, mut rounded) = (vec![0f32; inputs], vec![0i8; inputs]);
        for (o, weights) in weight.chunks_exact(inputs).enumerate() {
            for ((r, w), s) in row.iter_mut().zip(weights).zip(&smooth) {
                *r = w * s;
            }
            let largest = row.iter().fold(0.0f32, |m, w| m.max(w.abs()));
            let step = if largest > 0.0 { largest / 127.0 } else { 1.0 };
            // SAFETY: `available` (checked above) implies AVX-512 F.
            unsafe { round_to_int8(&row, step, &mut rounded) };
            // Each 4 inputs of output `o` go to its lane of their quad's 64-byte row.
            let (stream, lane) = (o / LANES, o % LANES);
            let at = stream * inputs * LANES + lane * QUAD;
            for (q, four) in rounded.chunks_exact(QUAD).enumerate() {
                quads[at + q * QUAD_ROW..][..QUAD].copy_from_slice(four);
            }
            scale.push(step);
            sum.push(rounded.iter().map(|&q| i32::from(q)).sum());
        }
        Some(Int8Weight {
            inputs,
            outputs,
            quads,
            scale,
            sum,
            inv_smooth: smooth.iter().map(|s| 1.0 / s).collect(),
        })
    }

    /// `c = start + x·Wᵀ` for rows `first..first + count` of `x` (`count` ≤ 32), each of which
    /// `read_row(r, row)` writes in f32 and which are rounded to u8 here, into this thread's
    /// buffer; `start` is 32 rows `stride` values apart (stride 0: one row under all 32). `c`
    /// gets 32 rows, those past `count` from zero rows.
    ///
    /// # Safety
    /// `c` points to 32 rows of `outputs` writable values.
    pub unsafe fn block(
        &self,
        read_row: &dyn Fn(usize, &mut [f32]),
        (first, count): (usize, usize),
        (start, stride): (&[f32], usize),
        c: *mut f32,
    ) {
        let (k, n) = (self.inputs, self.outputs);
        assert!(count <= BLOCK && start.len() >= (BLOCK - 1) * stride + n);
        ROWS.with_borrow_mut(|a| {
            self.quantize(read_row, (first, count), a);
            let streams = n / LANES;
            let stream = k * LANES;
            let mut group_first = 0;
            while group_first < streams {
                let group = if streams - group_first >= 4 { 4 } else { 2 };
                for row in (0..BLOCK).step_by(DOT_ROWS) {
                    let block = Block {
                        a: a.bytes[row * k..].as_ptr(),
                        a_row: k,
                        a_scale: a.scale[row..].as_ptr(),
                        a_zero: a.zero[row..].as_ptr(),
                        w: self.quads[group_first * stream..].as_ptr(),
                        stream,
                        quads: k / QUAD,
                        w_scale: self.scale[group_first * LANES..].as_ptr(),
                        w_sum: self.sum[group_first * LANES..].as_ptr(),
                        // SAFETY (both): the caller's `c` has 32 rows of `n`; `start` was
                        // checked above to hold 32 rows `stride` apart.
                        c: unsafe { c.add(row * n + group_first * LANES) },
                        c_row: n,
                        start: unsafe { start.as_ptr().add(row * stride + group_first * LANES) },
                        stride,
                    };
                    // SAFETY: `available` (checked by `new`); the block's pointers cover 4
                    // rows, `group` streams and every quad of `k`, as set up above.
                    unsafe {
                        if group == 4 {
                            dot_registers::<4>(&block);
                        } else {
                            dot_registers::<2>(&block);
                        }
                    }
                }
                group_first += group;
            }
        });
    }

    /// Rounds rows `first..first + count` of `x` into `out` as 32 rows (zero rows past
    /// `count`), each divided by the smoothing factors first.
    fn quantize(
        &self,
        read_row: &dyn Fn(usize, &mut [f32]),
        (first, count): (usize, usize),
        out: &mut Rows,
    ) {
        let k = self.inputs;
        out.bytes.clear();
        out.bytes.resize(BLOCK * k, 0);
        out.scale.clear();
        out.scale.resize(BLOCK, 0.0);
        out.zero.clear();
        out.zero.resize(BLOCK, 0);
        out.row.resize(k, 0.0);
        for r in 0..count {
            read_row(first + r, &mut out.row);
            // SAFETY: `available` (checked by `new`) implies AVX-512 F and BW; the row, the
            // smoothing factors and the output row are `k` (a multiple of 16) long.
            let (scale, zero) = unsafe {
                quantize_row(&mut out.row, &self.inv_smooth, &mut out.bytes[r * k..][..k])
            };
            out.scale[r] = scale;
            out.zero[r] = zero;
        }
    }
}

thread_local! {
    /// The u8 rows of the block a thread is multiplying, kept between calls.
    static ROWS: RefCell<Rows> = RefCell::default();
}

/// `round(x / step)` of each value into `out`, clamped to ±127 (`x / step` is within ±127 up
/// to rounding). Compiled for AVX-512, where `round_ties_even` is one instruction rather than
/// a call of `rintf` per weight.
///
/// # Safety
/// The CPU has AVX-512 F; `x` and `out` are equally long.
#[target_feature(enable = "avx512f")]
unsafe fn round_to_int8(x: &[f32], step: f32, out: &mut [i8]) {
    for (q, &v) in out.iter_mut().zip(x) {
        // Clamped to ±127 first, so the cast neither wraps nor saturates.
        #[allow(clippy::cast_possible_truncation)]
        let rounded = (v / step).round_ties_even().clamp(-127.0, 127.0) as i8;
        *q = rounded;
    }
}

/// Rounds one row `x / s` to u8 into `out` and returns its step and zero point; the range
/// spans 0, so a row of zeros (padding) stays exact. `x` is left divided by `s`.
///
/// # Safety
/// The CPU has AVX-512 F and BW; the three slices are equally long, a multiple of 16.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn quantize_row(x: &mut [f32], inv_smooth: &[f32], out: &mut [u8]) -> (f32, i32) {
    let k = x.len();
    // SAFETY: the caller's; every load and store stays inside the slices.
    unsafe {
        let (mut low, mut high) = (_mm512_set1_ps(0.0), _mm512_set1_ps(0.0));
        for i in (0..k).step_by(LANES) {
            let y = _mm512_mul_ps(
                _mm512_loadu_ps(x.as_ptr().add(i)),
                _mm512_loadu_ps(inv_smooth.as_ptr().add(i)),
            );
            _mm512_storeu_ps(x.as_mut_ptr().add(i), y);
            low = _mm512_min_ps(low, y);
            high = _mm512_max_ps(high, y);
        }
        let (low, high) = (_mm512_reduce_min_ps(low), _mm512_reduce_max_ps(high));
        let step = if high > low {
            (high - low) / 255.0
        } else {
            1.0
        };
        // `low ≤ 0 ≤ high`, so the zero point lies in 0..=255.
        #[allow(clippy::cast_possible_truncation)]
        let zero = (-low / step).round_ties_even() as i32;
        let inv = _mm512_set1_ps(1.0 / step);
        let zeros = _mm512_set1_epi32(zero);
        for i in (0..k).step_by(LANES) {
            let y = _mm512_loadu_ps(x.as_ptr().add(i));
            // Rounded to nearest (even) by the default rounding mode, then shifted by the zero
            // point, floored at 0 and narrowed with unsigned saturation at 255.
            let q = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(y, inv)), zeros);
            let q = _mm512_max_epi32(q, _mm512_setzero_si512());
            _mm_storeu_si128(out.as_mut_ptr().add(i).cast(), _mm512_cvtusepi32_epi8(q));
        }
        (step, zero)
    }
}

/// What [`dot_registers`] reads and writes, for 4 rows and a group of weight streams.
struct Block {
    a: *const u8,
    a_row: usize,
    a_scale: *const f32,
    a_zero: *const i32,
    w: *const i8,
    stream: usize,
    quads: usize,
    w_scale: *const f32,
    w_sum: *const i32,
    c: *mut f32,
    c_row: usize,
    start: *const f32,
    stride: usize,
}

/// 4 rows × `J` streams of 16 outputs over every quad of inputs, in 32-bit integers, then
/// scaled into `c` on top of `start`.
///
/// # Safety
/// The CPU has AVX-512 F, BW, VL and VNNI; the block's pointers hold 4 rows of `quads · 4`
/// bytes (`a_row` apart) with their scales and zero points, `J` streams of `quads` weight rows
/// (`stream` apart) with `J · 16` scales and sums, and 4 rows of `J · 16` values at `c` and
/// `start`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn dot_registers<const J: usize>(b: &Block) {
    // SAFETY: the caller's; every load and store is unaligned.
    unsafe {
        let mut acc = [[_mm512_setzero_si512(); J]; DOT_ROWS];
        for q in 0..b.quads {
            let mut ws = [_mm512_setzero_si512(); J];
            for (j, v) in ws.iter_mut().enumerate() {
                *v = _mm512_loadu_si512(b.w.add(j * b.stream + q * QUAD_ROW).cast());
            }
            for (r, row) in acc.iter_mut().enumerate() {
                // The row's four inputs of this quad, under all 16 lanes.
                let x =
                    b.a.add(r * b.a_row + QUAD * q)
                        .cast::<i32>()
                        .read_unaligned();
                let x: __m512i = _mm512_set1_epi32(x);
                for (v, &w) in row.iter_mut().zip(&ws) {
                    *v = _mm512_dpbusd_epi32(*v, x, w);
                }
            }
        }
        for (r, row) in acc.iter().enumerate() {
            let zero = _mm512_set1_epi32(*b.a_zero.add(r));
            let scale = _mm512_set1_ps(*b.a_scale.add(r));
            for (j, &v) in row.iter().enumerate() {
                let sum = _mm512_loadu_si512(b.w_sum.add(j * LANES).cast());
                let exact = _mm512_sub_epi32(v, _mm512_mullo_epi32(zero, sum));
                let steps = _mm512_mul_ps(scale, _mm512_loadu_ps(b.w_scale.add(j * LANES)));
                let start = _mm512_loadu_ps(b.start.add(r * b.stride + j * LANES));
                _mm512_storeu_ps(
                    b.c.add(r * b.c_row + j * LANES),
                    _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), steps, start),
                );
            }
        }
    }
}
