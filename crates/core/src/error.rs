/// Whose fault an error is, and so what its caller can do about it. Every library error
/// of Excerpt reports one (a `kind()` method), and each front end maps it to its own
/// signal in one place: the server to an HTTP status, the command line to an exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The input or request is malformed or asks for something impossible: the caller
    /// has to change it.
    BadInput,
    /// Something the request names does not exist (an index, a document).
    NotFound,
    /// The request collides with the current state (another process is writing the
    /// index, the index holds documents it should not).
    Conflict,
    /// A service the operation depends on (an embedding, chat or rerank endpoint) failed
    /// or could not be reached: trying again later may succeed.
    Unavailable,
    /// The system failed: a bug, corrupt or mismatched data on disk, a misconfigured
    /// model, an operating-system error, a cancelled operation.
    Internal,
}

/// Errors of the core types: all of them are violations of the document invariants.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A range does not lie on character boundaries of the text, or lies outside it.
    #[error("range {start}..{end} is not a valid character range of a text of {len} bytes")]
    BadRange {
        /// Byte start.
        start: usize,
        /// Byte end.
        end: usize,
        /// Text length in bytes.
        len: usize,
    },
    /// Chunks do not partition the text (a gap, an overlap, or they do not reach the end).
    #[error("document {doc_id}: chunks do not partition the text ({detail})")]
    NotAPartition {
        /// The document.
        doc_id: String,
        /// What is wrong.
        detail: String,
    },
    /// A document id is empty or otherwise unusable.
    #[error("invalid document id {id:?}: {reason}")]
    BadId {
        /// The id as given.
        id: String,
        /// Why it was refused.
        reason: &'static str,
    },
}

impl Error {
    /// Whose fault it is: the invariants are those of documents handed in, so always
    /// [`ErrorKind::BadInput`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::BadRange { .. } | Error::NotAPartition { .. } | Error::BadId { .. } => {
                ErrorKind::BadInput
            }
        }
    }
}
