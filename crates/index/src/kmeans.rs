//! Seeded spherical k-means and nearest-centroid assignment, the compute half of the
//! IVF index ([`crate::ann`]).
//!
//! - [`train`]: Lloyd iterations on a sample, centroids kept at unit length (scores are dot
//!   products, as in dense search), empty lists re-seeded with the worst-fitted rows.
//! - [`Assigner`]: the nearest centroid of each row. With few centroids every one is
//!   scored (four rows at a time, so each centroid is loaded once per four rows); with
//!   many, the centroids are themselves grouped by k-means and a row scores only the
//!   members of its [`GROUP_PROBE`] best groups (about a tenth of the work; a row may land
//!   in its second-best list, which queries probing dozens of lists do not notice).
//!
//! Everything is deterministic: the random choices come from a seeded generator, rows
//! are assigned independently (in parallel with rayon, results in row order), and sums are
//! accumulated sequentially in row order. Dot products use a fixed accumulation order
//! without fused multiply-add, so the same input gives the same bits on any x86-64 or
//! ARM machine.

use excerpt_core::normalize;
use rayon::prelude::*;

/// With at most this many centroids every one is scored; above, the two-level search.
pub(crate) const EXACT_MAX: usize = 256;

/// Groups of centroids a row scores in the two-level search.
pub(crate) const GROUP_PROBE: usize = 6;

/// Rows per parallel task.
const PAR_ROWS: usize = 256;

/// A small deterministic generator (SplitMix64).
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }
}

/// `count` distinct indices of `0..n` in random order (a partial Fisher-Yates shuffle).
pub(crate) fn sample_indices(n: usize, count: usize, rng: &mut Rng) -> Vec<usize> {
    let count = count.min(n);
    let mut idx: Vec<usize> = (0..n).collect();
    for i in 0..count {
        let j = i + rng.below(n - i);
        idx.swap(i, j);
    }
    idx.truncate(count);
    idx
}

/// Dot product with eight independent accumulators (the same order as the exact scan).
#[inline]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    crate::dense::dot(a, b)
}

/// Dot products of four rows with one centroid, each in the same order as [`dot`].
#[inline]
fn dot4(r: [&[f32]; 4], c: &[f32]) -> [f32; 4] {
    let mut acc = [[0f32; 8]; 4];
    let main = c.len() - c.len() % 8;
    let it = c[..main]
        .chunks_exact(8)
        .zip(r[0][..main].chunks_exact(8))
        .zip(r[1][..main].chunks_exact(8))
        .zip(r[2][..main].chunks_exact(8))
        .zip(r[3][..main].chunks_exact(8));
    for ((((c, a), b), d), e) in it {
        for i in 0..8 {
            acc[0][i] += a[i] * c[i];
            acc[1][i] += b[i] * c[i];
            acc[2][i] += d[i] * c[i];
            acc[3][i] += e[i] * c[i];
        }
    }
    let mut out = [0f32; 4];
    for (j, row) in r.iter().enumerate() {
        let mut s: f32 = acc[j].iter().sum();
        for (x, y) in c[main..].iter().zip(&row[main..]) {
            s += x * y;
        }
        out[j] = s;
    }
    out
}

/// Whether `(s, i)` beats `(best_s, best_i)`: higher score, then lower index.
#[inline]
fn better(s: f32, i: u32, best_s: f32, best_i: u32) -> bool {
    s > best_s || (s == best_s && i < best_i)
}

/// Centroids grouped for the two-level search.
struct Groups {
    /// Group centres, row-major.
    centers: Vec<f32>,
    /// `members[offsets[g]..offsets[g + 1]]` are group `g`'s centroids.
    offsets: Vec<usize>,
    members: Vec<u32>,
}

/// Finds the nearest centroid (highest dot product, ties to the lower index) of rows.
pub(crate) struct Assigner<'a> {
    cents: &'a [f32],
    dim: usize,
    k: usize,
    groups: Option<Groups>,
}

impl<'a> Assigner<'a> {
    /// An assigner over `cents` (`k` rows of `dim`), grouping them when there are many.
    pub(crate) fn new(cents: &'a [f32], dim: usize) -> Assigner<'a> {
        Self::for_rows(cents, dim, usize::MAX)
    }

    /// An assigner over `cents` for `rows` rows: grouped only when there are many
    /// centroids and the rows are enough to repay the grouping (a few k-means passes
    /// over the centroids); a commit of one document scores every centroid instead.
    pub(crate) fn for_rows(cents: &'a [f32], dim: usize, rows: usize) -> Assigner<'a> {
        let k = cents.len().checked_div(dim).unwrap_or(0);
        let groups = (k > EXACT_MAX && grouping_pays(k, rows)).then(|| group(cents, dim, k));
        Assigner {
            cents,
            dim,
            k,
            groups,
        }
    }

    fn centroid(&self, c: usize) -> &[f32] {
        &self.cents[c * self.dim..(c + 1) * self.dim]
    }

    /// Nearest centroid and its score for every row of `rows` (row-major), in row order.
    pub(crate) fn nearest_all(&self, rows: &[f32]) -> Vec<(u32, f32)> {
        if self.k == 0 || self.dim == 0 {
            return vec![(0, 0.0); rows.len().checked_div(self.dim).unwrap_or(0)];
        }
        rows.par_chunks(PAR_ROWS * self.dim)
            .flat_map_iter(|block| match &self.groups {
                None => self.nearest_exact(block),
                Some(g) => block
                    .chunks_exact(self.dim)
                    .map(|r| self.nearest_grouped(g, r))
                    .collect(),
            })
            .collect()
    }

    /// Scores every centroid, four rows at a time.
    fn nearest_exact(&self, block: &[f32]) -> Vec<(u32, f32)> {
        let dim = self.dim;
        let n = block.len() / dim;
        let mut out = Vec::with_capacity(n);
        let mut r = 0;
        while r + 4 <= n {
            let rows: [&[f32]; 4] =
                std::array::from_fn(|j| &block[(r + j) * dim..(r + j + 1) * dim]);
            let mut best = [(0u32, f32::NEG_INFINITY); 4];
            for c in 0..self.k {
                let s = dot4(rows, self.centroid(c));
                for j in 0..4 {
                    if better(s[j], c as u32, best[j].1, best[j].0) {
                        best[j] = (c as u32, s[j]);
                    }
                }
            }
            out.extend(best);
            r += 4;
        }
        for row in block[r * dim..].chunks_exact(dim) {
            let mut best = (0u32, f32::NEG_INFINITY);
            for c in 0..self.k {
                let s = dot(row, self.centroid(c));
                if better(s, c as u32, best.1, best.0) {
                    best = (c as u32, s);
                }
            }
            out.push(best);
        }
        out
    }

    /// Scores the members of the row's best groups only.
    fn nearest_grouped(&self, g: &Groups, row: &[f32]) -> (u32, f32) {
        let ng = g.offsets.len() - 1;
        let mut top: Vec<(f32, usize)> = g
            .centers
            .chunks_exact(self.dim)
            .enumerate()
            .map(|(i, c)| (dot(row, c), i))
            .collect();
        let p = GROUP_PROBE.min(ng);
        if p < ng {
            top.select_nth_unstable_by(p - 1, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            top.truncate(p);
        }
        let mut best = (0u32, f32::NEG_INFINITY);
        for &(_, gi) in &top {
            for &c in &g.members[g.offsets[gi]..g.offsets[gi + 1]] {
                let s = dot(row, self.centroid(c as usize));
                if better(s, c, best.1, best.0) {
                    best = (c, s);
                }
            }
        }
        best
    }
}

/// Iterations of the k-means that groups centroids ([`group`]).
const GROUP_ITERATIONS: usize = 6;

/// Whether grouping `k` centroids costs less than it saves on `rows` rows, counted in
/// dot products: grouping scores every centroid against every group centre once per
/// iteration and once more to assign them; a row then scores the group centres and
/// its probed groups' members instead of every centroid.
fn grouping_pays(k: usize, rows: usize) -> bool {
    let ng = group_count(k);
    let cost = (GROUP_ITERATIONS + 1) * k * ng;
    let per_row = (ng + GROUP_PROBE * k / ng.max(1)).min(k);
    rows.saturating_mul(k - per_row) > cost
}

/// How many groups `k` centroids are grouped into: about `sqrt(k)`.
fn group_count(k: usize) -> usize {
    ((k as f64).sqrt().round() as usize).clamp(1, EXACT_MAX)
}

/// Groups `k` centroids into about `sqrt(k)` groups by a few exact k-means iterations.
fn group(cents: &[f32], dim: usize, k: usize) -> Groups {
    let ng = group_count(k);
    let centers = lloyd(
        cents,
        dim,
        ng,
        GROUP_ITERATIONS,
        &mut Rng::new(0x6772_6f75_7073),
        None,
    );
    let assigner = Assigner {
        cents: &centers,
        dim,
        k: ng,
        groups: None,
    };
    let asg = assigner.nearest_all(cents);
    let mut offsets = vec![0usize; ng + 1];
    for &(g, _) in &asg {
        offsets[g as usize + 1] += 1;
    }
    for i in 0..ng {
        offsets[i + 1] += offsets[i];
    }
    let mut fill = offsets.clone();
    let mut members = vec![0u32; k];
    for (c, &(g, _)) in asg.iter().enumerate() {
        members[fill[g as usize]] = c as u32;
        fill[g as usize] += 1;
    }
    Groups {
        centers,
        offsets,
        members,
    }
}

/// Trains `k` unit centroids on `sample` (rows of `dim`, already in random order) with
/// `iters` Lloyd iterations. Progress: `on_iter(done, total)` after each iteration.
pub(crate) fn train(
    sample: &[f32],
    dim: usize,
    k: usize,
    iters: usize,
    seed: u64,
    on_iter: Option<&dyn Fn(usize, usize)>,
) -> Vec<f32> {
    lloyd(sample, dim, k, iters, &mut Rng::new(seed), on_iter)
}

fn lloyd(
    rows: &[f32],
    dim: usize,
    k: usize,
    iters: usize,
    rng: &mut Rng,
    on_iter: Option<&dyn Fn(usize, usize)>,
) -> Vec<f32> {
    let n = rows.len().checked_div(dim).unwrap_or(0);
    let k = k.min(n);
    if k == 0 {
        return Vec::new();
    }
    let row = |i: usize| &rows[i * dim..(i + 1) * dim];
    // Start from k distinct rows chosen at random.
    let mut cents: Vec<f32> = sample_indices(n, k, rng)
        .into_iter()
        .flat_map(|i| row(i).iter().copied())
        .collect();
    cents.chunks_exact_mut(dim).for_each(normalize);
    for it in 0..iters {
        let asg = Assigner::new(&cents, dim).nearest_all(rows);
        let mut sums = vec![0f64; k * dim];
        let mut counts = vec![0usize; k];
        for (i, &(c, _)) in asg.iter().enumerate() {
            counts[c as usize] += 1;
            let s = &mut sums[c as usize * dim..(c as usize + 1) * dim];
            for (a, &x) in s.iter_mut().zip(row(i)) {
                *a += x as f64;
            }
        }
        // Empty lists take the worst-fitted rows (lowest score to their centroid).
        let empty: Vec<usize> = (0..k).filter(|&c| counts[c] == 0).collect();
        if !empty.is_empty() {
            let mut worst: Vec<(f32, usize)> =
                asg.iter().enumerate().map(|(i, &(_, s))| (s, i)).collect();
            worst.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            for (&c, &(_, i)) in empty.iter().zip(&worst) {
                for (a, &x) in sums[c * dim..(c + 1) * dim].iter_mut().zip(row(i)) {
                    *a = x as f64;
                }
            }
        }
        for (c, s) in cents.chunks_exact_mut(dim).zip(sums.chunks_exact(dim)) {
            for (x, &a) in c.iter_mut().zip(s) {
                *x = a as f32;
            }
            normalize(c);
        }
        if let Some(f) = on_iter {
            f(it + 1, iters);
        }
    }
    cents
}

#[cfg(test)]
mod tests {
    use super::Rng;
    use super::*;
    use proptest::prelude::*;

    fn random_unit(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut rng = Rng::new(seed);
        let mut v: Vec<f32> = (0..n * dim)
            .map(|_| (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
            .collect();
        v.chunks_exact_mut(dim).for_each(normalize);
        v
    }

    fn brute(rows: &[f32], cents: &[f32], dim: usize) -> Vec<(u32, f32)> {
        rows.chunks_exact(dim)
            .map(|r| {
                let mut best = (0u32, f32::NEG_INFINITY);
                for (c, ce) in cents.chunks_exact(dim).enumerate() {
                    let s = dot(r, ce);
                    if better(s, c as u32, best.1, best.0) {
                        best = (c as u32, s);
                    }
                }
                best
            })
            .collect()
    }

    #[test]
    fn few_rows_over_many_centroids_are_assigned_exactly_and_many_rows_grouped() {
        let (dim, k) = (8, 600);
        let cents = random_unit(k, dim, 5);
        let rows = random_unit(3, dim, 6);
        let few = Assigner::for_rows(&cents, dim, 3);
        assert!(few.groups.is_none());
        assert_eq!(few.nearest_all(&rows), brute(&rows, &cents, dim));
        assert!(Assigner::for_rows(&cents, dim, 100_000).groups.is_some());
        assert!(Assigner::new(&cents, dim).groups.is_some());
        // Below the size where grouping is considered at all, never grouped.
        let small = random_unit(EXACT_MAX, dim, 7);
        assert!(Assigner::for_rows(&small, dim, usize::MAX).groups.is_none());
    }

    proptest! {
        #[test]
        fn exact_assignment_matches_brute_force(
            n in 0usize..40, k in 1usize..20, dim in 1usize..30, seed in 0u64..1000,
        ) {
            let rows = random_unit(n, dim, seed);
            let cents = random_unit(k, dim, seed + 1);
            let got = Assigner::new(&cents, dim).nearest_all(&rows);
            prop_assert_eq!(got, brute(&rows, &cents, dim));
        }

        #[test]
        fn dot4_matches_dot(dim in 1usize..70, seed in 0u64..1000) {
            let v = random_unit(5, dim, seed);
            let r: [&[f32]; 4] = std::array::from_fn(|j| &v[j * dim..(j + 1) * dim]);
            let c = &v[4 * dim..];
            let got = dot4(r, c);
            for j in 0..4 {
                prop_assert_eq!(got[j].to_bits(), dot(r[j], c).to_bits());
            }
        }
    }

    #[test]
    fn grouped_assignment_is_mostly_exact_and_never_wrong_about_scores() {
        let dim = 32;
        let cents = random_unit(600, dim, 3);
        let rows = random_unit(2000, dim, 4);
        let a = Assigner::new(&cents, dim);
        assert!(a.groups.is_some());
        let got = a.nearest_all(&rows);
        let want = brute(&rows, &cents, dim);
        let same = got.iter().zip(&want).filter(|(g, w)| g.0 == w.0).count();
        let n = rows.len() / dim;
        // Uniform random data is the worst case for grouping; still most rows agree.
        assert!(same * 10 >= n * 7, "{same} of {n}");
        for (i, &(c, s)) in got.iter().enumerate() {
            let r = &rows[i * dim..(i + 1) * dim];
            assert_eq!(
                s.to_bits(),
                dot(r, &cents[c as usize * dim..][..dim]).to_bits()
            );
            assert!(s <= want[i].1);
        }
    }

    #[test]
    fn training_is_deterministic_and_unit_length() {
        let dim = 16;
        let rows = random_unit(3000, dim, 9);
        let a = train(&rows, dim, 300, 4, 42, None);
        let b = train(&rows, dim, 300, 4, 42, None);
        assert_eq!(a, b);
        assert_eq!(a.len(), 300 * dim);
        for c in a.chunks_exact(dim) {
            let n: f32 = c.iter().map(|x| x * x).sum();
            assert!((n - 1.0).abs() < 1e-4);
        }
        assert_ne!(a, train(&rows, dim, 300, 4, 43, None));
    }

    #[test]
    fn more_centroids_than_rows_gives_one_per_row() {
        let rows = random_unit(5, 8, 1);
        assert_eq!(train(&rows, 8, 50, 3, 1, None).len(), 5 * 8);
        assert!(train(&[], 8, 50, 3, 1, None).is_empty());
    }
}
