/// Errors of the engine: the lower crates' errors plus bad requests.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Storage.
    #[error(transparent)]
    Index(#[from] excerpt_index::IndexError),
    /// The embedding model.
    #[error(transparent)]
    Embed(#[from] excerpt_core::EmbedError),
    /// Loading or chunking.
    #[error(transparent)]
    Ingest(#[from] excerpt_ingest::IngestError),
    /// Context assembly.
    #[error(transparent)]
    Context(#[from] excerpt_context::ContextError),
    /// Fusion parameters.
    #[error(transparent)]
    Fusion(#[from] excerpt_retrieve::FusionError),
    /// A request that cannot be served as asked.
    #[error("{0}")]
    BadRequest(String),
    /// The index was built with another embedding model than the one configured.
    #[error("the index was built with model {index}, but the configured model is {configured}; pass the same --model (or use --mode bm25)")]
    ModelMismatch {
        /// Model of the index.
        index: String,
        /// Model configured now.
        configured: String,
    },
    /// The LLM writing chunk contexts failed after retries (or could not be set up).
    /// What was committed stays, and the answers received so far are cached.
    #[error("writing chunk contexts with LLM {model}: {source}")]
    Contextualize {
        /// The chat model.
        model: String,
        /// What the chat client reported.
        #[source]
        source: excerpt_core::EmbedError,
    },
    /// The operation was cancelled; what was committed before stays.
    #[error("cancelled")]
    Cancelled,
}
