//! Binary searches that start where the answer probably is.
//!
//! A document's chunks and sentences are sorted arrays of ranges, searched by byte
//! offset. In a long filing such a binary search reads a dozen entries that lie apart in
//! memory, most of them cache misses; the ranges are of roughly even length, so the
//! entry at `at · n / len` is near the answer, and a search outward from it reads a few
//! neighbouring entries instead.

use excerpt_core::{Chunk, Document, TextRange};

/// `xs.partition_point(pred)`, searched from `guess` outward: the probes double in
/// distance until they pass the point, then halve between the last two. With a guess
/// near the point, a few neighbouring entries are read instead of the dozen that lie
/// apart in memory (cache misses) that a binary search of a long document reads.
fn partition_point_near<T>(xs: &[T], guess: usize, pred: impl Fn(&T) -> bool) -> usize {
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

/// Where byte `at` of a text of `len` bytes falls among `n` ranges of even length that
/// cover it: the guess for [`partition_point_near`].
fn even_guess(at: usize, len: usize, n: usize) -> usize {
    ((at as u128 * n as u128) / len.max(1) as u128) as usize
}

/// `doc.chunks.partition_point(pred)` for a predicate about byte `at` of `doc`.
pub(crate) fn chunk_near(doc: &Document, at: usize, pred: impl Fn(&Chunk) -> bool) -> usize {
    let guess = even_guess(at, doc.text.len(), doc.chunks.len());
    partition_point_near(&doc.chunks, guess, pred)
}

/// `doc.sentences.partition_point(pred)` for a predicate about byte `at` of `doc`.
pub(crate) fn sentence_near(doc: &Document, at: usize, pred: impl Fn(&TextRange) -> bool) -> usize {
    let guess = even_guess(at, doc.text.len(), doc.sentences.len());
    partition_point_near(&doc.sentences, guess, pred)
}

#[cfg(test)]
mod tests {
    use super::{even_guess, partition_point_near};
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

        /// Ranges of uneven length cutting a text, searched from the even guess.
        #[test]
        fn the_even_guess_finds_the_range_of_a_byte(
            lengths in proptest::collection::vec(1usize..400, 1..300),
            at in 0usize..120_000,
        ) {
            let mut ends = Vec::new();
            let mut end = 0;
            for l in lengths {
                end += l;
                ends.push(end);
            }
            let pred = |e: &usize| *e <= at;
            let guess = even_guess(at, end, ends.len());
            prop_assert_eq!(partition_point_near(&ends, guess, pred), ends.partition_point(pred));
        }
    }
}
