//! Exact dense search: a scan of vector rows, dot products (vectors are
//! unit length, so dot product = cosine), a bounded heap for the top k.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One candidate in the heap; the heap's top is the worst kept candidate.
#[derive(PartialEq)]
struct Cand(f32, usize);
impl Eq for Cand {}
impl Ord for Cand {
    fn cmp(&self, o: &Self) -> Ordering {
        // Worse = lower score, then higher row. Max-heap on "worse".
        o.0.total_cmp(&self.0).then(self.1.cmp(&o.1))
    }
}
impl PartialOrd for Cand {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
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
    let reserve = k.min(rows.size_hint().1.unwrap_or(1 << 12)).min(1 << 16);
    let mut heap: BinaryHeap<Cand> = BinaryHeap::with_capacity(reserve.saturating_add(1));
    for (row, vector) in rows {
        let s = dot(vector, query);
        if heap.len() < k {
            heap.push(Cand(s, row));
        } else if let Some(worst) = heap.peek() {
            if Cand(s, row).cmp(worst) == Ordering::Less {
                heap.pop();
                heap.push(Cand(s, row));
            }
        }
    }
    let mut out: Vec<(usize, f32)> = heap.into_iter().map(|c| (c.1, c.0)).collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
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
        fn dot_matches_naive(a in proptest::collection::vec(-1f32..1., 0..40)) {
            let b: Vec<f32> = a.iter().rev().copied().collect();
            let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            prop_assert!((dot(&a, &b) - naive).abs() < 1e-4);
        }
    }
}
