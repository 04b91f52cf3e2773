//! Sentences as units of context: how a document's text is cut into units (sentences,
//! clauses, blocks kept whole, lead-ins with what they govern) and how a unit's words are
//! matched against a query. The sentence routes of `topk` and `rse`
//! (`strategies/topk/sentences.rs`, `strategies/rse/sentences.rs`) value units with these;
//! nothing here reads a strategy.

pub(crate) mod clauses;
pub(crate) mod lead;
pub(crate) mod lexical;
pub(crate) mod term_ids;
pub(crate) mod units;

#[cfg(test)]
use excerpt_core::{Document, TextRange};

/// `xs` min-max scaled to [0, 1] (all 0 when they are all equal): how the sentence routes
/// put stored sentence similarities on the scale of their lexical scores.
pub(crate) fn min_max_scaled(xs: &[f32]) -> impl Iterator<Item = f32> + '_ {
    let lo = xs.iter().copied().fold(f32::INFINITY, f32::min);
    let hi = xs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    xs.iter()
        .map(move |&x| if hi > lo { (x - lo) / (hi - lo) } else { 0.0 })
}

#[cfg(test)]
/// A document whose sentences are its lines.
pub(crate) fn lines_doc(text: &str, hash: &str) -> Document {
    let (mut sentences, mut at, mut chars) = (Vec::new(), 0usize, 0usize);
    for line in text.split_inclusive('\n') {
        let n = line.chars().count();
        sentences.push(TextRange {
            byte_start: at,
            byte_end: at + line.len(),
            char_start: chars,
            char_end: chars + n,
        });
        at += line.len();
        chars += n;
    }
    Document {
        id: "d".into(),
        title: "d".into(),
        source: None,
        metadata: Default::default(),
        text: text.into(),
        hash: hash.into(),
        sections: Vec::new(),
        chunks: Vec::new(),
        sentences,
        pages: Vec::new(),
    }
}
