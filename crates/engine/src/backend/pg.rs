//! A PostgreSQL database with pgvector (`excerpt_postgres`): one transaction per
//! document written, listings counted in SQL, storage checked by the database itself.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use excerpt_core::{content_hash, Document};
use excerpt_index::{IndexConfig, RepairReport, Snapshot, VerifyReport};
use excerpt_ingest::ParsedDocument;
use excerpt_postgres::{redact, DocumentWrite, PgError, PgIndex, Replaced};

use super::{described, Backend, Catalog, OpenStore, Sink, Written};
use crate::contents::IndexContents;
use crate::spec::{DocumentSummary, IndexStats};
use crate::EngineError;

/// A PostgreSQL index, connected on first use.
pub(super) struct PgBackend {
    url: String,
    /// `hnsw.ef_search` of dense searches (`None`: the index's default).
    ef_search: Option<usize>,
    connection: Mutex<Option<Arc<PgIndex>>>,
}

impl PgBackend {
    pub(super) fn new(url: &str, ef_search: Option<usize>) -> Self {
        PgBackend {
            url: url.to_string(),
            ef_search,
            connection: Mutex::new(None),
        }
    }

    /// The index (connected on first call, and again while it has no config yet, so a
    /// query sees the first ingest of another process).
    fn index(&self) -> Result<Arc<PgIndex>, EngineError> {
        let mut guard = self.connection.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(pg) = guard.as_ref().filter(|pg| pg.config().is_some()) {
            return Ok(pg.clone());
        }
        let mut pg = PgIndex::connect(&self.url)?;
        if let Some(ef) = self.ef_search {
            pg.set_ef_search(ef);
        }
        let pg = Arc::new(pg);
        *guard = Some(pg.clone());
        Ok(pg)
    }

    /// [`EngineError::Unsupported`] for `verify`/`repair` (`what`): the database checks
    /// and repairs its own storage.
    fn checks_itself(&self, what: &str) -> EngineError {
        EngineError::Unsupported(format!(
            "`{what}` works on the files of an index directory; the index at {} is in PostgreSQL, which checks its own storage (use pg_amcheck, and the database's backups to restore)",
            redact(&self.url)
        ))
    }
}

impl Backend for PgBackend {
    fn shown(&self) -> String {
        redact(&self.url)
    }

    fn store(&self) -> Result<OpenStore, EngineError> {
        let pg = self.index()?;
        if pg.config().is_none() {
            return Err(PgError::NoIndex {
                url: pg.url().to_string(),
            }
            .into());
        }
        Ok((pg, Vec::new()))
    }

    fn snapshot(&self) -> Result<Arc<Snapshot>, EngineError> {
        Err(EngineError::Unsupported(format!(
            "this reads the files of an index directory; the index at {} is in PostgreSQL",
            redact(&self.url)
        )))
    }

    fn catalog(&self) -> Result<Box<dyn Catalog>, EngineError> {
        Ok(Box::new(PgCatalog(self.index()?)))
    }

    fn committed_config(&self) -> Result<Option<IndexConfig>, EngineError> {
        Ok(self.index()?.config().cloned())
    }

    /// The schema is not an ingest's to drop.
    fn creates_index(&self) -> Option<bool> {
        None
    }

    fn open_sink(&self, config: &IndexConfig) -> Result<Box<dyn Sink>, EngineError> {
        let mut pg = PgIndex::connect(&self.url)?;
        pg.ensure_config(config)?;
        // The cached connection read the config before this write set it.
        *self.connection.lock().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(Box::new(PgSink(Arc::new(pg))))
    }

    fn existing_sink(&self) -> Result<Box<dyn Sink>, EngineError> {
        Ok(Box::new(PgSink(self.index()?)))
    }

    /// `$EXCERPT_HOME/pg-indexes/<hash of the URL without its password>` on this
    /// machine (the contexts themselves are stored with the chunks in the database).
    fn context_cache_home(&self) -> PathBuf {
        excerpt_embed::default_home()
            .join("pg-indexes")
            .join(content_hash(&[redact(&self.url).as_bytes()]))
    }

    /// A NUL character (`\0`) in the id, title, source, text or metadata is refused.
    fn check_storable(&self, doc: &ParsedDocument) -> Result<(), EngineError> {
        Ok(storable(doc)?)
    }

    fn verify(&self) -> Result<VerifyReport, EngineError> {
        Err(self.checks_itself("verify"))
    }

    fn repair(
        &self,
        _fallback: &dyn Fn() -> Option<IndexConfig>,
    ) -> Result<RepairReport, EngineError> {
        Err(self.checks_itself("repair"))
    }
}

/// Refuses a document PostgreSQL cannot store (a NUL in its id, title, source, text
/// or metadata), naming the document and the field.
fn storable(doc: &ParsedDocument) -> Result<(), PgError> {
    excerpt_postgres::check_document(
        &doc.id,
        &doc.title,
        doc.source.as_deref(),
        &doc.text,
        &doc.metadata,
    )
}

/// Writes to a PostgreSQL index: one transaction per document, committed at once.
struct PgSink(Arc<PgIndex>);

impl Sink for PgSink {
    fn delete(&mut self, ids: &[String]) -> Result<Vec<String>, EngineError> {
        Ok(self.0.delete(ids)?)
    }

    fn check_storable(&self, doc: &ParsedDocument) -> Result<(), String> {
        storable(doc).map_err(|e| e.to_string())
    }

    /// Other processes may write the same document meanwhile.
    fn counts_at_write(&self) -> bool {
        true
    }

    fn committed_hash(&self, id: &str) -> Result<Option<String>, EngineError> {
        Ok(self.0.committed_hash(id)?)
    }

    fn stored_vectors(
        &mut self,
        keys: &[&String],
        _key_of: &dyn Fn(&str) -> String,
        _headers: bool,
    ) -> Result<HashMap<String, Vec<f32>>, EngineError> {
        let owned: Vec<String> = keys.iter().map(|k| (*k).clone()).collect();
        Ok(self.0.vectors_by_key(&owned)?)
    }

    fn put(
        &mut self,
        doc: Document,
        vectors: Vec<f32>,
        chunks: &[(String, String)],
        sentence_vectors: Option<Vec<f32>>,
    ) -> Result<Option<Written>, EngineError> {
        let keys: Vec<String> = chunks.iter().map(|(k, _)| k.clone()).collect();
        let indexed: Vec<String> = chunks.iter().map(|(_, t)| t.clone()).collect();
        let done = self.0.replace_reporting(&DocumentWrite {
            doc: &doc,
            vectors: &vectors,
            embed_keys: &keys,
            indexed: &indexed,
            sentence_vectors: sentence_vectors.as_deref(),
        })?;
        Ok(Some(match done {
            Replaced::Added => Written::Added,
            Replaced::Updated => Written::Updated,
            Replaced::Unchanged => Written::Unchanged,
        }))
    }

    /// Every document was committed by its own transaction.
    fn commit(&mut self) -> Result<u64, EngineError> {
        Ok(0)
    }

    fn generation(&self) -> u64 {
        0
    }

    fn discard_new(self: Box<Self>, _remove_dir: bool) -> Result<(), EngineError> {
        Ok(())
    }

    fn document_count(&self) -> Result<usize, EngineError> {
        Ok(self.0.document_count()?)
    }
}

/// A PostgreSQL index's catalog: listings counted in SQL.
struct PgCatalog(Arc<PgIndex>);

impl PgCatalog {
    /// The index's config; none before the first ingest.
    fn config(&self) -> Result<&IndexConfig, EngineError> {
        let pg = &self.0;
        Ok(pg.config().ok_or_else(|| PgError::NoIndex {
            url: pg.url().to_string(),
        })?)
    }
}

impl Catalog for PgCatalog {
    fn page(
        &self,
        prefix: &str,
        offset: usize,
        limit: usize,
    ) -> Result<(usize, Vec<DocumentSummary>), EngineError> {
        let all = self.0.list_documents(prefix)?;
        let total = all.len();
        let page = all.into_iter().skip(offset).take(limit).collect();
        Ok((total, page))
    }

    fn document(&self, id: &str) -> Result<Option<Arc<Document>>, EngineError> {
        Ok(self.0.document(id)?.map(Arc::new))
    }

    fn has_document(&self, id: &str) -> Result<bool, EngineError> {
        Ok(self.0.committed_hash(id)?.is_some())
    }

    fn generation_and_documents(&self) -> Result<(u64, usize), EngineError> {
        Ok((0, self.0.document_count()?))
    }

    fn stats(&self) -> Result<IndexStats, EngineError> {
        let pg = &self.0;
        let s = pg.stats()?;
        let cfg = self.config()?;
        // No generations, segments or damage (zeros and empty lists).
        Ok(IndexStats {
            documents: s.documents,
            chunks: s.chunks,
            text_bytes: s.text_bytes,
            disk_bytes: s.disk_bytes,
            sentence_vectors: s.sentence_vectors,
            sentence_vector_documents: s.sentence_vector_documents,
            ..described(pg.url().into(), cfg)
        })
    }

    fn contents(&self) -> Result<IndexContents, EngineError> {
        let config = self.config()?.clone();
        Ok(IndexContents::loaded(config, self.0.all_documents()?))
    }
}
