//! The blocking driver of our own kernels: a product cut into blocks of [`MC`] rows and
//! [`KC`] inner positions, spread over rayon's threads by row blocks or by bands of
//! column panels ([`for_each_block`]), each block computed by the register tiles of one
//! family ([`TileKernel`]).

use rayon::prelude::*;

#[cfg(target_arch = "x86_64")]
use super::avx2::{kernel_avx2, kernel_avx2_f16, narrow_avx2, narrow_avx2_f16};
use super::tile::{Strip, Tile, TileFn};
#[cfg(target_arch = "x86_64")]
use super::wide;
use super::{Epilogue, Packed, Precision, SendPtr, KC, MC, MR, NR};

/// Row blocks per thread from which a product's row blocks are its parallel tasks;
/// with fewer, threads share out the column panels instead. Whole blocks per task
/// leave threads idle when the blocks do not divide evenly among them (a 60-token
/// query is a block of 48 rows and one of 12), and each reads all of the weights.
pub(super) const ROW_SPLIT_BLOCKS: usize = 4;
/// Bands of column panels per thread when a product's panels are shared out: a
/// thread that starts late (woken from sleep, or busy with a query's BM25 search)
/// leaves bands for the others to take instead of one half to wait for (19-word
/// questions: 0.1 ms off the median embedding, 0.3-0.5 ms off the mean, paired runs).
const PANEL_TASKS_PER_THREAD: usize = 4;

/// Multiply-adds (`m · n · k`) below which a product of one row block is not shared
/// out by columns: the hand-off to another thread costs a few microseconds, a product
/// of this size about twenty on one core.
pub(super) const MIN_SPLIT_WORK: usize = 1 << 20;

/// The product by our own kernels: [`matmul_to`] after its checks, with the register
/// tiles `tiles`.
///
/// # Safety
/// As [`matmul_to`]; `w` is packed in panels, the lengths of `a`, the bias and the row
/// scales have been checked by the caller, and the CPU runs `tiles`.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn panel_product(
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
pub(super) fn for_each_block(
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

/// One family of register tiles: how many rows and panels a call covers, and the
/// function for a call of one panel or of `panels` (f32 weights, then half-precision).
#[derive(Clone, Copy)]
pub(super) struct TileKernel {
    /// Rows per call (a divisor of [`MC`]).
    pub(super) rows: usize,
    /// Panels per call; the last call of a block takes what is left.
    pub(super) panels: usize,
    /// By panels in the call (index `panels - 1`), reading f32 weights.
    pub(super) full: [TileFn; 2],
    /// The same, reading half-precision weights.
    pub(super) half: [TileFn; 2],
    /// Tiles of fewer rows for a block's last strip when its rows are not a multiple
    /// of `rows` (by f32 then half-precision weights, then by rows less one), or
    /// none: the full tile computes the missing rows and drops them.
    pub(super) short: Option<[[TileFn; MR - 1]; 2]>,
}

#[cfg(target_arch = "x86_64")]
impl TileKernel {
    /// Six rows × one panel in `ymm` registers.
    pub(super) const AVX2: Self = Self {
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
    pub(super) const AVX512: Self = Self {
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
    pub(super) const AVX2: Self = Self {
        rows: MR,
        panels: 1,
        full: [no_tiles, no_tiles],
        half: [no_tiles, no_tiles],
        short: None,
    };
    pub(super) const AVX512: Self = Self::AVX2;
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
