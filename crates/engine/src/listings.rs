//! What the committed index holds, whichever store it is in: the document list, one
//! document by id, statistics and [`IndexContents`], each read through the backend's
//! [`Catalog`]: the embedded index answers from its snapshot, PostgreSQL with SQL
//! (`excerpt_postgres`'s listings).

use std::sync::Arc;

use excerpt_core::Document;

use crate::backend::Catalog;
use crate::contents::IndexContents;
use crate::spec::{DocumentSummary, IndexStats};
use crate::{Engine, EngineError};

impl Engine {
    /// Summaries of every committed document, in id order (on PostgreSQL counted in
    /// SQL, without reading the texts).
    pub fn documents(&self) -> Result<Vec<DocumentSummary>, EngineError> {
        Ok(self.catalog()?.page("", 0, usize::MAX)?.1)
    }

    /// One page of the documents whose id starts with `prefix`, in id order: the
    /// number of such documents and the summaries of `limit` of them from `offset`
    /// (only those are summarised on an index directory).
    pub fn documents_page(
        &self,
        prefix: &str,
        offset: usize,
        limit: usize,
    ) -> Result<(usize, Vec<DocumentSummary>), EngineError> {
        self.catalog()?.page(prefix, offset, limit)
    }

    /// The committed document `id`, whole; `None` when the index has none by that id.
    pub fn document(&self, id: &str) -> Result<Option<Arc<Document>>, EngineError> {
        self.catalog()?.document(id)
    }

    /// Whether the index has a document `id` (on a damaged directory index, also one
    /// whose text cannot be read).
    pub fn has_document(&self, id: &str) -> Result<bool, EngineError> {
        self.catalog()?.has_document(id)
    }

    /// The committed generation (always 0 on PostgreSQL, which has none) and the
    /// number of documents.
    pub fn generation_and_documents(&self) -> Result<(u64, usize), EngineError> {
        self.catalog()?.generation_and_documents()
    }

    /// Statistics of the committed index. On PostgreSQL: no generation or segments
    /// (both 0), `disk_bytes` is what the index's tables take with their indexes, and
    /// damage is never reported (PostgreSQL checks its own storage).
    pub fn stats(&self) -> Result<IndexStats, EngineError> {
        self.catalog()?.stats()
    }

    /// Every committed document with its chunk vectors ([`IndexContents`]). On
    /// PostgreSQL this loads the whole index into memory; before the first ingest it
    /// fails as queries do (no index).
    pub fn contents(&self) -> Result<IndexContents, EngineError> {
        self.catalog()?.contents()
    }

    fn catalog(&self) -> Result<Box<dyn Catalog>, EngineError> {
        self.backend.catalog()
    }
}
