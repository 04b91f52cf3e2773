//! Excerpt's vocabulary, shared by every other crate. No IO, no async, no vendor.
//!
//! - [`Document`]: a source text with its [`Section`] tree, its partition into
//!   [`Chunk`]s and its sentence ranges ([`TextRange`]). [`Document::validate`] checks the
//!   invariant everything else relies on: chunks partition the text exactly.
//! - [`Text`]: a document's text, owned or read in place from a shared buffer (the
//!   index's memory-mapped segment files).
//! - [`TextRange`]: a half-open range carried both as byte offsets (for slicing in Rust)
//!   and character offsets (Unicode scalar values, what users and the eval format see).
//! - [`Embedder`] and [`TokenCounter`]: the two model-facing traits.
//! - [`ChunkerConfig`]: how a collection was chunked, recorded in the index.
//! - [`ErrorKind`]: the one classification of errors (bad input, not found, conflict,
//!   unavailable, internal) every library error reports and every front end maps.

// One `unsafe` call, in `text` (a string slice of bytes already checked), allowed there.
#![deny(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod document;
mod embedder;
mod error;
mod figures;
mod hash;
mod offsets;
mod query;
mod rerank;
mod text;
mod vector;

pub use document::{
    check_document_id, chunk_header, header_text, indexed_text, shown_section, shown_title, Chunk,
    ChunkKey, ChunkerConfig, Document, DocumentInPlace, DocumentSummary, Section, SectionId,
    HEADER_SECTION_MAX_CHARS, HEADER_TITLE_MAX_CHARS, MAX_ID_BYTES,
};
pub use embedder::{EmbedError, Embedder, Pooled, RemoteEndpoint, SpanPool, TokenCounter};
pub use error::{Error, ErrorKind};
pub use figures::trailing_figures;
pub use hash::content_hash;
pub use text::{SharedBytes, Text};

/// Lanes of the cosine's sums: dimension `i` is added in lane `i % COSINE_LANES`.
const COSINE_LANES: usize = 8;

/// Per-lane sums of squares of `a`'s first dimensions (a multiple of the lanes).
fn squares(a: &[f32]) -> [f64; COSINE_LANES] {
    let mut sums = [0f64; COSINE_LANES];
    for x in a.chunks_exact(COSINE_LANES) {
        for (s, &x) in sums.iter_mut().zip(x) {
            let x = f64::from(x);
            *s += x * x;
        }
    }
    sums
}

/// The lanes' sum, in a fixed order.
fn lanes_total(v: [f64; COSINE_LANES]) -> f64 {
    ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]))
}

/// `a · a` in lanes, as [`dot_and_square`] sums `b · b`.
fn sum_of_squares(a: &[f32]) -> f64 {
    let whole = a.len() - a.len() % COSINE_LANES;
    let mut sums = squares(&a[..whole]);
    for (s, &x) in sums.iter_mut().zip(&a[whole..]) {
        *s += f64::from(x) * f64::from(x);
    }
    lanes_total(sums)
}

/// `a · b` and `b · b`, each in lanes: `x` gives `a`'s dimensions as f64.
fn dot_and_square(a: impl Fn(usize) -> f64, b: &[f32]) -> (f64, f64) {
    let (mut dot, mut nb) = ([0f64; COSINE_LANES], [0f64; COSINE_LANES]);
    let whole = b.len() - b.len() % COSINE_LANES;
    for (c, y) in b[..whole].chunks_exact(COSINE_LANES).enumerate() {
        for i in 0..COSINE_LANES {
            let (x, y) = (a(c * COSINE_LANES + i), f64::from(y[i]));
            dot[i] += x * y;
            nb[i] += y * y;
        }
    }
    for (i, &y) in b[whole..].iter().enumerate() {
        let (x, y) = (a(whole + i), f64::from(y));
        dot[i] += x * y;
        nb[i] += y * y;
    }
    (lanes_total(dot), lanes_total(nb))
}

/// Cosine similarity in f64; 0 when either vector is zero or the lengths differ.
///
/// The sums run in eight lanes (dimension `i` in lane `i % 8`), each with its own
/// chain of additions, instead of one running sum per quantity that waits on the
/// previous addition at every dimension; the result is the same up to rounding in
/// f64. Comparing one vector with many, [`CosineTo`] gives the same values faster.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
    let na = sum_of_squares(a);
    let (dot, nb) = dot_and_square(|i| f64::from(a[i]), b);
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// One vector prepared for its cosine with many others (a query against every chunk of
/// a document): converted to f64 and its norm taken once. [`CosineTo::cosine`] gives
/// exactly [`cosine`]'s values, in about two thirds of its time.
#[derive(Debug, Clone)]
pub struct CosineTo {
    v: Vec<f64>,
    norm: f64,
}

impl CosineTo {
    /// Prepares `a`.
    pub fn new(a: &[f32]) -> Self {
        Self {
            v: a.iter().map(|&x| f64::from(x)).collect(),
            norm: sum_of_squares(a).sqrt(),
        }
    }

    /// `cosine(a, b)` of the prepared `a`.
    pub fn cosine(&self, b: &[f32]) -> f64 {
        if b.len() != self.v.len() {
            return 0.0;
        }
        let (dot, nb) = dot_and_square(|i| self.v[i], b);
        if self.norm == 0.0 || nb == 0.0 {
            0.0
        } else {
            dot / (self.norm * nb.sqrt())
        }
    }
}
pub use offsets::{CharIndex, TextRange};
pub use query::{Context, Corpus, Derived, Hit, Piece, PieceOrder, Timings};
pub use rerank::Reranker;
pub use vector::{normalize, NORM_EPSILON};

#[cfg(test)]
mod tests {
    use super::{cosine, CosineTo};
    use proptest::prelude::*;

    /// The textbook cosine: one running sum per quantity, in order.
    fn sequential(a: &[f32], b: &[f32]) -> f64 {
        let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
        for (x, y) in a.iter().zip(b) {
            let (x, y) = (f64::from(*x), f64::from(*y));
            dot += x * y;
            na += x * x;
            nb += y * y;
        }
        if na == 0.0 || nb == 0.0 {
            0.0
        } else {
            dot / (na.sqrt() * nb.sqrt())
        }
    }

    proptest! {
        #[test]
        fn lanes_give_the_sequential_cosine(
            pairs in proptest::collection::vec((-2f32..2., -2f32..2.), 0..50)
        ) {
            let (a, b): (Vec<f32>, Vec<f32>) = pairs.into_iter().unzip();
            let (got, want) = (cosine(&a, &b), sequential(&a, &b));
            prop_assert!((got - want).abs() <= 1e-12, "{got} vs {want}");
            // As the callers use it, in f32: the same value.
            prop_assert!(((got as f32) - (want as f32)).abs() <= f32::EPSILON);
            // Either way round, and prepared, the same bits.
            prop_assert_eq!(cosine(&b, &a).to_bits(), got.to_bits());
            prop_assert_eq!(CosineTo::new(&a).cosine(&b).to_bits(), got.to_bits());
        }
    }

    #[test]
    fn zero_vectors_and_mismatched_lengths_give_zero() {
        assert_eq!(cosine(&[0.0; 9], &[1.0; 9]), 0.0);
        assert_eq!(cosine(&[1.0; 9], &[1.0; 8]), 0.0);
        assert_eq!(cosine(&[], &[]), 0.0);
        assert_eq!(CosineTo::new(&[0.0; 9]).cosine(&[1.0; 9]), 0.0);
        assert_eq!(CosineTo::new(&[1.0; 9]).cosine(&[0.0; 9]), 0.0);
        assert_eq!(CosineTo::new(&[1.0; 9]).cosine(&[1.0; 8]), 0.0);
        let v: Vec<f32> = (0..384).map(|i| (i as f32 * 0.37).sin()).collect();
        assert!((cosine(&v, &v) - 1.0).abs() < 1e-12);
        let w: Vec<f32> = v.iter().map(|x| -2.0 * x).collect();
        assert!((cosine(&v, &w) + 1.0).abs() < 1e-12);
    }
}
