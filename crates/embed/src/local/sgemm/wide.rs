//! The AVX-512 register tile: [`MR`] rows × two packed panels (32 columns) in sixteen
//! `zmm` accumulators, one broadcast of `A` and two loads of the panels per step of `k`.
//!
//! The tile is written once, over a sixteen-lane vector ([`Lanes16`]), and built
//! twice: on `zmm` registers (AVX-512F, [`Zmm`]) for the products, and on pairs of
//! `ymm` registers (AVX2, [`YmmPair`]) as its twin. The twin computes the same
//! operations in the same order, so both give the same bits; it is how the tile's
//! logic (strips, panels, edges, epilogue) is tested on CPUs without AVX-512, and
//! [`self_check`] compares the two builds on the CPU that runs them.
//!
//! Every output element is the same chain of fused multiply-adds over `k`, in order,
//! as in the AVX2 kernel of six rows × one panel, and the epilogue applies the row
//! scale, `C`, the bias and the activation in the same order: the products are
//! bit-identical to that kernel's. Partial tiles (a last panel narrower than 16
//! columns) load and store with lane masks instead of going through a scalar copy.

use super::{Strip, Tile, TileFn, NR};
use crate::local::math::Activation;

/// Rows of the wide tile; [`super::MC`] is a multiple of it.
pub(super) const MR: usize = 8;

/// Sixteen f32 lanes.
///
/// # Safety
/// Every method may only be called on a CPU with the features its implementation
/// enables; pointers must be valid for the lanes read or written.
pub(super) trait Lanes16: Copy {
    unsafe fn zero() -> Self;
    /// `*p` in every lane.
    unsafe fn broadcast(p: *const f32) -> Self;
    unsafe fn splat(x: f32) -> Self;
    /// Sixteen values from `p`.
    unsafe fn load(p: *const f32) -> Self;
    /// Sixteen half-precision values from `p`, as f32.
    unsafe fn load_half(p: *const u16) -> Self;
    /// Lanes `0..n` from `p` (`n < 16`), zero past them; nothing past `n` is read.
    unsafe fn load_first(p: *const f32, n: usize) -> Self;
    /// `a · b + c`, rounded once.
    unsafe fn fma(a: Self, b: Self, c: Self) -> Self;
    unsafe fn add(a: Self, b: Self) -> Self;
    unsafe fn mul(a: Self, b: Self) -> Self;
    unsafe fn store(self, p: *mut f32);
    /// Lanes `0..n` to `p` (`n < 16`); nothing past `n` is written.
    unsafe fn store_first(self, p: *mut f32, n: usize);
    unsafe fn activate(self, act: Activation) -> Self;
    /// [`sums`] on these vectors, in a function of its own.
    unsafe fn sums<const P: usize, const HALF: bool>(
        tile: &Tile,
        rows: &[*const f32; MR],
    ) -> [[Self; P]; MR];
}

/// The sums of the tile over `P` panels (one or two), reading the panels in half
/// precision when `HALF`: row `i` of `A` is read at `rows[i]`.
///
/// Built in a function of its own (see [`tile`]), so that the sixteen accumulators
/// stay in registers through the loop: inlined into the epilogue's code, one of them
/// went to the stack and back at every step of `k`.
///
/// # Safety
/// As [`tile`], `rows` holding `MR` rows of `tile.kc` readable values.
#[inline(always)]
pub(super) unsafe fn sums<V: Lanes16, const P: usize, const HALF: bool>(
    tile: &Tile,
    rows: &[*const f32; MR],
) -> [[V; P]; MR] {
    // SAFETY: panel `j` is read at groups `0..kc`, within the caller's panels, and
    // each row at `0..kc`, within the caller's rows.
    unsafe {
        let mut acc = [[V::zero(); P]; MR];
        for p in 0..tile.kc {
            let b: [V; P] = std::array::from_fn(|j| {
                let at = j * tile.stride + p * NR;
                if HALF {
                    V::load_half(tile.half.add(at))
                } else {
                    V::load(tile.b.add(at))
                }
            });
            for (row, sums) in rows.iter().zip(acc.iter_mut()) {
                let x = V::broadcast(row.add(p));
                for (sum, b) in sums.iter_mut().zip(&b) {
                    *sum = V::fma(x, *b, *sum);
                }
            }
        }
        acc
    }
}

/// The tile over `P` panels (one or two), reading the panels in half precision
/// when `HALF`.
///
/// # Safety
/// As [`super::kernel_avx2`], with `P` panels of `tile.kc` groups at `tile.b` (or
/// `tile.half`) and `tile.stride` values apart, `strip.rows <= MR`, and `tile.nr`
/// columns with `16 · (P - 1) < tile.nr <= 16 · P`; the CPU has `V`'s features.
#[inline(always)]
pub(super) unsafe fn tile<V: Lanes16, const P: usize, const HALF: bool>(tile: &Tile, strip: Strip) {
    let Strip {
        a,
        lda,
        rows: mr,
        scale,
        c,
        ldc,
    } = strip;
    // SAFETY: rows past `mr` (which may not exist) re-read row 0 and are never stored;
    // the epilogue reads and writes `width` columns of rows `0..mr`, within
    // `tile.nr`; the rest is `sums`'s contract, which is this function's.
    unsafe {
        let rows: [*const f32; MR] =
            std::array::from_fn(|i| if i < mr { a.add(i * lda) } else { a });
        let acc = V::sums::<P, HALF>(tile, &rows);
        for (i, sums) in acc.iter().enumerate().take(mr) {
            let out = c.add(i * ldc);
            for (j, &sum) in sums.iter().enumerate() {
                let col = j * NR;
                let width = tile.nr.saturating_sub(col).min(NR);
                if width == 0 {
                    break;
                }
                let load = |p: *const f32| {
                    if width == NR {
                        V::load(p)
                    } else {
                        V::load_first(p, width)
                    }
                };
                let mut v = sum;
                if !scale.is_null() {
                    v = V::mul(v, V::splat(*scale.add(i)));
                }
                if tile.load_c {
                    v = V::add(v, load(out.add(col)));
                }
                if !tile.bias.is_null() {
                    v = V::add(v, load(tile.bias.add(col)));
                }
                if let Some(act) = tile.activation {
                    v = v.activate(act);
                }
                if width == NR {
                    v.store(out.add(col));
                } else {
                    v.store_first(out.add(col), width);
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) use x86::*;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::*;
    use crate::local::math::x86::activate8;
    use std::arch::x86_64::*;

    /// One `zmm` register.
    #[derive(Clone, Copy)]
    pub(in crate::local::sgemm) struct Zmm(__m512);

    /// The mask of lanes `0..n`.
    #[inline(always)]
    fn first_lanes(n: usize) -> __mmask16 {
        ((1u32 << n.min(16)) - 1) as __mmask16
    }

    impl Lanes16 for Zmm {
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn zero() -> Self {
            Self(_mm512_setzero_ps())
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn broadcast(p: *const f32) -> Self {
            // SAFETY: the caller's pointer holds one f32.
            Self(_mm512_set1_ps(unsafe { *p }))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn splat(x: f32) -> Self {
            Self(_mm512_set1_ps(x))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn load(p: *const f32) -> Self {
            // SAFETY: the caller's pointer holds sixteen f32.
            Self(unsafe { _mm512_loadu_ps(p) })
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn load_half(p: *const u16) -> Self {
            // SAFETY: the caller's pointer holds sixteen half-precision values.
            Self(_mm512_cvtph_ps(unsafe { _mm256_loadu_si256(p.cast()) }))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn load_first(p: *const f32, n: usize) -> Self {
            // SAFETY: masked-off lanes are neither read nor fault; the caller's
            // pointer holds `n` f32.
            Self(unsafe { _mm512_maskz_loadu_ps(first_lanes(n), p) })
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn fma(a: Self, b: Self, c: Self) -> Self {
            Self(_mm512_fmadd_ps(a.0, b.0, c.0))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn add(a: Self, b: Self) -> Self {
            Self(_mm512_add_ps(a.0, b.0))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn mul(a: Self, b: Self) -> Self {
            Self(_mm512_mul_ps(a.0, b.0))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn store(self, p: *mut f32) {
            // SAFETY: the caller's pointer holds sixteen writable f32.
            unsafe { _mm512_storeu_ps(p, self.0) }
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn store_first(self, p: *mut f32, n: usize) {
            // SAFETY: masked-off lanes are not written; the caller's pointer holds `n`
            // writable f32.
            unsafe { _mm512_mask_storeu_ps(p, first_lanes(n), self.0) }
        }
        #[inline]
        #[target_feature(enable = "avx512f,avx2,fma")]
        unsafe fn activate(self, act: Activation) -> Self {
            // The AVX2 formulas on each half, so both builds of the tile agree.
            let x = _mm512_castps_pd(self.0);
            let lo = activate8(_mm512_castps512_ps256(self.0), act);
            let hi = activate8(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(x)), act);
            let joined = _mm512_insertf64x4::<1>(
                _mm512_castpd256_pd512(_mm256_castps_pd(lo)),
                _mm256_castps_pd(hi),
            );
            Self(_mm512_castpd_ps(joined))
        }
        #[inline(never)]
        #[target_feature(enable = "avx512f,avx2,fma,f16c")]
        unsafe fn sums<const P: usize, const HALF: bool>(
            tile: &Tile,
            rows: &[*const f32; MR],
        ) -> [[Self; P]; MR] {
            // SAFETY: the caller's contract is `sums`'s, on a CPU with its features.
            unsafe { sums::<Self, P, HALF>(tile, rows) }
        }
    }

    /// Two `ymm` registers: the wide tile's twin on AVX2.
    #[derive(Clone, Copy)]
    pub(in crate::local::sgemm) struct YmmPair(__m256, __m256);

    /// The lane mask of `_mm256_maskload_ps` for lanes `0..n` (`n` may exceed 8).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn ymm_first_lanes(n: usize) -> __m256i {
        let n = n.min(8) as i32;
        _mm256_cmpgt_epi32(
            _mm256_set1_epi32(n),
            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
        )
    }

    impl Lanes16 for YmmPair {
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn zero() -> Self {
            Self(_mm256_setzero_ps(), _mm256_setzero_ps())
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn broadcast(p: *const f32) -> Self {
            // SAFETY: the caller's pointer holds one f32.
            let x = unsafe { _mm256_broadcast_ss(&*p) };
            Self(x, x)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn splat(x: f32) -> Self {
            Self(_mm256_set1_ps(x), _mm256_set1_ps(x))
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn load(p: *const f32) -> Self {
            // SAFETY: the caller's pointer holds sixteen f32.
            unsafe { Self(_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8))) }
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn load_half(p: *const u16) -> Self {
            // SAFETY: the caller's pointer holds sixteen half-precision values.
            unsafe {
                Self(
                    _mm256_cvtph_ps(_mm_loadu_si128(p.cast())),
                    _mm256_cvtph_ps(_mm_loadu_si128(p.add(8).cast())),
                )
            }
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn load_first(p: *const f32, n: usize) -> Self {
            // SAFETY: masked-off lanes are neither read nor fault; the caller's
            // pointer holds `n` f32, so the upper half's address is in bounds or
            // entirely masked off.
            unsafe {
                Self(
                    _mm256_maskload_ps(p, ymm_first_lanes(n)),
                    _mm256_maskload_ps(p.wrapping_add(8), ymm_first_lanes(n.saturating_sub(8))),
                )
            }
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn fma(a: Self, b: Self, c: Self) -> Self {
            Self(
                _mm256_fmadd_ps(a.0, b.0, c.0),
                _mm256_fmadd_ps(a.1, b.1, c.1),
            )
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn add(a: Self, b: Self) -> Self {
            Self(_mm256_add_ps(a.0, b.0), _mm256_add_ps(a.1, b.1))
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn mul(a: Self, b: Self) -> Self {
            Self(_mm256_mul_ps(a.0, b.0), _mm256_mul_ps(a.1, b.1))
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn store(self, p: *mut f32) {
            // SAFETY: the caller's pointer holds sixteen writable f32.
            unsafe {
                _mm256_storeu_ps(p, self.0);
                _mm256_storeu_ps(p.add(8), self.1);
            }
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn store_first(self, p: *mut f32, n: usize) {
            // SAFETY: masked-off lanes are not written; the caller's pointer holds `n`
            // writable f32.
            unsafe {
                _mm256_maskstore_ps(p, ymm_first_lanes(n), self.0);
                _mm256_maskstore_ps(
                    p.wrapping_add(8),
                    ymm_first_lanes(n.saturating_sub(8)),
                    self.1,
                );
            }
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn activate(self, act: Activation) -> Self {
            Self(activate8(self.0, act), activate8(self.1, act))
        }
        #[inline(never)]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn sums<const P: usize, const HALF: bool>(
            tile: &Tile,
            rows: &[*const f32; MR],
        ) -> [[Self; P]; MR] {
            // SAFETY: the caller's contract is `sums`'s, on a CPU with its features.
            unsafe { sums::<Self, P, HALF>(tile, rows) }
        }
    }

    /// Defines the builds of the wide tile, one function per vector type, panel
    /// count and weight precision.
    macro_rules! wide_kernels {
        ($($name:ident: $v:ty, $p:literal, $half:literal, $features:literal;)*) => {$(
            /// The wide tile ([`tile`]) on this build's vectors.
            ///
            /// # Safety
            /// As [`tile`]; the CPU has this function's target features.
            #[target_feature(enable = $features)]
            pub(in crate::local::sgemm) unsafe fn $name(t: &Tile, strip: Strip) {
                // SAFETY: the caller's contract is `tile`'s, and the features `tile`
                // uses on these vectors are enabled here.
                unsafe { tile::<$v, $p, $half>(t, strip) }
            }
        )*};
    }

    /// Inner length of the self-check's products (odd, so no loop divides it evenly).
    const CHECK_K: usize = 37;
    /// Row stride of the self-check's outputs (wider than two panels: the columns past
    /// a tile must stay untouched).
    const CHECK_LD: usize = 35;

    /// Runs every AVX-512 build of the wide tile and its AVX2 twin on the same small
    /// products (one and two panels, f32 and half-precision weights, full and short
    /// strips and panels, every epilogue) and returns how many output values differ
    /// in their bits; 0 when the builds agree.
    ///
    /// The kernel choice runs it once before taking the AVX-512 kernel. It allocates
    /// nothing and calls no C library function, so it can also run under a CPU
    /// emulator on machines without AVX-512 (`scripts/avx512-emu`).
    ///
    /// # Safety
    /// The CPU must support AVX-512F, AVX2, FMA and F16C.
    #[no_mangle]
    pub unsafe extern "C" fn excerpt_avx512_self_check() -> u64 {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut value = move || (next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0;
        let a: [f32; MR * CHECK_K] = std::array::from_fn(|_| value());
        let b: [f32; 2 * CHECK_K * NR] = std::array::from_fn(|_| value());
        let bias: [f32; 2 * NR] = std::array::from_fn(|_| value());
        let scale: [f32; MR] = std::array::from_fn(|_| value());
        // Half-precision weights in ±[2^-3, 2): sign, exponent 12..=15, mantissa.
        let half: [u16; 2 * CHECK_K * NR] = std::array::from_fn(|_| {
            let bits = (value().to_bits() >> 9) as u16;
            (bits & 0x83FF) | ((12 + (bits >> 10) % 4) << 10)
        });
        let activations = [
            None,
            Some(Activation::GeluErf),
            Some(Activation::GeluTanh),
            Some(Activation::Relu),
        ];
        let mut differing = 0u64;
        for case in 0..64usize {
            let panels = 1 + case % 2;
            let in_half = (case / 2) % 2 == 1;
            let activation = activations[(case / 4) % 4];
            let rows = if (case / 16) % 2 == 0 { MR } else { 3 };
            let nr = if case / 32 == 0 {
                panels * NR
            } else {
                panels * NR - 5
            };
            let tile = Tile {
                kc: CHECK_K,
                b: b.as_ptr(),
                half: if in_half {
                    half.as_ptr()
                } else {
                    std::ptr::null()
                },
                stride: CHECK_K * NR,
                nr,
                load_c: case % 3 != 0,
                bias: if case % 5 < 3 {
                    bias.as_ptr()
                } else {
                    std::ptr::null()
                },
                activation,
            };
            let run = |f: TileFn| {
                let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ case as u64;
                let mut c: [f32; MR * CHECK_LD] = std::array::from_fn(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    (seed >> 40) as f32 / (1u64 << 23) as f32 - 1.0
                });
                let strip = Strip {
                    a: a.as_ptr(),
                    lda: CHECK_K,
                    rows,
                    scale: if case % 7 < 4 {
                        scale.as_ptr()
                    } else {
                        std::ptr::null()
                    },
                    c: c.as_mut_ptr(),
                    ldc: CHECK_LD,
                };
                // SAFETY: `a` holds MR rows of CHECK_K values, `b` and `half` two panels
                // of CHECK_K groups of NR values CHECK_K·NR apart, `bias` 2·NR values,
                // `scale` MR values, `c` MR rows of CHECK_LD >= 2·NR values; `nr` is
                // within the panels; the CPU has the features (this function's
                // contract).
                unsafe { f(&tile, strip) };
                c
            };
            let (wide, twin): (TileFn, TileFn) = match (panels, in_half) {
                (1, false) => (avx512_1, twin_1),
                (1, true) => (avx512_1_f16, twin_1_f16),
                (_, false) => (avx512_2, twin_2),
                (_, true) => (avx512_2_f16, twin_2_f16),
            };
            let (x, y) = (run(wide), run(twin));
            differing += x
                .iter()
                .zip(&y)
                .filter(|(x, y)| x.to_bits() != y.to_bits())
                .count() as u64;
        }
        differing
    }

    wide_kernels! {
        avx512_1: Zmm, 1, false, "avx512f,avx2,fma,f16c";
        avx512_2: Zmm, 2, false, "avx512f,avx2,fma,f16c";
        avx512_1_f16: Zmm, 1, true, "avx512f,avx2,fma,f16c";
        avx512_2_f16: Zmm, 2, true, "avx512f,avx2,fma,f16c";
        twin_1: YmmPair, 1, false, "avx2,fma,f16c";
        twin_2: YmmPair, 2, false, "avx2,fma,f16c";
        twin_1_f16: YmmPair, 1, true, "avx2,fma,f16c";
        twin_2_f16: YmmPair, 2, true, "avx2,fma,f16c";
    }
}
