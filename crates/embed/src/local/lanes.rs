//! Sixteen f32 lanes ([`Lanes16`]) on one `zmm` register (AVX-512F, [`Zmm`]) or on a
//! pair of `ymm` registers (AVX2, [`YmmPair`]), and the element-wise steps of the
//! encoder written once over them: the activations, the softmax exponentials and the
//! layer norm of a row.
//!
//! The two types run the same operations in the same order, so the same code gives the
//! same bits on both: the `ymm` build is the `zmm` build's twin, which tests its logic
//! on CPUs without AVX-512, and which the AVX-512 self-check
//! (`sgemm::wide::excerpt_avx512_self_check`) compares it with on the CPU (or the
//! emulator) that runs it. The activations follow [`super::math::x86::activate8`]
//! operation for operation, so on 16 lanes they give its bits too.

use super::math::{
    exp_f32, Activation, A1, A2, A3, A4, A5, LN2_HI, LN2_LO, LOG2E, MAGIC, P, SQRT_2_OVER_PI,
};

/// Sixteen f32 lanes.
///
/// # Safety
/// Every method may only be called on a CPU with the features its implementation
/// enables; pointers must be valid for the lanes read or written.
pub(crate) trait Lanes16: Copy {
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
    /// `c − a · b`, rounded once.
    unsafe fn fnma(a: Self, b: Self, c: Self) -> Self;
    unsafe fn add(a: Self, b: Self) -> Self;
    unsafe fn sub(a: Self, b: Self) -> Self;
    unsafe fn mul(a: Self, b: Self) -> Self;
    unsafe fn div(a: Self, b: Self) -> Self;
    unsafe fn min(a: Self, b: Self) -> Self;
    unsafe fn max(a: Self, b: Self) -> Self;
    /// `|x|` (the sign bit cleared).
    unsafe fn abs(x: Self) -> Self;
    /// `−x` (the sign bit flipped).
    unsafe fn neg(x: Self) -> Self;
    /// `yes` in the lanes where `x ≥ 0` (false for NaN), `no` elsewhere.
    unsafe fn select_non_negative(x: Self, yes: Self, no: Self) -> Self;
    /// `p · 2^k` with `k` the integer held in the low mantissa bits of `shifted`
    /// (`shifted = y + MAGIC`, `k = bits(shifted) − bits(MAGIC)`), built in the
    /// exponent field as [`exp_f32`] does.
    unsafe fn scale_by_exponent(p: Self, shifted: Self, magic: Self) -> Self;
    unsafe fn store(self, p: *mut f32);
    /// Lanes `0..n` to `p` (`n < 16`); nothing past `n` is written.
    unsafe fn store_first(self, p: *mut f32, n: usize);
    /// [`activate16`] on these vectors.
    unsafe fn activate(self, act: Activation) -> Self;
}

/// [`exp_f32`] on sixteen lanes, with fused multiply-adds (as the AVX2 `exp8`).
///
/// # Safety
/// The CPU has `V`'s features.
#[inline(always)]
pub(crate) unsafe fn exp16<V: Lanes16>(x: V) -> V {
    // SAFETY: arithmetic on registers only; the CPU has `V`'s features (the contract).
    unsafe {
        let x = V::min(V::max(x, V::splat(-87.0)), V::splat(88.0));
        let magic = V::splat(MAGIC);
        let shifted = V::fma(x, V::splat(LOG2E), magic);
        let n = V::sub(shifted, magic);
        let r = V::fnma(n, V::splat(LN2_HI), x);
        let r = V::fnma(n, V::splat(LN2_LO), r);
        let mut p = V::splat(1.0 / 720.0);
        for c in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
            p = V::fma(p, r, V::splat(c));
        }
        V::scale_by_exponent(p, shifted, magic)
    }
}

/// The activations on sixteen lanes: the operations of `activate8`, in its order.
///
/// # Safety
/// The CPU has `V`'s features.
#[inline(always)]
pub(crate) unsafe fn activate16<V: Lanes16>(x: V, act: Activation) -> V {
    // SAFETY: arithmetic on registers only; the CPU has `V`'s features (the contract).
    unsafe {
        let one = V::splat(1.0);
        match act {
            Activation::GeluErf => {
                let z = V::mul(V::abs(x), V::splat(std::f32::consts::FRAC_1_SQRT_2));
                let t = V::div(one, V::fma(V::splat(P), z, one));
                let mut poly = V::splat(A5);
                for c in [A4, A3, A2, A1] {
                    poly = V::fma(poly, t, V::splat(c));
                }
                poly = V::mul(poly, t);
                let e = exp16(V::neg(V::mul(z, z)));
                let q = V::mul(V::mul(V::splat(0.5), poly), e);
                let phi = V::select_non_negative(x, V::sub(one, q), q);
                V::mul(x, phi)
            }
            Activation::GeluTanh => {
                let x3 = V::mul(V::mul(x, x), x);
                let inner = V::fma(V::splat(0.044_715), x3, x);
                let u2 = V::mul(V::splat(2.0 * SQRT_2_OVER_PI), inner);
                let e = exp16(u2);
                // tanh(u) = 1 - 2 / (e^{2u} + 1)
                let tanh = V::sub(one, V::div(V::splat(2.0), V::add(e, one)));
                V::mul(V::mul(V::splat(0.5), x), V::add(one, tanh))
            }
            Activation::Relu => V::max(x, V::zero()),
        }
    }
}

/// The unnormalised softmax of one row in place, sixteen lanes at a time: `x ←
/// e^(x − max)`; returns `1 / Σ e^(x − max)` (as `math::exp_shifted_row`, whose
/// results it matches up to rounding: its sums run in another order).
///
/// # Safety
/// The CPU has `V`'s features.
#[inline(always)]
pub(crate) unsafe fn exp_shifted_row16<V: Lanes16>(row: &mut [f32]) -> f32 {
    let mut lanes = [0f32; 16];
    // SAFETY: every load and store is of a chunk of exactly 16 values or of `lanes`;
    // the CPU has `V`'s features (the contract).
    unsafe {
        let mut vmax = V::splat(f32::NEG_INFINITY);
        let mut chunks = row.chunks_exact_mut(16);
        for c in &mut chunks {
            vmax = V::max(vmax, V::load(c.as_ptr()));
        }
        vmax.store(lanes.as_mut_ptr());
        let max = lanes
            .iter()
            .chain(chunks.into_remainder().iter())
            .fold(f32::NEG_INFINITY, |m, &x| if x > m { x } else { m });
        let shift = V::splat(max);
        let mut vsum = V::zero();
        let mut chunks = row.chunks_exact_mut(16);
        for c in &mut chunks {
            let e = exp16(V::sub(V::load(c.as_ptr()), shift));
            vsum = V::add(vsum, e);
            e.store(c.as_mut_ptr());
        }
        vsum.store(lanes.as_mut_ptr());
        let mut sum: f32 = lanes.iter().sum();
        for x in chunks.into_remainder() {
            *x = exp_f32(*x - max);
            sum += *x;
        }
        1.0 / sum
    }
}

/// Layer norm of one row in place, sixteen lanes at a time (as
/// `math::layer_norm_row`, up to rounding: its sums run in another order).
///
/// # Safety
/// The CPU has `V`'s features; `gamma` and `beta` hold at least `row.len()` values.
#[inline(always)]
pub(crate) unsafe fn layer_norm_row16<V: Lanes16>(
    row: &mut [f32],
    gamma: &[f32],
    beta: &[f32],
    eps: f32,
) {
    let h = row.len();
    assert!(
        gamma.len() >= h && beta.len() >= h,
        "layer norm weights too short"
    );
    let full = h - h % 16;
    let mut lanes = [0f32; 16];
    // SAFETY: loads and stores at `at < full` read or write 16 values of `row`,
    // `gamma` or `beta`, each at least `h >= full` long (asserted above), or `lanes`;
    // the CPU has `V`'s features (the contract).
    unsafe {
        let mut acc = V::zero();
        for at in (0..full).step_by(16) {
            acc = V::add(acc, V::load(row.as_ptr().add(at)));
        }
        acc.store(lanes.as_mut_ptr());
        let sum: f32 = lanes.iter().sum::<f32>() + row[full..].iter().sum::<f32>();
        let mean = sum / h as f32;
        let vmean = V::splat(mean);
        let mut acc = V::zero();
        for at in (0..full).step_by(16) {
            let x = V::sub(V::load(row.as_ptr().add(at)), vmean);
            x.store(row.as_mut_ptr().add(at));
            acc = V::fma(x, x, acc);
        }
        acc.store(lanes.as_mut_ptr());
        let mut squares: f32 = lanes.iter().sum();
        for x in &mut row[full..] {
            *x -= mean;
            squares += *x * *x;
        }
        let inv = 1.0 / (squares / h as f32 + eps).sqrt();
        let vinv = V::splat(inv);
        for at in (0..full).step_by(16) {
            let x = V::mul(V::load(row.as_ptr().add(at)), vinv);
            let y = V::add(
                V::mul(x, V::load(gamma.as_ptr().add(at))),
                V::load(beta.as_ptr().add(at)),
            );
            y.store(row.as_mut_ptr().add(at));
        }
        for ((x, g), b) in row[full..]
            .iter_mut()
            .zip(&gamma[full..h])
            .zip(&beta[full..h])
        {
            *x = *x * inv * g + b;
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::*;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::*;
    use std::arch::x86_64::*;

    /// One `zmm` register.
    #[derive(Clone, Copy)]
    pub(crate) struct Zmm(__m512);

    /// The mask of lanes `0..n`.
    #[inline(always)]
    fn first_lanes(n: usize) -> __mmask16 {
        ((1u32 << n.min(16)) - 1) as __mmask16
    }

    /// The sign bit of every lane.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn sign_bits() -> __m512i {
        _mm512_set1_epi32(i32::MIN)
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
        unsafe fn fnma(a: Self, b: Self, c: Self) -> Self {
            Self(_mm512_fnmadd_ps(a.0, b.0, c.0))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn add(a: Self, b: Self) -> Self {
            Self(_mm512_add_ps(a.0, b.0))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn sub(a: Self, b: Self) -> Self {
            Self(_mm512_sub_ps(a.0, b.0))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn mul(a: Self, b: Self) -> Self {
            Self(_mm512_mul_ps(a.0, b.0))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn div(a: Self, b: Self) -> Self {
            Self(_mm512_div_ps(a.0, b.0))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn min(a: Self, b: Self) -> Self {
            Self(_mm512_min_ps(a.0, b.0))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn max(a: Self, b: Self) -> Self {
            Self(_mm512_max_ps(a.0, b.0))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn abs(x: Self) -> Self {
            let bits = _mm512_andnot_si512(sign_bits(), _mm512_castps_si512(x.0));
            Self(_mm512_castsi512_ps(bits))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn neg(x: Self) -> Self {
            let bits = _mm512_xor_si512(_mm512_castps_si512(x.0), sign_bits());
            Self(_mm512_castsi512_ps(bits))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn select_non_negative(x: Self, yes: Self, no: Self) -> Self {
            let non_negative = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(x.0, _mm512_setzero_ps());
            Self(_mm512_mask_blend_ps(non_negative, no.0, yes.0))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn scale_by_exponent(p: Self, shifted: Self, magic: Self) -> Self {
            let k = _mm512_sub_epi32(_mm512_castps_si512(shifted.0), _mm512_castps_si512(magic.0));
            let scale = _mm512_slli_epi32::<23>(_mm512_add_epi32(k, _mm512_set1_epi32(127)));
            Self(_mm512_mul_ps(p.0, _mm512_castsi512_ps(scale)))
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
        #[target_feature(enable = "avx512f")]
        unsafe fn activate(self, act: Activation) -> Self {
            // SAFETY: the CPU has AVX-512F (this function's features).
            unsafe { activate16(self, act) }
        }
    }

    /// Two `ymm` registers: the twin of [`Zmm`] on AVX2.
    #[derive(Clone, Copy)]
    pub(crate) struct YmmPair(__m256, __m256);

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

    /// Applies a two-operand AVX2 operation to both halves.
    macro_rules! halves {
        ($f:ident, $a:expr, $b:expr) => {
            Self($f($a.0, $b.0), $f($a.1, $b.1))
        };
    }

    impl YmmPair {
        #[inline]
        #[target_feature(enable = "avx2")]
        fn map_bits(self, f: impl Fn(__m256i) -> __m256i) -> Self {
            let bits = |x: __m256| _mm256_castsi256_ps(f(_mm256_castps_si256(x)));
            Self(bits(self.0), bits(self.1))
        }
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
        unsafe fn fnma(a: Self, b: Self, c: Self) -> Self {
            Self(
                _mm256_fnmadd_ps(a.0, b.0, c.0),
                _mm256_fnmadd_ps(a.1, b.1, c.1),
            )
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn add(a: Self, b: Self) -> Self {
            halves!(_mm256_add_ps, a, b)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn sub(a: Self, b: Self) -> Self {
            halves!(_mm256_sub_ps, a, b)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn mul(a: Self, b: Self) -> Self {
            halves!(_mm256_mul_ps, a, b)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn div(a: Self, b: Self) -> Self {
            halves!(_mm256_div_ps, a, b)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn min(a: Self, b: Self) -> Self {
            halves!(_mm256_min_ps, a, b)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn max(a: Self, b: Self) -> Self {
            halves!(_mm256_max_ps, a, b)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn abs(x: Self) -> Self {
            x.map_bits(|b| _mm256_andnot_si256(_mm256_set1_epi32(i32::MIN), b))
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn neg(x: Self) -> Self {
            x.map_bits(|b| _mm256_xor_si256(b, _mm256_set1_epi32(i32::MIN)))
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn select_non_negative(x: Self, yes: Self, no: Self) -> Self {
            let pick = |x: __m256, yes: __m256, no: __m256| {
                let non_negative = _mm256_cmp_ps::<_CMP_GE_OQ>(x, _mm256_setzero_ps());
                _mm256_blendv_ps(no, yes, non_negative)
            };
            Self(pick(x.0, yes.0, no.0), pick(x.1, yes.1, no.1))
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn scale_by_exponent(p: Self, shifted: Self, magic: Self) -> Self {
            let half = |p: __m256, shifted: __m256, magic: __m256| {
                let k = _mm256_sub_epi32(_mm256_castps_si256(shifted), _mm256_castps_si256(magic));
                let scale = _mm256_slli_epi32::<23>(_mm256_add_epi32(k, _mm256_set1_epi32(127)));
                _mm256_mul_ps(p, _mm256_castsi256_ps(scale))
            };
            Self(half(p.0, shifted.0, magic.0), half(p.1, shifted.1, magic.1))
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
            // SAFETY: the CPU has AVX2, FMA and F16C (this function's features).
            unsafe { activate16(self, act) }
        }
    }

    /// [`exp_shifted_row16`] on `zmm` registers.
    ///
    /// # Safety
    /// The CPU has AVX-512F.
    #[target_feature(enable = "avx512f,avx2,fma,f16c")]
    pub(crate) unsafe fn exp_shifted_row_avx512(row: &mut [f32]) -> f32 {
        // SAFETY: the CPU has the features (the contract).
        unsafe { exp_shifted_row16::<Zmm>(row) }
    }

    /// [`layer_norm_row16`] on `zmm` registers.
    ///
    /// # Safety
    /// The CPU has AVX-512F.
    #[target_feature(enable = "avx512f,avx2,fma,f16c")]
    pub(crate) unsafe fn layer_norm_row_avx512(
        row: &mut [f32],
        gamma: &[f32],
        beta: &[f32],
        eps: f32,
    ) {
        // SAFETY: the CPU has the features (the contract).
        unsafe { layer_norm_row16::<Zmm>(row, gamma, beta, eps) }
    }

    /// [`exp_shifted_row16`] on pairs of `ymm` registers (the twin).
    ///
    /// # Safety
    /// The CPU has AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) unsafe fn exp_shifted_row_twin(row: &mut [f32]) -> f32 {
        // SAFETY: the CPU has the features (the contract).
        unsafe { exp_shifted_row16::<YmmPair>(row) }
    }

    /// [`layer_norm_row16`] on pairs of `ymm` registers (the twin).
    ///
    /// # Safety
    /// The CPU has AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) unsafe fn layer_norm_row_twin(
        row: &mut [f32],
        gamma: &[f32],
        beta: &[f32],
        eps: f32,
    ) {
        // SAFETY: the CPU has the features (the contract).
        unsafe { layer_norm_row16::<YmmPair>(row, gamma, beta, eps) }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use crate::local::math::{has_f16c, x86::activate8};
    use std::arch::x86_64::*;

    /// Deterministic pseudo-random values in [-6, 6).
    fn values(n: usize, seed: u64) -> Vec<f32> {
        crate::local::test_values(n, seed)
            .into_iter()
            .map(|x| 6.0 * x)
            .collect()
    }

    /// The activations on 16 lanes give `activate8`'s bits on each half: the twin,
    /// and so the `zmm` build, follows the AVX2 epilogue operation for operation.
    #[test]
    fn activations_on_sixteen_lanes_give_the_bits_of_eight() {
        if !has_f16c() {
            eprintln!("no AVX2 + FMA + F16C on this CPU: not run");
            return;
        }
        let xs = values(16 * 200, 1);
        for act in [Activation::GeluErf, Activation::GeluTanh, Activation::Relu] {
            for c in xs.chunks_exact(16) {
                let (mut wide, mut narrow) = ([0f32; 16], [0f32; 16]);
                // SAFETY: the CPU has AVX2, FMA and F16C (checked above); every load
                // and store is of 16 or 8 values inside `c` or the arrays.
                unsafe {
                    YmmPair::load(c.as_ptr())
                        .activate(act)
                        .store(wide.as_mut_ptr());
                    for half in 0..2 {
                        let x = _mm256_loadu_ps(c.as_ptr().add(8 * half));
                        _mm256_storeu_ps(narrow.as_mut_ptr().add(8 * half), activate8(x, act));
                    }
                }
                let same = wide
                    .iter()
                    .zip(&narrow)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{act:?}: {wide:?} vs {narrow:?}");
            }
        }
    }

    /// The row steps on 16 lanes match the portable ones up to rounding, at every
    /// length around the lane count.
    #[test]
    fn row_steps_on_sixteen_lanes_match_the_portable_ones() {
        if !has_f16c() {
            eprintln!("no AVX2 + FMA + F16C on this CPU: not run");
            return;
        }
        let gamma = values(400, 2);
        let beta = values(400, 3);
        for len in [1, 7, 15, 16, 17, 31, 33, 250, 384] {
            let row = values(len, len as u64);
            let (mut wide, mut portable) = (row.clone(), row.clone());
            // SAFETY: the CPU has AVX2, FMA and F16C (checked above).
            let s = unsafe { exp_shifted_row_twin(&mut wide) };
            let t = crate::local::math::exp_shifted_row(&mut portable);
            assert!((s - t).abs() <= 1e-6 * t.abs(), "{len}: {s} vs {t}");
            for (a, b) in wide.iter().zip(&portable) {
                assert!(
                    (a - b).abs() <= 1e-6 * b.abs().max(1e-30),
                    "{len}: {a} vs {b}"
                );
            }
            let (mut wide, mut portable) = (row.clone(), row.clone());
            // SAFETY: as above; `gamma` and `beta` hold 400 >= len values.
            unsafe { layer_norm_row_twin(&mut wide, &gamma, &beta, 1e-12) };
            crate::local::math::layer_norm_row(&mut portable, &gamma[..len], &beta[..len], 1e-12);
            for (a, b) in wide.iter().zip(&portable) {
                assert!(
                    (a - b).abs() <= 2e-5 * b.abs().max(1.0),
                    "{len}: {a} vs {b}"
                );
            }
        }
    }
}
