//! `auto`: a planner that picks the strategy per query from the query's form and the
//! structure of the documents retrieval found, and says why in the context's notes.
//!
//! - **Passage questions** (the query asks what was said, discussed, thought, decided,
//!   or asks for a summary: see [`PASSAGE_CUES`]) need long
//!   contiguous evidence: `rse` segments, unless one of the best hits' documents has
//!   headings: a section of documentation holds its topic in a few paragraphs, which the
//!   sentence route finds better than `rse` (`rse_over_headings=true` restores `rse`).
//! - **Pinpoint questions** (everything else: a fact, a clause, a setting) need the few
//!   best passages: the best sentences of the best chunks, best first
//!   ([`TopkParams::sentences`]). With `sections=true`, pinpoint questions whose top
//!   documents have headings go to `section` instead (whole sections).
//! - **Conversations**: when one of the top documents is a transcript (most lines are
//!   speaker turns, [`is_dialogue`](crate::dialogue::is_dialogue)) and none has headings,
//!   pinpoint questions go to `rse` too (`dialogue=false` turns this off): in a meeting
//!   a fact comes out over several turns, and on the meeting transcripts `rse` beats the
//!   sentence route on pinpoint questions by 4.6 recall points at 2000 characters.
//!
//! - **Extent** (pinpoint questions, `extent=false` turns it off): when two of the three
//!   best hits lie in one section that fits in the budget, the section is taken
//!   whole, first, and the sentences fill the rest: where the evidence lies
//!   decides the unit, not the wording of the question. On documentation whose answers
//!   run over several paragraphs it adds 2.8 / 3.6 / 2.7 recall points at 2000 / 4000 /
//!   8000 characters; on contracts and transcripts it never fires, on one-paragraph
//!   answers it adds up to 1.3 points (docs/EVAL.md). With `extent_run` ≥ 1 (off by
//!   default), a section too long to take whole gives the run of chunks from the best hit
//!   to a near one of the best hits instead.
//!
//! - **A segment first for long questions** (`long_segment=false` turns it off): a
//!   pinpoint question of at least `long_segment_terms` (14) distinct terms asks several
//!   things at once, and its answer is a passage of a few paragraphs. Such a question
//!   takes `rse`'s best segment first (one run of at least `long_segment_min_chunks` (2)
//!   chunks, `rse`'s chunk values) when it leaves a tenth of the budget
//!   (`long_segment_share` 0.9) to the sentences, unless the question names a section by
//!   its heading (then the named-sections step below decides the unit). On long
//!   documentation answers it adds 2.1 / 1.1 / 0 recall points at 2000 / 4000 / 8000
//!   characters and is ahead of `rse` at every budget; no contract, pydocs-dev or QMSum
//!   result changes (docs/EVAL.md).
//! - **Named sections** (pinpoint questions, `named=false` turns it off): a question that
//!   names a section by its heading ("according to the statement of cash flows", "the
//!   balance sheet") gets that section's chunks among the sentence route's candidates
//!   when it is at most [`NAMED_CHUNKS`] chunks long and retrieval did not reach it, or
//!   reached it but the section is mostly rows of figures (`named_reached`: its reached
//!   chunks are then valued as the best hit) ([`named_sections`] says when a heading is
//!   named). A statement of figures shares
//!   few words with the question, so neither lexical search nor the embedding finds it;
//!   once its rows are candidates, the sentence route picks the ones asked for. On the
//!   annual reports of financebench-dev it adds 4.4 / 8.9 / 9.4 points of text recall
//!   and 14.0 / 14.0 / 12.2 points of pages at 2000 / 4000 / 8000 characters, and
//!   changes no figure of the other sets (docs/EVAL.md).
//!
//! Measured on the development sets (docs/EVAL.md): on meeting transcripts it is `rse`
//! and beats `topk` at every budget; on contracts the sentence route beats `topk` by
//! 10-16 recall points at 2000 and 4000 characters, and it does so on the same contracts
//! with their clause titles made headings, where `section` loses 2-5 points to `topk`
//! (so `sections` is off by default). `rse` alone loses 8 recall points to `topk` on
//! contracts at small budgets, and `topk` alone loses 3-6 points to `rse` on transcripts.

mod extent;
mod named;

use serde::{Deserialize, Serialize};

use crate::context::AssembleRequest;
use crate::error::{check_min, check_range, ContextError};
use crate::memo::Memo;
use crate::selection::{Assembler, RHit, Selection};
use crate::strategies::rse::RseParams;
use crate::strategies::section::SectionParams;
use crate::strategies::topk::{is_long, TopkParams, TopkUnit};

use extent::{extent, long_segment};
use named::{named_in_top_documents, with_named_sections};

/// Parameters of [`Strategy::Auto`](crate::Strategy::Auto): the strategy each route
/// assembles with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AutoParams {
    /// For passage questions (default: `rse`'s balanced preset).
    pub rse: RseParams,
    /// For pinpoint questions over documents with headings when `sections` is on
    /// (default: `section`'s defaults).
    pub section: SectionParams,
    /// For pinpoint questions (default: [`TopkParams::sentences`], the best sentences of
    /// the best chunks, best first).
    pub topk: TopkParams,
    /// Whether pinpoint questions over documents with headings go to `section` (default
    /// false: on contracts with headings the sentence route is 14 recall points better
    /// at 2000 characters, and `section` is below `topk`).
    pub sections: bool,
    /// How many of the best hits' documents are looked at for headings (default 3).
    pub structure_hits: usize,
    /// Whether passage questions go to `rse` also when one of those documents has
    /// headings (default false: they take the sentence route there, where each section
    /// holds one topic; on technical documentation `rse` loses 27 recall points to it).
    pub rse_over_headings: bool,
    /// Whether pinpoint questions go to `rse` too when one of those documents is a
    /// conversation transcript and none has headings (default true): at least 60 % of
    /// its first 200 lines are speaker turns (`Project Manager: …`, `Mr. Paul Manly
    /// (Nanaimo, GP): …`) of two or more speakers. In a conversation a fact comes out
    /// over several turns.
    pub dialogue: bool,
    /// Whether a pinpoint question whose best hits gather in one section takes that
    /// section whole before its best sentences (the extent step, see the module docs; default true).
    pub extent: bool,
    /// How many of the best hits the extent step reads (default 3; 5 and 10 measured).
    pub extent_hits: usize,
    /// How many of them must lie in one section for it to be taken whole (default 2).
    pub extent_min: usize,
    /// The largest share of the budget, in (0, 1], the section may take (default 1: a
    /// section that fits is taken; 0.5, the first default, lost 2.8 recall points at
    /// 2000 characters on long documentation answers and gained nothing elsewhere).
    pub extent_share: f32,
    /// When the section holding the best hits is too long to be taken whole: the largest
    /// distance, in chunks, from the best hit to another of the best `extent_hits` hits in
    /// that section for the run of chunks between them to be taken first (default 0:
    /// never; 1 gains 1.9 recall points at 2000 characters on long documentation answers
    /// and loses 0.6 on one-paragraph ones, docs/EVAL.md).
    pub extent_run: usize,
    /// Whether the sections a pinpoint question names by their heading ("the statement of
    /// cash flows", "the balance sheet") join the sentence route's candidates, in the best
    /// hits' documents, when retrieval did not reach them and they are at most 8 chunks
    /// (default true; see the module documentation).
    pub named: bool,
    /// With `named`: whether a named section some of whose chunks retrieval did reach is
    /// taken too when it is mostly rows of figures (a statement), its reached chunks
    /// raised to the value of their document's best hit (default true; false leaves
    /// every reached section as retrieval ranked it).
    pub named_reached: bool,
    /// Whether a long pinpoint question (at least `long_segment_terms` distinct terms) on the
    /// sentence route takes `rse`'s best segment first, before the extent step and the
    /// sentences, unless it names a section (default true; see the module
    /// documentation): a question that asks several things at once is answered by a
    /// passage, which the best run of relevant chunks holds whole where its best
    /// sentences are scattered over it.
    pub long_segment: bool,
    /// The largest share of the budget, in (0, 1], the segment of long questions may
    /// take (default 0.9; a longer best segment is not taken at all, so the sentences
    /// keep a tenth of the budget; 0.75, 0.8 and 1 measured).
    pub long_segment_share: f32,
    /// The fewest chunks the segment of long questions must span (default 2: a run of
    /// relevant chunks; one chunk is read better by the sentence route; 3 measured).
    pub long_segment_min_chunks: usize,
    /// The fewest distinct terms (function words aside) a question needs for the segment
    /// step (default 14, as `topk.long_terms`; 11 gains 1.9 recall points at 2000
    /// characters on long documentation answers and loses 2.2 on contracts, where the
    /// answer is a clause: docs/EVAL.md).
    pub long_segment_terms: usize,
    /// The shortest piece, in characters, a route may add on its own (default 80): a
    /// shorter range is taken only where it joins a piece (a document's closing words,
    /// a heading, a label alone are left out; 0: any length).
    pub min_piece_chars: usize,
    /// On the sentence route, the context holds at most this many characters per token
    /// of budget besides the tokens themselves (default 4, about what one token of
    /// English is in the tokenizers of common LLMs, so a context fits them too and a
    /// reader measuring it in characters gets what was asked; 0: tokens alone bound it).
    pub chars_per_token: f32,
}

impl Default for AutoParams {
    fn default() -> Self {
        AutoParams {
            rse: RseParams::default(),
            section: SectionParams::default(),
            topk: TopkParams::sentences(),
            sections: false,
            structure_hits: 3,
            rse_over_headings: false,
            dialogue: true,
            extent: true,
            extent_hits: 3,
            extent_min: 2,
            extent_share: 1.0,
            extent_run: 0,
            named: true,
            named_reached: true,
            long_segment: true,
            long_segment_share: 0.9,
            long_segment_min_chunks: 2,
            long_segment_terms: 14,
            min_piece_chars: 80,
            chars_per_token: 4.0,
        }
    }
}

impl AutoParams {
    /// Valid inner parameters, `structure_hits`, `extent_hits` and `extent_min` ≥ 1,
    /// `extent_share` in (0, 1].
    pub fn validate(&self) -> Result<(), ContextError> {
        self.rse.validate()?;
        self.section.validate()?;
        self.topk.validate()?;
        check_min("auto", "structure_hits", self.structure_hits, 1)?;
        check_min("auto", "extent_hits", self.extent_hits, 1)?;
        check_min("auto", "extent_min", self.extent_min, 1)?;
        check_range("auto", "chars_per_token", self.chars_per_token, 0.0, 1000.0)?;
        check_range(
            "auto",
            "extent_share",
            self.extent_share,
            f32::MIN_POSITIVE,
            1.0,
        )?;
        check_range(
            "auto",
            "long_segment_share",
            self.long_segment_share,
            f32::MIN_POSITIVE,
            1.0,
        )
    }
}

/// Words that mark a passage question: what people said, discussed, thought or decided,
/// or a request to summarise. Matched as whole lower-cased words. A request to explain
/// or describe is not one: it asks about a subject, whose answer in documentation is a
/// paragraph or two that the sentence route finds (on the documentation with its
/// headings blanked, recall at 2000 characters on `rse` against sentences: 5 explain
/// questions 0.40 against 0.84, 3 describe 0.67 against 0.85, 1 overview 0 against 0.26;
/// the one such question in QMSum scores 0 on both).
const PASSAGE_CUES: &[&str] = &[
    "summarize",
    "summarise",
    "summary",
    "summarized",
    "discuss",
    "discussed",
    "discussing",
    "discussion",
    "discussions",
    "talk",
    "talked",
    "talking",
    "think",
    "thought",
    "thinks",
    "opinion",
    "opinions",
    "say",
    "said",
    "says",
    "view",
    "views",
    "decide",
    "decided",
    "decision",
    "decisions",
    "debate",
    "debated",
    "argue",
    "argued",
    "propose",
    "proposed",
    "suggest",
    "suggested",
    "feel",
    "felt",
];

/// The strategy a query is routed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Rse,
    Section,
    Topk,
}

/// The route for `req` and the reason, in words.
fn route(p: &AutoParams, req: &AssembleRequest<'_>) -> (Route, String) {
    let cue = req
        .query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .find(|w| PASSAGE_CUES.contains(&w.as_str()));
    // The first of the best hits' documents (the first `structure_hits` distinct ones)
    // that has headings.
    let mut docs: Vec<u32> = Vec::new();
    for h in req.hits {
        if docs.len() == p.structure_hits {
            break;
        }
        if !docs.contains(&h.key.doc) {
            docs.push(h.key.doc);
        }
    }
    let structured = docs
        .iter()
        .filter_map(|&d| req.corpus.document(d))
        .find(|doc| doc.sections.len() >= 2)
        .map(|doc| doc.id.as_str());
    if let Some(cue) = cue {
        match structured {
            Some(id) if !p.rse_over_headings => {
                return (
                    Route::Topk,
                    format!("passage question (cue {cue:?}) over headings in {id:?}: topk (best sentences)"),
                );
            }
            _ => return (Route::Rse, format!("passage question (cue {cue:?}): rse")),
        }
    }
    if p.dialogue && structured.is_none() {
        let memo = Memo::of(req.corpus);
        if let Some(doc) = docs
            .iter()
            .filter_map(|&d| req.corpus.document(d))
            .find(|doc| memo.is_dialogue(doc))
        {
            return (
                Route::Rse,
                format!("pinpoint question over the conversation {:?}: rse", doc.id),
            );
        }
    }
    if p.sections {
        if let Some(id) = structured {
            return (
                Route::Section,
                format!("pinpoint question, headings in {id:?}: section"),
            );
        }
    }
    (
        Route::Topk,
        if p.sections {
            "pinpoint question, no headings in the top documents: topk".to_string()
        } else {
            "pinpoint question: topk (best sentences)".to_string()
        },
    )
}

impl Assembler for AutoParams {
    fn budget(&self, req: &AssembleRequest<'_>) -> usize {
        // Routing reads the query and the top documents (the conversation check scans
        // their first lines); it runs again in `assemble`, so skip it here when every
        // route has the same budget (the defaults: no route caps it).
        let (rse, section, topk) = (
            self.rse.budget(req),
            self.section.budget(req),
            self.topk.budget(req),
        );
        if rse == section && section == topk {
            return rse;
        }
        match route(self, req).0 {
            Route::Rse => rse,
            Route::Section => section,
            Route::Topk => topk,
        }
    }

    fn assemble(
        &self,
        hits: &[RHit],
        req: &AssembleRequest<'_>,
        sel: &mut Selection<'_>,
        notes: &mut Vec<String>,
    ) -> Result<(), ContextError> {
        let (r, why) = route(self, req);
        notes.push(format!("auto: {why}"));
        sel.min_chars = self.min_piece_chars;
        // The bound of characters is the sentence route's: `rse` and `section` hand
        // over runs of whole chunks, which a reader cut at the budget still reads in
        // part, where a run refused for a few characters is lost whole.
        if self.chars_per_token > 0.0 && r == Route::Topk {
            sel.max_chars = (req.budget as f64 * f64::from(self.chars_per_token)) as usize;
        }
        let long = self.long_segment
            && r == Route::Topk
            && self.topk.unit == TopkUnit::Sentence
            && is_long(req.query, self.long_segment_terms);
        // The sections the query names, worked out once for both steps that read them.
        let named = if long || (r == Route::Topk && self.named) {
            named_in_top_documents(self, hits, req)
        } else {
            Vec::new()
        };
        if long {
            if named.iter().any(|(_, sections)| !sections.is_empty()) {
                notes.push("auto: long question naming a section: no segment first".to_string());
            } else {
                notes.push(long_segment(self, hits, req, sel)?);
            }
        }
        if self.extent && r == Route::Topk {
            if let Some(note) = extent(self, hits, req, sel) {
                notes.push(note);
            }
        }
        match r {
            Route::Rse => self.rse.assemble(hits, req, sel, notes),
            Route::Section => self.section.assemble(hits, req, sel, notes),
            Route::Topk if self.named => {
                let (pool, added, note) = with_named_sections(self, hits, &named, req);
                notes.extend(note);
                let topk = TopkParams {
                    pool: self.topk.pool + added,
                    ..self.topk
                };
                topk.assemble(&pool, req, sel, notes)
            }
            Route::Topk => self.topk.assemble(hits, req, sel, notes),
        }
    }
}
