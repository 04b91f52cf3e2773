//! Excerpt as a library: one [`Engine`] over an index directory.
//!
//! ```text
//! files ──ingest──▶ ParsedDocument ──chunk──▶ Document ──embed──▶ IndexWriter ─commit─▶ index dir
//! query ──▶ Snapshot ──dense + BM25──▶ fuse ──▶ Hits ──strategy──▶ Context { pieces }
//! ```
//!
//! - [`Engine::ingest`]: walk paths, load, chunk, skip unchanged documents (content hash),
//!   optionally have an LLM write a context for each new chunk ([`contextualize`]),
//!   embed (reusing vectors of unchanged indexed texts), commit atomically in batches.
//! - [`Engine::query`]: a [`QueryRequest`] (mode, fusion, filter, strategy, budget) bound
//!   to the latest snapshot, returning a [`Context`] every front end renders (with
//!   [`Timings`] per stage when asked).
//! - [`Engine::ingest_documents`]: the same for documents loaded in memory; a document
//!   given in a request (`POST /v1/ingest`, MCP's `ingest`, Python's `ingest_documents`)
//!   is one [`PostedDocument`], loaded by [`PostedDocument::load`] for all of them.
//! - [`Engine::ask`]: a query's context numbered in a prompt, an LLM's streamed answer
//!   with its citations checked against the pieces ([`ask`]).
//! - [`Engine::remove`], [`Engine::documents`], [`Engine::stats`], [`Engine::snapshot`].
//! - [`Engine::verify`], [`Engine::repair`]: what is damaged in an index, and a
//!   consistent index made of what can still be read. Queries on a damaged index answer
//!   from the readable documents and name the others in [`Context::warnings`].
//! - [`render()`]: a context in the format a front end was asked for (JSON, Markdown,
//!   text), the same bytes from the CLI and the server.
//! - [`QuerySpec`]: a query as users spell it (strategy, fusion and filter strings),
//!   validated into a [`QueryRequest`] the same way by the CLI and the server.
//!
//! The crates underneath: `excerpt-core` (types), `excerpt-ingest` (loaders, chunkers),
//! `excerpt-embed` (models), `excerpt-index` (storage), `excerpt-retrieve` (the
//! retrieval stage: searches, calibration, fusion, filters, reranking),
//! `excerpt-context` (strategies, rendering).

#![forbid(unsafe_code)]

pub mod ask;
mod backend;
mod contents;
pub mod contextualize;
mod engine;
mod error;
mod explain;
mod ingest;
mod json;
mod listings;
mod memo;
mod posted;
mod query;
mod render;
mod report;
mod spec;

pub use ask::{Answer, AskOptions};
pub use backend::OpenStore;
pub use contents::IndexContents;
pub use contextualize::ContextualizeOptions;
pub use engine::{EmbedderSpec, Engine, EngineOptions, RerankerSpec};
pub use error::EngineError;
pub use excerpt_postgres::{is_postgres_url, redact as redact_url, PgError};
pub use explain::{explained_value, ExplainedHit};
pub use ingest::IngestOptions;
pub use json::{context_json, context_value, ContextJson};
pub use posted::{PostedDocument, PostedFormat};
pub use query::Retrieved;
pub use render::{render, RenderFormat};
pub use report::{IngestProgress, IngestReport, NoProgress, Problem};
pub use spec::{
    parse_fusion, DocumentSummary, FilterSpec, IndexStats, Mode, QueryRequest, QuerySpec,
};

pub use excerpt_context::{
    Context, ContextError, Piece, Strategy, StrategyConfig, Timings, LLM_ENCODINGS, MAX_BUDGET,
};
pub use excerpt_core::{
    check_document_id, ChunkKey, ChunkerConfig, Document, EmbedError, ErrorKind, RemoteEndpoint,
    MAX_ID_BYTES,
};
pub use excerpt_embed::{ChatConfig, EndpointConfig, RemoteConfig, RerankConfig};
pub use excerpt_index::{
    Damage, FileCheck, IndexError, RepairReport, SegmentDamage, SentenceVectors, Snapshot,
    VerifyReport,
};
pub use excerpt_ingest::{
    load_str, pdfium_library_path, render_pdf_page, run_pdf_page_worker, run_pdf_worker, DocFormat,
    LoadOptions, PageError, PageImage, PageRequest, ParsedDocument, PdfLimits, PdfWorker, PixelBox,
    WalkOptions, DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_PDF_PAGES, DEFAULT_PAGE_WIDTH,
    DEFAULT_PDF_MEMORY_BYTES, DEFAULT_PDF_TIMEOUT_SECS,
};
pub use excerpt_retrieve::{
    Filter, FusionMethod, MetaCondition, RetrieveError, MAX_CANDIDATES, MAX_QUERY_BYTES,
};
