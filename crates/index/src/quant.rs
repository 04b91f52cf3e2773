//! Exact dense search at a quarter of the memory traffic: every row is also kept at 8
//! bits a component, and a search reads those first.
//!
//! A scan of f32 rows is bound by memory, not arithmetic: 20,000 rows of 384 values are
//! 30 MB, more than a shared L3 cache holds, and one thread reads them at about 15 GB/s.
//! The 8-bit rows are a quarter of that. A search scores every row from them, with a
//! bound on how far that score can be from the one [`dense::dot`] gives, then reads in
//! f32 only the rows whose bound reaches the `k`-th best lower bound. The result is
//! the exact search's, bit for bit: the same rows, scores and order (the argument is at
//! [`top_k_quantized`]).
//!
//! A row `v` is kept as a scale `s = max |vᵢ| / 127` and codes `cᵢ ≈ vᵢ / s` rounded to
//! the nearest integer, so `v̂ = s·c` differs from `v` by a small `e` (its norm is
//! computed from the codes as stored, so the bound does not rely on the rounding). For
//! the query `q` (likewise `q̂`, error `e_q`), `q̂·v̂` is an integer dot product times
//! two scales, and
//! `|q·v − q̂·v̂| = |q·e + e_q·v̂| ≤ ‖q‖·‖e‖ + ‖e_q‖·‖v̂‖`. [`dense::dot`] sums `d`
//! products in f32, at most `d·2⁻²³·‖q‖·‖v‖` away from `q·v`; the bound adds that too.

use rayon::prelude::*;

use crate::dense::{self, TopK};

/// Rows scored below which the 8-bit pass is not worth it (the f32 rows are in cache).
pub(crate) const MIN_ROWS: usize = 2048;

/// Most rows an index may have for its 8-bit rows to be built (100 MiB of codes at
/// dimension 384); larger ones are searched through their ANN lists.
pub(crate) const MAX_ROWS: usize = 1 << 18;

/// What bounds the error of one 8-bit row.
#[derive(Debug, Clone, Copy, Default)]
struct RowBound {
    /// `max |vᵢ| / 127` (0 for a zero row).
    scale: f32,
    /// `‖v‖`, rounded up.
    norm: f32,
    /// `‖v − v̂‖`, rounded up (infinite when the row holds a value that is not finite:
    /// it is then always read in f32).
    err: f32,
    /// `‖v̂‖`, rounded up.
    quant_norm: f32,
}

/// Every row of an index at 8 bits a component, by row number (see the module).
#[derive(Debug, Default)]
pub(crate) struct QuantRows {
    dim: usize,
    codes: Vec<i8>,
    bounds: Vec<RowBound>,
}

/// `x` as an f32 no smaller than it.
fn up(x: f64) -> f32 {
    let f = x as f32;
    if f64::from(f) < x {
        f.next_up()
    } else {
        f
    }
}

/// The codes of `v` into `codes` and what bounds their error, by the AVX2 build where
/// the CPU has it (the same operations, so the same codes and bounds).
fn quantize(v: &[f32], codes: &mut [i8]) -> RowBound {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (just checked), the one feature the build enables.
        #[allow(unsafe_code)]
        return unsafe { quantize_avx2(v, codes) };
    }
    quantize_with(v, codes)
}

/// [`quantize_with`] built for AVX2 (eight lanes where the baseline build has four and
/// two).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn quantize_avx2(v: &[f32], codes: &mut [i8]) -> RowBound {
    quantize_with(v, codes)
}

/// [`quantize`]'s work, inlined into each build.
#[inline(always)]
fn quantize_with(v: &[f32], codes: &mut [i8]) -> RowBound {
    // The largest magnitude, from the bits: for values that are not NaN, the order of
    // `|x|`'s bits is the order of `|x|`, and infinities and NaNs are the bits from
    // 0x7f80_0000 up. In integers the loop vectorizes.
    let max_bits = v.iter().fold(0u32, |m, x| m.max(x.to_bits() & 0x7fff_ffff));
    if max_bits >= 0x7f80_0000 {
        codes.fill(0);
        return RowBound {
            err: f32::INFINITY,
            ..RowBound::default()
        };
    }
    let scale = f32::from_bits(max_bits) / 127.0;
    if scale > 0.0 {
        // Rounded half away from zero by adding a half and cutting toward zero: `round`
        // is a library call in the baseline x86-64 build, this loop vectorizes. (Where
        // the addition itself rounds up, a code is one off; the bounds below are
        // computed from the codes as they are, so they hold all the same.)
        let inv = 1.0 / scale;
        for (c, &x) in codes.iter_mut().zip(v) {
            let y = x * inv;
            *c = (y + 0.5f32.copysign(y)).clamp(-127.0, 127.0) as i32 as i8;
        }
    } else {
        codes.fill(0);
    }
    // The three sums in f64 (each product of two f32 values is exact there), on eight
    // lanes each so that no lane waits for the one before.
    let s = f64::from(scale);
    let (mut norm, mut err, mut quant_norm) = ([0f64; 8], [0f64; 8], [0f64; 8]);
    let mut add = |j: usize, c: i8, x: f32| {
        let (x, back) = (f64::from(x), s * f64::from(c));
        norm[j] += x * x;
        err[j] += (x - back) * (x - back);
        quant_norm[j] += back * back;
    };
    let whole = v.len() - v.len() % 8;
    for (cs, xs) in codes[..whole]
        .chunks_exact(8)
        .zip(v[..whole].chunks_exact(8))
    {
        for j in 0..8 {
            add(j, cs[j], xs[j]);
        }
    }
    for (j, (&c, &x)) in codes[whole..].iter().zip(&v[whole..]).enumerate() {
        add(j, c, x);
    }
    let [norm, err, quant_norm] = [norm, err, quant_norm].map(|lanes| lanes.iter().sum::<f64>());
    // Square roots in f64 are within an ulp; the margin covers that and the sums.
    let margin = 1.0 + 1e-9;
    RowBound {
        scale,
        norm: up(norm.sqrt() * margin),
        err: up(err.sqrt() * margin),
        quant_norm: up(quant_norm.sqrt() * margin),
    }
}

/// Sum of the products of two rows of codes, in integers (exact).
#[inline(always)]
fn dot_codes(a: &[i8], b: &[i8]) -> i32 {
    // Sixteen i32 lanes of i16 products: the compiler turns this into pairwise
    // multiply-adds (`pmaddwd`).
    let mut acc = [0i32; 16];
    let (ca, ra) = a.split_at(a.len() - a.len() % 16);
    let (cb, rb) = b.split_at(ca.len());
    for (x, y) in ca.chunks_exact(16).zip(cb.chunks_exact(16)) {
        for i in 0..16 {
            acc[i] += i32::from(i16::from(x[i]) * i16::from(y[i]));
        }
    }
    let mut s: i32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += i32::from(*x) * i32::from(*y);
    }
    s
}

impl QuantRows {
    /// The 8-bit rows of `total` rows of dimension `dim`, of which `rows` gives those
    /// that can be read (row number, vector); the others stay zero and are never
    /// scored.
    pub(crate) fn build(
        dim: usize,
        total: usize,
        rows: &[(usize, &[f32])],
        parallel: bool,
    ) -> Self {
        let dim = dim.max(1);
        let mut vectors: Vec<Option<&[f32]>> = vec![None; total];
        for &(row, v) in rows {
            if let Some(slot) = vectors.get_mut(row) {
                *slot = Some(v);
            }
        }
        let mut codes = vec![0i8; total * dim];
        let mut bounds = vec![RowBound::default(); total];
        let row = |((codes, bound), v): ((&mut [i8], &mut RowBound), &Option<&[f32]>)| {
            if let Some(v) = v.filter(|v| v.len() == dim) {
                *bound = quantize(v, codes);
            }
        };
        if parallel {
            codes
                .par_chunks_mut(dim)
                .zip(bounds.par_iter_mut())
                .zip(vectors.par_iter())
                .with_min_len(256)
                .for_each(row);
        } else {
            codes
                .chunks_mut(dim)
                .zip(bounds.iter_mut())
                .zip(vectors.iter())
                .for_each(row);
        }
        QuantRows { dim, codes, bounds }
    }
}

/// The query as [`QuantRows`] keeps a row, with `‖q‖` and `‖q − q̂‖`.
struct QuantQuery {
    codes: Vec<i8>,
    /// `codes` widened to 16 bits.
    wide: Vec<i16>,
    scale: f64,
    norm: f64,
    err: f64,
}

impl QuantQuery {
    /// `query` kept as a row is (see the module).
    fn new(query: &[f32]) -> Self {
        let mut codes = vec![0i8; query.len()];
        let b = quantize(query, &mut codes);
        QuantQuery {
            wide: codes.iter().map(|&c| i16::from(c)).collect(),
            codes,
            scale: f64::from(b.scale),
            norm: f64::from(b.norm),
            err: f64::from(b.err),
        }
    }
}

/// The lower and upper bounds of the f32 score of each of `rows` (see the module),
/// by the AVX2 build where the CPU has it.
fn bounds_of(q: &QuantQuery, quant: &QuantRows, rows: &[(usize, &[f32])]) -> Vec<(f64, f64)> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (just checked), the one feature the build enables.
        #[allow(unsafe_code)]
        return unsafe { bounds_avx2(q, quant, rows) };
    }
    bounds_with(q, quant, rows, |c| dot_codes(&q.codes, c))
}

/// [`bounds_of`] built for AVX2, its integer dot products by [`dot_codes_avx2`]: 20,000
/// rows of 384 in about 0.2 ms on one core, against 0.8 for the baseline build.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn bounds_avx2(q: &QuantQuery, quant: &QuantRows, rows: &[(usize, &[f32])]) -> Vec<(f64, f64)> {
    bounds_with(q, quant, rows, |c| dot_codes_avx2(c, &q.wide))
}

/// [`bounds_of`] with the integer dot product of the query's codes and a row's `dot`.
#[inline(always)]
fn bounds_with(
    q: &QuantQuery,
    quant: &QuantRows,
    rows: &[(usize, &[f32])],
    dot: impl Fn(&[i8]) -> i32,
) -> Vec<(f64, f64)> {
    // Error of the f32 sum of `dim` products, relative to ‖q‖·‖v‖ (see the module).
    let rounding = quant.dim as f64 * f64::from(f32::EPSILON);
    let mut out = Vec::with_capacity(rows.len());
    for &(row, _) in rows {
        let Some(rb) = quant.bounds.get(row) else {
            out.push((f64::NEG_INFINITY, f64::INFINITY));
            continue;
        };
        let c = &quant.codes[row * quant.dim..][..quant.dim];
        let approx = q.scale * f64::from(rb.scale) * f64::from(dot(c));
        let slack = q.norm * f64::from(rb.err)
            + q.err * f64::from(rb.quant_norm)
            + rounding * q.norm * f64::from(rb.norm);
        // A little more for the rounding of the products above.
        let slack = slack * (1.0 + 1e-9) + 1e-12;
        out.push((approx - slack, approx + slack));
    }
    out
}

/// [`dot_codes`] of a row's codes and the query's codes widened to 16 bits, sixteen
/// products a step (`vpmovsxbw`, `vpmaddwd`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(unsafe_code)]
fn dot_codes_avx2(row: &[i8], query: &[i16]) -> i32 {
    use std::arch::x86_64::*;
    let n = row.len().min(query.len());
    let mut acc = _mm256_setzero_si256();
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: i + 16 <= n, so 16 bytes of `row` and 16 values of `query` are in
        // bounds from `i`; both loads are unaligned.
        let (r, w) = unsafe {
            (
                _mm_loadu_si128(row.as_ptr().add(i).cast()),
                _mm256_loadu_si256(query.as_ptr().add(i).cast()),
            )
        };
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_cvtepi8_epi16(r), w));
        i += 16;
    }
    let half = _mm_add_epi32(
        _mm256_castsi256_si128(acc),
        _mm256_extracti128_si256(acc, 1),
    );
    let half = _mm_add_epi32(half, _mm_shuffle_epi32(half, 0b01_00_11_10));
    let half = _mm_add_epi32(half, _mm_shuffle_epi32(half, 0b10_11_00_01));
    let mut s = _mm_cvtsi128_si32(half);
    for j in i..n {
        s += i32::from(row[j]) * i32::from(query[j]);
    }
    s
}

/// The `k` rows of `rows` with the highest dot product with `query`, best first, ties by
/// row: exactly [`dense::top_k_rows`]' answer, read mostly from `quant` (the 8-bit rows
/// of every row number in `rows`). `None` when the query cannot be bounded (a value
/// that is not finite) or the rows' dimension is not `quant`'s.
///
/// Why it is exact: every row gets a lower and an upper bound on its f32 score. Let `t`
/// be the `k`-th largest lower bound. At least `k` rows score `t` or more, so the `k`-th
/// best score is at least `t`, and a row whose upper bound is below `t` scores below
/// every row of the answer (strictly, so no tie is lost either). The rest are scored in
/// f32 by [`dense::dot`], as the plain scan scores them, and ranked the same way.
pub(crate) fn top_k_quantized(
    query: &[f32],
    k: usize,
    rows: &[(usize, &[f32])],
    quant: &QuantRows,
) -> Option<Vec<(usize, f32)>> {
    top_k_counted(query, k, rows, quant).map(|(top, _)| top)
}

/// [`top_k_quantized`], with how many rows it read in f32.
fn top_k_counted(
    query: &[f32],
    k: usize,
    rows: &[(usize, &[f32])],
    quant: &QuantRows,
) -> Option<(Vec<(usize, f32)>, usize)> {
    if query.len() != quant.dim || query.iter().any(|x| !x.is_finite()) {
        return None;
    }
    if k == 0 {
        return Some((Vec::new(), 0));
    }
    let q = QuantQuery::new(query);
    let bounds = |part: &[(usize, &[f32])]| bounds_of(&q, quant, part);
    let ranges: Vec<(f64, f64)> =
        if rows.len() >= dense::MIN_ROWS_TO_SPLIT && rayon::current_num_threads() > 1 {
            let (front, back) = rows.split_at(rows.len() / 2);
            let (mut a, b) = rayon::join(|| bounds(front), || bounds(back));
            a.extend(b);
            a
        } else {
            bounds(rows)
        };
    let threshold = if rows.len() > k {
        let mut lows: Vec<f64> = ranges.iter().map(|r| r.0).collect();
        let (_, kth, _) = lows.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
        *kth
    } else {
        f64::NEG_INFINITY
    };
    let mut top = TopK::new(k, k.min(rows.len()));
    let mut read = 0usize;
    for (&(row, v), &(_, high)) in rows.iter().zip(&ranges) {
        // Read unless below the threshold for sure (NaN bounds, none expected, are read).
        if high.partial_cmp(&threshold) != Some(std::cmp::Ordering::Less) {
            top.offer(row, dense::dot(v, query));
            read += 1;
        }
    }
    Some((top.into_sorted(), read))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rows_of(m: &[f32], dim: usize) -> Vec<(usize, &[f32])> {
        m.chunks_exact(dim).enumerate().collect()
    }

    /// `n` unit rows of `dim` from `seed` ([`unit_rows`]) and their 8-bit rows.
    fn fixture(n: usize, dim: usize, seed: u64) -> (Vec<f32>, QuantRows) {
        let m = unit_rows(n, dim, seed);
        let quant = QuantRows::build(dim, n, &rows_of(&m, dim), true);
        (m, quant)
    }

    /// The rows and scores of an answer, scores as bits.
    fn bits(v: &[(usize, f32)]) -> Vec<(usize, u32)> {
        v.iter().map(|(r, s)| (*r, s.to_bits())).collect()
    }

    /// Unit rows from a seed, some of them near copies of others (close scores).
    fn unit_rows(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut x = seed.wrapping_mul(6_364_136_223_846_793_005) | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let mut m = Vec::with_capacity(n * dim);
        for i in 0..n {
            let row: Vec<f64> = if i % 5 == 4 {
                let prev = &m[(i - 1) * dim..i * dim];
                prev.iter()
                    .map(|&p: &f32| f64::from(p) + 1e-4 * next())
                    .collect()
            } else {
                (0..dim).map(|_| next()).collect()
            };
            let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
            m.extend(row.iter().map(|v| (v / norm) as f32));
        }
        m
    }

    #[test]
    fn the_answer_is_the_exact_scans_bit_for_bit() {
        let dim = 48;
        let (m, quant) = fixture(3000, dim, 7);
        let rows = rows_of(&m, dim);
        for (qi, k) in [
            (0usize, 1usize),
            (4, 10),
            (17, 100),
            (1234, 2999),
            (5, 3000),
            (9, 5000),
        ] {
            let query = &m[qi * dim..(qi + 1) * dim];
            let want = dense::top_k_rows(query, k, rows.iter().copied());
            let got = top_k_quantized(query, k, &rows, &quant).expect("bounded");
            assert_eq!(got.len(), want.len(), "k {k}");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(
                    (g.0, g.1.to_bits()),
                    (w.0, w.1.to_bits()),
                    "query {qi}, k {k}"
                );
            }
        }
    }

    #[test]
    fn most_rows_are_not_read_in_f32() {
        // The point of the pass: for a top 10 of 3,000 rows of dimension 384, the
        // bounds leave few rows to read in f32.
        let dim = 384;
        let (m, quant) = fixture(3000, dim, 11);
        let rows = rows_of(&m, dim);
        for (qi, k) in [(0usize, 10usize), (100, 10), (2000, 100)] {
            let (top, read) =
                top_k_counted(&m[qi * dim..][..dim], k, &rows, &quant).expect("bounded");
            assert_eq!(top.len(), k);
            assert!(
                read >= k && read < 300,
                "query {qi}, k {k}: {read} of 3000 read"
            );
        }
    }

    #[test]
    fn rows_with_values_that_are_not_finite_are_still_ranked_as_the_scan_ranks_them() {
        let dim = 16;
        let mut m = unit_rows(600, dim, 3);
        m[40 * dim + 3] = f32::NAN;
        m[41 * dim] = f32::INFINITY;
        let rows = rows_of(&m, dim);
        let quant = QuantRows::build(dim, 600, &rows, false);
        let query = &m[7 * dim..8 * dim];
        for k in [1, 5, 50] {
            let want = dense::top_k_rows(query, k, rows.iter().copied());
            let got = top_k_quantized(query, k, &rows, &quant).expect("bounded");
            assert_eq!(bits(&got), bits(&want), "k {k}");
        }
        let mut bad = query.to_vec();
        bad[0] = f32::NAN;
        assert!(top_k_quantized(&bad, 5, &rows, &quant).is_none());
    }

    #[test]
    fn the_avx2_build_and_the_baseline_give_the_same_bounds() {
        let dim = 200;
        let (m, quant) = fixture(500, dim, 5);
        let rows = rows_of(&m, dim);
        let q = QuantQuery::new(&m[..dim]);
        let bits = |v: Vec<(f64, f64)>| -> Vec<(u64, u64)> {
            v.iter().map(|(a, b)| (a.to_bits(), b.to_bits())).collect()
        };
        let baseline = bounds_with(&q, &quant, &rows, |c| dot_codes(&q.codes, c));
        assert_eq!(bits(bounds_of(&q, &quant, &rows)), bits(baseline));
    }

    /// Both builds of [`quantize`] give the same codes and bounds, bit for bit, and
    /// the bounds hold: rows of several scales and lengths, zero rows, subnormal
    /// values, values not finite.
    #[test]
    fn both_builds_quantize_alike_and_the_bounds_hold() {
        let mut rows: Vec<Vec<f32>> = Vec::new();
        for (i, dim) in [1usize, 7, 8, 9, 200, 384].into_iter().enumerate() {
            for scale in [1e-3f32, 1.0, 30.0] {
                rows.extend(
                    unit_rows(4, dim, i as u64)
                        .chunks(dim)
                        .map(|r| r.iter().map(|x| x * scale).collect::<Vec<_>>()),
                );
            }
            rows.push(vec![0.0; dim]);
            rows.push(vec![-f32::MIN_POSITIVE / 8.0; dim]);
        }
        rows.push(vec![1.0, f32::NAN, 2.0]);
        rows.push(vec![1.0, f32::NEG_INFINITY]);
        for v in &rows {
            let mut codes = vec![0i8; v.len()];
            let bound = quantize_with(v, &mut codes);
            let finite = v.iter().all(|x| x.is_finite());
            assert_eq!(bound.err.is_finite(), finite, "{v:?}");
            if finite {
                // The stored norms are no smaller than the true ones.
                let s = f64::from(bound.scale);
                let norm = v.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
                let err = v
                    .iter()
                    .zip(&codes)
                    .map(|(&x, &c)| (f64::from(x) - s * f64::from(c)).powi(2))
                    .sum::<f64>()
                    .sqrt();
                assert!(f64::from(bound.norm) >= norm && f64::from(bound.err) >= err);
                assert!(codes.iter().all(|&c| (-127..=127).contains(&c)));
            }
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                let mut wide_codes = vec![0i8; v.len()];
                // SAFETY: the CPU has AVX2 (just checked).
                #[allow(unsafe_code)]
                let wide = unsafe { quantize_avx2(v, &mut wide_codes) };
                assert_eq!(wide_codes, codes);
                let b = |r: RowBound| [r.scale, r.norm, r.err, r.quant_norm].map(f32::to_bits);
                assert_eq!(b(wide), b(bound));
            }
        }
    }

    #[test]
    fn integer_dot_products_are_exact() {
        let a: Vec<i8> = (0..389).map(|i| ((i * 37) % 255 - 127) as i8).collect();
        let b: Vec<i8> = (0..389).map(|i| ((i * 91 + 5) % 255 - 127) as i8).collect();
        let want: i32 = a
            .iter()
            .zip(&b)
            .map(|(x, y)| i32::from(*x) * i32::from(*y))
            .sum();
        assert_eq!(dot_codes(&a, &b), want);
        let extreme = vec![-127i8; 384];
        assert_eq!(dot_codes(&extreme, &extreme), 127 * 127 * 384);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            let wide = |v: &[i8]| v.iter().map(|&c| i16::from(c)).collect::<Vec<_>>();
            // SAFETY: the CPU has AVX2 (just checked).
            #[allow(unsafe_code)]
            let (got, got_extreme) = unsafe {
                (
                    dot_codes_avx2(&a, &wide(&b)),
                    dot_codes_avx2(&extreme, &wide(&extreme)),
                )
            };
            assert_eq!((got, got_extreme), (want, 127 * 127 * 384));
        } else {
            eprintln!("skipped the AVX2 build: this CPU has no AVX2");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn any_subset_of_rows_gives_the_exact_answer(
            seed in 0u64..1000,
            dim in 1usize..40,
            k in 1usize..40,
            step in 1usize..4,
            scale in prop::sample::select(vec![1e-3f32, 1.0, 30.0]),
        ) {
            let n = 400;
            let m: Vec<f32> = unit_rows(n, dim, seed).iter().map(|v| v * scale).collect();
            let all = rows_of(&m, dim);
            // Some rows only, in any order (IVF candidates come out of order).
            let picked: Vec<(usize, &[f32])> = all.iter().copied().rev().step_by(step).collect();
            let quant = QuantRows::build(dim, n, &all, seed % 2 == 0);
            let query = &m[(seed as usize % n) * dim..][..dim];
            let want = dense::top_k_rows(query, k, picked.iter().copied());
            let got = top_k_quantized(query, k, &picked, &quant).expect("bounded");
            prop_assert_eq!(bits(&got), bits(&want));
        }
    }
}
