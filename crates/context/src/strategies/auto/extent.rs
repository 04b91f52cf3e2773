//! The steps that take a run of text whole before the sentences: a long question's best
//! `rse` segment (`long_segment`) and the section two of the best hits share (`extent`).

use excerpt_core::Document;

use crate::context::AssembleRequest;
use crate::error::ContextError;
use crate::selection::{chunk_span, Assembler, RHit, Selection};
use crate::strategies::rse::{RseParams, RseUnit};

use super::AutoParams;

/// The segment step of long questions (`long_segment`): `rse`'s best segment (at most
/// `rse.max_len_chunks` chunks; 4 and 8 measured against its 15), alone and without fill,
/// added first. Its score is the segment's value (a sum of chunk values,
/// mostly above any one sentence's), so it leads the context. Returns the note.
pub(super) fn long_segment(
    p: &AutoParams,
    hits: &[RHit],
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
) -> Result<String, ContextError> {
    let one = RseParams {
        max_segments: 1,
        fill: false,
        unit: RseUnit::Chunk,
        ..p.rse
    };
    let before = sel.remaining();
    let cap = (req.budget as f64 * f64::from(p.long_segment_share)) as usize;
    let empty = sel.clone();
    one.assemble(hits, req, sel, &mut Vec::new())?;
    let mut took = before - sel.remaining();
    let chunks = sel
        .run_chunks()
        .iter()
        .map(|&(_, first, last)| last + 1 - first)
        .max()
        .unwrap_or(0);
    if took > cap || chunks < p.long_segment_min_chunks {
        *sel = empty;
        took = 0;
    }
    Ok(if took > 0 {
        format!("auto: long question: rse's best segment ({took} tokens) taken first")
    } else {
        format!(
            "auto: long question: no run of {} or more chunks within {} of the budget",
            p.long_segment_min_chunks, p.long_segment_share
        )
    })
}

/// The extent step: where the evidence candidates lie decides the unit. When at least
/// `extent_min` of the best `extent_hits` hits lie in one section (the innermost section
/// of their chunks; the one holding the most, ties to the better-ranked hit) and the
/// section's chunks fit in `extent_share` of the budget, the section is taken whole,
/// scored as its best hit, before the route's own units: a financial statement, a table
/// or an explanation of several paragraphs under one heading reads as one piece instead
/// of its best lines. Returns the note, when taken.
pub(super) fn extent(
    p: &AutoParams,
    hits: &[RHit],
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
) -> Option<String> {
    // (doc, section) → (hits in it, the first hit's index).
    let mut groups: Vec<((u32, u32), usize, usize)> = Vec::new();
    for (i, h) in hits.iter().take(p.extent_hits).enumerate() {
        let doc = req.corpus.document(h.key.doc)?;
        let Some(s) = doc
            .chunks
            .get(h.key.ordinal as usize)
            .and_then(|c| c.section)
        else {
            continue;
        };
        match groups.iter_mut().find(|g| g.0 == (h.key.doc, s)) {
            Some(g) => g.1 += 1,
            None => groups.push(((h.key.doc, s), 1, i)),
        }
    }
    let &((d, s), count, first) = groups
        .iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.2.cmp(&a.2)))?;
    if count < p.extent_min {
        return None;
    }
    let doc = req.corpus.document(d)?;
    let at = hits[first].key.ordinal as usize;
    let inside = |o: usize| doc.chunks[o].section == Some(s);
    let (mut lo, mut hi) = (at, at);
    while lo > 0 && inside(lo - 1) {
        lo -= 1;
    }
    while hi + 1 < doc.chunks.len() && inside(hi + 1) {
        hi += 1;
    }
    match take_span(p, hits, req, sel, (d, doc), (lo, hi)) {
        None => return extent_run(p, hits, req, sel, (d, s)),
        Some(false) => return None,
        Some(true) => {}
    }
    let heading = doc
        .sections
        .get(s as usize)
        // Cut as a piece's section is: a note is printed too.
        .map_or(String::new(), |x| {
            excerpt_core::shown_section(&x.heading).into_owned()
        });
    Some(format!(
        "auto: {count} of the best {} hits lie in the section {heading:?} of {:?}: taken whole first",
        p.extent_hits.min(hits.len()),
        doc.id
    ))
}

/// The run step (`extent_run` > 0), when the section of the best hits does not fit: the
/// best hit and the next of the best `extent_hits` hits in section `s` of document `d`
/// at most `extent_run` chunks from it; the run of chunks from one to the other is taken
/// first when it fits. Returns the note, when taken.
fn extent_run(
    p: &AutoParams,
    hits: &[RHit],
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    (d, s): (u32, u32),
) -> Option<String> {
    if p.extent_run == 0 {
        return None;
    }
    let doc = req.corpus.document(d)?;
    let top: Vec<&RHit> = hits
        .iter()
        .take(p.extent_hits)
        .filter(|h| {
            h.key.doc == d
                && doc
                    .chunks
                    .get(h.key.ordinal as usize)
                    .and_then(|c| c.section)
                    == Some(s)
        })
        .collect();
    // The best hit and the next hit near it.
    let a = top.first().filter(|a| a.key == hits[0].key)?;
    let b = top[1..]
        .iter()
        .find(|b| (b.key.ordinal as usize).abs_diff(a.key.ordinal as usize) <= p.extent_run)?;
    let (lo, hi) = (
        a.key.ordinal.min(b.key.ordinal) as usize,
        a.key.ordinal.max(b.key.ordinal) as usize,
    );
    if take_span(p, hits, req, sel, (d, doc), (lo, hi)) != Some(true) {
        return None;
    }
    Some(format!(
        "auto: the best hit and another of the best {} lie {} chunk(s) apart in {:?}: their run taken first",
        p.extent_hits.min(hits.len()),
        hi - lo,
        doc.id
    ))
}

/// Adds chunks `lo..=hi` of document `d` as one piece, valued as the best of `hits`
/// among them: `None` when the span does not fit in `extent_share` of the budget, else
/// whether the selection took it.
fn take_span(
    p: &AutoParams,
    hits: &[RHit],
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    (d, doc): (u32, &Document),
    (lo, hi): (usize, usize),
) -> Option<bool> {
    let range = chunk_span(doc, lo, hi);
    let cap = (req.budget as f64 * f64::from(p.extent_share)) as usize;
    let text = range.slice(&doc.text);
    if req.tokens.lower_bound(text) > cap || req.tokens.count(text) > cap {
        return None;
    }
    let mut inner: Vec<&RHit> = hits
        .iter()
        .filter(|h| h.key.doc == d && (lo..=hi).contains(&(h.key.ordinal as usize)))
        .collect();
    inner.sort_by_key(|h| h.key.ordinal);
    let ordinals: Vec<u32> = inner.iter().map(|h| h.key.ordinal).collect();
    let score = inner.iter().map(|h| h.relevance).fold(0.0, f32::max);
    Some(sel.try_add(d, doc, range, score, score, &ordinals))
}
