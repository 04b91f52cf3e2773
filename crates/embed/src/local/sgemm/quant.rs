//! Products of a query's few rows in 16-bit integer arithmetic: 12-bit weights and
//! 14-bit activations ([`Precision::Int16`](super::Precision::Int16)).
//!
//! A query's products are bound by the multiply-adds of the FMA units (its 20-80 rows
//! keep the weights in cache). AVX2's `vpmaddwd` multiplies sixteen pairs of 16-bit
//! integers and adds each pair into a 32-bit lane, twice the multiply-adds of an f32
//! FMA per instruction, and exact. So:
//!
//! - **Weights** are rounded once, at first use, to integers in `-2046..=2046` with one
//!   scale per output column and [`GROUP`] inner positions, kept as 16-bit values in
//!   the panels' layout, two inner positions side by side for each column
//!   (`vpmaddwd`'s pairs).
//! - **Activations** are rounded per row, at each product, to integers in
//!   `-8191..=8191` with one scale per row.
//! - A group's sums stay exact in 32-bit lanes (128 products of at most 8191 · 2046,
//!   below 2³¹), then become f32, are multiplied by the column scales and the row
//!   scale, and are added to `C` as the f32 kernels add their `k` blocks; the bias, the
//!   residual and the activation are applied as theirs are.
//!
//! The widths were chosen on data (2026-11-28: docs/history/benchmarks-2026-11-28.md and
//! docs/history/eval-2026-11-28.md).
//! A forward pass in f64 outside the engine, rounding every linear layer this way,
//! keeps the 57 financebench-dev questions within cosine 0.999999 of their f32
//! vectors, and every dev-set figure of `scripts/eval-dev.sh` is what half-precision
//! weights give. Narrower ones moved answers: 8-bit weights (stored as bytes, half the
//! memory of f16, 0.5 ms faster again) reached cosine 0.9997 and cost `auto` 0.007-0.011
//! of recall on three dev sets at the smallest budget; 13-bit rows cost one pydocs-nav
//! question; 8-bit rows (what `vpmaddubsw` needs) fell to 0.997. Groups of 64 kept the
//! figures too, but a tile call covers one group, and twice the calls cost about 1 ms a
//! question over HTTP.
//!
//! Integer sums do not depend on their order, and the f32 steps run in a fixed order,
//! so every tile and the portable twin of the tests give the same bits. Where the
//! kernel is AVX-512's ([`Kernel::Avx512`]) and the CPU has AVX-512BW, a tile on `zmm`
//! registers takes the AVX2 tile's place ([`IntTile`]): one `vpmaddwd` covers a step of
//! a whole panel (sixteen columns, two inner positions) where AVX2 needs two, and with
//! AVX-512 VNNI one `vpdpwssd` also adds it into the sums. It finishes its sums with
//! the AVX2 tile's code, so it gives the AVX2 tile's bits; the choice checks that on
//! the CPU before taking it ([`excerpt_int16_avx512_self_check`], which also runs in
//! the CPU emulator of `scripts/avx512-emu` on machines without AVX-512).

use std::ops::Range;

use std::sync::OnceLock;

use super::tile::{finish_row, Strip, Tile};
use super::{Epilogue, Kernel, Packed, SendPtr, NR};

/// Inner positions sharing one weight scale per column.
pub(super) const GROUP: usize = 128;

/// Largest magnitude of a rounded weight: with [`ACTIVATION_MAX`] and [`GROUP`], a
/// group's sum stays below 2³¹ (128 · 8191 · 2046 = 2,145,124,608).
const WEIGHT_MAX: f32 = 2046.0;

/// Largest magnitude of a rounded activation.
const ACTIVATION_MAX: f32 = 8191.0;

// A group's sum of products must fit a 32-bit lane: the widths cannot grow past it
// unnoticed.
const _: () =
    assert!((GROUP as f64) * (ACTIVATION_MAX as f64) * (WEIGHT_MAX as f64) < 2_147_483_648.0);

/// A matrix's weights rounded to integers, in the panels of [`Packed`].
pub(super) struct QuantPanels {
    /// Panel `q` holds `kp / 2` pairs of inner positions; pair `p` is `2 · NR` values,
    /// `W[q·NR + c][2p]` then `W[q·NR + c][2p + 1]` for each column `c` (zero past `n`
    /// and past `k`).
    data: Vec<i16>,
    /// Panel `q`, group `g`: the `NR` column scales at `(q · groups + g) · NR`.
    scales: Vec<f32>,
    /// `k` rounded up to even.
    kp: usize,
    groups: usize,
}

impl QuantPanels {
    /// Rounds the weights of `w` (packed in panels) group by group.
    pub(super) fn new(w: &Packed) -> Self {
        let (n, k) = (w.n, w.k);
        let kp = k + k % 2;
        let groups = k.div_ceil(GROUP);
        let panels = n.div_ceil(NR);
        let mut data = vec![0i16; panels * kp * NR];
        let mut scales = vec![0f32; panels * groups * NR];
        for q in 0..panels {
            // Panel q of `w`: k groups of NR values.
            let panel = &w.data[q * k * NR..][..k * NR];
            let out = &mut data[q * kp * NR..][..kp * NR];
            for g in 0..groups {
                let inner = g * GROUP..k.min((g + 1) * GROUP);
                for c in 0..NR {
                    let max = inner
                        .clone()
                        .map(|p| panel[p * NR + c].abs())
                        .fold(0f32, f32::max);
                    let (scale, inverse) = if max > 0.0 {
                        (max / WEIGHT_MAX, WEIGHT_MAX / max)
                    } else {
                        (0.0, 0.0)
                    };
                    scales[(q * groups + g) * NR + c] = scale;
                    for p in inner.clone() {
                        let x = (panel[p * NR + c] * inverse).round_ties_even();
                        out[(p / 2) * 2 * NR + 2 * c + p % 2] =
                            x.clamp(-WEIGHT_MAX, WEIGHT_MAX) as i16;
                    }
                }
            }
        }
        Self {
            data,
            scales,
            kp,
            groups,
        }
    }
}

/// `m` rows of `k` activations (stride `lda`) rounded to 16-bit integers, `kp` per row
/// (zero past `k`), with their scales.
#[derive(Default)]
struct QuantRows {
    values: Vec<i16>,
    scales: Vec<f32>,
}

thread_local! {
    /// The rounded rows of this thread's last product, kept for its next
    /// ([`quantize_rows`]).
    static KEPT_ROWS: std::cell::Cell<QuantRows> = std::cell::Cell::new(QuantRows::default());
}

/// Rounds each row of `a` to integers of magnitude at most 8191: one scale per row,
/// its largest magnitude over 8191 (zero for a row of zeros).
fn quantize_rows(a: &[f32], lda: usize, m: usize, k: usize, kp: usize) -> QuantRows {
    // The buffers of this thread's last product (a query's products take turns on one
    // thread), so that each product does not allocate and zero them anew; a product
    // run meanwhile on this thread (a task stolen while this one waits) finds them
    // taken and allocates its own.
    let QuantRows {
        mut values,
        mut scales,
    } = KEPT_ROWS.with(|kept| kept.take());
    values.resize(m * kp, 0);
    scales.resize(m, 0.0);
    for (i, (out, scale)) in values.chunks_exact_mut(kp).zip(&mut scales).enumerate() {
        // Past `k`, zero (the buffer may hold an earlier product's values there).
        out[k..].fill(0);
        let row = &a[i * lda..][..k];
        #[cfg(target_arch = "x86_64")]
        if super::has_avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA (just checked); `out` holds kp >= k
            // values.
            *scale = unsafe { quantize_row_avx2(row, out) };
            continue;
        }
        *scale = quantize_row(row, out);
    }
    QuantRows { values, scales }
}

/// The portable rounding of one row into `out` (at least `row.len()` values); returns
/// the row's scale. Bit for bit what [`quantize_row_avx2`] computes.
fn quantize_row(row: &[f32], out: &mut [i16]) -> f32 {
    let max = row.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        out[..row.len()].fill(0);
        return 0.0;
    }
    let inverse = ACTIVATION_MAX / max;
    for (o, &x) in out.iter_mut().zip(row) {
        *o = (x * inverse).round_ties_even() as i16;
    }
    max / ACTIVATION_MAX
}

/// [`quantize_row`] in AVX2.
///
/// # Safety
/// The CPU must support AVX2 and FMA; `out` holds at least `row.len()` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn quantize_row_avx2(row: &[f32], out: &mut [i16]) -> f32 {
    use std::arch::x86_64::*;
    let k = row.len();
    let whole = k - k % 16;
    // SAFETY: loads and stores of 16 values start below `whole`, so within `row` and
    // `out` (which holds at least k values); the CPU has AVX2 (the contract).
    unsafe {
        let magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff));
        let mut peak = _mm256_setzero_ps();
        let mut i = 0;
        while i + 8 <= k {
            let x = _mm256_and_ps(_mm256_loadu_ps(row.as_ptr().add(i)), magnitude);
            peak = _mm256_max_ps(peak, x);
            i += 8;
        }
        let mut lanes = [0f32; 8];
        _mm256_storeu_ps(lanes.as_mut_ptr(), peak);
        let max = lanes
            .iter()
            .chain(row[i..].iter())
            .fold(0f32, |m, x| m.max(x.abs()));
        if max == 0.0 {
            out[..k].fill(0);
            return 0.0;
        }
        let inverse = ACTIVATION_MAX / max;
        let scale = _mm256_set1_ps(inverse);
        let mut i = 0;
        while i < whole {
            // Rounds to nearest, ties to even (the default rounding mode), as
            // `round_ties_even` does.
            let lo = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(row.as_ptr().add(i)), scale));
            let hi = _mm256_cvtps_epi32(_mm256_mul_ps(
                _mm256_loadu_ps(row.as_ptr().add(i + 8)),
                scale,
            ));
            // `packs` interleaves the 128-bit halves; the permutation restores the order.
            let packed = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(lo, hi));
            _mm256_storeu_si256(out.as_mut_ptr().add(i).cast(), packed);
            i += 16;
        }
        for (o, &x) in out[whole..k].iter_mut().zip(&row[whole..]) {
            *o = (x * inverse).round_ties_even() as i16;
        }
        max / ACTIVATION_MAX
    }
}

/// `C = act(A · Wᵀ [+ C] [+ bias])` with the weights of `w` rounded to 12 bits and
/// the rows of `A` to 14: [`super::matmul_to`] for [`Precision::Int16`](super::Precision::Int16).
///
/// # Safety
/// As [`super::matmul_to`], after its checks; `w` is packed in panels, the CPU has
/// AVX2 and FMA, and the epilogue has no row scales.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn product(
    a: &[f32],
    lda: usize,
    m: usize,
    w: &Packed,
    c: *mut f32,
    ldc: usize,
    epilogue: Epilogue<'_>,
    parallel: bool,
) {
    debug_assert!(epilogue.row_scale.is_none());
    let panels = w.quant();
    let rows = quantize_rows(a, lda, m, w.k, panels.kp);
    let out = SendPtr(c);
    let tiles = IntTile::for_kernel(w.kernel);
    super::driver::for_each_block(m, w, parallel, |first_row, columns| {
        // SAFETY: `block`'s contract: rows first_row.. of the rounded rows and of `C`
        // (this function's contract), panels within `columns` (given by
        // `for_each_block` within the panels of `w`); `tiles` runs on this CPU
        // (`IntTile::for_kernel`).
        unsafe {
            block(
                &rows, first_row, w, panels, columns, out, ldc, epilogue, tiles,
            )
        }
    });
    KEPT_ROWS.with(|kept| kept.set(rows));
}

/// One block of at most `MC` rows from `first_row`, the panels `columns`, group by
/// group, by 6-row tiles.
///
/// # Safety
/// `c` points at rows `0..` of `C` whose rows `first_row..first_row + MC` (those that
/// exist in `rows`) hold `w.n` writable values at stride `ldc`, which no other task
/// touches; `columns` lies within the panels of `w`; `panels` is `w.quant()`; the CPU
/// has AVX2 and FMA, and the features of `tiles`.
#[allow(clippy::too_many_arguments)]
unsafe fn block(
    rows: &QuantRows,
    first_row: usize,
    w: &Packed,
    panels: &QuantPanels,
    columns: Range<usize>,
    c: SendPtr,
    ldc: usize,
    epilogue: Epilogue<'_>,
    tiles: IntTile,
) {
    let m = rows.scales.len();
    let count = super::MC.min(m - first_row);
    let (n, k, kp) = (w.n, w.k, panels.kp);
    // Panel by panel, each read front to back (its groups lie one after the other), so
    // that the weights stream in order; a panel's `C` tile stays in L1 between groups.
    for q in columns {
        let col = q * NR;
        for g in 0..panels.groups {
            let pairs = (k.min((g + 1) * GROUP) - g * GROUP).div_ceil(2);
            let first = g == 0;
            let last = g + 1 == panels.groups;
            let tile = QuantTile {
                pairs,
                // The pointers below stay within their buffers (their reads are
                // `tile_avx2`'s contract): panel q's group g starts within `data` (q <
                // panels, g·GROUP/2 pairs < kp/2), its scales within `scales`; the bias
                // has n > col values, rows of A and C exist below first_row + count.
                b: panels
                    .data
                    .as_ptr()
                    .wrapping_add(q * kp * NR + g * GROUP * NR),
                column_scales: panels
                    .scales
                    .as_ptr()
                    .wrapping_add((q * panels.groups + g) * NR),
                finish: Tile {
                    kc: 0,
                    b: std::ptr::null(),
                    half: std::ptr::null(),
                    stride: 0,
                    nr: NR.min(n - col),
                    load_c: !first || epilogue.accumulate,
                    bias: match epilogue.bias {
                        Some(bias) if first => bias.as_ptr().wrapping_add(col),
                        _ => std::ptr::null(),
                    },
                    activation: if last { epilogue.activation } else { None },
                },
            };
            for ir in (first_row..first_row + count).step_by(super::MR) {
                let strip_rows = super::MR.min(first_row + count - ir);
                let strip = QuantStrip {
                    a: rows.values.as_ptr().wrapping_add(ir * kp + g * GROUP),
                    lda: kp,
                    strip: Strip {
                        a: std::ptr::null(),
                        lda: 0,
                        rows: strip_rows,
                        scale: rows.scales.as_ptr().wrapping_add(ir),
                        c: c.get().wrapping_add(ir * ldc + col),
                        ldc,
                    },
                };
                // SAFETY: the tile and strip satisfy the tiles' contract (above), and
                // the CPU has the features of `tiles` (this function's contract).
                #[cfg(target_arch = "x86_64")]
                unsafe {
                    run_tile(tiles, &tile, strip)
                }
                #[cfg(not(target_arch = "x86_64"))]
                let _ = (&tile, strip, tiles);
            }
        }
    }
}

/// How far ahead of its step [`tile_avx2`] prefetches the weights, in `i16`s: 2 KB, 32
/// steps (the query products' weights stream from L3 or memory; measured on Zen 3 with
/// `query_bench --ab`: 0.3-0.5 ms off a 4.5 ms question, more than when only the first
/// 6-row strip of each group prefetches; 1.5 and 3 KB ahead measured as 2 KB did).
const PREFETCH_AHEAD: usize = 1024;

/// One group of one panel, for every strip of a block.
struct QuantTile {
    /// Pairs of inner positions in the group.
    pairs: usize,
    /// The panel's pairs from the group's first: `pairs` times `2 · NR` values.
    b: *const i16,
    /// The group's `NR` column scales.
    column_scales: *const f32,
    /// How the sums are finished: `nr`, `load_c`, `bias` and `activation` are read.
    finish: Tile,
}

/// The rounded rows of one tile call: `strip.rows` rows of 16-bit values from `a`
/// (stride `lda`) at the group's first inner position; `strip.scale` their row scales,
/// `strip.c` their rows of `C`.
struct QuantStrip {
    a: *const i16,
    lda: usize,
    strip: Strip,
}

/// Finishes row `i` of an integer tile: its sums of columns 0-7 and 8-15 (`__m256i`)
/// made f32, multiplied by the group's column scales `scales` (two `__m256`, loaded
/// once per tile call) and stored by `store_ymm_row!` (row scale, `C`, bias,
/// activation). Inside `unsafe`, with AVX2 enabled; `i` is a row of the strip.
macro_rules! finish_int_row {
    ($tile:expr, $strip:expr, $scales:expr, $i:expr, $lo:expr, $hi:expr) => {{
        let (tile, strip, i): (&QuantTile, &QuantStrip, usize) = ($tile, &$strip, $i);
        let (s0, s1) = $scales;
        let lo = _mm256_mul_ps(_mm256_cvtepi32_ps($lo), s0);
        let hi = _mm256_mul_ps(_mm256_cvtepi32_ps($hi), s1);
        store_ymm_row!(
            &tile.finish,
            lo,
            hi,
            strip.strip.scale.add(i),
            strip.strip.c.add(i * strip.strip.ldc)
        );
    }};
}

/// The group's sixteen column scales of an integer tile, as two `__m256`. Inside
/// `unsafe`, with AVX2 enabled.
macro_rules! column_scales {
    ($tile:expr) => {
        (
            _mm256_loadu_ps($tile.column_scales),
            _mm256_loadu_ps($tile.column_scales.add(8)),
        )
    };
}

/// The AVX2 tile: `R` rows × 16 columns of one group, in `2R` lanes of 32-bit sums.
///
/// # Safety
/// `strip.strip.rows == R`; `strip.a` holds `R` rows (stride `strip.lda`) of
/// `2 · tile.pairs` readable values, `tile.b` `tile.pairs` times `2 · NR`,
/// `tile.column_scales` `NR`, `strip.strip.scale` `R`; `strip.strip.c` rows of
/// `tile.finish.nr` writable values, the bias (unless null) as many. The CPU has AVX2
/// and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn tile_avx2<const R: usize>(tile: &QuantTile, strip: QuantStrip) {
    use std::arch::x86_64::*;
    debug_assert_eq!(strip.strip.rows, R);
    // SAFETY: every read is within the rows, pairs and scales of the contract, the
    // stores are `store_ymm_row!`'s under its contract.
    unsafe {
        let rows: [*const i16; R] = std::array::from_fn(|i| strip.a.add(i * strip.lda));
        let mut sums = [[_mm256_setzero_si256(); 2]; R];
        let mut b = tile.b;
        for p in 0..tile.pairs {
            // The weights 2 KB on (this panel's next group, or the next panel's first
            // once this group ends) asked for ahead of their step.
            _mm_prefetch::<_MM_HINT_T0>(b.wrapping_add(PREFETCH_AHEAD).cast());
            // Sixteen weights each: eight columns, two positions.
            let b0 = _mm256_loadu_si256(b.cast());
            let b1 = _mm256_loadu_si256(b.add(16).cast());
            for (row, [lo, hi]) in rows.iter().zip(sums.iter_mut()) {
                let x = _mm256_set1_epi32(row.add(2 * p).cast::<i32>().read_unaligned());
                *lo = _mm256_add_epi32(*lo, _mm256_madd_epi16(x, b0));
                *hi = _mm256_add_epi32(*hi, _mm256_madd_epi16(x, b1));
            }
            b = b.add(2 * NR);
        }
        let scales = column_scales!(tile);
        for (i, &[lo, hi]) in sums.iter().enumerate() {
            finish_int_row!(tile, strip, scales, i, lo, hi);
        }
    }
}

/// Which tile computes a product's integer sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IntTile {
    /// [`tile_avx2`]: two `vpmaddwd` and two `vpaddd` per row and step of a panel.
    Avx2,
    /// [`tile_avx512`]: one `vpmaddwd` and one `vpaddd` on `zmm` registers.
    Avx512,
    /// [`tile_vnni`]: one `vpdpwssd`.
    Vnni,
}

impl IntTile {
    /// The variable that can keep a CPU with AVX-512 to the AVX2 tile.
    const ENV: &'static str = "EXCERPT_INT_TILE";

    /// Whether a value of `EXCERPT_INT_TILE` keeps to the AVX2 tile; a value other than
    /// `avx2` or `auto` is reported on standard error, once.
    fn forced_avx2(value: Option<&str>) -> bool {
        match value.map(str::trim) {
            Some("avx2") => true,
            Some("auto") | Some("") | None => false,
            Some(other) => {
                static WARNED: std::sync::Once = std::sync::Once::new();
                WARNED.call_once(|| {
                    eprintln!(
                        "excerpt: {}=`{other}` is not avx2 or auto; choosing as auto does",
                        Self::ENV
                    )
                });
                false
            }
        }
    }

    /// The tile's name, as benchmarks print it.
    pub(super) fn name(self) -> &'static str {
        match self {
            IntTile::Avx2 => "avx2",
            IntTile::Avx512 => "avx512bw",
            IntTile::Vnni => "avx512-vnni",
        }
    }

    /// The tile for weights packed for `kernel` on this CPU: the AVX2 tile unless the
    /// kernel is AVX-512's (which the kernel choice takes only on CPUs with AVX-512F,
    /// after its own check) and the CPU also has AVX-512BW; then the `zmm` tile, with
    /// VNNI where the CPU has it, each only once [`excerpt_int16_avx512_self_check`]
    /// has found it giving the AVX2 tile's bits on this CPU (checked once per process;
    /// a disagreement is reported on standard error and the AVX2 tile is kept).
    ///
    /// `EXCERPT_INT_TILE=avx2` keeps to the AVX2 tile (read at every product, so that
    /// `query_bench --ab EXCERPT_INT_TILE=avx2,auto` compares the two in one process;
    /// `auto` or unset chooses as above, anything else is reported once and ignored).
    pub(super) fn for_kernel(kernel: Kernel) -> IntTile {
        if kernel != Kernel::Avx512 || Self::forced_avx2(std::env::var(Self::ENV).ok().as_deref()) {
            return IntTile::Avx2;
        }
        static CHOSEN: OnceLock<IntTile> = OnceLock::new();
        *CHOSEN.get_or_init(|| {
            #[cfg(target_arch = "x86_64")]
            {
                let bw = std::arch::is_x86_feature_detected!("avx512bw");
                let vnni = std::arch::is_x86_feature_detected!("avx512vnni");
                if !(crate::local::math::has_avx512() && super::has_avx2_fma() && bw) {
                    return IntTile::Avx2;
                }
                let agrees = |vnni: bool| {
                    // SAFETY: the CPU has AVX-512F and BW, AVX2 and FMA (just checked),
                    // and VNNI when asked for (checked by the caller below).
                    let differing = unsafe { excerpt_int16_avx512_self_check(u64::from(vnni)) };
                    if differing != 0 {
                        eprintln!(
                            "excerpt: the AVX-512{} integer tile gave {differing} values unlike \
                             the AVX2 tile on this CPU; not using it",
                            if vnni { " VNNI" } else { "" }
                        );
                    }
                    differing == 0
                };
                if vnni && agrees(true) {
                    IntTile::Vnni
                } else if agrees(false) {
                    IntTile::Avx512
                } else {
                    IntTile::Avx2
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            IntTile::Avx2
        })
    }
}

/// Runs the tile `tiles` names on `strip` (of 1 to 6 rows).
///
/// # Safety
/// As [`tile_avx2`]; the CPU has the features of `tiles`.
#[cfg(target_arch = "x86_64")]
unsafe fn run_tile(tiles: IntTile, tile: &QuantTile, strip: QuantStrip) {
    macro_rules! by_rows {
        ($f:ident) => {
            match strip.strip.rows {
                1 => $f::<1>(tile, strip),
                2 => $f::<2>(tile, strip),
                3 => $f::<3>(tile, strip),
                4 => $f::<4>(tile, strip),
                5 => $f::<5>(tile, strip),
                _ => $f::<6>(tile, strip),
            }
        };
    }
    // SAFETY: the contract, passed on.
    unsafe {
        match tiles {
            IntTile::Avx2 => by_rows!(tile_avx2),
            IntTile::Avx512 => by_rows!(tile_avx512),
            IntTile::Vnni => by_rows!(tile_vnni),
        }
    }
}

/// The body of the `zmm` tiles: `R` rows × 16 columns of one group in `R` lanes of
/// sixteen 32-bit sums, each step's sixteen columns and two inner positions loaded in
/// one register; `$add(sum, x, w)` adds the products of the row pairs `x` and the
/// weights `w` into `sum`. The sums are finished by the AVX2 tile's code, on their
/// two halves.
#[cfg(target_arch = "x86_64")]
macro_rules! zmm_tile {
    ($tile:expr, $strip:expr, $r:expr, |$sum:ident, $x:ident, $w:ident| $add:expr) => {{
        use std::arch::x86_64::*;
        let (tile, strip): (&QuantTile, QuantStrip) = ($tile, $strip);
        debug_assert_eq!(strip.strip.rows, $r);
        // SAFETY: every read is within the rows, pairs and scales of the tiles'
        // contract, the stores are `store_ymm_row!`'s under its contract.
        unsafe {
            let rows: [*const i16; $r] = std::array::from_fn(|i| strip.a.add(i * strip.lda));
            let mut sums = [_mm512_setzero_si512(); $r];
            let mut b = tile.b;
            for p in 0..tile.pairs {
                _mm_prefetch::<_MM_HINT_T0>(b.wrapping_add(PREFETCH_AHEAD).cast());
                let $w = _mm512_loadu_si512(b.cast());
                for (row, $sum) in rows.iter().zip(sums.iter_mut()) {
                    let $x = _mm512_set1_epi32(row.add(2 * p).cast::<i32>().read_unaligned());
                    *$sum = $add;
                }
                b = b.add(2 * NR);
            }
            let scales = column_scales!(tile);
            for (i, &sum) in sums.iter().enumerate() {
                let (lo, hi) = (
                    _mm512_castsi512_si256(sum),
                    _mm512_extracti64x4_epi64::<1>(sum),
                );
                finish_int_row!(tile, strip, scales, i, lo, hi);
            }
        }
    }};
}

/// The AVX-512BW tile: [`tile_avx2`]'s sums, sixteen columns in one register.
///
/// # Safety
/// As [`tile_avx2`]; the CPU has AVX-512F, AVX-512BW, AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx2,fma")]
unsafe fn tile_avx512<const R: usize>(tile: &QuantTile, strip: QuantStrip) {
    zmm_tile!(tile, strip, R, |sum, x, w| _mm512_add_epi32(
        *sum,
        _mm512_madd_epi16(x, w)
    ))
}

/// The AVX-512 VNNI tile: [`tile_avx512`] with each step's multiply and add in one
/// `vpdpwssd` (the same wrapping 32-bit sums).
///
/// # Safety
/// As [`tile_avx2`]; the CPU has AVX-512F, AVX-512BW, AVX-512 VNNI, AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma")]
unsafe fn tile_vnni<const R: usize>(tile: &QuantTile, strip: QuantStrip) {
    zmm_tile!(tile, strip, R, |sum, x, w| _mm512_dpwssd_epi32(*sum, x, w))
}

/// Pairs of inner positions in the self-check's groups (odd, and fewer than a group).
const CHECK_PAIRS: usize = 37;
/// Row stride of the self-check's outputs (past a tile's 16 columns: they must stay
/// untouched).
const CHECK_LD: usize = 19;

/// Runs the `zmm` integer tile (VNNI's when `vnni` is not 0, else AVX-512BW's) and the
/// AVX2 tile on the same groups (every strip height from 1 to 6 rows, full and
/// narrow panels, with and without `C`, bias and each activation) and returns how
/// many output values differ in their bits; 0 when they agree.
///
/// [`IntTile::for_kernel`] runs it before taking a `zmm` tile. It allocates nothing
/// and calls no C library function, so it also runs under a CPU emulator on machines
/// without AVX-512 (`scripts/avx512-emu`, whose emulated CPU has AVX-512BW but not
/// VNNI).
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512BW, AVX2 and FMA, and AVX-512 VNNI when
/// `vnni` is not 0.
#[cfg(target_arch = "x86_64")]
#[no_mangle]
pub unsafe extern "C" fn excerpt_int16_avx512_self_check(vnni: u64) -> u64 {
    use super::check;
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut int = move |max: u64| (check::xorshift(&mut state) % (2 * max + 1)) as i32 - max as i32;
    // Rows and weights within the rounding's ranges, some at their ends.
    let a: [i16; 6 * 2 * CHECK_PAIRS] = std::array::from_fn(|i| match i % 23 {
        0 => 8191,
        1 => -8191,
        _ => int(8191) as i16,
    });
    let b: [i16; CHECK_PAIRS * 2 * NR] = std::array::from_fn(|i| match i % 29 {
        0 => -2046,
        _ => int(2046) as i16,
    });
    let float = |x: i32| x as f32 / 4096.0;
    let column_scales: [f32; NR] = std::array::from_fn(|_| float(int(4096)) / 1024.0);
    let row_scales: [f32; 6] = std::array::from_fn(|_| float(int(4096)) / 1024.0);
    let bias: [f32; NR] = std::array::from_fn(|_| float(int(8192)));
    let mut differing = 0u64;
    for case in 0..96usize {
        let rows = 1 + case % 6;
        let pairs = if (case / 6) % 2 == 0 { CHECK_PAIRS } else { 1 };
        let tile = QuantTile {
            pairs,
            b: b.as_ptr(),
            column_scales: column_scales.as_ptr(),
            finish: Tile {
                kc: 0,
                b: std::ptr::null(),
                half: std::ptr::null(),
                stride: 0,
                nr: if (case / 12) % 2 == 0 { NR } else { NR - 5 },
                load_c: (case / 24) % 2 == 1,
                bias: if case % 5 < 3 {
                    bias.as_ptr()
                } else {
                    std::ptr::null()
                },
                activation: check::ACTIVATIONS[(case / 48 + case) % 4],
            },
        };
        let run = |tiles: IntTile| {
            let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ case as u64;
            let mut c: [f32; 6 * CHECK_LD] = std::array::from_fn(|_| check::unit(&mut seed));
            let strip = QuantStrip {
                a: a.as_ptr(),
                lda: 2 * CHECK_PAIRS,
                strip: Strip {
                    a: std::ptr::null(),
                    lda: 0,
                    rows,
                    scale: row_scales.as_ptr(),
                    c: c.as_mut_ptr(),
                    ldc: CHECK_LD,
                },
            };
            // SAFETY: `a` holds 6 rows of 2·CHECK_PAIRS values, `b` CHECK_PAIRS pairs
            // of 2·NR weights, the scales and the bias NR and 6 values, `c` 6 rows of
            // CHECK_LD >= NR values; the CPU has the tiles' features (this function's
            // contract).
            unsafe { run_tile(tiles, &tile, strip) };
            c
        };
        let wide = if vnni != 0 {
            IntTile::Vnni
        } else {
            IntTile::Avx512
        };
        differing += check::unlike(&run(wide), &run(IntTile::Avx2));
    }
    differing
}

#[cfg(test)]
mod tests {
    use super::super::{matmul, Kernel, Precision};
    use super::*;
    use crate::local::math::activate;
    use crate::local::test_values as values;

    /// The product as the tiles compute it, in portable code: exact integer sums per
    /// group, then the same f32 steps in the same order.
    #[allow(clippy::too_many_arguments)]
    fn twin(
        a: &[f32],
        lda: usize,
        m: usize,
        w: &Packed,
        c: &mut [f32],
        ldc: usize,
        ep: Epilogue<'_>,
    ) {
        let panels = QuantPanels::new(w);
        let (n, k, kp) = (w.n, w.k, panels.kp);
        let mut rows = vec![0i16; m * kp];
        let scales: Vec<f32> = (0..m)
            .map(|i| quantize_row(&a[i * lda..][..k], &mut rows[i * kp..][..kp]))
            .collect();
        for i in 0..m {
            for g in 0..panels.groups {
                let first = g == 0;
                let row = &mut c[i * ldc..][..n];
                for (j, out) in row.iter_mut().enumerate() {
                    let (q, col) = (j / NR, j % NR);
                    let mut sum = 0i32;
                    for p in g * GROUP..k.min((g + 1) * GROUP) {
                        let weight = panels.data[q * kp * NR + (p / 2) * 2 * NR + 2 * col + p % 2];
                        sum += i32::from(rows[i * kp + p]) * i32::from(weight);
                    }
                    let s = panels.scales[(q * panels.groups + g) * NR + col];
                    let mut x = sum as f32 * s * scales[i];
                    if !first || ep.accumulate {
                        x += *out;
                    }
                    if first {
                        if let Some(bias) = ep.bias {
                            x += bias[j];
                        }
                    }
                    *out = x;
                }
                if g + 1 == panels.groups {
                    if let Some(act) = ep.activation {
                        activate(row, act);
                    }
                }
            }
        }
    }

    /// The AVX2 and AVX-512 kernels' packings, where this CPU runs them.
    fn kernels() -> Vec<Kernel> {
        if !super::super::has_avx2_fma() {
            eprintln!("this CPU has no AVX2 + FMA: the integer products are not built for it");
            return Vec::new();
        }
        // The panels are the same for both; the tile is the zmm one for AVX-512's
        // where the CPU has AVX-512BW.
        let mut kernels = vec![Kernel::Avx2];
        if Kernel::Avx512.runs_here() {
            kernels.push(Kernel::Avx512);
        } else {
            eprintln!(
                "this CPU has no AVX-512: the zmm integer tiles are checked in the emulator only"
            );
        }
        kernels
    }

    #[test]
    fn zmm_tiles_agree_with_the_avx2_tile_where_they_run() {
        #[cfg(target_arch = "x86_64")]
        {
            let bw = std::arch::is_x86_feature_detected!("avx512bw");
            if !(crate::local::math::has_avx512() && bw) {
                eprintln!("this CPU has no AVX-512BW: skipped (scripts/avx512-emu runs the check)");
                return;
            }
            // SAFETY: AVX-512F and BW (with AVX2, FMA and F16C) checked above.
            assert_eq!(unsafe { excerpt_int16_avx512_self_check(0) }, 0);
            if std::arch::is_x86_feature_detected!("avx512vnni") {
                // SAFETY: and VNNI.
                assert_eq!(unsafe { excerpt_int16_avx512_self_check(1) }, 0);
            } else {
                eprintln!("this CPU has no AVX-512 VNNI: its tile not checked");
            }
            assert_ne!(IntTile::for_kernel(Kernel::Avx512), IntTile::Avx2);
        }
        assert_eq!(IntTile::for_kernel(Kernel::Avx2), IntTile::Avx2);
    }

    #[test]
    fn only_avx2_keeps_to_the_avx2_tile() {
        assert!(IntTile::forced_avx2(Some("avx2")));
        assert!(IntTile::forced_avx2(Some(" avx2 ")));
        for value in [None, Some(""), Some("auto"), Some("avx512"), Some("AVX2x")] {
            assert!(!IntTile::forced_avx2(value), "{value:?}");
        }
    }

    #[test]
    fn rows_round_alike_in_avx2_and_portable_code() {
        if !super::super::has_avx2_fma() {
            eprintln!("this CPU has no AVX2 + FMA: skipped");
            return;
        }
        for k in [1, 7, 16, 17, 384, 1535] {
            let mut row = values(k, k as u64);
            row[k / 2] *= 40.0;
            if k > 3 {
                // A tie of the rounding: exactly half a step.
                let max = row.iter().fold(0f32, |m, x| m.max(x.abs()));
                row[1] = 2.5 * max / ACTIVATION_MAX;
            }
            let (mut x, mut y) = (vec![0i16; k], vec![0i16; k]);
            let sx = quantize_row(&row, &mut x);
            // SAFETY: AVX2 and FMA checked above; `y` holds k values.
            let sy = unsafe { quantize_row_avx2(&row, &mut y) };
            assert_eq!(x, y, "k {k}");
            assert_eq!(sx.to_bits(), sy.to_bits());
            assert!(x
                .iter()
                .any(|&v| f32::from(v.unsigned_abs()) == ACTIVATION_MAX));
        }
        let zeros = vec![0f32; 20];
        let mut out = vec![5i16; 20];
        assert_eq!(quantize_row(&zeros, &mut out), 0.0);
        assert!(out.iter().all(|&v| v == 0));
    }

    #[test]
    fn tiles_give_the_bits_of_the_portable_twin() {
        let bias = values(80, 9);
        for kernel in kernels() {
            for &(m, n, k) in &[
                (1, 16, 384),
                (5, 17, 3),
                (6, 16, 128),
                (7, 33, 257),
                (25, 80, 1536),
                (61, 48, 384),
                (100, 40, 130),
            ] {
                let (lda, ldc) = (k + 3, n + 5);
                let a = values(m * lda, 1);
                let w = values(n * k, 2);
                let c0 = values(m * ldc, 3);
                let packed = Packed::from_rows(kernel, &w, k, n, k);
                for (accumulate, with_bias) in [(false, false), (true, true), (false, true)] {
                    for parallel in [false, true] {
                        let ep = Epilogue {
                            accumulate,
                            bias: with_bias.then_some(&bias[..n]),
                            weights: Precision::Int16,
                            ..Epilogue::STORE
                        };
                        let mut got = c0.clone();
                        matmul(&a, lda, m, &packed, &mut got, ldc, ep, parallel);
                        let mut want = c0.clone();
                        twin(&a, lda, m, &packed, &mut want, ldc, ep);
                        assert!(
                            got.iter()
                                .zip(&want)
                                .all(|(x, y)| x.to_bits() == y.to_bits()),
                            "m {m} n {n} k {k} accumulate {accumulate} bias {with_bias}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn products_are_close_to_the_f32_ones() {
        let bias = values(64, 9);
        for kernel in kernels() {
            for &(m, n, k) in &[(3, 64, 384), (30, 48, 1536), (50, 17, 200)] {
                let a = values(m * k, 4);
                let w = values(n * k, 5);
                let packed = Packed::from_rows(kernel, &w, k, n, k);
                for activation in [None, Some(crate::local::math::Activation::GeluErf)] {
                    let ep = |weights| Epilogue {
                        bias: Some(&bias[..n]),
                        activation,
                        weights,
                        ..Epilogue::STORE
                    };
                    let mut exact = vec![0f32; m * n];
                    matmul(&a, k, m, &packed, &mut exact, n, ep(Precision::F32), true);
                    let mut rounded = vec![0f32; m * n];
                    matmul(
                        &a,
                        k,
                        m,
                        &packed,
                        &mut rounded,
                        n,
                        ep(Precision::Int16),
                        true,
                    );
                    // Weights and rows uniform in [-1, 1), both rounded to steps of
                    // about 1/2047 and 1/8191: each product is off by a standard
                    // deviation of about (1/2047)/sqrt(12) · 1/sqrt(3) · 1.1, a sum by
                    // sqrt(k) times that; over five of them is far from any chance
                    // failure.
                    let tol = (k as f32).sqrt() / 2047.0;
                    for (x, y) in exact.iter().zip(&rounded) {
                        assert!((x - y).abs() <= tol, "m {m} n {n} k {k}: {x} vs {y}");
                    }
                    let cos = {
                        let dot: f64 = exact
                            .iter()
                            .zip(&rounded)
                            .map(|(x, y)| (x * y) as f64)
                            .sum();
                        let nx: f64 = exact.iter().map(|x| (x * x) as f64).sum();
                        let ny: f64 = rounded.iter().map(|y| (y * y) as f64).sum();
                        dot / (nx * ny).sqrt()
                    };
                    assert!(cos > 0.99999, "cosine {cos}");
                }
            }
        }
    }

    #[test]
    fn weights_round_per_column_and_group() {
        // Column 0 grows along k: each group's scale follows its own largest weight.
        let (n, k) = (2, 300);
        let w: Vec<f32> = (0..n * k)
            .map(|i| if i < k { (i + 1) as f32 } else { -0.5 })
            .collect();
        let packed = Packed::from_rows(Kernel::Avx2, &w, k, n, k);
        let panels = QuantPanels::new(&packed);
        assert_eq!((panels.kp, panels.groups), (300, k.div_ceil(GROUP)));
        for g in 0..panels.groups {
            let largest = (k.min((g + 1) * GROUP)) as f32;
            assert_eq!(panels.scales[g * NR], largest / WEIGHT_MAX);
            assert_eq!(panels.scales[g * NR + 1], 0.5 / WEIGHT_MAX);
            assert_eq!(panels.scales[g * NR + 2], 0.0, "a padding column");
        }
        // The group's largest weight is 2046, the other column's all -2046.
        let last = k - 1;
        assert_eq!(panels.data[(last / 2) * 2 * NR + last % 2], 2046);
        assert!((0..k).all(|p| panels.data[(p / 2) * 2 * NR + 2 + p % 2] == -2046));
    }
}
