//! `section`: whole sections, and whole documents when several sections match.
//!
//! The top `max_hits` hits are grouped by document (documents in the order of their best
//! hit) and, within a document, by **unit**: the hit chunk's innermost section
//! ([`excerpt_core::Chunk::section`]), whose unit text is [`excerpt_core::Section::range`]
//! (the whole section with its subsections); a chunk outside every section belongs to the
//! document's pseudo-section, the maximal run of section-less chunks around it (the text
//! before the first heading).
//!
//! Per document, with the budget left at that point:
//!
//! - `full_documents` and `≥ multi_section_threshold` distinct units matched: the whole
//!   document, if it fits;
//! - otherwise (or if it does not fit) the matched units in score order (best hit score,
//!   descending; ties: reading order), each one that fits is taken — so the lowest-scoring
//!   are the ones dropped; a unit that does not fit falls back to its hit chunks (each taken
//!   if it fits). Units and chunks that overlap or touch merge.
//!
//! With `fill` (default on), the budget left is then spent on the hits beyond
//! `max_hits`, one chunk each, in rank order.
//!
//! Unit ranges are widened to chunk boundaries (the chunks they overlap), so every piece
//! starts and ends on chunk boundaries.

use std::collections::BTreeMap;

use excerpt_core::Document;
use serde::{Deserialize, Serialize};

use crate::context::AssembleRequest;
use crate::error::{check_min, ContextError};
use crate::selection::{chunk_span, fill_with_hits, Assembler, RHit, Selection};

/// Parameters of [`Strategy::Section`](crate::Strategy::Section).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SectionParams {
    /// Hits considered, best first (default 10).
    pub max_hits: usize,
    /// Distinct matching sections of one document that promote it to the whole document
    /// (default 2). `≥ 1`.
    pub multi_section_threshold: usize,
    /// Whether promotion to whole documents happens at all (default true).
    pub full_documents: bool,
    /// Spend the budget the sections leave on the hits beyond `max_hits`, as single
    /// chunks in rank order (default true), so `section` never returns less than `topk`
    /// would on documents without useful sections.
    pub fill: bool,
}

impl Default for SectionParams {
    fn default() -> Self {
        SectionParams {
            max_hits: 10,
            multi_section_threshold: 2,
            full_documents: true,
            fill: true,
        }
    }
}

impl SectionParams {
    /// `max_hits ≥ 1`, `multi_section_threshold ≥ 1`.
    pub fn validate(&self) -> Result<(), ContextError> {
        check_min("section", "max_hits", self.max_hits, 1)?;
        check_min(
            "section",
            "multi_section_threshold",
            self.multi_section_threshold,
            1,
        )
    }
}

impl Assembler for SectionParams {
    fn assemble(
        &self,
        hits: &[RHit],
        req: &AssembleRequest<'_>,
        sel: &mut Selection<'_>,
        notes: &mut Vec<String>,
    ) -> Result<(), ContextError> {
        section(self, hits, req, sel, notes);
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum UnitKey {
    Section(u32),
    /// Pseudo-section: first chunk of the section-less run.
    Loose(usize),
}

struct Unit {
    first: usize,
    last: usize,
    score: f32,
    relevance: f32,
    hits: Vec<RHit>,
}

fn unit_of(doc: &Document, ordinal: usize) -> (UnitKey, usize, usize) {
    let chunk = &doc.chunks[ordinal];
    if let Some(sec) = chunk
        .section
        .and_then(|s| doc.sections.get(s as usize).map(|x| (s, x)))
    {
        let r = sec.1.range;
        let first = doc
            .chunks
            .partition_point(|c| c.range.byte_end <= r.byte_start);
        let last = doc
            .chunks
            .partition_point(|c| c.range.byte_start < r.byte_end)
            .saturating_sub(1);
        if first <= ordinal && ordinal <= last {
            return (UnitKey::Section(sec.0), first, last);
        }
        return (UnitKey::Section(sec.0), ordinal, ordinal);
    }
    let loose = |i: usize| doc.chunks[i].section.is_none();
    let mut first = ordinal;
    while first > 0 && loose(first - 1) {
        first -= 1;
    }
    let mut last = ordinal;
    while last + 1 < doc.chunks.len() && loose(last + 1) {
        last += 1;
    }
    (UnitKey::Loose(first), first, last)
}

fn section(
    p: &SectionParams,
    hits: &[RHit],
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    notes: &mut Vec<String>,
) {
    let top = &hits[..hits.len().min(p.max_hits)];
    let mut doc_order: Vec<u32> = Vec::new();
    let mut by_doc: BTreeMap<u32, Vec<RHit>> = BTreeMap::new();
    for h in top {
        let e = by_doc.entry(h.key.doc).or_default();
        if e.is_empty() {
            doc_order.push(h.key.doc);
        }
        e.push(*h);
    }
    for d in doc_order {
        let (Some(doc), Some(doc_hits)) = (req.corpus.document(d), by_doc.get(&d)) else {
            continue;
        };
        let mut units: BTreeMap<UnitKey, Unit> = BTreeMap::new();
        for h in doc_hits {
            let (key, first, last) = unit_of(doc, h.key.ordinal as usize);
            let u = units.entry(key).or_insert(Unit {
                first,
                last,
                score: h.score,
                relevance: h.relevance,
                hits: Vec::new(),
            });
            u.score = u.score.max(h.score);
            u.relevance = u.relevance.max(h.relevance);
            u.hits.push(*h);
        }
        let best_score = doc_hits
            .iter()
            .map(|h| h.score)
            .fold(f32::NEG_INFINITY, f32::max);
        let best_rel = doc_hits.iter().map(|h| h.relevance).fold(0.0, f32::max);
        let mut ordinals: Vec<u32> = doc_hits.iter().map(|h| h.key.ordinal).collect();
        ordinals.sort_unstable();
        if p.full_documents && units.len() >= p.multi_section_threshold && !doc.chunks.is_empty() {
            let whole = chunk_span(doc, 0, doc.chunks.len() - 1);
            if sel.try_add(d, doc, whole, best_score, best_rel, &ordinals) {
                notes.push(format!(
                    "section: {}: {} sections matched, whole document",
                    doc.id,
                    units.len()
                ));
                continue;
            }
            notes.push(format!(
                "section: {}: {} sections matched, whole document did not fit, sections instead",
                doc.id,
                units.len()
            ));
        }
        let mut order: Vec<&Unit> = units.values().collect();
        order.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.first.cmp(&b.first)));
        for u in order {
            let mut unit_hits: Vec<u32> = u.hits.iter().map(|h| h.key.ordinal).collect();
            unit_hits.sort_unstable();
            if sel.try_add(
                d,
                doc,
                chunk_span(doc, u.first, u.last),
                u.score,
                u.relevance,
                &unit_hits,
            ) {
                continue;
            }
            for h in &u.hits {
                let o = h.key.ordinal as usize;
                sel.try_add(
                    d,
                    doc,
                    chunk_span(doc, o, o),
                    h.score,
                    h.relevance,
                    &[h.key.ordinal],
                );
            }
        }
    }
    if p.fill && hits.len() > top.len() {
        let filled = fill_with_hits(&hits[top.len()..], req, sel, |h| h.score);
        if filled > 0 {
            notes.push(format!(
                "section: filled the budget left with {filled} more hit chunk(s) in rank order"
            ));
        }
    }
}
