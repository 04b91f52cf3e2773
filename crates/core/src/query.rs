//! What retrieval hands to context assembly, shared by every store and strategy: ranked
//! [`Hit`]s, read access to the collection ([`Corpus`]), and where a query's time went
//! ([`Timings`]); and what assembly hands to every front end: the [`Context`] of exact
//! [`Piece`]s in a [`PieceOrder`].

use std::any::Any;
use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

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
    /// The slot where context assembly keeps what it derives from this collection's
    /// documents alone ([`Derived`]). Whoever owns the documents owns it: the embedded
    /// index's snapshot keeps one for as long as it lives, a corpus fetched for one query
    /// keeps one for that query.
    fn derived(&self) -> &Derived;
}

/// What context assembly derives from a collection's documents alone, kept by the owner
/// of the documents (a snapshot), so that it lives exactly as long as the documents it
/// was derived from: which documents are transcripts, their headings' terms, their
/// sentence units, the stems of their words. Filled on first use by the one crate that
/// reads it (`excerpt-context`), opaque to everyone else. Every entry is a pure function
/// of the documents, so a query's result never depends on what was derived before it;
/// only its cost does.
#[derive(Default)]
pub struct Derived(OnceLock<Arc<dyn Any + Send + Sync>>);

impl Derived {
    /// An empty slot.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of type `T` in the slot, made by `init` when the slot is empty. `None`
    /// when the slot already holds a value of another type.
    pub fn get_or_init<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Option<Arc<T>> {
        let held = self.0.get_or_init(|| Arc::new(init()));
        Arc::clone(held).downcast().ok()
    }
}

impl std::fmt::Debug for Derived {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Derived")
            .field("filled", &self.0.get().is_some())
            .finish()
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

/// One exact slice of one document.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Piece {
    /// Document id.
    pub doc_id: String,
    /// Document title.
    pub title: String,
    /// Heading path of the section the piece starts in (`""` if none).
    pub section: String,
    /// Character offset of the start in the document text.
    pub start: usize,
    /// Character offset of the end (exclusive).
    pub end: usize,
    /// First chunk ordinal covered.
    pub first_chunk: u32,
    /// Last chunk ordinal covered (inclusive).
    pub last_chunk: u32,
    /// The text: exactly `document.text[start..end]` in characters.
    pub text: String,
    /// The piece's score (strategy-specific, higher is better).
    pub score: f32,
    /// Relevance in [0, 1] shown to users and LLMs as a percentage.
    pub relevance: f32,
    /// LLM tokens of `text`.
    pub tokens: usize,
    /// Ordinals of chunks in the piece that were direct retrieval hits.
    pub hits: Vec<u32>,
    /// The page (1-based) the piece starts on, for paged documents (PDF).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_start: Option<u32>,
    /// The page (1-based) the piece ends on, for paged documents (PDF).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_end: Option<u32>,
}

/// The order pieces are handed to the LLM in.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PieceOrder {
    /// Grouped by document (documents by their best piece score, descending; ties:
    /// document position), reading order within a document.
    #[default]
    Document,
    /// Every piece by its own score, best first (ties: document position, then reading
    /// order): what a reader that stops early, or a consumer that truncates the context,
    /// should see first.
    Score,
}

/// The context assembled for one query: what the CLI prints, the server returns and the
/// eval harness scores.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Context {
    /// The strategy that assembled it.
    pub strategy: String,
    /// The token budget asked for.
    pub budget: usize,
    /// LLM tokens of all pieces.
    pub tokens: usize,
    /// Pieces in the order they are handed to an LLM.
    pub pieces: Vec<Piece>,
    /// How the pieces are ordered.
    #[serde(default)]
    pub order: PieceOrder,
    /// What the strategy decided (e.g. `auto`'s chosen k), for people and logs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What the context may be missing through no choice of the strategy (documents of
    /// a damaged index that could not be searched), for people and logs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Where the query's time went, when the request asked for it (`--timings`,
    /// `"timings": true`); absent otherwise, so that the same query gives the same output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timings: Option<Timings>,
}

#[cfg(test)]
mod tests {
    use super::Derived;

    #[test]
    fn a_derived_slot_is_filled_once_and_typed_by_its_first_user() {
        let slot = Derived::new();
        let first = slot.get_or_init(|| vec![1u32, 2]).expect("filled");
        let again = slot
            .get_or_init(|| -> Vec<u32> { unreachable!("filled once") })
            .expect("the same type");
        assert!(std::sync::Arc::ptr_eq(&first, &again));
        // Another type reads nothing, and the first value stays.
        assert!(slot.get_or_init(|| "other").is_none());
        assert_eq!(*slot.get_or_init(Vec::<u32>::new).unwrap(), [1, 2]);
    }
}
