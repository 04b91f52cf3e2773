//! `adjacent`: each of the top `max_hits` hits plus `window` neighbours per
//! side within its document. The neighbour at distance `d` scores `score·decay^d`
//! (`score/decay^d` for a negative score) with relevance `relevance·decay^d`; a chunk
//! reached several ways keeps the maximum of each (and counts as a hit if it is one).
//!
//! Budget: candidates are offered in order — hits in rank order first (when
//! `hits_first`), then the rest by score (descending; ties: relevance, then [`ChunkKey`]);
//! one that does not fit is skipped and the next is tried. Touching chunks merge into one
//! piece.

use std::collections::BTreeMap;

use excerpt_core::ChunkKey;
use serde::{Deserialize, Serialize};

use crate::context::AssembleRequest;
use crate::error::{check_min, invalid, ContextError};
use crate::selection::{chunk_span, Assembler, RHit, Selection};

/// Parameters of [`Strategy::Adjacent`](crate::Strategy::Adjacent).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdjacentParams {
    /// Neighbours taken on each side of a hit (default 1). At most 32.
    pub window: usize,
    /// Score factor per step away from the hit (default 0.8): the neighbour at
    /// distance `d` scores `score·decay^d` and has relevance `relevance·decay^d`. In (0, 1].
    pub decay: f32,
    /// Hits considered, best first (default 20).
    pub max_hits: usize,
    /// Default true: every hit is offered to the budget (in rank order) before any
    /// neighbour; false: hits and neighbours compete by score alone.
    pub hits_first: bool,
}

impl Default for AdjacentParams {
    fn default() -> Self {
        AdjacentParams {
            window: 1,
            decay: 0.8,
            max_hits: 20,
            hits_first: true,
        }
    }
}

impl AdjacentParams {
    /// `window ≤ 32`, `decay ∈ (0, 1]`, `max_hits ≥ 1`.
    pub fn validate(&self) -> Result<(), ContextError> {
        if self.window > 32 {
            return Err(invalid(
                "adjacent",
                "window",
                format!("must be <= 32, got {}", self.window),
            ));
        }
        if !(self.decay.is_finite() && self.decay > 0.0 && self.decay <= 1.0) {
            return Err(invalid(
                "adjacent",
                "decay",
                format!("must be in (0, 1], got {}", self.decay),
            ));
        }
        check_min("adjacent", "max_hits", self.max_hits, 1)
    }
}

impl Assembler for AdjacentParams {
    fn assemble(
        &self,
        hits: &[RHit],
        req: &AssembleRequest<'_>,
        sel: &mut Selection<'_>,
        notes: &mut Vec<String>,
    ) -> Result<(), ContextError> {
        adjacent(self, hits, req, sel, notes);
        Ok(())
    }
}

/// `s` lowered by one step of `factor ∈ (0, 1]`, for scores of any sign:
/// `s·factor` when `s ≥ 0`, `s / factor` otherwise (so it never rises).
fn decayed(s: f32, factor: f32) -> f32 {
    if s >= 0.0 {
        s * factor
    } else {
        s / factor
    }
}

/// A candidate chunk of `adjacent`.
#[derive(Debug, Clone, Copy)]
struct Cand {
    score: f32,
    relevance: f32,
    hit_rank: Option<usize>,
}

/// See the module documentation; `window` and `auto` call it directly.
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
        // Never wider than the document, whatever the window asked for.
        let w = i64::try_from(p.window).unwrap_or(i64::MAX).min(n);
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
