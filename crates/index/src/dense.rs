//! Exact dense search: a scan of vector rows, dot products (vectors are
//! unit length, so dot product = cosine), a bounded heap for the top k.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One candidate in the heap; the heap's top is the worst kept candidate.
#[derive(PartialEq)]
struct Cand<R>(f32, R);
impl<R: Ord> Eq for Cand<R> {}
impl<R: Ord> Ord for Cand<R> {
    fn cmp(&self, o: &Self) -> Ordering {
        // Worse = lower score, then higher row. Max-heap on "worse".
        o.0.total_cmp(&self.0).then(self.1.cmp(&o.1))
    }
}
impl<R: Ord> PartialOrd for Cand<R> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// The best `k` of the `(row, score)` pairs offered: higher score first, ties by the
/// lower row (a row offered later with an equal score does not displace one kept).
pub(crate) struct TopK<R> {
    k: usize,
    heap: BinaryHeap<Cand<R>>,
}

impl<R: Ord + Copy> TopK<R> {
    /// An empty top `k`, with room reserved for `reserve` candidates (at most `k`).
    pub(crate) fn new(k: usize, reserve: usize) -> Self {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(reserve.min(k).saturating_add(1)),
        }
    }

    /// Keeps `(row, score)` if it is among the best `k` so far.
    #[inline]
    pub(crate) fn offer(&mut self, row: R, score: f32) {
        if self.heap.len() < self.k {
            self.heap.push(Cand(score, row));
        } else if let Some(worst) = self.heap.peek() {
            if Cand(score, row).cmp(worst) == Ordering::Less {
                self.heap.pop();
                self.heap.push(Cand(score, row));
            }
        }
    }

    /// The lowest score [`TopK::offer`] may still keep: the worst kept one once `k`
    /// are kept (an equal score may win on its row), else minus infinity.
    #[inline]
    pub(crate) fn floor(&self) -> f32 {
        match self.heap.peek() {
            Some(worst) if self.heap.len() >= self.k => worst.0,
            _ => f32::NEG_INFINITY,
        }
    }

    /// The kept pairs, best first, ties by row.
    pub(crate) fn into_sorted(self) -> Vec<(R, f32)> {
        let mut out: Vec<(R, f32)> = self.heap.into_iter().map(|c| (c.1, c.0)).collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }
}

/// Dot product, written so the compiler vectorises it (8 independent accumulators).
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, ra) = a.split_at(a.len() - a.len() % 8);
    let (cb, rb) = b.split_at(ca.len());
    for (x, y) in ca.chunks_exact(8).zip(cb.chunks_exact(8)) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// The `k` rows of `rows` (each a row number and its vector) with the highest dot
/// product with `query`, best first, ties by row number ascending.
pub fn top_k_rows<'a>(
    query: &[f32],
    k: usize,
    rows: impl Iterator<Item = (usize, &'a [f32])>,
) -> Vec<(usize, f32)> {
    if k == 0 {
        return Vec::new();
    }
    // Never reserve for more rows than may come, whatever `k` the caller asks for.
    let reserve = rows.size_hint().1.unwrap_or(1 << 12).min(1 << 16);
    let mut top = TopK::new(k, reserve);
    for (row, vector) in rows {
        top.offer(row, dot(vector, query));
    }
    top.into_sorted()
}

/// How many rows ahead [`top_k_listed`] asks for a row's vector: the dense stage of a
/// query at 105k chunks (an IVF probe of about 2,000 rows) 0.82 -> 0.71 ms p50, paired;
/// one and four rows ahead measured the same as two.
const ROWS_AHEAD: usize = 2;

/// [`top_k_rows`] of a list of rows, each row's vector asked for from memory
/// [`ROWS_AHEAD`] rows before it is scored (the rows of an IVF probe lie apart in the
/// vectors file, so the CPU's own prefetching cannot guess where the next one starts).
/// The same rows, scores and order.
fn top_k_listed(query: &[f32], k: usize, rows: &[(usize, &[f32])]) -> Vec<(usize, f32)> {
    if k == 0 {
        return Vec::new();
    }
    let mut top = TopK::new(k, rows.len().min(1 << 16));
    for (i, &(row, vector)) in rows.iter().enumerate() {
        if let Some(&(_, next)) = rows.get(i + ROWS_AHEAD) {
            prefetch(next);
        }
        top.offer(row, dot(vector, query));
    }
    top.into_sorted()
}

/// Asks for `values` to be brought into the cache (a hint; nothing on other CPUs).
#[inline(always)]
#[allow(unsafe_code)]
fn prefetch(values: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    // A cache line is sixteen values.
    for line in values.chunks(16) {
        // SAFETY: a prefetch is a hint: it reads nothing the program sees and never
        // faults; the address is within `values`.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                line.as_ptr().cast(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = values;
}

/// Rows below which [`top_k_rows_split`] scores on one thread: a hand-off to another
/// worker costs tens of microseconds, a thousand rows of 384 values about fifty when
/// they are in cache, more when they come from memory, as an IVF search's ~2,000
/// candidates at 100k chunks do (split from 512 rows rather than 2,048: the dense stage
/// 0.73-0.77 -> 0.67-0.71 ms p50 there).
pub(crate) const MIN_ROWS_TO_SPLIT: usize = 512;

/// [`top_k_rows`] of a list of rows, its two halves scored on two of rayon's workers
/// when it is long enough: the same rows, scores and order (the best `k` of the whole
/// are the best `k` of the halves' best `k`, sorted the same way).
pub fn top_k_rows_split(query: &[f32], k: usize, rows: &[(usize, &[f32])]) -> Vec<(usize, f32)> {
    if rows.len() < MIN_ROWS_TO_SPLIT || rayon::current_num_threads() < 2 {
        return top_k_listed(query, k, rows);
    }
    let (front, back) = rows.split_at(rows.len() / 2);
    let (mut best, back) = rayon::join(
        || top_k_listed(query, k, front),
        || top_k_listed(query, k, back),
    );
    best.extend(back);
    best.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    best.truncate(k);
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn matches_full_sort(vals in proptest::collection::vec(-3i32..3, 0..60), k in 0usize..10) {
            // dim 1: the matrix is the scores themselves; many ties.
            let m: Vec<f32> = vals.iter().map(|&v| v as f32).collect();
            let got = top_k_rows(&[1.0], k, m.chunks_exact(1).enumerate());
            let mut all: Vec<(usize, f32)> = m.iter().copied().enumerate().collect();
            all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            all.truncate(k);
            prop_assert_eq!(got, all);
        }

        #[test]
        fn a_list_scores_as_the_rows_do(
            vals in proptest::collection::vec(-3i32..3, 0..90),
            k in 0usize..12,
        ) {
            // dim 3, rows in any order of row number: the prefetching loop must give
            // the iterator's rows, scores and ties.
            let m: Vec<f32> = vals.iter().map(|&v| v as f32 * 0.5).collect();
            let mut rows: Vec<(usize, &[f32])> = m.chunks_exact(3).enumerate().collect();
            rows.reverse();
            let q = [1.0, -0.5, 0.25];
            prop_assert_eq!(
                top_k_listed(&q, k, &rows),
                top_k_rows(&q, k, rows.iter().copied())
            );
        }

        #[test]
        fn dot_matches_naive(a in proptest::collection::vec(-1f32..1., 0..40)) {
            let b: Vec<f32> = a.iter().rev().copied().collect();
            let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            prop_assert!((dot(&a, &b) - naive).abs() < 1e-4);
        }
    }

    #[test]
    fn split_scoring_keeps_the_rows_scores_and_order() {
        // 5,000 rows of dimension 4 with many equal scores (values in a small set).
        let m: Vec<f32> = (0..20_000u32)
            .map(|i| ((i.wrapping_mul(2_654_435_761) >> 7) % 5) as f32 - 2.0)
            .collect();
        let rows: Vec<(usize, &[f32])> = m.chunks_exact(4).enumerate().collect();
        let q = [0.5, -1.0, 0.25, 1.0];
        for k in [1, 10, 100, 3000, 6000] {
            let whole = top_k_rows(&q, k, rows.iter().copied());
            assert_eq!(top_k_rows_split(&q, k, &rows), whole, "k {k}");
        }
        // Rows out of order and with gaps (IVF candidates), too.
        let picked: Vec<(usize, &[f32])> = rows.iter().copied().rev().step_by(2).collect();
        let whole = top_k_rows(&q, 50, picked.iter().copied());
        assert_eq!(top_k_rows_split(&q, 50, &picked), whole);
    }
}
