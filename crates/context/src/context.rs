//! The typed output every front end consumes, and the inputs every strategy reads.

use excerpt_core::Embedder;
pub use excerpt_core::{Context, Corpus, Hit, Piece, PieceOrder, Timings};

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
    /// Count the pieces' headers inside the budget and in [`Context::tokens`], as the
    /// rendered text shows them: each document's title once and each piece's section
    /// path, cut as every rendering shows them ([`excerpt_core::shown_title`],
    /// [`excerpt_core::shown_section`]). Off: the budget covers piece texts only.
    pub count_headers: bool,
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
