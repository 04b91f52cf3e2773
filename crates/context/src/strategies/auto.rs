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
//!   speaker turns, [`is_dialogue`]) and none has headings, pinpoint questions go to
//!   `rse` too (`dialogue=false` turns this off): in a meeting a fact comes out over
//!   several turns, and on the meeting transcripts `rse` beats the sentence route on
//!   pinpoint questions by 4.6 recall points at 2000 characters.
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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use excerpt_core::Document;
use serde::{Deserialize, Serialize};

use crate::context::AssembleRequest;
use crate::error::{check_min, check_range, ContextError};
use crate::memo::Memo;
use crate::selection::{chunk_span, Assembler, RHit, Selection};
use crate::sentences::lexical::terms;
use crate::strategies::rse::{RseParams, RseUnit};
use crate::strategies::section::SectionParams;
use crate::strategies::statements::name_variants;
use crate::strategies::topk::{is_long, TopkParams, TopkUnit};

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

/// Documents whose [`is_dialogue`] a [`DialogueMemo`] keeps before it is emptied.
const DIALOGUE_DOCS: usize = 4096;

/// [`is_dialogue`] of documents by their content hash (with the text's length), kept
/// by the collection ([`crate::memo::Memo`]): the best hits' documents come back query
/// after query, and reading their first lines again was a tenth of a millisecond of a
/// question's assembly. The content hash covers the text, so a kept answer is the one
/// the text would give.
pub(crate) type DialogueMemo = HashMap<Box<str>, (usize, bool), foldhash::fast::RandomState>;

/// [`is_dialogue`] of `doc`'s text, remembered in `slot` by its content hash.
pub(crate) fn doc_is_dialogue(slot: &Mutex<Option<DialogueMemo>>, doc: &Document) -> bool {
    if doc.hash.is_empty() {
        return is_dialogue(&doc.text);
    }
    let lock = || slot.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&(len, answer)) = lock()
        .get_or_insert_with(Default::default)
        .get(doc.hash.as_str())
    {
        if len == doc.text.len() {
            return answer;
        }
    }
    let answer = is_dialogue(&doc.text);
    let mut memo = lock();
    let memo = memo.get_or_insert_with(Default::default);
    if memo.len() >= DIALOGUE_DOCS {
        memo.clear();
    }
    memo.insert(doc.hash.as_str().into(), (doc.text.len(), answer));
    answer
}

/// Lines of a document read to tell whether it is a conversation.
const DIALOGUE_LINES: usize = 200;

/// Whether `text` reads as a conversation transcript: of its first [`DIALOGUE_LINES`]
/// non-empty lines (at least 10), at least 60 % are speaker turns ([`speaker`]), and at
/// least two speakers take turns, each speaking at least twice on average. Contracts'
/// `Name:` and `Title:` lines and documentation's `Note:` lines are too few to count.
pub(crate) fn is_dialogue(text: &str) -> bool {
    let mut lines = 0usize;
    let mut turns = 0usize;
    let mut speakers: Vec<&str> = Vec::new();
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(DIALOGUE_LINES)
    {
        lines += 1;
        if let Some(label) = speaker(line) {
            turns += 1;
            if !speakers.contains(&label) {
                speakers.push(label);
            }
        } else if (lines - turns) * 10 > DIALOGUE_LINES * 4 {
            // More lines that are not turns than 40 % of the most lines read: the
            // turns can no longer make 60 % (a filing stops here, not at line 200).
            return false;
        }
    }
    lines >= 10 && turns * 10 >= lines * 6 && speakers.len() >= 2 && turns >= 2 * speakers.len()
}

/// The speaker's label when `line` is a turn: a label, a colon and a space, then the
/// words said. The label, parenthesised parts aside (`Mr. Paul Manly (Nanaimo, GP)`), is
/// one to five words of at most 40 characters, the first capitalised, with no sentence
/// punctuation (a period only closes an abbreviation of up to four letters such as
/// `Mr.`, `Hon.` or `Prof.`).
fn speaker(line: &str) -> Option<&str> {
    let (label, said) = line.split_once(": ")?;
    if said.trim().is_empty() || label.len() > 160 {
        return None;
    }
    let mut name = String::new();
    let mut depth = 0usize;
    for c in label.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.checked_sub(1)?,
            _ if depth == 0 => name.push(c),
            _ => {}
        }
    }
    let words: Vec<&str> = name.split_whitespace().collect();
    let plain = |w: &&str| match w.strip_suffix('.') {
        Some(abbr) => abbr.chars().count() <= 4 && !abbr.contains('.'),
        None => !w.contains(['.', ',', ';', '?', '!', '"']),
    };
    let ok = depth == 0
        && (1..=5).contains(&words.len())
        && name.trim().len() <= 40
        && name.trim_start().starts_with(char::is_uppercase)
        && words.iter().all(plain);
    ok.then_some(label)
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

/// The segment step of long questions (`long_segment`): `rse`'s best segment (at most
/// `rse.max_len_chunks` chunks; 4 and 8 measured against its 15), alone and without fill,
/// added first. Its score is the segment's value (a sum of chunk values,
/// mostly above any one sentence's), so it leads the context. Returns the note.
fn long_segment(
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
fn extent(
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
        .map_or(String::new(), |x| x.heading.clone());
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

/// Most chunks a section named by the query brings into the sentence route's pool: a
/// financial statement or a reference entry, from its heading down.
pub(crate) const NAMED_CHUNKS: usize = 8;

/// Share of a heading's term weight the query must carry for the heading to count as
/// named (see [`named_sections`]).
const NAMED_SHARE: f64 = 0.6;

/// Fewest headings of a document a word must appear in for a query to name a heading
/// without it (see [`named_sections`]).
const NAMED_GENERIC_DF: usize = 3;

/// Sections of `doc` whose heading the query names, best first (at most two): headings
/// of two or more terms of which the query holds at least two and at least
/// [`NAMED_SHARE`] of the weight, each term weighted by its rarity among the document's
/// headings (`ln(1 + headings / headings with the term)`), so the words every statement's
/// heading shares ("Condensed Consolidated Statements of …") count for little and the
/// ones that tell it apart ("Cash Flows", "Balance Sheets") for much. A question that
/// says "according to the balance sheet" names "Consolidated Balance Sheets" but not
/// "Off-Balance Sheet Arrangements"; one that says "statement" alone names nothing.
/// Numbers are no words of a name ("Dated as of May 26, 2023"). A heading whose
/// matched terms a better one holds too is passed over.
///
/// `queries` are the question's term sets: its own, then its variants (the same question
/// with a financial statement it names called by another of its names,
/// [`name_variants`]); each names up to two headings, the first query's come first, and
/// at most two are returned, without repeats. The document's heading terms and their
/// rarity are read once for all of them.
pub(crate) fn named_sections(
    memo: &Memo,
    queries: &[&BTreeSet<String>],
    doc: &Document,
) -> Vec<(usize, f64)> {
    let terms = memo.heading_terms(doc);
    let n = terms.headings.len() as f64;
    let weight = |t: &str| (1.0 + n / terms.df(t).max(1) as f64).ln();
    let mut out: Vec<(usize, f64)> = Vec::new();
    for query in queries {
        for (s, share) in named_by(query, &terms, &weight) {
            if out.len() < 2 && !out.iter().any(|(t, _)| *t == s) {
                out.push((s, share));
            }
        }
    }
    out
}

/// What [`named_sections`] reads of a document's headings, the same for every query:
/// each heading's terms (numbers left out) and, per term, the headings that hold it
/// (ascending).
#[derive(Debug)]
pub(crate) struct HeadingTerms {
    headings: Vec<BTreeSet<String>>,
    postings: HashMap<String, Vec<usize>>,
}

impl HeadingTerms {
    /// How many headings hold `term`.
    fn df(&self, term: &str) -> usize {
        self.postings.get(term).map_or(0, Vec::len)
    }
}

/// Headings' terms by the headings themselves (joined by NUL), kept by the collection
/// ([`crate::memo::Memo`]): a filing has hundreds of headings, and splitting them into
/// terms was 1.1 ms of a question's assembly (p50, financebench-dev). The key is the
/// text the terms come from, so a changed document never reads a wrong entry.
pub(crate) type HeadingMemo = HashMap<Box<str>, Arc<HeadingTerms>, foldhash::fast::RandomState>;

/// Documents whose heading terms a [`HeadingMemo`] keeps before it is emptied.
const HEADING_TERMS_DOCS: usize = 1024;

/// The heading terms of `doc`, from `slot` or worked out (and kept).
pub(crate) fn heading_terms(slot: &Mutex<Option<HeadingMemo>>, doc: &Document) -> Arc<HeadingTerms> {
    let mut key = String::new();
    for s in &doc.sections {
        key.push_str(&s.heading);
        key.push('\0');
    }
    let lock = || slot.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(found) = lock().as_ref().and_then(|m| m.get(key.as_str())) {
        return Arc::clone(found);
    }
    let headings: Vec<BTreeSet<String>> = doc
        .sections
        .iter()
        .map(|s| {
            terms(&s.heading)
                .into_iter()
                .filter(|t| t.chars().any(char::is_alphabetic))
                .collect()
        })
        .collect();
    let mut postings: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, h) in headings.iter().enumerate() {
        for t in h {
            postings.entry(t.clone()).or_default().push(i);
        }
    }
    let found = Arc::new(HeadingTerms { headings, postings });
    let mut memo = lock();
    let memo = memo.get_or_insert_with(HeadingMemo::default);
    if memo.len() >= HEADING_TERMS_DOCS {
        memo.clear();
    }
    memo.insert(key.into(), Arc::clone(&found));
    found
}

/// The headings of a document (`terms`, with term weights `weight`) that `query`
/// names, best first, at most two: [`named_sections`]' rule.
fn named_by(
    query: &BTreeSet<String>,
    terms: &HeadingTerms,
    weight: &dyn Fn(&str) -> f64,
) -> Vec<(usize, f64)> {
    // Only headings holding two of the query's terms can be named: found through the
    // terms' postings (a filing has hundreds of headings, a question a few terms), then
    // read in heading order as a scan of them all would.
    let mut held_terms: BTreeMap<usize, usize> = BTreeMap::new();
    for t in query {
        for &i in terms
            .postings
            .get(t.as_str())
            .map_or(&[][..], Vec::as_slice)
        {
            *held_terms.entry(i).or_default() += 1;
        }
    }
    let mut named: Vec<(f64, usize, BTreeSet<&String>, f64)> = Vec::new();
    for (i, h) in held_terms
        .into_iter()
        .filter(|&(_, n)| n >= 2)
        .map(|(i, _)| (i, &terms.headings[i]))
    {
        let matched: BTreeSet<&String> = h.iter().filter(|t| query.contains(*t)).collect();
        if h.len() < 2 || matched.len() < 2 {
            continue;
        }
        let total: f64 = h.iter().map(|t| weight(t)).sum();
        let held: f64 = matched.iter().map(|t| weight(t)).sum();
        // What the query leaves out must be the document's heading vocabulary
        // ("Consolidated", in every statement's heading), not the section's subject.
        let generic = h
            .iter()
            .filter(|t| !query.contains(*t))
            .all(|t| terms.df(t) >= NAMED_GENERIC_DF);
        if generic && held >= NAMED_SHARE * total {
            named.push((held, i, matched, held / total));
        }
    }
    named.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    // A heading whose matched words a better one also matched is not what the question
    // names ("Cash Flow Hedges" beside "Statements of Cash Flows").
    let mut out: Vec<(usize, BTreeSet<&String>, f64)> = Vec::new();
    for (_, i, matched, share) in named {
        if out.len() < 2 && !out.iter().any(|(_, m, _)| matched.is_subset(m)) {
            out.push((i, matched, share));
        }
    }
    out.into_iter().map(|(i, _, share)| (i, share)).collect()
}

/// Whether at least [`FIGURE_SHARE`] of the non-blank lines of `text` are rows of
/// figures (two or more numeric cells at the end, [`excerpt_core::trailing_figures`]):
/// a financial statement or a table of measurements, whose rows neither lexical search
/// nor the embedding rank by what they hold.
fn mostly_figures(text: &str) -> bool {
    let (mut lines, mut rows) = (0usize, 0usize);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        lines += 1;
        if excerpt_core::trailing_figures(line) >= 2 {
            rows += 1;
        }
    }
    lines > 0 && rows as f64 >= FIGURE_SHARE * lines as f64
}

/// Share of a section's lines that must be rows of figures for [`mostly_figures`].
const FIGURE_SHARE: f64 = 0.3;

/// The best hits' documents (at most `structure_hits`), in hit order.
fn top_documents<'h>(p: &AutoParams, hits: &'h [RHit]) -> Vec<&'h RHit> {
    let mut docs: Vec<&RHit> = Vec::new();
    for h in hits {
        if docs.len() == p.structure_hits {
            break;
        }
        if !docs.iter().any(|d| d.key.doc == h.key.doc) {
            docs.push(h);
        }
    }
    docs
}

/// The best hits' documents ([`top_documents`]), each with the sections the query names
/// by their headings ([`named_sections`]).
fn named_in_top_documents<'h>(
    p: &AutoParams,
    hits: &'h [RHit],
    req: &AssembleRequest<'_>,
) -> Vec<(&'h RHit, Vec<(usize, f64)>)> {
    let query: BTreeSet<String> = terms(req.query).into_iter().collect();
    let variants = name_variants(req.query, &query);
    let queries: Vec<&BTreeSet<String>> = std::iter::once(&query).chain(&variants).collect();
    let memo = Memo::of(req.corpus);
    top_documents(p, hits)
        .into_iter()
        .map(|best| {
            let sections = req
                .corpus
                .document(best.key.doc)
                .map_or_else(Vec::new, |doc| named_sections(&memo, &queries, doc));
            (best, sections)
        })
        .collect()
}

/// `hits` with the first [`NAMED_CHUNKS`] chunks of each section the query names in the
/// documents of the best `structure_hits` hits (`named`, from [`named_in_top_documents`])
/// inserted after the sentence route's pool, valued as the best hit of their document
/// (with `named_reached`, a reached section of figures too, its pool chunks raised to
/// that value); how many were inserted; and the note.
/// Lexical search and the embedding both miss a statement of figures asked about by
/// name (its rows share few words with the question), while the sentence route, once
/// the rows are candidates, finds the ones the question asks for.
fn with_named_sections(
    p: &AutoParams,
    hits: &[RHit],
    named: &[(&RHit, Vec<(usize, f64)>)],
    req: &AssembleRequest<'_>,
) -> (Vec<RHit>, usize, Option<String>) {
    let mut extra: Vec<RHit> = Vec::new();
    // Reached chunks of named sections, valued as the best hit of their document.
    let mut raised: Vec<RHit> = Vec::new();
    let mut named_headings: Vec<String> = Vec::new();
    for &(best, ref sections) in named {
        let Some(doc) = req.corpus.document(best.key.doc) else {
            continue;
        };
        for &(s, share) in sections {
            let range = doc.sections[s].range;
            let inside: Vec<&excerpt_core::Chunk> = doc
                .chunks
                .iter()
                .filter(|c| {
                    c.range.byte_start >= range.byte_start && c.range.byte_end <= range.byte_end
                })
                .collect();
            // Retrieval reached it already, or it is too long to be read as one unit.
            let reached = hits.iter().take(p.topk.pool).any(|h| {
                h.key.doc == best.key.doc && inside.iter().any(|c| c.ordinal == h.key.ordinal)
            });
            if inside.len() > NAMED_CHUNKS
                || (reached
                    && !(p.named_reached && mostly_figures(doc.sections[s].range.slice(&doc.text))))
            {
                continue;
            }
            named_headings.push(format!("{:?} ({share:.2})", doc.sections[s].heading));
            for c in inside {
                let key = excerpt_core::ChunkKey {
                    doc: best.key.doc,
                    ordinal: c.ordinal,
                };
                if let Some(h) = hits.iter().take(p.topk.pool).find(|h| h.key == key) {
                    raised.push(RHit {
                        key,
                        retrieved: h.retrieved,
                        ..*best
                    });
                } else if !extra.iter().any(|h| h.key == key) {
                    extra.push(RHit {
                        key,
                        retrieved: false,
                        ..*best
                    });
                }
            }
        }
    }
    if extra.is_empty() && raised.is_empty() {
        return (hits.to_vec(), 0, None);
    }
    let at = p.topk.pool.min(hits.len());
    let keys: BTreeSet<_> = extra.iter().map(|h| h.key).collect();
    let mut pool: Vec<RHit> = hits[..at]
        .iter()
        .map(|h| *raised.iter().find(|r| r.key == h.key).unwrap_or(h))
        .collect();
    let added = extra.len();
    pool.extend(extra);
    pool.extend(
        hits[at..]
            .iter()
            .filter(|h| !keys.contains(&h.key))
            .copied(),
    );
    let note = format!(
        "auto: the question names {}: {added} of their chunks join the candidates, {} reached by retrieval are valued as the best hit",
        named_headings
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", "),
        raised.len()
    );
    (pool, added, Some(note))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A document of `headings` only (all `named_sections` reads).
    fn headed(id: &str, headings: &[&str]) -> Document {
        let range = excerpt_core::TextRange {
            byte_start: 0,
            byte_end: 0,
            char_start: 0,
            char_end: 0,
        };
        Document {
            id: id.into(),
            title: id.into(),
            source: None,
            metadata: Default::default(),
            text: String::new().into(),
            hash: id.into(),
            sections: headings
                .iter()
                .map(|h| excerpt_core::Section {
                    heading: (*h).into(),
                    level: 1,
                    path: vec![(*h).into()],
                    range,
                    own: range,
                    parent: None,
                })
                .collect(),
            chunks: vec![],
            sentences: vec![],
            pages: vec![],
        }
    }

    #[test]
    fn remembered_heading_terms_belong_to_their_own_document() {
        let statements = [
            "Consolidated Statements of Operations",
            "Consolidated Balance Sheets",
            "Consolidated Statements of Cash Flows",
            "Off-Balance Sheet Arrangements",
        ];
        let a = headed("a", &statements);
        // Another filing, its statements in another order, and the first one changed
        // (same id, a heading fewer): each is read from its own headings.
        let mut reordered = statements;
        reordered.reverse();
        let b = headed("b", &reordered);
        let changed = headed("a", &statements[1..]);
        let query: BTreeSet<String> = terms("according to the consolidated balance sheets")
            .into_iter()
            .collect();
        let memo = Memo::default();
        for _ in 0..3 {
            assert_eq!(named_sections(&memo, &[&query], &a).first().map(|n| n.0), Some(1));
            assert_eq!(named_sections(&memo, &[&query], &b).first().map(|n| n.0), Some(2));
            assert_eq!(
                named_sections(&memo, &[&query], &changed).first().map(|n| n.0),
                Some(0)
            );
        }
    }

    #[test]
    fn statements_are_mostly_rows_of_figures() {
        assert!(mostly_figures(
            "Consolidated Balance Sheets\n\n(in millions)\nCash $ 3,604 $ 3,160\nInventories 2,981 3,545\n"
        ));
        assert!(!mostly_figures(
            "Liquidity\n\nCash rose to $3,604 million.\nWe expect more.\nInventories 2,981 3,545\nOutlook.\n"
        ));
        assert!(!mostly_figures(""));
    }

    #[test]
    fn remembered_dialogue_answers_are_the_texts() {
        use crate::sentences::lines_doc;
        let turns: String = (0..30)
            .map(|i| format!("{}: point {i}\n", ["Ann", "Bob"][i % 2]))
            .collect();
        let prose: String = (0..30).map(|i| format!("Remark number {i}.\n")).collect();
        let docs = [
            lines_doc(&turns, "dialogue-memo-a"),
            lines_doc(&prose, "dialogue-memo-b"),
            // Without a content hash: never remembered.
            lines_doc(&turns, ""),
            lines_doc(&prose, ""),
        ];
        let memo = Memo::default();
        for _ in 0..2 {
            for doc in &docs {
                assert_eq!(memo.is_dialogue(doc), is_dialogue(&doc.text), "{}", doc.hash);
            }
        }
        // A kept hash with a text of another length is read again.
        let changed = lines_doc(&prose, "dialogue-memo-a");
        assert!(!memo.is_dialogue(&changed));
    }

    #[test]
    fn conversations_are_told_from_labelled_lines() {
        let meeting: String = (0..30)
            .map(|i| format!("{}: we said {i} things\n", ["Grad G", "Professor E"][i % 2]))
            .collect();
        assert!(is_dialogue(&meeting));
        // Parliamentary labels: honorifics and affiliations in parentheses.
        let hansard: String = (0..30)
            .map(|i| {
                let who = [
                    "The Chair (Hon. Anthony Rota (Nipissing, Lib.))",
                    "Mr. Paul Manly (Nanaimo, GP)",
                    "Right Hon. Justin Trudeau (Prime Minister)",
                ][i % 3];
                format!("{who}: Thank you, {i}.\n")
            })
            .collect();
        assert!(is_dialogue(&hansard));
        // One speaker is a monologue; too few lines say nothing.
        // The 60 % of the first 200 lines, at the edge: 80 lines of prose then 120 turns
        // are a conversation; 81 then 119 are not (the reading stops at line 81).
        let opened = |prose: usize| -> String {
            (0..prose)
                .map(|i| format!("Opening remark number {i}.\n"))
                .chain((prose..200).map(|i| format!("{}: line {i}\n", ["Ann", "Bob"][i % 2])))
                .collect()
        };
        assert!(is_dialogue(&opened(80)));
        assert!(!is_dialogue(&opened(81)));
        let monologue: String = (0..30).map(|i| format!("Narrator: part {i}\n")).collect();
        assert!(!is_dialogue(&monologue));
        assert!(!is_dialogue("A: hi\nB: hello\nA: bye\n"));
        // A contract's signature block and a manual's notes are a minority of lines.
        let contract: String = (0..30)
            .map(|i| format!("{i}. The Receiving Party shall keep clause {i} secret.\n"))
            .chain(["Name: Jane Doe\n".into(), "Title: Director\n".into()])
            .collect();
        assert!(!is_dialogue(&contract));
        let manual: String = (0..30)
            .map(|i| match i % 4 {
                0 => format!("Note: option {i} is deprecated.\n"),
                _ => format!("The parser reads value {i}: see below.\n"),
            })
            .collect();
        assert!(!is_dialogue(&manual));
        // Sentences with a colon are not turns.
        for line in [
            "The following, as agreed: nothing",
            "In the event of a breach, the parties agree: to settle",
            "Note:",
            "lower case: text",
            "Six words before the colon here: text",
        ] {
            assert_eq!(speaker(line), None, "{line}");
        }
        assert_eq!(speaker("Dr. Who: yes"), Some("Dr. Who"));
        assert_eq!(
            speaker("Prof. Ada Lovelace: no"),
            Some("Prof. Ada Lovelace")
        );
        assert_eq!(speaker("Etc.etc. Someone: no"), None);
    }
}
