//! Why a passage is in a context or not ([`Engine::explain`]): the first stage's best
//! hits, each with where BM25 alone and the model alone rank it, its relevance and how
//! much of it the context holds (`excerpt query --explain`, `explain` of `POST /v1/query`,
//! the Python `explain=`).

use std::collections::BTreeMap;

use excerpt_context::Context;
use excerpt_core::ChunkKey;
use serde::Serialize;

use crate::{Engine, EngineError, Mode, QueryRequest, Strategy, StrategyConfig};

/// One fused hit, explained.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Serialize)]
pub struct ExplainedHit {
    /// 1-based rank in the fused list the strategy was handed.
    pub rank: usize,
    /// The hit's document.
    pub doc_id: String,
    /// The chunk's ordinal in its document.
    pub chunk: u32,
    /// The chunk's first character offset in its document.
    pub start: usize,
    /// The chunk's end (exclusive), in characters.
    pub end: usize,
    /// The relevance the strategy reads (from ranks when RRF fused the lists).
    pub relevance: f32,
    /// The relevance read from the two lists' scores (RRF fusion only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score_relevance: Option<f32>,
    /// 1-based rank in BM25's list alone; none (`null`): not among its candidates, or
    /// a dense query.
    pub bm25_rank: Option<usize>,
    /// 1-based rank in the dense list alone; none (`null`): not among its candidates,
    /// or a BM25 query.
    pub dense_rank: Option<usize>,
    /// Characters of the chunk the context holds.
    pub in_context: usize,
    /// The chunk's first characters.
    pub preview: String,
}

impl Engine {
    /// The first `n` hits of the first stage for `req`, explained against `ctx` (the
    /// context [`Engine::query`] assembled for it). The first stage runs again (without
    /// the feedback terms only the assembly reads), and in hybrid mode each list alone,
    /// unreranked, for its ranks.
    pub fn explain(
        &self,
        req: &QueryRequest,
        ctx: &Context,
        n: usize,
    ) -> Result<Vec<ExplainedHit>, EngineError> {
        let mut first = req.clone();
        first.strategy = StrategyConfig::default_for(Strategy::Topk);
        let fused = self.retrieve(&first)?;
        let keys = |hits: &[excerpt_core::Hit]| ranks_of(hits.iter().map(|h| h.key));
        let alone = |mode: Mode| -> Result<BTreeMap<ChunkKey, usize>, EngineError> {
            let mut alone = first.clone();
            alone.mode = mode;
            alone.rerank_top = None;
            alone.top_k = None;
            Ok(keys(&self.retrieve(&alone)?.hits))
        };
        let (bm25, dense) = match req.mode {
            Mode::Hybrid => (alone(Mode::Bm25)?, alone(Mode::Dense)?),
            Mode::Bm25 => (keys(&fused.hits), BTreeMap::new()),
            Mode::Dense => (BTreeMap::new(), keys(&fused.hits)),
        };
        let corpus = fused.corpus.as_corpus();
        let mut out = Vec::new();
        for (i, h) in fused.hits.iter().take(n).enumerate() {
            let Some(doc) = corpus.document(h.key.doc) else {
                continue;
            };
            let Some(chunk) = doc.chunks.get(h.key.ordinal as usize) else {
                continue;
            };
            let (start, end) = (chunk.range.char_start, chunk.range.char_end);
            let in_context = ctx
                .pieces
                .iter()
                .filter(|p| p.doc_id == doc.id)
                .map(|p| p.end.min(end).saturating_sub(p.start.max(start)))
                .sum();
            out.push(ExplainedHit {
                rank: i + 1,
                doc_id: doc.id.clone(),
                chunk: h.key.ordinal,
                start,
                end,
                relevance: h.relevance,
                score_relevance: h.score_relevance,
                bm25_rank: bm25.get(&h.key).copied(),
                dense_rank: dense.get(&h.key).copied(),
                in_context,
                preview: chunk.range.slice(&doc.text).chars().take(60).collect(),
            });
        }
        Ok(out)
    }
}

/// The JSON value of a context ([`crate::context_value`]) with `hits` as its `explain`:
/// what `excerpt query --explain --json` prints and `POST /v1/query` answers.
pub fn explained_value(query: &str, ctx: &Context, hits: &[ExplainedHit]) -> serde_json::Value {
    let mut value = crate::context_value(query, ctx);
    if let Some(object) = value.as_object_mut() {
        let hits = serde_json::to_value(hits).unwrap_or(serde_json::Value::Null);
        object.insert("explain".into(), hits);
    }
    value
}

/// Each key's 1-based rank in a list, best first.
fn ranks_of(keys: impl Iterator<Item = ChunkKey>) -> BTreeMap<ChunkKey, usize> {
    keys.enumerate().map(|(i, k)| (k, i + 1)).collect()
}
