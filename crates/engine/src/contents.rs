//! What the committed index holds, whichever store it is in: the document list, one
//! document by id, statistics, and [`IndexContents`] (every document with its chunk
//! vectors, for evaluation runs), through one [`Catalog`] per backend: the embedded index answers from its snapshot,
//! PostgreSQL with SQL (`excerpt_postgres`'s listings).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use excerpt_core::Document;
use excerpt_index::{IndexConfig, Snapshot};
use excerpt_postgres::PgIndex;

use crate::spec::{DocumentSummary, IndexStats};
use crate::{Engine, EngineError};

/// Every committed document of an index with its chunk vectors, read at one point in
/// time: the snapshot of an index directory, or all of a PostgreSQL index loaded into
/// memory (meant for evaluation corpora).
pub struct IndexContents {
    config: IndexConfig,
    source: Source,
}

enum Source {
    Snapshot(Arc<Snapshot>),
    Loaded {
        /// Documents in id order, each with its chunk vectors (row-major).
        docs: Vec<(Document, Vec<f32>)>,
        by_id: HashMap<String, usize>,
    },
}

impl std::fmt::Debug for IndexContents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexContents")
            .field("config", &self.config)
            .field("documents", &self.len())
            .finish_non_exhaustive()
    }
}

impl IndexContents {
    /// The index's config (model, dimension, chunker, headers).
    pub fn config(&self) -> &IndexConfig {
        &self.config
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        match &self.source {
            Source::Snapshot(s) => s.documents().len(),
            Source::Loaded { docs, .. } => docs.len(),
        }
    }

    /// Whether there is no document.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The documents, in id order.
    pub fn documents(&self) -> Box<dyn Iterator<Item = &Document> + '_> {
        match &self.source {
            Source::Snapshot(s) => Box::new(s.documents().iter().map(|d| d.as_ref())),
            Source::Loaded { docs, .. } => Box::new(docs.iter().map(|d| &d.0)),
        }
    }

    /// The unit vector of chunk `ordinal` of document `id`.
    pub fn chunk_vector(&self, id: &str, ordinal: u32) -> Option<&[f32]> {
        match &self.source {
            Source::Snapshot(s) => {
                let d = s.doc_index(id)?;
                s.vector(excerpt_core::ChunkKey::new(d, ordinal))
            }
            Source::Loaded { docs, by_id } => {
                let dim = self.config.dimension;
                let v = &docs[*by_id.get(id)?].1;
                let i = ordinal as usize;
                v.get(i * dim..(i + 1) * dim)
            }
        }
    }
}

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

    /// The catalog of the backend this engine's index is in: the one place the reads
    /// of this module ask which backend that is.
    fn catalog(&self) -> Result<Box<dyn Catalog>, EngineError> {
        Ok(match self.postgres()? {
            Some(pg) => Box::new(PgCatalog(pg)),
            None => Box::new(DirCatalog {
                snap: self.snapshot()?,
                dir: self.options.index_dir.clone(),
            }),
        })
    }
}

/// What a backend tells about its committed index: the reads behind the engine's
/// listings, one implementation per backend.
trait Catalog {
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

/// An index directory's catalog: its snapshot, read in memory.
struct DirCatalog {
    snap: Arc<Snapshot>,
    dir: PathBuf,
}

impl Catalog for DirCatalog {
    fn page(
        &self,
        prefix: &str,
        offset: usize,
        limit: usize,
    ) -> Result<(usize, Vec<DocumentSummary>), EngineError> {
        let matching: Vec<_> = self
            .snap
            .documents()
            .iter()
            .filter(|d| d.id.starts_with(prefix))
            .collect();
        let page = matching
            .iter()
            .skip(offset)
            .take(limit)
            .map(|d| DocumentSummary::of(d))
            .collect();
        Ok((matching.len(), page))
    }

    fn document(&self, id: &str) -> Result<Option<Arc<Document>>, EngineError> {
        let snap = &self.snap;
        Ok(snap.doc_index(id).and_then(|i| snap.doc(i)).cloned())
    }

    fn has_document(&self, id: &str) -> Result<bool, EngineError> {
        Ok(self.snap.doc_index(id).is_some())
    }

    fn generation_and_documents(&self) -> Result<(u64, usize), EngineError> {
        Ok((self.snap.manifest().generation, self.snap.documents().len()))
    }

    fn stats(&self) -> Result<IndexStats, EngineError> {
        let s = self.snap.stats();
        let cfg = self.snap.config();
        Ok(IndexStats {
            generation: s.generation,
            documents: s.documents,
            chunks: s.chunks,
            text_bytes: s.text_bytes,
            segments: s.segments,
            disk_bytes: s.disk_bytes,
            sentence_vectors: s.sentence_vectors,
            sentence_vector_documents: s.sentence_vector_documents,
            damaged: !s.damage.is_empty(),
            damage: s.damage.problems(),
            unavailable_documents: s.damage.lost_documents(),
            unavailable_unnamed: s.damage.lost_unnamed(),
            ..described(self.dir.clone(), cfg)
        })
    }

    fn contents(&self) -> Result<IndexContents, EngineError> {
        Ok(IndexContents {
            config: self.snap.config().clone(),
            source: Source::Snapshot(self.snap.clone()),
        })
    }
}

/// A PostgreSQL index's catalog: listings counted in SQL.
struct PgCatalog(Arc<PgIndex>);

impl PgCatalog {
    /// The index's config; none before the first ingest.
    fn config(&self) -> Result<&IndexConfig, EngineError> {
        let pg = &self.0;
        Ok(pg
            .config()
            .ok_or_else(|| excerpt_postgres::PgError::NoIndex {
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
        let docs = self.0.all_documents()?;
        let by_id = docs
            .iter()
            .enumerate()
            .map(|(i, d)| (d.0.id.clone(), i))
            .collect();
        Ok(IndexContents {
            config,
            source: Source::Loaded { docs, by_id },
        })
    }
}

/// The stats fields an index's config decides (model, dimension, chunker, headers), at
/// `index`; every count zero.
fn described(index: std::path::PathBuf, cfg: &excerpt_index::IndexConfig) -> IndexStats {
    IndexStats {
        index,
        model: cfg.model_id.clone(),
        dimension: cfg.dimension,
        chunker: cfg.chunker.to_string(),
        headers: cfg.headers,
        ..IndexStats::default()
    }
}
