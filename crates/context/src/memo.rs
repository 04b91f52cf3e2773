//! What assembly derives from a collection's documents alone, kept by the collection.
//!
//! Some of what the strategies read is a pure function of a document, or of a word, and
//! costly next to a query's assembly: whether a document is a transcript (reading its
//! first lines), its headings' terms (a filing has hundreds of headings), its sentence
//! units (reading the whole text), the stems of its words, the term numbers of its
//! sentences. The best documents of a collection come back query after query, so these
//! are worked out once and kept in a [`Memo`] that lives in the collection's
//! [`Derived`](excerpt_core::Derived) slot: the embedded index's snapshot holds one for
//! as long as it lives, a corpus fetched for one query (PostgreSQL) for that query. A
//! changed index is a new snapshot with an empty memo, so a kept entry is always that of
//! the documents it came from. Nothing here outlives the documents, and nothing is kept
//! by the process: a query's result is the same whatever ran before it (only its cost
//! differs).

use std::sync::{Arc, Mutex, MutexGuard};

use excerpt_core::{Corpus, Document};

use crate::dialogue::{self, DialogueMemo};
use crate::headings::{self, HeadingMemo, HeadingTerms};
use crate::sentences::lexical::TermMemo;
use crate::sentences::term_ids::{Locked, SentenceTerms};
use crate::sentences::units::{self, UnitMemo};

/// A collection's derived facts, each behind its own lock (see the module
/// documentation). Each part bounds what it keeps.
#[derive(Default)]
pub(crate) struct Memo {
    /// Whether each document is a transcript, by content hash.
    dialogues: Mutex<Option<DialogueMemo>>,
    /// Each document's headings' terms, by its headings.
    headings: Mutex<Option<HeadingMemo>>,
    /// Each document's multi-sentence units, by content hash.
    units: Mutex<Option<UnitMemo>>,
    /// Words' terms.
    terms: Mutex<TermMemo>,
    /// Sentences' term numbers.
    sentence_terms: Mutex<Option<SentenceTerms>>,
}

impl Memo {
    /// The memo of `corpus`, made empty the first time a query of it asks. A corpus
    /// whose slot holds something else (no corpus of this workspace) gets a memo of
    /// its own for the caller: right, only slower.
    pub(crate) fn of(corpus: &dyn Corpus) -> Arc<Memo> {
        corpus
            .derived()
            .get_or_init(Memo::default)
            .unwrap_or_default()
    }

    /// Whether `doc` reads as a transcript ([`dialogue::is_dialogue`]), remembered.
    pub(crate) fn is_dialogue(&self, doc: &Document) -> bool {
        dialogue::doc_is_dialogue(&self.dialogues, doc)
    }

    /// The terms of `doc`'s headings, remembered.
    pub(crate) fn heading_terms(&self, doc: &Document) -> Arc<HeadingTerms> {
        headings::heading_terms(&self.headings, doc)
    }

    /// The units of `doc` that span several sentences
    /// ([`units::block_spans`]), remembered.
    pub(crate) fn block_units(
        &self,
        doc: &Document,
    ) -> Arc<std::collections::BTreeMap<usize, usize>> {
        units::block_units(&self.units, doc)
    }

    /// The terms of `text` ([`crate::sentences::lexical::terms`]), its words' stems
    /// remembered.
    pub(crate) fn terms(&self, text: &str) -> Vec<String> {
        lock(&self.terms).terms(text)
    }

    /// The table of sentences' term numbers, locked for a run of lookups.
    pub(crate) fn sentence_terms(&self) -> Locked<'_> {
        SentenceTerms::lock(&self.sentence_terms)
    }
}

/// `m`, locked; a poisoned lock is taken over (every entry is whole: a panic cannot
/// leave one half-written).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
