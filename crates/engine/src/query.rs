use std::sync::Arc;

use excerpt_context::{assemble, AssembleRequest, Context, Corpus, Hit, StrategyConfig};
use excerpt_core::{ChunkKey, Document, Embedder};
use excerpt_index::Snapshot;
use excerpt_retrieve::{fuse_hybrid, Filter, FusionMethod};
use serde::{Deserialize, Serialize};

use crate::memo::MemoEmbedder;
use crate::{Engine, EngineError};

/// Which first-stage retrieval runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Cosine similarity of the query vector to chunk vectors (exact scan).
    Dense,
    /// BM25 over chunk text and headers.
    Bm25,
    /// Both, fused.
    #[default]
    Hybrid,
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

/// One query: what to search, how, where, and how to assemble the context.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QueryRequest {
    /// The query text.
    pub text: String,
    /// First-stage retrieval.
    #[serde(default)]
    pub mode: Mode,
    /// Candidates each search returns before fusion.
    #[serde(default = "default_candidates")]
    pub candidates: usize,
    /// Hits handed to the strategy (`None`: all fused candidates).
    #[serde(default)]
    pub top_k: Option<usize>,
    /// How dense and BM25 lists are fused in hybrid mode.
    #[serde(default)]
    pub fusion: FusionMethod,
    /// Which documents may be returned.
    #[serde(default)]
    pub filter: Filter,
    /// How the context is assembled.
    #[serde(default)]
    pub strategy: StrategyConfig,
    /// LLM tokens for the whole context.
    #[serde(default = "default_budget")]
    pub budget: usize,
    /// Rerank this many of the best fused candidates with the engine's reranker (which
    /// must be configured); their reranker scores become score and relevance, the rest
    /// are dropped. `None`: no reranking.
    #[serde(default)]
    pub rerank_top: Option<usize>,
}

fn default_candidates() -> usize {
    100
}
fn default_budget() -> usize {
    2000
}

impl QueryRequest {
    /// A request with defaults for everything but the text.
    pub fn new(text: impl Into<String>) -> Self {
        QueryRequest {
            text: text.into(),
            mode: Mode::default(),
            candidates: default_candidates(),
            top_k: None,
            fusion: FusionMethod::default(),
            filter: Filter::default(),
            strategy: StrategyConfig::default(),
            budget: default_budget(),
            rerank_top: None,
        }
    }
}

/// The first stage of a query, reusable by several strategies and budgets.
#[derive(Debug, Clone)]
pub struct Retrieved {
    /// The snapshot searched.
    pub snapshot: Arc<Snapshot>,
    /// The query vector (dense and hybrid modes).
    pub query_vector: Option<Vec<f32>>,
    /// Ranked hits, best first, ties by key.
    pub hits: Vec<Hit>,
}

/// The snapshot seen through the strategies' read interface.
struct SnapshotCorpus<'a>(&'a Snapshot);

impl Corpus for SnapshotCorpus<'_> {
    fn document(&self, doc: u32) -> Option<&Document> {
        self.0.doc(doc).map(|d| d.as_ref())
    }
    fn chunk_vector(&self, key: ChunkKey) -> Option<&[f32]> {
        self.0.vector(key)
    }
    fn sentence_vector(&self, doc: u32, sentence: usize) -> Option<&[f32]> {
        self.0.sentence_vector(doc, sentence)
    }
}

impl Engine {
    /// Runs the first stage: searches, fusion, relevance.
    pub fn retrieve(&self, req: &QueryRequest) -> Result<Retrieved, EngineError> {
        if req.text.trim().is_empty() {
            return Err(EngineError::BadRequest("the query is empty".into()));
        }
        if req.candidates == 0 {
            return Err(EngineError::BadRequest(
                "candidates must be at least 1".into(),
            ));
        }
        let snapshot = self.snapshot()?;
        let mask = req.filter.mask(snapshot.documents());
        if let Some(id) = req
            .filter
            .doc_ids
            .iter()
            .find(|id| snapshot.doc_index(id).is_none())
        {
            return Err(EngineError::BadRequest(format!(
                "no document with id {id:?} in the index"
            )));
        }
        let query_vector = match req.mode {
            Mode::Bm25 => None,
            Mode::Dense | Mode::Hybrid => {
                let e = self.embedder()?;
                if e.model_id() != snapshot.config().model_id {
                    return Err(EngineError::ModelMismatch {
                        index: snapshot.config().model_id.clone(),
                        configured: e.model_id().to_string(),
                    });
                }
                Some(e.embed_query(&req.text)?)
            }
        };
        let dense = match &query_vector {
            Some(q) => snapshot.dense_search(q, req.candidates, mask.as_ref()),
            None => Vec::new(),
        };
        let bm25 = match req.mode {
            Mode::Dense => Vec::new(),
            Mode::Bm25 | Mode::Hybrid => {
                snapshot.bm25_search(&req.text, req.candidates, mask.as_ref())?
            }
        };
        let mut hits: Vec<Hit> = match req.mode {
            // Cosine is already an absolute scale; negative similarity is no relevance.
            Mode::Dense => dense
                .iter()
                .map(|&(key, score)| Hit {
                    key,
                    score,
                    relevance: score.clamp(0.0, 1.0),
                })
                .collect(),
            // BM25 has no absolute scale: relative to the best hit.
            Mode::Bm25 => {
                let max = bm25
                    .first()
                    .map(|h| h.1)
                    .unwrap_or(1.0)
                    .max(f32::MIN_POSITIVE);
                bm25.iter()
                    .map(|&(key, score)| Hit {
                        key,
                        score,
                        relevance: (score / max).clamp(0.0, 1.0),
                    })
                    .collect()
            }
            Mode::Hybrid => fuse_hybrid(&dense, &bm25, req.fusion)?
                .into_iter()
                .map(|f| Hit {
                    key: f.key,
                    score: f.score,
                    relevance: f.relevance,
                })
                .collect(),
        };
        if let Some(n) = req.rerank_top {
            hits = self.rerank(&snapshot, &req.text, hits, n)?;
        }
        if let Some(k) = req.top_k {
            hits.truncate(k);
        }
        Ok(Retrieved {
            snapshot,
            query_vector,
            hits,
        })
    }

    /// Reranks the best `n` hits: the reranker reads each chunk as indexed (header and
    /// text); its [0, 1] score becomes both score and relevance. Ties by key.
    fn rerank(
        &self,
        snapshot: &Snapshot,
        query: &str,
        mut hits: Vec<Hit>,
        n: usize,
    ) -> Result<Vec<Hit>, EngineError> {
        let Some(reranker) = self.reranker()? else {
            return Err(EngineError::BadRequest(
                "reranking was asked for but no reranker is configured (--reranker DIR or --rerank-url URL)".into(),
            ));
        };
        hits.truncate(n.max(1));
        let headers = snapshot.config().headers;
        let texts: Vec<String> = hits
            .iter()
            .map(|h| {
                let d = snapshot
                    .doc(h.key.doc)
                    .ok_or_else(|| EngineError::BadRequest(format!("stale hit {:?}", h.key)))?;
                let c = d
                    .chunks
                    .get(h.key.ordinal as usize)
                    .ok_or_else(|| EngineError::BadRequest(format!("stale hit {:?}", h.key)))?;
                Ok(excerpt_core::indexed_text(d, c, headers))
            })
            .collect::<Result<_, EngineError>>()?;
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let scores = reranker.rerank(query, &refs)?;
        if scores.len() != hits.len() {
            return Err(EngineError::BadRequest(format!(
                "reranker returned {} scores for {} passages",
                scores.len(),
                hits.len()
            )));
        }
        for (h, s) in hits.iter_mut().zip(scores) {
            let s = if s.is_finite() {
                s.clamp(0.0, 1.0)
            } else {
                0.0
            };
            h.score = s;
            h.relevance = s;
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
        Ok(hits)
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
        let corpus = SnapshotCorpus(&retrieved.snapshot);
        let req = AssembleRequest {
            query,
            query_vector: retrieved.query_vector.as_deref(),
            hits: &retrieved.hits,
            corpus: &corpus,
            budget,
            tokens: tokens.as_ref(),
            embedder: memo.as_ref().map(|m| m as &dyn Embedder),
        };
        Ok(assemble(strategy, &req)?)
    }

    /// Retrieves and assembles: the whole query.
    pub fn query(&self, req: &QueryRequest) -> Result<Context, EngineError> {
        let retrieved = self.retrieve(req)?;
        self.assemble(&req.text, &retrieved, &req.strategy, req.budget)
    }
}
