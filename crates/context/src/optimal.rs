//! Budget-optimal selection of several segments: a knapsack over segments by dynamic
//! programming.
//!
//! Given per-chunk values and token counts for several documents, choose non-overlapping
//! segments (contiguous chunk runs inside one document) that maximise the **sum** of their
//! values subject to:
//!
//! - each segment has `1 ≤ e − s ≤ max_len_chunks` chunks and value `≥ min_value`;
//! - at most `max_segments` segments;
//! - their token counts sum to at most `max_total_tokens`.
//!
//! Picking the best segment first and repeating (greedy) is not optimal under a budget: a
//! segment worth 3.0 for the whole budget beats nothing alone, but two segments worth 2.0
//! each for half the budget each are worth 4.0 together.
//!
//! # Candidates
//!
//! Only segments whose first and last chunks have a positive value are candidates. That
//! loses nothing: trimming a non-positive end off a segment does not lower its value (so it
//! still reaches `min_value`) and does not raise its tokens, and a segment of value `≤ 0`
//! never raises a sum. So the optimum over the candidates is the optimum over all
//! segments. Values are negative for most chunks (relevance minus a threshold), so the
//! candidates are few: at most `P · max_len_chunks` for `P` positive chunks.
//!
//! # Dynamic programme
//!
//! Documents are laid end to end and visited position by position. `G[k][b]` is the best
//! sum of at most `k` candidates ending at or before the current position that use at most
//! `b` budget units. At each position `p`, the candidates ending at `p` update `G` from the
//! table saved when the visit passed their start:
//! `G[k][b] = max(G[k][b], S_s[k − 1][b − units(seg)] + value(seg))`; then, if a candidate
//! starts at `p`, `G` is saved as `S_p`. Choices are recorded per update so the optimum
//! is rebuilt by walking back, never by comparing floats.
//!
//! Budget units: when all candidates together fit the budget, it cannot bind and is left
//! out. Otherwise token counts are grouped into units of `q = ⌈budget / 256⌉` tokens
//! (`q = 1`, exact, for budgets up to 256 tokens). A segment costs `⌈tokens / q⌉` units and
//! the budget is `⌊budget / q⌋` units, so every selection fits the real budget; it is the
//! exact optimum among selections whose rounded costs fit. Cost:
//! `O(candidates · max_segments · 256)` time and one table per candidate start.
//!
//! Ties (equal sums, compared exactly in `f64`): the selection found first in the visit
//! order (documents in the given order, positions ascending, then candidates by start
//! ascending) is kept, so the result is deterministic.

use crate::segments::{
    refine_lazily, validate_input, DocValues, SegmentError, SegmentParams, SelectedSegment,
};

/// Largest number of budget units the programme tracks.
const MAX_UNITS: u64 = 256;

/// A candidate segment in global coordinates.
#[derive(Debug, Clone, Copy)]
struct Cand {
    doc_index: usize,
    start: usize,
    end: usize,
    value: f64,
    tokens: u64,
    units: usize,
}

/// The selection of non-overlapping segments with the largest total value under the
/// token budget (see the module documentation for the exact statement and the rounding of
/// token counts for budgets above 256 tokens).
///
/// Output order: value descending, then document, then start (the order a caller adds
/// them to a context in).
pub fn select_segments_optimal(
    docs: &[DocValues],
    params: &SegmentParams,
) -> Result<Vec<SelectedSegment>, SegmentError> {
    validate_input(docs, params)?;
    let (mut cands, total_tokens) = candidates(docs, params);
    if cands.is_empty() || params.max_segments == 0 {
        return Ok(Vec::new());
    }
    let units = budget_units(&mut cands, params, total_tokens);
    cands.retain(|c| c.units <= units);
    if cands.is_empty() {
        return Ok(Vec::new());
    }
    cands.sort_by_key(|c| (c.doc_index, c.end, c.start));
    let k_max = params.max_segments.min(cands.len());
    let events = programme(docs, &cands, k_max, units);
    let mut out = walk_back(docs, &cands, &events, k_max, units);
    out.sort_by(|x, y| {
        y.value
            .total_cmp(&x.value)
            .then(x.doc.cmp(&y.doc))
            .then(x.start.cmp(&y.start))
    });
    Ok(out)
}

/// Every qualifying segment (starting and ending on a positive value, worth at least
/// `min_value`, at most `max_len_chunks` long, within the budget), in visit order, and
/// their tokens summed.
fn candidates(docs: &[DocValues], params: &SegmentParams) -> (Vec<Cand>, u64) {
    let min_value = f64::from(params.min_value);
    let max_len = params.max_len_chunks;
    let mut cands: Vec<Cand> = Vec::new();
    let mut total_tokens = 0u64;
    for (di, d) in docs.iter().enumerate() {
        let n = d.values.len();
        for s in 0..n {
            if d.values[s] <= 0.0 {
                continue;
            }
            let (mut value, mut tokens) = (0.0f64, 0u64);
            for e in s + 1..=n.min(s.saturating_add(max_len)) {
                value += f64::from(d.values[e - 1]);
                tokens += u64::from(d.lengths[e - 1]);
                if d.values[e - 1] > 0.0 && value >= min_value && tokens <= params.max_total_tokens
                {
                    cands.push(Cand {
                        doc_index: di,
                        start: s,
                        end: e,
                        value,
                        tokens,
                        units: 0,
                    });
                    total_tokens = total_tokens.saturating_add(tokens);
                }
            }
        }
    }
    (cands, total_tokens)
}

/// Budget units: when all candidates together fit, the budget cannot bind and costs
/// nothing (0: one unit column); otherwise tokens are grouped in units of `q` (each
/// candidate's `units` set) and the budget is `max_total_tokens / q` units.
fn budget_units(cands: &mut [Cand], params: &SegmentParams, total_tokens: u64) -> usize {
    if total_tokens <= params.max_total_tokens {
        return 0;
    }
    let q = params.max_total_tokens.div_ceil(MAX_UNITS).max(1);
    for c in cands.iter_mut() {
        c.units = c.tokens.div_ceil(q) as usize;
    }
    (params.max_total_tokens / q) as usize
}

/// One end event of the programme: the position (document index, chunk) where
/// candidates end, and for each cell `(k, b)` of the table the candidate that set it
/// there (`u32::MAX`: kept from before).
type EndEvent = ((usize, usize), Vec<u32>);

/// The dynamic programme over positions in visit order: `G[k][b]`, the best total of at
/// most `k` segments in at most `b` units ending before the position, extended at each
/// end event by the candidates ending there from the table saved at their start.
fn programme(docs: &[DocValues], cands: &[Cand], k_max: usize, units: usize) -> Vec<EndEvent> {
    let width = units + 1;
    let layer = (k_max + 1) * width;
    // Saved tables per distinct (doc, start) of a candidate.
    let mut starts: Vec<(usize, usize)> = cands.iter().map(|c| (c.doc_index, c.start)).collect();
    starts.sort_unstable();
    starts.dedup();
    let mut saved: Vec<Vec<f64>> = vec![Vec::new(); starts.len()];
    let mut events: Vec<EndEvent> = Vec::new();

    let mut g = vec![0.0f64; layer];
    let mut next_start = 0usize; // index into `starts`
    let mut ci = 0usize; // index into `cands` (sorted by doc, end)
    for (di, d) in docs.iter().enumerate() {
        for p in 0..=d.values.len() {
            // Candidates ending at p.
            let first = ci;
            while ci < cands.len() && cands[ci].doc_index == di && cands[ci].end == p {
                ci += 1;
            }
            if first < ci {
                let mut choice = vec![u32::MAX; layer];
                for (idx, c) in cands[first..ci].iter().enumerate() {
                    let si = starts
                        .binary_search(&(c.doc_index, c.start))
                        .expect("every candidate start is saved");
                    let s_tab = &saved[si];
                    for k in 1..=k_max {
                        let (row, prev) = (k * width, (k - 1) * width);
                        for b in c.units..=units {
                            let v = s_tab[prev + b - c.units] + c.value;
                            if v > g[row + b] {
                                g[row + b] = v;
                                choice[row + b] = (first + idx) as u32;
                            }
                        }
                    }
                }
                keep_monotone(&mut g, &mut choice, k_max, width);
                events.push(((di, p), choice));
            }
            // Candidates starting at p.
            if next_start < starts.len() && starts[next_start] == (di, p) {
                saved[next_start] = g.clone();
                next_start += 1;
            }
        }
    }
    events
}

/// Keeps the table monotone in `k` and `b` ("at most"), carrying each cell's choice.
fn keep_monotone(g: &mut [f64], choice: &mut [u32], k_max: usize, width: usize) {
    for k in 0..=k_max {
        for b in 0..width {
            let i = k * width + b;
            let mut best = g[i];
            let mut from = choice[i];
            if b > 0 && g[i - 1] > best {
                best = g[i - 1];
                from = choice[i - 1];
            }
            if k > 0 && g[i - width] > best {
                best = g[i - width];
                from = choice[i - width];
            }
            if best > g[i] {
                g[i] = best;
                choice[i] = from;
            }
        }
    }
}

/// The selection, walked back from the end: the latest event that chose the current
/// cell gives a segment, and the walk goes on from the table saved at its start.
fn walk_back(
    docs: &[DocValues],
    cands: &[Cand],
    events: &[EndEvent],
    k_max: usize,
    units: usize,
) -> Vec<SelectedSegment> {
    let width = units + 1;
    let mut out = Vec::new();
    let (mut k, mut b) = (k_max, units);
    let mut ev = events.len();
    while ev > 0 && k > 0 {
        ev -= 1;
        let c = events[ev].1[k * width + b];
        if c == u32::MAX {
            continue;
        }
        let c = cands[c as usize];
        out.push(SelectedSegment {
            doc: docs[c.doc_index].doc,
            start: c.start,
            end: c.end,
            value: c.value as f32,
            tokens: c.tokens,
        });
        // The table this candidate extended is the one saved at its start: events after
        // that point are skipped.
        k -= 1;
        b -= c.units;
        while ev > 0 && events[ev - 1].0 > (c.doc_index, c.start) {
            ev -= 1;
        }
    }
    out
}

/// [`select_segments_optimal`] on lower bounds of the token counts, refined lazily: see
/// [`crate::select_segments_lazy`], whose argument carries over (with bounds every
/// selection that fits exactly also fits, so an optimum made only of exact chunks is the
/// exact optimum). Exact counts are asked only for units of picked segments, each once.
pub fn select_segments_optimal_lazy(
    docs: &mut [DocValues],
    params: &SegmentParams,
    exact: impl FnMut(usize, usize) -> u32,
) -> Result<Vec<SelectedSegment>, SegmentError> {
    refine_lazily(docs, params, exact, select_segments_optimal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Brute force: every set of non-overlapping segments, by recursion over positions.
    fn brute(docs: &[DocValues], p: &SegmentParams, cost: &dyn Fn(u64) -> u64, cap: u64) -> f64 {
        fn go(
            docs: &[DocValues],
            p: &SegmentParams,
            cost: &dyn Fn(u64) -> u64,
            di: usize,
            pos: usize,
            left: u64,
            k: usize,
        ) -> f64 {
            if di == docs.len() {
                return 0.0;
            }
            let d = &docs[di];
            if pos >= d.values.len() {
                return go(docs, p, cost, di + 1, 0, left, k);
            }
            // Skip this chunk.
            let mut best = go(docs, p, cost, di, pos + 1, left, k);
            if k == 0 {
                return best;
            }
            let (mut v, mut t) = (0.0f64, 0u64);
            for e in pos + 1..=d.values.len().min(pos.saturating_add(p.max_len_chunks)) {
                v += f64::from(d.values[e - 1]);
                t += u64::from(d.lengths[e - 1]);
                let c = cost(t);
                if c <= left && v >= f64::from(p.min_value) {
                    best = best.max(v + go(docs, p, cost, di, e, left - c, k - 1));
                }
            }
            best
        }
        go(docs, p, cost, 0, 0, cap, p.max_segments)
    }

    fn docs_strategy() -> impl Strategy<Value = Vec<DocValues>> {
        prop::collection::vec(prop::collection::vec((-1.0f32..1.5, 0u32..120), 0..7), 1..4)
            .prop_map(|ds| {
                ds.into_iter()
                    .enumerate()
                    .map(|(i, cs)| DocValues {
                        doc: i as u32,
                        values: cs.iter().map(|c| (c.0 * 8.0).round() / 8.0).collect(),
                        lengths: cs.iter().map(|c| c.1).collect(),
                    })
                    .collect()
            })
    }

    fn check_feasible(docs: &[DocValues], p: &SegmentParams, out: &[SelectedSegment]) -> f64 {
        let mut total = 0u64;
        let mut sum = 0.0f64;
        assert!(out.len() <= p.max_segments);
        for (i, s) in out.iter().enumerate() {
            let d = docs.iter().find(|d| d.doc == s.doc).unwrap();
            assert!(s.start < s.end && s.end - s.start <= p.max_len_chunks);
            let v: f64 = d.values[s.start..s.end].iter().map(|&x| f64::from(x)).sum();
            let t: u64 = d.lengths[s.start..s.end]
                .iter()
                .map(|&x| u64::from(x))
                .sum();
            assert_eq!(t, s.tokens);
            assert!(v >= f64::from(p.min_value));
            total += t;
            sum += v;
            for o in &out[..i] {
                assert!(
                    o.doc != s.doc || o.end <= s.start || s.end <= o.start,
                    "{out:?}"
                );
            }
        }
        assert!(
            total <= p.max_total_tokens,
            "{total} > {}",
            p.max_total_tokens
        );
        sum
    }

    #[test]
    fn two_small_segments_beat_one_large() {
        // A is worth 3.0 for the whole budget of 20; B and C together 4.0 for 10 + 10.
        let docs = vec![
            DocValues {
                doc: 0,
                values: vec![3.0],
                lengths: vec![20],
            },
            DocValues {
                doc: 1,
                values: vec![2.0, -5.0, 2.0],
                lengths: vec![10, 1, 10],
            },
        ];
        let p = SegmentParams {
            max_len_chunks: 3,
            max_total_tokens: 20,
            min_value: 0.5,
            max_segments: 10,
        };
        let out = select_segments_optimal(&docs, &p).unwrap();
        let got: Vec<(u32, usize, usize)> = out.iter().map(|s| (s.doc, s.start, s.end)).collect();
        assert_eq!(got, vec![(1, 0, 1), (1, 2, 3)]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// Exact for budgets up to 256 tokens: the brute-force optimum.
        #[test]
        fn equals_brute_force_optimum(
            docs in docs_strategy(),
            max_len in 1usize..5,
            budget in 0u64..256,
            min_value in prop::sample::select(vec![-1.0f32, 0.0, 0.25, 0.5, 1.0]),
            max_segments in 1usize..4,
        ) {
            let p = SegmentParams { max_len_chunks: max_len, max_total_tokens: budget, min_value, max_segments };
            let out = select_segments_optimal(&docs, &p).unwrap();
            let got = check_feasible(&docs, &p, &out);
            let want = brute(&docs, &p, &|t| t, budget);
            prop_assert!((got - want).abs() < 1e-9, "got {got}, brute force {want}: {out:?}");
        }

        /// Larger budgets: always feasible, never above the exact optimum, and at least
        /// the optimum under the rounded costs.
        #[test]
        fn large_budgets_feasible_and_near_optimal(
            docs in docs_strategy(),
            max_len in 1usize..5,
            budget in 256u64..1200,
            max_segments in 1usize..4,
        ) {
            let p = SegmentParams { max_len_chunks: max_len, max_total_tokens: budget, min_value: 0.25, max_segments };
            let out = select_segments_optimal(&docs, &p).unwrap();
            let got = check_feasible(&docs, &p, &out);
            let exact = brute(&docs, &p, &|t| t, budget);
            prop_assert!(got <= exact + 1e-9);
            let q = budget.div_ceil(MAX_UNITS);
            let rounded = brute(&docs, &p, &|t| t.div_ceil(q), budget / q);
            prop_assert!(got >= rounded - 1e-9, "got {got}, rounded optimum {rounded}");
        }
    }
}
