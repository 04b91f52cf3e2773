//! `rse`: Relevant Segment Extraction (seed 000, dsRAG) on top of the exact segment search
//! of [`crate::segments`].
//!
//! # Chunk values
//!
//! Candidate documents are the distinct documents of the hits, in hit order, at most
//! `max_docs`. Every chunk of a candidate document gets a value:
//!
//! ```text
//! retrieved at rank r (0-based):  v = relevance · exp(−r / rank_decay) − threshold
//! not retrieved:                  v = rel(cos(chunk, query)) · exp(−N / rank_decay) − threshold
//! not retrieved, no query vector
//! (or no chunk vector):           v = −threshold
//! ```
//!
//! This is dsRAG's value (absolute relevance damped by rank, minus a penalty) rather than
//! the seed's `(cos + (1 − r/n)) / 2 − threshold`: the seed's rank term gives the last hit
//! of a long list a value near zero no matter how relevant it is, and a cosine is not on
//! the calibrated relevance scale. An unretrieved chunk ranks after all `N` hits.
//!
//! `rel` maps a cosine onto the hits' relevance scale. It is fitted per query on the hits
//! themselves: least squares `relevance ≈ a + b·cos(hit chunk, query)` over the hits that
//! have vectors (used when there are ≥ 2 distinct cosines and `b > 0`, otherwise
//! `rel(c) = c`), then clamped to `[0, min hit relevance]` — a chunk retrieval did not
//! return cannot be more relevant than the least relevant chunk it did return.
//!
//! # Selection
//!
//! [`select_segments`](crate::select_segments) with `max_len_chunks`, `min_value`,
//! `max_segments` and the token budget in LLM tokens per chunk, through
//! [`select_segments_lazy`]: chunks start at a lower bound of their count (a word count
//! within `max_len_chunks` of a positive chunk, 0 where no qualifying segment can reach)
//! and only the chunks of picked segments are counted exactly, with the same result as
//! counting every chunk (a few dozen chunks counted instead of every chunk of every
//! candidate document). Segments are then added to the context in selection order (value
//! descending) with exact token accounting on the merged text; touching segments merge.
//! Pieces are emitted grouped by document like every strategy; a piece's score is its
//! segment's value (the best, when segments merged), its relevance the best chunk
//! relevance inside.
//!
//! # Fill
//!
//! With `fill` (default on), the budget the segments leave is spent on the remaining
//! hits in rank order, one chunk each (skipping any that does not fit), scored by their
//! chunk value `v`. Segments are few and long, so without it a large budget is often
//! left mostly unused while `topk` would have covered more of the hits.

use std::collections::BTreeMap;

use excerpt_core::ChunkKey;

use crate::assemble::{chunk_span, cosine, fill_with_hits, AssembleRequest, RHit, Selection};
use crate::error::ContextError;
use crate::segments::{select_segments_lazy, DocValues, SegmentParams};
use crate::strategy::RseParams;

/// `rel(c) = clamp(a + b·c, 0, cap)`.
#[derive(Debug, Clone, Copy)]
struct CosMap {
    a: f64,
    b: f64,
    cap: f64,
}

impl CosMap {
    fn apply(&self, c: f32) -> f32 {
        (self.a + self.b * f64::from(c)).clamp(0.0, self.cap) as f32
    }
}

fn fit_map(points: &[(f64, f64)], cap: f64) -> CosMap {
    let n = points.len() as f64;
    let identity = CosMap {
        a: 0.0,
        b: 1.0,
        cap,
    };
    if points.len() < 2 {
        return identity;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx <= 1e-12 {
        return identity;
    }
    let b = sxy / sxx;
    if !(b > 0.0 && b.is_finite()) {
        return identity;
    }
    CosMap {
        a: my - b * mx,
        b,
        cap,
    }
}

pub(crate) fn rse(
    p: &RseParams,
    hits: &[RHit],
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    notes: &mut Vec<String>,
) -> Result<(), ContextError> {
    let mut docs: Vec<u32> = Vec::new();
    for h in hits {
        if !docs.contains(&h.key.doc) {
            if docs.len() == p.max_docs {
                break;
            }
            docs.push(h.key.doc);
        }
    }
    docs.sort_unstable();
    let by_key: BTreeMap<ChunkKey, &RHit> = hits.iter().map(|h| (h.key, h)).collect();
    let n_hits = hits.len() as f64;
    let decay = f64::from(p.rank_decay);
    let unretrieved_factor = (-n_hits / decay).exp() as f32;

    let check_dim = |q: &[f32], v: &[f32]| {
        if v.len() != q.len() {
            Err(ContextError::DimensionMismatch {
                what: "chunk vector",
                expected: q.len(),
                got: v.len(),
            })
        } else {
            Ok(())
        }
    };
    let map = match req.query_vector {
        None => {
            notes.push(format!(
                "rse: no query vector, unretrieved chunks valued at -{}",
                p.threshold
            ));
            None
        }
        Some(q) => {
            let mut points = Vec::new();
            for h in hits {
                if let Some(v) = req.corpus.chunk_vector(h.key) {
                    check_dim(q, v)?;
                    points.push((f64::from(cosine(v, q)), f64::from(h.relevance)));
                }
            }
            let cap = hits
                .iter()
                .map(|h| f64::from(h.relevance))
                .fold(f64::INFINITY, f64::min);
            let m = fit_map(&points, if cap.is_finite() { cap } else { 0.0 });
            notes.push(format!(
                "rse: unretrieved chunks valued by similarity, rel(cos) = clamp({:.3} + {:.3}*cos, 0, {:.3})",
                m.a, m.b, m.cap
            ));
            Some((q, m))
        }
    };

    let mut doc_values = Vec::with_capacity(docs.len());
    let mut relevances: BTreeMap<u32, Vec<f32>> = BTreeMap::new();
    for &d in &docs {
        let Some(doc) = req.corpus.document(d) else {
            continue;
        };
        let n = doc.chunks.len();
        let mut values = Vec::with_capacity(n);
        let mut rels = Vec::with_capacity(n);
        for o in 0..n {
            let key = ChunkKey::new(d, o as u32);
            let (v, r) = match by_key.get(&key) {
                Some(h) => {
                    let f = (-(h.rank as f64) / decay).exp() as f32;
                    (h.relevance * f - p.threshold, h.relevance)
                }
                None => match (map, req.corpus.chunk_vector(key)) {
                    (Some((q, m)), Some(v)) => {
                        check_dim(q, v)?;
                        let r = m.apply(cosine(v, q));
                        (r * unretrieved_factor - p.threshold, r)
                    }
                    _ => (-p.threshold, 0.0),
                },
            };
            values.push(v);
            rels.push(r);
        }
        // Token lengths start as lower bounds (a word count where a qualifying segment can
        // reach, 0 elsewhere); `select_segments_lazy` asks for exact counts only for the
        // chunks of segments it picks.
        let mut reach = vec![false; n];
        let span = p.max_len_chunks.saturating_sub(1);
        for (i, &v) in values.iter().enumerate() {
            if v > 0.0 || p.min_value <= 0.0 {
                for r in &mut reach[i.saturating_sub(span)..(i + span + 1).min(n)] {
                    *r = true;
                }
            }
        }
        let lengths = (0..n)
            .map(|o| {
                let t = if reach[o] {
                    req.tokens.lower_bound(doc.chunk_text(o))
                } else {
                    0
                };
                u32::try_from(t).unwrap_or(u32::MAX)
            })
            .collect();
        doc_values.push(DocValues {
            doc: d,
            values,
            lengths,
        });
        relevances.insert(d, rels);
    }

    let docs_in_values: Vec<u32> = doc_values.iter().map(|d| d.doc).collect();
    let params = SegmentParams {
        max_len_chunks: p.max_len_chunks,
        max_total_tokens: sel.remaining() as u64,
        min_value: p.min_value,
        max_segments: p.max_segments,
    };
    let segments = select_segments_lazy(&mut doc_values, &params, |i, o| {
        let count = req
            .corpus
            .document(docs_in_values[i])
            .map_or(0, |doc| req.tokens.count(doc.chunk_text(o)));
        u32::try_from(count).unwrap_or(u32::MAX)
    })?;
    let mut added = 0usize;
    for s in &segments {
        let Some(doc) = req.corpus.document(s.doc) else {
            continue;
        };
        let relevance = relevances
            .get(&s.doc)
            .and_then(|r| r.get(s.start..s.end))
            .and_then(|r| r.iter().copied().reduce(f32::max))
            .unwrap_or(0.0);
        let hit_ordinals: Vec<u32> = (s.start..s.end)
            .map(|o| o as u32)
            .filter(|&o| by_key.contains_key(&ChunkKey::new(s.doc, o)))
            .collect();
        let range = chunk_span(doc, s.start, s.end - 1);
        if sel.try_add(s.doc, doc, range, s.value, relevance, &hit_ordinals) {
            added += 1;
        }
    }
    notes.push(format!(
        "rse: threshold {}, {} candidate document(s), {} segment(s) selected, {added} fit",
        p.threshold,
        doc_values.len(),
        segments.len()
    ));
    if p.fill {
        // Remaining hits in rank order, each scored by its chunk value so documents
        // reached only this way sort after the segments' documents.
        let filled = fill_with_hits(hits, req, sel, |h| {
            h.relevance * (-(h.rank as f64) / decay).exp() as f32 - p.threshold
        });
        if filled > 0 {
            notes.push(format!(
                "rse: filled the budget left with {filled} more hit chunk(s) in rank order"
            ));
        }
    }
    Ok(())
}
