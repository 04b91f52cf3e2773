//! The toolbox every strategy shares: resolved hits, the budgeted [`Selection`] of
//! pieces, and the [`Assembler`] interface a strategy's parameters implement.
//!
//! The [`Selection`] is what keeps the guarantees documented on
//! [`assemble`](fn@crate::assemble) (exact slices, merged non-overlapping pieces, exact
//! token budget, deterministic order): strategies only decide which ranges to offer it and
//! in which order.

use std::collections::{BTreeMap, BTreeSet};

use excerpt_core::{
    header_text, shown_section, shown_title, ChunkKey, Document, SectionId, TextRange,
};

use crate::context::{AssembleRequest, Corpus, LlmTokens, Piece, PieceOrder};
use crate::error::ContextError;
use crate::near::chunk_near;

/// How a strategy assembles: implemented by each strategy's parameter struct and called by
/// [`assemble`](fn@crate::assemble) after the parameters were validated and the hits
/// resolved.
pub(crate) trait Assembler {
    /// The budget the strategy assembles within (default: the request's budget).
    fn budget(&self, req: &AssembleRequest<'_>) -> usize {
        req.budget
    }

    /// Offers the strategy's candidates for `hits` (resolved, non-empty) to `sel`, within
    /// the budget `sel` was created with, and says what it decided in `notes`.
    fn assemble(
        &self,
        hits: &[RHit],
        req: &AssembleRequest<'_>,
        sel: &mut Selection<'_>,
        notes: &mut Vec<String>,
    ) -> Result<(), ContextError>;
}

/// A hit checked against the corpus; `rank` is its position in the deduplicated list.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RHit {
    pub key: ChunkKey,
    pub score: f32,
    pub relevance: f32,
    /// [`Hit::score_relevance`](crate::Hit), or `relevance`, clamped to [0, 1].
    pub score_relevance: f32,
    pub rank: usize,
    /// False for a chunk a strategy added to the candidates itself (`auto`'s named
    /// sections): it is never reported as a hit of a piece.
    pub retrieved: bool,
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
        let score_relevance = h.score_relevance.unwrap_or(h.relevance);
        for (what, value) in [
            ("score", h.score),
            ("relevance", h.relevance),
            ("score_relevance", score_relevance),
        ] {
            if !value.is_finite() {
                return Err(ContextError::InvalidHit { index, what, value });
            }
        }
        if seen.insert(h.key) {
            out.push(RHit {
                key: h.key,
                score: h.score,
                relevance: h.relevance.clamp(0.0, 1.0),
                score_relevance: score_relevance.clamp(0.0, 1.0),
                rank: out.len(),
                retrieved: true,
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
    /// Tokens of the section line the run's piece is shown with
    /// ([`HeaderCount::section_cost`]).
    header: usize,
}

/// In [`PieceOrder::Score`], the share of the stronger score the weaker of two runs on
/// consecutive lines needs for them to merge (measured in docs/EVAL.md: 1.0 gives the
/// same recall with twice the pieces on documentation, 0.7 and below lose recall on
/// contracts).
pub(crate) const LINE_JOIN_SHARE: f32 = 0.8;

/// The pieces chosen so far, per document, with exact token accounting.
///
/// Runs of a document are kept sorted, disjoint and non-touching. Adding a range merges
/// it with every run it overlaps or touches and counts the merged text's tokens, so the
/// running total is always the exact total of the final pieces.
///
/// In [`PieceOrder::Score`] (set before anything is added) runs may touch where a line
/// ends: a range and a run on consecutive lines merge only when the weaker score is at
/// least [`LINE_JOIN_SHARE`] of the stronger, so a reader who stops early has read the
/// best lines, not the weaker lines that one good sentence would otherwise carry to the
/// front; lines worth about as much stay one piece. Overlapping ranges always merge.
#[derive(Clone)]
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
    /// How [`Selection::into_pieces`] orders the pieces.
    pub order: PieceOrder,
    /// Largest gap, in characters, that an added range bridges to a run of the same
    /// section (0: none; see [`Selection::try_add`]).
    pub bridge: usize,
    /// In [`PieceOrder::Score`], the share of the stronger score the weaker of two runs
    /// on consecutive lines needs for them to merge ([`LINE_JOIN_SHARE`] unless a
    /// strategy sets it).
    pub join_share: f32,
    /// A range that would be a piece of its own (it touches no chosen run) shorter than
    /// this many characters is refused, unless it is its whole document: a heading, a
    /// sign-off or a label alone tells the reader nothing (0: any length).
    pub min_chars: usize,
    /// The most characters all pieces may hold together (0: no bound besides the
    /// tokens), so that a context also fits tokenizers less thrifty than the budget's.
    pub max_chars: usize,
    /// Characters of the runs.
    used_chars: usize,
    /// Whether and how each piece's header is counted inside the budget.
    pub headers: HeaderCount,
}

/// Counts the headers of the pieces inside the budget when [`HeaderCount::on`]
/// ([`AssembleRequest::count_headers`]), as the rendered context shows them: a
/// document's title once, in the line that opens its pieces, and each piece's section
/// path in its own line; both cut as every rendering shows them ([`header_text`]).
#[derive(Clone, Default)]
pub(crate) struct HeaderCount {
    pub on: bool,
    /// Tokens of each section path line, per (document position, section).
    sections: BTreeMap<(u32, Option<SectionId>), usize>,
    /// Tokens of the title line of each document a piece is chosen from.
    titles: BTreeMap<u32, usize>,
}

impl HeaderCount {
    /// Tokens of the section line a piece covering `range` of document `doc` (position
    /// `doc_idx`) is shown with; 0 when headers are not counted.
    fn section_cost(
        &mut self,
        counter: &dyn LlmTokens,
        doc_idx: u32,
        doc: &Document,
        range: TextRange,
    ) -> usize {
        if !self.on {
            return 0;
        }
        let id = piece_section_id(doc, range);
        *self
            .sections
            .entry((doc_idx, id))
            .or_insert_with(|| counter.count(&header_text("", &piece_section(doc, range))))
    }

    /// Tokens of the title line of document `doc` (position `doc_idx`) when no piece of
    /// it is chosen yet, else 0 (and 0 when headers are not counted).
    fn title_cost(&self, counter: &dyn LlmTokens, doc_idx: u32, doc: &Document) -> usize {
        if !self.on || self.titles.contains_key(&doc_idx) {
            return 0;
        }
        counter.count(&header_text(&doc.title, ""))
    }

    /// The costs of a piece covering `range`: its section line, and the title line
    /// when it is its document's first ([`Self::section_cost`], [`Self::title_cost`]).
    fn costs(
        &mut self,
        counter: &dyn LlmTokens,
        doc_idx: u32,
        doc: &Document,
        range: TextRange,
    ) -> (usize, usize) {
        let section = self.section_cost(counter, doc_idx, doc, range);
        (section, self.title_cost(counter, doc_idx, doc))
    }

    /// Records that a piece of document `doc_idx` is chosen, its title line costing
    /// `title` tokens (when it is the document's first).
    fn chosen(&mut self, doc_idx: u32, title: usize) {
        if self.on {
            self.titles.entry(doc_idx).or_insert(title);
        }
    }

    /// Header tokens of the pieces chosen: `sections` of the runs, plus the titles.
    fn total(&self, sections: usize) -> usize {
        sections + self.titles.values().sum::<usize>()
    }
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
            order: PieceOrder::Document,
            bridge: 0,
            join_share: LINE_JOIN_SHARE,
            min_chars: 0,
            max_chars: 0,
            used_chars: 0,
            headers: HeaderCount::default(),
        }
    }

    /// Header tokens of the pieces chosen so far (0 unless headers are counted): with
    /// their texts' tokens, what the budget holds.
    pub fn header_tokens(&self) -> usize {
        self.headers
            .total(self.runs.values().flatten().map(|r| r.header).sum())
    }

    pub fn is_empty(&self) -> bool {
        self.runs.values().all(Vec::is_empty)
    }

    /// The chunks the runs cover, per run: (document position, first, last chunk
    /// ordinal), in document order.
    pub fn run_chunks(&self) -> Vec<(u32, usize, usize)> {
        let mut out = Vec::new();
        for (&d, runs) in &self.runs {
            let Some(doc) = self.corpus.document(d) else {
                continue;
            };
            for r in runs {
                let (first, last) = chunks_of(doc, r.range);
                out.push((d, first, last));
            }
        }
        out
    }

    /// Whether `range` of document `doc_idx` overlaps a run already chosen.
    pub fn overlaps(&self, doc_idx: u32, range: TextRange) -> bool {
        self.runs.get(&doc_idx).is_some_and(|runs| {
            let i = runs.partition_point(|r| r.range.byte_end <= range.byte_start);
            runs.get(i)
                .is_some_and(|r| r.range.byte_start < range.byte_end)
        })
    }

    /// How many pieces are chosen so far.
    pub fn pieces(&self) -> usize {
        self.runs.values().map(Vec::len).sum()
    }

    /// Characters left under [`Selection::max_chars`] (`None`: no bound).
    pub fn remaining_chars(&self) -> Option<usize> {
        (self.max_chars > 0).then(|| self.max_chars.saturating_sub(self.used_chars))
    }

    /// Budget left.
    pub fn remaining(&self) -> usize {
        self.budget.saturating_sub(self.used)
    }

    /// Adds `range` of document `doc` (position `doc_idx`) if the merged result fits the
    /// budget; returns whether it was added. `hits` are hit chunk ordinals inside it.
    ///
    /// With [`Selection::bridge`] above 0, runs at most that many characters away, in
    /// the same section (documents without headings have none), worth at least
    /// [`LINE_JOIN_SHARE`] of the range or the range of them, are merged with it too,
    /// the text between them included, so nearby selections of one explanation read as
    /// one passage; when that does not fit, the range is added as without bridging.
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
        if self.bridge > 0 {
            let (rejected, smallest) = (self.rejected, self.smallest_rejected);
            if self.add(doc_idx, doc, range, score, relevance, hits, self.bridge) {
                return true;
            }
            (self.rejected, self.smallest_rejected) = (rejected, smallest);
        }
        self.add(doc_idx, doc, range, score, relevance, hits, 0)
    }

    /// [`Selection::try_add`] with a given bridge.
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        doc_idx: u32,
        doc: &Document,
        range: TextRange,
        score: f32,
        relevance: f32,
        hits: &[u32],
        bridge: usize,
    ) -> bool {
        // In score order a run ends at a line break unless the text of the next line is
        // worth nearly as much (see the type's documentation).
        let by_score = self.order == PieceOrder::Score;
        let share = self.join_share;
        let apart = |at: usize, run: f32| {
            by_score
                && at > 0
                && doc.text.as_bytes()[at - 1] == b'\n'
                && score.min(run) < share * score.max(run)
        };
        let runs = self.runs.entry(doc_idx).or_default();
        let lo = runs.partition_point(|r| {
            r.range.byte_end < range.byte_start
                || (r.range.byte_end == range.byte_start && apart(range.byte_start, r.score))
        });
        let hi = runs.partition_point(|r| {
            r.range.byte_start < range.byte_end
                || (r.range.byte_start == range.byte_end && !apart(range.byte_end, r.score))
        });
        let (lo, hi) = if bridge > 0 {
            bridged(runs, doc, range, score, bridge, (lo, hi))
        } else {
            (lo, hi)
        };
        // A document shorter than the bound is a piece whole.
        let whole = range.byte_start == 0 && range.byte_end == doc.text.len();
        if lo == hi && range.char_len() < self.min_chars && !whole {
            return false;
        }
        let mut cover = range;
        let (mut old_tokens, mut old_chars) = (0, 0);
        for r in &runs[lo..hi] {
            cover = cover.cover(&r.range);
            // A run's header goes with it: what the merged run replaces.
            old_tokens += r.tokens + r.header;
            old_chars += r.range.char_len();
        }
        let (header, title) = self.headers.costs(self.counter, doc_idx, doc, cover);
        let chars = self.used_chars - old_chars + cover.char_len();
        if self.max_chars > 0 && chars > self.max_chars {
            self.rejected += 1;
            return false;
        }
        let same = hi == lo + 1 && cover == runs[lo].range;
        if !same {
            // Spans that provably cannot fit are rejected without an exact count (long
            // sections and whole documents are the expensive ones to count).
            let bound = self.counter.lower_bound(cover.slice(&doc.text)) + header + title;
            if self.used - old_tokens + bound > self.budget {
                self.rejected += 1;
                // The note about the smallest rejected candidate is only shown when
                // nothing was taken, and then it gives an exact count.
                if self.used == 0 && self.smallest_rejected.is_none_or(|t| bound < t) {
                    let exact = self.counter.count(cover.slice(&doc.text)) + header + title;
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
        let total = self.used - old_tokens + new_tokens + header + title;
        if total > self.budget {
            self.reject(new_tokens + header + title);
            return false;
        }
        let mut merged = Run {
            range: cover,
            score,
            relevance,
            hits: hits.iter().copied().collect(),
            tokens: new_tokens,
            header,
        };
        for r in runs.drain(lo..hi) {
            merged.score = merged.score.max(r.score);
            merged.relevance = merged.relevance.max(r.relevance);
            merged.hits.extend(r.hits);
        }
        runs.insert(lo, merged);
        self.headers.chosen(doc_idx, title);
        self.used = total;
        self.used_chars = chars;
        true
    }

    /// Counts a candidate that did not fit the budget, `needs` tokens with its header.
    fn reject(&mut self, needs: usize) {
        self.rejected += 1;
        self.smallest_rejected = Some(self.smallest_rejected.map_or(needs, |t| t.min(needs)));
    }

    /// The pieces in [`Selection::order`].
    pub fn into_pieces(self) -> Vec<Piece> {
        if self.order == PieceOrder::Score {
            let mut all: Vec<(u32, Piece)> = Vec::new();
            for (doc_idx, runs) in self.runs {
                let Some(doc) = self.corpus.document(doc_idx) else {
                    continue;
                };
                all.extend(runs.into_iter().map(|r| (doc_idx, make_piece(doc, r))));
            }
            // Stable sort: equal scores keep document position, then reading order.
            all.sort_by(|a, b| b.1.score.total_cmp(&a.1.score));
            return all.into_iter().map(|(_, p)| p).collect();
        }
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

/// The runs `lo..hi` (those a range worth `score` overlaps or touches) widened over the
/// runs [`Selection::bridge`] joins to it: at most `bridge` characters away, in the same
/// section, and worth at least [`LINE_JOIN_SHARE`] of `score` or `score` of them, so a
/// weak line is not carried to the front of a strong passage (the rule of lines that
/// touch).
fn bridged(
    runs: &[Run],
    doc: &Document,
    range: TextRange,
    score: f32,
    bridge: usize,
    (mut lo, mut hi): (usize, usize),
) -> (usize, usize) {
    let section = |byte: usize| section_at(doc, byte);
    // Whether `run` joins the text `near`, lying before it (`before`) or after it.
    let joins = |near: &TextRange, run: &Run, before: bool| {
        let (a, b) = if before {
            (&run.range, near)
        } else {
            (near, &run.range)
        };
        score.min(run.score) >= LINE_JOIN_SHARE * score.max(run.score)
            && b.char_start - a.char_end <= bridge
            && section(b.byte_start)
                .is_some_and(|s| section(a.byte_end.saturating_sub(1)) == Some(s))
    };
    let cover = runs[lo..hi].iter().fold(range, |c, r| c.cover(&r.range));
    let mut start = cover;
    while lo > 0 && joins(&start, &runs[lo - 1], true) {
        start = start.cover(&runs[lo - 1].range);
        lo -= 1;
    }
    let mut end = cover;
    while hi < runs.len() && joins(&end, &runs[hi], false) {
        end = end.cover(&runs[hi].range);
        hi += 1;
    }
    (lo, hi)
}

/// The innermost section of the chunk holding byte `at` of `doc` (`None` outside any).
fn section_at(doc: &Document, at: usize) -> Option<SectionId> {
    let i = chunk_near(doc, at, |c| c.range.byte_end <= at);
    doc.chunks.get(i).and_then(|c| c.section)
}

/// The first and last chunk ordinals `range` of `doc` overlaps.
fn chunks_of(doc: &Document, range: TextRange) -> (usize, usize) {
    let first = chunk_near(doc, range.byte_start, |c| {
        c.range.byte_end <= range.byte_start
    });
    let last = chunk_near(doc, range.byte_end, |c| c.range.byte_start < range.byte_end)
        .saturating_sub(1)
        .max(first);
    (first, last)
}

/// The section a piece covering `range` of `doc` starts in (its first chunk's).
fn piece_section_id(doc: &Document, range: TextRange) -> Option<SectionId> {
    let first = chunks_of(doc, range).0;
    doc.chunks.get(first).and_then(|c| c.section)
}

/// The section path a piece covering `range` of `doc` is shown with, cut as
/// [`shown_section`] cuts it.
fn piece_section(doc: &Document, range: TextRange) -> String {
    shown_section(&doc.section_path(piece_section_id(doc, range))).into_owned()
}

fn make_piece(doc: &Document, r: Run) -> Piece {
    let (first, last) = chunks_of(doc, r.range);
    let section = piece_section(doc, r.range);
    let (page_start, page_end) = pages_of(doc, r.range.byte_start, r.range.byte_end);
    Piece {
        doc_id: doc.id.clone(),
        title: shown_title(&doc.title).into_owned(),
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
        page_start,
        page_end,
    }
}

/// The 1-based pages holding the first and the last byte of `start..end`, for a
/// document with pages (`None`s otherwise).
fn pages_of(doc: &Document, start: usize, end: usize) -> (Option<u32>, Option<u32>) {
    if doc.pages.is_empty() {
        return (None, None);
    }
    let page = |at: usize| {
        let i = doc.pages.partition_point(|p| p.byte_end <= at);
        (i.min(doc.pages.len() - 1) + 1) as u32
    };
    let first = page(start);
    (
        Some(first),
        Some(page(end.saturating_sub(1).max(start)).max(first)),
    )
}
