//! The retrieval stage: a query against one [`Store`], to ranked hits with calibrated
//! relevance.
//!
//! In order: check the request; turn the filter into a document mask; embed the query
//! (dense and hybrid modes); run the dense and/or BM25 search, each returning
//! `candidates` chunks; calibrate relevance ([`crate::calibrate`]) or fuse the two lists
//! ([`crate::fusion`]); optionally rerank the best of them; keep the `top_k` best.

use std::sync::Arc;

use excerpt_core::{ChunkKey, Corpus, EmbedError, Embedder, ErrorKind, Hit, Reranker, Timings};
use excerpt_index::IndexError;
use serde::{Deserialize, Serialize};

use crate::calibrate::{bm25_hits, dense_hits, fused_hits, with_score_relevance};
use crate::filter::Filter;
use excerpt_analysis::Language;

use crate::fusion::{fuse_hybrid, FusionError, FusionMethod};
use crate::store::{timed, AfterLexical, SearchRequest, Store, StoreCorpus, StoreError};

/// Which first-stage retrieval runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Cosine similarity of the query vector to chunk vectors.
    Dense,
    /// BM25 over chunk text and headers.
    Bm25,
    /// Both, fused.
    #[default]
    Hybrid,
}

impl Mode {
    /// Whether the mode searches vectors, and so needs the query embedded.
    pub fn needs_embedder(self) -> bool {
        matches!(self, Mode::Dense | Mode::Hybrid)
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "dense" => Ok(Mode::Dense),
            "bm25" => Ok(Mode::Bm25),
            "hybrid" => Ok(Mode::Hybrid),
            _ => Err(format!(
                "unknown mode {s:?}: expected dense, bm25 or hybrid"
            )),
        }
    }
}

/// What to retrieve, and how.
#[derive(Debug, Clone, Copy)]
pub struct RetrieveRequest<'a> {
    /// The query text.
    pub text: &'a str,
    /// Which searches run.
    pub mode: Mode,
    /// Candidates each search returns before fusion (at least 1).
    pub candidates: usize,
    /// Hits kept at the end (`None`: all).
    pub top_k: Option<usize>,
    /// How dense and BM25 lists are fused in hybrid mode.
    pub fusion: FusionMethod,
    /// Which documents may be returned.
    pub filter: &'a Filter,
    /// Rerank this many of the best candidates (a reranker must be given); their
    /// reranker scores become score and relevance, the rest are dropped. `None`: no
    /// reranking.
    pub rerank_top: Option<usize>,
}

/// The largest `candidates`, `top_k` and `rerank_top` a request may ask for. Searches
/// allocate for the number asked, so an unbounded count from a client could exhaust
/// memory; ten thousand chunks is far more than any context budget can hold.
pub const MAX_CANDIDATES: usize = 10_000;

/// The longest query text, in bytes (a query is embedded and tokenized whole).
pub const MAX_QUERY_BYTES: usize = 64 * 1024;

impl RetrieveRequest<'_> {
    /// Checks what can be checked without a snapshot: a non-blank query of at most
    /// [`MAX_QUERY_BYTES`], and `candidates`, `top_k`, `rerank_top` each between 1 and
    /// [`MAX_CANDIDATES`]. [`retrieve`] checks it again.
    pub fn validate(&self) -> Result<(), RetrieveError> {
        if self.text.trim().is_empty() {
            return Err(RetrieveError::EmptyQuery);
        }
        if self.text.len() > MAX_QUERY_BYTES {
            return Err(RetrieveError::QueryTooLong {
                bytes: self.text.len(),
                max: MAX_QUERY_BYTES,
            });
        }
        if self.candidates == 0 {
            return Err(RetrieveError::ZeroCandidates);
        }
        let counts = [
            ("candidates", Some(self.candidates)),
            ("top_k", self.top_k),
            ("rerank", self.rerank_top),
        ];
        for (name, value) in counts {
            match value {
                Some(0) if name != "candidates" => {
                    return Err(RetrieveError::CountOutOfRange {
                        name,
                        value: 0,
                        max: MAX_CANDIDATES,
                    })
                }
                Some(v) if v > MAX_CANDIDATES => {
                    return Err(RetrieveError::CountOutOfRange {
                        name,
                        value: v,
                        max: MAX_CANDIDATES,
                    })
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// What the stage found.
#[derive(Clone)]
pub struct Retrieval {
    /// The query vector (dense and hybrid modes), for strategies that compare sentences
    /// with the query.
    pub query_vector: Option<Vec<f32>>,
    /// Ranked hits, best first, ties by key.
    pub hits: Vec<Hit>,
    /// The documents the hits' keys index, as the store read them.
    pub corpus: Arc<dyn StoreCorpus>,
    /// The BM25 search's own ranked list (`candidates` at most, best first, ties by key;
    /// empty in dense mode), before fusion and reranking; its keys index `corpus` too.
    pub lexical: Vec<(ChunkKey, f32)>,
    /// How long each step took (embedding, both searches, fusion, reranking; the rest
    /// of the fields are the caller's to fill).
    pub timings: Timings,
    /// Hybrid mode answered by BM25 alone, with no query vector: the model's card does
    /// not list the query's language ([`model_reads_query`]).
    pub bm25_alone: bool,
}

impl std::fmt::Debug for Retrieval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retrieval")
            .field("query_vector", &self.query_vector.as_ref().map(Vec::len))
            .field("hits", &self.hits)
            .finish_non_exhaustive()
    }
}

/// Why retrieval failed.
#[derive(Debug, thiserror::Error)]
pub enum RetrieveError {
    /// The query is blank.
    #[error("the query is empty")]
    EmptyQuery,
    /// `candidates` is 0.
    #[error("candidates must be at least 1")]
    ZeroCandidates,
    /// `candidates`, `top_k` or `rerank` is 0 or above [`MAX_CANDIDATES`].
    #[error("{name} must be between 1 and {max}, got {value}")]
    CountOutOfRange {
        /// The field, as the request spells it.
        name: &'static str,
        /// What was given.
        value: usize,
        /// The largest value allowed.
        max: usize,
    },
    /// The query text is longer than [`MAX_QUERY_BYTES`].
    #[error("the query is {bytes} bytes long; the limit is {max}")]
    QueryTooLong {
        /// Bytes given.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// The filter names a document id the snapshot does not have.
    #[error("no document with id {0:?} in the index")]
    UnknownDocument(String),
    /// The mode searches vectors but no embedder was given (a caller's bug).
    #[error("{0:?} retrieval needs an embedder, and none was given")]
    NoEmbedder(Mode),
    /// The index was built with another embedding model than the one given.
    #[error("the index was built with model {index}, but the configured model is {configured}")]
    ModelMismatch {
        /// Model of the index.
        index: String,
        /// Model of the embedder.
        configured: String,
    },
    /// Reranking was asked for without a reranker.
    #[error("reranking was asked for but no reranker is configured")]
    NoReranker,
    /// A hit names a chunk the snapshot does not have.
    #[error("stale hit {0:?}")]
    StaleHit(ChunkKey),
    /// The reranker answered with another number of scores than passages sent.
    #[error("reranker returned {got} scores for {expected} passages")]
    RerankCount {
        /// Scores received.
        got: usize,
        /// Passages sent.
        expected: usize,
    },
    /// Fusion parameters or scores.
    #[error(transparent)]
    Fusion(#[from] FusionError),
    /// The BM25 search.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The store failed (another backend than the embedded index).
    #[error("{message}")]
    Store {
        /// Whose fault it is.
        kind: ErrorKind,
        /// What happened, in one line.
        message: String,
    },
    /// Embedding the query or reranking.
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

impl RetrieveError {
    /// Whose fault it is: the request's for a blank query, no candidates, an unknown
    /// document or reranking without a reranker; the system's for a model mismatch, a
    /// missing embedder, a stale hit or a reranker that miscounts; the source's
    /// classification for fusion, index and embedding errors.
    pub fn kind(&self) -> ErrorKind {
        match self {
            RetrieveError::EmptyQuery
            | RetrieveError::ZeroCandidates
            | RetrieveError::CountOutOfRange { .. }
            | RetrieveError::QueryTooLong { .. }
            | RetrieveError::UnknownDocument(_)
            | RetrieveError::NoReranker => ErrorKind::BadInput,
            RetrieveError::NoEmbedder(_)
            | RetrieveError::ModelMismatch { .. }
            | RetrieveError::StaleHit(_)
            | RetrieveError::RerankCount { .. } => ErrorKind::Internal,
            RetrieveError::Fusion(e) => e.kind(),
            RetrieveError::Index(e) => e.kind(),
            RetrieveError::Store { kind, .. } => *kind,
            RetrieveError::Embed(e) => e.kind(),
        }
    }
}

impl From<StoreError> for RetrieveError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::UnknownDocument(id) => RetrieveError::UnknownDocument(id),
            StoreError::Index(e) => RetrieveError::Index(e),
            StoreError::Backend { kind, message } => RetrieveError::Store { kind, message },
            StoreError::Embed(e) => RetrieveError::Embed(e),
        }
    }
}

/// Runs the stage on `store`. `embedder` is needed in dense and hybrid modes (its model
/// must be the store's), `reranker` when the request asks for reranking.
pub fn retrieve(
    store: &dyn Store,
    embedder: Option<&dyn Embedder>,
    reranker: Option<&dyn Reranker>,
    req: &RetrieveRequest<'_>,
) -> Result<Retrieval, RetrieveError> {
    retrieve_with(store, embedder, reranker, req, None)
}

/// [`retrieve`], calling `after_lexical` with the lexical results as soon as they
/// exist when the query is also embedded (beside the embedding, where the store runs
/// the two at once: [`Store::search_embedding`]); not called in the other modes.
pub fn retrieve_with(
    store: &dyn Store,
    embedder: Option<&dyn Embedder>,
    reranker: Option<&dyn Reranker>,
    req: &RetrieveRequest<'_>,
    after_lexical: Option<AfterLexical<'_>>,
) -> Result<Retrieval, RetrieveError> {
    req.validate()?;
    let search = SearchRequest {
        dense: None,
        lexical: (req.mode != Mode::Dense).then_some(req.text),
        k: req.candidates,
        filter: req.filter,
    };
    let (query_vector, found) = if req.mode.needs_embedder() {
        let e = embedder.ok_or(RetrieveError::NoEmbedder(req.mode))?;
        if e.model_id() != store.model_id() {
            return Err(RetrieveError::ModelMismatch {
                index: store.model_id().to_string(),
                configured: e.model_id().to_string(),
            });
        }
        let embed = || e.embed_query(req.text);
        let (vector, found) = store.search_embedding(&search, &embed, after_lexical)?;
        (Some(vector), found)
    } else {
        (None, store.search(&search)?)
    };
    let mut timings = Timings {
        embed_ms: Timings::ms(found.times.embed),
        lexical_ms: Timings::ms(found.times.lexical),
        dense_ms: Timings::ms(found.times.dense),
        ..Timings::default()
    };
    let (dense, bm25) = (found.dense, found.lexical);
    let bm25_alone = match (req.mode, embedder) {
        (Mode::Hybrid, Some(e)) => !model_reads_query(e, found.corpus.as_corpus(), &bm25, req.text),
        _ => false,
    };
    let (hits, fusion_time) = timed(|| -> Result<Vec<Hit>, RetrieveError> {
        Ok(match req.mode {
            Mode::Dense => dense_hits(&dense),
            Mode::Bm25 => bm25_hits(&bm25),
            // The model cannot read the query: BM25's hits alone, as in BM25 mode.
            Mode::Hybrid if bm25_alone => bm25_hits(&bm25),
            Mode::Hybrid => {
                let mut hits = fused_hits(fuse_hybrid(&dense, &bm25, req.fusion)?);
                with_score_relevance(&mut hits, &dense, &bm25, req.fusion)?;
                hits
            }
        })
    });
    let mut hits = hits?;
    timings.fusion_ms = Timings::ms(fusion_time);
    if let Some(n) = req.rerank_top {
        let reranker = reranker.ok_or(RetrieveError::NoReranker)?;
        let (reranked, rerank_time) = timed(|| {
            rerank(
                found.corpus.as_corpus(),
                store.headers(),
                reranker,
                req.text,
                hits,
                n,
            )
        });
        hits = reranked?;
        timings.rerank_ms = Timings::ms(rerank_time);
    }
    if let Some(k) = req.top_k {
        hits.truncate(k);
    }
    // Nor do the strategies compare sentences with a vector that cannot mean the query.
    let query_vector = query_vector.filter(|_| !bm25_alone);
    Ok(Retrieval {
        query_vector,
        hits,
        corpus: found.corpus,
        lexical: bm25,
        timings,
        bm25_alone,
    })
}

/// Whether the embedding model can read `query`: its card names no languages
/// ([`Embedder::languages`]: unknown, or multilingual), or the query's language is one
/// of them. The query's language is the one it says clearly
/// ([`excerpt_analysis::detect_query`]), else that of the document of the best BM25 hit
/// (a short Latin-script question may be in several languages; the documents it
/// matches word for word are in its own); with neither, it is taken as read.
///
/// When it cannot, hybrid mode answers as BM25 mode does. Such a model places a query
/// near texts that share its characters, not its meaning: on the XQuAD dev languages
/// with all-MiniLM-L6-v2, equal fusion pulled recall below BM25 alone in every
/// language but English (Hindi 0.16 against 0.52), and every smaller weight of the
/// dense list measured (0.2, 0.1, 0.05) stayed below it (docs/EVAL.md).
pub fn model_reads_query(
    embedder: &dyn Embedder,
    corpus: &dyn Corpus,
    bm25: &[(ChunkKey, f32)],
    query: &str,
) -> bool {
    let Some(reads) = embedder.languages() else {
        return true;
    };
    let language = excerpt_analysis::detect_query(query).or_else(|| {
        let best = bm25.first()?;
        corpus
            .document(best.0.doc)
            .map(excerpt_index::bm25::document_language)
    });
    language.is_none_or(|l| reads.iter().any(|code| Language::parse(code) == Some(l)))
}

/// Reranks the best `n` hits: the reranker reads each chunk as indexed (header and
/// text); its [0, 1] score becomes both score and relevance (a score that is not finite
/// becomes 0). Ties by key.
fn rerank(
    corpus: &dyn Corpus,
    headers: bool,
    reranker: &dyn Reranker,
    query: &str,
    mut hits: Vec<Hit>,
    n: usize,
) -> Result<Vec<Hit>, RetrieveError> {
    hits.truncate(n.max(1));
    let texts: Vec<String> = hits
        .iter()
        .map(|h| {
            let d = corpus
                .document(h.key.doc)
                .ok_or(RetrieveError::StaleHit(h.key))?;
            let c = d
                .chunks
                .get(h.key.ordinal as usize)
                .ok_or(RetrieveError::StaleHit(h.key))?;
            Ok(excerpt_core::indexed_text(d, c, headers))
        })
        .collect::<Result<_, RetrieveError>>()?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let scores = reranker.rerank(query, &refs)?;
    if scores.len() != hits.len() {
        return Err(RetrieveError::RerankCount {
            got: scores.len(),
            expected: hits.len(),
        });
    }
    for (h, s) in hits.iter_mut().zip(scores) {
        let s = if s.is_finite() {
            s.clamp(0.0, 1.0)
        } else {
            0.0
        };
        h.score = s;
        h.relevance = s;
        h.score_relevance = None;
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
    Ok(hits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(text: &'a str, filter: &'a Filter) -> RetrieveRequest<'a> {
        RetrieveRequest {
            text,
            mode: Mode::Hybrid,
            candidates: 10,
            top_k: None,
            fusion: FusionMethod::default(),
            filter,
            rerank_top: None,
        }
    }

    #[test]
    fn requests_are_checked_before_any_search() {
        let filter = Filter::default();
        assert!(request("what", &filter).validate().is_ok());
        assert!(matches!(
            request(" \n", &filter).validate(),
            Err(RetrieveError::EmptyQuery)
        ));
        let mut none = request("what", &filter);
        none.candidates = 0;
        assert!(matches!(
            none.validate(),
            Err(RetrieveError::ZeroCandidates)
        ));
    }

    #[test]
    fn only_vector_modes_need_an_embedder() {
        assert!(Mode::Dense.needs_embedder());
        assert!(Mode::Hybrid.needs_embedder());
        assert!(!Mode::Bm25.needs_embedder());
        assert_eq!("bm25".parse::<Mode>(), Ok(Mode::Bm25));
        assert!("sparse".parse::<Mode>().unwrap_err().contains("sparse"));
    }

    #[test]
    fn faults_of_the_system_are_not_bad_input() {
        let key = ChunkKey { doc: 1, ordinal: 2 };
        assert_eq!(RetrieveError::StaleHit(key).kind(), ErrorKind::Internal);
        let count = RetrieveError::RerankCount {
            got: 1,
            expected: 3,
        };
        assert_eq!(count.kind(), ErrorKind::Internal);
        assert_eq!(
            count.to_string(),
            "reranker returned 1 scores for 3 passages"
        );
        assert_eq!(RetrieveError::NoReranker.kind(), ErrorKind::BadInput);
        assert_eq!(RetrieveError::EmptyQuery.kind(), ErrorKind::BadInput);
        let remote = EmbedError::Remote {
            endpoint: excerpt_core::RemoteEndpoint::Rerank,
            url: "http://127.0.0.1:1/v1/rerank".into(),
            status: None,
            message: "connection refused".into(),
        };
        assert_eq!(RetrieveError::Embed(remote).kind(), ErrorKind::Unavailable);
        assert_eq!(
            RetrieveError::Fusion(FusionError::InvalidAlpha(2.0)).kind(),
            ErrorKind::BadInput
        );
    }
}
