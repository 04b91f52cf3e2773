//! Excerpt's vocabulary, shared by every other crate. No IO, no async, no vendor.
//!
//! - [`Document`]: a source text with its [`Section`] tree, its partition into
//!   [`Chunk`]s and its sentence ranges ([`TextRange`]). [`Document::validate`] checks the
//!   invariant everything else relies on: chunks partition the text exactly.
//! - [`TextRange`]: a half-open range carried both as byte offsets (for slicing in Rust)
//!   and character offsets (Unicode scalar values, what users and the eval format see).
//! - [`Embedder`] and [`TokenCounter`]: the two model-facing traits.
//! - [`ChunkerConfig`]: how a collection was chunked, recorded in the index.

mod document;
mod embedder;
mod error;
mod hash;
mod offsets;
mod rerank;

pub use document::{
    chunk_header, header_text, indexed_text, Chunk, ChunkKey, ChunkerConfig, Document, Section,
    SectionId,
};
pub use embedder::{EmbedError, Embedder, TokenCounter};
pub use error::Error;
pub use hash::content_hash;
pub use offsets::{CharIndex, TextRange};
pub use rerank::Reranker;
