//! Single-precision matrix products for the encoder: `C = A · Wᵀ (+ C) (+ bias)`,
//! then an optional activation, with `W` packed once.
//!
//! A model's weights never change, so they are rearranged at load into the layout the
//! inner kernel reads ([`Packed`]: panels of [`NR`] output columns, each stored
//! `k`-major and zero-padded), instead of being repacked on every product as a
//! general-purpose library does. The activations `A` are read in place.
//!
//! The loops follow the usual cache blocking: rows in blocks of [`MC`] (their `A`
//! block stays in L2), the inner dimension in blocks of at most [`KC`] (a `KC × NR`
//! panel of `W` stays in L1 while every `MR`-row micro-panel of the block passes over
//! it), and an `MR × NR` register tile per kernel call. On x86-64 with AVX2 and FMA
//! the kernel keeps the 6 × 16 tile in twelve `ymm` registers; elsewhere a portable
//! kernel computes the same tile. The epilogue of the last `k` block adds the bias
//! and applies the activation while the tile is still in registers, so no separate
//! pass over `C` is needed. Row blocks run in parallel on rayon's threads.

use rayon::prelude::*;

use crate::math::{activate, Activation};

/// Rows of the register tile.
pub(crate) const MR: usize = 6;
/// Columns of the register tile (two AVX vectors).
pub(crate) const NR: usize = 16;
/// Largest block of the inner dimension: a `KC × NR` weight panel is 16 KiB.
const KC: usize = 256;
/// Rows per block (a multiple of `MR`); also the unit of parallel work.
const MC: usize = 96;

/// A matrix packed for use as the right operand (`Wᵀ`) of [`matmul`].
///
/// Logically `n × k` (row `j` holds the `k` weights of output column `j`). Stored as
/// `ceil(n / NR)` panels; panel `q` is `k` groups of `NR` values, group `p` holding
/// `W[q·NR + c][p]` for `c < NR` (zero past `n`).
#[derive(Default)]
pub(crate) struct Packed {
    n: usize,
    k: usize,
    data: Vec<f32>,
}

impl Packed {
    /// Packs `w`, `n` rows of `k` values with row stride `ldw` (a linear layer's
    /// weight is `n × k` row-major: `ldw = k`).
    pub(crate) fn from_rows(w: &[f32], ldw: usize, n: usize, k: usize) -> Self {
        let mut packed = Self::default();
        packed.pack_rows(w, ldw, n, k);
        packed
    }

    /// Repacks in place from `n` rows of `k` values, row stride `ldw` (reusing the
    /// allocation).
    pub(crate) fn pack_rows(&mut self, w: &[f32], ldw: usize, n: usize, k: usize) {
        assert!(n == 0 || k == 0 || w.len() >= (n - 1) * ldw + k);
        self.reset(n, k);
        for (q, panel) in self.data.chunks_exact_mut(k * NR).enumerate() {
            for c in 0..NR.min(n - q * NR) {
                let row = &w[(q * NR + c) * ldw..][..k];
                for (p, &x) in row.iter().enumerate() {
                    panel[p * NR + c] = x;
                }
            }
        }
    }

    /// Repacks in place from the transpose: `b` is `k` rows of `n` values with row
    /// stride `ldb`, and the packed matrix is `bᵀ` (so [`matmul`] computes `A · b`).
    pub(crate) fn pack_cols(&mut self, b: &[f32], ldb: usize, k: usize, n: usize) {
        assert!(n == 0 || k == 0 || b.len() >= (k - 1) * ldb + n);
        self.reset(n, k);
        for (q, panel) in self.data.chunks_exact_mut(k * NR).enumerate() {
            let cols = NR.min(n - q * NR);
            for p in 0..k {
                panel[p * NR..][..cols].copy_from_slice(&b[p * ldb + q * NR..][..cols]);
            }
        }
    }

    fn reset(&mut self, n: usize, k: usize) {
        self.n = n;
        self.k = k;
        self.data.clear();
        self.data.resize(n.div_ceil(NR) * k * NR, 0.0);
    }

    /// Output columns.
    pub(crate) fn n(&self) -> usize {
        self.n
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
}

impl Epilogue<'_> {
    /// Plain `C = A · Wᵀ`.
    pub(crate) const STORE: Epilogue<'static> = Epilogue {
        accumulate: false,
        bias: None,
        activation: None,
    };
}

/// `C (m × n, row stride ldc) = act(A (m × k, row stride lda) · Wᵀ [+ C] [+ bias])`,
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
    // SAFETY: C's extent was just checked; the rest is checked by `matmul_to`.
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
    let out = SendPtr(c);
    let block = |first_row: usize| {
        let rows = MC.min(m - first_row);
        // SAFETY: rows first_row..first_row+rows of A are in bounds (asserted above),
        // those of C by the caller's contract, and each call writes only its own rows.
        unsafe {
            block_product(
                a.as_ptr().add(first_row * lda),
                lda,
                rows,
                w,
                out.get().add(first_row * ldc),
                ldc,
                epilogue,
            )
        }
    };
    let blocks = m.div_ceil(MC);
    if parallel && blocks > 1 && rayon::current_num_threads() > 1 {
        (0..blocks).into_par_iter().for_each(|b| block(b * MC));
    } else {
        (0..blocks).for_each(|b| block(b * MC));
    }
}

/// A raw pointer that may cross threads; every user writes a disjoint region.
#[derive(Clone, Copy)]
pub(crate) struct SendPtr(pub(crate) *mut f32);
// SAFETY: used only to hand disjoint output regions to parallel tasks.
unsafe impl Send for SendPtr {}
// SAFETY: as above.
unsafe impl Sync for SendPtr {}

impl SendPtr {
    /// The pointer (a method, so closures capture the whole `Send` wrapper).
    pub(crate) fn get(self) -> *mut f32 {
        self.0
    }
}

/// One block of at most `MC` rows, all columns.
///
/// # Safety
/// `a` must point at `rows` rows of `w.k` readable values (stride `lda`), `c` at
/// `rows` rows of `w.n` writable values (stride `ldc`).
unsafe fn block_product(
    a: *const f32,
    lda: usize,
    rows: usize,
    w: &Packed,
    c: *mut f32,
    ldc: usize,
    epilogue: Epilogue<'_>,
) {
    // SAFETY: the caller's contract covers every pointer offset and kernel call below.
    unsafe {
        let (n, k) = (w.n, w.k);
        let k_blocks = k.div_ceil(KC);
        let kc_max = k.div_ceil(k_blocks);
        let panels = n.div_ceil(NR);
        let simd = crate::math::has_avx2_fma();
        PACKED_A.with_borrow_mut(|packed_a| {
        for kb in 0..k_blocks {
            let pc = kb * kc_max;
            let kc = kc_max.min(k - pc);
            let first = kb == 0;
            let last = kb + 1 == k_blocks;
            // Packing pays when each micro-panel of A meets several panels of W.
            let pack = panels >= PACK_A_MIN_PANELS;
            if pack {
                pack_a(packed_a, a.add(pc), lda, rows, kc);
            }
            for q in 0..panels {
                let col = q * NR;
                let tile = Tile {
                    kc,
                    b: w.data.as_ptr().add(q * k * NR + pc * NR),
                    nr: NR.min(n - col),
                    load_c: !first || epilogue.accumulate,
                    bias: match epilogue.bias {
                        Some(bias) if first => bias.as_ptr().add(col),
                        _ => std::ptr::null(),
                    },
                    activation: if last { epilogue.activation } else { None },
                };
                for ir in (0..rows).step_by(MR) {
                    let a = if pack {
                        Rows {
                            ptr: packed_a.as_ptr().add(ir * kc),
                            row_stride: 1,
                            step: MR,
                        }
                    } else {
                        Rows {
                            ptr: a.add(ir * lda + pc),
                            row_stride: lda,
                            step: 1,
                        }
                    };
                    let c = c.add(ir * ldc + col);
                    let mr = MR.min(rows - ir);
                    #[cfg(target_arch = "x86_64")]
                    if simd {
                        kernel_avx2(&tile, a, mr, c, ldc);
                        continue;
                    }
                    let _ = simd;
                    kernel_portable(&tile, a, mr, c, ldc);
                }
            }
        }
        });
    }
}

/// Fewest panels of `W` for which a block of `A` is packed before use.
const PACK_A_MIN_PANELS: usize = 4;

/// Up to `MR` rows of `A` as the kernel reads them: element `(i, p)` is at
/// `ptr + i * row_stride + p * step` (packed: `(1, MR)`, in place: `(lda, 1)`).
#[derive(Clone, Copy)]
struct Rows {
    ptr: *const f32,
    row_stride: usize,
    step: usize,
}

thread_local! {
    /// The current row block of `A`, packed by [`pack_a`] (one per thread).
    static PACKED_A: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Packs `rows` rows of `kc` values (stride `lda`) into micro-panels of `MR` rows,
/// each stored `k`-major (`kc` groups of `MR` values), zero-padding the last panel,
/// so the kernel reads `A` as one sequential stream.
///
/// # Safety
/// `a` must point at `rows` rows of `kc` readable values with stride `lda`.
unsafe fn pack_a(dst: &mut Vec<f32>, a: *const f32, lda: usize, rows: usize, kc: usize) {
    let panels = rows.div_ceil(MR);
    dst.clear();
    dst.reserve(panels * MR * kc);
    // SAFETY: rows 0..rows of `kc` values are readable (the caller's contract); the
    // writes fill exactly the `panels * MR * kc` values reserved above, in order.
    unsafe {
        let mut out = dst.as_mut_ptr();
        for panel in 0..panels {
            let first = panel * MR;
            let full = rows - first >= MR;
            let row = |i: usize| a.add((first + i.min(rows - first - 1)) * lda);
            let src = [row(0), row(1), row(2), row(3), row(4), row(5)];
            if full {
                for p in 0..kc {
                    for (i, r) in src.iter().enumerate() {
                        *out.add(i) = *r.add(p);
                    }
                    out = out.add(MR);
                }
            } else {
                let live = rows - first;
                for p in 0..kc {
                    for (i, r) in src.iter().enumerate() {
                        *out.add(i) = if i < live { *r.add(p) } else { 0.0 };
                    }
                    out = out.add(MR);
                }
            }
        }
        dst.set_len(panels * MR * kc);
    }
}

/// What one register tile computes, shared by the row tiles of a panel.
struct Tile {
    /// Inner-dimension length of this block.
    kc: usize,
    /// The packed panel at this block: `kc` groups of `NR` values.
    b: *const f32,
    /// Valid columns of the tile (`NR` except in the last panel).
    nr: usize,
    /// Add the tile to what `C` holds.
    load_c: bool,
    /// `nr` bias values to add, or null.
    bias: *const f32,
    activation: Option<Activation>,
}

/// Adds `C`, the bias and the activation to one accumulated tile row and stores it.
///
/// # Safety
/// `row` must hold `tile.nr` writable values, `tile.bias` (if not null) `tile.nr`.
#[inline(always)]
unsafe fn finish_row(tile: &Tile, acc: &mut [f32; NR], row: *mut f32) {
    // SAFETY: the caller's contract bounds `row` and `tile.bias` to `tile.nr` values.
    unsafe {
        let nr = tile.nr;
        if tile.load_c {
            for j in 0..nr {
                acc[j] += *row.add(j);
            }
        }
        if !tile.bias.is_null() {
            for j in 0..nr {
                acc[j] += *tile.bias.add(j);
            }
        }
        if let Some(act) = tile.activation {
            activate(acc, act);
        }
        std::ptr::copy_nonoverlapping(acc.as_ptr(), row, nr);
    }
}

/// The portable register tile (the compiler vectorises the `NR`-wide rows).
///
/// # Safety
/// `a` holds `mr` rows of `tile.kc` readable values (`MR` rows if packed), `c` points
/// at `mr` rows of `tile.nr` values (stride `ldc`).
unsafe fn kernel_portable(tile: &Tile, a: Rows, mr: usize, c: *mut f32, ldc: usize) {
    // SAFETY: the caller's contract bounds every read of `a`, `tile.b` and `c`.
    unsafe {
        let mut acc = [[0f32; NR]; MR];
        for p in 0..tile.kc {
            let b = &*(tile.b.add(p * NR) as *const [f32; NR]);
            for (i, row) in acc.iter_mut().enumerate().take(mr) {
                let x = *a.ptr.add(i * a.row_stride + p * a.step);
                for j in 0..NR {
                    row[j] += x * b[j];
                }
            }
        }
        for (i, row) in acc.iter_mut().enumerate().take(mr) {
            finish_row(tile, row, c.add(i * ldc));
        }
    }
}

/// The AVX2 + FMA register tile: 6 rows × 16 columns in twelve `ymm` accumulators,
/// one broadcast of `A` and two loads of the panel per step of `k`.
///
/// # Safety
/// As [`kernel_portable`]; the CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn kernel_avx2(tile: &Tile, a: Rows, mr: usize, c: *mut f32, ldc: usize) {
    // SAFETY: the caller's contract bounds every read and write; the CPU has AVX2 and FMA.
    unsafe {
        use std::arch::x86_64::*;
        // Rows past `mr` read row 0 again (in place, later rows may not exist); their
        // sums are discarded.
        let row = |i: usize| {
            if i < mr {
                a.ptr.add(i * a.row_stride)
            } else {
                a.ptr
            }
        };
        let (a0, a1, a2, a3, a4, a5) = (row(0), row(1), row(2), row(3), row(4), row(5));
        let mut off = 0;
        let z = _mm256_setzero_ps();
        let (mut c00, mut c01, mut c10, mut c11, mut c20, mut c21) = (z, z, z, z, z, z);
        let (mut c30, mut c31, mut c40, mut c41, mut c50, mut c51) = (z, z, z, z, z, z);
        let mut b = tile.b;
        for _ in 0..tile.kc {
            let b0 = _mm256_loadu_ps(b);
            let b1 = _mm256_loadu_ps(b.add(8));
            let x = _mm256_broadcast_ss(&*a0.add(off));
            c00 = _mm256_fmadd_ps(x, b0, c00);
            c01 = _mm256_fmadd_ps(x, b1, c01);
            let x = _mm256_broadcast_ss(&*a1.add(off));
            c10 = _mm256_fmadd_ps(x, b0, c10);
            c11 = _mm256_fmadd_ps(x, b1, c11);
            let x = _mm256_broadcast_ss(&*a2.add(off));
            c20 = _mm256_fmadd_ps(x, b0, c20);
            c21 = _mm256_fmadd_ps(x, b1, c21);
            let x = _mm256_broadcast_ss(&*a3.add(off));
            c30 = _mm256_fmadd_ps(x, b0, c30);
            c31 = _mm256_fmadd_ps(x, b1, c31);
            let x = _mm256_broadcast_ss(&*a4.add(off));
            c40 = _mm256_fmadd_ps(x, b0, c40);
            c41 = _mm256_fmadd_ps(x, b1, c41);
            let x = _mm256_broadcast_ss(&*a5.add(off));
            c50 = _mm256_fmadd_ps(x, b0, c50);
            c51 = _mm256_fmadd_ps(x, b1, c51);
            b = b.add(NR);
            off += a.step;
        }
        let sums = [
            (c00, c01),
            (c10, c11),
            (c20, c21),
            (c30, c31),
            (c40, c41),
            (c50, c51),
        ];
        let full = tile.nr == NR && tile.activation.is_none();
        for (i, &(lo, hi)) in sums.iter().enumerate().take(mr) {
            let out = c.add(i * ldc);
            if full {
                // The common case without activation stays in registers.
                let (mut lo, mut hi) = (lo, hi);
                if tile.load_c {
                    lo = _mm256_add_ps(lo, _mm256_loadu_ps(out));
                    hi = _mm256_add_ps(hi, _mm256_loadu_ps(out.add(8)));
                }
                if !tile.bias.is_null() {
                    lo = _mm256_add_ps(lo, _mm256_loadu_ps(tile.bias));
                    hi = _mm256_add_ps(hi, _mm256_loadu_ps(tile.bias.add(8)));
                }
                _mm256_storeu_ps(out, lo);
                _mm256_storeu_ps(out.add(8), hi);
            } else {
                let mut acc = [0f32; NR];
                _mm256_storeu_ps(acc.as_mut_ptr(), lo);
                _mm256_storeu_ps(acc.as_mut_ptr().add(8), hi);
                finish_row(tile, &mut acc, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random values in [-1, 1).
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            })
            .collect()
    }

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

    fn check(m: usize, n: usize, k: usize, ep: Epilogue<'_>, parallel: bool) {
        let (lda, ldc) = (k + 3, n + 5);
        let a = values(m * lda, 1);
        let w = values(n * k, 2);
        let c0 = values(m * ldc, 3);
        let packed = Packed::from_rows(&w, k, n, k);
        let mut c = c0.clone();
        matmul(&a, lda, m, &packed, &mut c, ldc, ep, parallel);
        let want = naive(&a, lda, m, &w, n, k, &c0, ldc, ep);
        for (idx, (got, want)) in c.iter().zip(&want).enumerate() {
            let tol = 1e-5 * (k as f32).sqrt() * want.abs().max(1.0);
            assert!(
                (got - want).abs() <= tol,
                "m {m} n {n} k {k} at {idx}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn products_match_naive_for_odd_shapes() {
        let bias = values(64, 9);
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
                },
                Epilogue {
                    accumulate: false,
                    bias: Some(&bias[..n]),
                    activation: Some(Activation::GeluErf),
                },
                Epilogue {
                    accumulate: true,
                    bias: None,
                    activation: Some(Activation::Relu),
                },
            ] {
                check(m, n, k, ep, false);
                check(m, n, k, ep, true);
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
        let mut from_cols = Packed::default();
        from_cols.pack_cols(&b, n, k, n);
        let from_rows = Packed::from_rows(&bt, k, n, k);
        assert_eq!(from_cols.data, from_rows.data);
    }

    #[test]
    fn portable_and_simd_kernels_agree() {
        let (m, n, k) = (13, 35, 300);
        let a = values(m * k, 5);
        let w = Packed::from_rows(&values(n * k, 6), k, n, k);
        let bias = values(n, 7);
        let tile_for = |q: usize, kb_start: usize, kc: usize| Tile {
            kc,
            b: unsafe { w.data.as_ptr().add(q * k * NR + kb_start * NR) },
            nr: NR.min(n - q * NR),
            load_c: true,
            bias: unsafe { bias.as_ptr().add(q * NR) },
            activation: Some(Activation::GeluTanh),
        };
        if !crate::math::has_avx2_fma() {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        for q in 0..n.div_ceil(NR) {
            for ir in (0..m).step_by(MR) {
                let mr = MR.min(m - ir);
                let tile = tile_for(q, 0, k);
                let c0 = values(mr * NR, 8);
                let mut panel = Vec::new();
                let mut outs = Vec::new();
                unsafe {
                    pack_a(&mut panel, a.as_ptr().add(ir * k), k, mr, k);
                    let packed = Rows {
                        ptr: panel.as_ptr(),
                        row_stride: 1,
                        step: MR,
                    };
                    let in_place = Rows {
                        ptr: a.as_ptr().add(ir * k),
                        row_stride: k,
                        step: 1,
                    };
                    for rows in [packed, in_place] {
                        let mut c = c0.clone();
                        kernel_portable(&tile, rows, mr, c.as_mut_ptr(), NR);
                        outs.push(c);
                        let mut c = c0.clone();
                        kernel_avx2(&tile, rows, mr, c.as_mut_ptr(), NR);
                        outs.push(c);
                    }
                }
                let (c1, rest) = outs.split_first().unwrap();
                for c2 in rest {
                    for (x, y) in c1.iter().zip(c2) {
                        assert!((x - y).abs() <= 1e-4 * x.abs().max(1.0), "{x} vs {y}");
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod speed {
    use super::*;
    #[test]
    #[ignore]
    fn gflops() {
        for &(m, n, k) in &[(8000, 1152, 384), (8000, 384, 384), (8000, 1536, 384), (8000, 384, 1536), (252, 252, 32), (252, 32, 252)] {
            let a = vec![0.5f32; m * k];
            let w = Packed::from_rows(&vec![0.25f32; n * k], k, n, k);
            let mut c = vec![0f32; m * n];
            for par in [false, true] {
                let reps = if m < 1000 { 1000 } else { 2 };
                let mut s = f64::MAX;
                for _ in 0..4 {
                let t = std::time::Instant::now();
                for _ in 0..reps {
                    matmul(&a, k, m, &w, &mut c, n, Epilogue::STORE, par);
                }
                s = s.min(t.elapsed().as_secs_f64());
                }
                println!("m {m} n {n} k {k} par {par}: {:.1} GFLOP/s", 2.0 * (m * n * k * reps) as f64 / s / 1e9);
            }
        }
    }
}
