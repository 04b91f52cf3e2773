//! Single-precision matrix products for the encoder: `C = A · Wᵀ (+ C) (+ bias)`,
//! then an optional activation, with `W` packed once.
//!
//! Three kernels compute them ([`Kernel`]):
//!
//! - **Our own AVX-512 tiles** (x86-64 CPUs with AVX-512F): the same packed panels and
//!   loops as the AVX2 kernel below, with a register tile of 8 rows × 2 panels in
//!   sixteen `zmm` accumulators ([`wide`], which also explains how it is tested on CPUs
//!   without AVX-512). Its products are bit-identical to the AVX2 kernel's (but for
//!   an activation on a last panel narrower than 16 columns, which the AVX2 kernel
//!   finishes in scalar code).
//! - **Our own AVX2 tiles** (x86-64 CPUs with AVX2 and FMA). A model's weights never change, so
//!   they are rearranged at load into the layout the inner kernel reads ([`Packed`]:
//!   panels of [`NR`] output columns, each stored `k`-major and zero-padded), instead
//!   of being repacked on every product as a general-purpose library does. The
//!   activations `A` are read in place. The loops follow the usual cache blocking:
//!   rows in blocks of [`MC`] (their `A` block stays in L2), the inner dimension in
//!   blocks of at most [`KC`] (a `KC × NR` panel of `W` stays in L1 while every
//!   `MR`-row strip of the block passes over it), and an `MR × NR` register tile per
//!   kernel call, kept in twelve `ymm` registers. `A` is read in place, `MR` rows at a
//!   time: packing it too was measured slower on these shapes (the copy costs more
//!   than the strided reads). Block sizes were tuned on 2-core Zen 3 with the
//!   encoder's shapes (`k` = 384 and 1536): `KC` = 384 keeps a `k` = 384 product in
//!   one block, single-threaded products reach 87–93 GFLOP/s of a 95 GFLOP/s peak. The
//!   epilogue of the last `k` block adds the bias and applies the activation while the
//!   tile is still in registers, so no separate pass over `C` is needed. Row blocks
//!   run in parallel on rayon's threads; a product of a single row block (a query's
//!   few tokens) shares its column panels out among them instead.
//! - **The `gemm` crate** everywhere else (NEON on aarch64, its own SIMD builds picked
//!   at run time on x86), with `W` stored transposed (`k × n` row-major) and the
//!   epilogue as passes over the rows of `C` (bias before the product, row scales
//!   and the activation after it, in the portable element-wise code of
//!   [`super::math`]).
//!
//! The files: [`dispatch`] chooses the kernel, [`packing`] lays out [`Packed`] weights,
//! [`driver`] runs the cache blocking over the register tiles ([`tile`]: what a tile
//! call computes), [`gemm_path`] is the `gemm` crate's path; one file per tile family:
//! [`avx2`], [`wide`] (AVX-512) and [`quant`] (16-bit integers).

#[macro_use]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod check;
mod dispatch;
mod driver;
mod gemm_path;
mod packing;
mod quant;
mod tile;
mod wide;

#[cfg(test)]
mod product_speed;
#[cfg(test)]
mod tests;

pub(crate) use dispatch::Kernel;
pub use dispatch::KernelChoice;

use std::sync::OnceLock;

use super::math::{has_avx2_fma, Activation};
use driver::{panel_product, TileKernel};

/// Rows of the register tile.
const MR: usize = 6;
/// Columns of the register tile (two AVX vectors).
const NR: usize = 16;
/// Largest block of the inner dimension: a `KC × NR` weight panel is 24 KiB.
const KC: usize = 384;
/// Rows per block (a multiple of `MR`); also the unit of parallel work.
const MC: usize = 48;

/// A matrix packed for use as the right operand (`Wᵀ`) of [`matmul`] by one kernel.
///
/// Logically `n × k` (row `j` holds the `k` weights of output column `j`). For
/// our own kernels ([`Kernel::Avx512`], [`Kernel::Avx2`]) stored as `ceil(n / NR)` panels; panel `q` is `k` groups of `NR`
/// values, group `p` holding `W[q·NR + c][p]` for `c < NR` (zero past `n`). For
/// [`Kernel::Gemm`] stored as `Wᵀ`, `k` rows of `n` values.
pub(crate) struct Packed {
    kernel: Kernel,
    n: usize,
    k: usize,
    data: Vec<f32>,
    /// `data` rounded to half precision (IEEE binary16 bits), made on first use by a
    /// product that asks for it ([`Epilogue::half`]).
    half: OnceLock<Vec<u16>>,
    /// `data` rounded to 12-bit integers, made on first use by a product that asks for
    /// them ([`Precision::Int16`]).
    quant: OnceLock<quant::QuantPanels>,
}

/// What happens to the product before it is stored.
#[derive(Clone, Copy)]
pub(crate) struct Epilogue<'a> {
    /// Add the product to `C` instead of overwriting it.
    pub(crate) accumulate: bool,
    /// Added to every row (`n` values).
    pub(crate) bias: Option<&'a [f32]>,
    /// Applied last, element by element.
    pub(crate) activation: Option<Activation>,
    /// Multiplies row `i` of the product (before `C` and the bias are added) by
    /// `row_scale[i]` (`m` values).
    pub(crate) row_scale: Option<&'a [f32]>,
    /// The precision the weights are read in ([`Precision`]).
    pub(crate) weights: Precision,
}

/// The precision of the weights in a product. Only our own kernels ([`Kernel::Avx512`],
/// [`Kernel::Avx2`]) read them in another than f32; the `gemm` path ignores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Precision {
    /// The model's f32 weights.
    F32,
    /// Rounded to half precision (converted back to f32 in registers; the products
    /// still add in f32): half the bytes to bring from memory. Needs F16C; ignored on a
    /// CPU without it.
    Half,
    /// Rounded to 12-bit integers per column and group of inner positions, the rows of
    /// `A` to 14-bit integers, multiplied and added in 16-bit integer arithmetic
    /// ([`quant`]): twice the multiply-adds of f32 per instruction. Needs AVX2 and
    /// FMA; not for products with row scales (both then computed in f32).
    Int16,
}

impl Epilogue<'_> {
    /// Plain `C = A · Wᵀ`.
    pub(crate) const STORE: Epilogue<'static> = Epilogue {
        accumulate: false,
        bias: None,
        activation: None,
        row_scale: None,
        weights: Precision::F32,
    };
}

/// `C (m × n, row stride ldc) = act(s ⊙ (A (m × k, row stride lda) · Wᵀ) [+ C]
/// [+ bias])` with `s` the optional row scales,
/// with row blocks spread over rayon's threads when `parallel` is set.
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul(
    a: &[f32],
    lda: usize,
    m: usize,
    w: &Packed,
    c: &mut [f32],
    ldc: usize,
    epilogue: Epilogue<'_>,
    parallel: bool,
) {
    if m == 0 || w.n == 0 {
        return;
    }
    assert!(ldc >= w.n && c.len() >= (m - 1) * ldc + w.n, "C too short");
    // SAFETY: `c` is borrowed mutably, so nothing else accesses it during the call, and
    // the assertion just above shows it covers rows 0..m, columns 0..w.n at stride
    // `ldc`: `matmul_to`'s contract. Its other inputs are slices it checks itself.
    unsafe { matmul_to(a, lda, m, w, c.as_mut_ptr(), ldc, epilogue, parallel) }
}

/// [`matmul`] writing through a pointer, for callers whose output rows interleave
/// with other tasks' columns (attention heads).
///
/// # Safety
/// `c` must be valid for writes of rows `0..m`, columns `0..w.n()` at row stride
/// `ldc`, and nothing else may access those elements during the call.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn matmul_to(
    a: &[f32],
    lda: usize,
    m: usize,
    w: &Packed,
    c: *mut f32,
    ldc: usize,
    epilogue: Epilogue<'_>,
    parallel: bool,
) {
    let (n, k) = (w.n, w.k);
    if m == 0 || n == 0 {
        return;
    }
    assert!(k > 0, "empty inner dimension");
    assert!(lda >= k && ldc >= n);
    assert!(a.len() >= (m - 1) * lda + k, "A too short");
    if let Some(bias) = epilogue.bias {
        assert!(bias.len() >= n, "bias too short");
    }
    if let Some(scale) = epilogue.row_scale {
        assert!(scale.len() >= m, "row scales too short");
    }
    if epilogue.weights == Precision::Int16
        && w.kernel.panels()
        && epilogue.row_scale.is_none()
        && has_avx2_fma()
    {
        // SAFETY: the same contract, the lengths asserted above; `w` is in panels, the
        // CPU has AVX2 and FMA, and there are no row scales (all just checked).
        unsafe { quant::product(a, lda, m, w, c, ldc, epilogue, parallel) };
        return;
    }
    if w.kernel == Kernel::Gemm {
        // SAFETY: the same contract, and the lengths asserted above.
        unsafe { gemm_path::gemm_product(a, lda, m, w, c, ldc, epilogue, parallel) };
        return;
    }
    assert!(
        w.kernel.runs_here(),
        "the {} kernel cannot run on this CPU",
        w.kernel.name()
    );
    let tiles = match w.kernel {
        Kernel::Avx512 => TileKernel::AVX512,
        _ => TileKernel::AVX2,
    };
    // SAFETY: the same contract; the lengths were asserted above, `w` is packed in
    // panels (not `Gemm`) and the CPU runs the tiles' kernel (asserted just above).
    unsafe { panel_product(a, lda, m, w, c, ldc, epilogue, parallel, tiles) }
}

/// A raw pointer that may cross threads; every user writes a disjoint region.
#[derive(Clone, Copy)]
pub(crate) struct SendPtr(pub(crate) *mut f32);
// SAFETY: a `SendPtr` is only created for an output buffer that outlives the parallel
// loop it is handed to (`matmul_to`'s row blocks, the attention tasks), and each task
// writes through it only to its own rows or columns of that buffer, which no other
// task reads or writes, so moving it to another thread cannot cause a data race.
unsafe impl Send for SendPtr {}
// SAFETY: sharing `&SendPtr` only shares the address; every write through it follows
// the disjoint-region rule given for `Send` above.
unsafe impl Sync for SendPtr {}

impl SendPtr {
    /// The pointer (a method, so closures capture the whole `Send` wrapper).
    pub(crate) fn get(self) -> *mut f32 {
        self.0
    }
}

/// The name of the tile that computes the integer products of a query
/// ([`Precision::Int16`]) with weights packed for `kernel` on this CPU.
pub(crate) fn integer_tile(kernel: Kernel) -> &'static str {
    quant::IntTile::for_kernel(kernel).name()
}
