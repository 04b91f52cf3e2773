//! Metrics: pure functions over gold spans, returned pieces and timings.
//!
//! The coverage metrics ([`score_query`], [`summarize`], [`score_results`]) reproduce
//! the reference scorer (the Python script `tests/data/score_context.py`) exactly:
//!
//! - evidence and returned spans are unioned per document (overlaps and duplicates
//!   count once; touching spans merge; empty spans vanish);
//! - a piece whose document is unknown or whose range is not `0 <= start <= end <= len`
//!   counts as `bad_text` and is skipped; a piece whose `text` differs from the corpus
//!   slice counts as `bad_text` but is still scored;
//! - with a character budget, pieces are taken in order until the budget is used, the
//!   last one cut (`end = min(end, start + budget - used)`), and the first piece past the
//!   budget is still checked for bad text before scoring stops;
//! - `recall`, `hit`, `full` (≥ 90 % covered) are means over queries, `precision` is
//!   micro-averaged (all evidence characters returned / all characters returned),
//!   `chars` and `pieces` are means over queries; a query without a results line counts
//!   as `missing` and scores zero;
//! - with a maximum number of pieces K ([`Limits::max_pieces`], the scorer's
//!   `--max-pieces`), only the first K valid pieces count: the check stops before the
//!   (K+1)-th piece is looked at, so pieces after it are not checked for bad text either.
//!
//! How the context reads, over the pieces scored (within the budget and the maximum):
//!
//! - `piece_chars`: mean characters per piece (a piece cut by the budget counts as cut);
//! - `whole`: share of pieces that start cleanly ([`clean_start`]: at the text's start, a
//!   line's start, or after a sentence end and spaces) and end cleanly ([`clean_end`]: at
//!   the text's end, a line's end, or right after a sentence end), the end being the
//!   piece's real end even when the budget cut it;
//! - `tiny`: share of pieces under [`TINY_CHARS`] characters (as cut);
//! - `in_order`: share of pairs of pieces of one document (the earlier one given first)
//!   whose starts are in reading order (equal starts count as in order); 1 without pairs;
//! - `grouped`: share of contexts (queries with a piece scored) in which the pieces of
//!   each document come together, in one run; 1 without contexts.
//!
//! `piece_chars`, `whole` and `tiny` are micro-averaged over all pieces, `in_order`
//! over all pairs.
//!
//! Beyond the scorer: mean LLM [tokens](mean), [intra-piece coherence](intra_coherence),
//! [boundary coherence](boundary_coherence) and latency [percentiles](percentile).

use std::collections::HashMap;

use excerpt_core::CharIndex;
use serde::{Deserialize, Serialize};

use crate::format::{CorpusDoc, QueryLine, ResultLine, ResultPiece};

/// The corpus texts by document id, sliceable by character offsets. When ids repeat the
/// last document wins, as in the reference scorer.
#[derive(Debug, Clone, Default)]
pub struct CorpusTexts {
    docs: HashMap<String, CharIndex<'static>>,
}

impl CorpusTexts {
    /// From `(id, text)` pairs.
    pub fn new(docs: impl IntoIterator<Item = (String, String)>) -> CorpusTexts {
        CorpusTexts {
            docs: docs
                .into_iter()
                .map(|(id, text)| (id, CharIndex::owned(text)))
                .collect(),
        }
    }

    /// From corpus lines (texts are copied).
    pub fn from_corpus(docs: &[CorpusDoc]) -> CorpusTexts {
        CorpusTexts::new(docs.iter().map(|d| (d.id.clone(), d.text.clone())))
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// True when there is no document.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// A document's whole text.
    pub fn text(&self, id: &str) -> Option<&str> {
        self.docs.get(id).map(CharIndex::text)
    }

    /// A document's length in characters.
    pub fn char_len(&self, id: &str) -> Option<usize> {
        self.docs.get(id).map(CharIndex::char_len)
    }

    /// `text[start:end]` in characters, if the document exists and the range is valid.
    pub fn slice(&self, id: &str, start: usize, end: usize) -> Option<&str> {
        self.docs.get(id)?.slice_chars(start, end)
    }

    /// A piece `[start, end)` of a document starts and ends cleanly ([`clean_start`],
    /// [`clean_end`]); false when the document is unknown or the range invalid.
    pub fn is_whole(&self, id: &str, start: usize, end: usize) -> bool {
        let Some(doc) = self.docs.get(id) else {
            return false;
        };
        let text = doc.text();
        match (doc.byte_offset(start), doc.byte_offset(end)) {
            (Some(a), Some(b)) if a <= b => {
                clean_start(&text[..a]) && clean_end(&text[..b], &text[b..])
            }
            _ => false,
        }
    }

    /// The document ids (in no particular order).
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.docs.keys().map(String::as_str)
    }
}

/// Sorts and merges half-open spans: overlapping or touching spans become one, empty or
/// reversed spans are dropped.
pub fn union(spans: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut sorted = spans.to_vec();
    sorted.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(sorted.len());
    for (a, b) in sorted {
        if b <= a {
            continue;
        }
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Characters two sorted, disjoint span lists (as [`union`] returns) have in common.
pub fn overlap(xs: &[(i64, i64)], ys: &[(i64, i64)]) -> i64 {
    let (mut i, mut j, mut total) = (0, 0, 0);
    while i < xs.len() && j < ys.len() {
        let a = xs[i].0.max(ys[j].0);
        let b = xs[i].1.min(ys[j].1);
        total += b.saturating_sub(a).max(0);
        if xs[i].1 < ys[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

fn span_len(spans: &[(i64, i64)]) -> i64 {
    spans
        .iter()
        .fold(0i64, |acc, (a, b)| acc.saturating_add(b.saturating_sub(*a)))
}

/// Which of a context's pieces count: the reference scorer's `--budget-chars` and
/// `--max-pieces`. `None` or `Some(0)` means no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limits {
    /// Pieces are taken in order until this many characters are used, the last one cut.
    pub budget_chars: Option<usize>,
    /// Only the first this many (valid) pieces count.
    pub max_pieces: Option<usize>,
}

impl Limits {
    /// A character budget only.
    pub fn budget(budget_chars: Option<usize>) -> Limits {
        Limits {
            budget_chars,
            max_pieces: None,
        }
    }

    /// With at most `max_pieces` pieces.
    pub fn with_max_pieces(self, max_pieces: Option<usize>) -> Limits {
        Limits { max_pieces, ..self }
    }
}

/// Pieces shorter than this many characters count as `tiny` (a heading or a phrase
/// alone).
pub const TINY_CHARS: i64 = 80;

/// Characters that end a sentence for [`clean_start`] and [`clean_end`].
const SENTENCE_END: &str = ".!?;:";
/// Characters that may follow a sentence end (quotes, brackets, emphasis).
const CLOSERS: &str = "\"')]\u{201d}\u{2019}*`";

/// Python's `str.isspace` for one character (Unicode bidirectional class WS, B or S, or
/// category Zs): Rust's `char::is_whitespace` and the four information separators.
pub fn py_isspace(c: char) -> bool {
    matches!(
        c,
        '\t'..='\r'
            | '\u{1c}'..='\u{1f}'
            | ' '
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// A piece starting after `before` (the text before its start) starts cleanly: at the
/// text's start, at a line's start, or after a sentence end (optionally closed by quotes
/// or brackets) and at least one whitespace character of which all but the last read
/// back are spaces or tabs — `clean_start` of `score_context.py`.
pub fn clean_start(before: &str) -> bool {
    let mut back = before.chars().rev();
    let Some(prev) = back.next() else {
        return true;
    };
    if prev == '\n' {
        return true;
    }
    if !py_isspace(prev) {
        return false;
    }
    let mut cur = Some(prev);
    while matches!(cur, Some(' ' | '\t')) {
        cur = back.next();
    }
    if matches!(cur, None | Some('\n')) {
        return true;
    }
    while cur.is_some_and(|c| CLOSERS.contains(c)) {
        cur = back.next();
    }
    cur.is_some_and(|c| SENTENCE_END.contains(c))
}

/// A piece ending between `before` (the text up to its end) and `after` (the text from
/// its end) ends cleanly: at the text's end, at a line's end (before a newline, or after
/// one and spaces or tabs), or after a sentence end, optionally closed by quotes or
/// brackets and followed by spaces or tabs; a sentence end right before the piece's end
/// must be followed by whitespace (`3.5` is not an end) — `clean_end` of
/// `score_context.py`.
pub fn clean_end(before: &str, after: &str) -> bool {
    let next = after.chars().next();
    if matches!(next, None | Some('\n')) {
        return true;
    }
    let mut back = before.chars().rev();
    let mut cur = back.next();
    let mut skipped = false;
    while matches!(cur, Some(' ' | '\t')) {
        cur = back.next();
        skipped = true;
    }
    if matches!(cur, None | Some('\n')) {
        return true;
    }
    while cur.is_some_and(|c| CLOSERS.contains(c)) {
        cur = back.next();
        skipped = true;
    }
    cur.is_some_and(|c| SENTENCE_END.contains(c)) && (skipped || next.is_some_and(py_isspace))
}

/// The coverage of one query's gold evidence by its returned pieces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryScore {
    /// The query.
    pub query_id: String,
    /// No results line was given for the query.
    pub missing: bool,
    /// Gold evidence characters (union per document).
    pub evidence_chars: i64,
    /// Gold evidence characters returned.
    pub covered: i64,
    /// Characters returned (union per document, after the budget).
    pub returned: i64,
    /// Pieces scored (valid range, within the budget).
    pub pieces: usize,
    /// Pieces with an unknown document, an invalid range or a wrong `text`.
    pub bad_text: usize,
    /// Characters of the pieces scored (as cut by the budget; overlaps counted each
    /// time).
    pub piece_chars: i64,
    /// Pieces scored that start and end cleanly (by their real end).
    pub whole: usize,
    /// Pieces scored under [`TINY_CHARS`] characters (as cut).
    pub tiny: usize,
    /// Pairs of pieces scored of the same document.
    pub pairs: usize,
    /// Of those, the pairs in reading order (the later piece starts at or after the
    /// earlier one).
    pub ordered: usize,
    /// The pieces of each document come together; `None` when no piece was scored.
    pub grouped: Option<bool>,
}

impl QueryScore {
    /// Fraction of the evidence covered (0 without evidence).
    pub fn recall(&self) -> f64 {
        if self.evidence_chars > 0 {
            self.covered as f64 / self.evidence_chars as f64
        } else {
            0.0
        }
    }
    /// Some evidence covered.
    pub fn hit(&self) -> bool {
        self.covered > 0
    }
    /// At least 90 % of the evidence covered.
    pub fn full(&self) -> bool {
        self.recall() >= 0.9
    }
}

/// Scores one query. `pieces` is `None` when the results have no line for the query.
/// `budget_chars` of `None` or `Some(0)` means no budget.
pub fn score_query(
    query: &QueryLine,
    pieces: Option<&[ResultPiece]>,
    texts: &CorpusTexts,
    budget_chars: Option<usize>,
) -> QueryScore {
    score_query_limited(query, pieces, texts, Limits::budget(budget_chars))
}

/// Scores one query counting only the pieces within `limits` (`score_context.py
/// --budget-chars N --max-pieces K`). `pieces` is `None` when the results have no line
/// for the query.
pub fn score_query_limited(
    query: &QueryLine,
    pieces: Option<&[ResultPiece]>,
    texts: &CorpusTexts,
    limits: Limits,
) -> QueryScore {
    let budget = limits.budget_chars.filter(|&b| b > 0).map(|b| b as i64);
    let max_pieces = limits.max_pieces.filter(|&k| k > 0);
    let mut gold: HashMap<&str, Vec<(i64, i64)>> = HashMap::new();
    for e in &query.evidence {
        gold.entry(e.doc_id.as_str())
            .or_default()
            .push((e.start, e.end));
    }
    let mut got: HashMap<&str, Vec<(i64, i64)>> = HashMap::new();
    let (mut used, mut bad) = (0i64, 0usize);
    let (mut piece_chars, mut whole, mut tiny) = (0i64, 0usize, 0usize);
    // (document, start) of each piece scored, in order.
    let mut taken: Vec<(&str, i64)> = Vec::new();
    for p in pieces.unwrap_or(&[]) {
        if max_pieces.is_some_and(|k| taken.len() >= k) {
            break;
        }
        let (a, mut b) = (p.start, p.end);
        let len = texts.char_len(&p.doc_id);
        let valid = len.is_some_and(|n| 0 <= a && a <= b && b as u64 <= n as u64);
        if !valid {
            bad += 1;
            continue;
        }
        if let Some(t) = &p.text {
            if texts.slice(&p.doc_id, a as usize, b as usize) != Some(t.as_str()) {
                bad += 1;
            }
        }
        if let Some(budget) = budget {
            if used >= budget {
                break;
            }
            b = b.min(a + budget - used);
            used += b - a;
        }
        piece_chars += b - a;
        tiny += usize::from(b - a < TINY_CHARS);
        whole += usize::from(texts.is_whole(&p.doc_id, a as usize, p.end as usize));
        taken.push((p.doc_id.as_str(), a));
        got.entry(p.doc_id.as_str()).or_default().push((a, b));
    }
    let (mut pairs, mut ordered) = (0usize, 0usize);
    for (i, &(d1, a1)) in taken.iter().enumerate() {
        for &(d2, a2) in &taken[i + 1..] {
            if d1 == d2 {
                pairs += 1;
                ordered += usize::from(a2 >= a1);
            }
        }
    }
    let grouped = (!taken.is_empty()).then(|| {
        let mut runs: Vec<&str> = Vec::new();
        for (k, &(d, _)) in taken.iter().enumerate() {
            if k == 0 || taken[k - 1].0 != d {
                runs.push(d);
            }
        }
        let n = runs.len();
        runs.sort_unstable();
        runs.dedup();
        runs.len() == n
    });
    let (mut evidence_chars, mut covered) = (0, 0);
    for (doc, spans) in &gold {
        let g = union(spans);
        evidence_chars += span_len(&g);
        let r = got.get(doc).map(|s| union(s)).unwrap_or_default();
        covered += overlap(&g, &r);
    }
    let returned = got.values().map(|s| span_len(&union(s))).sum();
    QueryScore {
        query_id: query.id.clone(),
        missing: pieces.is_none(),
        evidence_chars,
        covered,
        returned,
        pieces: taken.len(),
        bad_text: bad,
        piece_chars,
        whole,
        tiny,
        pairs,
        ordered,
        grouped,
    }
}

/// The reference scorer's numbers for one results file.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CoverageSummary {
    /// Queries scored.
    pub queries: usize,
    /// Queries without a results line.
    pub missing: usize,
    /// Mean fraction of evidence characters covered.
    pub recall: f64,
    /// Fraction of queries with any evidence covered.
    pub hit: f64,
    /// Fraction of queries with ≥ 90 % of their evidence covered.
    pub full: f64,
    /// Evidence characters returned / characters returned, over all queries.
    pub precision: f64,
    /// Mean characters returned per query.
    pub chars: f64,
    /// Mean pieces per query.
    pub pieces: f64,
    /// Pieces whose text, document or range is wrong.
    pub bad_text: usize,
    /// Mean characters per piece (0 without pieces).
    #[serde(default)]
    pub piece_chars: f64,
    /// Share of pieces that start and end on a sentence or line boundary (0 without
    /// pieces).
    #[serde(default)]
    pub whole: f64,
    /// Share of pieces under [`TINY_CHARS`] characters (0 without pieces).
    #[serde(default)]
    pub tiny: f64,
    /// Share of same-document piece pairs given in reading order (1 without pairs).
    #[serde(default)]
    pub in_order: f64,
    /// Share of contexts whose pieces of each document come together (1 without
    /// contexts).
    #[serde(default)]
    pub grouped: f64,
}

impl CoverageSummary {
    /// Rounded as the reference scorer prints: 4 decimals, `chars` and `piece_chars` 1,
    /// `pieces` 2.
    pub fn rounded(&self) -> CoverageSummary {
        CoverageSummary {
            recall: round_to(self.recall, 4),
            hit: round_to(self.hit, 4),
            full: round_to(self.full, 4),
            precision: round_to(self.precision, 4),
            chars: round_to(self.chars, 1),
            pieces: round_to(self.pieces, 2),
            piece_chars: round_to(self.piece_chars, 1),
            whole: round_to(self.whole, 4),
            tiny: round_to(self.tiny, 4),
            in_order: round_to(self.in_order, 4),
            grouped: round_to(self.grouped, 4),
            ..*self
        }
    }
}

/// Rounds like Python's `round(x, digits)` (correctly rounded, ties to even on the exact
/// binary value), via Rust's exact decimal formatting.
pub fn round_to(x: f64, digits: usize) -> f64 {
    if !x.is_finite() {
        return x;
    }
    format!("{x:.digits$}").parse().unwrap_or(x)
}

/// Aggregates per-query scores into the scorer's summary (zeros for no query).
pub fn summarize(scores: &[QueryScore]) -> CoverageSummary {
    let n = scores.len();
    if n == 0 {
        return CoverageSummary::default();
    }
    let nf = n as f64;
    let covered: i64 = scores.iter().map(|s| s.covered).sum();
    let returned: i64 = scores.iter().map(|s| s.returned).sum();
    let pieces: usize = scores.iter().map(|s| s.pieces).sum();
    let per_piece = |x: f64| if pieces > 0 { x / pieces as f64 } else { 0.0 };
    let pairs: usize = scores.iter().map(|s| s.pairs).sum();
    let ordered: usize = scores.iter().map(|s| s.ordered).sum();
    let contexts = scores.iter().filter(|s| s.grouped.is_some()).count();
    let grouped = scores.iter().filter(|s| s.grouped == Some(true)).count();
    CoverageSummary {
        queries: n,
        missing: scores.iter().filter(|s| s.missing).count(),
        recall: scores.iter().map(QueryScore::recall).sum::<f64>() / nf,
        hit: scores.iter().filter(|s| s.hit()).count() as f64 / nf,
        full: scores.iter().filter(|s| s.full()).count() as f64 / nf,
        precision: if returned > 0 {
            covered as f64 / returned as f64
        } else {
            0.0
        },
        chars: returned as f64 / nf,
        pieces: pieces as f64 / nf,
        bad_text: scores.iter().map(|s| s.bad_text).sum(),
        piece_chars: per_piece(scores.iter().map(|s| s.piece_chars).sum::<i64>() as f64),
        whole: per_piece(scores.iter().map(|s| s.whole).sum::<usize>() as f64),
        tiny: per_piece(scores.iter().map(|s| s.tiny).sum::<usize>() as f64),
        in_order: if pairs > 0 {
            ordered as f64 / pairs as f64
        } else {
            1.0
        },
        grouped: if contexts > 0 {
            grouped as f64 / contexts as f64
        } else {
            1.0
        },
    }
}

/// Scores a whole results file the way `score_context.py` does: queries keyed by id
/// (a repeated id keeps its first position and its last definition), results keyed by
/// query id (the last line wins), results for unknown queries ignored.
pub fn score_results(
    texts: &CorpusTexts,
    queries: &[QueryLine],
    results: &[ResultLine],
    budget_chars: Option<usize>,
) -> (CoverageSummary, Vec<QueryScore>) {
    score_results_limited(texts, queries, results, Limits::budget(budget_chars))
}

/// [`score_results`] counting only the pieces within `limits` (`score_context.py
/// --budget-chars N --max-pieces K`).
pub fn score_results_limited(
    texts: &CorpusTexts,
    queries: &[QueryLine],
    results: &[ResultLine],
    limits: Limits,
) -> (CoverageSummary, Vec<QueryScore>) {
    let mut order: Vec<&str> = Vec::new();
    let mut by_id: HashMap<&str, &QueryLine> = HashMap::new();
    for q in queries {
        if by_id.insert(q.id.as_str(), q).is_none() {
            order.push(q.id.as_str());
        }
    }
    let got: HashMap<&str, &ResultLine> =
        results.iter().map(|r| (r.query_id.as_str(), r)).collect();
    let scores: Vec<QueryScore> = order
        .iter()
        .filter_map(|id| by_id.get(id))
        .map(|q| {
            let pieces = got.get(q.id.as_str()).map(|r| r.pieces.as_slice());
            score_query_limited(q, pieces, texts, limits)
        })
        .collect();
    (summarize(&scores), scores)
}

/// Arithmetic mean (`None` when empty).
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        None
    } else {
        Some(values.iter().sum::<f64>() / values.len() as f64)
    }
}

/// The `p`-th percentile (`p` in `[0, 100]`) with linear interpolation between closest
/// ranks (NumPy's default); `None` when empty. NaNs are ignored.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = (p.clamp(0.0, 100.0) / 100.0) * (v.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    Some(v[lo] + (v[hi] - v[lo]) * (rank - lo as f64))
}

/// Latency percentiles of a set of timings, in milliseconds, by [`percentile`]'s rule
/// (linear interpolation between closest ranks). The one latency summary of the
/// workspace: eval reports show p50, p95 and the mean; `excerpt bench` also p99.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Latency {
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Mean.
    pub mean_ms: f64,
}

/// p50, p95, p99 and mean of latencies in milliseconds (zeros when empty).
pub fn latency(ms: &[f64]) -> Latency {
    Latency {
        p50_ms: percentile(ms, 50.0).unwrap_or(0.0),
        p95_ms: percentile(ms, 95.0).unwrap_or(0.0),
        p99_ms: percentile(ms, 99.0).unwrap_or(0.0),
        mean_ms: mean(ms).unwrap_or(0.0),
    }
}

/// What the structural metrics need to know about a returned piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PieceSpan<'a> {
    /// Document id.
    pub doc_id: &'a str,
    /// Character offset of the start.
    pub start: usize,
    /// Character offset of the end (exclusive).
    pub end: usize,
    /// First chunk ordinal covered.
    pub first_chunk: u32,
    /// Last chunk ordinal covered (inclusive).
    pub last_chunk: u32,
}

/// Chunk vectors by document id and chunk ordinal.
pub trait ChunkVectors {
    /// The vector of a chunk, if known.
    fn chunk_vector(&self, doc_id: &str, ordinal: u32) -> Option<&[f32]>;
}

impl ChunkVectors for HashMap<(String, u32), Vec<f32>> {
    fn chunk_vector(&self, doc_id: &str, ordinal: u32) -> Option<&[f32]> {
        self.get(&(doc_id.to_string(), ordinal)).map(Vec::as_slice)
    }
}

pub use excerpt_core::cosine;

/// Mean pairwise cosine of the chunk vectors inside one piece; `None` when fewer than
/// two of its chunks have a vector.
pub fn piece_coherence(piece: &PieceSpan<'_>, vectors: &dyn ChunkVectors) -> Option<f64> {
    if piece.last_chunk <= piece.first_chunk {
        return None;
    }
    let vs: Vec<&[f32]> = (piece.first_chunk..=piece.last_chunk)
        .filter_map(|o| vectors.chunk_vector(piece.doc_id, o))
        .collect();
    if vs.len() < 2 {
        return None;
    }
    let (mut sum, mut pairs) = (0.0, 0usize);
    for i in 0..vs.len() {
        for j in i + 1..vs.len() {
            sum += cosine(vs[i], vs[j]);
            pairs += 1;
        }
    }
    Some(sum / pairs as f64)
}

/// Intra-piece coherence: [`piece_coherence`] averaged over the pieces spanning at least
/// two chunks (with vectors); `None` when there is none.
pub fn intra_coherence<'a>(
    pieces: impl IntoIterator<Item = PieceSpan<'a>>,
    vectors: &dyn ChunkVectors,
) -> Option<f64> {
    let values: Vec<f64> = pieces
        .into_iter()
        .filter_map(|p| piece_coherence(&p, vectors))
        .collect();
    mean(&values)
}

/// Sentence boundaries by document id: sorted character offsets where a piece may start
/// or end cleanly.
pub trait SentenceBoundaries {
    /// The sorted boundary offsets of a document, if known.
    fn boundaries(&self, doc_id: &str) -> Option<&[usize]>;
}

impl SentenceBoundaries for HashMap<String, Vec<usize>> {
    fn boundaries(&self, doc_id: &str) -> Option<&[usize]> {
        self.get(doc_id).map(Vec::as_slice)
    }
}

/// Boundary offsets from sentence ranges `(start, end)` in characters: every start, every
/// end, and every end with its trailing whitespace trimmed (sentences own the whitespace
/// after them, and a piece that stops before it still ends on the sentence).
pub fn sentence_boundaries(text: &str, sentences: &[(usize, usize)]) -> Vec<usize> {
    let mut out = Vec::with_capacity(sentences.len() * 3);
    let texts = CorpusTexts::new([(String::new(), text.to_string())]);
    for &(a, b) in sentences {
        out.push(a);
        out.push(b);
        if let Some(s) = texts.slice("", a, b) {
            let trailing = s.chars().rev().take_while(|c| c.is_whitespace()).count();
            out.push(b - trailing);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// True when both ends of `[start, end)` are boundaries.
pub fn on_boundaries(boundaries: &[usize], start: usize, end: usize) -> bool {
    boundaries.binary_search(&start).is_ok() && boundaries.binary_search(&end).is_ok()
}

/// Boundary coherence: the share of pieces (of documents with known boundaries) that
/// start and end on sentence boundaries; `None` when there is no such piece.
pub fn boundary_coherence<'a>(
    pieces: impl IntoIterator<Item = PieceSpan<'a>>,
    boundaries: &dyn SentenceBoundaries,
) -> Option<f64> {
    let (mut on, mut n) = (0usize, 0usize);
    for p in pieces {
        if let Some(b) = boundaries.boundaries(p.doc_id) {
            n += 1;
            on += usize::from(on_boundaries(b, p.start, p.end));
        }
    }
    (n > 0).then(|| on as f64 / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Evidence;

    fn texts() -> CorpusTexts {
        CorpusTexts::new([
            ("a".to_string(), "0123456789".repeat(10)),
            ("b".to_string(), "é😀x".repeat(10)),
        ])
    }

    fn q(id: &str, ev: &[(&str, i64, i64)]) -> QueryLine {
        QueryLine {
            id: id.into(),
            query: "?".into(),
            answer: None,
            evidence: ev
                .iter()
                .map(|&(d, s, e)| Evidence {
                    doc_id: d.into(),
                    start: s,
                    end: e,
                })
                .collect(),
            scope: None,
        }
    }

    fn p(t: &CorpusTexts, doc: &str, s: i64, e: i64) -> ResultPiece {
        ResultPiece {
            doc_id: doc.into(),
            start: s,
            end: e,
            text: t.slice(doc, s as usize, e as usize).map(str::to_string),
            score: Some(1.0),
            page_start: None,
            page_end: None,
        }
    }

    #[test]
    fn full_coverage() {
        let t = texts();
        let s = score_query(
            &q("q", &[("a", 10, 20)]),
            Some(&[p(&t, "a", 5, 25)]),
            &t,
            None,
        );
        assert_eq!((s.evidence_chars, s.covered, s.returned), (10, 10, 20));
        assert_eq!(s.recall(), 1.0);
        assert!(s.hit() && s.full() && !s.missing);
        let sum = summarize(&[s]);
        assert_eq!(sum.precision, 0.5);
        assert_eq!(sum.chars, 20.0);
        assert_eq!(sum.pieces, 1.0);
    }

    #[test]
    fn partial_overlap() {
        let t = texts();
        let s = score_query(
            &q("q", &[("a", 10, 20)]),
            Some(&[p(&t, "a", 15, 30)]),
            &t,
            None,
        );
        assert_eq!(s.covered, 5);
        assert_eq!(s.recall(), 0.5);
        assert!(s.hit() && !s.full());
        // 9 of 10 is full, 8.9 is not: exactly the >= 0.9 threshold.
        let s = score_query(
            &q("q", &[("a", 10, 20)]),
            Some(&[p(&t, "a", 11, 30)]),
            &t,
            None,
        );
        assert!(s.full());
        let s = score_query(
            &q("q", &[("a", 0, 100)]),
            Some(&[p(&t, "a", 11, 100)]),
            &t,
            None,
        );
        assert!(!s.full());
    }

    #[test]
    fn duplicate_and_overlapping_pieces_count_once() {
        let t = texts();
        let pieces = [
            p(&t, "a", 0, 10),
            p(&t, "a", 0, 10),
            p(&t, "a", 5, 15),
            p(&t, "a", 15, 20), // touches the previous one
        ];
        let s = score_query(
            &q("q", &[("a", 8, 12), ("a", 10, 14)]),
            Some(&pieces),
            &t,
            None,
        );
        assert_eq!(s.evidence_chars, 6);
        assert_eq!(s.covered, 6);
        assert_eq!(s.returned, 20);
        assert_eq!(s.pieces, 4);
        assert_eq!(
            union(&[(5, 15), (0, 10), (15, 20), (3, 3), (9, 2)]),
            vec![(0, 20)]
        );
    }

    #[test]
    fn budget_cuts_the_last_piece() {
        let t = texts();
        let pieces = [p(&t, "a", 0, 10), p(&t, "a", 50, 70), p(&t, "a", 80, 90)];
        let query = q("q", &[("a", 55, 70)]);
        // 10 + 15 = 25: the second piece is cut to [50, 65), the third is not reached.
        let s = score_query(&query, Some(&pieces), &t, Some(25));
        assert_eq!((s.returned, s.covered, s.pieces), (25, 10, 2));
        // Budget 0 means none.
        let s = score_query(&query, Some(&pieces), &t, Some(0));
        assert_eq!((s.returned, s.pieces), (40, 3));
        // Exactly used up: the next piece is checked for text, then scoring stops.
        let mut bad_next = pieces.clone();
        bad_next[1].text = Some("wrong".into());
        let s = score_query(&query, Some(&bad_next), &t, Some(10));
        assert_eq!((s.returned, s.pieces, s.bad_text), (10, 1, 1));
        // Budgets are characters, not bytes.
        let s = score_query(
            &q("q", &[("b", 0, 3)]),
            Some(&[p(&t, "b", 0, 30)]),
            &t,
            Some(2),
        );
        assert_eq!((s.returned, s.covered), (2, 2));
    }

    #[test]
    fn clean_boundaries() {
        // Starts: the text's start, a line's start, after a sentence end and blanks
        // (closers allowed), not mid-sentence nor right after the end mark.
        let starts = |t: &str| {
            let chars: Vec<usize> = t.char_indices().map(|(i, _)| i).chain([t.len()]).collect();
            chars
                .iter()
                .map(|&b| clean_start(&t[..b]))
                .collect::<Vec<_>>()
        };
        // "A. B\n C" offsets: A . ␠ B \n ␠ C end
        assert_eq!(
            starts("A. B\n C"),
            [true, false, false, true, false, true, true, false]
        );
        assert!(clean_start("said.\") \t"));
        assert!(
            !clean_start("said.\u{a0}"),
            "only spaces and tabs are skipped"
        );
        assert!(!clean_start("3."));
        // Ends: before a newline or at the end, after a sentence end followed by
        // whitespace or closed by closers or blanks; not inside "3.5".
        assert!(clean_end("whatever", ""));
        assert!(clean_end("line", "\nnext"));
        assert!(clean_end("One.", " Two"));
        assert!(clean_end("One.", "\u{1c}Two"), "Python's isspace");
        assert!(!clean_end("Ratio 3.", "5"));
        assert!(clean_end("(One.)", "x"));
        assert!(clean_end("One.  ", "Two"));
        assert!(clean_end("line\n  ", "x"));
        assert!(!clean_end("mid sentence", " here"));
        assert!(clean_end("", "x"));
    }

    #[test]
    fn readability_of_pieces() {
        let t = CorpusTexts::new([
            (
                "a".to_string(),
                "Title\nOne sentence here. Another one follows.".repeat(4),
            ),
            ("b".to_string(), "B text. More b text.".to_string()),
        ]);
        // [0, 5) "Title" whole and tiny; [6, 24) "One sentence here." whole;
        // [10, 130) mid-sentence at both ends, not tiny; the b piece interleaves.
        let pieces = [
            p(&t, "a", 6, 24),
            p(&t, "b", 0, 7),
            p(&t, "a", 0, 5),
            p(&t, "a", 10, 130),
        ];
        let s = score_query(&q("q", &[("a", 0, 10)]), Some(&pieces), &t, None);
        assert_eq!((s.pieces, s.whole, s.tiny, s.piece_chars), (4, 3, 3, 150));
        // a-pairs: (6, 0) out of order, (6, 10) and (0, 10) in order.
        assert_eq!((s.pairs, s.ordered, s.grouped), (3, 2, Some(false)));
        let sum = summarize(std::slice::from_ref(&s));
        assert_eq!((sum.whole, sum.tiny, sum.piece_chars), (0.75, 0.75, 37.5));
        assert!((sum.in_order - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(sum.grouped, 0.0);
        // Two pieces at most: one pair less, and grouped.
        let two = score_query_limited(
            &q("q", &[]),
            Some(&pieces),
            &t,
            Limits::default().with_max_pieces(Some(2)),
        );
        assert_eq!((two.pieces, two.pairs, two.grouped), (2, 0, Some(true)));
        // A budget of 10 cuts the first piece to 10 characters: tiny, and still whole
        // by its real end; the budget is used up, nothing else counts.
        let cut = score_query_limited(&q("q", &[]), Some(&pieces), &t, Limits::budget(Some(10)));
        assert_eq!(
            (cut.pieces, cut.whole, cut.tiny, cut.piece_chars),
            (1, 1, 1, 10)
        );
        // Invalid pieces do not count towards the maximum.
        let mut with_bad = pieces.to_vec();
        with_bad.insert(
            0,
            ResultPiece {
                end: 10_000,
                ..p(&t, "a", 0, 5)
            },
        );
        let two = score_query_limited(
            &q("q", &[]),
            Some(&with_bad),
            &t,
            Limits::default().with_max_pieces(Some(2)),
        );
        assert_eq!((two.pieces, two.bad_text), (2, 1));
        // No pieces: the shares of pairs and contexts default to 1.
        let none = summarize(&[score_query(&q("q", &[]), Some(&[]), &t, None)]);
        assert_eq!((none.whole, none.in_order, none.grouped), (0.0, 1.0, 1.0));
    }

    #[test]
    fn missing_query_scores_zero() {
        let t = texts();
        let queries = [q("q1", &[("a", 0, 10)]), q("q2", &[("a", 0, 10)])];
        let results = [ResultLine {
            query_id: "q1".into(),
            strategy: "topk".into(),
            pieces: vec![p(&t, "a", 0, 10)],
        }];
        let (sum, scores) = score_results(&t, &queries, &results, None);
        assert_eq!((sum.queries, sum.missing), (2, 1));
        assert!(scores[1].missing);
        assert_eq!(sum.recall, 0.5);
        assert_eq!(sum.hit, 0.5);
        assert_eq!(sum.chars, 5.0);
        assert_eq!(sum.precision, 1.0);
    }

    #[test]
    fn bad_text_is_counted() {
        let t = texts();
        let mut wrong = p(&t, "b", 0, 3);
        wrong.text = Some("é😀".into()); // the bytes-vs-characters mistake
        let pieces = [
            wrong,
            p(&t, "b", 3, 6),
            ResultPiece {
                doc_id: "zz".into(),
                start: 0,
                end: 1,
                text: None,
                score: None,
                page_start: None,
                page_end: None,
            },
            ResultPiece {
                doc_id: "a".into(),
                start: 5,
                end: 101,
                text: None,
                score: None,
                page_start: None,
                page_end: None,
            },
            ResultPiece {
                doc_id: "a".into(),
                start: 6,
                end: 5,
                text: None,
                score: None,
                page_start: None,
                page_end: None,
            },
            ResultPiece {
                doc_id: "a".into(),
                start: -1,
                end: 5,
                text: None,
                score: None,
                page_start: None,
                page_end: None,
            },
            ResultPiece {
                doc_id: "a".into(),
                start: 0,
                end: 100,
                text: None,
                score: None,
                page_start: None,
                page_end: None,
            },
        ];
        let s = score_query(&q("q", &[("b", 0, 6)]), Some(&pieces), &t, None);
        assert_eq!(s.bad_text, 5);
        // The piece with wrong text still counts; invalid ranges do not.
        assert_eq!(s.pieces, 3);
        assert_eq!(s.covered, 6);
        assert_eq!(s.returned, 106);
    }

    #[test]
    fn multi_document_evidence() {
        let t = texts();
        let query = q("q", &[("a", 0, 10), ("b", 0, 10), ("b", 5, 20)]);
        let pieces = [p(&t, "b", 0, 10), p(&t, "a", 0, 10)];
        let s = score_query(&query, Some(&pieces), &t, None);
        assert_eq!((s.evidence_chars, s.covered, s.returned), (30, 20, 20));
        assert!((s.recall() - 2.0 / 3.0).abs() < 1e-12);
        // Evidence in one document is not covered by the same offsets in another.
        let s = score_query(&query, Some(&[p(&t, "a", 10, 20)]), &t, None);
        assert_eq!(s.covered, 0);
        assert!(!s.hit());
    }

    #[test]
    fn repeated_ids_follow_the_reference_scorer() {
        let t = texts();
        let queries = [q("q", &[("a", 0, 10)]), q("q", &[("a", 50, 60)])];
        let r = |s, e| ResultLine {
            query_id: "q".into(),
            strategy: "x".into(),
            pieces: vec![p(&t, "a", s, e)],
        };
        let (sum, _) = score_results(&t, &queries, &[r(0, 10), r(50, 60)], None);
        assert_eq!(sum.queries, 1);
        assert_eq!(sum.recall, 1.0);
    }

    #[test]
    fn char_slicing_crosses_strides() {
        let text: String = "é😀ab".repeat(100);
        let t = CorpusTexts::new([("d".to_string(), text.clone())]);
        let chars: Vec<char> = text.chars().collect();
        for (a, b) in [
            (0, 0),
            (0, 400),
            (63, 65),
            (64, 128),
            (127, 399),
            (400, 400),
        ] {
            let want: String = chars[a..b].iter().collect();
            assert_eq!(t.slice("d", a, b), Some(want.as_str()));
        }
        assert_eq!(t.slice("d", 0, 401), None);
        assert_eq!(t.slice("d", 5, 4), None);
        assert_eq!(t.char_len("d"), Some(400));
    }

    #[test]
    fn rounding_matches_python() {
        assert_eq!(round_to(2.25, 1), 2.2);
        assert_eq!(round_to(2.675, 2), 2.67);
        assert_eq!(round_to(0.123456, 4), 0.1235);
        assert_eq!(round_to(1.0 / 3.0, 4), 0.3333);
    }

    #[test]
    fn percentiles_interpolate() {
        let v = [5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(percentile(&v, 50.0), Some(3.0));
        assert_eq!(percentile(&v, 95.0), Some(4.8));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&[], 50.0), None);
        let l = latency(&[2.0]);
        assert_eq!(
            (l.p50_ms, l.p95_ms, l.p99_ms, l.mean_ms),
            (2.0, 2.0, 2.0, 2.0)
        );
        let ms: Vec<f64> = (1..=101).map(f64::from).collect();
        let l = latency(&ms);
        assert_eq!(
            (l.p50_ms, l.p95_ms, l.p99_ms, l.mean_ms),
            (51.0, 96.0, 100.0, 51.0)
        );
        assert_eq!(latency(&[]), Latency::default());
    }

    #[test]
    fn coherence_within_pieces() {
        let mut vecs: HashMap<(String, u32), Vec<f32>> = HashMap::new();
        vecs.insert(("d".into(), 0), vec![1.0, 0.0]);
        vecs.insert(("d".into(), 1), vec![1.0, 0.0]);
        vecs.insert(("d".into(), 2), vec![0.0, 2.0]);
        let piece = |first, last| PieceSpan {
            doc_id: "d",
            start: 0,
            end: 1,
            first_chunk: first,
            last_chunk: last,
        };
        assert_eq!(piece_coherence(&piece(0, 1), &vecs), Some(1.0));
        // Pairs (0,1)=1, (0,2)=0, (1,2)=0.
        assert!((piece_coherence(&piece(0, 2), &vecs).unwrap() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(piece_coherence(&piece(1, 1), &vecs), None);
        // Single-chunk pieces are not averaged in.
        let c = intra_coherence([piece(0, 1), piece(2, 2), piece(1, 2)], &vecs).unwrap();
        assert!((c - 0.5).abs() < 1e-12);
        assert_eq!(intra_coherence([piece(2, 2)], &vecs), None);
    }

    #[test]
    fn boundaries_of_sentences() {
        let text = "One. Two two.  Three";
        // Sentences own the whitespace after them.
        let b = sentence_boundaries(text, &[(0, 5), (5, 15), (15, 20)]);
        assert_eq!(b, vec![0, 4, 5, 13, 15, 20]);
        let mut map = HashMap::new();
        map.insert("d".to_string(), b);
        let piece = |start, end| PieceSpan {
            doc_id: "d",
            start,
            end,
            first_chunk: 0,
            last_chunk: 0,
        };
        assert!(on_boundaries(&map["d"], 5, 13));
        let share = boundary_coherence(
            [
                piece(0, 20),
                piece(5, 13),
                piece(2, 13),
                piece(5, 9),
                piece(0, 1),
            ],
            &map,
        );
        assert_eq!(share, Some(0.4));
        let other = PieceSpan {
            doc_id: "unknown",
            ..piece(0, 1)
        };
        assert_eq!(boundary_coherence([other], &map), None);
    }
}
