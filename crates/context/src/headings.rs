//! The terms of a document's headings, worked out once per document and kept by the
//! collection ([`crate::memo::Memo`]): what a question that names a section by its
//! heading is matched against.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use excerpt_core::Document;

use crate::sentences::lexical::terms;

/// What `auto`'s named-sections step reads of a document's headings, the same for every query:
/// each heading's terms (numbers left out) and, per term, the headings that hold it
/// (ascending).
#[derive(Debug)]
pub(crate) struct HeadingTerms {
    pub(crate) headings: Vec<BTreeSet<String>>,
    pub(crate) postings: HashMap<String, Vec<usize>>,
}

impl HeadingTerms {
    /// How many headings hold `term`.
    pub(crate) fn df(&self, term: &str) -> usize {
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
pub(crate) fn heading_terms(
    slot: &Mutex<Option<HeadingMemo>>,
    doc: &Document,
) -> Arc<HeadingTerms> {
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
