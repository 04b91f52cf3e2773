//! What retrieval hands to context assembly, shared by every store and strategy: ranked
//! [`Hit`]s, read access to the collection ([`Corpus`]), and where a query's time went
//! ([`Timings`]).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::{ChunkKey, Document};

/// One ranked chunk from retrieval: what every strategy starts from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// The chunk.
    pub key: ChunkKey,
    /// The retrieval score (higher is better; its scale depends on the retrieval mode).
    pub score: f32,
    /// Absolute relevance in [0, 1] (calibrated by retrieval; see `excerpt-retrieve`).
    pub relevance: f32,
    /// Relevance in [0, 1] read from the retrieval scores themselves where `relevance`
    /// comes from ranks alone (hybrid search fused by RRF): the mean of the chunk's dense
    /// and BM25 scores, each min-max normalised over the query's candidates. `None`: the
    /// same as `relevance`. `rse` values chunks by it: a rank relevance is nearly flat
    /// over the first tens of hits, whatever their scores, and segments valued on it grow
    /// through irrelevant text (docs/EVAL.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_relevance: Option<f32>,
}

impl Hit {
    /// A hit without a separate [`Hit::score_relevance`]: `relevance` serves for both.
    pub fn new(key: ChunkKey, score: f32, relevance: f32) -> Self {
        Hit {
            key,
            score,
            relevance,
            score_relevance: None,
        }
    }
}

/// Read access to the indexed collection (implemented by the index snapshot).
pub trait Corpus: Sync {
    /// The document at position `doc` (document-id order).
    fn document(&self, doc: u32) -> Option<&Document>;
    /// The unit vector of a chunk.
    fn chunk_vector(&self, key: ChunkKey) -> Option<&[f32]>;
    /// The unit vector of sentence `sentence` ([`Document::sentences`] index) of a
    /// document, when vectors of sentences were stored at ingest; `window` embeds the
    /// sentences this returns `None` for. Borrowed where the store keeps them as `f32`,
    /// decoded where it keeps them smaller. Default: none stored.
    fn sentence_vector(&self, _doc: u32, _sentence: usize) -> Option<Cow<'_, [f32]>> {
        None
    }
}

/// Where one query's time went, in milliseconds of wall-clock time. A stage that did not
/// run is 0. On the embedded index the BM25 search runs while the query is embedded, so
/// `total_ms` can be less than the sum of the stages.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    /// Embedding the query (dense and hybrid modes).
    pub embed_ms: f64,
    /// The BM25 search.
    pub lexical_ms: f64,
    /// The dense search.
    pub dense_ms: f64,
    /// Fusing the two lists and calibrating relevance.
    pub fusion_ms: f64,
    /// Reranking (when asked for).
    pub rerank_ms: f64,
    /// Reading the query's feedback terms (strategies whose sentence scores use them).
    pub feedback_ms: f64,
    /// Assembling the context with the strategy.
    pub assembly_ms: f64,
    /// The whole query, from the request to the context.
    pub total_ms: f64,
}

impl Timings {
    /// Milliseconds of a duration, rounded to microseconds.
    pub fn ms(d: std::time::Duration) -> f64 {
        (d.as_micros() as f64) / 1000.0
    }
}
