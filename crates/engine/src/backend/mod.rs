//! Where an index lives: an index directory (the embedded index of `excerpt_index`) or
//! a PostgreSQL database (`excerpt_postgres`). [`open`] picks the [`Backend`] once, from
//! the engine's options, and the engine holds it; this folder is the only code of the
//! engine that knows which one it has.
//!
//! A backend answers through three traits: [`Backend`] (the store queries read, the
//! committed config, writers, listings, maintenance), [`Sink`] (what one ingest or
//! removal writes through) and [`Catalog`] (listings and statistics of the committed
//! index). A new backend is a new file here implementing them, and one arm in [`open`].

mod dir;
mod pg;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use excerpt_core::Document;
use excerpt_index::{IndexConfig, RepairReport, Snapshot, VerifyReport};
use excerpt_ingest::ParsedDocument;
use excerpt_retrieve::Store;

use crate::contents::IndexContents;
use crate::spec::{DocumentSummary, IndexStats};
use crate::EngineError;

/// A store to query, and what it may be missing (one line each: damage of the index
/// directory that a query cannot read around; empty when sound).
pub type OpenStore = (Arc<dyn Store>, Vec<String>);

/// The backend of the index at `location`: PostgreSQL for a `postgres://` URL (its
/// dense searches at `hnsw.ef_search` `ef_search`, `None`: the default), else the
/// directory. Nothing is opened or connected yet.
pub(crate) fn open(location: &Path, ef_search: Option<usize>) -> Box<dyn Backend> {
    match location
        .to_str()
        .filter(|s| excerpt_postgres::is_postgres_url(s))
    {
        Some(url) => Box::new(pg::PgBackend::new(url, ef_search)),
        None => Box::new(dir::DirBackend::new(location.to_path_buf())),
    }
}

/// One place an index can live.
pub(crate) trait Backend: Send + Sync {
    /// The index as messages name it: its directory, or its URL without the password.
    fn shown(&self) -> String;

    /// The store queries read (the latest committed state), with its warnings.
    fn store(&self) -> Result<OpenStore, EngineError>;

    /// The latest committed snapshot of an index directory;
    /// [`EngineError::Unsupported`] where the index is not one.
    fn snapshot(&self) -> Result<Arc<Snapshot>, EngineError>;

    /// Listings and statistics of the committed index.
    fn catalog(&self) -> Result<Box<dyn Catalog>, EngineError>;

    /// The committed index's config; `None` before the first ingest.
    fn committed_config(&self) -> Result<Option<IndexConfig>, EngineError>;

    /// `Some(whether its directory exists)` when an ingest would create the index here
    /// and should remove it again if nothing could be ingested; `None` otherwise.
    fn creates_index(&self) -> Option<bool>;

    /// A writer for one ingest with `config` (the index is created when there is none).
    fn open_sink(&self, config: &IndexConfig) -> Result<Box<dyn Sink>, EngineError>;

    /// A writer to the index as it is (for removals). On a damaged index directory,
    /// [`excerpt_index::IndexError::Corrupt`] (repair first).
    fn existing_sink(&self) -> Result<Box<dyn Sink>, EngineError>;

    /// The directory whose `contextualize/cache.jsonl` caches an LLM's chunk contexts.
    fn context_cache_home(&self) -> PathBuf;

    /// Refuses a document this index cannot store, naming the document and the field.
    fn check_storable(&self, doc: &ParsedDocument) -> Result<(), EngineError>;

    /// Checks every stored file; [`EngineError::Unsupported`] where the store checks
    /// itself.
    fn verify(&self) -> Result<VerifyReport, EngineError>;

    /// Repairs the index (`fallback`: the config to read segments with when no
    /// manifest survives); [`EngineError::Unsupported`] where the store repairs itself.
    fn repair(
        &self,
        fallback: &dyn Fn() -> Option<IndexConfig>,
    ) -> Result<RepairReport, EngineError>;
}

/// What a [`Sink::put`] did, when the sink says so itself ([`Sink::counts_at_write`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    /// The document was not in the index.
    Added,
    /// Another version was there and was replaced.
    Updated,
    /// The same content was there already.
    Unchanged,
}

/// Where one ingest run (or removal) writes.
pub(crate) trait Sink {
    /// Deletes (or stages the deletion of) the documents `ids`; returns those that
    /// existed.
    fn delete(&mut self, ids: &[String]) -> Result<Vec<String>, EngineError>;

    /// Whether the index can store `doc`; the reason when it cannot (which fails that
    /// document, not the run).
    fn check_storable(&self, doc: &ParsedDocument) -> Result<(), String>;

    /// Whether [`Sink::put`] itself says if it added, updated or found a document
    /// unchanged (where other processes may write the same document meanwhile);
    /// otherwise the run counts it when it is queued, from the committed hash.
    fn counts_at_write(&self) -> bool;

    /// The content hash of the committed document `id`.
    fn committed_hash(&self, id: &str) -> Result<Option<String>, EngineError>;

    /// Committed vectors for the embedding-input keys `keys` (those found).
    fn stored_vectors(
        &mut self,
        keys: &[&String],
        key_of: &dyn Fn(&str) -> String,
        headers: bool,
    ) -> Result<HashMap<String, Vec<f32>>, EngineError>;

    /// Stages or writes one document with its chunk vectors, and per chunk its
    /// embedding-input key and indexed text; with [`Sink::counts_at_write`], returns
    /// what the write did.
    fn put(
        &mut self,
        doc: Document,
        vectors: Vec<f32>,
        chunks: &[(String, String)],
        sentence_vectors: Option<Vec<f32>>,
    ) -> Result<Option<Written>, EngineError>;

    /// Commits what is staged; returns the generation (0 where there is none).
    fn commit(&mut self) -> Result<u64, EngineError>;

    /// The committed generation (0 where there is none).
    fn generation(&self) -> u64;

    /// Removes an index this run created and left empty (with its directory when
    /// `remove_dir`), where the run created one.
    fn discard_new(self: Box<Self>, remove_dir: bool) -> Result<(), EngineError>;

    /// Number of committed documents.
    fn document_count(&self) -> Result<usize, EngineError>;
}

/// What a backend tells about its committed index: the reads behind the engine's
/// listings.
pub(crate) trait Catalog {
    /// The documents whose id starts with `prefix`, in id order: their number and the
    /// summaries of `limit` of them from `offset`.
    fn page(
        &self,
        prefix: &str,
        offset: usize,
        limit: usize,
    ) -> Result<(usize, Vec<DocumentSummary>), EngineError>;
    /// The committed document `id`, whole.
    fn document(&self, id: &str) -> Result<Option<Arc<Document>>, EngineError>;
    /// Whether there is a document `id`.
    fn has_document(&self, id: &str) -> Result<bool, EngineError>;
    /// The committed generation and the number of documents.
    fn generation_and_documents(&self) -> Result<(u64, usize), EngineError>;
    /// Statistics of the committed index.
    fn stats(&self) -> Result<IndexStats, EngineError>;
    /// Every committed document with its chunk vectors.
    fn contents(&self) -> Result<IndexContents, EngineError>;
}

/// The stats fields an index's config decides (model, dimension, chunker, headers), at
/// `index`; every count zero.
fn described(index: PathBuf, cfg: &IndexConfig) -> IndexStats {
    IndexStats {
        index,
        model: cfg.model_id.clone(),
        dimension: cfg.dimension,
        chunker: cfg.chunker.to_string(),
        headers: cfg.headers,
        ..IndexStats::default()
    }
}
