//! The storage interface the query path reads: one trait, [`Store`], with the embedded
//! index ([`SnapshotStore`], over an [`excerpt_index::Snapshot`]) as one implementation
//! and PostgreSQL (`excerpt-postgres`) as the other.
//!
//! A query asks a store for both searches at once ([`Store::search`]); the store answers
//! with the ranked chunk keys and a [`Corpus`] that holds at least every document those
//! keys name (their texts, sections, sentences and chunk vectors), read from the same
//! committed state as the searches. Keys index that corpus, so fusion, reranking and
//! every strategy run unchanged on either store.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use excerpt_core::{ChunkKey, Corpus, Derived, Document, EmbedError, ErrorKind};
use excerpt_index::{DocMask, IndexError, Snapshot};

use crate::filter::Filter;

/// Why a store could not answer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The filter names a document id the store does not have.
    #[error("no document with id {0:?} in the index")]
    UnknownDocument(String),
    /// The embedded index failed.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// Another backend failed.
    #[error("{message}")]
    Backend {
        /// Whose fault it is.
        kind: ErrorKind,
        /// What happened, in one line.
        message: String,
    },
    /// The query could not be embedded ([`Store::search_embedding`]).
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

impl StoreError {
    /// Whose fault it is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            StoreError::UnknownDocument(_) => ErrorKind::BadInput,
            StoreError::Index(e) => e.kind(),
            StoreError::Backend { kind, .. } => *kind,
            StoreError::Embed(e) => e.kind(),
        }
    }
}

/// The searches one query runs on a store.
#[derive(Debug, Clone, Copy)]
pub struct SearchRequest<'a> {
    /// The query vector (unit length) for dense search; `None`: no dense search.
    pub dense: Option<&'a [f32]>,
    /// The query text for lexical search; `None`: no lexical search.
    pub lexical: Option<&'a str>,
    /// Results each search returns at most.
    pub k: usize,
    /// Which documents may be returned (applied inside both searches).
    pub filter: &'a Filter,
}

/// What a store found for a [`SearchRequest`].
pub struct Found {
    /// Dense results, best first, ties by key (empty without a query vector).
    pub dense: Vec<(ChunkKey, f32)>,
    /// Lexical results, best first, ties by key (empty without a query text).
    pub lexical: Vec<(ChunkKey, f32)>,
    /// The documents the keys index (at least every one a result names).
    pub corpus: Arc<dyn StoreCorpus>,
    /// How long each step took.
    pub times: SearchTimes,
}

/// How long the steps of a search took (zero for a step that did not run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SearchTimes {
    /// Embedding the query ([`Store::search_embedding`]).
    pub embed: Duration,
    /// The dense search.
    pub dense: Duration,
    /// The lexical search.
    pub lexical: Duration,
}

/// Runs `f` and says how long it took.
pub(crate) fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed())
}

/// Embeds the query text: what [`Store::search_embedding`] calls.
pub type EmbedQuery<'a> = &'a (dyn Fn() -> Result<Vec<f32>, EmbedError> + Sync);

/// Work on the lexical results as soon as they exist, given with them the documents
/// they index: [`Store::search_embedding`] runs it beside the query's embedding where
/// it runs the lexical search so (the engine reads its feedback terms there).
pub type AfterLexical<'a> = &'a (dyn Fn(&dyn Corpus, &[(ChunkKey, f32)]) + Sync);

impl std::fmt::Debug for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Found")
            .field("dense", &self.dense.len())
            .field("lexical", &self.lexical.len())
            .finish_non_exhaustive()
    }
}

/// A [`Corpus`] that can be shared across threads and kept with a query's results.
pub trait StoreCorpus: Corpus + Send + Sync {
    /// The corpus as the strategies' read interface.
    fn as_corpus(&self) -> &dyn Corpus;
}

impl<T: Corpus + Send + Sync> StoreCorpus for T {
    fn as_corpus(&self) -> &dyn Corpus {
        self
    }
}

/// What the query path needs from an index.
pub trait Store: Send + Sync {
    /// The embedding model every vector of the store was made with.
    fn model_id(&self) -> &str;
    /// Whether chunk headers (title and section path) are part of each chunk's
    /// indexed text.
    fn headers(&self) -> bool;
    /// Runs the searches of `req` on one committed state of the store. A document id
    /// of the filter that the store does not have is [`StoreError::UnknownDocument`].
    fn search(&self, req: &SearchRequest<'_>) -> Result<Found, StoreError>;

    /// Embeds the query with `embed` and runs the searches of `req` with that vector
    /// (`req.dense` is ignored), returning the vector with what was found, and calls
    /// `after_lexical` (when given) with the lexical results. A store that can runs its
    /// lexical search, then `after_lexical`, while the query is embedded (the embedded
    /// index: both read one snapshot); this default embeds first, then calls
    /// [`Store::search`], then `after_lexical`.
    fn search_embedding(
        &self,
        req: &SearchRequest<'_>,
        embed: EmbedQuery<'_>,
        after_lexical: Option<AfterLexical<'_>>,
    ) -> Result<(Vec<f32>, Found), StoreError> {
        let (vector, embed_time) = timed(embed);
        let vector = vector?;
        let mut found = self.search(&SearchRequest {
            dense: Some(&vector),
            ..*req
        })?;
        found.times.embed = embed_time;
        if let (Some(after), Some(_)) = (after_lexical, req.lexical) {
            after(found.corpus.as_corpus(), &found.lexical);
        }
        Ok((vector, found))
    }
}

/// The embedded index's snapshot as a [`Corpus`] (keys are positions in
/// [`Snapshot::documents`]).
#[derive(Debug, Clone)]
pub struct SnapshotCorpus(pub Arc<Snapshot>);

impl Corpus for SnapshotCorpus {
    fn document(&self, doc: u32) -> Option<&Document> {
        self.0.doc(doc).map(|d| d.as_ref())
    }
    fn chunk_vector(&self, key: ChunkKey) -> Option<&[f32]> {
        self.0.vector(key)
    }
    fn sentence_vector(&self, doc: u32, sentence: usize) -> Option<Cow<'_, [f32]>> {
        self.0.sentence_vector(doc, sentence).map(Cow::Owned)
    }
    fn derived(&self) -> &Derived {
        self.0.derived()
    }
}

/// The embedded index as a [`Store`]: dense search by the snapshot's IVF (else exact),
/// lexical search by its BM25, the filter as a document mask both apply.
#[derive(Debug, Clone)]
pub struct SnapshotStore(pub Arc<Snapshot>);

impl Store for SnapshotStore {
    fn model_id(&self) -> &str {
        &self.0.config().model_id
    }
    fn headers(&self) -> bool {
        self.0.config().headers
    }
    fn search(&self, req: &SearchRequest<'_>) -> Result<Found, StoreError> {
        let mask = self.mask(req.filter)?;
        let (dense, dense_time) = timed(|| match req.dense {
            Some(q) => self.0.dense_search(q, req.k, mask.as_ref()),
            None => Vec::new(),
        });
        let (lexical, lexical_time) = timed(|| self.lexical(req, mask.as_ref()));
        Ok(Found {
            dense,
            lexical: lexical?,
            corpus: Arc::new(SnapshotCorpus(self.0.clone())),
            times: SearchTimes {
                embed: Duration::ZERO,
                dense: dense_time,
                lexical: lexical_time,
            },
        })
    }

    /// The BM25 search runs on a second thread while this one embeds the query; the
    /// dense search follows. On two cores a hybrid query's BM25 search costs no time.
    fn search_embedding(
        &self,
        req: &SearchRequest<'_>,
        embed: EmbedQuery<'_>,
        after_lexical: Option<AfterLexical<'_>>,
    ) -> Result<(Vec<f32>, Found), StoreError> {
        let mask = self.mask(req.filter)?;
        let corpus = SnapshotCorpus(self.0.clone());
        let lexical_part = || {
            let found = timed(|| self.lexical(req, mask.as_ref()));
            if let (Some(after), (Ok(lexical), _)) = (after_lexical, &found) {
                after(&corpus, lexical);
            }
            found
        };
        let ((vector, embed_time), (lexical, lexical_time)) = if req.lexical.is_none() {
            (timed(embed), (Ok(Vec::new()), Duration::ZERO))
        } else if rayon::current_num_threads() >= 2 {
            // Both halves in the thread pool the encoder's products run in: while one
            // worker searches, the other embeds (taking every task of the products
            // itself), and takes its share of them back when the search is done. A
            // thread of its own for the search would make three busy threads on two
            // cores, and a product would wait on whichever of its halves lost its core.
            rayon::join(|| timed(embed), lexical_part)
        } else {
            // One worker: a thread of its own, so the search still overlaps an
            // embedding that waits (a remote endpoint).
            std::thread::scope(|scope| {
                let lexical = scope.spawn(lexical_part);
                let vector = timed(embed);
                let lexical = lexical
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (vector, lexical)
            })
        };
        let vector = vector?;
        let lexical = lexical?;
        let (dense, dense_time) = timed(|| self.0.dense_search(&vector, req.k, mask.as_ref()));
        let found = Found {
            dense,
            lexical,
            corpus: Arc::new(SnapshotCorpus(self.0.clone())),
            times: SearchTimes {
                embed: embed_time,
                dense: dense_time,
                lexical: lexical_time,
            },
        };
        Ok((vector, found))
    }
}

impl SnapshotStore {
    /// The filter as a document mask; an unknown document id is an error.
    fn mask(&self, filter: &Filter) -> Result<Option<DocMask>, StoreError> {
        let snapshot = &self.0;
        if let Some(id) = filter
            .doc_ids
            .iter()
            .find(|id| snapshot.doc_index(id).is_none())
        {
            return Err(StoreError::UnknownDocument(id.clone()));
        }
        Ok(filter.mask(snapshot.documents()))
    }

    /// The BM25 search of `req` (empty without a query text).
    fn lexical(
        &self,
        req: &SearchRequest<'_>,
        mask: Option<&DocMask>,
    ) -> Result<Vec<(ChunkKey, f32)>, StoreError> {
        match req.lexical {
            Some(text) => Ok(self.0.bm25_search(text, req.k, mask)?),
            None => Ok(Vec::new()),
        }
    }
}
