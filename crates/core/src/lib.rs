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
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
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
pub use offsets::{CharIndex, TextRange};
pub use query::{Context, Corpus, Hit, Piece, PieceOrder, Timings};
pub use rerank::Reranker;
pub use vector::{normalize, NORM_EPSILON};
