//! `rse`: Relevant Segment Extraction — chunk values from relevance and rank, then the
//! best contiguous runs of chunks by the exact segment search of [`crate::segments`].
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
//! `relevance` is the hit's [`score_relevance`](crate::Hit::score_relevance) when
//! retrieval gave one (hybrid hits fused by RRF: the min-max relevance of their scores),
//! else its `relevance`. RRF's own relevance reads ranks only, about 0.87 at rank 10, so
//! every one of the first tens of hits would be worth a segment; valued on their scores,
//! `rse` gains about 1 recall point on transcripts and 2-14 on contracts and documentation
//! (docs/EVAL.md). Pieces still report the hit's `relevance`.
//!
//! This is absolute relevance damped by rank, minus a penalty (dsRAG's value), rather
//! than an average of cosine and a linear rank term, `(cos + (1 − r/n)) / 2 − threshold`:
//! a linear rank term gives the last hit of a long list a value near zero no matter how
//! relevant it is, and a cosine is not on the calibrated relevance scale. An unretrieved chunk ranks after all `N` hits.
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

mod sentences;

use std::collections::BTreeMap;
use std::str::FromStr;

use excerpt_core::ChunkKey;
use serde::{Deserialize, Serialize};

use crate::context::AssembleRequest;
use crate::error::{check_min, check_range, invalid, ContextError};
use crate::optimal::select_segments_optimal_lazy;
use crate::segments::{select_segments_lazy, DocValues, SegmentParams};
use crate::selection::{chunk_span, fill_with_hits, Assembler, RHit, Selection};

use sentences::{rse_sentences, SentenceParams};

/// Named RSE parameter sets, in the spirit of dsRAG's presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RsePreset {
    /// General use: segments up to 15 chunks, threshold 0.2.
    Balanced,
    /// Tighter segments: threshold 0.3, up to 8 chunks, at most 5 segments, at most 2,000
    /// tokens even under a larger budget.
    Precision,
    /// Exhaustive questions: threshold 0.1, segments up to 40 chunks, 200 candidate
    /// documents, slow rank decay.
    FindAll,
}

impl RsePreset {
    /// The preset's name (`balanced`, `precision`, `find_all`).
    pub fn name(self) -> &'static str {
        match self {
            RsePreset::Balanced => "balanced",
            RsePreset::Precision => "precision",
            RsePreset::FindAll => "find_all",
        }
    }
}

impl FromStr for RsePreset {
    type Err = ContextError;
    fn from_str(s: &str) -> Result<Self, ContextError> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "balanced" => Ok(RsePreset::Balanced),
            "precision" => Ok(RsePreset::Precision),
            "find_all" | "findall" => Ok(RsePreset::FindAll),
            _ => Err(ContextError::UnknownStrategy {
                name: format!("rse:{s}"),
                expected: "rse:balanced, rse:precision or rse:find_all".into(),
            }),
        }
    }
}

/// Parameters of [`Strategy::Rse`](crate::Strategy::Rse).
///
/// Chunk values (only documents of the top `max_docs` hits are searched):
///
/// ```text
/// retrieved chunk at rank r (0-based):   v = relevance · exp(−r / rank_decay) − threshold
/// other chunk of a candidate document:   v = rel(cos(chunk, query)) · exp(−N / rank_decay) − threshold
/// ... without a query vector:            v = −threshold
/// ```
///
/// `relevance` is the hit's `score_relevance`, or its `relevance` when it has none. `N`
/// is the number of hits (an unretrieved chunk ranks after all of them), and `rel`
/// maps cosine similarity onto the hits' relevance scale (a least-squares line fitted on
/// the hits, capped at the least relevant hit's relevance). Then
/// [`crate::select_segments`] picks non-overlapping segments of at most `max_len_chunks`
/// chunks with value `≥ min_value`, at most `max_segments`, within the token budget.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RseParams {
    /// Subtracted from every chunk's relevance; in [0, 1). Balanced default 0.2 (dsRAG's
    /// irrelevant-chunk penalty is 0.18 on the same [0, 1] relevance scale).
    pub threshold: f32,
    /// Rank decay constant of `exp(−rank / rank_decay)`, `> 0` (default 30, dsRAG's).
    pub rank_decay: f32,
    /// Maximum segment length in chunks, `≥ 1` (default 15).
    pub max_len_chunks: usize,
    /// Minimum segment value (default 0.5: one hit of relevance ≥ 0.7 at the top, or a
    /// run of moderately relevant chunks).
    pub min_value: f32,
    /// Maximum number of segments (default 10).
    pub max_segments: usize,
    /// Candidate documents: the distinct documents of the hits, best first (default 10).
    pub max_docs: usize,
    /// A cap below the request's budget (default none: the request's budget).
    pub max_tokens: Option<usize>,
    /// After the segments, offer the remaining hits in rank order as single chunks
    /// while budget is left (default on for `balanced` and `find_all`, off for
    /// `precision`). Segments are few and long; filling spends what they leave on the
    /// breadth `topk` would have had.
    pub fill: bool,
    /// What segments are made of: `chunk` (default) or `sentence` (segments start and end
    /// on sentences inside the candidate documents; see `strategies/rse/sentences.rs`).
    pub unit: RseUnit,
    /// With `unit = sentence`: the share of its chunk's relevance a sentence keeps when it
    /// shares no term with the query, in [0, 1] (default 0.5).
    pub lexical_floor: f32,
    /// With `unit = sentence` and stored sentence vectors: weight of the sentence's
    /// similarity against its lexical score, in [0, 1] (default 0.5).
    pub dense_weight: f32,
    /// Budget-optimal selection of the set of segments (`true`, see
    /// [`crate::select_segments_optimal`]) instead of best-first (default false).
    pub optimal: bool,
}

/// What `rse` segments are made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RseUnit {
    /// Whole chunks.
    Chunk,
    /// Sentences.
    Sentence,
}

impl Default for RseParams {
    fn default() -> Self {
        RseParams::preset(RsePreset::Balanced)
    }
}

impl RseParams {
    /// The parameters of a preset.
    pub fn preset(p: RsePreset) -> Self {
        match p {
            RsePreset::Balanced => RseParams {
                threshold: 0.2,
                rank_decay: 30.0,
                max_len_chunks: 15,
                min_value: 0.5,
                max_segments: 10,
                max_docs: 10,
                max_tokens: None,
                fill: true,
                unit: RseUnit::Chunk,
                lexical_floor: 0.5,
                dense_weight: 0.5,
                optimal: false,
            },
            RsePreset::Precision => RseParams {
                threshold: 0.3,
                rank_decay: 20.0,
                max_len_chunks: 8,
                min_value: 0.5,
                max_segments: 5,
                max_docs: 5,
                max_tokens: Some(2000),
                fill: false,
                unit: RseUnit::Chunk,
                lexical_floor: 0.5,
                dense_weight: 0.5,
                optimal: false,
            },
            RsePreset::FindAll => RseParams {
                threshold: 0.1,
                rank_decay: 200.0,
                max_len_chunks: 40,
                min_value: 0.5,
                max_segments: 50,
                max_docs: 200,
                max_tokens: None,
                fill: true,
                unit: RseUnit::Chunk,
                lexical_floor: 0.5,
                dense_weight: 0.5,
                optimal: false,
            },
        }
    }

    /// `threshold ∈ [0, 1)`, `rank_decay > 0`, `min_value` finite, counts `≥ 1`.
    pub fn validate(&self) -> Result<(), ContextError> {
        if !(self.threshold.is_finite() && (0.0..1.0).contains(&self.threshold)) {
            return Err(invalid(
                "rse",
                "threshold",
                format!("must be in [0, 1), got {}", self.threshold),
            ));
        }
        if !(self.rank_decay.is_finite() && self.rank_decay > 0.0) {
            return Err(invalid(
                "rse",
                "rank_decay",
                format!("must be > 0, got {}", self.rank_decay),
            ));
        }
        if !self.min_value.is_finite() {
            return Err(invalid(
                "rse",
                "min_value",
                format!("must be finite, got {}", self.min_value),
            ));
        }
        check_min("rse", "max_len_chunks", self.max_len_chunks, 1)?;
        check_min("rse", "max_segments", self.max_segments, 1)?;
        check_min("rse", "max_docs", self.max_docs, 1)?;
        check_range("rse", "lexical_floor", self.lexical_floor, 0.0, 1.0)?;
        check_range("rse", "dense_weight", self.dense_weight, 0.0, 1.0)?;
        if let Some(t) = self.max_tokens {
            check_min("rse", "max_tokens", t, 1)?;
        }
        Ok(())
    }
}

impl Assembler for RseParams {
    fn budget(&self, req: &AssembleRequest<'_>) -> usize {
        self.max_tokens.map_or(req.budget, |m| m.min(req.budget))
    }

    fn assemble(
        &self,
        hits: &[RHit],
        req: &AssembleRequest<'_>,
        sel: &mut Selection<'_>,
        notes: &mut Vec<String>,
    ) -> Result<(), ContextError> {
        rse(self, hits, req, sel, notes)
    }
}

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

/// A chunk vector of the query's dimension, else the error.
fn check_dim(q: &[f32], v: &[f32]) -> Result<(), ContextError> {
    if v.len() != q.len() {
        Err(ContextError::DimensionMismatch {
            what: "chunk vector",
            expected: q.len(),
            got: v.len(),
        })
    } else {
        Ok(())
    }
}

/// `rse`: values every chunk of the best hits' documents ([`chunk_values`]), selects
/// the best segments of chunks ([`chunk_segments`]) or of sentences
/// ([`sentences::rse_sentences`]), and fills what is left with hits in rank order.
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
    let decay = f64::from(p.rank_decay);
    let map = unretrieved_map(p, hits, req, notes)?;
    let (mut doc_values, relevances) = chunk_values(p, req, &docs, &by_key, map, hits.len())?;
    if p.unit == RseUnit::Sentence {
        let chunk_rel: Vec<(u32, Vec<f32>)> = doc_values
            .iter()
            .map(|d| (d.doc, d.values.iter().map(|v| v + p.threshold).collect()))
            .collect();
        let sp = SentenceParams {
            threshold: p.threshold,
            max_len_chunks: p.max_len_chunks,
            min_value: p.min_value,
            max_segments: p.max_segments,
            lexical_floor: p.lexical_floor,
            dense_weight: p.dense_weight,
        };
        rse_sentences(&sp, req, sel, notes, &chunk_rel, &by_key)?;
    } else {
        chunk_segments(p, req, sel, notes, &mut doc_values, &relevances, &by_key)?;
    }
    if p.fill {
        // Remaining hits in rank order, each scored by its chunk value so documents
        // reached only this way sort after the segments' documents.
        let filled = fill_with_hits(hits, req, sel, |h| {
            h.score_relevance * (-(h.rank as f64) / decay).exp() as f32 - p.threshold
        });
        if filled > 0 {
            notes.push(format!(
                "rse: filled the budget left with {filled} more hit chunk(s) in rank order"
            ));
        }
    }
    Ok(())
}

/// How chunks retrieval did not return are valued: with a query vector, their cosine
/// mapped onto the hits' relevance scale ([`fit_map`] over the hits' vectors); without
/// one, `None` (they are worth `-threshold`).
fn unretrieved_map<'q>(
    p: &RseParams,
    hits: &[RHit],
    req: &AssembleRequest<'q>,
    notes: &mut Vec<String>,
) -> Result<Option<(&'q [f32], CosMap)>, ContextError> {
    let Some(q) = req.query_vector else {
        notes.push(format!(
            "rse: no query vector, unretrieved chunks valued at -{}",
            p.threshold
        ));
        return Ok(None);
    };
    // The query prepared once: the same cosines, its norm not taken again for each hit.
    let query = excerpt_core::CosineTo::new(q);
    let mut points = Vec::new();
    for h in hits {
        if let Some(v) = req.corpus.chunk_vector(h.key) {
            check_dim(q, v)?;
            points.push((
                f64::from(query.cosine(v) as f32),
                f64::from(h.score_relevance),
            ));
        }
    }
    let cap = hits
        .iter()
        .map(|h| f64::from(h.score_relevance))
        .fold(f64::INFINITY, f64::min);
    let m = fit_map(&points, if cap.is_finite() { cap } else { 0.0 });
    notes.push(format!(
        "rse: unretrieved chunks valued by similarity, rel(cos) = clamp({:.3} + {:.3}*cos, 0, {:.3})",
        m.a, m.b, m.cap
    ));
    Ok(Some((q, m)))
}

/// Chunks of the candidate documents from which [`chunk_values`] values the documents
/// on the pool's threads rather than one after the other.
const PARALLEL_CHUNKS: usize = 2048;

/// Each candidate document's chunk relevances, by document position.
type Relevances = BTreeMap<u32, Vec<f32>>;

/// Every chunk's value (its rank-damped relevance less `threshold`) and relevance in
/// each of `docs`, with token lengths as lower bounds where a qualifying segment can
/// reach (0 elsewhere): `select_segments_lazy` asks for exact counts only for the chunks
/// of segments it picks.
fn chunk_values(
    p: &RseParams,
    req: &AssembleRequest<'_>,
    docs: &[u32],
    by_key: &BTreeMap<ChunkKey, &RHit>,
    map: Option<(&[f32], CosMap)>,
    n_hits: usize,
) -> Result<(Vec<DocValues>, Relevances), ContextError> {
    let decay = f64::from(p.rank_decay);
    // The query, prepared once for its cosine with every unretrieved chunk.
    let query = map.map(|(q, _)| excerpt_core::CosineTo::new(q));
    let unretrieved_factor = (-(n_hits as f64) / decay).exp() as f32;
    // With whole chunks as the unit, only chunks within reach of a chunk of positive
    // value matter: a segment (at most `max_len_chunks`) whose sum is positive holds
    // one. An unretrieved chunk's value is at most `cap · factor − threshold`; when
    // that is negative, the reach is the hits' own, and an unretrieved chunk beyond it
    // needs no cosine (it is valued as a chunk without a vector). The cosines of every
    // chunk of a long document were a fifth of a long question's assembly.
    let lazy = p.unit == RseUnit::Chunk
        && p.min_value > 0.0
        && map.is_some_and(|(_, m)| (m.cap as f32) * unretrieved_factor - p.threshold < 0.0);
    let unretrieved = |key: ChunkKey| -> Result<(f32, f32), ContextError> {
        Ok(match (map, &query, req.corpus.chunk_vector(key)) {
            (Some((q, m)), Some(query), Some(v)) => {
                check_dim(q, v)?;
                let r = m.apply(query.cosine(v) as f32);
                (r * unretrieved_factor - p.threshold, r)
            }
            _ => (-p.threshold, 0.0),
        })
    };
    // One document's values, lengths and relevances (`None`: not in the corpus).
    let value_doc = |d: u32| -> Result<Option<(DocValues, Vec<f32>)>, ContextError> {
        let Some(doc) = req.corpus.document(d) else {
            return Ok(None);
        };
        let n = doc.chunks.len();
        let mut values = Vec::with_capacity(n);
        let mut rels = Vec::with_capacity(n);
        // Unretrieved chunks left to value once the reach is known (when `lazy`).
        let mut later = Vec::new();
        for o in 0..n {
            let key = ChunkKey::new(d, o as u32);
            let (v, r) = match by_key.get(&key) {
                Some(h) => {
                    let f = (-(h.rank as f64) / decay).exp() as f32;
                    (h.score_relevance * f - p.threshold, h.relevance)
                }
                None if lazy => {
                    later.push(o);
                    (-p.threshold, 0.0)
                }
                None => unretrieved(key)?,
            };
            values.push(v);
            rels.push(r);
        }
        let reach = reach(p, &values);
        for o in later {
            if reach[o] {
                (values[o], rels[o]) = unretrieved(ChunkKey::new(d, o as u32))?;
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
        Ok(Some((
            DocValues {
                doc: d,
                values,
                lengths,
            },
            rels,
        )))
    };
    value_docs(docs, req, value_doc)
}

/// `value_doc` of each of `docs`, in order, with the relevances by document. The
/// documents are valued on their own, so with enough chunks to read (a long question's
/// candidate documents: cosines and word counts of thousands of chunks) they are valued
/// on the pool's threads, each the same as alone, kept in order.
fn value_docs(
    docs: &[u32],
    req: &AssembleRequest<'_>,
    value_doc: impl Fn(u32) -> Result<Option<(DocValues, Vec<f32>)>, ContextError> + Sync,
) -> Result<(Vec<DocValues>, Relevances), ContextError> {
    let chunks: usize = docs
        .iter()
        .filter_map(|&d| req.corpus.document(d))
        .map(|doc| doc.chunks.len())
        .sum();
    let valued: Vec<Option<(DocValues, Vec<f32>)>> = if chunks >= PARALLEL_CHUNKS {
        use rayon::prelude::*;
        docs.par_iter()
            .with_max_len(1)
            .map(|&d| value_doc(d))
            .collect::<Result<_, _>>()?
    } else {
        docs.iter()
            .map(|&d| value_doc(d))
            .collect::<Result<_, _>>()?
    };
    let mut doc_values = Vec::with_capacity(docs.len());
    let mut relevances: BTreeMap<u32, Vec<f32>> = BTreeMap::new();
    for (values, rels) in valued.into_iter().flatten() {
        relevances.insert(values.doc, rels);
        doc_values.push(values);
    }
    Ok((doc_values, relevances))
}

/// Which chunks of a document whose chunk values are `values` a qualifying segment can
/// reach: those within `max_len_chunks - 1` of a chunk of positive value (every chunk
/// when `min_value` is not positive).
fn reach(p: &RseParams, values: &[f32]) -> Vec<bool> {
    let n = values.len();
    let mut reach = vec![false; n];
    let span = p.max_len_chunks.saturating_sub(1);
    for (i, &v) in values.iter().enumerate() {
        if v > 0.0 || p.min_value <= 0.0 {
            for r in
                &mut reach[i.saturating_sub(span)..i.saturating_add(span).saturating_add(1).min(n)]
            {
                *r = true;
            }
        }
    }
    reach
}

/// Selects the best segments of chunks (budget-optimal with `optimal`, else greedy) and
/// adds them to `sel`, each with the best relevance among its chunks.
fn chunk_segments(
    p: &RseParams,
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    notes: &mut Vec<String>,
    doc_values: &mut [DocValues],
    relevances: &Relevances,
    by_key: &BTreeMap<ChunkKey, &RHit>,
) -> Result<(), ContextError> {
    let docs_in_values: Vec<u32> = doc_values.iter().map(|d| d.doc).collect();
    let params = SegmentParams {
        max_len_chunks: p.max_len_chunks,
        max_total_tokens: sel.remaining() as u64,
        min_value: p.min_value,
        max_segments: p.max_segments,
    };
    let exact = |i: usize, o: usize| {
        let count = req
            .corpus
            .document(docs_in_values[i])
            .map_or(0, |doc| req.tokens.count(doc.chunk_text(o)));
        u32::try_from(count).unwrap_or(u32::MAX)
    };
    let segments = if p.optimal {
        select_segments_optimal_lazy(doc_values, &params, exact)?
    } else {
        select_segments_lazy(doc_values, &params, exact)?
    };
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
    Ok(())
}
