//! Linear-layer products on Intel AMX tiles, in bfloat16 with f32 accumulation.
//!
//! CPUs with AMX (Intel Xeon from Sapphire Rapids on) multiply 16×32 bf16 tiles by 32×16 ones
//! into 16×16 f32 accumulators in one instruction, many times the f32 throughput of their
//! AVX-512 units. The encoder's linear layers are most of its arithmetic, so on such a CPU
//! [`PackedWeight::matmul_acc`] replaces `sgemm` there: the weights are rounded to bf16 and laid
//! out as tiles once, at load, the activations are rounded to bf16 per call, and the products
//! are accumulated in f32 onto the output, which already holds the bias (and residual).
//!
//! No library does this for Rust (OpenBLAS's bf16 products are not in the Debian build the
//! wheel links, and not on AMX before 0.3.2x), so the kernel is written here with inline
//! assembly, since Rust's AMX intrinsics are unstable. It is small: one tile configuration
//! (eight 16×64-byte tiles), 2×2 accumulator tiles per 32×32 block of the output, operands
//! loaded straight from the bf16 rows and the packed weights.
//!
//! Linux hands tile data to a process only on request (`arch_prctl(ARCH_REQ_XCOMP_PERM)`);
//! [`available`] asks once and says whether the path can run.
#![allow(unsafe_code)]

use std::arch::asm;
use std::arch::x86_64::__cpuid_count;
use std::cell::RefCell;
use std::sync::OnceLock;

use super::kernels::to_bf16;

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

const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
const XFEATURE_XTILEDATA: libc::c_long = 18;

/// Whether this process can run AMX bf16 products: the CPU has AMX-TILE and AMX-BF16 and the
/// kernel granted tile data. Asked once.
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| cpu_has_amx_bf16() && tile_data_granted())
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

/// The weight of a linear layer, `(outputs, inputs)`, as bf16 tiles: for each 16 outputs and
/// each 32 inputs, one tile of 16 rows (pairs of inputs) × 16 outputs × 2, the layout
/// `tdpbf16ps` multiplies by.
pub struct PackedWeight {
    inputs: usize,
    outputs: usize,
    tiles: Vec<u16>,
}

impl PackedWeight {
    /// Packs a row-major `(outputs, inputs)` weight; `None` when the shape does not fall on
    /// whole blocks (inputs a multiple of 32, outputs of 32), where `sgemm` serves instead.
    pub fn new(weight: &[f32], outputs: usize, inputs: usize) -> Option<Self> {
        if inputs == 0
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
            tiles,
        })
    }

    /// `out += x·Wᵀ` for `x` of `(rows, inputs)` and `out` of `(rows, outputs)`, both
    /// row-major. Must only be called when [`available`] is true.
    pub fn matmul_acc(&self, x: &[f32], out: &mut [f32]) {
        let (k, n) = (self.inputs, self.outputs);
        let rows = x.len() / k;
        assert!(available(), "AMX products called without AMX");
        assert!(
            x.len() == rows * k && out.len() == rows * n,
            "AMX product: shapes do not fit"
        );
        if rows == 0 {
            return;
        }
        SCRATCH.with_borrow_mut(|scratch| {
            let padded = rows.div_ceil(BLOCK) * BLOCK;
            scratch.a.clear();
            to_bf16(x, &mut scratch.a);
            scratch.a.resize(padded * k, 0);
            let full = rows / BLOCK * BLOCK;
            // SAFETY: `available()` holds, so the CPU has AMX and tile data is granted; the
            // configuration is 64 valid bytes; tiles are released before returning.
            unsafe {
                asm!("ldtilecfg [{}]", in(reg) &raw const CONFIG, options(nostack, readonly));
            }
            for block in 0..full / BLOCK {
                let c = &mut out[block * BLOCK * n..(block + 1) * BLOCK * n];
                self.block(&scratch.a[block * BLOCK * k..], c);
            }
            if full < rows {
                // The last, partial block goes through a zero-padded copy of its rows.
                let tail = &mut out[full * n..];
                scratch.c.clear();
                scratch.c.extend_from_slice(tail);
                scratch.c.resize(BLOCK * n, 0.0);
                self.block(&scratch.a[full * k..], &mut scratch.c);
                tail.copy_from_slice(&scratch.c[..tail.len()]);
            }
            // SAFETY: leaves the tiles in their initial state; no tile is used afterwards.
            unsafe { asm!("tilerelease", options(nostack, nomem)) }
        });
    }

    /// One block of 32 rows: `c` (32 × outputs, f32) += `a` (32 × inputs, bf16) · Wᵀ.
    fn block(&self, a: &[u16], c: &mut [f32]) {
        let (k, n) = (self.inputs, self.outputs);
        assert!(a.len() >= BLOCK * k && c.len() >= BLOCK * n);
        let k_tiles = k / K_STEP;
        let (a_stride, c_stride, w_stride) = (k * 2, n * 4, COLS * 4);
        let a0 = a.as_ptr();
        // SAFETY: 16 rows below `a0` at `a_stride` bytes are the block's first half.
        let a1 = unsafe { a0.add(ROWS * k) };
        for pair in 0..n / BLOCK {
            // SAFETY: every pointer below stays inside its slice: `c` has 32 rows of `n`
            // values, accumulator tiles cover columns `pair·32 .. pair·32 + 32` of rows 0–31;
            // operand tiles read 16 rows of 64 bytes from `a` (32 rows of `k` bf16 values) and
            // whole packed tiles of `self.tiles`. Tiles 0–7 are configured by `matmul_acc`.
            unsafe {
                let c0 = c.as_mut_ptr().add(pair * BLOCK);
                let c1 = c0.add(COLS);
                let c2 = c0.add(ROWS * n);
                let c3 = c2.add(COLS);
                asm!(
                    "tileloadd tmm0, [{c0} + {s}*1]",
                    "tileloadd tmm1, [{c1} + {s}*1]",
                    "tileloadd tmm2, [{c2} + {s}*1]",
                    "tileloadd tmm3, [{c3} + {s}*1]",
                    c0 = in(reg) c0, c1 = in(reg) c1, c2 = in(reg) c2, c3 = in(reg) c3,
                    s = in(reg) c_stride,
                    options(nostack, readonly),
                );
                let w0 = self.tiles.as_ptr().add(2 * pair * k_tiles * TILE_VALUES);
                let w1 = w0.add(k_tiles * TILE_VALUES);
                for kt in 0..k_tiles {
                    asm!(
                        "tileloadd tmm4, [{a0} + {sa}*1]",
                        "tileloadd tmm5, [{a1} + {sa}*1]",
                        "tileloadd tmm6, [{w0} + {sw}*1]",
                        "tileloadd tmm7, [{w1} + {sw}*1]",
                        "tdpbf16ps tmm0, tmm4, tmm6",
                        "tdpbf16ps tmm1, tmm4, tmm7",
                        "tdpbf16ps tmm2, tmm5, tmm6",
                        "tdpbf16ps tmm3, tmm5, tmm7",
                        a0 = in(reg) a0.add(kt * K_STEP),
                        a1 = in(reg) a1.add(kt * K_STEP),
                        w0 = in(reg) w0.add(kt * TILE_VALUES),
                        w1 = in(reg) w1.add(kt * TILE_VALUES),
                        sa = in(reg) a_stride,
                        sw = in(reg) w_stride,
                        options(nostack, readonly),
                    );
                }
                asm!(
                    "tilestored [{c0} + {s}*1], tmm0",
                    "tilestored [{c1} + {s}*1], tmm1",
                    "tilestored [{c2} + {s}*1], tmm2",
                    "tilestored [{c3} + {s}*1], tmm3",
                    c0 = in(reg) c0, c1 = in(reg) c1, c2 = in(reg) c2, c3 = in(reg) c3,
                    s = in(reg) c_stride,
                    options(nostack),
                );
            }
        }
    }
}

/// Per-thread buffers: the bf16 activations and a padded copy of a partial block's output.
#[derive(Default)]
struct Scratch {
    a: Vec<u16>,
    c: Vec<f32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
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
        if !available() {
            // No AMX on this CPU: the path cannot run here (the Python tests say so).
            return;
        }
        let (k, n) = (96, 64);
        for rows in [1, 31, 32, 33, 70] {
            let x: Vec<f32> = (0..rows * k)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 17.0)
                .collect();
            let w: Vec<f32> = (0..n * k)
                .map(|i| ((i * 53 % 89) as f32 - 44.0) / 29.0)
                .collect();
            let start: Vec<f32> = (0..rows * n).map(|i| (i % 7) as f32).collect();
            let mut want = start.clone();
            reference(&x, &w, &mut want, k, n);
            let mut got = start;
            PackedWeight::new(&w, n, k)
                .unwrap()
                .matmul_acc(&x, &mut got);
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (g - w).abs() <= 1e-3 * w.abs().max(1.0),
                    "{rows} rows: {g} vs {w}"
                );
            }
        }
    }

    #[test]
    fn shapes_off_the_blocks_are_not_packed() {
        assert!(PackedWeight::new(&[0.0; 30 * 32], 30, 32).is_none());
        assert!(PackedWeight::new(&[0.0; 32 * 20], 32, 20).is_none());
        assert!(PackedWeight::new(&[0.0; 32 * 32], 32, 32).is_some());
    }
}
