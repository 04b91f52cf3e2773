//! Metrics of the page format (evidence as pages and the annotators' text, as in
//! financebench-dev), reproducing the reference scorer `score_pdf.py` (kept with the
//! tests, `tests/data/score_pdf.py`; a test runs it on the same files and compares):
//!
//! - the context is the pieces' texts in order, each cut to what is left of the
//!   character budget (characters are Unicode scalar values); the first piece that adds
//!   no text (empty, or past the budget) ends it;
//! - `text_recall`: the share of the evidence's word 4-grams found in the context, words
//!   being the runs of `[a-z0-9]` in the lower-cased text (a text of one to three words
//!   is one gram of them all), the evidence grams the union over its items, the
//!   context's taken from its pieces joined by spaces; 0 without evidence words;
//! - `page_hit`: some piece of the context (one with `page_start`; `page_end` defaults
//!   to it) has a page range covering an evidence page;
//! - `chars`: characters of the context; all three are means over the queries, a query
//!   without a results line scoring 0 and counting as `missing`;
//! - with a maximum number of pieces K (`--max-pieces`), only the first K pieces make
//!   the context;
//! - `pieces`: pieces in the context, a mean over the queries; `tiny`: the share of all
//!   the contexts' pieces under 80 characters (as cut; 0 without pieces).

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::format::{PageQueryLine, ResultLine, ResultPiece};
use crate::metrics::{round_to, Limits, TINY_CHARS};

/// The words of `text` as `score_pdf.py` reads them: runs of `[a-z0-9]` in the
/// lower-cased text (full Unicode lower-casing first, so e.g. the Kelvin sign reads as
/// `k`).
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            cur.push(c);
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The word 4-grams of `words` (each joined by spaces); fewer than four words make one
/// gram of them all, none make none.
pub fn grams(words: &[String]) -> HashSet<String> {
    if words.len() < 4 {
        return if words.is_empty() {
            HashSet::new()
        } else {
            HashSet::from([words.join(" ")])
        };
    }
    words.windows(4).map(|w| w.join(" ")).collect()
}

/// How one query's context covers its page evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageScore {
    /// The query.
    pub query_id: String,
    /// No results line was given for the query.
    pub missing: bool,
    /// Distinct word 4-grams of the evidence.
    pub evidence_grams: usize,
    /// Of those, the ones found in the context.
    pub found_grams: usize,
    /// Some piece's page range covers an evidence page.
    pub page_hit: bool,
    /// Characters of the context (after the budget).
    pub chars: usize,
    /// Pieces in the context (after the budget).
    pub pieces: usize,
    /// Of those, the pieces under 80 characters (as cut).
    pub tiny: usize,
}

impl PageScore {
    /// Share of the evidence's grams found (0 without evidence grams).
    pub fn text_recall(&self) -> f64 {
        if self.evidence_grams > 0 {
            self.found_grams as f64 / self.evidence_grams as f64
        } else {
            0.0
        }
    }
}

/// Scores one query. `pieces` is `None` when the results have no line for the query;
/// `budget_chars` of `None` or `Some(0)` means no budget.
pub fn score_page_query(
    query: &PageQueryLine,
    pieces: Option<&[ResultPiece]>,
    budget_chars: Option<usize>,
) -> PageScore {
    score_page_query_limited(query, pieces, Limits::budget(budget_chars))
}

/// Scores one query with the pieces within `limits` (`score_pdf.py --budget-chars N
/// --max-pieces K`). `pieces` is `None` when the results have no line for the query.
pub fn score_page_query_limited(
    query: &PageQueryLine,
    pieces: Option<&[ResultPiece]>,
    limits: Limits,
) -> PageScore {
    let mut left = limits.budget_chars.filter(|&b| b > 0).unwrap_or(usize::MAX);
    let max_pieces = limits.max_pieces.filter(|&k| k > 0);
    let mut context: Vec<&str> = Vec::new();
    let mut pages: Vec<(i64, i64)> = Vec::new();
    let (mut chars, mut tiny) = (0usize, 0usize);
    for p in pieces.unwrap_or(&[]) {
        if max_pieces.is_some_and(|k| context.len() >= k) {
            break;
        }
        let text = p.text.as_deref().unwrap_or("");
        let cut = match text.char_indices().nth(left) {
            Some((i, _)) => &text[..i],
            None => text,
        };
        if cut.is_empty() {
            break;
        }
        let n = cut.chars().count();
        left -= n;
        chars += n;
        tiny += usize::from((n as i64) < TINY_CHARS);
        context.push(cut);
        if let Some(s) = p.page_start {
            pages.push((i64::from(s), i64::from(p.page_end.unwrap_or(s))));
        }
    }
    let have = grams(&words(&context.join(" ")));
    let gold: HashSet<String> = query
        .evidence
        .iter()
        .flat_map(|e| grams(&words(&e.text)))
        .collect();
    PageScore {
        query_id: query.id.clone(),
        missing: pieces.is_none(),
        evidence_grams: gold.len(),
        found_grams: gold.intersection(&have).count(),
        page_hit: query
            .evidence
            .iter()
            .any(|e| pages.iter().any(|&(s, t)| s <= e.page && e.page <= t)),
        chars,
        pieces: context.len(),
        tiny,
    }
}

/// The reference scorer's numbers for one results file of a page-format set.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct PageSummary {
    /// Queries scored.
    pub queries: usize,
    /// Queries without a results line.
    pub missing: usize,
    /// Mean share of the evidence's word 4-grams found in the context.
    pub text_recall: f64,
    /// Share of queries where a piece covers an evidence page.
    pub page_hit: f64,
    /// Mean characters of the context.
    pub chars: f64,
    /// Mean pieces in the context.
    pub pieces: f64,
    /// Share of the contexts' pieces under 80 characters (0 without pieces).
    #[serde(default)]
    pub tiny: f64,
}

impl PageSummary {
    /// Rounded as the reference scorer prints: 4 decimals, `chars` 1, `pieces` 2.
    pub fn rounded(&self) -> PageSummary {
        PageSummary {
            text_recall: round_to(self.text_recall, 4),
            page_hit: round_to(self.page_hit, 4),
            chars: round_to(self.chars, 1),
            pieces: round_to(self.pieces, 2),
            tiny: round_to(self.tiny, 4),
            ..*self
        }
    }
}

/// Aggregates per-query scores (zeros for no query).
pub fn summarize_pages(scores: &[PageScore]) -> PageSummary {
    let n = scores.len();
    if n == 0 {
        return PageSummary::default();
    }
    let nf = n as f64;
    let pieces: usize = scores.iter().map(|s| s.pieces).sum();
    let tiny: usize = scores.iter().map(|s| s.tiny).sum();
    PageSummary {
        queries: n,
        missing: scores.iter().filter(|s| s.missing).count(),
        text_recall: scores.iter().map(PageScore::text_recall).sum::<f64>() / nf,
        page_hit: scores.iter().filter(|s| s.page_hit).count() as f64 / nf,
        chars: scores.iter().map(|s| s.chars).sum::<usize>() as f64 / nf,
        pieces: pieces as f64 / nf,
        tiny: if pieces > 0 {
            tiny as f64 / pieces as f64
        } else {
            0.0
        },
    }
}

/// Scores a whole results file the way `score_pdf.py` does: queries keyed by id (a
/// repeated id keeps its first position and its last definition), results keyed by
/// query id (the last line wins), results for unknown queries ignored.
pub fn score_page_results(
    queries: &[PageQueryLine],
    results: &[ResultLine],
    budget_chars: Option<usize>,
) -> (PageSummary, Vec<PageScore>) {
    score_page_results_limited(queries, results, Limits::budget(budget_chars))
}

/// [`score_page_results`] with the pieces within `limits` (`score_pdf.py --budget-chars
/// N --max-pieces K`).
pub fn score_page_results_limited(
    queries: &[PageQueryLine],
    results: &[ResultLine],
    limits: Limits,
) -> (PageSummary, Vec<PageScore>) {
    let mut order: Vec<&str> = Vec::new();
    let mut by_id: HashMap<&str, &PageQueryLine> = HashMap::new();
    for q in queries {
        if by_id.insert(q.id.as_str(), q).is_none() {
            order.push(q.id.as_str());
        }
    }
    let got: HashMap<&str, &ResultLine> =
        results.iter().map(|r| (r.query_id.as_str(), r)).collect();
    let scores: Vec<PageScore> = order
        .iter()
        .filter_map(|id| by_id.get(id))
        .map(|q| {
            let pieces = got.get(q.id.as_str()).map(|r| r.pieces.as_slice());
            score_page_query_limited(q, pieces, limits)
        })
        .collect();
    (summarize_pages(&scores), scores)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::PageEvidence;

    fn piece(text: &str, pages: Option<(u32, u32)>) -> ResultPiece {
        ResultPiece {
            doc_id: "d.pdf".into(),
            start: 0,
            end: text.chars().count() as i64,
            text: Some(text.into()),
            score: None,
            page_start: pages.map(|p| p.0),
            page_end: pages.map(|p| p.1),
        }
    }

    fn query(evidence: &[(i64, &str)]) -> PageQueryLine {
        PageQueryLine {
            id: "q".into(),
            query: "?".into(),
            doc: "d.pdf".into(),
            evidence: evidence
                .iter()
                .map(|&(page, text)| PageEvidence {
                    page,
                    text: text.into(),
                })
                .collect(),
            answer: None,
        }
    }

    #[test]
    fn words_and_grams_as_the_scorer_reads_them() {
        assert_eq!(
            words("Net-Revenue: $3,991 (Café) \u{212A}elvin"),
            ["net", "revenue", "3", "991", "caf", "kelvin"]
        );
        assert_eq!(grams(&words("a b")), HashSet::from(["a b".to_string()]));
        assert!(grams(&[]).is_empty());
        assert_eq!(grams(&words("a b c d e")).len(), 2);
    }

    #[test]
    fn budget_cuts_pieces_in_order_and_pages_hit() {
        let q = query(&[(3, "net revenue was 3,991 million"), (9, "")]);
        let pieces = [
            piece("Net revenue was", Some((1, 2))),
            piece("3,991 million in 2015", Some((3, 3))),
            piece("", Some((9, 9))),
            piece("never reached", Some((9, 9))),
        ];
        let whole = score_page_query(&q, Some(&pieces), None);
        // Grams of "net revenue was 3 991 million": 3; all found across the two pieces.
        assert_eq!((whole.evidence_grams, whole.found_grams), (3, 3));
        assert!(whole.page_hit);
        // The empty piece ends the context: page 9 is never reached.
        assert_eq!(whole.pieces, 2);
        let cut = score_page_query(&q, Some(&pieces), Some(16));
        assert_eq!((cut.pieces, cut.chars), (2, 16));
        // "Net revenue was 3": one gram, the evidence's first.
        assert_eq!(cut.found_grams, 1);
        assert!(cut.page_hit, "the cut piece keeps its pages");
        let first = score_page_query(&q, Some(&pieces), Some(15));
        assert!(!first.page_hit);
        let missing = score_page_query(&q, None, None);
        assert!(missing.missing && !missing.page_hit && missing.text_recall() == 0.0);
    }
}
