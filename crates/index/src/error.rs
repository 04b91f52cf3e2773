use std::path::PathBuf;

use excerpt_core::ErrorKind;

/// Errors of the index, grouped by whose fault they are.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// No index has been created at this path.
    #[error("no index at {dir}")]
    NotFound {
        /// The directory looked at.
        dir: PathBuf,
    },
    /// The index was built with settings that differ from the ones asked for.
    #[error("index at {dir} was built with {field} = {existing}, not {requested}")]
    ConfigMismatch {
        /// The index.
        dir: PathBuf,
        /// Which setting differs.
        field: &'static str,
        /// The index's value.
        existing: String,
        /// The requested value.
        requested: String,
    },
    /// Another process holds the writer lock.
    #[error("index at {dir} is being written by another process (lock file {lock} is held)")]
    Locked {
        /// The index.
        dir: PathBuf,
        /// The lock file.
        lock: PathBuf,
    },
    /// A document or its vectors are malformed.
    #[error("document {doc_id} refused: {reason}")]
    BadDocument {
        /// The document.
        doc_id: String,
        /// Why.
        reason: String,
    },
    /// Files on disk do not match the manifest (checksum, size, format).
    #[error("index at {dir} is corrupt: {detail}")]
    Corrupt {
        /// The index.
        dir: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// The index format is newer or older than this build understands.
    #[error("index at {dir} has format {found}, this build reads formats 1 to {expected}")]
    Format {
        /// The index.
        dir: PathBuf,
        /// Format in the manifest.
        found: u32,
        /// Format this build writes.
        expected: u32,
    },
    /// An operating-system error on a path.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The BM25 engine failed.
    #[error("BM25 index: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
}

impl IndexError {
    /// Whether opening again may succeed: a BM25 file named by the commit it read was
    /// removed in the meantime (the writer's merge finished and collected it).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            IndexError::Tantivy(tantivy::TantivyError::OpenReadError(
                tantivy::directory::error::OpenReadError::FileDoesNotExist(_)
            ))
        )
    }

    /// Whose fault it is: no index is [`ErrorKind::NotFound`], a held lock
    /// [`ErrorKind::Conflict`], a malformed document [`ErrorKind::BadInput`]; settings,
    /// formats and files that do not match, and operating-system errors are
    /// [`ErrorKind::Internal`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            IndexError::NotFound { .. } => ErrorKind::NotFound,
            IndexError::Locked { .. } => ErrorKind::Conflict,
            IndexError::BadDocument { .. } => ErrorKind::BadInput,
            IndexError::ConfigMismatch { .. }
            | IndexError::Corrupt { .. }
            | IndexError::Format { .. }
            | IndexError::Io { .. }
            | IndexError::Tantivy(_) => ErrorKind::Internal,
        }
    }

    /// The [`IndexError::Io`] of `op` on `path`, for `map_err`.
    pub fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> IndexError {
        let path = path.into();
        move |source| IndexError::Io { op, path, source }
    }
}
