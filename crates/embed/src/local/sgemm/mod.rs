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

use rayon::prelude::*;

use std::sync::OnceLock;

use super::math;
use super::math::{activate, has_avx2_fma, has_avx512, has_f16c, Activation};

mod wide;

/// Rows of the register tile.
const MR: usize = 6;
/// Columns of the register tile (two AVX vectors).
const NR: usize = 16;
/// Largest block of the inner dimension: a `KC × NR` weight panel is 24 KiB.
const KC: usize = 384;
/// Rows per block (a multiple of `MR`); also the unit of parallel work.
const MC: usize = 48;
/// Row blocks per thread from which a product's row blocks are its parallel tasks;
/// with fewer, threads share out the column panels instead. Whole blocks per task
/// leave threads idle when the blocks do not divide evenly among them (a 60-token
/// query is a block of 48 rows and one of 12), and each reads all of the weights.
const ROW_SPLIT_BLOCKS: usize = 4;
/// Bands of column panels per thread when a product's panels are shared out: a
/// thread that starts late (woken from sleep, or busy with a query's BM25 search)
/// leaves bands for the others to take instead of one half to wait for (19-word
/// questions: 0.1 ms off the median embedding, 0.3-0.5 ms off the mean, paired runs).
const PANEL_TASKS_PER_THREAD: usize = 4;
/// Rows per parallel task of the `gemm` path's passes over `C`.
const PASS_ROWS: usize = 32;
/// Multiply-adds (`m · n · k`) below which a product of one row block is not shared
/// out by columns: the hand-off to another thread costs a few microseconds, a product
/// of this size about twenty on one core.
const MIN_SPLIT_WORK: usize = 1 << 20;

/// Which code computes the products (and, with it, whether the element-wise kernels
/// use their AVX2 + FMA builds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// Our own AVX-512 kernel (8 × 32 register tiles, [`wide`]) on the same packed
    /// panels as [`Kernel::Avx2`], with the AVX2 element-wise steps. Only chosen on a
    /// CPU with AVX-512F, AVX2, FMA and F16C; [`matmul`] refuses it elsewhere.
    Avx512,
    /// Our own AVX2 + FMA kernel. Only chosen on a CPU with both features
    /// ([`KernelChoice::resolve`] checks); [`matmul`] refuses it elsewhere.
    Avx2,
    /// The `gemm` crate's kernel and the portable element-wise code: the path of every
    /// CPU without AVX2 + FMA.
    Gemm,
}

impl Kernel {
    /// The name used by `EXCERPT_KERNEL` and in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Avx512 => "avx512",
            Self::Avx2 => "avx2",
            Self::Gemm => "gemm",
        }
    }

    /// Whether the element-wise kernels may use their AVX2 + FMA builds.
    pub(crate) fn simd(self) -> bool {
        self != Self::Gemm
    }

    /// Whether the weights are packed in panels of [`NR`] columns (our own kernels)
    /// rather than transposed for the `gemm` crate.
    fn panels(self) -> bool {
        self != Self::Gemm
    }

    /// Whether this CPU can run the kernel.
    fn runs_here(self) -> bool {
        match self {
            Self::Avx512 => has_avx512(),
            Self::Avx2 => has_avx2_fma(),
            Self::Gemm => true,
        }
    }
}

/// Which kernel the local models use: the value of `EXCERPT_KERNEL` or of
/// [`LocalEmbedder::load_with_kernel`](crate::LocalEmbedder::load_with_kernel).
///
/// - `auto` (the default): the best of our own kernels the CPU runs (AVX-512, then
///   AVX2 + FMA), else the `gemm` crate's. The AVX-512 kernel is taken only after a
///   self-check on this CPU gives the same bits as its AVX2 twin (else `auto` says so
///   on standard error and takes AVX2);
/// - `avx512`: our own AVX-512 kernel, refused on a CPU without AVX-512F;
/// - `avx2`: our own AVX2 kernel, refused on a CPU without AVX2 and FMA;
/// - `gemm`: the path every CPU without AVX2 + FMA takes (products by the `gemm`
///   crate, element-wise steps in portable code), forced, for measuring and testing
///   it on any machine. On x86-64 the `gemm` crate still picks its own SIMD build at
///   run time, so this measures the integration, not an older CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KernelChoice {
    /// Our best kernel for this CPU, else `gemm`.
    #[default]
    Auto,
    /// Our own AVX-512 kernel.
    Avx512,
    /// Our own AVX2 + FMA kernel.
    Avx2,
    /// The `gemm` crate and portable element-wise code.
    Gemm,
}

impl KernelChoice {
    /// The environment variable [`KernelChoice::from_env`] reads.
    pub const ENV: &'static str = "EXCERPT_KERNEL";

    /// The accepted spellings, in order.
    pub const NAMES: [&'static str; 4] = ["auto", "avx512", "avx2", "gemm"];

    /// Parses `EXCERPT_KERNEL` (unset or empty: [`KernelChoice::Auto`]). The error
    /// names the value and the accepted ones.
    pub fn from_env() -> Result<Self, String> {
        match std::env::var(Self::ENV) {
            Ok(value) if !value.trim().is_empty() => value.parse(),
            _ => Ok(Self::Auto),
        }
    }

    /// The kernel this choice means on this CPU; the error says why a forced kernel
    /// cannot run.
    pub(crate) fn resolve(self) -> Result<Kernel, String> {
        match self {
            Self::Auto if has_avx512() && avx512_agrees() => Ok(Kernel::Avx512),
            Self::Auto if has_avx2_fma() => Ok(Kernel::Avx2),
            Self::Auto | Self::Gemm => Ok(Kernel::Gemm),
            Self::Avx512 if has_avx512() => Ok(Kernel::Avx512),
            Self::Avx512 => Err(format!(
                "{}=avx512 needs a CPU with AVX-512F, AVX2, FMA and F16C, which this one lacks \
                 (use auto, avx2 or gemm)",
                Self::ENV
            )),
            Self::Avx2 if has_avx2_fma() => Ok(Kernel::Avx2),
            Self::Avx2 => Err(format!(
                "{}=avx2 needs a CPU with AVX2 and FMA, which this one lacks (use auto or gemm)",
                Self::ENV
            )),
        }
    }
}

/// Whether the AVX-512 tile gives the same bits as its AVX2 twin on this CPU
/// ([`wide::excerpt_avx512_self_check`]), checked once per process; a disagreement is
/// reported on standard error, and `auto` then keeps to AVX2.
fn avx512_agrees() -> bool {
    static AGREES: OnceLock<bool> = OnceLock::new();
    *AGREES.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: called only where `has_avx512` holds (the caller's guard).
            let differing = unsafe { wide::excerpt_avx512_self_check() };
            if differing != 0 {
                eprintln!(
                    "excerpt: the AVX-512 kernel gave {differing} values unlike its AVX2 \
                     twin on this CPU; using the AVX2 kernel (set {}=avx512 to force it)",
                    KernelChoice::ENV
                );
            }
            differing == 0
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}

impl std::str::FromStr for KernelChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "avx512" => Ok(Self::Avx512),
            "avx2" => Ok(Self::Avx2),
            "gemm" => Ok(Self::Gemm),
            other => Err(format!(
                "{}=`{other}` is not a kernel (expected one of {})",
                Self::ENV,
                Self::NAMES.join(", ")
            )),
        }
    }
}

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

impl Packed {
    /// An empty matrix for `kernel`, to be filled by [`Packed::pack_rows`] or
    /// [`Packed::pack_cols`].
    pub(crate) fn new(kernel: Kernel) -> Self {
        Self {
            kernel,
            n: 0,
            k: 0,
            data: Vec::new(),
            half: OnceLock::new(),
            quant: OnceLock::new(),
        }
    }

    /// Packs `w`, `n` rows of `k` values with row stride `ldw` (a linear layer's
    /// weight is `n × k` row-major: `ldw = k`).
    pub(crate) fn from_rows(kernel: Kernel, w: &[f32], ldw: usize, n: usize, k: usize) -> Self {
        let mut packed = Self::new(kernel);
        packed.pack_rows(w, ldw, n, k);
        packed
    }

    /// Repacks in place from `n` rows of `k` values, row stride `ldw` (reusing the
    /// allocation).
    pub(crate) fn pack_rows(&mut self, w: &[f32], ldw: usize, n: usize, k: usize) {
        assert!(n == 0 || k == 0 || w.len() >= (n - 1) * ldw + k);
        self.reset(n, k);
        if self.kernel == Kernel::Gemm {
            // Wᵀ: written in order, read down the columns of `w`.
            for (p, out) in self.data.chunks_exact_mut(n).enumerate() {
                for (j, x) in out.iter_mut().enumerate() {
                    *x = w[j * ldw + p];
                }
            }
            return;
        }
        for (q, panel) in self.data.chunks_exact_mut(k * NR).enumerate() {
            let cols = NR.min(n - q * NR);
            let rows: [&[f32]; NR] = std::array::from_fn(|c| {
                if c < cols {
                    &w[(q * NR + c) * ldw..][..k]
                } else {
                    &[]
                }
            });
            // Written in order, read across the panel's rows.
            for (p, group) in panel.chunks_exact_mut(NR).enumerate() {
                for (out, row) in group.iter_mut().zip(&rows[..cols]) {
                    *out = row[p];
                }
            }
        }
    }

    /// Repacks in place from the transpose: `b` is `k` rows of `n` values with row
    /// stride `ldb`, and the packed matrix is `bᵀ` (so [`matmul`] computes `A · b`).
    pub(crate) fn pack_cols(&mut self, b: &[f32], ldb: usize, k: usize, n: usize) {
        assert!(n == 0 || k == 0 || b.len() >= (k - 1) * ldb + n);
        self.reset(n, k);
        if self.kernel == Kernel::Gemm {
            for (p, out) in self.data.chunks_exact_mut(n).enumerate() {
                out.copy_from_slice(&b[p * ldb..][..n]);
            }
            return;
        }
        for (q, panel) in self.data.chunks_exact_mut(k * NR).enumerate() {
            let cols = NR.min(n - q * NR);
            for (p, group) in panel.chunks_exact_mut(NR).enumerate() {
                let src = &b[p * ldb + q * NR..][..cols];
                if let (Ok(dst), Ok(src)) = (
                    <&mut [f32; NR]>::try_from(&mut *group),
                    <&[f32; NR]>::try_from(src),
                ) {
                    *dst = *src;
                } else {
                    group[..cols].copy_from_slice(src);
                }
            }
        }
    }

    /// The packed values in half precision, for our own kernels on a CPU with F16C
    /// (made once, then kept: half the memory of `data` again).
    fn half(&self) -> Option<&[u16]> {
        if !self.kernel.panels() || !has_f16c() {
            return None;
        }
        let half = self.half.get_or_init(|| {
            self.data
                .iter()
                .map(|&x| half::f16::from_f32(x).to_bits())
                .collect()
        });
        Some(half)
    }

    /// The packed values rounded to 12-bit integers ([`quant`]; made once, then kept).
    /// Only for matrices packed in panels.
    fn quant(&self) -> &quant::QuantPanels {
        debug_assert!(self.kernel.panels());
        self.quant.get_or_init(|| quant::QuantPanels::new(self))
    }

    fn reset(&mut self, n: usize, k: usize) {
        self.half = OnceLock::new();
        self.quant = OnceLock::new();
        self.n = n;
        self.k = k;
        self.data.clear();
        let len = if self.kernel.panels() {
            n.div_ceil(NR) * k * NR
        } else {
            n * k
        };
        self.data.resize(len, 0.0);
    }
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
        unsafe { gemm_product(a, lda, m, w, c, ldc, epilogue, parallel) };
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

/// The product by our own kernels: [`matmul_to`] after its checks, with the register
/// tiles `tiles`.
///
/// # Safety
/// As [`matmul_to`]; `w` is packed in panels, the lengths of `a`, the bias and the row
/// scales have been checked by the caller, and the CPU runs `tiles`.
#[allow(clippy::too_many_arguments)]
unsafe fn panel_product(
    a: &[f32],
    lda: usize,
    m: usize,
    w: &Packed,
    c: *mut f32,
    ldc: usize,
    epilogue: Epilogue<'_>,
    parallel: bool,
    tiles: TileKernel,
) {
    let out = SendPtr(c);
    let half = if epilogue.weights == Precision::Half {
        w.half()
    } else {
        None
    };
    for_each_block(m, w, parallel, |first_row, columns| {
        let rows = MC.min(m - first_row);
        // SAFETY: `block_product`'s contract for rows first_row..first_row+rows and the
        // panels `columns`: those rows of A hold `k` readable values each (the length
        // of `a` was asserted above), those of C `n` writable values each (this
        // function's contract), the bias has `n` values and the row scales from
        // first_row on have `rows` (both asserted above), and `columns` lies within
        // the `panels` of `w`. Parallel tasks take disjoint rows or disjoint panels,
        // so they never write the same element.
        unsafe {
            block_product(
                a.as_ptr().add(first_row * lda),
                lda,
                rows,
                w,
                half,
                columns,
                out.get().add(first_row * ldc),
                ldc,
                Epilogue {
                    row_scale: epilogue.row_scale.map(|s| &s[first_row..]),
                    ..epilogue
                },
                tiles,
            )
        }
    });
}

/// Calls `block(first_row, panels)` for every block of [`MC`] rows of an `m`-row
/// product with `w`, covering all its panels: on rayon's threads when `parallel`, by
/// row blocks when there are enough of them, else (a query's few rows) by bands of
/// panels, each task computing its band for all the rows and reading only its band of
/// the weights. Tasks never share a row block and a panel.
fn for_each_block(
    m: usize,
    w: &Packed,
    parallel: bool,
    block: impl Fn(usize, std::ops::Range<usize>) + Sync,
) {
    let (n, k) = (w.n, w.k);
    let panels = n.div_ceil(NR);
    let blocks = m.div_ceil(MC);
    let threads = if parallel {
        rayon::current_num_threads()
    } else {
        1
    };
    if threads > 1 && blocks >= ROW_SPLIT_BLOCKS * threads {
        (0..blocks)
            .into_par_iter()
            .for_each(|b| block(b * MC, 0..panels));
    } else if threads > 1 && panels >= 2 * threads && m * n * k >= MIN_SPLIT_WORK {
        // A few blocks of rows (a short input, such as a query): the panels are shared
        // out instead, so that every thread computes a band of the output's columns
        // for all the rows, and reads only its band of the weights.
        let tasks = (threads * PANEL_TASKS_PER_THREAD).min(panels);
        let per_task = panels.div_ceil(tasks);
        (0..tasks).into_par_iter().for_each(|t| {
            let first = t * per_task;
            let columns = first.min(panels)..(first + per_task).min(panels);
            (0..blocks).for_each(|b| block(b * MC, columns.clone()));
        });
    } else if threads > 1 && blocks > 1 {
        (0..blocks)
            .into_par_iter()
            .for_each(|b| block(b * MC, 0..panels));
    } else {
        (0..blocks).for_each(|b| block(b * MC, 0..panels));
    }
}

/// The product by the `gemm` crate, with the epilogue as passes over `C`: the bias
/// is written (or added) into `C` before the product, which then accumulates into
/// it; row scales and the activation are applied after it. A row-scaled product
/// that also adds `C` or the bias goes through a scratch matrix.
///
/// # Safety
/// As [`matmul_to`]; `w` is packed for [`Kernel::Gemm`] and the lengths of `a`, the
/// bias and the row scales have been checked by the caller.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_product(
    a: &[f32],
    lda: usize,
    m: usize,
    w: &Packed,
    c: *mut f32,
    ldc: usize,
    ep: Epilogue<'_>,
    parallel: bool,
) {
    let (n, k) = (w.n, w.k);
    let parallelism = if parallel {
        gemm::Parallelism::Rayon(0)
    } else {
        gemm::Parallelism::None
    };
    let out = SendPtr(c);
    // SAFETY: rows 0..m of `C` hold `n` writable values at stride `ldc` that nothing
    // else accesses during this call (the contract).
    let rows_pass =
        |f: &(dyn Fn(usize, &mut [f32]) + Sync)| unsafe { rows_pass(out, m, n, ldc, parallel, f) };
    // SAFETY: `dst` holds `m` rows of `n` writable values at stride `ld`, nothing else
    // accesses them during the call; `a` holds `m` rows of `k` values at stride `lda`
    // (checked by the caller) and `w.data` is `k` rows of `n` values.
    let product = |dst: *mut f32, ld: usize, read_dst: bool| unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            1,
            ld as isize,
            read_dst,
            a.as_ptr(),
            1,
            lda as isize,
            w.data.as_ptr(),
            1,
            n as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            parallelism,
        )
    };
    let adds = ep.accumulate || ep.bias.is_some();
    match ep.row_scale {
        Some(scale) if adds => {
            let mut scratch = vec![0f32; m * n];
            product(scratch.as_mut_ptr(), n, false);
            rows_pass(&|i, c_row| {
                let s = scale[i];
                let p = &scratch[i * n..][..n];
                if !ep.accumulate {
                    c_row.fill(0.0);
                }
                c_row.iter_mut().zip(p).for_each(|(c, p)| *c += s * p);
                if let Some(bias) = ep.bias {
                    c_row.iter_mut().zip(bias).for_each(|(c, b)| *c += b);
                }
            });
        }
        _ => {
            if let Some(bias) = ep.bias {
                let bias = &bias[..n];
                rows_pass(&|_, c_row| {
                    if ep.accumulate {
                        c_row.iter_mut().zip(bias).for_each(|(c, b)| *c += b);
                    } else {
                        c_row.copy_from_slice(bias);
                    }
                });
            }
            product(c, ldc, adds);
            if let Some(scale) = ep.row_scale {
                rows_pass(&|i, c_row| {
                    let s = scale[i];
                    c_row.iter_mut().for_each(|c| *c *= s);
                });
            }
        }
    }
    if let Some(act) = ep.activation {
        rows_pass(&|_, c_row| activate(c_row, act));
    }
}

/// Calls `f` with each row `i` of the `m` rows of `C` (`n` values each, at stride `ldc`
/// from `c`), as a slice; across threads, in blocks of [`PASS_ROWS`] rows, when
/// `parallel` and there are more rows than that.
///
/// # Safety
/// Rows 0..m of `C` hold `n` writable values at stride `ldc` that nothing else accesses
/// during the call.
unsafe fn rows_pass(
    c: SendPtr,
    m: usize,
    n: usize,
    ldc: usize,
    parallel: bool,
    f: &(dyn Fn(usize, &mut [f32]) + Sync),
) {
    // Row `i` of `C` as a slice.
    let row = |i: usize| {
        // SAFETY: i < m (every caller below), and rows 0..m of `C` hold `n` writable
        // values at stride `ldc` that nothing else accesses during this call (the
        // contract); the pass hands every row to one call of `f` only.
        unsafe { std::slice::from_raw_parts_mut(c.get().add(i * ldc), n) }
    };
    if parallel && m > PASS_ROWS {
        (0..m.div_ceil(PASS_ROWS)).into_par_iter().for_each(|b| {
            for i in b * PASS_ROWS..m.min((b + 1) * PASS_ROWS) {
                f(i, row(i));
            }
        });
    } else {
        (0..m).for_each(|i| f(i, row(i)));
    }
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

/// A register-tile kernel: the functions computing one tile, by panels per call
/// and weight precision.
type TileFn = unsafe fn(&Tile, Strip);

/// One family of register tiles: how many rows and panels a call covers, and the
/// function for a call of one panel or of `panels` (f32 weights, then half-precision).
#[derive(Clone, Copy)]
struct TileKernel {
    /// Rows per call (a divisor of [`MC`]).
    rows: usize,
    /// Panels per call; the last call of a block takes what is left.
    panels: usize,
    /// By panels in the call (index `panels - 1`), reading f32 weights.
    full: [TileFn; 2],
    /// The same, reading half-precision weights.
    half: [TileFn; 2],
    /// Tiles of fewer rows for a block's last strip when its rows are not a multiple
    /// of `rows` (by f32 then half-precision weights, then by rows less one), or
    /// none: the full tile computes the missing rows and drops them.
    short: Option<[[TileFn; MR - 1]; 2]>,
}

#[cfg(target_arch = "x86_64")]
impl TileKernel {
    /// Six rows × one panel in `ymm` registers.
    const AVX2: Self = Self {
        rows: MR,
        panels: 1,
        full: [kernel_avx2, kernel_avx2],
        half: [kernel_avx2_f16, kernel_avx2_f16],
        short: Some([
            [
                narrow_avx2::<1>,
                narrow_avx2::<2>,
                narrow_avx2::<3>,
                narrow_avx2::<4>,
                narrow_avx2::<5>,
            ],
            [
                narrow_avx2_f16::<1>,
                narrow_avx2_f16::<2>,
                narrow_avx2_f16::<3>,
                narrow_avx2_f16::<4>,
                narrow_avx2_f16::<5>,
            ],
        ]),
    };
    /// Eight rows × two panels in `zmm` registers.
    const AVX512: Self = Self {
        rows: wide::MR,
        panels: 2,
        full: [wide::avx512_1, wide::avx512_2],
        half: [wide::avx512_1_f16, wide::avx512_2_f16],
        short: None,
    };
}

#[cfg(not(target_arch = "x86_64"))]
impl TileKernel {
    /// No tile kernels off x86-64: [`matmul_to`] refuses them before this is read.
    const AVX2: Self = Self {
        rows: MR,
        panels: 1,
        full: [no_tiles, no_tiles],
        half: [no_tiles, no_tiles],
        short: None,
    };
    const AVX512: Self = Self::AVX2;
}

/// The tile kernel of CPUs without our kernels; never called.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn no_tiles(tile: &Tile, strip: Strip) {
    unreachable!("no register-tile kernel off x86-64 ({tile:p}, {strip:?})");
}

/// One block of at most `MC` rows, the columns of the panels `columns` (panel `q`
/// holds columns `q · NR ..`), by the register tiles `tiles`, reading `half` (the
/// packed values in half precision) instead of `w`'s own when given.
///
/// # Safety
/// `a` must point at `rows` rows of `w.k` readable values (stride `lda`), `c` at
/// `rows` rows of `w.n` writable values (stride `ldc`); the bias and row scales
/// must cover `w.n` and `rows` values; `columns` lies within `0..ceil(w.n / NR)`;
/// `w` is packed in panels and the CPU runs `tiles`; `half`, when given, is
/// [`Packed::half`] of `w` (as long as `w.data`), and the CPU has F16C.
#[allow(clippy::too_many_arguments)]
unsafe fn block_product(
    a: *const f32,
    lda: usize,
    rows: usize,
    w: &Packed,
    half: Option<&[u16]>,
    columns: std::ops::Range<usize>,
    c: *mut f32,
    ldc: usize,
    epilogue: Epilogue<'_>,
    tiles: TileKernel,
) {
    // SAFETY: every offset below stays inside the buffers the caller's contract
    // describes: rows ir < rows, inner positions pc + kc <= k, panels q..q + take
    // within `columns`, so below ceil(n / NR), of `w.data` (whose panels hold k
    // groups of NR values, k·NR apart, so the block at pc has kc groups), columns
    // col + nr <= n, bias column col < n, row scale ir < rows. Each kernel call
    // therefore gets a strip and a tile that satisfy its contract, and runs only on a
    // CPU that supports it (the caller's contract).
    unsafe {
        let (n, k) = (w.n, w.k);
        let k_blocks = k.div_ceil(KC);
        let kc_max = k.div_ceil(k_blocks);
        for kb in 0..k_blocks {
            let pc = kb * kc_max;
            let kc = kc_max.min(k - pc);
            let first = kb == 0;
            let last = kb + 1 == k_blocks;
            let mut q = columns.start;
            while q < columns.end {
                let take = tiles.panels.min(columns.end - q);
                let col = q * NR;
                let tile = Tile {
                    kc,
                    b: w.data.as_ptr().add(q * k * NR + pc * NR),
                    half: half.map_or(std::ptr::null(), |h| h.as_ptr().add(q * k * NR + pc * NR)),
                    stride: k * NR,
                    nr: (take * NR).min(n - col),
                    load_c: !first || epilogue.accumulate,
                    bias: match epilogue.bias {
                        Some(bias) if first => bias.as_ptr().add(col),
                        _ => std::ptr::null(),
                    },
                    activation: if last { epilogue.activation } else { None },
                };
                let kernel = if tile.half.is_null() {
                    tiles.full[take - 1]
                } else {
                    tiles.half[take - 1]
                };
                for ir in (0..rows).step_by(tiles.rows) {
                    let strip = Strip {
                        a: a.add(ir * lda + pc),
                        lda,
                        rows: tiles.rows.min(rows - ir),
                        scale: epilogue
                            .row_scale
                            .map_or(std::ptr::null(), |s| s.as_ptr().add(ir)),
                        c: c.add(ir * ldc + col),
                        ldc,
                    };
                    let kernel = match tiles.short {
                        Some(short) if strip.rows < tiles.rows => {
                            short[usize::from(!tile.half.is_null())][strip.rows - 1]
                        }
                        _ => kernel,
                    };
                    kernel(&tile, strip);
                }
                q += take;
            }
        }
    }
}

/// What one register tile computes, shared by the row tiles of a panel.
struct Tile {
    /// Inner-dimension length of this block.
    kc: usize,
    /// The packed panel at this block: `kc` groups of `NR` values.
    b: *const f32,
    /// The same panel in half precision, or null (then `b` is read).
    half: *const u16,
    /// Values from one panel to the next (`k · NR`), for tiles of several panels.
    stride: usize,
    /// Valid columns of the tile (`NR` except in the last panel).
    nr: usize,
    /// Add the tile to what `C` holds.
    load_c: bool,
    /// `nr` bias values to add, or null.
    bias: *const f32,
    activation: Option<Activation>,
}

/// The rows of one kernel call: `rows` (at most `MR`) rows of `A` from `a` (stride
/// `lda`), their row scales from `scale` (or null) and their rows of `C` from `c`
/// (stride `ldc`).
#[derive(Debug, Clone, Copy)]
struct Strip {
    a: *const f32,
    lda: usize,
    rows: usize,
    scale: *const f32,
    c: *mut f32,
    ldc: usize,
}

/// Adds `C`, the bias and the activation to one accumulated tile row and stores it.
///
/// # Safety
/// `row` must hold `tile.nr` writable values, `tile.bias` (if not null) `tile.nr`.
#[inline(always)]
unsafe fn finish_row(tile: &Tile, acc: &mut [f32; NR], row: *mut f32) {
    // SAFETY: the caller guarantees `row` holds `tile.nr` writable values and
    // `tile.bias`, when not null, `tile.nr` readable ones; `acc` holds NR >= nr values
    // and is a separate array, so the copy does not overlap.
    unsafe {
        let nr = tile.nr;
        if tile.load_c {
            let old = std::slice::from_raw_parts(row, nr);
            acc.iter_mut().zip(old).for_each(|(x, c)| *x += c);
        }
        if !tile.bias.is_null() {
            let bias = std::slice::from_raw_parts(tile.bias, nr);
            acc.iter_mut().zip(bias).for_each(|(x, b)| *x += b);
        }
        if let Some(act) = tile.activation {
            activate(acc, act);
        }
        std::ptr::copy_nonoverlapping(acc.as_ptr(), row, nr);
    }
}

/// Defines an AVX2 + FMA register-tile kernel: `$start` is where it reads the panel
/// (`kc` groups of `NR` values) and `$load` loads eight of them at `$p` as f32.
macro_rules! avx2_kernel {
    ($(#[$doc:meta])* $name:ident, $features:literal, |$tile:ident| $start:expr, |$p:ident| $load:expr) => {
        $(#[$doc])*
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        unsafe fn $name($tile: &Tile, strip: Strip) {
            let tile = $tile;
            let Strip {
                a,
                lda,
                rows: mr,
                scale,
                c,
                ldc,
            } = strip;
            // SAFETY: every access is within the rows, groups and columns the caller's
            // contract guarantees: missing rows (i >= mr) re-read row 0
            // and are never stored, full 16-column loads and stores happen only when
            // `tile.nr == NR`. The CPU has AVX2 and FMA (this function's contract).
            unsafe {
                use std::arch::x86_64::*;
                // Rows past `mr` (which may not exist) read row 0 again; their sums are
                // discarded.
                let row = |i: usize| if i < mr { a.add(i * lda) } else { a };
                let (a0, a1, a2, a3, a4, a5) = (row(0), row(1), row(2), row(3), row(4), row(5));
                let z = _mm256_setzero_ps();
                let (mut c00, mut c01, mut c10, mut c11, mut c20, mut c21) = (z, z, z, z, z, z);
                let (mut c30, mut c31, mut c40, mut c41, mut c50, mut c51) = (z, z, z, z, z, z);
                let mut b = $start;
                for p in 0..tile.kc {
                    let b0 = { let $p = b; $load };
                    let b1 = { let $p = b.add(8); $load };
                    // One row of the tile: broadcast A[row][p], multiply-add both halves.
                    macro_rules! fma_row {
                        ($a:ident, $lo:ident, $hi:ident) => {
                            let x = _mm256_broadcast_ss(&*$a.add(p));
                            $lo = _mm256_fmadd_ps(x, b0, $lo);
                            $hi = _mm256_fmadd_ps(x, b1, $hi);
                        };
                    }
                    fma_row!(a0, c00, c01);
                    fma_row!(a1, c10, c11);
                    fma_row!(a2, c20, c21);
                    fma_row!(a3, c30, c31);
                    fma_row!(a4, c40, c41);
                    fma_row!(a5, c50, c51);
                    b = b.add(NR);
                }
                let sums = [
                    (c00, c01),
                    (c10, c11),
                    (c20, c21),
                    (c30, c31),
                    (c40, c41),
                    (c50, c51),
                ];
                for (i, &(lo, hi)) in sums.iter().enumerate().take(mr) {
                    let scale = if scale.is_null() { scale } else { scale.add(i) };
                    store_ymm_row!(tile, lo, hi, scale, c.add(i * ldc));
                }
            }
        }
    };
}

/// Finishes one row of an AVX2 tile, its 16 sums in `$lo` and `$hi`: scales it by
/// `*$scale` (unless null), adds `C`, the bias and the activation as `$tile` says, and
/// stores its `$tile.nr` columns at `$out`. A macro, so that the tiles' code keeps it
/// inline (a function with the tiles' target features was not inlined, and its calls
/// were 6 % of a query's time).
///
/// Used inside `unsafe` with `std::arch::x86_64::*` in scope, in a function with AVX2
/// and FMA: `$out` must hold `$tile.nr` writable values, `$tile.bias` (unless null)
/// `$tile.nr` readable ones, `$scale` be null or readable. Full 16-column loads and
/// stores happen only when `$tile.nr == NR`; else `finish_row` touches `$tile.nr`.
macro_rules! store_ymm_row {
    ($tile:expr, $lo:expr, $hi:expr, $scale:expr, $out:expr) => {{
        let (tile, out, scale): (&Tile, *mut f32, *const f32) = ($tile, $out, $scale);
        let (mut lo, mut hi) = ($lo, $hi);
        if !scale.is_null() {
            let s = _mm256_set1_ps(*scale);
            lo = _mm256_mul_ps(lo, s);
            hi = _mm256_mul_ps(hi, s);
        }
        if tile.nr == NR {
            // Full-width tiles finish in registers.
            if tile.load_c {
                lo = _mm256_add_ps(lo, _mm256_loadu_ps(out));
                hi = _mm256_add_ps(hi, _mm256_loadu_ps(out.add(8)));
            }
            if !tile.bias.is_null() {
                lo = _mm256_add_ps(lo, _mm256_loadu_ps(tile.bias));
                hi = _mm256_add_ps(hi, _mm256_loadu_ps(tile.bias.add(8)));
            }
            if let Some(act) = tile.activation {
                lo = super::math::x86::activate8(lo, act);
                hi = super::math::x86::activate8(hi, act);
            }
            _mm256_storeu_ps(out, lo);
            _mm256_storeu_ps(out.add(8), hi);
        } else {
            let mut acc = [0f32; NR];
            _mm256_storeu_ps(acc.as_mut_ptr(), lo);
            _mm256_storeu_ps(acc.as_mut_ptr().add(8), hi);
            finish_row(tile, &mut acc, out);
        }
    }};
}

mod quant;

/// What the AVX-512 self-checks share ([`wide::excerpt_avx512_self_check`] and
/// `quant::excerpt_int16_avx512_self_check`). Like them it allocates nothing and calls no
/// C library function, so that they also run in the CPU emulator of `scripts/avx512-emu`.
#[cfg(target_arch = "x86_64")]
mod check {
    use super::Activation;

    /// The activations the checks finish their tiles with.
    pub(super) const ACTIVATIONS: [Option<Activation>; 4] = [
        None,
        Some(Activation::GeluErf),
        Some(Activation::GeluTanh),
        Some(Activation::Relu),
    ];

    /// The next value of a xorshift generator at `state`.
    pub(super) fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    /// A value in `[-1, 1)` from the generator at `state`.
    pub(super) fn unit(state: &mut u64) -> f32 {
        (xorshift(state) >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    /// How many of `x` differ in their bits from the values of `y` beside them.
    pub(super) fn unlike(x: &[f32], y: &[f32]) -> u64 {
        x.iter()
            .zip(y)
            .filter(|(x, y)| x.to_bits() != y.to_bits())
            .count() as u64
    }
}

/// The name of the tile that computes the integer products of a query
/// ([`Precision::Int16`]) with weights packed for `kernel` on this CPU.
pub(crate) fn integer_tile(kernel: Kernel) -> &'static str {
    quant::IntTile::for_kernel(kernel).name()
}

/// Defines an AVX2 + FMA register tile of `R` (< [`MR`]) rows, for the last strip of
/// a block: the 6-row tile would compute `MR - R` rows for nothing. Each row's sums
/// are the same operations in the same order as in the 6-row tile, so the products
/// have the same bits. `$start` and `$load` as in `avx2_kernel!`.
macro_rules! narrow_kernel {
    ($(#[$doc:meta])* $name:ident, $features:literal, |$tile:ident| $start:expr, |$p:ident| $load:expr) => {
        $(#[$doc])*
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        unsafe fn $name<const R: usize>($tile: &Tile, strip: Strip) {
            let tile = $tile;
            // SAFETY: `strip.rows == R`, so every row read and written exists; the
            // panel is read at `tile.kc` groups and the row finished by
            // `store_ymm_row!` under its contract (this function's contract).
            unsafe {
                use std::arch::x86_64::*;
                debug_assert_eq!(strip.rows, R);
                let rows: [*const f32; R] = std::array::from_fn(|i| strip.a.add(i * strip.lda));
                let mut sums = [[_mm256_setzero_ps(); 2]; R];
                let mut b = $start;
                for p in 0..tile.kc {
                    let b0 = { let $p = b; $load };
                    let b1 = { let $p = b.add(8); $load };
                    for (row, [lo, hi]) in rows.iter().zip(sums.iter_mut()) {
                        let x = _mm256_broadcast_ss(&*row.add(p));
                        *lo = _mm256_fmadd_ps(x, b0, *lo);
                        *hi = _mm256_fmadd_ps(x, b1, *hi);
                    }
                    b = b.add(NR);
                }
                for (i, &[lo, hi]) in sums.iter().enumerate() {
                    let scale = if strip.scale.is_null() {
                        strip.scale
                    } else {
                        strip.scale.add(i)
                    };
                    store_ymm_row!(tile, lo, hi, scale, strip.c.add(i * strip.ldc));
                }
            }
        }
    };
}

narrow_kernel!(
    /// [`kernel_avx2`] for a strip of `R` rows.
    ///
    /// # Safety
    /// As [`kernel_avx2`], with `strip.rows == R`.
    narrow_avx2,
    "avx2,fma",
    |tile| tile.b,
    |p| std::arch::x86_64::_mm256_loadu_ps(p)
);

narrow_kernel!(
    /// [`kernel_avx2_f16`] for a strip of `R` rows.
    ///
    /// # Safety
    /// As [`kernel_avx2_f16`], with `strip.rows == R`.
    narrow_avx2_f16,
    "avx2,fma,f16c",
    |tile| tile.half,
    |p| std::arch::x86_64::_mm256_cvtph_ps(std::arch::x86_64::_mm_loadu_si128(p.cast()))
);

avx2_kernel!(
    /// The AVX2 + FMA register tile: 6 rows × 16 columns in twelve `ymm` accumulators,
    /// one broadcast of `A` and two loads of the panel per step of `k`.
    ///
    /// # Safety
    /// `strip.rows` is at most `MR`; `strip.a` points at `strip.rows` rows of `tile.kc`
    /// readable values, `strip.c` at `strip.rows` rows of `tile.nr` writable values,
    /// `strip.scale` (unless null) at `strip.rows` row scales; `tile.b` at `tile.kc`
    /// groups of `NR` readable values, `tile.bias` (unless null) at `tile.nr` values.
    /// The CPU must support AVX2 and FMA.
    kernel_avx2,
    "avx2,fma",
    |tile| tile.b,
    |p| std::arch::x86_64::_mm256_loadu_ps(p)
);

avx2_kernel!(
    /// [`kernel_avx2`] reading the panel in half precision (`tile.half`, which must
    /// point at `tile.kc` groups of `NR` values; the CPU must support F16C too),
    /// converted to f32 as it is loaded.
    kernel_avx2_f16,
    "avx2,fma,f16c",
    |tile| tile.half,
    |p| std::arch::x86_64::_mm256_cvtph_ps(std::arch::x86_64::_mm_loadu_si128(p.cast()))
);

#[cfg(test)]
mod tests {
    use super::*;

    use crate::local::test_values as values;

    /// `act(A · Wᵀ + C? + bias?)` in f64, the reference.
    #[allow(clippy::too_many_arguments)]
    fn naive(
        a: &[f32],
        lda: usize,
        m: usize,
        w: &[f32],
        n: usize,
        k: usize,
        c: &[f32],
        ldc: usize,
        ep: Epilogue<'_>,
    ) -> Vec<f32> {
        let mut out = c.to_vec();
        for i in 0..m {
            let mut row: Vec<f32> = (0..n)
                .map(|j| {
                    let mut s: f64 = (0..k)
                        .map(|p| a[i * lda + p] as f64 * w[j * k + p] as f64)
                        .sum();
                    if let Some(scale) = ep.row_scale {
                        s *= scale[i] as f64;
                    }
                    if ep.accumulate {
                        s += c[i * ldc + j] as f64;
                    }
                    if let Some(b) = ep.bias {
                        s += b[j] as f64;
                    }
                    s as f32
                })
                .collect();
            if let Some(act) = ep.activation {
                activate(&mut row, act);
            }
            out[i * ldc..][..n].copy_from_slice(&row);
        }
        out
    }

    /// Whether two results are equal bit for bit.
    fn same_bits(x: &[f32], y: &[f32]) -> bool {
        x.len() == y.len() && x.iter().zip(y).all(|(x, y)| x.to_bits() == y.to_bits())
    }

    /// The kernels this CPU can run (saying which it cannot).
    fn kernels() -> Vec<Kernel> {
        let all = [Kernel::Avx512, Kernel::Avx2, Kernel::Gemm];
        for kernel in all.iter().filter(|k| !k.runs_here()) {
            eprintln!(
                "this CPU cannot run the {} kernel: its cases skipped",
                kernel.name()
            );
        }
        all.into_iter().filter(|k| k.runs_here()).collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn check(kernel: Kernel, m: usize, n: usize, k: usize, ep: Epilogue<'_>, parallel: bool) {
        let (lda, ldc) = (k + 3, n + 5);
        let a = values(m * lda, 1);
        let w = values(n * k, 2);
        let c0 = values(m * ldc, 3);
        let packed = Packed::from_rows(kernel, &w, k, n, k);
        let mut c = c0.clone();
        matmul(&a, lda, m, &packed, &mut c, ldc, ep, parallel);
        let want = naive(&a, lda, m, &w, n, k, &c0, ldc, ep);
        for (idx, (got, want)) in c.iter().zip(&want).enumerate() {
            let tol = 1e-5 * (k as f32).sqrt() * want.abs().max(1.0);
            assert!(
                (got - want).abs() <= tol,
                "{kernel:?}: m {m} n {n} k {k} at {idx}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn products_match_naive_for_odd_shapes() {
        let bias = values(64, 9);
        let scales = values(200, 10);
        for &(m, n, k) in &[
            (1, 1, 1),
            (5, 17, 3),
            (6, 16, 256),
            (7, 33, 257),
            (97, 48, 600),
            (200, 40, 40),
        ] {
            for ep in [
                Epilogue::STORE,
                Epilogue {
                    accumulate: true,
                    bias: Some(&bias[..n]),
                    activation: None,
                    row_scale: None,
                    weights: Precision::F32,
                },
                Epilogue {
                    accumulate: false,
                    bias: Some(&bias[..n]),
                    activation: Some(Activation::GeluErf),
                    row_scale: Some(&scales[..m]),
                    weights: Precision::F32,
                },
                Epilogue {
                    accumulate: true,
                    bias: None,
                    activation: Some(Activation::Relu),
                    row_scale: None,
                    weights: Precision::F32,
                },
                Epilogue {
                    row_scale: Some(&scales[..m]),
                    ..Epilogue::STORE
                },
            ] {
                for kernel in kernels() {
                    check(kernel, m, n, k, ep, false);
                    check(kernel, m, n, k, ep, true);
                }
            }
        }
    }

    /// With `half`, the AVX2 kernel reads the weights rounded to half precision: the
    /// naive product of the rounded weights, on one thread or shared out by columns, in
    /// one row block or several; without F16C (or on the `gemm` path) the flag is
    /// ignored and the product is the f32 one.
    #[test]
    fn short_strips_give_the_bits_of_full_ones() {
        // A product of `m` rows ends with a strip of `m % MR` rows, which the narrow
        // tiles compute: each row must come out exactly as it does inside a full strip.
        let bias = values(64, 21);
        let scales = values(2 * MR, 22);
        for &(n, k) in &[(40, 50), (48, 384), (33, 800)] {
            let lda = k + 1;
            let a = values(2 * MR * lda, 23);
            let w = values(n * k, 24);
            let c0 = values(2 * MR * n, 25);
            for weights in [Precision::F32, Precision::Half] {
                let eps = [
                    Epilogue {
                        weights,
                        ..Epilogue::STORE
                    },
                    Epilogue {
                        accumulate: true,
                        bias: Some(&bias[..n]),
                        activation: Some(Activation::GeluErf),
                        row_scale: None,
                        weights,
                    },
                    Epilogue {
                        accumulate: false,
                        bias: Some(&bias[..n]),
                        activation: Some(Activation::Relu),
                        row_scale: Some(&scales),
                        weights,
                    },
                ];
                for ep in eps {
                    // Our own tiles (the `gemm` crate blocks rows its own way).
                    for kernel in kernels().into_iter().filter(|k| k.panels()) {
                        let packed = Packed::from_rows(kernel, &w, k, n, k);
                        let mut full = c0.clone();
                        matmul(&a, lda, 2 * MR, &packed, &mut full, n, ep, false);
                        for m in 1..2 * MR {
                            let mut c = c0[..m * n].to_vec();
                            matmul(&a, lda, m, &packed, &mut c, n, ep, false);
                            assert!(
                                same_bits(&c, &full[..m * n]),
                                "{kernel:?} {weights:?}: {m} rows of {n}x{k}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn half_weights_give_the_product_of_the_rounded_weights() {
        let bias = values(1536, 21);
        for &(m, n, k) in &[(1, 17, 3), (7, 1152, 384), (12, 384, 1536), (97, 48, 600)] {
            let ep = Epilogue {
                accumulate: true,
                bias: Some(&bias[..n]),
                activation: Some(Activation::GeluErf),
                row_scale: None,
                weights: Precision::Half,
            };
            let a = values(m * k, 22);
            let w = values(n * k, 23);
            let rounded: Vec<f32> = w.iter().map(|&x| half::f16::from_f32(x).to_f32()).collect();
            assert!(rounded != w, "the rounding must change the weights");
            let c0 = values(m * n, 24);
            for kernel in kernels() {
                let packed = Packed::from_rows(kernel, &w, k, n, k);
                let halved = kernel.panels() && has_f16c();
                let want = naive(
                    &a,
                    k,
                    m,
                    if halved { &rounded } else { &w },
                    n,
                    k,
                    &c0,
                    n,
                    ep,
                );
                for parallel in [false, true] {
                    let mut c = c0.clone();
                    matmul(&a, k, m, &packed, &mut c, n, ep, parallel);
                    for (idx, (got, want)) in c.iter().zip(&want).enumerate() {
                        let tol = 1e-5 * (k as f32).sqrt() * want.abs().max(1.0);
                        assert!(
                            (got - want).abs() <= tol,
                            "{kernel:?} half {halved}: m {m} n {n} k {k} at {idx}: {got} vs {want}"
                        );
                    }
                }
            }
            if !has_f16c() {
                eprintln!("no F16C on this CPU: the half-precision kernel was not run");
            }
        }
    }

    /// A product of one row block (a query's few tokens) is shared out by column
    /// panels: the same bits as computing it on one thread, and the naive product.
    #[test]
    fn few_row_blocks_shared_by_columns_give_the_same_bits() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let bias = values(1536, 12);
        // One block of rows, then two, three and eleven blocks (fewer than
        // `ROW_SPLIT_BLOCKS` per thread of the three): all shared out by columns.
        for &(m, n, k) in &[
            (12, 1152, 384),
            (12, 384, 1536),
            (3, 1536, 384),
            (47, 1000, 1100),
            (60, 384, 384),
            (2 * MC + 5, 1536, 384),
            (11 * MC - 1, 400, 64),
        ] {
            assert!(
                m.div_ceil(MC) < ROW_SPLIT_BLOCKS * 3 && m * n * k >= MIN_SPLIT_WORK,
                "{m} {n} {k}"
            );
            let ep = Epilogue {
                accumulate: true,
                bias: Some(&bias[..n]),
                activation: Some(Activation::GeluErf),
                row_scale: None,
                weights: Precision::F32,
            };
            for kernel in kernels() {
                let a = values(m * k, 13);
                let w = values(n * k, 14);
                let packed = Packed::from_rows(kernel, &w, k, n, k);
                let c0 = values(m * n, 15);
                let (mut one, mut shared) = (c0.clone(), c0.clone());
                matmul(&a, k, m, &packed, &mut one, n, ep, false);
                pool.install(|| matmul(&a, k, m, &packed, &mut shared, n, ep, true));
                assert!(same_bits(&one, &shared), "{kernel:?} {m}x{n}x{k}");
                pool.install(|| check(kernel, m, n, k, ep, true));
            }
        }
    }

    #[test]
    fn column_packing_is_the_transpose() {
        let (k, n) = (19, 21);
        let b = values(k * n, 4);
        let mut bt = vec![0f32; n * k];
        for p in 0..k {
            for j in 0..n {
                bt[j * k + p] = b[p * n + j];
            }
        }
        for kernel in [Kernel::Avx512, Kernel::Avx2, Kernel::Gemm] {
            let mut from_cols = Packed::new(kernel);
            from_cols.pack_cols(&b, n, k, n);
            let from_rows = Packed::from_rows(kernel, &bt, k, n, k);
            assert_eq!(from_cols.data, from_rows.data, "{kernel:?}");
        }
        // The gemm layout is the transpose itself.
        assert_eq!(Packed::from_rows(Kernel::Gemm, &bt, k, n, k).data, b);
    }

    #[test]
    fn avx2_and_gemm_kernels_agree() {
        // The shapes of the encoder (rows of a batch, hidden 384, feed-forward 1536)
        // and of attention (a sequence's scores, head width 32), every epilogue.
        if !has_avx2_fma() {
            return;
        }
        let bias = values(1536, 7);
        let scales = values(300, 11);
        for &(m, n, k) in &[
            (300, 1152, 384),
            (300, 384, 1536),
            (250, 250, 32),
            (250, 32, 250),
        ] {
            let a = values(m * k, 5);
            let w = values(n * k, 6);
            let c0 = values(m * n, 8);
            for ep in [
                Epilogue::STORE,
                Epilogue {
                    accumulate: true,
                    bias: Some(&bias[..n]),
                    ..Epilogue::STORE
                },
                Epilogue {
                    bias: Some(&bias[..n]),
                    activation: Some(Activation::GeluErf),
                    ..Epilogue::STORE
                },
                Epilogue {
                    accumulate: true,
                    bias: Some(&bias[..n]),
                    activation: Some(Activation::GeluTanh),
                    row_scale: Some(&scales[..m]),
                    weights: Precision::F32,
                },
                Epilogue {
                    row_scale: Some(&scales[..m]),
                    ..Epilogue::STORE
                },
            ] {
                let run = |kernel| {
                    let packed = Packed::from_rows(kernel, &w, k, n, k);
                    let mut c = c0.clone();
                    matmul(&a, k, m, &packed, &mut c, n, ep, true);
                    c
                };
                let (own, gemm) = (run(Kernel::Avx2), run(Kernel::Gemm));
                for (x, y) in own.iter().zip(&gemm) {
                    let tol = 1e-5 * (k as f32).sqrt() * x.abs().max(1.0);
                    assert!((x - y).abs() <= tol, "{m}x{n}x{k}: {x} vs {y}");
                }
                // The AVX-512 tiles agree with the AVX2 ones within the same tolerance
                // as the `gemm` crate's. (On a Zen 4 CPU they do not give the same bits
                // on every shape, as the emulator did.)
                if has_avx512() {
                    let wide = run(Kernel::Avx512);
                    for (x, y) in wide.iter().zip(&own) {
                        let tol = 1e-5 * (k as f32).sqrt() * x.abs().max(1.0);
                        assert!(
                            (x - y).abs() <= tol,
                            "avx512 and avx2 differ: {m}x{n}x{k}: {x} vs {y}"
                        );
                    }
                }
            }
        }
    }

    /// The wide tile's AVX2 twin, as a tile family: the AVX-512 tile's logic (eight
    /// rows, two panels a call, masked edges) on any CPU with AVX2, FMA and F16C.
    #[cfg(target_arch = "x86_64")]
    const TWIN: TileKernel = TileKernel {
        rows: wide::MR,
        panels: 2,
        full: [wide::twin_1, wide::twin_2],
        half: [wide::twin_1_f16, wide::twin_2_f16],
        short: None,
    };

    /// The wide tiles, run here through their AVX2 twin: the naive product for odd
    /// shapes (short strips, an odd number of panels, a narrow last panel, several `k`
    /// blocks, one thread or shared out by columns), and the AVX2 kernel's bits
    /// wherever the epilogue has no activation (the AVX2 kernel finishes a narrow
    /// panel's activation in scalar code, the wide tile in vector code).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_wide_tile_matches_the_naive_product_and_the_avx2_bits() {
        if !has_f16c() {
            eprintln!("no AVX2 + FMA + F16C on this CPU: the wide tile's twin was not run");
            return;
        }
        let bias = values(1536, 31);
        let scales = values(300, 32);
        for &(m, n, k) in &[
            (1, 1, 1),
            (5, 17, 3),
            (8, 32, 256),
            (9, 48, 257),
            (97, 33, 600),
            (23, 1152, 384),
            (3, 1536, 384),
        ] {
            let (lda, ldc) = (k + 3, n + 5);
            let a = values(m * lda, 33);
            let w = values(n * k, 34);
            let c0 = values(m * ldc, 35);
            let packed = Packed::from_rows(Kernel::Avx2, &w, k, n, k);
            for ep in [
                Epilogue::STORE,
                Epilogue {
                    accumulate: true,
                    bias: Some(&bias[..n]),
                    row_scale: Some(&scales[..m]),
                    ..Epilogue::STORE
                },
                Epilogue {
                    bias: Some(&bias[..n]),
                    activation: Some(Activation::GeluErf),
                    ..Epilogue::STORE
                },
                Epilogue {
                    accumulate: true,
                    activation: Some(Activation::GeluTanh),
                    weights: Precision::Half,
                    ..Epilogue::STORE
                },
            ] {
                let run = |tiles: TileKernel, parallel: bool| {
                    let mut c = c0.clone();
                    // SAFETY: `c` holds m rows of ldc >= n values, `a` m rows of lda >=
                    // k, the bias n values, the scales m; the CPU has AVX2, FMA and
                    // F16C (checked above), which both tile families need.
                    unsafe {
                        panel_product(
                            &a,
                            lda,
                            m,
                            &packed,
                            c.as_mut_ptr(),
                            ldc,
                            ep,
                            parallel,
                            tiles,
                        )
                    };
                    c
                };
                let rounded: Vec<f32>;
                let weights = if ep.weights == Precision::Half {
                    rounded = w.iter().map(|&x| half::f16::from_f32(x).to_f32()).collect();
                    &rounded
                } else {
                    &w
                };
                let want = naive(&a, lda, m, weights, n, k, &c0, ldc, ep);
                let own = run(TileKernel::AVX2, false);
                for parallel in [false, true] {
                    let twin = run(TWIN, parallel);
                    for (idx, (got, want)) in twin.iter().zip(&want).enumerate() {
                        let tol = 1e-5 * (k as f32).sqrt() * want.abs().max(1.0);
                        assert!(
                            (got - want).abs() <= tol,
                            "m {m} n {n} k {k} at {idx}: {got} vs {want}"
                        );
                    }
                    if ep.activation.is_none() || n % NR == 0 {
                        assert!(
                            same_bits(&twin, &own),
                            "the twin and the avx2 kernel differ: m {m} n {n} k {k}"
                        );
                    }
                }
            }
        }
    }

    /// The self-check the kernel choice runs before taking AVX-512 passes wherever
    /// the CPU can run it.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx512_self_check_passes_where_it_runs() {
        if !has_avx512() {
            eprintln!("no AVX-512F on this CPU: the AVX-512 self-check was not run");
            return;
        }
        // SAFETY: the CPU has AVX-512F, AVX2, FMA and F16C (`has_avx512`).
        assert_eq!(unsafe { wide::excerpt_avx512_self_check() }, 0);
        assert!(avx512_agrees());
    }

    #[test]
    fn kernel_choices_parse_and_resolve() {
        for (text, want) in [
            ("auto", KernelChoice::Auto),
            (" GEMM ", KernelChoice::Gemm),
            ("avx2", KernelChoice::Avx2),
            ("AVX512", KernelChoice::Avx512),
        ] {
            assert_eq!(text.parse::<KernelChoice>(), Ok(want));
        }
        let err = "blas".parse::<KernelChoice>().expect_err("unknown");
        assert!(err.contains("EXCERPT_KERNEL=`blas`"), "{err}");
        assert!(err.contains("auto, avx512, avx2, gemm"), "{err}");
        assert_eq!(KernelChoice::Gemm.resolve(), Ok(Kernel::Gemm));
        let auto = KernelChoice::Auto.resolve().expect("auto always resolves");
        let avx2 = KernelChoice::Avx2.resolve();
        let avx512 = KernelChoice::Avx512.resolve();
        if has_avx512() {
            assert_eq!(
                (auto, avx2, avx512),
                (Kernel::Avx512, Ok(Kernel::Avx2), Ok(Kernel::Avx512))
            );
        } else {
            let err = avx512.expect_err("no AVX-512");
            assert!(
                err.contains("EXCERPT_KERNEL=avx512 needs a CPU with AVX-512F"),
                "{err}"
            );
            if has_avx2_fma() {
                assert_eq!((auto, avx2), (Kernel::Avx2, Ok(Kernel::Avx2)));
            } else {
                assert_eq!(auto, Kernel::Gemm);
                assert!(avx2.expect_err("no AVX2").contains("needs a CPU with AVX2"));
            }
        }
    }
}

/// A manual benchmark of the encoder's product shapes (prints GFLOP/s single- and
/// multi-threaded for each kernel the CPU can run, asserts nothing):
/// `cargo test --release -p excerpt-embed --lib product_speed -- --ignored --nocapture`
#[cfg(test)]
mod product_speed {
    use super::*;

    #[test]
    #[ignore = "benchmark: prints figures"]
    fn gflops() {
        for &(m, n, k) in &[
            (8000, 1152, 384),
            (8000, 384, 384),
            (8000, 1536, 384),
            (8000, 384, 1536),
            (252, 252, 32),
            (252, 32, 252),
            (30, 1152, 384),
            (30, 384, 384),
            (30, 1536, 384),
            (30, 384, 1536),
            (25, 1536, 384),
            (72, 1536, 384),
        ] {
            let a = vec![0.5f32; m * k];
            let mut c = vec![0f32; m * n];
            let mut line = format!("{m}x{n}x{k}:");
            // A query's few rows read the weights rounded: in half precision, and
            // (`/int16`) to 12-bit integers in integer products.
            let rounded = if m < 100 {
                Precision::Half
            } else {
                Precision::F32
            };
            for (kernel, par, weights) in [
                (Kernel::Avx512, false, rounded),
                (Kernel::Avx512, true, rounded),
                (Kernel::Avx2, false, rounded),
                (Kernel::Avx2, true, rounded),
                (Kernel::Avx2, false, Precision::Int16),
                (Kernel::Avx2, true, Precision::Int16),
                (Kernel::Gemm, false, rounded),
                (Kernel::Gemm, true, rounded),
            ] {
                if !kernel.runs_here() || (weights == Precision::Int16 && m >= 100) {
                    continue;
                }
                let w = Packed::from_rows(kernel, &vec![0.25f32; n * k], k, n, k);
                let reps = if m < 1000 { 400 } else { 1 };
                let mut s = f64::MAX;
                for _ in 0..8 {
                    let t = std::time::Instant::now();
                    for _ in 0..reps {
                        let ep = Epilogue {
                            weights,
                            ..Epilogue::STORE
                        };
                        matmul(&a, k, m, &w, &mut c, n, ep, par);
                    }
                    s = s.min(t.elapsed().as_secs_f64());
                }
                let gflops = 2.0 * (m * n * k * reps) as f64 / s / 1e9;
                let threads = if par { "all" } else { "1" };
                let int = if weights == Precision::Int16 {
                    "/int16"
                } else {
                    ""
                };
                line += &format!(" {}{int}/{threads} {gflops:.1}", kernel.name());
            }
            println!("{line}");
        }
    }
}
