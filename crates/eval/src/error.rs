//! The error type of an evaluation run.

use std::path::{Path, PathBuf};

use excerpt_core::ErrorKind;

/// Errors of an evaluation run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A JSONL line does not parse.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// JSON could not be written or a JSON file read.
    #[error("{path}: {message}")]
    Json {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The inputs or options are unusable.
    #[error("{0}")]
    Invalid(String),
    /// The index holds something other than the corpus (documents missing or changed).
    #[error("{0}")]
    IndexMismatch(String),
    /// The index holds documents that are not in the corpus.
    #[error("the index {} holds {count} documents that are not in the corpus ({sample})", index.display())]
    ForeignDocuments {
        /// The index directory.
        index: PathBuf,
        /// How many documents are foreign.
        count: usize,
        /// Some of their ids.
        sample: String,
    },
    /// The engine failed outside a single query.
    #[error(transparent)]
    Engine(#[from] excerpt::EngineError),
    /// The answer endpoint failed a request after its retries.
    #[error("answer endpoint {endpoint} failed for query {query_id:?} ({strategy} at {budget} tokens): {message}")]
    Answer {
        /// The chat-completions URL.
        endpoint: String,
        /// The query being answered.
        query_id: String,
        /// The strategy whose context was sent.
        strategy: String,
        /// The budget of that context.
        budget: usize,
        /// What the endpoint or the connection said.
        message: String,
    },
    /// The chart could not be drawn.
    #[error("drawing the chart: {0}")]
    Plot(String),
}

impl EvalError {
    /// Whose fault it is: unreadable or malformed inputs and unusable options are
    /// [`ErrorKind::BadInput`]; an index holding another collection
    /// [`ErrorKind::Conflict`]; an answer endpoint that failed
    /// [`ErrorKind::Unavailable`]; the engine's errors report their own kind; files that
    /// cannot be written and charts that cannot be drawn are [`ErrorKind::Internal`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            EvalError::Parse { .. } | EvalError::Json { .. } | EvalError::Invalid(_) => {
                ErrorKind::BadInput
            }
            EvalError::IndexMismatch(_) | EvalError::ForeignDocuments { .. } => ErrorKind::Conflict,
            EvalError::Engine(e) => e.kind(),
            EvalError::Answer { .. } => ErrorKind::Unavailable,
            EvalError::Io { .. } | EvalError::Plot(_) => ErrorKind::Internal,
        }
    }

    pub(crate) fn io(path: &Path, source: std::io::Error) -> EvalError {
        EvalError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
