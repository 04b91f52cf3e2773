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
    check_document_id, chunk_header, header_text, indexed_text, Chunk, ChunkKey, ChunkerConfig,
    Document, DocumentInPlace, DocumentSummary, Section, SectionId, HEADER_SECTION_MAX_CHARS,
    HEADER_TITLE_MAX_CHARS, MAX_ID_BYTES,
};
pub use embedder::{EmbedError, Embedder, Pooled, RemoteEndpoint, SpanPool, TokenCounter};
pub use error::{Error, ErrorKind};
pub use figures::trailing_figures;
pub use hash::content_hash;
pub use text::{SharedBytes, Text};

/// Cosine similarity in f64; 0 when either vector is zero or the lengths differ.
///
/// The sums run in eight lanes (dimension `i` goes to lane `i % 8`), which the compiler
/// turns into vector instructions: assembly compares the query with every chunk of
/// a candidate document, and one running sum per quantity made each comparison wait
/// on the previous addition at every dimension (a quarter of `rse`'s assembly time on
/// long documents). The result is the same up to rounding in f64.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    const LANES: usize = 8;
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = ([0f64; LANES], [0f64; LANES], [0f64; LANES]);
    let whole = a.len() - a.len() % LANES;
    for (x, y) in a[..whole]
        .chunks_exact(LANES)
        .zip(b[..whole].chunks_exact(LANES))
    {
        for i in 0..LANES {
            let (x, y) = (f64::from(x[i]), f64::from(y[i]));
            dot[i] += x * y;
            na[i] += x * x;
            nb[i] += y * y;
        }
    }
    for (i, (x, y)) in a[whole..].iter().zip(&b[whole..]).enumerate() {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot[i] += x * y;
        na[i] += x * x;
        nb[i] += y * y;
    }
    let total = |v: [f64; LANES]| ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
    let (dot, na, nb) = (total(dot), total(na), total(nb));
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}
pub use offsets::{CharIndex, TextRange};
pub use query::{Context, Corpus, Hit, Piece, PieceOrder, Timings};
pub use rerank::Reranker;
pub use vector::{normalize, NORM_EPSILON};

#[cfg(test)]
mod tests {
    use super::cosine;
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
        }
    }

    #[test]
    fn zero_vectors_and_mismatched_lengths_give_zero() {
        assert_eq!(cosine(&[0.0; 9], &[1.0; 9]), 0.0);
        assert_eq!(cosine(&[1.0; 9], &[1.0; 8]), 0.0);
        assert_eq!(cosine(&[], &[]), 0.0);
        let v: Vec<f32> = (0..384).map(|i| (i as f32 * 0.37).sin()).collect();
        assert!((cosine(&v, &v) - 1.0).abs() < 1e-12);
        let w: Vec<f32> = v.iter().map(|x| -2.0 * x).collect();
        assert!((cosine(&v, &w) + 1.0).abs() < 1e-12);
    }
}
