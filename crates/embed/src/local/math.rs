//! Element-wise kernels of the encoder: activations, softmax and layer norm rows,
//! written so the compiler vectorises them, with AVX2 + FMA builds picked at run time.

/// The feed-forward activation of a BERT layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activation {
    /// Exact GELU, `x · Φ(x)` (`gelu`).
    GeluErf,
    /// The tanh approximation of GELU (`gelu_new`, `gelu_pytorch_tanh`).
    GeluTanh,
    Relu,
}

/// Calls `$f(args)` compiled for AVX2+FMA when the CPU has them (the twin in
/// [`avx2`]), else the portable build. With `allowed: flag,` first, the AVX2 build
/// is used only when `flag` is also true (the forward pass passes whether its
/// kernel is the AVX2 one, so the forced `gemm` path runs the portable code).
macro_rules! with_simd {
    ($f:ident($($arg:expr),*)) => {
        $crate::local::math::with_simd!(allowed: true, $f($($arg),*))
    };
    (allowed: $allowed:expr, $f:ident($($arg:expr),*)) => {{
        #[cfg(target_arch = "x86_64")]
        {
            if $allowed && $crate::local::math::has_avx2_fma() {
                // SAFETY: the `avx2` functions only require a CPU with AVX2 and FMA,
                // which `has_avx2_fma` has just confirmed.
                unsafe { $crate::local::math::avx2::$f($($arg),*) }
            } else {
                $crate::local::math::$f($($arg),*)
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = $allowed;
            $crate::local::math::$f($($arg),*)
        }
    }};
}
pub(crate) use with_simd;

/// Whether the CPU running us has AVX2 and FMA (always false off x86-64).
pub(crate) fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the CPU converts half-precision values in hardware (F16C), besides AVX2 and
/// FMA: what the query products' f16 weights need ([`super::sgemm::Epilogue::half`]).
pub(crate) fn has_f16c() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        has_avx2_fma() && std::arch::is_x86_feature_detected!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the CPU runs the AVX-512 kernel: AVX-512F, besides AVX2, FMA and F16C
/// (which its epilogue and half-precision loads use).
pub(crate) fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        has_f16c() && std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Sum of `xs` with 8 independent accumulators (vectorises; order differs from a
/// sequential sum only by rounding).
#[inline(always)]
fn sum_lanes(xs: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let chunks = xs.chunks_exact(LANES);
    let rest: f32 = chunks.remainder().iter().sum();
    for c in chunks {
        for i in 0..LANES {
            acc[i] += c[i];
        }
    }
    acc.iter().sum::<f32>() + rest
}

const LANES: usize = 8;

#[inline(always)]
pub(crate) fn layer_norm_row(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let h = row.len();
    let mean = sum_lanes(row) / h as f32;
    for x in row.iter_mut() {
        *x -= mean;
    }
    let mut acc = [0f32; LANES];
    let chunks = row.chunks_exact(LANES);
    let rest: f32 = chunks.remainder().iter().map(|x| x * x).sum();
    for c in chunks {
        for i in 0..LANES {
            acc[i] += c[i] * c[i];
        }
    }
    let var = (acc.iter().sum::<f32>() + rest) / h as f32;
    let inv = 1.0 / (var + eps).sqrt();
    for ((x, g), b) in row.iter_mut().zip(gamma).zip(beta) {
        *x = *x * inv * g + b;
    }
}

pub(crate) const LOG2E: f32 = std::f32::consts::LOG2_E;
// ln 2 split in a part exact in few bits and a remainder.
pub(crate) const LN2_HI: f32 = 0.693_359_4;
pub(crate) const LN2_LO: f32 = -2.121_944_4e-4;
// 1.5 * 2^23: adding it rounds to an integer held in the low mantissa bits.
pub(crate) const MAGIC: f32 = 12_582_912.0;
// The rational approximation of erf used by `gelu_erf`: for z >= 0,
// erf(z) ≈ 1 - (A1 t + A2 t² + A3 t³ + A4 t⁴ + A5 t⁵) e^(-z²) with t = 1 / (1 + P z).
pub(crate) const P: f32 = 0.327_591_1;
pub(crate) const A1: f32 = 0.254_829_6;
pub(crate) const A2: f32 = -0.284_496_74;
pub(crate) const A3: f32 = 1.421_413_7;
pub(crate) const A4: f32 = -1.453_152_1;
pub(crate) const A5: f32 = 1.061_405_4;
pub(crate) const SQRT_2_OVER_PI: f32 = 0.797_884_6;

/// `e^x` for f32, vectorisable (no calls, no branches): range reduction by `ln 2`
/// and a degree-6 polynomial; relative error around 2e-7 on the normal range.
/// Inputs below -87 give a tiny (possibly zero) result, above 88 are clamped.
#[inline(always)]
pub(crate) fn exp_f32(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    let shifted = x * LOG2E + MAGIC;
    let n = shifted - MAGIC;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.0 / 720.0;
    let p = p * r + 1.0 / 120.0;
    let p = p * r + 1.0 / 24.0;
    let p = p * r + 1.0 / 6.0;
    let p = p * r + 0.5;
    let p = p * r + 1.0;
    let p = p * r + 1.0;
    // 2^n: the integer sits in the low bits of `shifted`.
    let ni = (shifted.to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32);
    let scale = f32::from_bits(((ni + 127) << 23) as u32);
    p * scale
}

/// `x * Φ(x)` with `Φ` the standard normal CDF, `Φ(x) = (1 + erf(x / √2)) / 2`.
///
/// erf is approximated, for `z = |x| / √2`, as `1 - poly(t) · e^(-z²)` with
/// `t = 1 / (1 + P z)` and `poly` a fifth-degree polynomial in `t` without constant
/// term (coefficients `A1`..`A5`, fitted for this form; absolute error below 1.5e-7).
/// The sign of `x` picks `Φ(|x|)` or `1 - Φ(|x|)`.
#[inline(always)]
fn gelu_erf(x: f32) -> f32 {
    let z = x.abs() * std::f32::consts::FRAC_1_SQRT_2;
    let t = 1.0 / (1.0 + P * z);
    let poly = ((((A5 * t + A4) * t + A3) * t + A2) * t + A1) * t;
    // q = (1 - erf(z)) / 2 = Φ(-|x|)
    let q = 0.5 * poly * exp_f32(-z * z);
    let phi = if x >= 0.0 { 1.0 - q } else { q };
    x * phi
}

/// The tanh approximation of GELU (`gelu_new`), tanh written with `exp_f32`.
#[inline(always)]
fn gelu_tanh(v: f32) -> f32 {
    const C: f32 = SQRT_2_OVER_PI;
    let u = C * (v + 0.044_715 * v * v * v);
    // tanh(u) = 1 - 2 / (e^{2u} + 1)
    let tanh = 1.0 - 2.0 / (exp_f32(2.0 * u) + 1.0);
    0.5 * v * (1.0 + tanh)
}

/// Applies `act` to every element (inlined into its caller, so it vectorises with
/// the caller's target features).
#[inline(always)]
pub(crate) fn activate(xs: &mut [f32], act: Activation) {
    match act {
        Activation::GeluErf => xs.iter_mut().for_each(|x| *x = gelu_erf(*x)),
        Activation::GeluTanh => xs.iter_mut().for_each(|x| *x = gelu_tanh(*x)),
        Activation::Relu => xs.iter_mut().for_each(|x| *x = x.max(0.0)),
    }
}

/// Softmax of one row in place: max, then exp and sum in one pass, then scale.
#[cfg(test)]
#[inline(always)]
pub(crate) fn softmax_row(row: &mut [f32]) {
    let inv = exp_shifted_row(row);
    for x in row.iter_mut() {
        *x *= inv;
    }
}

/// The unnormalised softmax of one row in place: `x ← e^(x − max)`. Returns the
/// normalising factor `1 / Σ e^(x − max)`, for the caller to apply later.
#[inline(always)]
pub(crate) fn exp_shifted_row(row: &mut [f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let chunks = row.chunks_exact(LANES);
    let mut max = chunks
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |m, &x| if x > m { x } else { m });
    for c in chunks {
        for i in 0..LANES {
            lanes[i] = if c[i] > lanes[i] { c[i] } else { lanes[i] };
        }
    }
    for l in lanes {
        max = if l > max { l } else { max };
    }
    let mut acc = [0f32; LANES];
    let mut chunks = row.chunks_exact_mut(LANES);
    for c in &mut chunks {
        for i in 0..LANES {
            c[i] = exp_f32(c[i] - max);
            acc[i] += c[i];
        }
    }
    let mut sum = acc.iter().sum::<f32>();
    for x in chunks.into_remainder() {
        *x = exp_f32(*x - max);
        sum += *x;
    }
    1.0 / sum
}

/// The activations on eight lanes with AVX2 + FMA intrinsics (the same formulas as
/// the scalar versions), for epilogues that hold their values in registers.
#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    use super::*;
    use std::arch::x86_64::*;

    /// [`exp_f32`] on eight lanes.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn exp8(x: __m256) -> __m256 {
        let x = _mm256_min_ps(
            _mm256_max_ps(x, _mm256_set1_ps(-87.0)),
            _mm256_set1_ps(88.0),
        );
        let magic = _mm256_set1_ps(MAGIC);
        let shifted = _mm256_fmadd_ps(x, _mm256_set1_ps(LOG2E), magic);
        let n = _mm256_sub_ps(shifted, magic);
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_HI), x);
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_LO), r);
        let mut p = _mm256_set1_ps(1.0 / 720.0);
        for c in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
            p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
        }
        let ni = _mm256_sub_epi32(_mm256_castps_si256(shifted), _mm256_castps_si256(magic));
        let scale = _mm256_slli_epi32::<23>(_mm256_add_epi32(ni, _mm256_set1_epi32(127)));
        _mm256_mul_ps(p, _mm256_castsi256_ps(scale))
    }

    /// [`exp_shifted_row`] with the exponentials eight lanes at a time (FMA
    /// polynomial, which the portable build cannot use without fused multiply-add
    /// semantics); the same values up to rounding.
    #[target_feature(enable = "avx2,fma")]
    pub(crate) fn exp_shifted_row(row: &mut [f32]) -> f32 {
        let mut chunks = row.chunks_exact_mut(8);
        let mut vmax = _mm256_set1_ps(f32::NEG_INFINITY);
        for c in &mut chunks {
            // SAFETY: `c` is a chunk of exactly 8 f32, so the unaligned 8-lane load
            // reads only inside it.
            vmax = _mm256_max_ps(vmax, unsafe { _mm256_loadu_ps(c.as_ptr()) });
        }
        let mut lanes = [0f32; 8];
        // SAFETY: `lanes` is an array of 8 f32, so the unaligned 8-lane store writes
        // only inside it.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), vmax) };
        let tail = chunks.into_remainder();
        let max = lanes
            .iter()
            .chain(tail.iter())
            .fold(f32::NEG_INFINITY, |m, &x| if x > m { x } else { m });
        let shift = _mm256_set1_ps(max);
        let mut vsum = _mm256_setzero_ps();
        let mut chunks = row.chunks_exact_mut(8);
        for c in &mut chunks {
            // SAFETY: `c` is a chunk of exactly 8 f32, so the unaligned load and store
            // stay inside it; AVX2 and FMA are enabled for this function.
            unsafe {
                let e = exp8(_mm256_sub_ps(_mm256_loadu_ps(c.as_ptr()), shift));
                vsum = _mm256_add_ps(vsum, e);
                _mm256_storeu_ps(c.as_mut_ptr(), e);
            }
        }
        // SAFETY: `lanes` is an array of 8 f32, so the unaligned 8-lane store writes
        // only inside it.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), vsum) };
        let mut sum: f32 = lanes.iter().sum();
        for x in chunks.into_remainder() {
            *x = exp_f32(*x - max);
            sum += *x;
        }
        1.0 / sum
    }

    /// [`activate`] on eight lanes.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(crate) fn activate8(x: __m256, act: Activation) -> __m256 {
        match act {
            Activation::GeluErf => {
                let sign = _mm256_set1_ps(-0.0);
                let z = _mm256_mul_ps(
                    _mm256_andnot_ps(sign, x),
                    _mm256_set1_ps(std::f32::consts::FRAC_1_SQRT_2),
                );
                let one = _mm256_set1_ps(1.0);
                let t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(P), z, one));
                let mut poly = _mm256_set1_ps(A5);
                for c in [A4, A3, A2, A1] {
                    poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(c));
                }
                poly = _mm256_mul_ps(poly, t);
                let e = exp8(_mm256_xor_ps(_mm256_mul_ps(z, z), sign));
                let q = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5), poly), e);
                let non_negative = _mm256_cmp_ps::<_CMP_GE_OQ>(x, _mm256_setzero_ps());
                let phi = _mm256_blendv_ps(q, _mm256_sub_ps(one, q), non_negative);
                _mm256_mul_ps(x, phi)
            }
            Activation::GeluTanh => {
                let x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
                let inner = _mm256_fmadd_ps(_mm256_set1_ps(0.044_715), x3, x);
                let u2 = _mm256_mul_ps(_mm256_set1_ps(2.0 * SQRT_2_OVER_PI), inner);
                let one = _mm256_set1_ps(1.0);
                let e = exp8(u2);
                // tanh(u) = 1 - 2 / (e^{2u} + 1)
                let tanh = _mm256_sub_ps(
                    one,
                    _mm256_div_ps(_mm256_set1_ps(2.0), _mm256_add_ps(e, one)),
                );
                _mm256_mul_ps(
                    _mm256_mul_ps(_mm256_set1_ps(0.5), x),
                    _mm256_add_ps(one, tanh),
                )
            }
            Activation::Relu => _mm256_max_ps(x, _mm256_setzero_ps()),
        }
    }
}

/// AVX2+FMA builds of the row kernels (same code, compiled with the features on).
///
/// # Safety
/// Every function here may only be called on a CPU with AVX2 and FMA
/// ([`has_avx2_fma`](super::has_avx2_fma)); [`with_simd`] checks that before calling.
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    /// [`super::softmax_row`] compiled for AVX2 + FMA. Safety: see the module.
    #[cfg(test)]
    #[target_feature(enable = "avx2,fma")]
    pub(crate) unsafe fn softmax_row(row: &mut [f32]) {
        super::softmax_row(row)
    }
    /// [`super::x86::exp_shifted_row`]. Safety: see the module.
    #[target_feature(enable = "avx2,fma")]
    pub(crate) unsafe fn exp_shifted_row(row: &mut [f32]) -> f32 {
        super::x86::exp_shifted_row(row)
    }
    /// [`super::layer_norm_row`] compiled for AVX2 + FMA. Safety: see the module.
    #[target_feature(enable = "avx2,fma")]
    pub(crate) unsafe fn layer_norm_row(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
        super::layer_norm_row(row, gamma, beta, eps)
    }
    /// [`super::activate`] compiled for AVX2 + FMA. Safety: see the module.
    #[cfg(test)]
    #[target_feature(enable = "avx2,fma")]
    pub(crate) unsafe fn activate(xs: &mut [f32], act: super::Activation) {
        super::activate(xs, act)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf to double precision by its Taylor series (|x| small) or continued
    /// fraction of erfc (|x| large), for checking the f32 approximation.
    fn erf_f64(x: f64) -> f64 {
        let a = x.abs();
        let r = if a < 3.0 {
            let mut term = a;
            let mut sum = a;
            let mut n = 0.0;
            while term.abs() > 1e-17 * sum.abs() {
                n += 1.0;
                term *= -a * a / n;
                sum += term / (2.0 * n + 1.0);
            }
            sum * 2.0 / std::f64::consts::PI.sqrt()
        } else {
            // erfc(a) = exp(-a²)/sqrt(pi) * 1/(a + 1/2/(a + 1/(a + 3/2/(a + ...))))
            let mut f = a;
            for k in (1..60).rev() {
                f = a + (k as f64 / 2.0) / f;
            }
            1.0 - (-a * a).exp() / std::f64::consts::PI.sqrt() / f
        };
        r.copysign(x)
    }

    #[test]
    fn exp_matches_std() {
        let mut worst = 0f64;
        let mut x = -80.0f32;
        while x < 80.0 {
            let got = exp_f32(x) as f64;
            let want = (x as f64).exp();
            worst = worst.max(((got - want) / want).abs());
            x += 0.013;
        }
        assert!(worst < 5e-7, "relative error {worst}");
        assert!(exp_f32(-200.0) < 1e-37);
        assert!(exp_f32(f32::NEG_INFINITY) < 1e-37);
    }

    #[test]
    fn gelu_matches_exact() {
        let mut xs: Vec<f32> = (-12000..12000).map(|i| i as f32 * 1e-3).collect();
        let exact: Vec<f64> = xs
            .iter()
            .map(|&x| {
                let x = x as f64;
                0.5 * x * (1.0 + erf_f64(x / std::f64::consts::SQRT_2))
            })
            .collect();
        let mut scalar = xs.clone();
        with_simd!(activate(&mut xs, Activation::GeluErf));
        activate(&mut scalar, Activation::GeluErf);
        for ((got, want), s) in xs.iter().zip(&exact).zip(&scalar) {
            let err = (*got as f64 - want).abs();
            assert!(err <= 1e-6 * want.abs().max(1.0), "gelu {got} vs {want}");
            assert!((got - s).abs() <= 1e-6 * s.abs().max(1.0));
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn vector_activations_match_scalar() {
        use std::arch::x86_64::*;
        if !has_avx2_fma() {
            return;
        }
        let xs: Vec<f32> = (-16000..16000).map(|i| i as f32 * 1e-3).collect();
        for act in [Activation::GeluErf, Activation::GeluTanh, Activation::Relu] {
            let mut want = xs.clone();
            activate(&mut want, act);
            for (chunk, want) in xs.chunks_exact(8).zip(want.chunks_exact(8)) {
                let mut got = [0f32; 8];
                // SAFETY: the CPU has AVX2 and FMA (checked at the top); `chunk` and
                // `got` hold exactly 8 f32, so the load and store stay inside them.
                unsafe {
                    let v = x86::activate8(_mm256_loadu_ps(chunk.as_ptr()), act);
                    _mm256_storeu_ps(got.as_mut_ptr(), v);
                }
                for (g, w) in got.iter().zip(want) {
                    assert!(
                        (g - w).abs() <= 1e-6 * w.abs().max(1.0),
                        "{act:?}: {g} vs {w}"
                    );
                }
            }
        }
    }

    #[test]
    fn exp_shifted_rows_agree() {
        for len in [1usize, 7, 8, 9, 250, 257] {
            let row: Vec<f32> = (0..len)
                .map(|i| ((i * 53) % 97) as f32 * 0.4 - 20.0)
                .collect();
            let mut portable = row.clone();
            let mut simd = row.clone();
            let inv_p = exp_shifted_row(&mut portable);
            let inv_s = with_simd!(exp_shifted_row(&mut simd));
            assert!((inv_p - inv_s).abs() <= 1e-6 * inv_p.abs());
            for (p, s) in portable.iter().zip(&simd) {
                assert!((p - s).abs() <= 1e-6 * p.abs().max(1e-30), "{p} vs {s}");
            }
        }
    }

    #[test]
    fn softmax_sums_to_one_and_orders() {
        let mut row: Vec<f32> = (0..257)
            .map(|i| ((i * 37) % 101) as f32 * 0.3 - 15.0)
            .collect();
        let orig = row.clone();
        with_simd!(softmax_row(&mut row));
        let sum: f32 = row.iter().sum();
        assert!((sum - 1.0).abs() < 1e-5);
        let max = orig.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let denom: f64 = orig.iter().map(|&x| ((x - max) as f64).exp()).sum();
        for (p, x) in row.iter().zip(&orig) {
            let want = ((x - max) as f64).exp() / denom;
            assert!((*p as f64 - want).abs() < 1e-6, "{p} vs {want}");
        }
    }
}

/// A manual benchmark of the element-wise steps of one encoder layer for a batch of
/// 32 × 250 tokens (MiniLM: hidden 384, 12 heads, feed-forward 1536), portable build
/// against AVX2 build, single-threaded (prints milliseconds, asserts nothing):
/// `cargo test --release -p excerpt-embed --lib elementwise_speed -- --ignored --nocapture`
#[cfg(test)]
mod elementwise_speed {
    use super::*;
    use std::time::Instant;

    fn best_ms(mut f: impl FnMut()) -> f64 {
        (0..5)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e3
            })
            .fold(f64::MAX, f64::min)
    }

    #[test]
    #[ignore = "benchmark: prints figures"]
    fn per_layer() {
        let (tokens, hidden, inter, seqs, len, heads) = (8000, 384, 1536, 32, 250, 12);
        let values = |n: usize| -> Vec<f32> {
            (0..n)
                .map(|i| ((i * 37) % 101) as f32 * 0.05 - 2.5)
                .collect()
        };
        let (gamma, beta) = (vec![1.1f32; hidden], vec![0.1f32; hidden]);
        let mut x = values(tokens * hidden);
        let mut ff = values(tokens * inter);
        let mut scores = values(seqs * heads * len * len);
        for simd in [false, true] {
            let ln = best_ms(|| {
                for _ in 0..2 {
                    for row in x.chunks_exact_mut(hidden) {
                        with_simd!(allowed: simd, layer_norm_row(row, &gamma, &beta, 1e-12));
                    }
                }
            });
            let gelu = best_ms(|| {
                if simd {
                    #[cfg(target_arch = "x86_64")]
                    if has_avx2_fma() {
                        // SAFETY: the CPU has AVX2 and FMA (checked just above).
                        unsafe { avx2::activate(&mut ff, Activation::GeluErf) };
                    }
                } else {
                    activate(&mut ff, Activation::GeluErf);
                }
            });
            let exp = best_ms(|| {
                for row in scores.chunks_exact_mut(len) {
                    std::hint::black_box(with_simd!(allowed: simd, exp_shifted_row(row)));
                }
            });
            println!(
                "{}: layer norms {ln:.1} ms, GELU {gelu:.1} ms, softmax exponentials {exp:.1} ms per layer",
                if simd { "avx2" } else { "portable" }
            );
        }
    }
}
