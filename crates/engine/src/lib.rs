//! Excerpt as a library: one [`Engine`] over an index directory.
//!
//! ```text
//! files ──ingest──▶ ParsedDocument ──chunk──▶ Document ──embed──▶ IndexWriter ─commit─▶ index dir
//! query ──▶ Snapshot ──dense + BM25──▶ fuse ──▶ Hits ──strategy──▶ Context { pieces }
//! ```
//!
//! - [`Engine::ingest`]: walk paths, load, chunk, skip unchanged documents (content hash),
//!   embed (reusing vectors of unchanged chunk texts), commit atomically in batches.
//! - [`Engine::query`]: a [`QueryRequest`] (mode, fusion, filter, strategy, budget) bound
//!   to the latest snapshot, returning a [`Context`] every front end renders.
//! - [`Engine::remove`], [`Engine::snapshot`] for listing and statistics.
//!
//! The crates underneath: `excerpt-core` (types), `excerpt-ingest` (loaders, chunkers),
//! `excerpt-embed` (models), `excerpt-index` (storage), `excerpt-retrieve` (fusion,
//! filters), `excerpt-context` (strategies, rendering).

mod engine;
mod error;
mod ingest;
mod query;

pub use engine::{EmbedderSpec, Engine, EngineOptions, RerankerSpec};
pub use error::EngineError;
pub use ingest::{IngestOptions, IngestProgress, IngestReport, NoProgress, Problem};
pub use query::{Mode, QueryRequest, Retrieved};

pub use excerpt_context::{Context, Piece, StrategyConfig};
pub use excerpt_core::{ChunkerConfig, Document};
pub use excerpt_embed::{RemoteConfig, RerankConfig};
pub use excerpt_index::{IndexError, Snapshot};
pub use excerpt_retrieve::{Filter, FusionMethod, MetaCondition};
