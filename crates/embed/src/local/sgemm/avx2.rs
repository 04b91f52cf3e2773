//! The AVX2 + FMA register tiles: 6 rows × 16 columns in twelve `ymm` accumulators
//! ([`kernel_avx2`], and [`kernel_avx2_f16`] reading half-precision weights), tiles of
//! fewer rows for a block's last strip, and `store_ymm_row!`, which finishes a row in
//! registers (the integer tiles of [`quant`](super::quant) use it too).

use super::tile::{finish_row, Strip, Tile};
use super::NR;

/// Defines an AVX2 + FMA register-tile kernel: `$start` is where it reads the panel
/// (`kc` groups of `NR` values) and `$load` loads eight of them at `$p` as f32.
macro_rules! avx2_kernel {
    ($(#[$doc:meta])* $name:ident, $features:literal, |$tile:ident| $start:expr, |$p:ident| $load:expr) => {
        $(#[$doc])*
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        pub(super) unsafe fn $name($tile: &Tile, strip: Strip) {
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
                lo = crate::local::math::x86::activate8(lo, act);
                hi = crate::local::math::x86::activate8(hi, act);
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

/// Defines an AVX2 + FMA register tile of `R` (< [`MR`]) rows, for the last strip of
/// a block: the 6-row tile would compute `MR - R` rows for nothing. Each row's sums
/// are the same operations in the same order as in the 6-row tile, so the products
/// have the same bits. `$start` and `$load` as in `avx2_kernel!`.
macro_rules! narrow_kernel {
    ($(#[$doc:meta])* $name:ident, $features:literal, |$tile:ident| $start:expr, |$p:ident| $load:expr) => {
        $(#[$doc])*
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        pub(super) unsafe fn $name<const R: usize>($tile: &Tile, strip: Strip) {
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
