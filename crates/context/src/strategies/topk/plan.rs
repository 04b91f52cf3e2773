//! The sentence route's passages: valued sentences handed to [`crate::passages::plan`],
//! the runs it chooses added to the selection.

use excerpt_core::{Document, TextRange};

use crate::context::AssembleRequest;
use crate::memo::Memo;
use crate::near::sentence_near;
use crate::passages::{plan, PassagePlan, Run, Unit};
use crate::selection::Selection;
use crate::sentences::lead::{lead_in, lead_out};

use super::sentences::SentenceHit;
use super::{LEAD_IN_WINDOW, LEAD_OUT_CHARS};

/// The longest text, in characters, between two units that a run may bridge: past it
/// the words between cost more of the budget than a piece is worth at any price the
/// planner takes.
const MAX_GAP_CHARS: usize = 1500;

/// A lead-out block keeps this share of the value of the lead-in that announces it.
const LEAD_OUT_SHARE: f32 = 0.9;

/// What [`take_passages`] did, for the context's notes.
pub(super) struct Taken {
    pub runs: usize,
    pub units: usize,
    pub outs: usize,
    /// List lead-ins valued as their items.
    pub leads: usize,
}

/// A unit before planning: where it is and what it is worth.
struct Candidate {
    doc: u32,
    range: TextRange,
    value: f32,
    chunks: Vec<u32>,
}

/// Plans passages over `sentences` (valued, any order) worth at least `least` for the
/// budget `sel` has left and adds them. `added`: candidates a strategy added itself (no
/// piece's hits); `lead_ins`: list items bring their lead-ins ([`lift_lead_ins`]).
pub(super) fn take_passages(
    params: PassagePlan,
    lead_ins: bool,
    sentences: &[SentenceHit],
    least: f32,
    added: &[excerpt_core::ChunkKey],
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
) -> Taken {
    let (kept, outs, leads) = candidates(sentences, least, lead_ins, added, req, sel);
    let budget = sel.remaining();
    let units = priced_units(&kept, req, sel);
    // Tokens of joined text are counted again exactly when a run is added; the slack
    // keeps a run from missing the budget by the few tokens its joins may add.
    let slack = (budget / 50).min(16);
    // The bound on pieces is the request's: pieces already chosen count against it.
    let allowed = match params.tokens_per_piece {
        0 => usize::MAX,
        t => req.budget.div_ceil(t).max(1),
    };
    let max_pieces = allowed.saturating_sub(sel.pieces());
    let runs = plan(&units, budget.saturating_sub(slack), params, max_pieces);
    let mut taken = Taken {
        runs: 0,
        units: 0,
        outs,
        leads,
    };
    add_runs(&runs, &kept, req, sel, &mut taken);
    fill(&kept, allowed, req, sel, &mut taken);
    taken
}

/// The units to plan over, in reading order, none overlapping: the sentences worth at
/// least `least` that no piece holds yet, the lead-ins of list items among them, and the
/// blocks lead-ins introduce; with how many such blocks were added and how many lead-ins
/// of list items were valued.
fn candidates(
    sentences: &[SentenceHit],
    least: f32,
    lead_ins: bool,
    added: &[excerpt_core::ChunkKey],
    req: &AssembleRequest<'_>,
    sel: &Selection<'_>,
) -> (Vec<Candidate>, usize, usize) {
    let mut cands: Vec<Candidate> = sentences
        .iter()
        .filter(|s| s.value >= least && !sel.overlaps(s.doc, s.range))
        .map(|s| Candidate {
            doc: s.doc,
            range: s.range,
            value: s.value,
            chunks: s
                .chunks
                .iter()
                .copied()
                .filter(|&o| !added.iter().any(|k| k.doc == s.doc && k.ordinal == o))
                .collect(),
        })
        .collect();
    let leads = if lead_ins {
        lift_lead_ins(sentences, least, req, sel, &mut cands)
    } else {
        0
    };
    cands.sort_by(|a, b| {
        a.doc
            .cmp(&b.doc)
            .then(a.range.byte_start.cmp(&b.range.byte_start))
    });
    let outs = add_lead_outs(req, sel, &mut cands);
    // Units never overlap: of two that do (a clause inside a block), the first stays.
    let mut kept: Vec<Candidate> = Vec::with_capacity(cands.len());
    for c in cands {
        if kept
            .last()
            .is_some_and(|p| p.doc == c.doc && p.range.byte_end > c.range.byte_start)
        {
            continue;
        }
        kept.push(c);
    }
    (kept, outs, leads)
}

/// The planner's units of `kept`: values, characters, and prices in tokens of each unit
/// and of the gap before it. Under a bound of characters too, a unit costs the larger of
/// its tokens and its characters in tokens at the bound's rate.
fn priced_units(kept: &[Candidate], req: &AssembleRequest<'_>, sel: &Selection<'_>) -> Vec<Unit> {
    let budget = sel.remaining();
    let per_char = sel
        .remaining_chars()
        .map(|c| budget as f64 / c.max(1) as f64);
    let cost = |tokens: usize, chars: usize| match per_char {
        Some(rate) => tokens.max((chars as f64 * rate).ceil() as usize),
        None => tokens,
    };
    kept.iter()
        .enumerate()
        .map(|(j, c)| {
            let doc = req.corpus.document(c.doc);
            let text = doc.map_or("", |d| c.range.slice(&d.text));
            let gap_tokens = match (j.checked_sub(1).map(|i| &kept[i]), doc) {
                (Some(p), Some(d)) if p.doc == c.doc => {
                    let gap = gap(p.range, c.range);
                    (gap.char_len() <= MAX_GAP_CHARS)
                        .then(|| cost(req.tokens.count(gap.slice(&d.text)), gap.char_len()))
                }
                _ => None,
            };
            Unit {
                value: c.value,
                chars: c.range.char_len(),
                tokens: cost(req.tokens.count(text), c.range.char_len()),
                gap_tokens,
                label: doc.is_some_and(|d| is_label(d, c.range)),
                place: (c.doc, c.range.char_start),
            }
        })
        .collect()
}

/// Values the lead-in of each list item among `cands` (the sentence ending with a colon
/// that governs it, [`lead_in`]) at least as the item, adding it as a candidate when it
/// is none yet: the words that govern an item are worth what the item is (0.9 of it
/// measured: contracts 0.3 points less at 2000 characters). A lead-in is a label that
/// may not end a run, so the planner takes it only as the start of a passage that
/// reaches its item: `"The Receiving Party undertakes:"` is read with `"f) not to
/// reverse engineer …"`, or not at all. Returns how many lead-ins were raised or added.
fn lift_lead_ins(
    sentences: &[SentenceHit],
    least: f32,
    req: &AssembleRequest<'_>,
    sel: &Selection<'_>,
    cands: &mut Vec<Candidate>,
) -> usize {
    // (document, lead-in sentence) → the value it takes.
    let mut lifts: Vec<((u32, usize), f32)> = Vec::new();
    for s in sentences
        .iter()
        .filter(|s| s.value >= least && !sel.overlaps(s.doc, s.range))
    {
        let Some(j) = req
            .corpus
            .document(s.doc)
            .and_then(|doc| lead_in(doc, s.sentence, LEAD_IN_WINDOW))
        else {
            continue;
        };
        match lifts.iter_mut().find(|(k, _)| *k == (s.doc, j)) {
            Some((_, best)) => *best = best.max(s.value),
            None => lifts.push(((s.doc, j), s.value)),
        }
    }
    let mut n = 0;
    for ((d, j), v) in lifts {
        let Some(range) = req.corpus.document(d).map(|doc| doc.sentences[j]) else {
            continue;
        };
        if sel.overlaps(d, range) {
            continue;
        }
        // The lead-in, or the clauses it was cut into, when they are candidates.
        let mut found = false;
        for c in cands.iter_mut().filter(|c| {
            c.doc == d && c.range.byte_start < range.byte_end && range.byte_start < c.range.byte_end
        }) {
            found = true;
            if c.value < v {
                c.value = v;
                n += 1;
            }
        }
        if !found {
            cands.push(Candidate {
                doc: d,
                range,
                value: v,
                chunks: Vec::new(),
            });
            n += 1;
        }
    }
    n
}

/// Adds the planned `runs` of `kept`, best run first, so that what does not fit after
/// exact counting is the weakest.
fn add_runs(
    runs: &[Run],
    kept: &[Candidate],
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    taken: &mut Taken,
) {
    let mut order: Vec<(f32, usize)> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let best = kept[r.first..=r.last]
                .iter()
                .map(|c| c.value)
                .fold(0.0f32, f32::max);
            (best, i)
        })
        .collect();
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    for (best, i) in order {
        let r = runs[i];
        let (first, last) = (&kept[r.first], &kept[r.last]);
        let Some(doc) = req.corpus.document(first.doc) else {
            continue;
        };
        let mut hits: Vec<u32> = kept[r.first..=r.last]
            .iter()
            .flat_map(|c| c.chunks.iter().copied())
            .collect();
        hits.sort_unstable();
        hits.dedup();
        let range = at_least(doc, first.range.cover(&last.range), sel.min_chars);
        if sel.try_add(first.doc, doc, range, best, best, &hits) {
            taken.runs += 1;
            taken.units += r.last - r.first + 1;
        }
    }
}

/// Budget the plan left (a piece not worth its price, or one that missed after exact
/// counting) goes to the best units of `kept` not taken, while fewer than `allowed`
/// pieces are chosen.
fn fill(
    kept: &[Candidate],
    allowed: usize,
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    taken: &mut Taken,
) {
    let mut rest: Vec<&Candidate> = kept.iter().collect();
    rest.sort_by(|a, b| {
        b.value
            .total_cmp(&a.value)
            .then(a.doc.cmp(&b.doc))
            .then(a.range.byte_start.cmp(&b.range.byte_start))
    });
    for c in rest {
        if sel.remaining() == 0 || sel.pieces() >= allowed {
            break;
        }
        let Some(doc) = req.corpus.document(c.doc) else {
            continue;
        };
        if sel.overlaps(c.doc, c.range) {
            continue;
        }
        let range = at_least(doc, c.range, sel.min_chars);
        if sel.try_add(c.doc, doc, range, c.value, c.value, &c.chunks) {
            taken.runs += 1;
            taken.units += 1;
        }
    }
}

/// `range` grown by the sentences after it, then before it, until it holds at least
/// `min` characters or the document ends: a short passage is read with its neighbours
/// rather than refused.
fn at_least(doc: &Document, range: TextRange, min: usize) -> TextRange {
    let mut r = range;
    if r.char_len() >= min {
        return r;
    }
    let mut next = sentence_near(doc, r.byte_end, |s| s.byte_end <= r.byte_end);
    while r.char_len() < min && next < doc.sentences.len() {
        r = r.cover(&doc.sentences[next]);
        next += 1;
    }
    let mut prev = sentence_near(doc, r.byte_start, |s| s.byte_end <= r.byte_start);
    while r.char_len() < min && prev > 0 {
        prev -= 1;
        r = r.cover(&doc.sentences[prev]);
    }
    r
}

/// The text between two ranges of one document, `a` before `b`.
fn gap(a: TextRange, b: TextRange) -> TextRange {
    TextRange {
        byte_start: a.byte_end,
        byte_end: b.byte_start.max(a.byte_end),
        char_start: a.char_end,
        char_end: b.char_start.max(a.char_end),
    }
}

/// A heading (the first line of a section) or a lead-in (a unit ending with a colon):
/// text that announces what follows it and says nothing alone.
fn is_label(doc: &Document, range: TextRange) -> bool {
    let text = range.slice(&doc.text).trim_end();
    if text.ends_with(':') {
        return true;
    }
    let i = doc
        .sections
        .partition_point(|s| s.range.byte_start < range.byte_start);
    let heading = doc
        .sections
        .get(i)
        .is_some_and(|s| s.range.byte_start == range.byte_start);
    // Sections are in reading order; a heading that is a whole unit is a short line.
    heading && !text.contains('\n') && text.chars().count() <= 200
}

/// Adds, after each lead-in candidate, the block it introduces ([`lead_out`]) when no
/// candidate holds it yet, valued at [`LEAD_OUT_SHARE`] of the lead-in; keeps the order.
fn add_lead_outs(
    req: &AssembleRequest<'_>,
    sel: &Selection<'_>,
    cands: &mut Vec<Candidate>,
) -> usize {
    let mut extra: Vec<Candidate> = Vec::new();
    let memo = Memo::of(req.corpus);
    for (j, c) in cands.iter().enumerate() {
        let Some(doc) = req.corpus.document(c.doc) else {
            continue;
        };
        let Some(out) = lead_out(&memo, doc, c.range, LEAD_OUT_CHARS) else {
            continue;
        };
        let next_start = cands
            .get(j + 1)
            .filter(|n| n.doc == c.doc)
            .map_or(usize::MAX, |n| n.range.byte_start);
        // Only the part before the next candidate is missing; a block the next
        // candidate starts is already there.
        if out.byte_start >= next_start || sel.overlaps(c.doc, out) {
            continue;
        }
        if out.byte_end > next_start {
            continue;
        }
        extra.push(Candidate {
            doc: c.doc,
            range: out,
            value: c.value * LEAD_OUT_SHARE,
            chunks: Vec::new(),
        });
    }
    let n = extra.len();
    if n > 0 {
        cands.extend(extra);
        cands.sort_by(|a, b| {
            a.doc
                .cmp(&b.doc)
                .then(a.range.byte_start.cmp(&b.range.byte_start))
        });
    }
    n
}
