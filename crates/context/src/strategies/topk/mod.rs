//! `topk`: hits in rank order, each as its own chunk (touching ones merge), until the
//! first that does not fit — assembly stops there (no skipping to smaller chunks, so the
//! context is always a rank prefix of the hits).
//!
//! With `unit = sentence`, the units are the sentences of the best `pool` hit chunks,
//! valued by their chunk's rank-damped relevance and their own match with the query
//! ([`sentences::best_sentences`]); they are offered best first and every one that
//! fits is taken (sentences are small, so a skipped long one leaves room for the next).
//! Touching sentences merge into one piece, so the context holds several short passages
//! from several places where chunk units would hold one or two whole chunks.

mod plan;
mod sentences;

use excerpt_core::ChunkKey;
use serde::{Deserialize, Serialize};

use crate::context::{AssembleRequest, PieceOrder};
use crate::error::{check_min, check_range, invalid, ContextError};
use crate::memo::Memo;
use crate::selection::{chunk_span, Assembler, RHit, Selection};
use crate::sentences::lead::{lead_in, lead_out};

use crate::passages::PassagePlan;
use plan::take_passages;
pub(crate) use sentences::SentenceScoring;
use sentences::{best_sentences, SentenceHit};

/// How many sentences before a list item are searched for its lead-in.
pub(super) const LEAD_IN_WINDOW: usize = 12;

/// Longest block, in characters, that a lead-in brings after it (`lead_outs`): about a
/// table part ([`crate::sentences::units`]' figure parts are 500) or a short list.
pub(crate) const LEAD_OUT_CHARS: usize = 600;

/// What `topk` ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TopkUnit {
    /// Retrieved chunks (default).
    #[default]
    Chunk,
    /// Sentences of the best retrieved chunks.
    Sentence,
}

/// Parameters of [`Strategy::Topk`](crate::Strategy::Topk).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TopkParams {
    /// At most this many hits are considered (default 50: more than any budget of a few
    /// thousand tokens holds, so the budget is the real limit).
    pub max_chunks: usize,
    /// What is ranked: `chunk` (default) or `sentence`.
    pub unit: TopkUnit,
    /// Order of the pieces: `document` (default: grouped by document, reading order) or
    /// `score` (best first).
    pub order: PieceOrder,
    /// With `unit = sentence`: the sentences of this many best hits compete (default 10).
    pub pool: usize,
    /// With `unit = sentence`: the share of its chunk's relevance a sentence keeps when it
    /// shares no term with the query, in [0, 1] (default 0.5).
    pub lexical_floor: f32,
    /// With `unit = sentence`: the lexical floor instead for a query of at least
    /// `long_terms` distinct terms (function words aside) when no stored sentence
    /// similarity counts, in [0, 1] (default 0.6). A question of many terms asks several
    /// things at once; each sentence of its answer matches a few of its words, and a
    /// higher floor lets the relevance of a sentence's chunk count for more than the
    /// words it happens to share (docs/history/eval-2026-11-27.md). Stored sentence vectors
    /// (`dense_weight`, `dense_min_terms`) give that meaning instead where they count.
    pub long_floor: f32,
    /// With `unit = sentence`: the fewest distinct terms that make a query long, for
    /// `long_floor`, `long_join` and `long_pool_tokens` (default 14).
    pub long_terms: usize,
    /// With `unit = sentence`: a hit at rank r (0-based) has relevance
    /// `relevance · exp(−r / rank_decay)`, `> 0` (default 30).
    pub rank_decay: f32,
    /// With `unit = sentence` and stored sentence vectors: weight of the sentence's
    /// similarity against its lexical score, in [0, 1] (default 0.5).
    pub dense_weight: f32,
    /// With `unit = sentence` and stored sentence vectors: their similarity counts only
    /// for a query of at least this many distinct terms (function words aside; default
    /// 14, 0: every query). A question of many terms asks several things at once, and
    /// the words of its answer are spread over sentences that each match a few of them;
    /// for a short question the stems rank sentences better than the model's similarity
    /// does (late chunking, docs/history/eval-2026-11-27.md).
    pub dense_min_terms: usize,
    /// With `unit = sentence`: sentences are cut into clauses (after semicolons, before
    /// enumerators such as `(a)`), none shorter than this many characters; 0 keeps whole
    /// sentences (default 0).
    pub clause_chars: usize,
    /// With `unit = sentence`: a sentence of more tokens than this share of the
    /// request's budget is cut into clauses (of at least `clause_chars` characters, 250
    /// when that is 0), so that the clause answering a question is not lost with a
    /// sentence too long to take whole, in [0, 1] (default 0.5; 0: never).
    pub long_clauses: f32,
    /// With `unit = sentence`: a pooled chunk that ends inside a paragraph brings the
    /// rest of it, up to this many characters (to the first blank line, heading or list
    /// item), among the candidates, valued as the chunk; 0: none (default 0;
    /// [`TopkParams::sentences`], `auto`'s route, sets 300). A chunker cuts at a length,
    /// and the end of what a chunk began to say lies in the next one, which retrieval may
    /// rank far lower.
    pub continuation: usize,
    /// With `unit = sentence`: weight of the sentences just before and after a sentence
    /// on its line in its lexical match, in [0, 1] (default 0.15; 0 scores each
    /// sentence alone).
    pub neighbours: f32,
    /// With `unit = sentence`: a sentence's lexical match also counts the words of its
    /// section's headings (default true; documents without headings are unaffected).
    pub heading_terms: bool,
    /// With `unit = sentence`: a list item (a sentence opening with an enumerator such as
    /// `(a)` or `2.`) is accompanied by its lead-in, the sentence ending with a colon
    /// before the list, when it fits (default true). With `passages`, the lead-in is
    /// valued as its item and read with it in one passage, or left out.
    pub lead_ins: bool,
    /// With `unit = sentence`: a lead-in (a unit ending with a colon, `"… were as
    /// follows:"`) is followed by what it introduces, the table part, code block or lines
    /// up to the next blank line after it, when they fit in 600 characters
    /// and in the budget (default true).
    pub lead_outs: bool,
    /// With `unit = sentence`: weight, in [0, 1], of a sentence's match with the
    /// request's feedback terms (words that the sentences best matching the query across
    /// the index use besides the query's own, see [`crate::feedback_terms`]) added to its
    /// match with the query (default 1: as much as the query; 0 ignores them).
    pub feedback: f32,
    /// With `unit = sentence`: a unit at most this many characters from one already taken
    /// in the same section (documents without headings have none), and worth at least
    /// 0.8 of it or it of the unit, is joined to it with the text between them, when that
    /// fits the budget (default 0: units are taken alone; docs/EVAL.md measures 300,
    /// which reads better on documentation and costs contracts with headings).
    pub bridge: usize,
    /// With `unit = sentence` and `order = score`: the share of the stronger score the
    /// weaker of two units on consecutive lines needs to be merged with it, for a query
    /// of at least `long_terms` distinct terms, in [0, 1] (default 0: touching lines
    /// always read as one piece; any other query keeps the selection's 0.8, so that a
    /// good sentence does not carry a weaker line to the front). The answer to a
    /// many-part question is a passage, read better whole than line by line
    /// (docs/history/eval-2026-11-27.md).
    pub long_join: f32,
    /// With `unit = sentence`: for a query of at least `long_terms` distinct terms, the
    /// pool grows with the budget: `pool` hits per this many tokens of budget, never
    /// fewer than `pool` (default 1000: 20 hits at 2000 tokens; 0: the pool does not
    /// grow). A many-part answer at a large budget draws on more chunks than the best
    /// ten (docs/history/eval-2026-11-27.md).
    pub long_pool_tokens: usize,
    /// With `unit = sentence`: the sentences are chosen as passages, the budget-optimal
    /// runs of consecutive sentences with a price per piece (the `passages` module),
    /// instead of one by one, best first (default false; `auto` sets it).
    pub passages: bool,
    /// With `passages`: the price of one more piece, in characters at the best
    /// sentence's value (default 30; 0, 60 and 100 measured in docs/EVAL.md): two good
    /// sentences a few words apart read as one passage, and a sentence alone must be
    /// worth that much more than what it displaces.
    pub piece_chars: usize,
    /// With `passages`: at most one piece per this many tokens of budget (default 175:
    /// three pieces in 500 tokens, about one per 700 characters); 0: no bound.
    pub tokens_per_piece: usize,
    /// With `passages`: sentences valued below this share of the best one are not
    /// taken, so a context may stop before its budget when what is left is far less
    /// relevant than what was chosen, in [0, 1] (default 0: the budget is filled).
    pub stop_share: f32,
    /// With `passages`: a sentence counts as its value relative to the best sentence's,
    /// raised to this power, `> 0` (default 1.5; 0.5, 1, 2 and 4 measured in
    /// docs/EVAL.md; see the `passages` module).
    pub value_power: f32,
    /// With `passages`: each anchor (the best sentences, `anchors` of them, at most one
    /// per piece the budget allows, `anchor_spread` characters apart) is worth this many
    /// characters more to the planner, at the best sentence's value, so that the
    /// sentences that match best in different places are taken and the rest of the
    /// budget grows passages around them, rather than one long run of middling
    /// sentences buying their place (default 0: no anchors; `auto` 150, see
    /// docs/EVAL.md).
    pub anchor_chars: usize,
    /// With `anchor_chars`: anchors lie at least this many characters apart in a
    /// document, so that they are different places (default 0; `auto` 500).
    pub anchor_spread: usize,
    /// With `anchor_chars`: at most this many anchors (default `usize::MAX`: one per
    /// piece allowed; `auto` 3, with `anchor_floor` 0.7: a third anchor of any value
    /// costs XQuAD 0.8-1.0 points, docs/EVAL.md).
    pub anchors: usize,
    /// With `anchor_chars`: every anchor after the first is valued at least this share
    /// of the best sentence's value, in [0, 1] (default 0: the best places, however far
    /// below the first; `auto` 0.7, measured against 0, 0.6 and 0.8 in docs/EVAL.md).
    pub anchor_floor: f32,
    /// With `unit = sentence`: weight of a pooled hit's relevance read from its scores
    /// ([`excerpt_core::Hit::score_relevance`], set by RRF fusion) against its
    /// `relevance`, in [0, 1] (default 0). RRF's relevance reads ranks only and is nearly
    /// flat over the first hits; 0.25, 0.5 and 1 are measured in
    /// docs/history/eval-2026-12-03.md (English XQuAD gains up to 2.1 points, the
    /// documentation sets lose up to 2.6).
    pub score_weight: f32,
}

impl Default for TopkParams {
    fn default() -> Self {
        TopkParams {
            max_chunks: 50,
            unit: TopkUnit::Chunk,
            order: PieceOrder::Document,
            pool: 10,
            lexical_floor: 0.5,
            long_floor: 0.6,
            long_terms: 14,
            rank_decay: 30.0,
            dense_weight: 0.5,
            dense_min_terms: 14,
            clause_chars: 0,
            long_clauses: 0.5,
            continuation: 0,
            neighbours: 0.15,
            heading_terms: true,
            lead_ins: true,
            lead_outs: true,
            feedback: 1.0,
            bridge: 0,
            long_join: 0.0,
            long_pool_tokens: 1000,
            passages: false,
            piece_chars: 30,
            tokens_per_piece: 175,
            stop_share: 0.0,
            value_power: 1.5,
            anchor_chars: 0,
            anchor_spread: 0,
            anchors: usize::MAX,
            anchor_floor: 0.0,
            score_weight: 0.0,
        }
    }
}

impl TopkParams {
    /// Sentence units chosen as passages, in reading order
    /// (`topk:unit=sentence,passages=true`): what `auto` hands pinpoint questions.
    pub fn sentences() -> Self {
        TopkParams {
            unit: TopkUnit::Sentence,
            order: PieceOrder::Document,
            passages: true,
            continuation: 300,
            anchor_chars: 150,
            anchor_spread: 500,
            anchors: 3,
            anchor_floor: 0.7,
            ..TopkParams::default()
        }
    }

    /// `max_chunks ≥ 1`, `pool ≥ 1`, `lexical_floor`, `long_floor`, `dense_weight`,
    /// `neighbours`, `feedback`, `stop_share`, `long_clauses`, `anchor_floor` and
    /// `score_weight` in [0, 1], `rank_decay > 0`.
    pub fn validate(&self) -> Result<(), ContextError> {
        check_min("topk", "max_chunks", self.max_chunks, 1)?;
        check_min("topk", "pool", self.pool, 1)?;
        check_range("topk", "lexical_floor", self.lexical_floor, 0.0, 1.0)?;
        check_range("topk", "long_floor", self.long_floor, 0.0, 1.0)?;
        check_range("topk", "long_join", self.long_join, 0.0, 1.0)?;
        check_range("topk", "dense_weight", self.dense_weight, 0.0, 1.0)?;
        check_range("topk", "neighbours", self.neighbours, 0.0, 1.0)?;
        check_range("topk", "feedback", self.feedback, 0.0, 1.0)?;
        check_range("topk", "stop_share", self.stop_share, 0.0, 1.0)?;
        check_range("topk", "long_clauses", self.long_clauses, 0.0, 1.0)?;
        check_range("topk", "anchor_floor", self.anchor_floor, 0.0, 1.0)?;
        check_range("topk", "score_weight", self.score_weight, 0.0, 1.0)?;
        check_range(
            "topk",
            "value_power",
            self.value_power,
            f32::MIN_POSITIVE,
            64.0,
        )?;
        if !(self.rank_decay.is_finite() && self.rank_decay > 0.0) {
            return Err(invalid(
                "topk",
                "rank_decay",
                format!("must be finite and > 0, got {}", self.rank_decay),
            ));
        }
        Ok(())
    }
}

impl Assembler for TopkParams {
    fn assemble(
        &self,
        hits: &[RHit],
        req: &AssembleRequest<'_>,
        sel: &mut Selection<'_>,
        notes: &mut Vec<String>,
    ) -> Result<(), ContextError> {
        sel.order = self.order;
        match self.unit {
            TopkUnit::Chunk => topk(self, hits, req, sel, notes),
            TopkUnit::Sentence => {
                sel.bridge = self.bridge;
                let long = is_long(req.query, self.long_terms);
                if long {
                    sel.join_share = self.long_join;
                }
                topk_sentences(self, long, hits, req, sel, notes);
            }
        }
        Ok(())
    }
}

/// Whether `query` has at least `long_terms` distinct terms (function words aside).
pub(crate) fn is_long(query: &str, long_terms: usize) -> bool {
    let terms = crate::sentences::lexical::terms(query);
    terms
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        >= long_terms
}

/// `unit = sentence`: see the module documentation. `long`: the query has at least
/// `long_terms` distinct terms.
fn topk_sentences(
    p: &TopkParams,
    long: bool,
    hits: &[RHit],
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    notes: &mut Vec<String>,
) {
    let mut n = p.pool;
    if long && p.long_pool_tokens > 0 {
        n = n.max(p.pool * req.budget / p.long_pool_tokens);
    }
    let pool: Vec<_> = hits
        .iter()
        .take(n)
        .map(|h| {
            let r = (1.0 - p.score_weight) * h.relevance + p.score_weight * h.score_relevance;
            (h.key, r * (-(h.rank as f32) / p.rank_decay).exp())
        })
        .collect();
    let scoring = SentenceScoring {
        floor: p.lexical_floor,
        floor_for_long: long.then_some(p.long_floor),
        dense_weight: p.dense_weight,
        dense_min_terms: p.dense_min_terms,
        clause_chars: p.clause_chars,
        continuation: p.continuation,
        long_sentence: (p.long_clauses > 0.0)
            .then(|| (p.long_clauses * req.budget as f32).ceil() as usize),
        neighbour_weight: p.neighbours,
        heading_terms: p.heading_terms,
        feedback_weight: p.feedback,
    };
    let sentences = best_sentences(req, &pool, &scoring, notes);
    // Candidates a strategy added itself are no piece's hits.
    let added: Vec<_> = hits
        .iter()
        .take(n)
        .filter(|h| !h.retrieved)
        .map(|h| h.key)
        .collect();
    if p.passages {
        let params = PassagePlan {
            piece_chars: p.piece_chars,
            tokens_per_piece: p.tokens_per_piece,
            power: p.value_power,
            anchor_chars: p.anchor_chars,
            anchor_spread: p.anchor_spread,
            anchors: p.anchors,
            anchor_floor: p.anchor_floor,
        };
        // Sentences come best first: the least value taken is a share of the first's.
        let least = p.stop_share * sentences.first().map_or(0.0, |s| s.value);
        let below = sentences.iter().filter(|s| s.value < least).count();
        if below > 0 {
            notes.push(format!(
                "topk: {below} sentence(s) below {} of the best left out",
                p.stop_share
            ));
        }
        let t = take_passages(params, p.lead_ins, &sentences, least, &added, req, sel);
        notes.push(format!(
            "topk: {} passage(s) of {} sentence(s), of {} sentence(s) of the best {} hit(s) (a piece priced at {} characters, at most one per {} tokens), {} list lead-in(s) valued as their items, {} lead-in(s) followed by what they introduce",
            t.runs,
            t.units,
            sentences.len(),
            pool.len(),
            p.piece_chars,
            p.tokens_per_piece,
            t.leads,
            t.outs
        ));
        return;
    }
    let (taken, leads, outs) = take_best_first(p, &sentences, &added, req, sel);
    notes.push(format!(
        "topk: {taken} of {} sentence(s) of the best {} hit(s) taken, {leads} list lead-in(s) added, {outs} lead-in(s) followed by what they introduce",
        sentences.len(),
        pool.len()
    ));
}

/// `passages=false`: each of `sentences` (best first) added alone while the budget
/// lasts, with the lead-in of a list item and what a lead-in introduces. Returns the
/// sentences, lead-ins and introduced blocks added.
fn take_best_first(
    p: &TopkParams,
    sentences: &[SentenceHit],
    added: &[ChunkKey],
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
) -> (usize, usize, usize) {
    let (mut taken, mut leads, mut outs) = (0usize, 0usize, 0usize);
    let memo = Memo::of(req.corpus);
    for s in sentences {
        if sel.remaining() == 0 {
            break;
        }
        let Some(doc) = req.corpus.document(s.doc) else {
            continue;
        };
        let retrieved: Vec<u32> = s
            .chunks
            .iter()
            .copied()
            .filter(|&o| !added.iter().any(|k| k.doc == s.doc && k.ordinal == o))
            .collect();
        if sel.try_add(s.doc, doc, s.range, s.value, s.value, &retrieved) {
            taken += 1;
            if p.lead_ins {
                if let Some(j) = lead_in(doc, s.sentence, LEAD_IN_WINDOW) {
                    if sel.try_add(s.doc, doc, doc.sentences[j], s.value, s.value, &[]) {
                        leads += 1;
                    }
                }
            }
            if p.lead_outs {
                if let Some(r) = lead_out(&memo, doc, s.range, LEAD_OUT_CHARS) {
                    if sel.try_add(s.doc, doc, r, s.value, s.value, &[]) {
                        outs += 1;
                    }
                }
            }
        }
    }
    (taken, leads, outs)
}

/// See the module documentation.
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
