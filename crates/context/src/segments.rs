//! Relevant Segment Extraction (RSE): exact search for the best contiguous runs of chunks.
//!
//! Each document contributes a value per chunk, `v[j] = relevance(j) − threshold`, so weak
//! chunks are negative and a segment's value is the sum of its chunks' values:
//!
//! ```text
//! value(s, e) = Σ_{j=s}^{e-1} v[j] = P[e] − P[s],   P[0] = 0, P[j+1] = P[j] + v[j]
//! tokens(s, e) = Σ_{j=s}^{e-1} len[j] = T[e] − T[s]
//! ```
//!
//! Segments are half-open chunk ranges `[start, end)`, non-empty. Sums are computed in `f64`
//! from the `f32` inputs (and reported rounded to `f32`); comparisons and ties are decided on
//! the `f64` sums.
//!
//! For a fixed end `e`, the feasible starts form one contiguous range
//! `max(lo, e − max_len, t(e)) ≤ s ≤ e − 1`, where `lo` is the left edge of the free gap and
//! `t(e)` the first start whose token sum fits the budget: token counts are non-negative, so
//! `T[e] − T[s]` does not increase with `s`, and both lower bounds are non-decreasing in `e`.
//! The best segment ending at `e` is the start minimising `P[s]` over that range, so one pass
//! with a monotonic deque (sliding-window minimum of prefix sums) finds the exact optimum in
//! `O(n)`.

use std::collections::{BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

/// A contiguous run of chunks `[start, end)` of one document and its summed value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// First chunk (index into the value array).
    pub start: usize,
    /// One past the last chunk.
    pub end: usize,
    /// `Σ values[start..end]`.
    pub value: f32,
}

/// Finds the exact maximum-sum segment of length `1..=max_len`.
///
/// `value = max_{0 ≤ s < e ≤ n, e − s ≤ max_len} P[e] − P[s]`. Ties: earliest start, then
/// shortest. Runs in `O(n)` time (prefix sums and a monotonic deque). Returns `None` when
/// `values` is empty or `max_len == 0`; a segment of negative value is still returned (the
/// caller decides on a minimum). Values should be finite: with a NaN the result is
/// unspecified (but it does not panic).
pub fn best_segment(values: &[f32], max_len: usize) -> Option<Segment> {
    let pv = prefix_values(values);
    let mut deque = VecDeque::new();
    best_in_range(&pv, None, 0, values.len(), max_len, u64::MAX, &mut deque).map(|c| Segment {
        start: c.start,
        end: c.end,
        value: c.value as f32,
    })
}

/// One document's input to [`select_segments`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocValues {
    /// Document index, assigned by the caller in document-id order (ties go to the lower).
    pub doc: u32,
    /// Per-chunk value (relevance minus threshold), in chunk order. Must be finite.
    pub values: Vec<f32>,
    /// Per-chunk token count, same length as `values`.
    pub lengths: Vec<u32>,
}

/// Limits of [`select_segments`].
///
/// Segments never overlap (adjacent segments of the same document may both be selected;
/// merging them is left to the caller).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SegmentParams {
    /// Maximum segment length in chunks, `≥ 1`.
    pub max_len_chunks: usize,
    /// Token budget for all selected segments together.
    pub max_total_tokens: u64,
    /// A segment is selected only if its value is `≥ min_value` (not NaN; may be `-∞`).
    pub min_value: f32,
    /// Maximum number of segments selected.
    pub max_segments: usize,
}

impl SegmentParams {
    /// Checks `max_len_chunks ≥ 1` and `min_value` is not NaN.
    pub fn validate(&self) -> Result<(), SegmentError> {
        if self.max_len_chunks == 0 {
            return Err(SegmentError::ZeroMaxLen);
        }
        if self.min_value.is_nan() {
            return Err(SegmentError::NanMinValue);
        }
        Ok(())
    }
}

/// A segment chosen by [`select_segments`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SelectedSegment {
    /// Document index ([`DocValues::doc`]).
    pub doc: u32,
    /// First chunk.
    pub start: usize,
    /// One past the last chunk.
    pub end: usize,
    /// `Σ values[start..end]`.
    pub value: f32,
    /// `Σ lengths[start..end]`.
    pub tokens: u64,
}

/// Invalid segment parameters or input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SegmentError {
    /// `max_len_chunks` must be at least 1.
    #[error("max_len_chunks must be >= 1")]
    ZeroMaxLen,
    /// `min_value` must not be NaN.
    #[error("min_value must not be NaN")]
    NanMinValue,
    /// `values` and `lengths` differ in length.
    #[error("doc {doc}: {values} values but {lengths} lengths")]
    LengthMismatch {
        /// Document index.
        doc: u32,
        /// Number of values.
        values: usize,
        /// Number of lengths.
        lengths: usize,
    },
    /// A value is NaN or infinite.
    #[error("doc {doc}: value of chunk {chunk} is not finite: {value}")]
    NonFiniteValue {
        /// Document index.
        doc: u32,
        /// Chunk index.
        chunk: usize,
        /// The value given.
        value: f32,
    },
    /// The same document index is given twice.
    #[error("doc {0} given more than once")]
    DuplicateDoc(u32),
}

/// Greedy selection of non-overlapping segments across documents, each step exact.
///
/// At each step, among all segments `(doc, s, e)` that
/// - lie in a free gap of `doc` (overlap no segment already selected in `doc`),
/// - have `1 ≤ e − s ≤ max_len_chunks`,
/// - have `tokens(s, e) ≤ max_total_tokens − tokens already selected`,
/// - have `value(s, e) ≥ min_value`,
///
/// take the best by (value desc, doc asc, start asc, end asc). So when the overall best
/// segment does not fit the remaining budget, the best one that does fit is taken. Stop when
/// no segment qualifies or `max_segments` are selected. Output is in selection order (value
/// non-increasing).
///
/// Cost: one `O(n)` deque pass per free gap initially; after a selection only the two gaps it
/// leaves and the gaps whose cached best no longer fits the budget are searched again (a
/// cached best that still fits stays exact, since the feasible sets only shrink).
pub fn select_segments(
    docs: &[DocValues],
    params: &SegmentParams,
) -> Result<Vec<SelectedSegment>, SegmentError> {
    validate_input(docs, params)?;
    let max_len = params.max_len_chunks;
    let min_value = f64::from(params.min_value);
    let mut deque = VecDeque::new();
    let prefixes: Vec<(Vec<f64>, Vec<u64>)> = docs
        .iter()
        .map(|d| (prefix_values(&d.values), prefix_tokens(&d.lengths)))
        .collect();
    let search = |di: usize, a: usize, b: usize, budget: u64, dq: &mut VecDeque<usize>| {
        let (pv, pt) = &prefixes[di];
        best_in_range(pv, Some(pt), a, b, max_len, budget, dq).filter(|c| c.value >= min_value)
    };

    let mut used = 0u64;
    let mut gaps: Vec<Gap> = Vec::new();
    for (di, d) in docs.iter().enumerate() {
        if !d.values.is_empty() {
            let best = search(di, 0, d.values.len(), params.max_total_tokens, &mut deque);
            gaps.push(Gap {
                doc_index: di,
                start: 0,
                end: d.values.len(),
                best,
            });
        }
    }

    let mut out = Vec::new();
    while out.len() < params.max_segments {
        let remaining = params.max_total_tokens - used;
        let mut pick: Option<usize> = None;
        for gi in 0..gaps.len() {
            let g = &gaps[gi];
            if g.best.is_some_and(|c| c.tokens > remaining) {
                let best = search(g.doc_index, g.start, g.end, remaining, &mut deque);
                gaps[gi].best = best;
            }
            let Some(c) = gaps[gi].best else { continue };
            let better = match pick {
                None => true,
                Some(pi) => {
                    let p = gaps[pi].best.expect("picked gap has a candidate");
                    let (dc, dp) = (docs[gaps[gi].doc_index].doc, docs[gaps[pi].doc_index].doc);
                    c.value > p.value
                        || (c.value == p.value && (dc, c.start, c.end) < (dp, p.start, p.end))
                }
            };
            if better {
                pick = Some(gi);
            }
        }
        let Some(pi) = pick else { break };
        let g = gaps.swap_remove(pi);
        let c = g.best.expect("picked gap has a candidate");
        used += c.tokens;
        out.push(SelectedSegment {
            doc: docs[g.doc_index].doc,
            start: c.start,
            end: c.end,
            value: c.value as f32,
            tokens: c.tokens,
        });
        let remaining = params.max_total_tokens - used;
        for (a, b) in [(g.start, c.start), (c.end, g.end)] {
            if a < b {
                let best = search(g.doc_index, a, b, remaining, &mut deque);
                gaps.push(Gap {
                    doc_index: g.doc_index,
                    start: a,
                    end: b,
                    best,
                });
            }
        }
    }
    Ok(out)
}

/// [`select_segments`] for when exact token counts are costly to get.
///
/// `docs[i].lengths` hold **lower bounds** of the chunks' token counts on entry (0 is
/// always one); `exact(i, j)` gives the exact count of chunk `j` of `docs[i]`. Selection
/// runs on the bounds; the chunks of the segments it picks are replaced by their exact
/// counts, and selection runs again until it picks only chunks already exact. The result
/// is the same as [`select_segments`] on exact counts: with bounds, every segment that
/// fits exactly also fits, so when the greedy's pick at each step is made of exact
/// chunks it is the pick the exact greedy makes (same values, same tie order), and it
/// uses the same budget. Exact counts are asked only for chunks some round picked, each
/// at most once. On return, `docs[i].lengths` hold the bounds as refined.
///
/// A "bound" above the exact count is corrected when its chunk is picked, but may have
/// excluded a segment the exact greedy would take; callers must pass true lower bounds.
pub fn select_segments_lazy(
    docs: &mut [DocValues],
    params: &SegmentParams,
    exact: impl FnMut(usize, usize) -> u32,
) -> Result<Vec<SelectedSegment>, SegmentError> {
    refine_lazily(docs, params, exact, select_segments)
}

/// Runs `select` on the lengths in `docs` (lower bounds on entry), replaces the lengths of
/// the chunks it picked by `exact(doc index, chunk)` (each chunk asked once), and repeats
/// until a selection picks only chunks already exact; returns that selection.
pub(crate) fn refine_lazily(
    docs: &mut [DocValues],
    params: &SegmentParams,
    mut exact: impl FnMut(usize, usize) -> u32,
    select: impl Fn(&[DocValues], &SegmentParams) -> Result<Vec<SelectedSegment>, SegmentError>,
) -> Result<Vec<SelectedSegment>, SegmentError> {
    let index_of: std::collections::BTreeMap<u32, usize> =
        docs.iter().enumerate().map(|(i, d)| (d.doc, i)).collect();
    let mut known: Vec<Vec<bool>> = docs.iter().map(|d| vec![false; d.lengths.len()]).collect();
    loop {
        let picked = select(docs, params)?;
        let mut changed = false;
        for seg in &picked {
            let di = index_of[&seg.doc];
            let lengths = &mut docs[di].lengths[seg.start..seg.end];
            let known = &mut known[di][seg.start..seg.end];
            for (k, (len, seen)) in lengths.iter_mut().zip(known).enumerate() {
                if !*seen {
                    *seen = true;
                    let l = exact(di, seg.start + k);
                    if l != *len {
                        *len = l;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            return Ok(picked);
        }
    }
}

/// Checks `params` and the documents: lengths match values, values finite, each document
/// index given once.
pub(crate) fn validate_input(
    docs: &[DocValues],
    params: &SegmentParams,
) -> Result<(), SegmentError> {
    params.validate()?;
    let mut seen = BTreeSet::new();
    for d in docs {
        if d.values.len() != d.lengths.len() {
            return Err(SegmentError::LengthMismatch {
                doc: d.doc,
                values: d.values.len(),
                lengths: d.lengths.len(),
            });
        }
        if let Some((chunk, &value)) = d.values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(SegmentError::NonFiniteValue {
                doc: d.doc,
                chunk,
                value,
            });
        }
        if !seen.insert(d.doc) {
            return Err(SegmentError::DuplicateDoc(d.doc));
        }
    }

    Ok(())
}

/// A free range `[start, end)` of a document and its best qualifying segment under the
/// budget it was last searched with.
struct Gap {
    doc_index: usize,
    start: usize,
    end: usize,
    best: Option<Candidate>,
}

#[derive(Debug, Clone, Copy)]
struct Candidate {
    start: usize,
    end: usize,
    value: f64,
    tokens: u64,
}

fn prefix_values(values: &[f32]) -> Vec<f64> {
    let mut p = Vec::with_capacity(values.len() + 1);
    let mut acc = 0.0f64;
    p.push(acc);
    for &v in values {
        acc += f64::from(v);
        p.push(acc);
    }
    p
}

fn prefix_tokens(lengths: &[u32]) -> Vec<u64> {
    let mut p = Vec::with_capacity(lengths.len() + 1);
    let mut acc = 0u64;
    p.push(acc);
    for &l in lengths {
        acc += u64::from(l);
        p.push(acc);
    }
    p
}

/// Best segment `[s, e)` with `a ≤ s < e ≤ b`, `e − s ≤ max_len` and (when `pt` is given)
/// `pt[e] − pt[s] ≤ budget`; ties: earliest start, then shortest.
///
/// For each `e` ascending, the deque holds candidate starts in increasing index order with
/// strictly increasing `pv` (an earlier start with an equal prefix sum is kept, so the front
/// is the earliest minimiser); starts below the feasible lower bound are dropped from the
/// front.
fn best_in_range(
    pv: &[f64],
    pt: Option<&[u64]>,
    a: usize,
    b: usize,
    max_len: usize,
    budget: u64,
    deque: &mut VecDeque<usize>,
) -> Option<Candidate> {
    if max_len == 0 || a >= b {
        return None;
    }
    deque.clear();
    let mut best: Option<Candidate> = None;
    let mut tok_lo = a; // first start whose token sum to `e` fits the budget
    for e in a + 1..=b {
        let s_new = e - 1;
        while deque.back().is_some_and(|&s| pv[s] > pv[s_new]) {
            deque.pop_back();
        }
        deque.push_back(s_new);

        let mut lo = a.max(e.saturating_sub(max_len));
        if let Some(pt) = pt {
            // tok_lo ≤ e always holds: the empty range fits any budget.
            while pt[e] - pt[tok_lo] > budget {
                tok_lo += 1;
            }
            lo = lo.max(tok_lo);
        }
        while deque.front().is_some_and(|&s| s < lo) {
            deque.pop_front();
        }
        let Some(&s) = deque.front() else { continue };
        let value = pv[e] - pv[s];
        // Ends are visited in increasing order, so on equal value and start the earlier
        // (shorter) one is already kept.
        let better = match best {
            None => true,
            Some(c) => value > c.value || (value == c.value && s < c.start),
        };
        if better {
            best = Some(Candidate {
                start: s,
                end: e,
                value,
                tokens: pt.map_or(0, |pt| pt[e] - pt[s]),
            });
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Brute force over all subarrays: (start, end, value) with the tie rule.
    fn oracle_best(values: &[f32], max_len: usize) -> Option<(usize, usize, f64)> {
        let mut best: Option<(usize, usize, f64)> = None;
        for s in 0..values.len() {
            for e in s + 1..=values.len().min(s.saturating_add(max_len)) {
                let v: f64 = values[s..e].iter().map(|&x| f64::from(x)).sum();
                let better = match best {
                    None => true,
                    Some((bs, be, bv)) => v > bv || (v == bv && (s, e) < (bs, be)),
                };
                if better {
                    best = Some((s, e, v));
                }
            }
        }
        best
    }

    /// Brute-force greedy: at each step enumerate every feasible subarray of every doc.
    fn oracle_select(docs: &[DocValues], p: &SegmentParams) -> Vec<SelectedSegment> {
        let mut chosen: Vec<SelectedSegment> = Vec::new();
        let mut used = 0u64;
        while chosen.len() < p.max_segments {
            let mut best: Option<SelectedSegment> = None;
            for d in docs {
                let n = d.values.len();
                for s in 0..n {
                    for e in s + 1..=n.min(s.saturating_add(p.max_len_chunks)) {
                        if chosen
                            .iter()
                            .any(|c| c.doc == d.doc && c.start < e && s < c.end)
                        {
                            continue;
                        }
                        let tokens: u64 = d.lengths[s..e].iter().map(|&l| u64::from(l)).sum();
                        if used + tokens > p.max_total_tokens {
                            continue;
                        }
                        let v: f64 = d.values[s..e].iter().map(|&x| f64::from(x)).sum();
                        if v < f64::from(p.min_value) {
                            continue;
                        }
                        let cand = SelectedSegment {
                            doc: d.doc,
                            start: s,
                            end: e,
                            value: v as f32,
                            tokens,
                        };
                        let better = match best {
                            None => true,
                            Some(b) => {
                                v > f64::from(b.value)
                                    || (v == f64::from(b.value)
                                        && (d.doc, s, e) < (b.doc, b.start, b.end))
                            }
                        };
                        if better {
                            best = Some(cand);
                        }
                    }
                }
            }
            let Some(b) = best else { break };
            used += b.tokens;
            chosen.push(b);
        }
        chosen
    }

    #[test]
    fn best_segment_examples() {
        assert_eq!(best_segment(&[], 3), None);
        assert_eq!(best_segment(&[1.0], 0), None);
        let s = best_segment(&[-1.0, 2.0, -0.5, 2.0, -3.0], 10).unwrap();
        assert_eq!((s.start, s.end, s.value), (1, 4, 3.5));
        let s = best_segment(&[-1.0, 2.0, -0.5, 2.0, -3.0], 2).unwrap();
        assert_eq!((s.start, s.end, s.value), (1, 2, 2.0));
        // All negative: the least negative single chunk.
        let s = best_segment(&[-2.0, -1.0, -1.0], 3).unwrap();
        assert_eq!((s.start, s.end, s.value), (1, 2, -1.0));
        // Ties: earliest start ([0,4) and [2,4) both sum to 2), then shortest.
        let s = best_segment(&[1.0, -1.0, 1.0, 1.0, -1.0], 5).unwrap();
        assert_eq!((s.start, s.end, s.value), (0, 4, 2.0));
        let s = best_segment(&[1.0, -1.0, 1.0, 1.0, -1.0], 3).unwrap();
        assert_eq!((s.start, s.end, s.value), (2, 4, 2.0));
        let s = best_segment(&[1.0, 0.0, 0.0], 3).unwrap();
        assert_eq!((s.start, s.end), (0, 1));
    }

    #[test]
    fn select_falls_back_to_what_fits() {
        let docs = vec![DocValues {
            doc: 7,
            values: vec![1.0, 1.0, 1.0, -5.0, 0.5],
            lengths: vec![10, 10, 10, 1, 5],
        }];
        let p = SegmentParams {
            max_len_chunks: 8,
            max_total_tokens: 25,
            min_value: 0.0,
            max_segments: 10,
        };
        let out = select_segments(&docs, &p).unwrap();
        let got: Vec<_> = out
            .iter()
            .map(|s| (s.start, s.end, s.value, s.tokens))
            .collect();
        // [0,3) needs 30 tokens: best fitting is [0,2) (20), then only [4,5) (5) fits.
        assert_eq!(got, vec![(0, 2, 2.0, 20), (4, 5, 0.5, 5)]);
        assert!(out.iter().all(|s| s.doc == 7));
    }

    #[test]
    fn select_validation() {
        let p = SegmentParams {
            max_len_chunks: 0,
            max_total_tokens: 10,
            min_value: 0.0,
            max_segments: 1,
        };
        assert_eq!(select_segments(&[], &p), Err(SegmentError::ZeroMaxLen));
        let p = SegmentParams {
            max_len_chunks: 1,
            min_value: f32::NAN,
            ..p
        };
        assert_eq!(select_segments(&[], &p), Err(SegmentError::NanMinValue));
        let p = SegmentParams {
            min_value: 0.0,
            ..p
        };
        let d = |doc, values: Vec<f32>, lengths: Vec<u32>| DocValues {
            doc,
            values,
            lengths,
        };
        assert!(matches!(
            select_segments(&[d(1, vec![1.0], vec![])], &p),
            Err(SegmentError::LengthMismatch { doc: 1, .. })
        ));
        assert!(matches!(
            select_segments(&[d(1, vec![f32::INFINITY], vec![1])], &p),
            Err(SegmentError::NonFiniteValue {
                doc: 1,
                chunk: 0,
                ..
            })
        ));
        assert_eq!(
            select_segments(&[d(2, vec![], vec![]), d(2, vec![], vec![])], &p),
            Err(SegmentError::DuplicateDoc(2))
        );
    }

    #[test]
    fn large_docs_match_windowed_oracle() {
        // Pseudo-random discrete values (sums are exact): compare with the brute-force
        // greedy, which only enumerates windows up to max_len, so it stays tractable.
        let mut seed = 0x1234_5678_u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as u32
        };
        let docs: Vec<DocValues> = (0..2)
            .map(|doc| {
                let n = 1500;
                DocValues {
                    doc,
                    values: (0..n).map(|_| (next() % 9) as f32 * 0.25 - 1.25).collect(),
                    lengths: (0..n).map(|_| 20 + next() % 200).collect(),
                }
            })
            .collect();
        let p = SegmentParams {
            max_len_chunks: 32,
            max_total_tokens: 30_000,
            min_value: 0.5,
            max_segments: 15,
        };
        let fast = select_segments(&docs, &p).unwrap();
        assert_eq!(fast, oracle_select(&docs, &p));
        assert_eq!(fast.len(), 15);
    }

    #[test]
    fn scale_smoke() {
        // 20 docs × 5000 chunks, up to 40 selections under a budget: must stay fast.
        let mut seed = 99u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as u32
        };
        let docs: Vec<DocValues> = (0..20)
            .map(|doc| DocValues {
                doc,
                values: (0..5000)
                    .map(|_| (next() % 1000) as f32 / 1000.0 - 0.6)
                    .collect(),
                lengths: (0..5000).map(|_| 50 + next() % 300).collect(),
            })
            .collect();
        let p = SegmentParams {
            max_len_chunks: 64,
            max_total_tokens: 60_000,
            min_value: 0.0,
            max_segments: 40,
        };
        let t = std::time::Instant::now();
        let out = select_segments(&docs, &p).unwrap();
        assert!(!out.is_empty() && out.len() <= 40);
        assert!(out.iter().map(|s| s.tokens).sum::<u64>() <= 60_000);
        assert!(t.elapsed().as_secs() < 20, "{:?}", t.elapsed());
    }

    fn discrete() -> impl Strategy<Value = f32> {
        prop::sample::select(vec![-1.0f32, -0.5, 0.0, 0.5, 1.0])
    }

    fn docs_strategy() -> impl Strategy<Value = Vec<DocValues>> {
        prop::collection::vec(prop::collection::vec((discrete(), 0u32..6), 0..9), 0..4).prop_map(
            |docs| {
                docs.into_iter()
                    .enumerate()
                    // Doc indices not in input order, to exercise the doc tie-break.
                    .map(|(i, chunks)| DocValues {
                        doc: (7 - 2 * i) as u32,
                        values: chunks.iter().map(|c| c.0).collect(),
                        lengths: chunks.iter().map(|c| c.1).collect(),
                    })
                    .collect()
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn best_segment_matches_oracle_discrete(
            values in prop::collection::vec(discrete(), 0..14),
            max_len in 0usize..16,
        ) {
            let got = best_segment(&values, max_len).map(|s| (s.start, s.end, f64::from(s.value)));
            prop_assert_eq!(got, oracle_best(&values, max_len));
        }

        #[test]
        fn best_segment_matches_oracle_continuous(
            values in prop::collection::vec(-10.0f32..10.0, 1..40),
            max_len in 1usize..45,
        ) {
            let got = best_segment(&values, max_len).unwrap();
            let (_, _, v) = oracle_best(&values, max_len).unwrap();
            prop_assert!((f64::from(got.value) - v).abs() < 1e-4, "{:?} vs {}", got, v);
            prop_assert!(got.end > got.start && got.end - got.start <= max_len);
            let direct: f64 = values[got.start..got.end].iter().map(|&x| f64::from(x)).sum();
            prop_assert!((direct - v).abs() < 1e-4);
        }

        #[test]
        fn select_matches_oracle(
            docs in docs_strategy(),
            max_len in 1usize..6,
            max_total_tokens in 0u64..25,
            min_value in prop::sample::select(vec![f32::NEG_INFINITY, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5]),
            max_segments in 0usize..7,
        ) {
            let p = SegmentParams { max_len_chunks: max_len, max_total_tokens, min_value, max_segments };
            let got = select_segments(&docs, &p).unwrap();
            prop_assert_eq!(&got, &oracle_select(&docs, &p));
            // Invariants, independently of the oracle.
            prop_assert!(got.len() <= max_segments);
            prop_assert!(got.iter().map(|s| s.tokens).sum::<u64>() <= max_total_tokens);
            for (i, a) in got.iter().enumerate() {
                prop_assert!(a.end > a.start && a.end - a.start <= max_len);
                prop_assert!(a.value >= min_value);
                if i > 0 {
                    prop_assert!(got[i - 1].value >= a.value);
                }
                for b in &got[..i] {
                    prop_assert!(!(a.doc == b.doc && a.start < b.end && b.start < a.end));
                }
            }
        }

        #[test]
        fn lazy_select_matches_exact_select(
            docs in docs_strategy(),
            slack in prop::collection::vec(0u32..6, 32),
            max_len in 1usize..6,
            max_total_tokens in 0u64..25,
            min_value in prop::sample::select(vec![f32::NEG_INFINITY, -1.0, 0.0, 0.5, 1.0]),
            max_segments in 0usize..7,
        ) {
            let p = SegmentParams { max_len_chunks: max_len, max_total_tokens, min_value, max_segments };
            let want = select_segments(&docs, &p).unwrap();
            // Lower bounds: the exact length minus some slack (saturating at 0).
            let mut bounded = docs.clone();
            let mut k = 0;
            for d in &mut bounded {
                for l in &mut d.lengths {
                    *l = l.saturating_sub(slack[k % slack.len()]);
                    k += 1;
                }
            }
            let mut asked = std::collections::BTreeSet::new();
            let mut repeats = 0;
            let got = select_segments_lazy(&mut bounded, &p, |i, j| {
                if !asked.insert((i, j)) {
                    repeats += 1;
                }
                docs[i].lengths[j]
            }).unwrap();
            prop_assert_eq!(got, want);
            prop_assert_eq!(repeats, 0, "a chunk was counted twice");
        }
    }
}
