//! The entry point, the machinery every strategy shares, and the two simplest strategies
//! (`topk`, `adjacent`).
//!
//! # Contract (every strategy)
//!
//! - Every [`Piece`] is an exact slice: `piece.text` is the document text between the
//!   character offsets `start..end`, and those offsets are the boundaries of chunks
//!   `first_chunk..=last_chunk` — except `window` pieces, which start and end on sentence
//!   boundaries (`first_chunk..=last_chunk` are then the chunks the piece overlaps).
//! - Pieces of one document never overlap and never touch: candidates that overlap or
//!   touch are merged into one piece (score and relevance: the maximum of the merged).
//! - `Σ piece.tokens ≤ budget`, where `piece.tokens` is the [`LlmTokens`] count of the
//!   piece's exact text (counted on the merged text, not summed per chunk). The budget
//!   covers piece texts only; a renderer's headers come on top (reserve headroom).
//! - Nothing is ever truncated. A candidate that does not fit the remaining budget is
//!   skipped (`topk`: assembly stops there). So when the budget is smaller than the best
//!   chunk, the best chunk is not returned: a smaller candidate that fits may be, and if
//!   nothing fits the context is empty with a note saying so.
//! - Order ("the order handed to the LLM", also what the renderers show): grouped by
//!   document, documents by their best piece score (descending; ties: document position),
//!   pieces in reading order within a document.
//! - Deterministic: same input, same output. Ties between chunks are broken by
//!   [`ChunkKey`] (document-id order, then reading order); no hash-map iteration order.
//! - Zero hits: an empty context.

use std::collections::{BTreeMap, BTreeSet};

use excerpt_core::{ChunkKey, Document, Embedder, TextRange};

use crate::context::{Context, Corpus, Hit, LlmTokens, Piece};
use crate::error::ContextError;
use crate::strategy::{AdjacentParams, StrategyConfig, TopkParams};

/// Everything a strategy reads for one query.
#[derive(Clone, Copy)]
pub struct AssembleRequest<'a> {
    /// The query text (`auto` classifies it; `window` embeds it when no vector is given).
    pub query: &'a str,
    /// The query's unit vector, from the same model as the corpus vectors.
    pub query_vector: Option<&'a [f32]>,
    /// Fused hits, ranked best first, relevance in [0, 1].
    pub hits: &'a [Hit],
    /// The collection.
    pub corpus: &'a dyn Corpus,
    /// LLM tokens for all piece texts together.
    pub budget: usize,
    /// The LLM tokenizer every budget is counted in.
    pub tokens: &'a dyn LlmTokens,
    /// Embeds sentences on demand (`window`).
    pub embedder: Option<&'a dyn Embedder>,
}

impl std::fmt::Debug for AssembleRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssembleRequest")
            .field("query", &self.query)
            .field("hits", &self.hits.len())
            .field("budget", &self.budget)
            .field("tokens", &self.tokens.name())
            .field("embedder", &self.embedder.map(|e| e.model_id()))
            .finish_non_exhaustive()
    }
}

/// Assembles the context for one query with one strategy.
///
/// # Contract (every strategy)
///
/// - Every [`Piece`] is an exact slice: `piece.text` is the document text between the
///   character offsets `start..end`, and those offsets are the boundaries of chunks
///   `first_chunk..=last_chunk` — except `window` pieces, which start and end on sentence
///   boundaries (`first_chunk..=last_chunk` are then the chunks the piece overlaps).
/// - Pieces of one document never overlap and never touch: candidates that overlap or
///   touch are merged into one piece (score and relevance: the maximum of the merged).
/// - `Σ piece.tokens ≤ budget`, where `piece.tokens` is the [`LlmTokens`] count of the
///   piece's exact text (counted on the merged text, not summed per chunk). The budget
///   covers piece texts only; a renderer's headers come on top (reserve headroom).
/// - Nothing is ever truncated. A candidate that does not fit the remaining budget is
///   skipped (`topk`: assembly stops there). So when the budget is smaller than the best
///   chunk, the best chunk is not returned: a smaller candidate that fits may be, and if
///   nothing fits the context is empty with a note saying so.
/// - Order ("the order handed to the LLM", also what the renderers show): grouped by
///   document, documents by their best piece score (descending; ties: document position),
///   pieces in reading order within a document.
/// - Deterministic: same input, same output. Ties between chunks are broken by
///   [`ChunkKey`] (document-id order, then reading order); no hash-map iteration order.
/// - Zero hits: an empty context.
///
/// Errors: invalid parameters, a hit naming a chunk the corpus lacks, a non-finite hit
/// score or relevance, vector dimension mismatches, embedder failures.
pub fn assemble(
    strategy: &StrategyConfig,
    req: &AssembleRequest<'_>,
) -> Result<Context, ContextError> {
    strategy.validate()?;
    let hits = resolve_hits(req)?;
    let mut notes = Vec::new();
    let budget = match strategy {
        StrategyConfig::Auto(p) => crate::auto::plan_budget(p, req),
        StrategyConfig::Rse(p) => p.max_tokens.map_or(req.budget, |m| m.min(req.budget)),
        _ => req.budget,
    };
    let mut sel = Selection::new(req.corpus, req.tokens, budget);
    if !hits.is_empty() {
        match strategy {
            StrategyConfig::Topk(p) => topk(p, &hits, req, &mut sel, &mut notes),
            StrategyConfig::Adjacent(p) => adjacent(p, &hits, req, &mut sel, &mut notes),
            StrategyConfig::Rse(p) => crate::rse::rse(p, &hits, req, &mut sel, &mut notes)?,
            StrategyConfig::Window(p) => {
                crate::window::window(p, &hits, req, &mut sel, &mut notes)?
            }
            StrategyConfig::Section(p) => {
                crate::section::section(p, &hits, req, &mut sel, &mut notes)
            }
            StrategyConfig::Auto(p) => crate::auto::auto(p, &hits, req, &mut sel, &mut notes)?,
        }
        if sel.is_empty() {
            notes.push(match sel.smallest_rejected {
                Some(t) => format!(
                    "nothing fit the budget of {budget} tokens (the smallest candidate needs {t}); pieces are never truncated"
                ),
                None => "no candidate qualified".to_string(),
            });
        } else if sel.rejected > 0 {
            notes.push(format!(
                "{} candidate(s) did not fit the budget of {budget} tokens",
                sel.rejected
            ));
        }
    }
    let pieces = sel.into_pieces();
    Ok(Context {
        strategy: strategy.strategy().name().to_string(),
        budget: req.budget,
        tokens: pieces.iter().map(|p| p.tokens).sum(),
        pieces,
        notes,
    })
}

/// A hit checked against the corpus; `rank` is its position in the deduplicated list.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RHit {
    pub key: ChunkKey,
    pub score: f32,
    pub relevance: f32,
    pub rank: usize,
}

/// Checks every hit (chunk exists, finite numbers), clamps relevance to [0, 1] and drops
/// repeated keys (the first, best-ranked occurrence stays).
pub(crate) fn resolve_hits(req: &AssembleRequest<'_>) -> Result<Vec<RHit>, ContextError> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(req.hits.len());
    for (index, h) in req.hits.iter().enumerate() {
        let exists = req
            .corpus
            .document(h.key.doc)
            .is_some_and(|d| (h.key.ordinal as usize) < d.chunks.len());
        if !exists {
            return Err(ContextError::MissingChunk {
                index,
                doc: h.key.doc,
                ordinal: h.key.ordinal,
            });
        }
        for (what, value) in [("score", h.score), ("relevance", h.relevance)] {
            if !value.is_finite() {
                return Err(ContextError::InvalidHit { index, what, value });
            }
        }
        if seen.insert(h.key) {
            out.push(RHit {
                key: h.key,
                score: h.score,
                relevance: h.relevance.clamp(0.0, 1.0),
                rank: out.len(),
            });
        }
    }
    Ok(out)
}

/// The text range of chunks `first..=last` of `doc` (both must exist).
pub(crate) fn chunk_span(doc: &Document, first: usize, last: usize) -> TextRange {
    doc.chunks[first].range.cover(&doc.chunks[last].range)
}

/// Spends the budget left on `hits` in order, one chunk each (a chunk that does not fit
/// is skipped), scored by `score(hit)`; returns how many added text. `rse` and `section`
/// fill what their segments or sections leave this way.
pub(crate) fn fill_with_hits(
    hits: &[RHit],
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    score: impl Fn(&RHit) -> f32,
) -> usize {
    let mut filled = 0usize;
    for h in hits {
        if sel.remaining() == 0 {
            break;
        }
        let Some(doc) = req.corpus.document(h.key.doc) else {
            continue;
        };
        let o = h.key.ordinal as usize;
        let before = sel.remaining();
        if sel.try_add(
            h.key.doc,
            doc,
            chunk_span(doc, o, o),
            score(h),
            h.relevance,
            &[h.key.ordinal],
        ) && sel.remaining() < before
        {
            filled += 1;
        }
    }
    filled
}

/// `s` lowered by one step of `factor ∈ (0, 1]`, for scores of any sign:
/// `s·factor` when `s ≥ 0`, `s / factor` otherwise (so it never rises).
pub(crate) fn decayed(s: f32, factor: f32) -> f32 {
    if s >= 0.0 {
        s * factor
    } else {
        s / factor
    }
}

/// Cosine similarity as f32 (see [`excerpt_core::cosine`]).
pub(crate) fn cosine(a: &[f32], b: &[f32]) -> f32 {
    excerpt_core::cosine(a, b) as f32
}

/// A selected run of one document's text.
#[derive(Debug, Clone)]
struct Run {
    range: TextRange,
    score: f32,
    relevance: f32,
    hits: BTreeSet<u32>,
    tokens: usize,
}

/// The pieces chosen so far, per document, with exact token accounting.
///
/// Runs of a document are kept sorted, disjoint and non-touching. Adding a range merges
/// it with every run it overlaps or touches and counts the merged text's tokens, so the
/// running total is always the exact total of the final pieces.
pub(crate) struct Selection<'a> {
    corpus: &'a dyn Corpus,
    counter: &'a dyn LlmTokens,
    budget: usize,
    used: usize,
    runs: BTreeMap<u32, Vec<Run>>,
    /// Candidates refused for lack of budget.
    pub rejected: usize,
    /// Tokens the smallest refused candidate would have needed (after merging).
    pub smallest_rejected: Option<usize>,
}

impl<'a> Selection<'a> {
    pub fn new(corpus: &'a dyn Corpus, counter: &'a dyn LlmTokens, budget: usize) -> Self {
        Selection {
            corpus,
            counter,
            budget,
            used: 0,
            runs: BTreeMap::new(),
            rejected: 0,
            smallest_rejected: None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.runs.values().all(Vec::is_empty)
    }

    /// Budget left.
    pub fn remaining(&self) -> usize {
        self.budget.saturating_sub(self.used)
    }

    /// Adds `range` of document `doc` (position `doc_idx`) if the merged result fits the
    /// budget; returns whether it was added. `hits` are hit chunk ordinals inside it.
    pub fn try_add(
        &mut self,
        doc_idx: u32,
        doc: &Document,
        range: TextRange,
        score: f32,
        relevance: f32,
        hits: &[u32],
    ) -> bool {
        if range.is_empty() || range.byte_end > doc.text.len() {
            return false;
        }
        let runs = self.runs.entry(doc_idx).or_default();
        let lo = runs.partition_point(|r| r.range.byte_end < range.byte_start);
        let hi = runs.partition_point(|r| r.range.byte_start <= range.byte_end);
        let mut cover = range;
        let mut old_tokens = 0;
        for r in &runs[lo..hi] {
            cover = cover.cover(&r.range);
            old_tokens += r.tokens;
        }
        let same = hi == lo + 1 && cover == runs[lo].range;
        if !same {
            // Spans that provably cannot fit are rejected without an exact count (long
            // sections and whole documents are the expensive ones to count).
            let bound = self.counter.lower_bound(cover.slice(&doc.text));
            if self.used - old_tokens + bound > self.budget {
                self.rejected += 1;
                // The note about the smallest rejected candidate is only shown when
                // nothing was taken, and then it gives an exact count.
                if self.used == 0 && self.smallest_rejected.is_none_or(|t| bound < t) {
                    let exact = self.counter.count(cover.slice(&doc.text));
                    self.smallest_rejected =
                        Some(self.smallest_rejected.map_or(exact, |t| t.min(exact)));
                }
                return false;
            }
        }
        let new_tokens = if same {
            runs[lo].tokens
        } else {
            self.counter.count(cover.slice(&doc.text))
        };
        let total = self.used - old_tokens + new_tokens;
        if total > self.budget {
            self.rejected += 1;
            self.smallest_rejected = Some(
                self.smallest_rejected
                    .map_or(new_tokens, |t| t.min(new_tokens)),
            );
            return false;
        }
        let mut merged = Run {
            range: cover,
            score,
            relevance,
            hits: hits.iter().copied().collect(),
            tokens: new_tokens,
        };
        for r in runs.drain(lo..hi) {
            merged.score = merged.score.max(r.score);
            merged.relevance = merged.relevance.max(r.relevance);
            merged.hits.extend(r.hits);
        }
        runs.insert(lo, merged);
        self.used = total;
        true
    }

    /// The pieces: grouped by document (documents by best piece score, descending; ties by
    /// position), reading order within a document.
    pub fn into_pieces(self) -> Vec<Piece> {
        let mut groups: Vec<(f32, u32, Vec<Piece>)> = Vec::new();
        for (doc_idx, runs) in self.runs {
            let Some(doc) = self.corpus.document(doc_idx) else {
                continue;
            };
            let pieces: Vec<Piece> = runs.into_iter().map(|r| make_piece(doc, r)).collect();
            if let Some(best) = pieces.iter().map(|p| p.score).reduce(f32::max) {
                groups.push((best, doc_idx, pieces));
            }
        }
        groups.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        groups.into_iter().flat_map(|g| g.2).collect()
    }
}

fn make_piece(doc: &Document, r: Run) -> Piece {
    let first = doc
        .chunks
        .partition_point(|c| c.range.byte_end <= r.range.byte_start);
    let last = doc
        .chunks
        .partition_point(|c| c.range.byte_start < r.range.byte_end)
        .saturating_sub(1)
        .max(first);
    let section = doc
        .chunks
        .get(first)
        .map(|c| doc.section_path(c.section))
        .unwrap_or_default();
    Piece {
        doc_id: doc.id.clone(),
        title: doc.title.clone(),
        section,
        start: r.range.char_start,
        end: r.range.char_end,
        first_chunk: first as u32,
        last_chunk: last as u32,
        text: r.range.slice(&doc.text).to_string(),
        score: r.score,
        relevance: r.relevance,
        tokens: r.tokens,
        hits: r.hits.into_iter().collect(),
    }
}

/// `topk`: hits in rank order, each as its own chunk (touching ones merge), until the
/// first that does not fit — assembly stops there (no skipping to smaller chunks, so the
/// context is always a rank prefix of the hits).
fn topk(
    p: &TopkParams,
    hits: &[RHit],
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    notes: &mut Vec<String>,
) {
    for h in hits.iter().take(p.max_chunks) {
        let Some(doc) = req.corpus.document(h.key.doc) else {
            continue;
        };
        let o = h.key.ordinal as usize;
        if !sel.try_add(
            h.key.doc,
            doc,
            chunk_span(doc, o, o),
            h.score,
            h.relevance,
            &[h.key.ordinal],
        ) {
            notes.push(format!(
                "topk: stopped at rank {} (chunk did not fit the remaining budget)",
                h.rank + 1
            ));
            break;
        }
    }
}

/// A candidate chunk of `adjacent`.
#[derive(Debug, Clone, Copy)]
struct Cand {
    score: f32,
    relevance: f32,
    hit_rank: Option<usize>,
}

/// `adjacent` (seed 004): each of the top `max_hits` hits plus `window` neighbours per
/// side within its document. The neighbour at distance `d` scores `score·decay^d`
/// (`score/decay^d` for a negative score) with relevance `relevance·decay^d`; a chunk
/// reached several ways keeps the maximum of each (and counts as a hit if it is one).
///
/// Budget: candidates are offered in order — hits in rank order first (when
/// `hits_first`), then the rest by score (descending; ties: relevance, then [`ChunkKey`]);
/// one that does not fit is skipped and the next is tried. Touching chunks merge into one
/// piece.
pub(crate) fn adjacent(
    p: &AdjacentParams,
    hits: &[RHit],
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    notes: &mut Vec<String>,
) {
    let mut cands: BTreeMap<ChunkKey, Cand> = BTreeMap::new();
    for h in hits.iter().take(p.max_hits) {
        let Some(doc) = req.corpus.document(h.key.doc) else {
            continue;
        };
        let n = doc.chunks.len() as i64;
        let o = i64::from(h.key.ordinal);
        let w = p.window as i64;
        for at in (o - w).max(0)..=(o + w).min(n - 1) {
            let d = (at - o).unsigned_abs() as i32;
            let f = p.decay.powi(d);
            let c = Cand {
                score: decayed(h.score, f),
                relevance: h.relevance * f,
                hit_rank: None,
            };
            let key = ChunkKey::new(h.key.doc, at as u32);
            let e = cands.entry(key).or_insert(c);
            e.score = e.score.max(c.score);
            e.relevance = e.relevance.max(c.relevance);
        }
    }
    for h in hits.iter().take(p.max_hits) {
        if let Some(c) = cands.get_mut(&h.key) {
            c.hit_rank = Some(h.rank);
        }
    }
    let mut order: Vec<(ChunkKey, Cand)> = cands.into_iter().collect();
    order.sort_by(|(ka, a), (kb, b)| {
        let phase = |c: &Cand| {
            if p.hits_first {
                c.hit_rank.map_or(usize::MAX, |r| r)
            } else {
                0
            }
        };
        phase(a)
            .cmp(&phase(b))
            .then(b.score.total_cmp(&a.score))
            .then(b.hit_rank.is_some().cmp(&a.hit_rank.is_some()))
            .then(b.relevance.total_cmp(&a.relevance))
            .then(ka.cmp(kb))
    });
    let mut added = 0usize;
    for (key, c) in &order {
        let Some(doc) = req.corpus.document(key.doc) else {
            continue;
        };
        let o = key.ordinal as usize;
        let hit: &[u32] = if c.hit_rank.is_some() {
            std::slice::from_ref(&key.ordinal)
        } else {
            &[]
        };
        if sel.try_add(
            key.doc,
            doc,
            chunk_span(doc, o, o),
            c.score,
            c.relevance,
            hit,
        ) {
            added += 1;
        }
    }
    notes.push(format!(
        "adjacent: {} hit(s), window ±{}, decay {}: {added} of {} candidate chunks selected",
        hits.len().min(p.max_hits),
        p.window,
        p.decay,
        order.len()
    ));
}
