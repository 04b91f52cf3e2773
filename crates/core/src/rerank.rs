use crate::EmbedError;

/// Scores how well each passage answers a query, for re-ordering retrieved
/// candidates. Implementations: a local cross-encoder and a client of the common
/// `/rerank` HTTP API in `excerpt-embed`; users may bring their own.
///
/// Errors reuse [`EmbedError`]: [`EmbedError::ModelLoad`] for a bad model directory,
/// [`EmbedError::Remote`] for an endpoint that failed, [`EmbedError::Inference`] for a
/// failure while running.
pub trait Reranker: Send + Sync {
    /// A stable identifier of the model (name and a hash of its weights, or the remote
    /// model name).
    fn model_id(&self) -> &str;

    /// Relevance of each passage to `query`: scores in `[0, 1]` (higher is more
    /// relevant), one per passage, in the order of `passages`. An empty slice gives an
    /// empty vector.
    fn rerank(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>, EmbedError>;
}
