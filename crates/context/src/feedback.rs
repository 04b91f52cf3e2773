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

use std::collections::{BTreeSet, HashMap};

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

use excerpt_core::ChunkKey;

use crate::context::Corpus;
use crate::sentences::lexical::{weighted_scores, words, TermLookup};

/// Feedback terms for `query` from the sentences of the chunks `keys` of `corpus` (in
/// practice the best lexical matches of the query across the index, beyond the
/// documents it is scoped to): the terms of its best `sentences` sentences, weighted as
/// in the module documentation, best `max_terms` first (ties by term). Terms are Snowball English stems, as the sentence
/// route matches them. Empty when no sentence shares a term with the query. Keys a
/// corpus does not hold are skipped; a sentence is read once even when several keys
/// cover it.
pub fn feedback_terms<'t>(
    query: &'t str,
    corpus: &'t dyn Corpus,
    keys: &[ChunkKey],
    sentences: usize,
    max_terms: usize,
) -> Vec<(String, f32)> {
    let mut vocab = Vocabulary::new();
    // Sentences starting in each chunk, each once, as term ids.
    let mut seen: BTreeSet<(u32, usize)> = BTreeSet::new();
    let mut texts: Vec<Vec<u32>> = Vec::new();
    for key in keys {
        let Some(doc) = corpus.document(key.doc) else {
            continue;
        };
        let Some(chunk) = doc.chunks.get(key.ordinal as usize) else {
            continue;
        };
        let first = doc
            .sentences
            .partition_point(|s| s.byte_start < chunk.range.byte_start);
        for (j, s) in doc.sentences[first..].iter().enumerate() {
            if s.byte_start >= chunk.range.byte_end {
                break;
            }
            if seen.insert((key.doc, first + j)) {
                texts.push(vocab.ids(s.slice(&doc.text)));
            }
        }
    }
    let mut query_ids = vocab.ids(query);
    query_ids.sort_unstable();
    query_ids.dedup();
    let weighted: Vec<(u32, f64)> = query_ids.iter().map(|&t| (t, 1.0)).collect();
    let lex = weighted_scores(&weighted, &texts);
    let mut best: Vec<usize> = (0..texts.len()).filter(|&i| lex[i] > 0.0).collect();
    best.sort_by(|&a, &b| lex[b].total_cmp(&lex[a]).then(a.cmp(&b)));
    best.truncate(sentences);
    if best.is_empty() || max_terms == 0 {
        return Vec::new();
    }
    // Sentence frequency of every term (`last` marks the sentence that last counted it).
    let mut df = vec![0u32; vocab.stems.len()];
    let mut last = vec![usize::MAX; vocab.stems.len()];
    for (i, t) in texts.iter().enumerate() {
        for &w in t {
            if last[w as usize] != i {
                last[w as usize] = i;
                df[w as usize] += 1;
            }
        }
    }
    let n = texts.len() as f64;
    let mut weight = vec![0.0f64; vocab.stems.len()];
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
        .filter(|x| *x.1 > 0.0 && vocab.stems[x.0].chars().any(char::is_alphabetic))
        .map(|(w, &x)| (vocab.stems[w].as_str(), x))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    ranked.truncate(max_terms);
    let top = ranked.first().map_or(1.0, |x| x.1);
    ranked
        .into_iter()
        .map(|(t, w)| (t.to_string(), (w / top) as f32))
        .collect()
}

/// Terms as dense ids: each distinct word is lower-cased and stemmed once.
///
/// The maps hash with foldhash (seeded per process): a long question's feedback looks
/// up every word of some hundreds of sentences, and SipHash was a fifth of that time.
/// Words are borrowed from the texts they come from, and a term is copied only the
/// first time it is seen.
struct Vocabulary<'t> {
    /// Word as written → its term's id (`None`: a function word).
    words: FastMap<&'t str, Option<u32>>,
    /// Term → id.
    ids: FastMap<Box<str>, u32>,
    /// Id → term.
    stems: Vec<String>,
}

impl<'t> Vocabulary<'t> {
    fn new() -> Self {
        Vocabulary {
            words: FastMap::default(),
            ids: FastMap::default(),
            stems: Vec::new(),
        }
    }

    /// The term ids of `text`, in order ([`crate::sentences::lexical::terms`] as ids).
    fn ids(&mut self, text: &'t str) -> Vec<u32> {
        let mut out = Vec::new();
        let mut lookup: Option<TermLookup> = None;
        for w in words(text) {
            let id = match self.words.get(w) {
                Some(&id) => id,
                None => {
                    let Vocabulary { ids, stems, .. } = self;
                    let id = lookup
                        .get_or_insert_with(TermLookup::lock)
                        .with_term(w, |t| {
                            t.map(|t| match ids.get(t) {
                                Some(&id) => id,
                                None => {
                                    let id = stems.len() as u32;
                                    ids.insert(t.into(), id);
                                    stems.push(t.to_string());
                                    id
                                }
                            })
                        });
                    self.words.insert(w, id);
                    id
                }
            };
            out.extend(id);
        }
        out
    }
}
