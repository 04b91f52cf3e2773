//! Lexical matching of sentences: stemmed terms without function words, and BM25 over
//! a pool of sentences (the sentence routes' and feedback terms' scoring).

use std::collections::HashMap;

/// Tokens of a text for lexical matching: its words ([`words`]) lower-cased, without
/// English function words, reduced to their Snowball stems (Porter 2 English for Latin
/// letters, so that "disclosure" meets "disclosed" and "terminates" meets "termination";
/// Russian, Greek, Arabic and Hindi stems in their scripts; none in others, as
/// `excerpt_analysis::stem_by_script`).
pub(crate) fn terms(text: &str) -> Vec<String> {
    words(text).filter_map(term_of).collect()
}

/// The term of one word as [`terms`] gives it: `None` for a function word.
pub(crate) fn term_of(word: &str) -> Option<String> {
    let lower = word.to_lowercase();
    (!STOP.contains(&lower.as_str())).then(|| excerpt_analysis::stem_by_script(&lower).into_owned())
}

/// The words of `text`, as [`terms`] reads them: its alphanumeric runs, or, in a text of
/// a script that runs do not cut into words (Chinese, Thai, the viramas of Hindi…), the
/// words `excerpt_analysis::segment_words` finds.
pub(crate) fn words(text: &str) -> Words<'_> {
    if excerpt_analysis::needs_segmentation(text) {
        Words::Segmented(excerpt_analysis::segment_words(text).into_iter())
    } else {
        Words::Runs(text.split(not_alphanumeric as fn(char) -> bool))
    }
}

/// Whether `c` separates alphanumeric runs.
fn not_alphanumeric(c: char) -> bool {
    !c.is_alphanumeric()
}

/// The iterator of [`words`].
pub(crate) enum Words<'a> {
    /// Alphanumeric runs (empty ones skipped).
    Runs(std::str::Split<'a, fn(char) -> bool>),
    /// Segmented words.
    Segmented(std::vec::IntoIter<&'a str>),
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        match self {
            Words::Runs(runs) => runs.find(|w| !w.is_empty()),
            Words::Segmented(words) => words.next(),
        }
    }
}

/// Words whose term a [`TermMemo`] keeps before it is emptied (about 6 MB at most).
pub(crate) const TERM_MEMO_WORDS: usize = 1 << 16;

/// The terms of the words a collection's sentences were read in so far, by the word as
/// written ([`crate::memo::Memo::terms`]): stemming costs about a microsecond a word, and
/// a collection's sentences bring back mostly the words seen before. Hashed with
/// foldhash: every word of every sentence read is looked up.
#[derive(Default)]
pub(crate) struct TermMemo(HashMap<Box<str>, Option<Box<str>>, foldhash::fast::RandomState>);

impl TermMemo {
    /// [`terms`] of `text`, each word's term from the memo or stemmed (and kept).
    pub(crate) fn terms(&mut self, text: &str) -> Vec<String> {
        words(text).filter_map(|w| self.term(w)).collect()
    }

    /// The term of `word` ([`term_of`]), from the memo or stemmed (and kept).
    fn term(&mut self, word: &str) -> Option<String> {
        if let Some(t) = self.0.get(word) {
            return t.as_deref().map(str::to_string);
        }
        let t = term_of(word);
        if self.0.len() >= TERM_MEMO_WORDS {
            self.0.clear();
        }
        self.0.insert(word.into(), t.as_deref().map(Into::into));
        t
    }

    /// Words kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

/// Function words ignored by [`terms`].
const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "been", "by", "can", "did", "do", "does", "for",
    "from", "had", "has", "have", "how", "i", "in", "is", "it", "its", "of", "on", "or", "that",
    "the", "their", "them", "then", "there", "these", "they", "this", "to", "was", "we", "were",
    "what", "when", "where", "which", "who", "why", "will", "with", "you", "your", "shall", "may",
    "any", "all", "such", "not", "no", "s",
];

/// BM25 of each sentence (given as term lists) against the query terms, with document
/// frequencies over the sentences themselves; divided by the best score (all zero when
/// nothing matches).
pub(crate) fn lexical_scores(query: &[String], sentences: &[Vec<String>]) -> Vec<f32> {
    let mut q: Vec<&str> = query.iter().map(String::as_str).collect();
    q.sort_unstable();
    q.dedup();
    let weighted: Vec<(&str, f64)> = q.into_iter().map(|t| (t, 1.0)).collect();
    weighted_scores::<str, _, _>(&weighted, sentences)
}

/// [`lexical_scores`] with a weight per query term (distinct terms): each term's BM25
/// share is multiplied by its weight before the sum. Divided by the best score. Terms
/// are anything that borrows as the same hashable key `K` (stems as `String` or `&str`
/// against `str`, or their ids).
///
/// Each sentence's words are looked up once in a map of the query's terms, rather than
/// compared with every term (thirty feedback terms against a thousand sentences were
/// most of a question's sentence scoring); the sums are formed as before, term by term
/// in the query's order, so the scores are the same to the bit.
pub(crate) fn weighted_scores<K, Q, T>(query: &[(Q, f64)], sentences: &[Vec<T>]) -> Vec<f32>
where
    K: std::hash::Hash + Eq + ?Sized,
    Q: std::borrow::Borrow<K>,
    T: std::borrow::Borrow<K>,
{
    // Each query term's position, and for a repeated term its first position.
    let mut index: HashMap<&K, usize, foldhash::fast::RandomState> = HashMap::default();
    let first: Vec<usize> = query
        .iter()
        .enumerate()
        .map(|(i, (t, _))| *index.entry(t.borrow()).or_insert(i))
        .collect();
    let weights: Vec<f64> = query.iter().map(|(_, w)| *w).collect();
    scores_by(&weights, &first, sentences, |w| {
        index.get(w.borrow()).copied()
    })
}

/// [`weighted_scores`] of terms given by number (a numbering's, counted from 0): each
/// word's place in the query read from an array as long as the query's largest number,
/// not from a hash map (the eleven thousand words of `auto`'s feedback sentences). The
/// same sums, to the bit.
pub(crate) fn weighted_id_scores(query: &[(u32, f64)], sentences: &[Vec<u32>]) -> Vec<f32> {
    let len = query
        .iter()
        .map(|&(t, _)| t as usize + 1)
        .max()
        .unwrap_or(0);
    let mut place = vec![u32::MAX; len];
    let first: Vec<usize> = query
        .iter()
        .enumerate()
        .map(|(i, &(t, _))| {
            let at = &mut place[t as usize];
            if *at == u32::MAX {
                *at = i as u32;
            }
            *at as usize
        })
        .collect();
    let weights: Vec<f64> = query.iter().map(|(_, w)| *w).collect();
    scores_by(&weights, &first, sentences, |&w| {
        place
            .get(w as usize)
            .filter(|&&at| at != u32::MAX)
            .map(|&at| at as usize)
    })
}

/// The BM25 sums of [`weighted_scores`]: `weights` by query position, `first` the first
/// position of each position's term, `place` a word's first query position (`None`: not
/// a query term).
fn scores_by<T>(
    weights: &[f64],
    first: &[usize],
    sentences: &[Vec<T>],
    place: impl Fn(&T) -> Option<usize>,
) -> Vec<f32> {
    const K1: f64 = 1.2;
    const B: f64 = 0.75;
    let n = sentences.len() as f64;
    if sentences.is_empty() {
        return Vec::new();
    }
    let q = weights.len();
    // Term frequencies, sentence by sentence (row `i` of `q` counts).
    let mut tf = vec![0u32; sentences.len() * q];
    for (s, row) in sentences.iter().zip(tf.chunks_exact_mut(q.max(1))) {
        for w in s {
            if let Some(j) = place(w) {
                row[j] += 1;
            }
        }
        for (i, &j) in first.iter().enumerate() {
            if j != i {
                row[i] = row[j];
            }
        }
    }
    let tf_of = |s: usize, i: usize| tf[s * q + i];
    let avg = sentences.iter().map(Vec::len).sum::<usize>() as f64 / n;
    // Per query term: its weight times its idf over the sentences.
    let weighted_idf: Vec<f64> = weights
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let d = (0..sentences.len()).filter(|&s| tf_of(s, i) > 0).count() as f64;
            w * (1.0 + (n - d + 0.5) / (d + 0.5)).ln()
        })
        .collect();
    let scores: Vec<f64> = sentences
        .iter()
        .enumerate()
        .map(|(si, s)| {
            let len = s.len() as f64;
            weighted_idf
                .iter()
                .enumerate()
                .map(|(i, wi)| {
                    let tf = f64::from(tf_of(si, i));
                    if tf == 0.0 {
                        return 0.0;
                    }
                    wi * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg.max(1.0)))
                })
                .sum()
        })
        .collect();
    let max = scores.iter().copied().fold(0.0f64, f64::max);
    scores
        .iter()
        .map(|&s| if max > 0.0 { (s / max) as f32 } else { 0.0 })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_drop_function_words_and_stem() {
        assert_eq!(
            terms("The Receiving Party shall return all documents."),
            vec!["receiv", "parti", "return", "document"]
        );
    }

    #[test]
    fn remembered_terms_are_the_stemmed_ones_and_the_memo_stays_bounded() {
        let text = "The Receiving Party shall return all documents.";
        let mut memo = TermMemo::default();
        let fresh = terms(text);
        assert_eq!(memo.terms(text), fresh, "a word met first gives its stem");
        assert_eq!(
            memo.terms(text),
            fresh,
            "a remembered word gives its stem again"
        );
        // More distinct words than the memo keeps: it is emptied, never grows past it.
        let many: String = (0..TERM_MEMO_WORDS + 10)
            .map(|i| format!("w{i}x "))
            .collect();
        assert_eq!(memo.terms(&many).len(), TERM_MEMO_WORDS + 10);
        assert!(memo.len() <= TERM_MEMO_WORDS, "{}", memo.len());
        assert_eq!(
            memo.terms(text),
            vec!["receiv", "parti", "return", "document"]
        );
    }

    /// The scores as first written: every query term compared with every word.
    fn compared_scores(query: &[(&str, f64)], sentences: &[Vec<String>]) -> Vec<f32> {
        const K1: f64 = 1.2;
        const B: f64 = 0.75;
        let n = sentences.len() as f64;
        if sentences.is_empty() {
            return Vec::new();
        }
        let avg = sentences.iter().map(Vec::len).sum::<usize>() as f64 / n;
        let weighted_idf: Vec<f64> = query
            .iter()
            .map(|(t, w)| {
                let d = sentences
                    .iter()
                    .filter(|s| s.iter().any(|x| x == t))
                    .count() as f64;
                w * (1.0 + (n - d + 0.5) / (d + 0.5)).ln()
            })
            .collect();
        let scores: Vec<f64> = sentences
            .iter()
            .map(|s| {
                let len = s.len() as f64;
                query
                    .iter()
                    .zip(&weighted_idf)
                    .map(|((t, _), wi)| {
                        let tf = s.iter().filter(|x| x == t).count() as f64;
                        if tf == 0.0 {
                            return 0.0;
                        }
                        wi * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg.max(1.0)))
                    })
                    .sum()
            })
            .collect();
        let max = scores.iter().copied().fold(0.0f64, f64::max);
        scores
            .iter()
            .map(|&s| if max > 0.0 { (s / max) as f32 } else { 0.0 })
            .collect()
    }

    proptest::proptest! {
        #[test]
        fn looked_up_scores_are_the_compared_ones_to_the_bit(
            sentences in proptest::collection::vec(
                proptest::collection::vec(0u8..12, 0..15), 0..30),
            query in proptest::collection::vec((0u8..14, 0.0f64..3.0), 0..8),
        ) {
            let word = |w: u8| format!("w{w}");
            let sentences: Vec<Vec<String>> =
                sentences.iter().map(|s| s.iter().map(|&w| word(w)).collect()).collect();
            let names: Vec<String> = query.iter().map(|(t, _)| word(*t)).collect();
            // Repeated terms included: each counts as the compared version counts it.
            let query: Vec<(&str, f64)> =
                names.iter().zip(&query).map(|(t, (_, w))| (t.as_str(), *w)).collect();
            let got = weighted_scores::<str, _, _>(&query, &sentences);
            let want = compared_scores(&query, &sentences);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            proptest::prop_assert_eq!(bits(&got), bits(&want));
            // The same through ids.
            let ids: Vec<Vec<u32>> = sentences
                .iter()
                .map(|s| s.iter().map(|w| w[1..].parse().unwrap()).collect())
                .collect();
            let query_ids: Vec<(u32, f64)> =
                names.iter().zip(&query).map(|(t, (_, w))| (t[1..].parse().unwrap(), *w)).collect();
            let by_id = weighted_scores::<u32, _, _>(&query_ids, &ids);
            proptest::prop_assert_eq!(bits(&by_id), bits(&want));
            let by_number = weighted_id_scores(&query_ids, &ids);
            proptest::prop_assert_eq!(bits(&by_number), bits(&want));
        }
    }

    #[test]
    fn lexical_scores_prefer_the_matching_sentence() {
        let q = terms("reverse engineer confidential information");
        let s: Vec<Vec<String>> = [
            "The recipient shall not reverse engineer any product.",
            "This agreement is governed by the laws of Delaware.",
            "Confidential information includes trade secrets.",
        ]
        .iter()
        .map(|t| terms(t))
        .collect();
        let l = lexical_scores(&q, &s);
        assert_eq!(l[0], 1.0);
        assert_eq!(l[1], 0.0);
        assert!(l[2] > 0.0 && l[2] < 1.0);
        assert_eq!(lexical_scores(&terms("zebra"), &s), vec![0.0; 3]);
    }
}
