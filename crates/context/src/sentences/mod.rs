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

use excerpt_core::Document;
#[cfg(test)]
use excerpt_core::TextRange;

/// `xs.partition_point(pred)`, searched from `guess` outward: the probes double in
/// distance until they pass the point, then halve between the last two. With a guess
/// near the point, a few neighbouring entries are read instead of the dozen that lie
/// apart in memory (cache misses) that a binary search of a long document reads.
pub(crate) fn partition_point_near<T>(xs: &[T], guess: usize, pred: impl Fn(&T) -> bool) -> usize {
    let n = xs.len();
    if n == 0 {
        return 0;
    }
    let guess = guess.min(n - 1);
    let mut step = 1;
    if pred(&xs[guess]) {
        // The point is past `guess`: at or after `lo`.
        let mut lo = guess + 1;
        loop {
            let probe = lo + step - 1;
            if probe >= n {
                return lo + xs[lo..].partition_point(pred);
            }
            if !pred(&xs[probe]) {
                return lo + xs[lo..probe].partition_point(pred);
            }
            lo = probe + 1;
            step *= 2;
        }
    }
    // The point is at or before `hi`.
    let mut hi = guess;
    loop {
        if hi < step {
            return xs[..hi].partition_point(pred);
        }
        let probe = hi - step;
        if pred(&xs[probe]) {
            return probe + 1 + xs[probe + 1..hi].partition_point(pred);
        }
        hi = probe;
        step *= 2;
    }
}

/// The first sentence of `doc` that starts at or after byte `at`
/// (`doc.sentences.partition_point(|s| s.byte_start < at)`), looked for where it would
/// be if the sentences were all of one length.
pub(crate) fn first_sentence_from(doc: &Document, at: usize) -> usize {
    let n = doc.sentences.len() as u64;
    let guess = (at as u64).saturating_mul(n) / (doc.text.len() as u64).max(1);
    partition_point_near(&doc.sentences, guess as usize, |s| s.byte_start < at)
}

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

#[cfg(test)]
mod tests {
    use super::partition_point_near;
    use proptest::prelude::*;

    proptest! {
        /// From any guess, the point `partition_point` finds.
        #[test]
        fn the_point_near_a_guess_is_the_point(
            mut xs in proptest::collection::vec(0u32..50, 0..200),
            at in 0u32..52,
            guess in 0usize..250,
        ) {
            xs.sort_unstable();
            let pred = |x: &u32| *x < at;
            prop_assert_eq!(partition_point_near(&xs, guess, pred), xs.partition_point(pred));
        }
    }
}
