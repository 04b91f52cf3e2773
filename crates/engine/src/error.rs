use excerpt_core::ErrorKind;

/// Errors of the engine: the lower crates' errors plus bad requests.
///
/// Messages name no command-line flags (HTTP clients read them too); front ends add
/// their own hints. [`EngineError::kind`] says whose fault an error is.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Storage.
    #[error(transparent)]
    Index(#[from] excerpt_index::IndexError),
    /// The PostgreSQL index.
    #[error(transparent)]
    Postgres(#[from] excerpt_postgres::PgError),
    /// The embedding model.
    #[error(transparent)]
    Embed(#[from] excerpt_core::EmbedError),
    /// Loading or chunking.
    #[error(transparent)]
    Ingest(#[from] excerpt_ingest::IngestError),
    /// Context assembly.
    #[error(transparent)]
    Context(#[from] excerpt_context::ContextError),
    /// The retrieval stage (searches, fusion, reranking).
    #[error(transparent)]
    Retrieve(#[from] excerpt_retrieve::RetrieveError),
    /// A request that cannot be served as asked.
    #[error("{0}")]
    BadRequest(String),
    /// The index has chunk contexts, and an ingest without a contextualizer would add
    /// chunks without one.
    #[error(
        "the index at {dir} has chunk contexts written by {index} (new chunks need contexts too)"
    )]
    ContextsRequired {
        /// The index directory.
        dir: String,
        /// How the index's contexts were written.
        index: String,
        /// The chat model that wrote them.
        model: String,
    },
    /// The index has no chunk contexts, and an ingest with a contextualizer would give
    /// some chunks one.
    #[error("the index at {dir} was built without chunk contexts, and contexts cannot be given to some of its chunks only")]
    ContextsRefused {
        /// The index directory.
        dir: String,
    },
    /// The index's chunk contexts were written another way than this ingest would.
    #[error("the index at {dir} has chunk contexts written by {index}, this ingest would write them with {requested}")]
    ContextualizerMismatch {
        /// The index directory.
        dir: String,
        /// How the index's contexts were written.
        index: String,
        /// How this ingest would write them.
        requested: String,
        /// The chat model of the index's contexts.
        model: String,
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
    /// The chat model answering a question failed after retries (or could not be set
    /// up).
    #[error("asking LLM {model}: {source}")]
    Answer {
        /// The chat model.
        model: String,
        /// What the chat client reported.
        #[source]
        source: excerpt_core::EmbedError,
    },
    /// The engine broke one of its own invariants (a bug).
    #[error("{0}")]
    Internal(String),
    /// The operation is not available on this kind of index.
    #[error("{0}")]
    Unsupported(String),
    /// The operation was cancelled; what was committed before stays.
    #[error("cancelled")]
    Cancelled,
}

impl EngineError {
    /// Whether the error says there is no index yet (nothing ingested), on any backend:
    /// what a health check or an empty listing treats as a state, not a failure.
    pub fn is_no_index(&self) -> bool {
        matches!(
            self,
            EngineError::Index(excerpt_index::IndexError::NotFound { .. })
                | EngineError::Postgres(excerpt_postgres::PgError::NoIndex { .. })
        )
    }

    /// Whose fault it is: a lower crate's error (and a failed contextualizer) reports
    /// its own kind; bad requests and contextualizer mismatches are
    /// [`ErrorKind::BadInput`]; broken invariants and cancellation
    /// [`ErrorKind::Internal`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            EngineError::Index(e) => e.kind(),
            EngineError::Postgres(e) => e.kind(),
            EngineError::Embed(e) => e.kind(),
            EngineError::Ingest(e) => e.kind(),
            EngineError::Context(e) => e.kind(),
            EngineError::Retrieve(e) => e.kind(),
            EngineError::Contextualize { source, .. } | EngineError::Answer { source, .. } => {
                source.kind()
            }
            EngineError::BadRequest(_)
            | EngineError::ContextsRequired { .. }
            | EngineError::ContextsRefused { .. }
            | EngineError::ContextualizerMismatch { .. }
            | EngineError::Unsupported(_) => ErrorKind::BadInput,
            EngineError::Internal(_) | EngineError::Cancelled => ErrorKind::Internal,
        }
    }
}
