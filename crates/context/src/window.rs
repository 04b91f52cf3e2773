//! `window`: the dynamic semantic window of seed 003, at sentence granularity.
//!
//! For each of the top `max_hits` hits (rank order):
//!
//! 1. The **seed** is the sentence overlapping the hit chunk that is most similar to the
//!    query (`argmax cos(sentence, query)`, ties: the earlier sentence).
//! 2. The window grows **left** one sentence at a time while
//!    `cos(neighbour, current left edge) ≥ threshold` (and, with `query_threshold`,
//!    `cos(neighbour, query) ≥ query_threshold`), at most `max_expand` sentences; then
//!    **right** the same way.
//! 3. The window (from the start of its first sentence to the end of its last) is offered
//!    to the budget; windows that overlap or touch merge into one piece (never dropped as
//!    duplicates); one that does not fit is skipped.
//!
//! Every sentence that can be needed (those overlapping hit chunks, plus `max_expand` on
//! each side) is embedded in **one** `embed` call, identical texts once. The query vector
//! is the request's, or `embed_query` of the query when there is none.
//!
//! Without an embedder the strategy falls back to `adjacent` with `±fallback_window`
//! chunks (decay 0.8, hits first) and says so in a note.

use std::collections::BTreeMap;

use crate::assemble::{adjacent, chunk_span, cosine, AssembleRequest, RHit, Selection};
use crate::error::ContextError;
use crate::strategy::{AdjacentParams, WindowParams};

pub(crate) fn window(
    p: &WindowParams,
    hits: &[RHit],
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    notes: &mut Vec<String>,
) -> Result<(), ContextError> {
    let Some(embedder) = req.embedder else {
        notes.push(format!(
            "window: no embedder, fell back to adjacent chunks (±{})",
            p.fallback_window
        ));
        let ap = AdjacentParams {
            window: p.fallback_window,
            decay: 0.8,
            max_hits: p.max_hits,
            hits_first: true,
        };
        adjacent(&ap, hits, req, sel, notes);
        return Ok(());
    };
    let query: Vec<f32> = match req.query_vector {
        Some(q) => q.to_vec(),
        None => embedder.embed_query(req.query)?,
    };
    let top = &hits[..hits.len().min(p.max_hits)];

    // Sentence ranges [s0, s1) overlapping each hit chunk, and everything reachable.
    struct Seedable {
        hit: RHit,
        s0: usize,
        s1: usize,
    }
    let mut plan = Vec::with_capacity(top.len());
    let mut needed: BTreeMap<(u32, usize), usize> = BTreeMap::new();
    for h in top {
        let Some(doc) = req.corpus.document(h.key.doc) else {
            continue;
        };
        let c = doc.chunks[h.key.ordinal as usize].range;
        let s0 = doc
            .sentences
            .partition_point(|s| s.byte_end <= c.byte_start);
        let s1 = doc.sentences.partition_point(|s| s.byte_start < c.byte_end);
        if s0 < s1 {
            let lo = s0.saturating_sub(p.max_expand);
            let hi = (s1 + p.max_expand).min(doc.sentences.len());
            for i in lo..hi {
                needed.insert((h.key.doc, i), 0);
            }
        }
        plan.push(Seedable { hit: *h, s0, s1 });
    }

    // One batched embed call; identical texts embedded once.
    let mut texts: Vec<&str> = Vec::new();
    let mut text_index: BTreeMap<&str, usize> = BTreeMap::new();
    for (&(d, i), slot) in needed.iter_mut() {
        let Some(doc) = req.corpus.document(d) else {
            continue;
        };
        let t = doc.sentences[i].slice(&doc.text);
        *slot = *text_index.entry(t).or_insert_with(|| {
            texts.push(t);
            texts.len() - 1
        });
    }
    let vectors = if texts.is_empty() {
        Vec::new()
    } else {
        embedder.embed(&texts)?
    };
    if vectors.len() != texts.len() {
        return Err(ContextError::EmbedCount {
            expected: texts.len(),
            got: vectors.len(),
        });
    }
    if let Some(v) = vectors.iter().find(|v| v.len() != query.len()) {
        return Err(ContextError::DimensionMismatch {
            what: "sentence vector",
            expected: query.len(),
            got: v.len(),
        });
    }
    let vec_of = |d: u32, i: usize| needed.get(&(d, i)).and_then(|&k| vectors.get(k));

    let mut grown = 0usize;
    for s in &plan {
        let h = s.hit;
        let d = h.key.doc;
        let Some(doc) = req.corpus.document(d) else {
            continue;
        };
        let o = h.key.ordinal as usize;
        if s.s0 >= s.s1 {
            // No sentence information: the chunk itself.
            sel.try_add(
                d,
                doc,
                chunk_span(doc, o, o),
                h.score,
                h.relevance,
                &[h.key.ordinal],
            );
            continue;
        }
        let mut seed = s.s0;
        let mut best = f32::NEG_INFINITY;
        for i in s.s0..s.s1 {
            let c = vec_of(d, i).map_or(f32::NEG_INFINITY, |v| cosine(v, &query));
            if c > best {
                best = c;
                seed = i;
            }
        }
        let accept = |edge: usize, nb: usize| -> bool {
            let (Some(ve), Some(vn)) = (vec_of(d, edge), vec_of(d, nb)) else {
                return false;
            };
            cosine(vn, ve) >= p.threshold
                && p.query_threshold.is_none_or(|qt| cosine(vn, &query) >= qt)
        };
        let mut left = seed;
        for _ in 0..p.max_expand {
            if left == 0 || !accept(left, left - 1) {
                break;
            }
            left -= 1;
        }
        let mut right = seed;
        for _ in 0..p.max_expand {
            if right + 1 >= doc.sentences.len() || !accept(right, right + 1) {
                break;
            }
            right += 1;
        }
        grown += (seed - left) + (right - seed);
        let range = doc.sentences[left].cover(&doc.sentences[right]);
        sel.try_add(d, doc, range, h.score, h.relevance, &[h.key.ordinal]);
    }
    notes.push(format!(
        "window: {} hit(s), threshold {}, max_expand {}: {} sentence(s) embedded, windows grew by {grown} sentence(s)",
        plan.len(),
        p.threshold,
        p.max_expand,
        texts.len()
    ));
    Ok(())
}
