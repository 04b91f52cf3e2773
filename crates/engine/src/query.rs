use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use excerpt_context::{
    assemble, feedback_terms, AssembleRequest, Context, Corpus, Hit, StrategyConfig, Timings,
};
use excerpt_core::{ChunkKey, Embedder};
use excerpt_retrieve::{Filter, Mode, Retrieval, RetrieveError, SearchRequest, Store, StoreCorpus};

use crate::memo::MemoEmbedder;
use crate::{Engine, EngineError, QueryRequest};

/// The first stage of a query, reusable by several strategies and budgets.
#[derive(Clone)]
pub struct Retrieved {
    /// The documents the hits' keys index, as the store read them.
    pub corpus: Arc<dyn StoreCorpus>,
    /// What the store searched may be missing (damage of an index directory), one
    /// line each; every context assembled from this first stage carries them.
    pub warnings: Vec<String>,
    /// The query vector (dense and hybrid modes).
    pub query_vector: Option<Vec<f32>>,
    /// Ranked hits, best first, ties by key.
    pub hits: Vec<Hit>,
    /// Pseudo-relevance feedback terms of the query, read from the other documents inside
    /// the filter's path prefixes and metadata (see [`excerpt_context::feedback_terms`]);
    /// empty when the request's strategy does not read them
    /// ([`StrategyConfig::uses_feedback`]). Assembling another strategy from this first
    /// stage sees the same terms.
    pub feedback: Vec<(String, f32)>,
    /// How long the first stage's steps took (embedding, searches, fusion, reranking,
    /// feedback terms).
    pub timings: Timings,
    /// Hybrid mode answered by BM25 alone: the model does not read the query's language
    /// ([`excerpt_retrieve::model_reads_query`]).
    pub bm25_alone: bool,
}

impl std::fmt::Debug for Retrieved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retrieved")
            .field("warnings", &self.warnings)
            .field("hits", &self.hits)
            .finish_non_exhaustive()
    }
}

/// Chunks of the other documents, best BM25 matches of the query, whose sentences give
/// its feedback terms.
const FEEDBACK_CHUNKS: usize = 100;
/// Best-matching sentences of those chunks that the feedback terms are read from.
const FEEDBACK_SENTENCES: usize = 10;
/// Feedback terms kept.
const FEEDBACK_TERMS: usize = 30;

/// Whether the feedback terms of `req` are read from its first stage's own BM25 list
/// (no document ids in the filter, lexical search on, at least [`FEEDBACK_CHUNKS`]
/// candidates).
fn feedback_from_first_stage(req: &QueryRequest) -> bool {
    req.strategy.uses_feedback()
        && req.filter.doc_ids.is_empty()
        && req.mode != Mode::Dense
        && req.candidates >= FEEDBACK_CHUNKS
}

/// The feedback terms of `text` from the first [`FEEDBACK_CHUNKS`] chunks of a BM25
/// list.
fn feedback_from_list(
    text: &str,
    corpus: &dyn Corpus,
    lexical: &[(ChunkKey, f32)],
) -> Vec<(String, f32)> {
    let keys: Vec<ChunkKey> = lexical
        .iter()
        .take(FEEDBACK_CHUNKS)
        .map(|(k, _)| *k)
        .collect();
    feedback_from(text, corpus, &keys)
}

/// The feedback terms of `req` after its first stage `found`: none when its strategy does
/// not read them; from the first stage's own BM25 list when that is the feedback search
/// ([`feedback_from_first_stage`]); else from a search of their own ([`feedback`]).
fn query_feedback(
    store: &dyn Store,
    req: &QueryRequest,
    found: &Retrieval,
) -> Result<Vec<(String, f32)>, EngineError> {
    if !req.strategy.uses_feedback() {
        return Ok(Vec::new());
    }
    let corpus = found.corpus.as_corpus();
    if feedback_from_first_stage(req) {
        return Ok(feedback_from_list(&req.text, corpus, &found.lexical));
    }
    // The scoped documents' chunks (of those the first stage read), which the feedback
    // search skips over.
    let (scoped, _) = scoped_chunks(
        corpus,
        found.hits.iter().map(|h| h.key),
        &req.filter.doc_ids,
    );
    feedback(store, &req.text, &req.filter, scoped)
}

/// The feedback terms of `text` (see [`excerpt_context::feedback_terms`]), read from the
/// best BM25 matches among the *other* documents of the collection: the part of the
/// index that `filter`'s path prefixes and metadata conditions allow, minus the documents
/// its ids scope the query to. So a question about one document learns how the rest of
/// the collection words its subject; a caller that fences off folders or tenants keeps
/// them fenced off; and a question scoped to the whole of what it may read gets none
/// (its own documents' best sentences would only echo the query: measured on
/// single-contract indexes, −1.9 recall points at 2000 characters). Only terms leave this
/// function, never text. `scoped_chunks`: how many chunks the scoped documents hold.
fn feedback(
    store: &dyn Store,
    text: &str,
    filter: &Filter,
    scoped_chunks: usize,
) -> Result<Vec<(String, f32)>, EngineError> {
    let collection = Filter {
        doc_ids: Vec::new(),
        ..filter.clone()
    };
    // Room for the scoped documents' own chunks, which are dropped (at least 20, for
    // scoped documents the first stage did not read).
    let k = if filter.doc_ids.is_empty() {
        FEEDBACK_CHUNKS
    } else {
        FEEDBACK_CHUNKS + scoped_chunks.max(20)
    };
    let found = store
        .search(&SearchRequest {
            dense: None,
            lexical: Some(text),
            k,
            filter: &collection,
        })
        .map_err(RetrieveError::from)?;
    let corpus = found.corpus.as_corpus();
    let keys: Vec<ChunkKey> = found
        .lexical
        .iter()
        .map(|(k, _)| *k)
        .filter(|k| {
            corpus
                .document(k.doc)
                .is_some_and(|d| !filter.doc_ids.contains(&d.id))
        })
        .take(FEEDBACK_CHUNKS)
        .collect();
    Ok(feedback_from(text, corpus, &keys))
}

/// The chunks of those scoped documents `ids` that are among the documents of `keys`,
/// and whether all of them are.
fn scoped_chunks(
    corpus: &dyn Corpus,
    keys: impl Iterator<Item = ChunkKey> + Clone,
    ids: &[String],
) -> (usize, bool) {
    let mut all = true;
    let chunks = ids
        .iter()
        .filter_map(|id| {
            let found = keys
                .clone()
                .filter_map(|k| corpus.document(k.doc))
                .find(|d| &d.id == id);
            all &= found.is_some();
            found.map(|d| d.chunks.len())
        })
        .sum();
    (chunks, all)
}

/// The feedback terms of `text` from the sentences of `keys` in `corpus`.
fn feedback_from(text: &str, corpus: &dyn Corpus, keys: &[ChunkKey]) -> Vec<(String, f32)> {
    feedback_terms(text, corpus, keys, FEEDBACK_SENTENCES, FEEDBACK_TERMS)
}

impl Engine {
    /// Runs the first stage ([`excerpt_retrieve::retrieve`]) on the latest snapshot:
    /// searches, fusion, relevance, reranking. The embedding model is loaded only for
    /// modes that search vectors, the reranker only when the request asks for it.
    pub fn retrieve(&self, req: &QueryRequest) -> Result<Retrieved, EngineError> {
        let stage = req.retrieval();
        stage.validate()?;
        let (store, warnings) = self.store()?;
        let embedder = if req.mode.needs_embedder() {
            Some(self.embedder()?)
        } else {
            None
        };
        let reranker = match req.rerank_top {
            Some(_) => self.reranker()?,
            None => None,
        };
        // The feedback terms are read as soon as the first stage's BM25 list exists:
        // beside the query's embedding, where the store runs the lexical search so
        // (their time is then the work's own, hidden by the embedding's). From that
        // list when it is the feedback search; else by a search of their own, once the
        // scoped documents' chunks are counted as `query_feedback` counts them (not
        // when reranking or a top k may drop hits, or a scoped document has no
        // lexical hit: then after the first stage, as before).
        let from_first_stage = feedback_from_first_stage(req);
        let early_allowed = req.strategy.uses_feedback()
            && (from_first_stage || (stage.top_k.is_none() && stage.rerank_top.is_none()));
        let early: OnceLock<(Vec<(String, f32)>, Duration)> = OnceLock::new();
        let store_ref = store.as_ref();
        let read_early = |corpus: &dyn Corpus, lexical: &[(ChunkKey, f32)]| {
            let started = Instant::now();
            let terms = if from_first_stage {
                Some(feedback_from_list(&req.text, corpus, lexical))
            } else {
                // Counted from the lexical hits, the count of `query_feedback` (from all
                // hits) when every scoped document is among them.
                let keys = lexical.iter().map(|(k, _)| *k);
                match scoped_chunks(corpus, keys, &req.filter.doc_ids) {
                    (scoped, true) => feedback(store_ref, &req.text, &req.filter, scoped).ok(),
                    (_, false) => None,
                }
            };
            if let Some(terms) = terms {
                let _ = early.set((terms, started.elapsed()));
            }
        };
        let found = excerpt_retrieve::retrieve_with(
            store_ref,
            embedder.as_deref(),
            reranker.as_deref(),
            &stage,
            early_allowed.then_some(&read_early),
        )?;
        let (feedback, feedback_time) = match early.into_inner() {
            Some(early) => early,
            None => {
                let started = Instant::now();
                let feedback = query_feedback(store.as_ref(), req, &found)?;
                (feedback, started.elapsed())
            }
        };
        let timings = Timings {
            feedback_ms: Timings::ms(feedback_time),
            ..found.timings
        };
        Ok(Retrieved {
            corpus: found.corpus,
            warnings,
            query_vector: found.query_vector,
            hits: found.hits,
            feedback,
            timings,
            bm25_alone: found.bm25_alone,
        })
    }

    /// Assembles a context from a first stage with a strategy and budget.
    pub fn assemble(
        &self,
        query: &str,
        retrieved: &Retrieved,
        strategy: &StrategyConfig,
        budget: usize,
    ) -> Result<Context, EngineError> {
        let tokens = self.llm_tokens()?;
        let embedder = match retrieved.query_vector {
            Some(_) => Some(self.embedder()?),
            None => None,
        };
        let memo = embedder.as_deref().map(|inner| MemoEmbedder {
            inner,
            memo: &self.sentence_memo,
        });
        let req = AssembleRequest {
            query,
            query_vector: retrieved.query_vector.as_deref(),
            hits: &retrieved.hits,
            corpus: retrieved.corpus.as_corpus(),
            budget,
            tokens: tokens.as_ref(),
            embedder: memo.as_ref().map(|m| m as &dyn Embedder),
            feedback: &retrieved.feedback,
            // Every printed byte counts: a megabyte title cannot escape the budget.
            count_headers: true,
        };
        let mut ctx = assemble(strategy, &req)?;
        ctx.warnings = retrieved.warnings.clone();
        if retrieved.bm25_alone {
            let reads = self
                .embedder()
                .ok()
                .and_then(|e| e.languages().map(|l| l.join(", ")))
                .unwrap_or_default();
            ctx.notes.insert(
                0,
                format!(
                    "hybrid: BM25 alone: the query is not in a language the model's card \
                     lists ({reads})"
                ),
            );
        }
        Ok(ctx)
    }

    /// Retrieves and assembles: the whole query. With `req.timings`, the context says
    /// where the time went.
    pub fn query(&self, req: &QueryRequest) -> Result<Context, EngineError> {
        let started = Instant::now();
        let retrieved = self.retrieve(req)?;
        let assembling = Instant::now();
        let mut ctx = self.assemble(&req.text, &retrieved, &req.strategy, req.budget)?;
        if req.timings {
            ctx.timings = Some(Timings {
                assembly_ms: Timings::ms(assembling.elapsed()),
                total_ms: Timings::ms(started.elapsed()),
                ..retrieved.timings
            });
        }
        Ok(ctx)
    }
}
