//! The AVX-512 register tile: [`MR`] rows × two packed panels (32 columns) in sixteen
//! `zmm` accumulators, one broadcast of `A` and two loads of the panels per step of `k`.
//!
//! The tile is written once, over sixteen lanes ([`Lanes16`]), and built twice: on
//! `zmm` registers (AVX-512F) for the products, and on pairs of `ymm` registers (AVX2)
//! as its twin. The twin computes the same operations in the same order, so both give
//! the same bits; it is how the tile's logic (strips, panels, edges, epilogue) is
//! tested on CPUs without AVX-512, and [`excerpt_avx512_self_check`] compares the two
//! builds on the CPU (or the emulator) that runs them.
//!
//! Every output element is the same chain of fused multiply-adds over `k`, in order,
//! as in the AVX2 kernel of six rows × one panel, and the epilogue applies the row
//! scale, `C`, the bias and the activation in the same order (the activation as
//! `activate8` does, on sixteen lanes): the products are bit-identical to that
//! kernel's. Partial tiles (a last panel narrower than 16 columns) load and store with
//! lane masks instead of going through a scalar copy.

use super::tile::{Strip, Tile, TileFn};
use super::NR;
use crate::local::lanes::Lanes16;
#[cfg(target_arch = "x86_64")]
use crate::local::lanes::{
    exp_shifted_row_avx512, exp_shifted_row_twin, layer_norm_row_avx512, layer_norm_row_twin,
    YmmPair, Zmm,
};

/// Rows of the wide tile; [`super::MC`] is a multiple of it.
pub(super) const MR: usize = 8;

/// [`sums`] on a vector type, in a function of its own.
pub(super) trait TileSums: Lanes16 {
    /// [`sums`] on these vectors, not inlined.
    ///
    /// # Safety
    /// As [`sums`]; the CPU has the vectors' features.
    unsafe fn sums<const P: usize, const HALF: bool>(
        tile: &Tile,
        rows: &[*const f32; MR],
    ) -> [[Self; P]; MR];
}

/// The sums of the tile over `P` panels (one or two), reading the panels in half
/// precision when `HALF`: row `i` of `A` is read at `rows[i]`.
///
/// Called through [`TileSums::sums`], whose builds ask not to be inlined: with the
/// loop written inside the epilogue's code, one of the sixteen accumulators went to
/// the stack and back at every step of `k`. (The compiler may inline it all the same;
/// what matters, and was checked in the release build's machine code, is a loop of 2
/// loads, 8 broadcasts and 16 FMAs with every accumulator in a register.)
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
/// As [`super::avx2::kernel_avx2`], with `P` panels of `tile.kc` groups at `tile.b` (or
/// `tile.half`) and `tile.stride` values apart, `strip.rows <= MR`, and `tile.nr`
/// columns with `16 · (P - 1) < tile.nr <= 16 · P`; the CPU has `V`'s features.
#[inline(always)]
pub(super) unsafe fn tile<V: TileSums, const P: usize, const HALF: bool>(
    tile: &Tile,
    strip: Strip,
) {
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

    impl TileSums for Zmm {
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

    impl TileSums for YmmPair {
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
    /// strips and panels, every epilogue), and the sixteen-lane softmax exponentials
    /// and layer norm on both on rows of several lengths, and returns how many output
    /// values differ in their bits; 0 when the builds agree.
    ///
    /// The kernel choice runs it once before taking the AVX-512 kernel. It allocates
    /// nothing and calls no C library function, so it can also run under a CPU
    /// emulator on machines without AVX-512 (`scripts/avx512-emu`).
    ///
    /// # Safety
    /// The CPU must support AVX-512F, AVX2, FMA and F16C.
    #[no_mangle]
    pub unsafe extern "C" fn excerpt_avx512_self_check() -> u64 {
        use crate::local::sgemm::check;
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut value = move || check::unit(&mut state);
        let a: [f32; MR * CHECK_K] = std::array::from_fn(|_| value());
        let b: [f32; 2 * CHECK_K * NR] = std::array::from_fn(|_| value());
        let bias: [f32; 2 * NR] = std::array::from_fn(|_| value());
        let scale: [f32; MR] = std::array::from_fn(|_| value());
        // Half-precision weights in ±[2^-3, 2): sign, exponent 12..=15, mantissa.
        let half: [u16; 2 * CHECK_K * NR] = std::array::from_fn(|_| {
            let bits = (value().to_bits() >> 9) as u16;
            (bits & 0x83FF) | ((12 + (bits >> 10) % 4) << 10)
        });
        let mut differing = 0u64;
        for case in 0..64usize {
            let panels = 1 + case % 2;
            let in_half = (case / 2) % 2 == 1;
            let activation = check::ACTIVATIONS[(case / 4) % 4];
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
                let mut c: [f32; MR * CHECK_LD] = std::array::from_fn(|_| check::unit(&mut seed));
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
            differing += check::unlike(&run(wide), &run(twin));
        }
        // The forward pass's row steps on sixteen lanes: softmax exponentials (with
        // their normalising factor) and layer norm, at lengths around the lane count.
        let gamma: [f32; 384] = std::array::from_fn(|_| value());
        let beta: [f32; 384] = std::array::from_fn(|_| value());
        let row = |seed: u64| -> [f32; 384] {
            let mut s = 0x9E37_79B9_7F4A_7C15u64 ^ seed;
            std::array::from_fn(|_| check::unit(&mut s) * 8.0)
        };
        let unlike = check::unlike;
        for (i, len) in [1usize, 15, 16, 17, 250, 384].into_iter().enumerate() {
            let (mut x, mut y) = (row(i as u64), row(i as u64));
            // SAFETY: the CPU has AVX-512F, AVX2, FMA and F16C (this function's
            // contract); `gamma` and `beta` hold 384 >= len values.
            unsafe {
                let (sx, sy) = (
                    exp_shifted_row_avx512(&mut x[..len]),
                    exp_shifted_row_twin(&mut y[..len]),
                );
                differing += unlike(&[sx], &[sy]) + unlike(&x, &y);
                let (mut x, mut y) = (row(100 + i as u64), row(100 + i as u64));
                layer_norm_row_avx512(&mut x[..len], &gamma, &beta, 1e-12);
                layer_norm_row_twin(&mut y[..len], &gamma, &beta, 1e-12);
                differing += unlike(&x, &y);
            }
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
