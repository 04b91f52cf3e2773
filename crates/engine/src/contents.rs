//! [`IndexContents`]: every document of the committed index with its chunk vectors (for
//! evaluation runs), whichever store it is in.

use std::collections::HashMap;
use std::sync::Arc;

use excerpt_core::Document;
use excerpt_index::{IndexConfig, Snapshot};

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
    /// The contents of an index directory's snapshot.
    pub(crate) fn of_snapshot(snap: Arc<Snapshot>) -> Self {
        IndexContents {
            config: snap.config().clone(),
            source: Source::Snapshot(snap),
        }
    }

    /// Documents loaded into memory, each with its chunk vectors (row-major), in id
    /// order.
    pub(crate) fn loaded(config: IndexConfig, docs: Vec<(Document, Vec<f32>)>) -> Self {
        let by_id = docs
            .iter()
            .enumerate()
            .map(|(i, d)| (d.0.id.clone(), i))
            .collect();
        IndexContents {
            config,
            source: Source::Loaded { docs, by_id },
        }
    }

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
