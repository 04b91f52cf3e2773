//! Pseudo-relevance feedback for the sentence route: words that the sentences best
//! matching a query use besides the query's own, read across the collection.
//!
//! A question is often worded apart from the passage that answers it ("solicit …
//! representatives" against "contact or hire … employees"). Other documents of the same
//! collection that say the same thing tend to say it with both sets of words, so the
//! sentences that match the query best anywhere in the collection name the words its
//! answer is likely to use. [`feedback_terms`] collects them (relevance-model style):
//!
//! ```text
//! w(t) = Σ over the best `sentences` sentences s:  lex(s) · tf(t, s) / len(s) · idf(t)
//! ```
//!
//! `lex(s)` is the sentence's BM25 match with the query among the sentences of the given
//! chunks (divided by the best), `idf` is over the same sentences, and query terms and
//! numbers (terms without a letter) are left out. The best `max_terms` terms are kept,
//! their weights divided by the best. The sentence route then adds a share of each
//! sentence's match with these terms to its match with the query (`topk:feedback`).

use std::collections::HashSet;

type FastSet<K> = HashSet<K, foldhash::fast::RandomState>;

use excerpt_core::ChunkKey;

use crate::context::Corpus;
use crate::memo::Memo;
use crate::near::sentence_near;
use crate::sentences::lexical::weighted_id_scores;

/// Feedback terms for `query` from the sentences of the chunks `keys` of `corpus` (in
/// practice the best lexical matches of the query across the index, beyond the
/// documents it is scoped to): the terms of its best `sentences` sentences, weighted as
/// in the module documentation, best `max_terms` first (ties by term). Terms are Snowball English stems, as the sentence
/// route matches them. Empty when no sentence shares a term with the query. Keys a
/// corpus does not hold are skipped; a sentence is read once even when several keys
/// cover it.
pub fn feedback_terms(
    query: &str,
    corpus: &dyn Corpus,
    keys: &[ChunkKey],
    sentences: usize,
    max_terms: usize,
) -> Vec<(String, f32)> {
    // Sentences starting in each chunk, each once, as term ids of this call: numbered
    // in the order they first appear, sentences first, then the query's.
    let mut seen: FastSet<(u32, usize)> = FastSet::default();
    let mut texts: Vec<Vec<u32>> = Vec::new();
    let memo = Memo::of(corpus);
    let mut table = memo.sentence_terms();
    let mut vocab = table.numbering();
    for key in keys {
        let Some(doc) = corpus.document(key.doc) else {
            continue;
        };
        let Some(chunk) = doc.chunks.get(key.ordinal as usize) else {
            continue;
        };
        let at = chunk.range.byte_start;
        let first = sentence_near(doc, at, |s| s.byte_start < at);
        for (j, s) in doc.sentences[first..].iter().enumerate() {
            if s.byte_start >= chunk.range.byte_end {
                break;
            }
            if seen.insert((key.doc, first + j)) {
                texts.push(table.sentence_in(s.slice(&doc.text), &mut vocab));
            }
        }
    }
    let mut query_ids = table.text_in(query, &mut vocab);
    let stems = table.spelled(&vocab);
    drop(table);
    query_ids.sort_unstable();
    query_ids.dedup();
    let weighted: Vec<(u32, f64)> = query_ids.iter().map(|&t| (t, 1.0)).collect();
    let lex = weighted_id_scores(&weighted, &texts);
    let mut best: Vec<usize> = (0..texts.len()).filter(|&i| lex[i] > 0.0).collect();
    best.sort_by(|&a, &b| lex[b].total_cmp(&lex[a]).then(a.cmp(&b)));
    best.truncate(sentences);
    if best.is_empty() || max_terms == 0 {
        return Vec::new();
    }
    // Sentence frequency of every term (`last` marks the sentence that last counted it).
    let mut df = vec![0u32; stems.len()];
    let mut last = vec![usize::MAX; stems.len()];
    for (i, t) in texts.iter().enumerate() {
        for &w in t {
            if last[w as usize] != i {
                last[w as usize] = i;
                df[w as usize] += 1;
            }
        }
    }
    let n = texts.len() as f64;
    let mut weight = vec![0.0f64; stems.len()];
    for &i in &best {
        let t = &texts[i];
        let len = t.len() as f64;
        for &w in t {
            if query_ids.binary_search(&w).is_ok() {
                continue;
            }
            let d = f64::from(df[w as usize]);
            let idf = (1.0 + (n - d + 0.5) / (d + 0.5)).ln();
            weight[w as usize] += f64::from(lex[i]) / len * idf;
        }
    }
    let mut ranked: Vec<(&str, f64)> = weight
        .iter()
        .enumerate()
        // Numbers (clause numbers, versions, amounts) label things; they are not wording.
        .filter(|x| *x.1 > 0.0 && stems[x.0].chars().any(char::is_alphabetic))
        .map(|(w, &x)| (&stems[w], x))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    ranked.truncate(max_terms);
    let top = ranked.first().map_or(1.0, |x| x.1);
    ranked
        .into_iter()
        .map(|(t, w)| (t.to_string(), (w / top) as f32))
        .collect()
}
