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
