//! The term ids of sentences, kept with the collection ([`crate::memo::Memo`]).
//!
//! `auto`'s feedback terms ([`crate::feedback_terms`]) read every sentence of a query's
//! hundred best BM25 chunks: some seven hundred sentences and eleven thousand words, at
//! about a tenth of a microsecond a word even with every word's stem remembered. The
//! best chunks of one collection come back from query to query (and a collection holding
//! the same text under several ids has the same sentences), so each sentence's terms are
//! kept in the collection's table by its text, as numbers: looking a sentence up costs what hashing its text
//! costs, about a fiftieth of cutting it into words again.
//!
//! A term's number is its place in a table of every term seen since the table was last
//! emptied ([`SentenceTerms`]). A caller reads the table under its lock
//! ([`Memo::sentence_terms`](crate::memo::Memo::sentence_terms)) and turns the numbers into its own before letting go: the
//! table is emptied only when a caller takes the lock, never while one holds it.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use crate::sentences::lexical::{term_of, words};

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Bytes of sentence text (and its term ids) kept before the sentences are forgotten:
/// about 120,000 sentences of financial filings, some 17,000 chunks.
const SENTENCE_BYTES: usize = 24 << 20;
/// Distinct words whose term id is kept before they are forgotten (as
/// `lexical::TERM_MEMO_WORDS`).
const WORDS: usize = 1 << 16;
/// Distinct terms numbered before the whole table is emptied (numbers, codes and names
/// keep adding terms; a language's own words do not).
const TERMS: usize = 1 << 20;

/// The table: terms by number, the numbers of words and of whole sentences.
#[derive(Default)]
pub(crate) struct SentenceTerms {
    /// Number → term.
    terms: Vec<Box<str>>,
    /// Term → number.
    numbers: FastMap<Box<str>, u32>,
    /// Word as written → its term's number (`None`: a function word).
    words: FastMap<Box<str>, Option<u32>>,
    /// Sentence text → its terms' numbers, in order.
    sentences: FastMap<Box<str>, Box<[u32]>>,
    /// Bytes held by `sentences` (texts and numbers).
    sentence_bytes: usize,
    /// By shared number: the [`Numbering`] that last met the term, and its number there.
    local: Vec<(u32, u32)>,
    /// The last [`Numbering`] started.
    numberings: u32,
}

/// The table, locked; emptied first when it holds too many terms.
pub(crate) struct Locked<'a>(MutexGuard<'a, Option<SentenceTerms>>);

impl SentenceTerms {
    /// Waits for the table in `slot`. Its numbers stay valid until the guard is dropped.
    pub(crate) fn lock(slot: &Mutex<Option<SentenceTerms>>) -> Locked<'_> {
        let mut guard = match slot.lock() {
            Ok(guard) => guard,
            // A caller panicked while holding it: start again.
            Err(poisoned) => {
                let mut guard = poisoned.into_inner();
                *guard = None;
                guard
            }
        };
        if guard.as_ref().is_some_and(|t| t.terms.len() >= TERMS) {
            *guard = None;
        }
        Locked(guard)
    }
}

impl Locked<'_> {
    fn table(&mut self) -> &mut SentenceTerms {
        self.0.get_or_insert_with(SentenceTerms::default)
    }

    /// The term numbers of the sentence `text`, remembered by its text.
    #[cfg(test)]
    fn sentence(&mut self, text: &str) -> Vec<u32> {
        let table = self.table();
        if let Some(ids) = table.sentences.get(text) {
            return ids.to_vec();
        }
        let ids = table.numbers_of(text);
        table.remember(text, ids.clone());
        ids
    }

    /// The term numbers of `text`, not remembered as a sentence (a query).
    pub(crate) fn text(&mut self, text: &str) -> Vec<u32> {
        self.table().numbers_of(text)
    }

    /// The term numbered `id` (by this lock's table).
    #[cfg(test)]
    fn term(&mut self, id: u32) -> &str {
        &self.table().terms[id as usize]
    }

    /// A numbering of its own for one caller: `0..` in the order terms are met.
    pub(crate) fn numbering(&mut self) -> Numbering {
        let table = self.table();
        table.numberings = table.numberings.wrapping_add(1);
        if table.numberings == 0 {
            table.local.iter_mut().for_each(|x| *x = (0, 0));
            table.numberings = 1;
        }
        Numbering {
            shared: Vec::new(),
            stamp: table.numberings,
        }
    }

    /// The term numbers of the sentence `text` in the numbering `n`, its shared numbers
    /// remembered by its text (one lookup when they are).
    pub(crate) fn sentence_in(&mut self, text: &str, n: &mut Numbering) -> Vec<u32> {
        let table = self.table();
        if let Some(ids) = table.sentences.get(text) {
            return renumber(&mut table.local, ids, n);
        }
        let ids = table.numbers_of(text);
        let own = renumber(&mut table.local, &ids, n);
        table.remember(text, ids);
        own
    }

    /// [`Locked::text`] in the numbering `n`.
    pub(crate) fn text_in(&mut self, text: &str, n: &mut Numbering) -> Vec<u32> {
        let ids = self.text(text);
        renumber(&mut self.table().local, &ids, n)
    }

    /// The number in `n` of the term `stem` (a term as [`crate::sentences::lexical::terms`]
    /// gives it), numbered in the table first if it is new there.
    pub(crate) fn stem_in(&mut self, stem: &str, n: &mut Numbering) -> u32 {
        let table = self.table();
        let id = match table.numbers.get(stem) {
            Some(&id) => id,
            None => {
                let id = table.terms.len() as u32;
                table.numbers.insert(stem.into(), id);
                table.terms.push(stem.into());
                id
            }
        };
        renumber(&mut table.local, &[id], n)[0]
    }

    /// The terms of the numbering `n`, by its numbers.
    pub(crate) fn spelled(&mut self, n: &Numbering) -> Spelled {
        let table = self.table();
        let mut out = Spelled {
            text: String::new(),
            ends: Vec::with_capacity(n.shared.len()),
        };
        for &g in &n.shared {
            out.text.push_str(&table.terms[g as usize]);
            out.ends.push(out.text.len());
        }
        out
    }
}

/// One caller's numbers of the terms it meets ([`Locked::numbering`]), valid while the
/// table stays locked.
pub(crate) struct Numbering {
    /// Own number → shared number.
    shared: Vec<u32>,
    /// Which numbering this is (`SentenceTerms::numberings` when it started).
    stamp: u32,
}

/// `ids` (shared numbers) in the numbering `n`, whose numbers `local` records by shared
/// number: an array read a word, not a hash lookup.
fn renumber(local: &mut Vec<(u32, u32)>, ids: &[u32], n: &mut Numbering) -> Vec<u32> {
    ids.iter()
        .map(|&g| {
            let g = g as usize;
            if g >= local.len() {
                local.resize(g + 1, (0, 0));
            }
            match local[g] {
                (stamp, own) if stamp == n.stamp => own,
                _ => {
                    let own = n.shared.len() as u32;
                    n.shared.push(g as u32);
                    local[g] = (n.stamp, own);
                    own
                }
            }
        })
        .collect()
}

/// Terms by number, written one after the other.
pub(crate) struct Spelled {
    text: String,
    /// Where each term ends in `text`.
    ends: Vec<usize>,
}

impl Spelled {
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }
}

impl std::ops::Index<usize> for Spelled {
    type Output = str;

    fn index(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }
}

impl SentenceTerms {
    /// Keeps `ids` as the terms of the sentence `text`, first forgetting every sentence
    /// kept when they would pass the bytes kept.
    fn remember(&mut self, text: &str, ids: Vec<u32>) {
        let bytes = text.len() + 4 * ids.len();
        if self.sentence_bytes + bytes > SENTENCE_BYTES {
            self.sentences.clear();
            self.sentence_bytes = 0;
        }
        self.sentence_bytes += bytes;
        self.sentences.insert(text.into(), ids.into_boxed_slice());
    }

    /// The numbers of the terms of `text` ([`crate::sentences::lexical::terms`] as
    /// numbers), numbering new terms.
    fn numbers_of(&mut self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        for w in words(text) {
            let id = match self.words.get(w) {
                Some(&id) => id,
                None => {
                    let id = term_of(w).map(|t| match self.numbers.get(t.as_str()) {
                        Some(&id) => id,
                        None => {
                            let id = self.terms.len() as u32;
                            self.numbers.insert(t.as_str().into(), id);
                            self.terms.push(t.into());
                            id
                        }
                    });
                    if self.words.len() >= WORDS {
                        self.words.clear();
                    }
                    self.words.insert(w.into(), id);
                    id
                }
            };
            out.extend(id);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sentences::lexical::terms;

    fn spelled(locked: &mut Locked, ids: &[u32]) -> Vec<String> {
        ids.iter().map(|&i| locked.term(i).to_string()).collect()
    }

    #[test]
    fn a_sentence_reads_as_its_terms_remembered_or_not() {
        let slot = Mutex::new(None);
        let text = "The Receiving Party shall return all documents, 12 of them.";
        let mut t = SentenceTerms::lock(&slot);
        let first = t.sentence(text);
        assert_eq!(spelled(&mut t, &first), terms(text));
        assert_eq!(t.sentence(text), first, "remembered");
        assert!(t.table().sentences.contains_key(text));
        let again = t.text(text);
        assert_eq!(again, first);
        drop(t);
        let mut t = SentenceTerms::lock(&slot);
        let later = t.sentence(text);
        assert_eq!(spelled(&mut t, &later), terms(text), "after another lock");
    }

    #[test]
    fn the_sentences_kept_stay_within_their_bytes() {
        let slot = Mutex::new(None);
        let mut t = SentenceTerms::lock(&slot);
        // Distinct sentences of about 60 KB each: several times the bound in all.
        let big: Vec<String> = (0..3 * SENTENCE_BYTES / 60_000)
            .map(|i| format!("{i} ") + &"disclosed terms ".repeat(3_750))
            .collect();
        for s in &big {
            let ids = t.sentence(s);
            assert_eq!(ids.len(), 7_501);
            let table = t.table();
            assert!(
                table.sentence_bytes <= SENTENCE_BYTES,
                "{}",
                table.sentence_bytes
            );
            let held: usize = table
                .sentences
                .iter()
                .map(|(k, v)| k.len() + 4 * v.len())
                .sum();
            assert_eq!(held, table.sentence_bytes);
        }
        let ids = t.text("disclosed terms");
        assert_eq!(spelled(&mut t, &ids), ["disclos", "term"]);
    }

    #[test]
    fn a_numbering_counts_from_zero_in_the_order_terms_are_met() {
        let slot = Mutex::new(None);
        let mut t = SentenceTerms::lock(&slot);
        // Terms the table numbered earlier, so that its numbers are not the caller's.
        t.text("zebra yak xylophone");
        for round in 0..2 {
            let mut n = t.numbering();
            let a = t.sentence_in("Parties return documents.", &mut n);
            let b = t.text_in("documents of the xylophone parties", &mut n);
            assert_eq!(a, [0, 1, 2], "round {round}");
            assert_eq!(b, [2, 3, 0], "round {round}");
            let spelled = t.spelled(&n);
            let words: Vec<&str> = (0..spelled.len()).map(|i| &spelled[i]).collect();
            let mut expected = terms("Parties return documents");
            expected.extend(terms("xylophone"));
            assert_eq!(words, expected);
        }
        // The stamp wraps: every term is unmet again.
        t.table().numberings = u32::MAX;
        let mut n = t.numbering();
        assert_eq!(t.text_in("xylophone parties", &mut n), [0, 1]);
    }

    #[test]
    fn a_full_table_is_emptied_when_next_locked() {
        let slot = Mutex::new(None);
        let mut t = SentenceTerms::lock(&slot);
        let before = t.text("indemnification");
        let table = t.table();
        table.terms.resize(TERMS, Box::from(""));
        drop(t);
        let mut t = SentenceTerms::lock(&slot);
        assert!(t.table().terms.len() < TERMS, "emptied");
        let after = t.text("indemnification");
        assert_eq!(spelled(&mut t, &after), terms("indemnification"));
        assert!(before.len() == 1 && after.len() == 1);
    }
}
