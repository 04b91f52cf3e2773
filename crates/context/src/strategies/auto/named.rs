//! Named sections: a question that names a section by its heading ("according to the
//! balance sheet") brings that section's chunks among the sentence route's candidates.

use std::collections::{BTreeMap, BTreeSet};

use excerpt_core::Document;

use crate::context::AssembleRequest;
use crate::headings::HeadingTerms;
use crate::memo::Memo;
use crate::selection::RHit;
use crate::sentences::lexical::terms;
use crate::strategies::statements::name_variants;

use super::AutoParams;

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
pub(super) fn named_in_top_documents<'h>(
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
pub(super) fn with_named_sections(
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
            // Cut as a piece's section is: a note is printed too.
            let heading = excerpt_core::shown_section(&doc.sections[s].heading);
            named_headings.push(format!("{heading:?} ({share:.2})"));
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
            assert_eq!(
                named_sections(&memo, &[&query], &a).first().map(|n| n.0),
                Some(1)
            );
            assert_eq!(
                named_sections(&memo, &[&query], &b).first().map(|n| n.0),
                Some(2)
            );
            assert_eq!(
                named_sections(&memo, &[&query], &changed)
                    .first()
                    .map(|n| n.0),
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
}
