//! Sentence units for `rse`: segments that start and end on sentences, so a small budget
//! can hold several short passages from several places instead of one whole chunk.
//!
//! # Unit values
//!
//! Retrieval ranks chunks; a chunk's relevance is shared by its sentences in proportion to
//! how much of the query each sentence carries lexically:
//!
//! ```text
//! r(sentence) = r(chunk) · (floor + (1 − floor) · lex(sentence))
//! v(sentence) = (r(sentence) − threshold) · chars(sentence) / mean chars(chunk)
//! ```
//!
//! `r(chunk)` is the chunk's rank-damped relevance, exactly as chunk-level `rse` values it
//! (retrieved: `relevance · exp(−rank / rank_decay)`; otherwise the similarity mapped onto
//! the hits' scale). `lex` is a BM25 score of the sentence against the query, computed over
//! the sentences of the retrieved chunks of the candidate documents and divided by the
//! best such score, so it is in `[0, 1]` whatever the corpus. The length weight keeps a
//! segment's value on the chunk scale: a run of sentences covering a whole chunk is worth
//! what the chunk is worth when the sentences are lexically alike. So `threshold`,
//! `min_value` and `max_len_chunks` keep their meaning (in chunk equivalents).
//!
//! Segments are then chosen by [`crate::select_segments_optimal`] (the budget-optimal
//! set), with token counts per sentence.

use std::collections::BTreeMap;

use excerpt_core::{ChunkKey, Document};

use crate::context::AssembleRequest;
use crate::error::ContextError;
use crate::memo::Memo;
use crate::optimal::select_segments_optimal_lazy;
use crate::segments::{DocValues, SegmentParams};
use crate::selection::{RHit, Selection};
use crate::sentences::lexical::{lexical_scores, terms};
use crate::sentences::min_max_scaled;
use crate::sentences::units::{units_of, Unit};

/// What [`rse_sentences`] takes from `rse`'s parameters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SentenceParams {
    /// Subtracted from every sentence's relevance.
    pub threshold: f32,
    /// Longest segment, in chunks' worth of sentences.
    pub max_len_chunks: usize,
    /// Smallest segment value selected.
    pub min_value: f32,
    /// Most segments selected.
    pub max_segments: usize,
    /// Share of its chunk's relevance a sentence keeps with no query term.
    pub lexical_floor: f32,
    /// Weight of stored sentence similarity against the lexical score.
    pub dense_weight: f32,
}

/// Chooses sentence segments in the candidate documents and adds them to `sel`.
///
/// `chunk_rel` holds, per candidate document (in document order), every chunk's
/// rank-damped relevance `r(chunk)`; `hits` the retrieved chunks.
pub(crate) fn rse_sentences(
    p: &SentenceParams,
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    notes: &mut Vec<String>,
    chunk_rel: &[(u32, Vec<f32>)],
    hits: &BTreeMap<ChunkKey, &RHit>,
) -> Result<(), ContextError> {
    // Units of every candidate document.
    let docs: Vec<(u32, &Document, Vec<Unit>)> = chunk_rel
        .iter()
        .filter_map(|(d, _)| req.corpus.document(*d).map(|doc| (*d, doc, units_of(doc))))
        .collect();
    let lex = unit_matches(p, req, &docs, hits, notes);

    let floor = p.lexical_floor;
    // One reference chunk length for every sentence's weight, so a sentence is worth
    // the same per character in a short chunk as in a long one.
    let (chars, count) = docs.iter().fold((0usize, 0usize), |(c, n), (_, doc, _)| {
        // Chunks partition the text, so the last one ends at its character length
        // (no scan of the text on the query path).
        let len = doc.chunks.last().map_or(0, |c| c.range.char_end);
        (c + len, n + doc.chunks.len())
    });
    let chunk_chars = (chars as f32 / count.max(1) as f32).max(1.0);
    let mut doc_values = Vec::with_capacity(docs.len());
    let mut unit_rel: Vec<Vec<f32>> = Vec::with_capacity(docs.len());
    let (mut units_total, mut chunks_total) = (0usize, 0usize);
    for (di, ((d, doc, units), (_, rels))) in docs.iter().zip(chunk_rel).enumerate() {
        units_total += units.len();
        chunks_total += doc.chunks.len();
        let mut values = Vec::with_capacity(units.len());
        let mut urel = Vec::with_capacity(units.len());
        for (i, u) in units.iter().enumerate() {
            let rc = rels.get(u.chunk).copied().unwrap_or(0.0);
            let l = lex.get(&(di, i)).copied().unwrap_or(0.0);
            let r = rc * (floor + (1.0 - floor) * l);
            let w = u.range.char_len() as f32 / chunk_chars;
            values.push((r - p.threshold) * w);
            urel.push(r);
        }
        let lengths = units
            .iter()
            .map(|u| {
                u32::try_from(req.tokens.lower_bound(u.range.slice(&doc.text))).unwrap_or(u32::MAX)
            })
            .collect();
        doc_values.push(DocValues {
            doc: *d,
            values,
            lengths,
        });
        unit_rel.push(urel);
    }
    // A segment may be as long, in sentences, as `max_len_chunks` chunks are on average.
    let per_chunk = units_total as f64 / chunks_total.max(1) as f64;
    let max_len = ((p.max_len_chunks as f64 * per_chunk).ceil() as usize).max(1);
    let params = SegmentParams {
        max_len_chunks: max_len,
        max_total_tokens: sel.remaining() as u64,
        min_value: p.min_value,
        max_segments: p.max_segments,
    };
    let segments = select_segments_optimal_lazy(&mut doc_values, &params, |i, j| {
        let (_, doc, units) = &docs[i];
        u32::try_from(req.tokens.count(units[j].range.slice(&doc.text))).unwrap_or(u32::MAX)
    })?;
    let by_doc: BTreeMap<u32, usize> = docs.iter().enumerate().map(|(i, d)| (d.0, i)).collect();
    let mut added = 0usize;
    for s in &segments {
        let di = by_doc[&s.doc];
        let (d, doc, units) = &docs[di];
        let range = units[s.start].range.cover(&units[s.end - 1].range);
        let relevance = unit_rel[di][s.start..s.end]
            .iter()
            .copied()
            .fold(0.0f32, f32::max);
        let mut hit_ordinals: Vec<u32> = units[s.start..s.end]
            .iter()
            .map(|u| u.chunk as u32)
            .filter(|&c| hits.contains_key(&ChunkKey::new(*d, c)))
            .collect();
        hit_ordinals.dedup();
        if sel.try_add(*d, doc, range, s.value, relevance, &hit_ordinals) {
            added += 1;
        }
    }
    notes.push(format!(
        "rse: sentence units (lexical floor {floor}), threshold {}, {} candidate document(s), {} segment(s) of at most {max_len} sentences selected, {added} fit",
        p.threshold,
        docs.len(),
        segments.len()
    ));
    Ok(())
}

/// The match with the query of the units of hit chunks (the lexical pool), by position
/// (document's index in `docs`, unit's index): BM25 over the pool divided by the best;
/// with stored sentence vectors for every pooled unit, averaged by `dense_weight` with
/// its similarity to the query (min-max scaled over the pool). Units of other chunks
/// have no match.
fn unit_matches(
    p: &SentenceParams,
    req: &AssembleRequest<'_>,
    docs: &[(u32, &Document, Vec<Unit>)],
    hits: &BTreeMap<ChunkKey, &RHit>,
    notes: &mut Vec<String>,
) -> BTreeMap<(usize, usize), f32> {
    let mut pool: Vec<Vec<String>> = Vec::new();
    let memo = Memo::of(req.corpus);
    let mut pool_index: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for (di, (d, doc, units)) in docs.iter().enumerate() {
        for (i, u) in units.iter().enumerate() {
            if hits.contains_key(&ChunkKey::new(*d, u.chunk as u32)) {
                pool_index.insert((di, i), pool.len());
                pool.push(memo.terms(u.range.slice(&doc.text)));
            }
        }
    }
    let mut lex = lexical_scores(&terms(req.query), &pool);
    if let Some(q) = req.query_vector {
        let mut sims = Vec::with_capacity(pool.len());
        let prepared = excerpt_core::CosineTo::new(q);
        for &(di, i) in pool_index.keys() {
            let d = &docs[di].0;
            match req.corpus.sentence_vector(*d, i) {
                Some(v) if v.len() == q.len() => sims.push(prepared.cosine(&v) as f32),
                _ => break,
            }
        }
        if sims.len() == pool.len() && !sims.is_empty() {
            for ((_, &k), d) in pool_index.iter().zip(min_max_scaled(&sims)) {
                lex[k] = p.dense_weight * d + (1.0 - p.dense_weight) * lex[k];
            }
            notes.push("rse: sentence similarity from stored sentence vectors".into());
        }
    }
    pool_index.into_iter().map(|(at, k)| (at, lex[k])).collect()
}
