//! The matrix products of the BERT forward pass on OpenBLAS's `sgemm`, as candle custom ops
//! that also do the work around each product in the same buffer.
//!
//! - [`BlasLinear`]: `x·Wᵀ + b`, the bias written before the product (`beta = 1`), optionally
//!   followed by GELU in place, or with a residual added the same way and a [`Norm`] after.
//! - [`Attention`]: self-attention from the fused query/key/value projection, per sequence and
//!   head, reading the heads by stride (no permuted copies), with the masked softmax applied to
//!   one reused score buffer and the context written straight into its output columns.
//!
//! A profile of the candle version showed a fifth of the time in small batched products and
//! another fifth in allocating, zeroing and copying intermediate tensors; these ops remove both.
//! OpenBLAS is linked anyway (Faiss needs it). The encoder runs several batches at once on
//! rayon's threads, so OpenBLAS runs each call on the calling thread ([`single_threaded`]).
//!
//! On CPUs with AMX the linear layers' and attention's products run in bfloat16 on tiles
//! instead ([`super::amx`], chosen per encoder by [`Precision`]); asked for by name, the linear
//! layers' run in bfloat16 by AVX-512 BF16 dot products on CPUs without AMX.
//!
//! The crate's `unsafe` code is here (the three foreign calls into OpenBLAS), in `amx` and in
//! `avx512`.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::sync::Once;

use candle_core::{bail, CpuStorage, CustomOp1, CustomOp2, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use half::bf16;
use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
use half::vec::HalfBitsVecExt;

use super::amx::{self, Engine, Input, PackedWeight, Start};
use super::avx512;
use super::kernels::{gelu, layer_norm, masked_softmax};
use super::vnni;

const ROW_MAJOR: c_int = 101;
const NO_TRANS: c_int = 111;
const TRANS: c_int = 112;

#[link(name = "openblas")]
extern "C" {
    fn cblas_sgemm(
        layout: c_int,
        trans_a: c_int,
        trans_b: c_int,
        m: c_int,
        n: c_int,
        k: c_int,
        alpha: f32,
        a: *const f32,
        lda: c_int,
        b: *const f32,
        ldb: c_int,
        beta: f32,
        c: *mut f32,
        ldc: c_int,
    );
    fn openblas_set_num_threads(threads: c_int);
    fn openblas_get_corename() -> *const c_char;
}

/// The name of the kernel set OpenBLAS chose when it loaded (`Haswell`, `Zen`, `SkylakeX`, ...,
/// or an old generic one such as `Prescott` when it did not know the CPU).
pub fn core_name() -> String {
    // SAFETY: OpenBLAS returns a pointer to a static NUL-terminated string (never null in
    // builds with or without DYNAMIC_ARCH); it is copied before returning.
    let name = unsafe { openblas_get_corename() };
    if name.is_null() {
        return String::from("unknown");
    }
    // SAFETY: non-null and NUL-terminated, as above; the string lives as long as the library.
    unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .trim()
        .to_string()
}

/// Makes OpenBLAS run each call on the calling thread (the encoder parallelizes over batches).
pub fn single_threaded() {
    static ONCE: Once = Once::new();
    // SAFETY: sets a global of the library, once, before any product is computed here.
    ONCE.call_once(|| unsafe { openblas_set_num_threads(1) });
}

/// A row-major matrix view: `rows × cols` values, each row `stride` values after the previous.
#[derive(Clone, Copy)]
struct View {
    rows: usize,
    cols: usize,
    stride: usize,
}

impl View {
    fn new(rows: usize, cols: usize, stride: usize) -> Self {
        View { rows, cols, stride }
    }

    /// Values a slice must hold for this view.
    fn span(self) -> usize {
        if self.rows == 0 {
            0
        } else {
            (self.rows - 1) * self.stride + self.cols
        }
    }
}

fn int(n: usize) -> Result<c_int> {
    match c_int::try_from(n) {
        Ok(n) => Ok(n),
        Err(_) => bail!("sgemm: dimension {n} too large for BLAS"),
    }
}

/// `c = a·b + beta·c` (`b` transposed when `b_t`: its view is then `n × k`).
#[allow(clippy::many_single_char_names)] // BLAS's names
fn sgemm(
    (a, va): (&[f32], View),
    (b, vb, b_t): (&[f32], View, bool),
    (c, vc): (&mut [f32], View),
    beta: f32,
) -> Result<()> {
    let (m, k) = (va.rows, va.cols);
    let n = vc.cols;
    let (b_rows, b_cols) = if b_t { (n, k) } else { (k, n) };
    if vc.rows != m || (vb.rows, vb.cols) != (b_rows, b_cols) {
        bail!("sgemm: shapes do not fit");
    }
    if a.len() < va.span() || b.len() < vb.span() || c.len() < vc.span() {
        bail!("sgemm: a view is larger than its buffer");
    }
    if va.stride < k.max(1) || vb.stride < b_cols.max(1) || vc.stride < n.max(1) {
        bail!("sgemm: a stride is shorter than its row");
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    let trans_b = if b_t { TRANS } else { NO_TRANS };
    let dims = (int(m)?, int(n)?, int(k)?);
    let strides = (int(va.stride)?, int(vb.stride)?, int(vc.stride)?);
    // SAFETY: the checks above make every view fit inside its slice, with strides at least as
    // long as the rows; `c` is borrowed mutably, so it does not alias `a` or `b`.
    unsafe {
        cblas_sgemm(
            ROW_MAJOR,
            NO_TRANS,
            trans_b,
            dims.0,
            dims.1,
            dims.2,
            1.0,
            a.as_ptr(),
            strides.0,
            b.as_ptr(),
            strides.1,
            beta,
            c.as_mut_ptr(),
            strides.2,
        );
    }
    Ok(())
}

/// The f32 values of a contiguous input.
fn contiguous<'a>(storage: &'a CpuStorage, layout: &Layout, what: &str) -> Result<&'a [f32]> {
    match activations(storage, layout, what)? {
        Input::F32(values) => Ok(values),
        Input::Bf16(_) => bail!("{what}: f32 input expected"),
    }
}

/// The values of a contiguous f32 or bf16 input (bf16 comes from [`BlasLinear::forward_gelu`]
/// on packed weights).
fn activations<'a>(storage: &'a CpuStorage, layout: &Layout, what: &str) -> Result<Input<'a>> {
    let Some((start, end)) = layout.contiguous_offsets() else {
        bail!("{what}: contiguous input expected")
    };
    match storage {
        CpuStorage::F32(values) => Ok(Input::F32(&values[start..end])),
        CpuStorage::BF16(values) => Ok(Input::Bf16(values[start..end].reinterpret_cast())),
        _ => bail!("{what}: f32 or bf16 input expected"),
    }
}

/// The arithmetic of the encoder's linear layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// f32 throughout, on OpenBLAS's `sgemm`: the same vectors on every CPU.
    F32,
    /// The linear layers' and attention's products in bfloat16 on AMX tiles, accumulated in
    /// f32 (bias, residual, GELU, softmax and layer norm are computed in f32): several times
    /// faster on CPUs with AMX; the vectors stay within cosine 0.999 of f32's.
    Bf16Amx,
    /// The linear layers' and attention's products in bfloat16 by AVX-512 BF16 dot products
    /// (`vdpbf16ps`), accumulated in f32: for CPUs with AVX-512 BF16 and no AMX (AMD Zen 4 and
    /// 5), where `vdpbf16ps` does twice the multiply-adds of an f32 FMA (measured on Zen 4).
    Bf16Avx512,
    /// The linear layers' products in int8 by AVX-512 VNNI (`vpdpbusd`): inputs rounded to u8
    /// per row after SmoothQuant's per-channel scaling, weights to int8 per output, summed in
    /// 32-bit integers ([`super::vnni`]); attention as [`Precision::Bf16Avx512`] where bf16 dot
    /// products outrun f32, else in f32. It needs the model's calibrated input ranges
    /// ([`super::int8_ranges`]): a layer without them runs as attention does.
    Int8Avx512,
}

/// The environment variable that picks the encoder's precision: unset, empty or `auto` for
/// [`Precision::auto`]'s choice, else `f32`, `bf16-amx`, `bf16-avx512` or `int8-avx512` (so
/// that each path a CPU can run can be measured on it).
pub const PRECISION_VARIABLE: &str = "BLAGENT_ENCODER_PRECISION";

impl Precision {
    /// The fastest precision measured on this kind of CPU: [`Precision::Bf16Amx`] where AMX is
    /// usable; else [`Precision::Int8Avx512`] where the CPU has AVX-512 BF16 and VNNI (Zen 4
    /// and 5, and Intel's Xeons whose AMX is not granted: on an Emerald Rapids without it, 28.3
    /// chunks per CPU second against 21.6 in f32); else, where bf16 dot products outrun f32
    /// ([`avx512::bf16_dots_pay`]: AMD's CPUs with AVX-512 BF16), [`Precision::Bf16Avx512`];
    /// else [`Precision::F32`]. On Intel's, `vdpbf16ps` does half the multiply-adds of f32
    /// FMAs per second (`docs/dense.md`).
    pub fn auto() -> Self {
        Self::choose(
            amx::available(),
            avx512::available() && vnni::available(),
            avx512::bf16_dots_pay(),
        )
    }

    /// What [`PRECISION_VARIABLE`] asks for ([`Precision::auto`] where it is unset, empty or
    /// `auto`), or why it cannot be had: a name that is none of the five, or a precision this
    /// CPU cannot run.
    pub fn from_environment() -> std::result::Result<Self, String> {
        match std::env::var(PRECISION_VARIABLE) {
            Err(std::env::VarError::NotPresent) => Ok(Self::auto()),
            Err(std::env::VarError::NotUnicode(_)) => {
                Err(format!("{PRECISION_VARIABLE} is not valid UTF-8"))
            }
            Ok(value) => match value.trim() {
                "" | "auto" => Ok(Self::auto()),
                name => Self::parse(name).map_err(|e| format!("{PRECISION_VARIABLE}: {e}")),
            },
        }
    }

    /// [`Precision::auto`]'s choice from what it reads: AMX usable, AVX-512 BF16 and VNNI
    /// present (what [`Precision::Int8Avx512`] runs on), bf16 dot products faster than f32
    /// ([`avx512::bf16_dots_pay`]).
    fn choose(amx: bool, int8: bool, dots_pay: bool) -> Self {
        if amx {
            Precision::Bf16Amx
        } else if int8 {
            Precision::Int8Avx512
        } else if dots_pay {
            Precision::Bf16Avx512
        } else {
            Precision::F32
        }
    }

    /// Parses `auto` (what [`PRECISION_VARIABLE`] asks for, else [`Precision::auto`]), `f32`,
    /// `bf16-amx` or `bf16-avx512` (an error where the CPU cannot run it).
    pub fn parse(name: &str) -> std::result::Result<Self, String> {
        match name {
            "auto" => Self::from_environment(),
            "f32" => Ok(Precision::F32),
            "bf16-amx" => Precision::Bf16Amx.runnable(),
            "bf16-avx512" => Precision::Bf16Avx512.runnable(),
            "int8-avx512" => Precision::Int8Avx512.runnable(),
            other => Err(format!(
                "precision must be auto, f32, bf16-amx, bf16-avx512 or int8-avx512, not {other:?}"
            )),
        }
    }

    /// This precision, or why this process cannot run it.
    pub fn runnable(self) -> std::result::Result<Self, String> {
        match self {
            Precision::Bf16Amx if !amx::available() => {
                Err("bf16-amx needs a CPU with AMX (and a kernel that grants it)".into())
            }
            Precision::Bf16Avx512 if !avx512::available() => {
                Err("bf16-avx512 needs a CPU with AVX-512 F, BW, VL and BF16".into())
            }
            Precision::Int8Avx512 if !(avx512::available() && vnni::available()) => {
                Err("int8-avx512 needs a CPU with AVX-512 F, BW, VL, BF16 and VNNI".into())
            }
            precision => Ok(precision),
        }
    }

    /// `f32`, `bf16-amx`, `bf16-avx512` or `int8-avx512`.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16Amx => "bf16-amx",
            Precision::Bf16Avx512 => "bf16-avx512",
            Precision::Int8Avx512 => "int8-avx512",
        }
    }

    /// What multiplies the packed bf16 weights, or `None` for f32. In
    /// [`Precision::Int8Avx512`], the layers int8 does not run and attention: bf16 dot
    /// products where they outrun f32 ([`avx512::bf16_dots_pay`]), else f32 (on Intel's CPUs
    /// `vdpbf16ps` does half the multiply-adds of an FMA).
    fn engine(self) -> Option<Engine> {
        match self {
            Precision::F32 => None,
            Precision::Bf16Amx => Some(Engine::Tiles),
            Precision::Bf16Avx512 => Some(Engine::Dot),
            Precision::Int8Avx512 => avx512::bf16_dots_pay().then_some(Engine::Dot),
        }
    }

    /// Whether [`Precision::Int8Avx512`] runs its other layers and attention in f32 here
    /// (its vectors are then another model to the caches).
    pub fn int8_with_f32(self) -> bool {
        self == Precision::Int8Avx512 && self.engine().is_none()
    }
}

/// A linear layer, `y = x·Wᵀ + b`, with `W` of `(outputs, inputs)` as PyTorch's `nn.Linear`
/// stores it.
pub struct BlasLinear {
    /// The f32 weight, row-major `(outputs, inputs)`; empty when `packed` holds it.
    weight: Vec<f32>,
    /// The weight as bf16 tiles, when the layer runs in bf16 ([`Precision::Bf16Amx`] or
    /// [`Precision::Bf16Avx512`]) and its shape falls on whole tiles.
    packed: Option<PackedWeight>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

/// Layer normalization over the last dimension, with learned scale and shift.
pub struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
    eps: f32,
}

impl Norm {
    /// A layer norm from its `(features)` weight and bias.
    pub fn new(gamma: &Tensor, beta: &Tensor, eps: f64) -> Result<Self> {
        let (gamma, beta) = (gamma.to_vec1::<f32>()?, beta.to_vec1::<f32>()?);
        if gamma.len() != beta.len() || gamma.is_empty() {
            bail!("layer norm: weight and bias differ in size");
        }
        #[allow(clippy::cast_possible_truncation)]
        let eps = eps as f32;
        Ok(Norm { gamma, beta, eps })
    }

    /// An error unless rows of `features` values are what this norm normalizes.
    fn check(&self, features: usize) -> Result<()> {
        if features != self.gamma.len() {
            bail!(
                "layer norm: rows of {} expected, not {features}",
                self.gamma.len()
            );
        }
        Ok(())
    }

    /// Normalizes each whole row of `xs` (rows [`Norm::check`]ed), after adding `shift` (as
    /// long as a row) to it where given.
    fn normalize(&self, xs: &mut [f32], shift: Option<&[f32]>) {
        layer_norm(xs, shift, &self.gamma, &self.beta, self.eps);
    }
}

impl CustomOp1 for Norm {
    fn name(&self) -> &'static str {
        "layer-norm"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let mut out = contiguous(storage, layout, "layer norm")?.to_vec();
        let features = layout.shape().dims().last().copied().unwrap_or(0);
        self.check(features)?;
        self.normalize(&mut out, None);
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}

/// What a [`BlasLinear`] does after its product.
#[derive(Clone, Copy)]
enum Then<'a> {
    Nothing,
    Gelu,
    /// Adds a residual (the op's second input), as the initial value of the output, and
    /// normalizes the sum.
    AddNorm(&'a Norm),
}

struct LinearOp<'a> {
    layer: &'a BlasLinear,
    then: Then<'a>,
}

impl BlasLinear {
    /// A layer from a `(outputs, inputs)` weight and an optional `(outputs)` bias, its product
    /// in `precision` (f32 where AMX cannot run or the shape does not fall on whole tiles).
    /// `input_max`, each input's largest `|value|` on calibration texts, lets
    /// [`Precision::Int8Avx512`] run the layer in int8; without it the layer runs in bf16.
    pub fn with_precision(
        weight: &Tensor,
        bias: Option<&Tensor>,
        precision: Precision,
        input_max: Option<&[f32]>,
    ) -> Result<Self> {
        single_threaded();
        let (outputs, inputs) = weight.dims2()?;
        let bias = match bias {
            Some(b) => b.to_vec1::<f32>()?,
            None => vec![0.0; outputs],
        };
        if bias.len() != outputs {
            bail!("linear: a bias of {outputs} expected, got {}", bias.len());
        }
        let weight = weight.flatten_all()?.to_vec1::<f32>()?;
        let int8 = match (precision, input_max) {
            (Precision::Int8Avx512, Some(input_max)) => {
                PackedWeight::int8(&weight, outputs, inputs, input_max)
            }
            _ => None,
        };
        let packed = int8.or_else(|| {
            precision
                .engine()
                .and_then(|engine| PackedWeight::new(&weight, outputs, inputs, engine))
        });
        Ok(BlasLinear {
            // The f32 copy serves only `sgemm`: dropped when the tiles hold the weight.
            weight: if packed.is_some() { Vec::new() } else { weight },
            packed,
            bias,
            inputs,
            outputs,
        })
    }

    /// `x·Wᵀ + b` for `x` of `(rows, inputs)`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.apply_op1_no_bwd(&LinearOp {
            layer: self,
            then: Then::Nothing,
        })
    }

    /// `gelu(x·Wᵀ + b)` with the exact (erf) GELU; in bf16 when the layer runs in bf16, since
    /// the next product (the only reader of a feed-forward layer's inner activations) would
    /// round it to bf16 anyway.
    pub fn forward_gelu(&self, x: &Tensor) -> Result<Tensor> {
        x.apply_op1_no_bwd(&LinearOp {
            layer: self,
            then: Then::Gelu,
        })
    }

    /// `norm(x·Wᵀ + b + residual)`, with `residual` of `(rows, outputs)` (a post-norm
    /// transformer block's output).
    pub fn forward_add_norm(&self, x: &Tensor, residual: &Tensor, norm: &Norm) -> Result<Tensor> {
        x.apply_op2_no_bwd(
            residual,
            &LinearOp {
                layer: self,
                then: Then::AddNorm(norm),
            },
        )
    }

    fn run(
        &self,
        x: Input<'_>,
        x_layout: &Layout,
        residual: Option<&[f32]>,
        then: Then,
    ) -> Result<(CpuStorage, Shape)> {
        let (rows, inputs) = x_layout.shape().dims2()?;
        if inputs != self.inputs {
            bail!("linear: {} inputs expected, got {inputs}", self.inputs);
        }
        if let Some(residual) = residual {
            if residual.len() != rows * self.outputs {
                bail!("linear: a residual of {rows}×{} expected", self.outputs);
            }
        }
        if let (Some(_), Then::Nothing | Then::Gelu) = (residual, then) {
            bail!("linear: a residual comes only with a norm");
        }
        if let Then::AddNorm(norm) = then {
            norm.check(self.outputs)?;
        }
        let out = if let Some(packed) = &self.packed {
            // The bias starts the accumulators, or with a residual there the norm adds it; GELU
            // and the norm run on each block of rows as it leaves the tiles.
            let (start, shift) = match residual {
                Some(residual) => (Start::Rows(residual), Some(self.bias.as_slice())),
                None => (Start::EveryRow(self.bias.as_slice()), None),
            };
            let then: &amx::EachBlock<'_> = match then {
                Then::Nothing => &|_| {},
                // Rounded to bf16 anyway: the AVX-512 kernel, faster.
                Then::Gelu => {
                    let out = packed.matmul_bf16(x, start, &|rows| avx512::gelu(rows));
                    let out = CpuStorage::BF16(out.reinterpret_into());
                    return Ok((out, Shape::from((rows, self.outputs))));
                }
                Then::AddNorm(norm) => &move |rows| norm.normalize(rows, shift),
            };
            packed.matmul(x, start, then)
        } else {
            // Widened where a bf16 layer's output reaches an f32 one (a shape off the tiles).
            let widened: Vec<f32>;
            let x = match x {
                Input::F32(x) => x,
                Input::Bf16(x) => {
                    widened = x.reinterpret_cast::<bf16>().to_f32_vec();
                    &widened
                }
            };
            let mut out = match residual {
                Some(residual) => {
                    let mut out = residual.to_vec();
                    for row in out.chunks_exact_mut(self.outputs) {
                        for (o, &b) in row.iter_mut().zip(&self.bias) {
                            *o += b;
                        }
                    }
                    out
                }
                None => self.bias.repeat(rows),
            };
            sgemm(
                (x, View::new(rows, inputs, inputs)),
                (&self.weight, View::new(self.outputs, inputs, inputs), true),
                (&mut out, View::new(rows, self.outputs, self.outputs)),
                1.0,
            )?;
            match then {
                Then::Nothing => {}
                Then::Gelu => gelu(&mut out),
                Then::AddNorm(norm) => norm.normalize(&mut out, None),
            }
            out
        };
        Ok((CpuStorage::F32(out), Shape::from((rows, self.outputs))))
    }
}

impl CustomOp1 for LinearOp<'_> {
    fn name(&self) -> &'static str {
        "blas-linear"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let x = activations(storage, layout, "linear")?;
        self.layer.run(x, layout, None, self.then)
    }
}

impl CustomOp2 for LinearOp<'_> {
    fn name(&self) -> &'static str {
        "blas-linear-residual"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let x = activations(s1, l1, "linear")?;
        let residual = contiguous(s2, l2, "linear residual")?;
        self.layer.run(x, l1, Some(residual), self.then)
    }
}

/// Multi-head self-attention over the output of the fused query/key/value projection,
/// `(batch × seq, 3 × hidden)`, with an additive key mask of `(batch, seq)` (0 to attend, a
/// very negative value for padding). The queries must already be scaled by `1/√head_size`.
/// The result is the attention context, `(batch × seq, hidden)`, heads side by side.
pub struct Attention {
    /// Number of heads.
    pub heads: usize,
    /// What runs the two products in bf16 ([`amx::attention`]), or `None` for f32 `sgemm`:
    /// the engine of a bf16 precision where [`amx::attention_fits`] the head size.
    pub engine: Option<Engine>,
}

impl Attention {
    /// Attention over `heads` heads of `head` values for linear layers in `precision`.
    pub fn new(heads: usize, head: usize, precision: Precision) -> Self {
        let engine = precision
            .engine()
            .filter(|&engine| amx::attention_fits(head, engine));
        Attention { heads, engine }
    }
}

impl CustomOp2 for Attention {
    fn name(&self) -> &'static str {
        "attention"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let qkv = contiguous(s1, l1, "attention")?;
        let mask = contiguous(s2, l2, "attention mask")?;
        let (rows, width) = l1.shape().dims2()?;
        let (batch, seq) = l2.shape().dims2()?;
        let hidden = width / 3;
        if rows != batch * seq || width % 3 != 0 || self.heads == 0 || hidden % self.heads != 0 {
            bail!(
                "attention: {rows}×{width} does not fit {batch}×{seq} and {} heads",
                self.heads
            );
        }
        let head = hidden / self.heads;
        let mut out = vec![0f32; rows * hidden];
        if rows == 0 {
            return Ok((CpuStorage::F32(out), Shape::from((rows, hidden))));
        }
        if let Some(engine) = self.engine {
            if !amx::attention_fits(head, engine) {
                bail!("attention: {engine:?} cannot run heads of {head}");
            }
            out.par_chunks_mut(seq * hidden)
                .zip(qkv.par_chunks(seq * width))
                .zip(mask.par_chunks(seq))
                .for_each(|((out, qkv), mask)| {
                    amx::attention(qkv, mask, self.heads, out, engine);
                });
            return Ok((CpuStorage::F32(out), Shape::from((rows, hidden))));
        }
        out.par_chunks_mut(seq * hidden)
            .zip(qkv.par_chunks(seq * width))
            .zip(mask.par_chunks(seq))
            .try_for_each_init(
                || vec![0f32; seq * seq],
                |scores, ((out, qkv), mask)| -> Result<()> {
                    for h in 0..self.heads {
                        let q = &qkv[h * head..];
                        let k = &qkv[hidden + h * head..];
                        let v = &qkv[2 * hidden + h * head..];
                        sgemm(
                            (q, View::new(seq, head, width)),
                            (k, View::new(seq, head, width), true),
                            (scores, View::new(seq, seq, seq)),
                            0.0,
                        )?;
                        for row in scores.chunks_exact_mut(seq) {
                            masked_softmax(row, mask);
                        }
                        sgemm(
                            (scores, View::new(seq, seq, seq)),
                            (v, View::new(seq, head, width), false),
                            (&mut out[h * head..], View::new(seq, head, hidden)),
                            0.0,
                        )?;
                    }
                    Ok(())
                },
            )?;
        Ok((CpuStorage::F32(out), Shape::from((rows, hidden))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Module, D};

    fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
        (a - b)
            .unwrap()
            .abs()
            .unwrap()
            .flatten_all()
            .unwrap()
            .max(0)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap()
    }

    #[test]
    fn linear_matches_candle() {
        let device = Device::Cpu;
        let x = Tensor::randn(0f32, 1.0, (37, 24), &device).unwrap();
        let w = Tensor::randn(0f32, 1.0, (10, 24), &device).unwrap();
        let b = Tensor::randn(0f32, 1.0, 10, &device).unwrap();
        let r = Tensor::randn(0f32, 1.0, (37, 10), &device).unwrap();
        for bias in [Some(&b), None] {
            let want = candle_nn::Linear::new(w.clone(), bias.cloned())
                .forward(&x)
                .unwrap();
            let layer = BlasLinear::with_precision(&w, bias, Precision::F32, None).unwrap();
            assert!(max_diff(&want, &layer.forward(&x).unwrap()) < 1e-4);
            let (gamma, beta) = (
                Tensor::randn(0f32, 1.0, 10, &device).unwrap(),
                Tensor::randn(0f32, 1.0, 10, &device).unwrap(),
            );
            let norm = Norm::new(&gamma, &beta, 1e-12).unwrap();
            let reference = candle_nn::LayerNorm::new(gamma, beta, 1e-12);
            let added = layer.forward_add_norm(&x, &r, &norm).unwrap();
            let want_added = reference.forward(&(&want + &r).unwrap()).unwrap();
            assert!(max_diff(&want_added, &added) < 1e-4);
            let gelu = layer.forward_gelu(&x).unwrap();
            assert!(max_diff(&want.gelu_erf().unwrap(), &gelu) < 1e-4);
        }
        let layer = BlasLinear::with_precision(&w, Some(&b), Precision::F32, None).unwrap();
        let empty = Tensor::zeros((0, 24), candle_core::DType::F32, &device).unwrap();
        assert_eq!(layer.forward(&empty).unwrap().dims(), &[0, 10]);
        let wrong = Tensor::zeros((3, 5), candle_core::DType::F32, &device).unwrap();
        assert!(layer.forward(&wrong).is_err());
    }

    #[test]
    fn auto_takes_the_fastest_arithmetic_the_cpu_has() {
        assert_eq!(Precision::choose(true, false, false), Precision::Bf16Amx);
        assert_eq!(Precision::choose(true, true, true), Precision::Bf16Amx);
        // Zen 4 and 5; and an Intel Xeon whose AMX is not granted (bf16 dots do not pay there,
        // int8 does).
        assert_eq!(Precision::choose(false, true, true), Precision::Int8Avx512);
        assert_eq!(Precision::choose(false, true, false), Precision::Int8Avx512);
        // AVX-512 BF16 without VNNI: AMD's take bf16 dot products, Intel's (Cooper Lake) f32.
        assert_eq!(Precision::choose(false, false, true), Precision::Bf16Avx512);
        assert_eq!(Precision::choose(false, false, false), Precision::F32);
        // What this CPU gets is one it can run.
        assert!(Precision::auto().runnable().is_ok());
    }

    #[test]
    fn bf16_linear_is_close_to_f32() {
        for precision in [Precision::Bf16Amx, Precision::Bf16Avx512] {
            if precision.runnable().is_ok() {
                bf16_linear_is_close_to_f32_in(precision);
            }
            // Else not on this CPU: the path cannot run here (the Python tests say so).
        }
    }

    fn bf16_linear_is_close_to_f32_in(precision: Precision) {
        let device = Device::Cpu;
        let x = Tensor::randn(0f32, 1.0, (45, 64), &device).unwrap();
        let w = Tensor::randn(0f32, 0.1, (96, 64), &device).unwrap();
        let b = Tensor::randn(0f32, 1.0, 96, &device).unwrap();
        let exact = BlasLinear::with_precision(&w, Some(&b), Precision::F32, None).unwrap();
        let bf16 = BlasLinear::with_precision(&w, Some(&b), precision, None).unwrap();
        assert!(bf16.packed.is_some() && exact.packed.is_none());
        let want = exact.forward(&x).unwrap();
        let got = bf16.forward(&x).unwrap();
        // bf16 keeps 8 bits of mantissa: about 0.4% per operand, less after summing 64 terms.
        assert!(max_diff(&want, &got) < 2e-2, "{}", max_diff(&want, &got));
        assert!(max_diff(&want, &got) > 0.0, "the bf16 path did not run");
        // With a residual (the tiles start from it) and the bias added by the norm.
        let (r, norm) = residual_and_norm(45, 96);
        let want = exact.forward_add_norm(&x, &r, &norm).unwrap();
        let got = bf16.forward_add_norm(&x, &r, &norm).unwrap();
        assert!(max_diff(&want, &got) < 5e-2, "{}", max_diff(&want, &got));
        // GELU comes out in bf16, which the next product reads as it is, and an f32 layer
        // widens.
        let want = exact.forward_gelu(&x).unwrap();
        let got = bf16.forward_gelu(&x).unwrap();
        assert_eq!(got.dtype(), candle_core::DType::BF16);
        let got32 = got.to_dtype(candle_core::DType::F32).unwrap();
        assert!(
            max_diff(&want, &got32) < 5e-2,
            "{}",
            max_diff(&want, &got32)
        );
        let w2 = Tensor::randn(0f32, 0.1, (32, 96), &device).unwrap();
        let exact2 = BlasLinear::with_precision(&w2, None, Precision::F32, None).unwrap();
        let bf16_2 = BlasLinear::with_precision(&w2, None, precision, None).unwrap();
        let want = exact2.forward(&got32).unwrap();
        assert!(max_diff(&want, &bf16_2.forward(&got).unwrap()) < 5e-2);
        assert!(max_diff(&want, &exact2.forward(&got).unwrap()) < 1e-4);
    }

    #[test]
    fn int8_linear_is_close_to_f32() {
        if Precision::Int8Avx512.runnable().is_err() {
            // No AVX-512 VNNI (or BF16) on this CPU: the path cannot run here.
            return;
        }
        let device = Device::Cpu;
        // One input channel far wider than the rest (what SmoothQuant is for), a row of zeros
        // (padding) and one of positive values only; 45 rows, a whole block of 32 and part of
        // another.
        let mut x = Tensor::randn(0f32, 1.0, (45, 64), &device)
            .unwrap()
            .to_vec2::<f32>()
            .unwrap();
        for row in &mut x {
            row[5] *= 20.0;
        }
        x[7].fill(0.0);
        x[9].iter_mut().for_each(|v| *v = v.abs() + 0.5);
        let input_max = |rows: &[Vec<f32>]| -> Vec<f32> {
            (0..rows[0].len())
                .map(|j| rows.iter().map(|r| r[j].abs()).fold(0.0, f32::max))
                .collect()
        };
        let max = input_max(&x);
        let x = Tensor::new(x, &device).unwrap();
        let w = Tensor::randn(0f32, 0.1, (96, 64), &device).unwrap();
        let b = Tensor::randn(0f32, 1.0, 96, &device).unwrap();
        let exact = BlasLinear::with_precision(&w, Some(&b), Precision::F32, None).unwrap();
        let int8 =
            BlasLinear::with_precision(&w, Some(&b), Precision::Int8Avx512, Some(&max)).unwrap();
        assert!(int8.packed.as_ref().is_some_and(PackedWeight::is_int8));
        // Without ranges the layer runs in bf16 where bf16 dot products pay, else in f32.
        let other = BlasLinear::with_precision(&w, Some(&b), Precision::Int8Avx512, None).unwrap();
        if Precision::Int8Avx512.int8_with_f32() {
            assert!(other.packed.is_none());
            assert_eq!(other.forward(&x).unwrap().to_vec2::<f32>().unwrap(), {
                exact.forward(&x).unwrap().to_vec2::<f32>().unwrap()
            });
        } else {
            assert!(other.packed.as_ref().is_some_and(|p| !p.is_int8()));
        }
        let want = exact.forward(&x).unwrap();
        let got = int8.forward(&x).unwrap();
        assert_int8_close(&want, &got);
        assert!(max_diff(&want, &got) > 0.0, "the int8 path did not run");
        // The zero row gives the bias exactly.
        let row7 = got.get(7).unwrap().to_vec1::<f32>().unwrap();
        assert_eq!(row7, b.to_vec1::<f32>().unwrap());
        // With a residual and the norm.
        let (r, norm) = residual_and_norm(45, 96);
        let want = exact.forward_add_norm(&x, &r, &norm).unwrap();
        let got = int8.forward_add_norm(&x, &r, &norm).unwrap();
        // The inputs are random and unseeded: a normed output of unit scale was seen 0.115 off
        // in one run of many (0.1 was the bound), so the bound is 0.2.
        assert!(max_diff(&want, &got) < 0.2, "{}", max_diff(&want, &got));
        // GELU comes out in bf16, and an int8 layer reads it.
        let gelu = int8.forward_gelu(&x).unwrap();
        assert_eq!(gelu.dtype(), candle_core::DType::BF16);
        let gelu32 = gelu.to_dtype(candle_core::DType::F32).unwrap();
        let w2 = Tensor::randn(0f32, 0.1, (32, 96), &device).unwrap();
        let max2 = input_max(&gelu32.to_vec2::<f32>().unwrap());
        let exact2 = BlasLinear::with_precision(&w2, None, Precision::F32, None).unwrap();
        let int8_2 =
            BlasLinear::with_precision(&w2, None, Precision::Int8Avx512, Some(&max2)).unwrap();
        let want = exact2.forward(&gelu32).unwrap();
        assert_int8_close(&want, &int8_2.forward(&gelu).unwrap());
    }

    /// A random `(rows, width)` residual and a layer norm of random scale and shift.
    fn residual_and_norm(rows: usize, width: usize) -> (Tensor, Norm) {
        let device = Device::Cpu;
        let r = Tensor::randn(0f32, 1.0, (rows, width), &device).unwrap();
        let (gamma, beta) = (
            Tensor::randn(0f32, 1.0, width, &device).unwrap(),
            Tensor::randn(0f32, 1.0, width, &device).unwrap(),
        );
        (r, Norm::new(&gamma, &beta, 1e-12).unwrap())
    }

    /// Inputs in 255 steps of each row's range, weights in 255 of each output's: within 2% of
    /// the largest output (a wrong zero point or scale is off by far more).
    fn assert_int8_close(want: &Tensor, got: &Tensor) {
        let largest = want.abs().unwrap().flatten_all().unwrap().max(0).unwrap();
        let largest = largest.to_scalar::<f32>().unwrap();
        let diff = max_diff(want, got);
        assert!(diff < 0.02 * largest, "{diff} of {largest}");
    }

    #[test]
    fn bf16_attention_is_close_to_f32() {
        let head = 32;
        for precision in [Precision::Bf16Amx, Precision::Bf16Avx512] {
            let attention = Attention::new(3, head, precision);
            match precision.engine() {
                Some(engine) if amx::attention_fits(head, engine) => {
                    assert_eq!(attention.engine, Some(engine));
                    bf16_attention_is_close_to_f32_with(&attention, head);
                }
                // Not on this CPU: the path cannot run here (the Python tests say so).
                _ => assert_eq!(attention.engine, None),
            }
        }
    }

    fn bf16_attention_is_close_to_f32_with(attention: &Attention, head: usize) {
        let device = Device::Cpu;
        let (heads, hidden) = (attention.heads, attention.heads * head);
        // Lengths on and off the 32-row blocks; the second sequence of each batch is padded.
        for (batch, seq) in [(1, 1), (2, 37), (2, 64), (1, 70)] {
            let qkv = Tensor::randn(0f32, 0.5, (batch * seq, 3 * hidden), &device).unwrap();
            let mut mask = vec![0f32; batch * seq];
            if batch > 1 {
                mask[2 * seq - seq / 3..].fill(f32::MIN);
            }
            // Padding tokens' own context is not computed in bf16 (no key attends them and the
            // pooling drops them): compare the others'.
            let keep: Vec<f32> = mask.iter().map(|&m| f32::from(m == 0.0)).collect();
            let keep = Tensor::from_vec(keep, (batch * seq, 1), &device).unwrap();
            let mask = Tensor::from_vec(mask, (batch, seq), &device).unwrap();
            let exact = qkv
                .apply_op2_no_bwd(
                    &mask,
                    &Attention {
                        heads,
                        engine: None,
                    },
                )
                .unwrap();
            let bf16 = qkv.apply_op2_no_bwd(&mask, attention).unwrap();
            let diff = max_diff(
                &exact.broadcast_mul(&keep).unwrap(),
                &bf16.broadcast_mul(&keep).unwrap(),
            );
            // bf16 operands: about 0.4% each, on values of order 1.
            assert!(diff < 3e-2, "{:?}, {batch}×{seq}: {diff}", attention.engine);
            assert!(diff > 0.0, "the bf16 path did not run");
        }
    }

    #[test]
    fn attention_matches_the_textbook_formula() {
        let device = Device::Cpu;
        let (batch, seq, heads, head) = (2, 5, 3, 4);
        let hidden = heads * head;
        let qkv = Tensor::randn(0f32, 1.0, (batch * seq, 3 * hidden), &device).unwrap();
        // The second sequence has two padding positions.
        let mut mask = vec![0f32; batch * seq];
        mask[2 * seq - 2..].fill(f32::MIN);
        let mask_t = Tensor::from_vec(mask.clone(), (batch, seq), &device).unwrap();
        let got = qkv
            .apply_op2_no_bwd(
                &mask_t,
                &Attention {
                    heads,
                    engine: None,
                },
            )
            .unwrap();

        let split = qkv
            .reshape((batch, seq, 3, heads, head))
            .unwrap()
            .permute((2, 0, 3, 1, 4))
            .unwrap()
            .contiguous()
            .unwrap();
        let (q, k, v) = (
            split.get(0).unwrap(),
            split.get(1).unwrap(),
            split.get(2).unwrap(),
        );
        let keep: Vec<f32> = mask
            .iter()
            .map(|&m| if m == 0.0 { 0.0 } else { -1e30 })
            .collect();
        let keep = Tensor::from_vec(keep, (batch, 1, 1, seq), &device).unwrap();
        let scores = q
            .matmul(&k.t().unwrap())
            .unwrap()
            .broadcast_add(&keep)
            .unwrap();
        let probs = candle_nn::ops::softmax(&scores, D::Minus1).unwrap();
        let want = probs
            .matmul(&v)
            .unwrap()
            .transpose(1, 2)
            .unwrap()
            .contiguous()
            .unwrap()
            .reshape((batch * seq, hidden))
            .unwrap();
        assert!(max_diff(&want, &got) < 1e-5, "{}", max_diff(&want, &got));

        let bad = Tensor::zeros(
            (batch * seq, 3 * hidden + 1),
            candle_core::DType::F32,
            &device,
        )
        .unwrap();
        assert!(bad
            .apply_op2_no_bwd(
                &mask_t,
                &Attention {
                    heads,
                    engine: None
                }
            )
            .is_err());
    }
}
