//! The encoder's products on Intel AMX tiles, in bfloat16 with f32 accumulation.
//!
//! CPUs with AMX (Intel Xeon from Sapphire Rapids on) multiply 16×32 bf16 tiles by 32×16 ones
//! into 16×16 f32 accumulators in one instruction, many times the f32 throughput of their
//! AVX-512 units. On such a CPU [`PackedWeight::matmul`] replaces `sgemm` in the linear layers:
//! the weights are rounded to bf16 and laid out as tiles once, at load, the activations are
//! rounded to bf16 per call, and the accumulators start from the bias (or the residual).
//! [`attention`] runs attention's two products on tiles too. Both go through one routine for a
//! 32×32 block of the output ([`product_block`]); on [`Engine::Dot`], through `dot_block`.
//!
//! No library does this for Rust (OpenBLAS's bf16 products are not in the Debian build the
//! wheel links, and not on AMX before 0.3.2x), so the kernel is written here with inline
//! assembly, since Rust's AMX intrinsics are unstable. It is small: one tile configuration
//! (eight 16×64-byte tiles), 2×2 accumulator tiles per 32×32 block of the output, operands
//! loaded straight from the bf16 rows and the packed weights.
//!
//! On CPUs with AVX-512 BF16 but no AMX (AMD Zen 4 and 5), the same packed weights are
//! multiplied by `vdpbf16ps` instead ([`Engine::Dot`], the kernel in [`super::avx512`]): a
//! tile's rows (a pair of inputs for 16 outputs, 64 bytes) are what that instruction takes.
//!
//! Linux hands tile data to a process only on request (`arch_prctl(ARCH_REQ_XCOMP_PERM)`);
//! [`available`] asks once and says whether the path can run.
#![allow(unsafe_code)]

use std::arch::asm;
use std::arch::x86_64::__cpuid_count;
use std::cell::RefCell;
use std::sync::OnceLock;

use half::bf16;
use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
use rayon::prelude::*;

use super::avx512::{self, softmax_bf16, to_bf16};
use super::vnni::{self, Int8Weight};

/// Rows of a tile (output rows per tile, and k pairs per weight tile).
const ROWS: usize = 16;
/// bf16 values of `k` per operand tile row (64 bytes).
const K_STEP: usize = 32;
/// f32 columns of an accumulator tile (64 bytes).
const COLS: usize = 16;
/// Output rows and columns computed per block: 2×2 accumulator tiles.
const BLOCK: usize = 2 * ROWS;
/// bf16 values in one packed weight tile.
const TILE_VALUES: usize = ROWS * K_STEP;
/// Values per step of [`softmax_bf16`] (one AVX-512 register of f32): its rows are multiples.
const SOFTMAX_LANES: usize = 16;

const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
const XFEATURE_XTILEDATA: libc::c_long = 18;

/// Whether this process can run AMX bf16 products: the CPU has AMX-TILE and AMX-BF16 (and
/// AVX-512 BF16, which rounds the operands and every CPU with AMX has) and the kernel granted
/// tile data. Asked once.
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| cpu_has_amx_bf16() && avx512::available() && tile_data_granted())
}

// `__cpuid_count` is a safe function from Rust 1.87 on and unsafe before (the crate's minimum
// is 1.85), and AMX's `is_x86_feature_detected!` names are still unstable.
#[allow(unused_unsafe)]
fn cpu_has_amx_bf16() -> bool {
    // SAFETY: CPUID is present on every x86-64 CPU; leaf 7 is read only when leaf 0 says it
    // exists.
    let leaves = unsafe { __cpuid_count(0, 0) }.eax;
    if leaves < 7 {
        return false;
    }
    // SAFETY: as above.
    let edx = unsafe { __cpuid_count(7, 0) }.edx;
    let (amx_bf16, amx_tile) = (edx & (1 << 22) != 0, edx & (1 << 24) != 0);
    amx_bf16 && amx_tile
}

fn tile_data_granted() -> bool {
    // SAFETY: a plain system call with integer arguments; it changes only whether this
    // process may use AMX tile data, and fails cleanly where the kernel does not support it.
    unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_REQ_XCOMP_PERM,
            XFEATURE_XTILEDATA,
        ) == 0
    }
}

/// The tile configuration `ldtilecfg` reads: palette 1, tiles 0–7 of 16 rows × 64 bytes.
#[repr(C, align(64))]
struct TileConfig {
    palette: u8,
    start_row: u8,
    reserved: [u8; 14],
    bytes_per_row: [u16; 16],
    rows: [u8; 16],
    reserved_end: [u8; 16],
}

static CONFIG: TileConfig = TileConfig {
    palette: 1,
    start_row: 0,
    reserved: [0; 14],
    bytes_per_row: [64, 64, 64, 64, 64, 64, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0],
    rows: [16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0],
    reserved_end: [0; 16],
};

/// What multiplies a [`PackedWeight`]: both read the same layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// AMX tiles (`tdpbf16ps`), where [`available`].
    Tiles,
    /// AVX-512 BF16 dot products (`vdpbf16ps`), where [`avx512::available`].
    Dot,
}

impl Engine {
    /// Whether this process can run it.
    pub fn available(self) -> bool {
        match self {
            Engine::Tiles => available(),
            Engine::Dot => avx512::available(),
        }
    }
}

/// The weight of a linear layer, `(outputs, inputs)`, laid out for the instructions that
/// multiply it ([`Packing`]).
pub struct PackedWeight {
    inputs: usize,
    outputs: usize,
    packing: Packing,
}

/// How a [`PackedWeight`] holds its weight.
enum Packing {
    /// bf16 tiles for `engine`: for each 16 outputs and each 32 inputs, one tile of 16 rows
    /// (pairs of inputs) × 16 outputs × 2, the layout `tdpbf16ps` multiplies by (and, row by
    /// row, `vdpbf16ps`).
    Bf16 { tiles: Vec<u16>, engine: Engine },
    /// int8 for AVX-512 VNNI ([`PackedWeight::int8`]).
    Int8(Int8Weight),
}

impl PackedWeight {
    /// Packs a row-major `(outputs, inputs)` weight for `engine`; `None` when the shape does not
    /// fall on whole blocks (inputs a multiple of 32, outputs of 32) or the engine cannot run
    /// here, where `sgemm` serves instead.
    pub fn new(weight: &[f32], outputs: usize, inputs: usize, engine: Engine) -> Option<Self> {
        if !engine.available()
            || inputs == 0
            || outputs == 0
            || !inputs.is_multiple_of(K_STEP)
            || !outputs.is_multiple_of(BLOCK)
            || weight.len() != outputs * inputs
        {
            return None;
        }
        // Rounded as the activations are, then laid out tile by tile.
        let mut rounded = Vec::with_capacity(weight.len());
        to_bf16(weight, &mut rounded);
        let k_tiles = inputs / K_STEP;
        let mut tiles = vec![0u16; outputs * inputs];
        for n_tile in 0..outputs / COLS {
            for k_tile in 0..k_tiles {
                let tile = &mut tiles[(n_tile * k_tiles + k_tile) * TILE_VALUES..][..TILE_VALUES];
                for pair in 0..ROWS {
                    for col in 0..COLS {
                        let row = &rounded[(n_tile * COLS + col) * inputs..][..inputs];
                        let k = k_tile * K_STEP + 2 * pair;
                        tile[(pair * COLS + col) * 2..][..2].copy_from_slice(&row[k..k + 2]);
                    }
                }
            }
        }
        Some(PackedWeight {
            inputs,
            outputs,
            packing: Packing::Bf16 { tiles, engine },
        })
    }

    /// Packs a row-major `(outputs, inputs)` weight in int8 for AVX-512 VNNI, smoothed by the
    /// largest `|input|` of each input channel on calibration texts ([`Int8Weight`]); `None`
    /// where VNNI or AVX-512 BF16 (which rounds a GELU output) is missing, or the shape does not
    /// fall on whole blocks.
    pub fn int8(weight: &[f32], outputs: usize, inputs: usize, input_max: &[f32]) -> Option<Self> {
        if !avx512::available() || !outputs.is_multiple_of(BLOCK) {
            return None;
        }
        Some(PackedWeight {
            inputs,
            outputs,
            packing: Packing::Int8(Int8Weight::new(weight, outputs, inputs, input_max)?),
        })
    }

    /// Whether the weight is held in int8 ([`PackedWeight::int8`]).
    #[cfg(test)]
    pub fn is_int8(&self) -> bool {
        matches!(self.packing, Packing::Int8(_))
    }

    /// `then(start + x·Wᵀ)`, `(rows, outputs)`, for `x` of `(rows, inputs)`, both row-major:
    /// the accumulators start from `start` (a bias or a residual) and whole blocks of 32 rows
    /// are stored straight into a new buffer, which is neither copied nor zeroed first; `then`
    /// (GELU, a layer norm) runs on each block of at most 32 whole rows while it is still in
    /// cache.
    pub fn matmul(&self, x: Input<'_>, start: Start<'_>, then: &EachBlock<'_>) -> Vec<f32> {
        self.product(x, start, then, Output::F32)
    }

    /// [`PackedWeight::matmul`] rounded to bf16 after `then`, for a product whose output only
    /// feeds another (GELU's into the second feed-forward layer): each block goes out rounded,
    /// so the f32 values are never stored whole, nor rounded again by the next product.
    pub fn matmul_bf16(&self, x: Input<'_>, start: Start<'_>, then: &EachBlock<'_>) -> Vec<u16> {
        self.product(x, start, then, Output::Bf16)
    }

    /// The product in a new vector of `T`, which [`PackedWeight::run`] fills through
    /// `output` (the [`Output`] variant writing `T`).
    fn product<T>(
        &self,
        x: Input<'_>,
        start: Start<'_>,
        then: &EachBlock<'_>,
        output: fn(*mut T) -> Output,
    ) -> Vec<T> {
        let rows = self.rows_of(x);
        let len = rows * self.outputs;
        let mut out = Vec::with_capacity(len);
        self.run(
            (x, rows),
            start,
            then,
            output(out.spare_capacity_mut().as_mut_ptr().cast()),
        );
        // SAFETY: `run` wrote the `len` values of every row.
        unsafe { out.set_len(len) };
        out
    }

    /// The rows of `x`; panics unless it is whole rows of `inputs`.
    fn rows_of(&self, x: Input<'_>) -> usize {
        let len = match x {
            Input::F32(x) => x.len(),
            Input::Bf16(x) => x.len(),
        };
        assert!(
            len.is_multiple_of(self.inputs),
            "bf16 product: shapes do not fit"
        );
        len / self.inputs
    }

    /// The product block by block into `out`, which has room for `rows × outputs` values; `x`
    /// holds `rows` rows ([`PackedWeight::rows_of`]).
    fn run(
        &self,
        (x, rows): (Input<'_>, usize),
        start: Start<'_>,
        then: &EachBlock<'_>,
        out: Output,
    ) {
        let (k, n) = (self.inputs, self.outputs);
        // Packing checked it; a weight does not move between processes.
        let runs = match &self.packing {
            Packing::Bf16 { engine, .. } => engine.available(),
            Packing::Int8(_) => vnni::available(),
        };
        assert!(runs, "products where they cannot run");
        let start_len = match start {
            Start::EveryRow(row) => row.len() == n,
            Start::Rows(rows_in) => rows_in.len() == rows * n,
        };
        assert!(start_len, "bf16 product: shapes do not fit");
        if rows == 0 {
            return;
        }
        // The bf16 activations, taken out of this thread's buffer for the call: while the
        // blocks run, rayon may have this thread run another product's blocks, which then
        // finds the buffer empty instead of borrowed.
        let mut a = ACTIVATIONS.with_borrow_mut(std::mem::take);
        a.clear();
        // int8 products round their inputs block by block ([`Int8Weight::block`]).
        if let Packing::Bf16 { .. } = self.packing {
            match x {
                Input::F32(x) => to_bf16(x, &mut a),
                Input::Bf16(x) => a.extend_from_slice(x),
            }
            a.resize(rows.div_ceil(BLOCK) * BLOCK * k, 0);
        }
        let out = Shared(out);
        // Blocks run in parallel: a single sequence (a query) has only one batch to spread
        // over the cores, and a batch's products keep the other cores busy otherwise.
        (0..rows.div_ceil(BLOCK))
            .into_par_iter()
            .for_each(|b| self.run_block((&a, x), (b * BLOCK, rows), start, then, out));
        ACTIVATIONS.with_borrow_mut(|kept| *kept = a);
    }

    /// Rows `first..first + 32` (or up to `rows`) of [`PackedWeight::run`]'s product, into
    /// `out`, from `a` (the bf16 activations, padded to whole blocks; for int8, `x` itself),
    /// with this thread's scratch buffers. No other block writes these rows.
    #[allow(clippy::many_single_char_names)] // a matrix product's names
    fn run_block(
        &self,
        (a, x): (&[u16], Input<'_>),
        (first, rows): (usize, usize),
        start: Start<'_>,
        then: &EachBlock<'_>,
        Shared(out): Shared,
    ) {
        let (k, n) = (self.inputs, self.outputs);
        let count = BLOCK.min(rows - first);
        SCRATCH.with_borrow_mut(|scratch| {
            scratch.c.resize(BLOCK * n, 0.0);
            // A partial block's residual goes through a zero-padded copy of its rows.
            let block_start = match start {
                Start::EveryRow(row) => (row, 0),
                Start::Rows(all) if count == BLOCK => (&all[first * n..(first + BLOCK) * n], n),
                Start::Rows(all) => {
                    scratch.r.clear();
                    scratch.r.extend_from_slice(&all[first * n..]);
                    scratch.r.resize(BLOCK * n, 0.0);
                    (scratch.r.as_slice(), n)
                }
            };
            // Whole blocks of an f32 output are computed in place, the rest in `scratch.c`.
            let c = match out {
                Output::F32(dst) if count == BLOCK => dst.wrapping_add(first * n),
                _ => scratch.c.as_mut_ptr(),
            };
            let tiles = matches!(
                self.packing,
                Packing::Bf16 {
                    engine: Engine::Tiles,
                    ..
                }
            );
            // SAFETY: the engine can run (`run` checked it). For tiles: the CPU has AMX and
            // tile data is granted; the configuration is 64 valid bytes, loaded on this thread
            // and released before the block ends (nothing in it yields to another task).
            // `c` has 32 rows of `n` values: the output's rows `first..first + 32` (inside its
            // capacity, written by no other block) or `scratch.c`; they are all written by
            // `block` before they are read as a slice. The copy and the rounding write rows
            // `first..first + count` of the output, inside its capacity, from `scratch.c`,
            // which does not overlap it.
            unsafe {
                if tiles {
                    asm!("ldtilecfg [{}]", in(reg) &raw const CONFIG, options(nostack, readonly));
                }
                match &self.packing {
                    Packing::Int8(int8) => {
                        let read_row = |r: usize, row: &mut [f32]| x.read_row(r, row);
                        int8.block(&read_row, (first, count), block_start, c);
                    }
                    Packing::Bf16 { tiles, engine } => {
                        self.block((tiles, *engine), &a[first * k..], block_start, c);
                    }
                }
                if tiles {
                    asm!("tilerelease", options(nostack, nomem));
                }
                then(std::slice::from_raw_parts_mut(c, count * n));
                match out {
                    Output::F32(dst) if count < BLOCK => {
                        std::ptr::copy_nonoverlapping(c, dst.add(first * n), count * n);
                    }
                    Output::F32(_) => {}
                    // `available` implies AVX-512 BF16.
                    Output::Bf16(dst) => {
                        avx512::round_bf16(&scratch.c[..count * n], dst.add(first * n));
                    }
                }
            }
        });
    }

    /// One block of 32 rows: `c` (32 × outputs, f32) = start + `a` (32 × inputs, bf16) · Wᵀ,
    /// with `tiles` (this weight's bf16 tiles) on `engine`, where `start` is 32 rows `stride`
    /// values apart (stride 0: one row under all 32).
    ///
    /// # Safety
    /// The engine can run (and tiles are configured for [`Engine::Tiles`]), and `c` points to
    /// 32 × outputs writable values.
    unsafe fn block(
        &self,
        (tiles, engine): (&[u16], Engine),
        a: &[u16],
        (start, stride): (&[f32], usize),
        c: *mut f32,
    ) {
        let (k, n) = (self.inputs, self.outputs);
        assert!(a.len() >= BLOCK * k);
        assert!(start.len() >= (BLOCK - 1) * stride + n);
        if engine == Engine::Dot {
            // SAFETY: AVX-512 BF16 is there (the engine can run); `a` has 32 rows of `k`
            // (even) values, the tiles every stream of the `n` (a multiple of 32) outputs,
            // `start` 32 rows (or one) of `n`, `c` (by the caller) 32 rows of `n`.
            unsafe {
                avx512::dot_block(
                    (a.as_ptr(), BLOCK, k, k),
                    (tiles.as_ptr(), n),
                    (c, n),
                    Some((start.as_ptr(), stride)),
                );
            }
            return;
        }
        let k_tiles = k / K_STEP;
        for pair in 0..n / BLOCK {
            // SAFETY: tiles are configured by `matmul`; `a` has 32 rows of `k` bf16 values;
            // `start` has 32 rows (or one, read 32 times with stride 0) of `n` values, read
            // from column `pair·32`; the weight tiles of output columns `pair·32 ..+32` are
            // whole tiles of `tiles`; `c` has (by the caller) 32 rows of `n` values.
            unsafe {
                let weights = tiles.as_ptr().add(2 * pair * k_tiles * TILE_VALUES);
                product_block(
                    (a.as_ptr(), k),
                    (weights, weights.add(k_tiles * TILE_VALUES)),
                    k_tiles,
                    (c.add(pair * BLOCK), n),
                    Some((start.as_ptr().add(pair * BLOCK), stride)),
                );
            }
        }
    }
}

/// Whether [`attention`] can run heads of `head` values on `engine`: the engine can run here
/// and a head is a whole number of tile rows (32 bf16 values, as all-MiniLM-L6-v2's 12 heads
/// of 32 are).
pub fn attention_fits(head: usize, engine: Engine) -> bool {
    head > 0 && head.is_multiple_of(K_STEP) && engine.available()
}

/// Self-attention of one sequence in bfloat16 with f32 accumulation, its two products on
/// `engine` (AMX tiles, or AVX-512 BF16 dot products over the same packed tiles): `qkv` is
/// its fused query/key/value projection, `seq × 3·hidden` (queries already scaled by
/// `1/√head`), `mask` its additive key mask (`seq`), `out` the context, `seq × hidden`, heads
/// side by side. The scores are f32, the softmax f32 rounded to bf16 for the second product.
/// The sequence is padded to whole 32-row blocks: padded keys get probability 0. Padding
/// tokens (masked at the end of `mask`) get no softmax, and their context is left 0: no key
/// attends them and the pooling drops them. Must only be called when [`attention_fits`] holds.
pub fn attention(qkv: &[f32], mask: &[f32], heads: usize, out: &mut [f32], engine: Engine) {
    let seq = mask.len();
    let hidden = out.len() / seq.max(1);
    let head = hidden / heads.max(1);
    let width = 3 * hidden;
    assert!(
        attention_fits(head, engine),
        "bf16 attention called where it does not fit"
    );
    assert!(
        heads * head == hidden && qkv.len() == seq * width && out.len() == seq * hidden,
        "bf16 attention: shapes do not fit"
    );
    if seq == 0 {
        return;
    }
    let padded = seq.div_ceil(BLOCK) * BLOCK;
    // Padding is at the end: its keys are masked, and its queries' context (dropped by the
    // pooling, attended by no key) is left 0 instead of computed.
    let attended = mask
        .iter()
        .rposition(|&m| m == 0.0)
        .map_or(0, |last| last + 1);
    ATTENTION.with_borrow_mut(|s| {
        s.qkv.clear();
        to_bf16(qkv, &mut s.qkv);
        s.qkv.resize(padded * width, 0);
        s.scores.resize(padded * padded, 0.0);
        // Each head writes probabilities of the attended queries for the attended keys (to
        // whole vectors); the rest stays 0, set here rather than by clearing all of it.
        s.probs.resize(padded * padded, 0);
        let written = attended.div_ceil(SOFTMAX_LANES) * SOFTMAX_LANES;
        for (i, row) in s.probs.chunks_exact_mut(padded).enumerate() {
            row[if i < attended { written } else { 0 }..].fill(0);
        }
        s.keys.resize(padded * head, 0);
        s.values.resize(padded * head, 0);
        s.context.resize(padded * head, 0.0);
        // Padded keys are masked like padding, so every softmax row is whole tiles long.
        s.mask.clear();
        s.mask.extend_from_slice(mask);
        s.mask.resize(padded, f32::MIN);
        let tiles = engine == Engine::Tiles;
        if tiles {
            // SAFETY: `attention_fits` holds, so the CPU has AMX and tile data is granted;
            // the configuration is 64 valid bytes; tiles are released before returning.
            unsafe {
                asm!("ldtilecfg [{}]", in(reg) &raw const CONFIG, options(nostack, readonly));
            }
        }
        for h in 0..heads {
            s.head(
                engine,
                h * head,
                (attended, written, padded),
                (head, hidden),
            );
            for (row, context) in out
                .chunks_exact_mut(hidden)
                .zip(s.context.chunks_exact(head))
            {
                row[h * head..(h + 1) * head].copy_from_slice(context);
            }
        }
        if tiles {
            // SAFETY: leaves the tiles in their initial state; no tile is used afterwards.
            unsafe { asm!("tilerelease", options(nostack, nomem)) }
        }
    });
}

/// Per-thread buffers of [`attention`], kept between calls.
#[derive(Default)]
struct AttentionScratch {
    /// The sequence's `qkv` in bf16, padded with zero rows.
    qkv: Vec<u16>,
    /// One head's keys as `tdpbf16ps` operand tiles (16 keys × 32 values each).
    keys: Vec<u16>,
    /// One head's values as operand tiles (32 keys × 16 values each).
    values: Vec<u16>,
    /// Scores, `padded × padded` (the softmax leaves its exponentials there).
    scores: Vec<f32>,
    /// Probabilities in bf16, `padded × padded`; rows of padding tokens stay zero.
    probs: Vec<u16>,
    /// One head's context, `padded × head`.
    context: Vec<f32>,
    /// The key mask, padded keys masked.
    mask: Vec<f32>,
}

impl AttentionScratch {
    /// One head, whose query starts at column `offset` of `qkv` (its key at `hidden + offset`,
    /// its value at `2·hidden + offset`), into `context`. The softmax runs on the queries
    /// before `attended`, over the keys before `written` (`attended` rounded up to whole
    /// vectors). For [`Engine::Tiles`], tiles must be configured.
    fn head(
        &mut self,
        engine: Engine,
        offset: usize,
        (attended, written, padded): (usize, usize, usize),
        (head, hidden): (usize, usize),
    ) {
        let width = 3 * hidden;
        let k_tiles = head / K_STEP;
        // Keys: tile (key block of 16, k step) row p, column j = values 2p, 2p+1 of key j.
        for block in 0..padded / ROWS {
            for kt in 0..k_tiles {
                let tile = &mut self.keys[(block * k_tiles + kt) * TILE_VALUES..][..TILE_VALUES];
                for j in 0..ROWS {
                    let key = &self.qkv
                        [(block * ROWS + j) * width + hidden + offset + kt * K_STEP..][..K_STEP];
                    for pair in 0..ROWS {
                        tile[(pair * COLS + j) * 2..][..2].copy_from_slice(&key[2 * pair..][..2]);
                    }
                }
            }
        }
        // Values: tile (column block of 16, step of 32 keys) row p, column c = value c of
        // keys 2p and 2p+1.
        let steps = padded / K_STEP;
        for cb in 0..head / COLS {
            for step in 0..steps {
                let tile = &mut self.values[(cb * steps + step) * TILE_VALUES..][..TILE_VALUES];
                for pair in 0..ROWS {
                    for half in 0..2 {
                        let key = step * K_STEP + 2 * pair + half;
                        let value =
                            &self.qkv[key * width + 2 * hidden + offset + cb * COLS..][..COLS];
                        for (c, &v) in value.iter().enumerate() {
                            tile[(pair * COLS + c) * 2 + half] = v;
                        }
                    }
                }
            }
        }
        // Scores: queries · keysᵀ, 32 × 32 blocks.
        let blocks = padded / BLOCK;
        for rb in 0..blocks {
            for cb in 0..blocks {
                // SAFETY: operand tiles read 16 rows of 64 bytes: queries from `qkv` rows
                // `rb·32 .. rb·32 + 32` (padded rows exist), columns `offset + kt·32 ..` within
                // the query part; key tiles are whole tiles of `keys`. The accumulators are
                // stored into rows `rb·32 ..` and columns `cb·32 .. cb·32 + 32` of `scores`
                // (`padded × padded`).
                unsafe {
                    zero_start_block(
                        engine,
                        (self.qkv.as_ptr().add(rb * BLOCK * width + offset), width),
                        self.keys.as_ptr().add(2 * cb * k_tiles * TILE_VALUES),
                        k_tiles,
                        (
                            self.scores
                                .as_mut_ptr()
                                .add(rb * BLOCK * padded + cb * BLOCK),
                            padded,
                        ),
                    );
                }
            }
        }
        for (row, probs) in self
            .scores
            .chunks_exact_mut(padded)
            .zip(self.probs.chunks_exact_mut(padded))
            .take(attended)
        {
            // SAFETY: `attention_fits` checked the engine, and both need AVX-512 BF16; the three are
            // `written ≤ padded` long, a multiple of 16.
            unsafe {
                softmax_bf16(
                    &mut row[..written],
                    &self.mask[..written],
                    &mut probs[..written],
                );
            };
        }
        // Context: probabilities · values, 32 rows × 32 columns at a time.
        for rb in 0..blocks {
            for cp in 0..head / BLOCK {
                // SAFETY: probability tiles read rows `rb·32 ..+32` of `probs` (`padded ×
                // padded`) at columns `step·32 ..+32`; value tiles are whole tiles of
                // `values`; the accumulators go to rows `rb·32 ..+32`, columns `cp·32 ..+32`
                // of `context` (`padded × head`).
                unsafe {
                    zero_start_block(
                        engine,
                        (self.probs.as_ptr().add(rb * BLOCK * padded), padded),
                        self.values.as_ptr().add(2 * cp * steps * TILE_VALUES),
                        steps,
                        (
                            self.context
                                .as_mut_ptr()
                                .add(rb * BLOCK * head + cp * BLOCK),
                            head,
                        ),
                    );
                }
            }
        }
    }
}

/// `c = a · [b0 b1]`, a 32 × 32 f32 block of attention, on `engine`: `a` is 32 rows of bf16
/// `a_row` values apart, `32·steps` long; `b0` the packed tiles of the block's first 16
/// columns, `steps` of them, and the second 16's right after; `c` has rows `c_row` apart.
///
/// # Safety
/// The engine can run (and tiles are configured for [`Engine::Tiles`]); the pointers have
/// those values behind them.
unsafe fn zero_start_block(
    engine: Engine,
    (a, a_row): (*const u16, usize),
    b0: *const u16,
    steps: usize,
    (c, c_row): (*mut f32, usize),
) {
    // SAFETY: the caller's: `b0` is followed by the second half's `steps` tiles, which is the
    // stream layout `dot_block` reads for 32 outputs of `32·steps` inputs.
    unsafe {
        match engine {
            Engine::Tiles => product_block(
                (a, a_row),
                (b0, b0.add(steps * TILE_VALUES)),
                steps,
                (c, c_row),
                None,
            ),
            Engine::Dot => avx512::dot_block(
                (a, BLOCK, a_row, steps * K_STEP),
                (b0, BLOCK),
                (c, c_row),
                None,
            ),
        }
    }
}

/// `c = start + a · [b0 b1]`, a 32 × 32 f32 block: `a` is 32 rows of bf16 `a_row` values
/// apart, read 32 values further at each of `steps` steps; `b0` and `b1` are the packed tiles
/// of the two 16-column halves, one tile further at each step; `c` has rows `c_row` values
/// apart; `start` is 32 rows `stride` values apart (stride 0: one row under all 32), or none
/// (zeros).
///
/// # Safety
/// AMX is usable and configured; `a` has 32 rows of `32·steps` values, `b0` and `b1` `steps`
/// tiles each, `c` 32 writable rows of 32 values and `start` 32 rows (or one) of 32 values.
unsafe fn product_block(
    (a, a_row): (*const u16, usize),
    (b0, b1): (*const u16, *const u16),
    steps: usize,
    (c, c_row): (*mut f32, usize),
    start: Option<(*const f32, usize)>,
) {
    // SAFETY: the caller's.
    unsafe {
        if let Some((s0, stride)) = start {
            let s2 = s0.add(ROWS * stride);
            asm!(
                "tileloadd tmm0, [{s0} + {s}*1]",
                "tileloadd tmm1, [{s1} + {s}*1]",
                "tileloadd tmm2, [{s2} + {s}*1]",
                "tileloadd tmm3, [{s3} + {s}*1]",
                s0 = in(reg) s0, s1 = in(reg) s0.add(COLS), s2 = in(reg) s2, s3 = in(reg) s2.add(COLS),
                s = in(reg) stride * 4,
                options(nostack, readonly),
            );
        } else {
            asm!(
                "tilezero tmm0",
                "tilezero tmm1",
                "tilezero tmm2",
                "tilezero tmm3",
                options(nostack, nomem)
            );
        }
        for step in 0..steps {
            product_step(
                (
                    a.add(step * K_STEP),
                    a.add(ROWS * a_row + step * K_STEP),
                    a_row * 2,
                ),
                (b0.add(step * TILE_VALUES), b1.add(step * TILE_VALUES)),
            );
        }
        store_block(c, c_row);
    }
}

/// `tmm0..tmm3 += [a0; a1] · [b0 b1]`: two 16-row operand tiles at `a0` and `a1` (rows
/// `stride` bytes apart) times two packed tiles.
///
/// # Safety
/// AMX is usable and configured; each pointer has a whole tile behind it.
unsafe fn product_step(
    (a0, a1, stride): (*const u16, *const u16, usize),
    (b0, b1): (*const u16, *const u16),
) {
    // SAFETY: the caller's.
    unsafe {
        asm!(
            "tileloadd tmm4, [{a0} + {sa}*1]",
            "tileloadd tmm5, [{a1} + {sa}*1]",
            "tileloadd tmm6, [{b0} + {sb}*1]",
            "tileloadd tmm7, [{b1} + {sb}*1]",
            "tdpbf16ps tmm0, tmm4, tmm6",
            "tdpbf16ps tmm1, tmm4, tmm7",
            "tdpbf16ps tmm2, tmm5, tmm6",
            "tdpbf16ps tmm3, tmm5, tmm7",
            a0 = in(reg) a0,
            a1 = in(reg) a1,
            b0 = in(reg) b0,
            b1 = in(reg) b1,
            sa = in(reg) stride,
            sb = in(reg) COLS * 4,
            options(nostack, readonly),
        );
    }
}

/// Stores `tmm0..tmm3` as the 32 × 32 f32 block at `c0`, rows `row` values apart.
///
/// # Safety
/// AMX is usable and configured; 32 rows of 32 values at `c0` are writable.
unsafe fn store_block(c0: *mut f32, row: usize) {
    // SAFETY: the caller's.
    unsafe {
        let c1 = c0.add(COLS);
        let c2 = c0.add(ROWS * row);
        let c3 = c2.add(COLS);
        asm!(
            "tilestored [{c0} + {s}*1], tmm0",
            "tilestored [{c1} + {s}*1], tmm1",
            "tilestored [{c2} + {s}*1], tmm2",
            "tilestored [{c3} + {s}*1], tmm3",
            c0 = in(reg) c0, c1 = in(reg) c1, c2 = in(reg) c2, c3 = in(reg) c3,
            s = in(reg) row * 4,
            options(nostack),
        );
    }
}

/// The activations a [`PackedWeight`] multiplies: f32 (rounded to bf16 first), or already bf16
/// (the output of [`PackedWeight::matmul_bf16`]).
#[derive(Clone, Copy)]
pub enum Input<'a> {
    F32(&'a [f32]),
    Bf16(&'a [u16]),
}

impl Input<'_> {
    /// Row `r` (rows as long as `row`) into `row`, in f32.
    fn read_row(self, r: usize, row: &mut [f32]) {
        let (at, k) = (r * row.len(), row.len());
        match self {
            Input::F32(x) => row.copy_from_slice(&x[at..][..k]),
            Input::Bf16(x) => x[at..][..k]
                .reinterpret_cast::<bf16>()
                .convert_to_f32_slice(row),
        }
    }
}

/// Where [`PackedWeight::run`] writes: the spare capacity of the output vector.
#[derive(Clone, Copy)]
enum Output {
    F32(*mut f32),
    Bf16(*mut u16),
}

/// An [`Output`] that the parallel blocks of [`PackedWeight::run`] share.
#[derive(Clone, Copy)]
struct Shared(Output);

// SAFETY: each block writes only its own rows of the output, which outlives the blocks (`run`
// returns after all of them), and nothing reads it meanwhile.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

/// What runs on each block of a product's output while it is in cache (GELU, a layer norm).
pub type EachBlock<'a> = dyn Fn(&mut [f32]) + Sync + 'a;

/// Where the accumulators of [`PackedWeight::matmul`] start.
#[derive(Clone, Copy)]
pub enum Start<'a> {
    /// The same row (`outputs` values, a bias) under every output row.
    EveryRow(&'a [f32]),
    /// A matrix of the output's shape (a residual), row by row.
    Rows(&'a [f32]),
}

/// Per-thread buffers of a block: padded copies of a partial block's output and starting rows.
#[derive(Default)]
struct Scratch {
    c: Vec<f32>,
    r: Vec<f32>,
}

thread_local! {
    /// The bf16 activations of a product, kept between calls.
    static ACTIVATIONS: RefCell<Vec<u16>> = const { RefCell::new(Vec::new()) };
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
    static ATTENTION: RefCell<AttentionScratch> = RefCell::new(AttentionScratch::default());
}

#[cfg(test)]
mod tests {
    use half::bf16;

    use super::*;

    fn reference(x: &[f32], w: &[f32], out: &mut [f32], k: usize, n: usize) {
        let round = |v: f32| bf16::from_f32(v).to_f32();
        for (xr, or) in x.chunks_exact(k).zip(out.chunks_exact_mut(n)) {
            for (o, wr) in or.iter_mut().zip(w.chunks_exact(k)) {
                let dot: f64 = xr
                    .iter()
                    .zip(wr)
                    .map(|(&a, &b)| f64::from(round(a)) * f64::from(round(b)))
                    .sum();
                *o += dot as f32;
            }
        }
    }

    #[test]
    fn matches_a_bf16_reference_on_whole_and_partial_blocks() {
        // 64 outputs: one group of four 16-output streams for the dot products; 96: a group of
        // four and one of two. 320 inputs: two passes over the input pairs.
        for (engine, n, k) in [
            (Engine::Tiles, 64, 96),
            (Engine::Dot, 64, 96),
            (Engine::Dot, 96, 96),
            (Engine::Dot, 96, 320),
        ] {
            if !engine.available() {
                // Not on this CPU: the path cannot run here (the Python tests say so).
                continue;
            }
            for rows in [1, 31, 32, 33, 70] {
                let x: Vec<f32> = (0..rows * k)
                    .map(|i| ((i * 37 % 101) as f32 - 50.0) / 17.0)
                    .collect();
                let w: Vec<f32> = (0..n * k)
                    .map(|i| ((i * 53 % 89) as f32 - 44.0) / 29.0)
                    .collect();
                let start: Vec<f32> = (0..rows * n).map(|i| (i % 7) as f32).collect();
                let close = |got: &[f32], want: &[f32]| {
                    assert_eq!(got.len(), want.len());
                    for (g, w) in got.iter().zip(want) {
                        assert!(
                            (g - w).abs() <= 1e-3 * w.abs().max(1.0),
                            "{engine:?}, {n}×{k}, {rows} rows: {g} vs {w}"
                        );
                    }
                };
                let mut want = start.clone();
                reference(&x, &w, &mut want, k, n);
                let packed = PackedWeight::new(&w, n, k, engine).unwrap();
                close(
                    &packed.matmul(Input::F32(&x), Start::Rows(&start), &|_| {}),
                    &want,
                );
                // One starting row under every row: the residual's first.
                let mut want = start[..n].repeat(rows);
                reference(&x, &w, &mut want, k, n);
                close(
                    &packed.matmul(Input::F32(&x), Start::EveryRow(&start[..n]), &|_| {}),
                    &want,
                );
                // Rounded on the way out, and read already rounded: the same arithmetic.
                let f32_out = packed.matmul(Input::F32(&x), Start::EveryRow(&start[..n]), &|_| {});
                let mut rounded = Vec::new();
                to_bf16(&f32_out, &mut rounded);
                let bf16_out =
                    packed.matmul_bf16(Input::F32(&x), Start::EveryRow(&start[..n]), &|_| {});
                assert_eq!(bf16_out, rounded, "{engine:?}, {n}×{k}, {rows} rows");
                let mut x_bf16 = Vec::new();
                to_bf16(&x, &mut x_bf16);
                let from_bf16 =
                    packed.matmul(Input::Bf16(&x_bf16), Start::EveryRow(&start[..n]), &|_| {});
                assert!(from_bf16
                    .iter()
                    .zip(&f32_out)
                    .all(|(a, b)| a.to_bits() == b.to_bits()));
            }
        }
    }

    #[test]
    fn shapes_off_the_blocks_are_not_packed() {
        for engine in [Engine::Tiles, Engine::Dot] {
            assert!(PackedWeight::new(&[0.0; 30 * 32], 30, 32, engine).is_none());
            assert!(PackedWeight::new(&[0.0; 32 * 20], 32, 20, engine).is_none());
            let whole = PackedWeight::new(&[0.0; 32 * 32], 32, 32, engine);
            assert_eq!(whole.is_some(), engine.available(), "{engine:?}");
        }
    }
}
