//! The typed output every front end consumes, and the inputs every strategy reads.

use excerpt_core::Embedder;
pub use excerpt_core::{Corpus, Hit, Timings};
use serde::{Deserialize, Serialize};

/// Counts LLM tokens: every budget is expressed in them.
pub trait LlmTokens: Sync {
    /// Tokens of `text`.
    fn count(&self, text: &str) -> usize;
    /// Name of the encoding, e.g. `cl100k_base`.
    fn name(&self) -> &str;
    /// A cheap number never above [`LlmTokens::count`] of `text`, used to reject spans
    /// that cannot fit a budget without counting them exactly. Default 0 (no bound).
    fn lower_bound(&self, _text: &str) -> usize {
        0
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

/// Everything a strategy reads for one query.
#[derive(Clone, Copy)]
pub struct AssembleRequest<'a> {
    /// The query text (`auto` classifies it; `window` embeds it when no vector is given).
    pub query: &'a str,
    /// The query's unit vector, from the same model as the corpus vectors.
    pub query_vector: Option<&'a [f32]>,
    /// Fused hits, ranked best first, relevance in [0, 1].
    pub hits: &'a [Hit],
    /// The collection.
    pub corpus: &'a dyn Corpus,
    /// LLM tokens for all piece texts together.
    pub budget: usize,
    /// The LLM tokenizer every budget is counted in.
    pub tokens: &'a dyn LlmTokens,
    /// Embeds sentences on demand (`window`).
    pub embedder: Option<&'a dyn Embedder>,
    /// Feedback terms for the query (stems with weights in (0, 1], best first; see
    /// [`crate::feedback_terms`]), which the sentence route matches besides the query's
    /// own words; empty: none.
    pub feedback: &'a [(String, f32)],
}

impl std::fmt::Debug for AssembleRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssembleRequest")
            .field("query", &self.query)
            .field("hits", &self.hits.len())
            .field("budget", &self.budget)
            .field("tokens", &self.tokens.name())
            .field("embedder", &self.embedder.map(|e| e.model_id()))
            .finish_non_exhaustive()
    }
}
