//! Errors of context assembly.

use excerpt_core::EmbedError;

use crate::segments::SegmentError;

/// Why context assembly (or building one of its parts) failed.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    /// A strategy name that is not one of [`crate::Strategy::NAMES`] (or an unknown
    /// `rse` preset).
    #[error("unknown strategy {name:?}: expected {expected}")]
    UnknownStrategy {
        /// What was given.
        name: String,
        /// What would have been understood, in words.
        expected: String,
    },
    /// A `NAME:key=value,...` strategy spec that does not parse (unknown parameter,
    /// value of the wrong type, malformed pair).
    #[error("strategy {spec:?}: {message}")]
    BadSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong.
        message: String,
    },
    /// The token budget is 0 or above [`crate::MAX_BUDGET`].
    #[error("the budget must be between 1 and {max} tokens, got {budget}")]
    BudgetOutOfRange {
        /// What was given.
        budget: usize,
        /// The largest budget allowed.
        max: usize,
    },
    /// A parameter is out of range.
    #[error("{strategy}: invalid parameter {param}: {message}")]
    InvalidParams {
        /// The strategy whose parameters are wrong.
        strategy: &'static str,
        /// The parameter.
        param: &'static str,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// A hit names a document or chunk the corpus does not have.
    #[error("hit {index} names chunk {ordinal} of document {doc}, which the corpus does not have")]
    MissingChunk {
        /// Position of the hit in the ranked list.
        index: usize,
        /// Document position.
        doc: u32,
        /// Chunk ordinal.
        ordinal: u32,
    },
    /// A hit has a score or relevance that is not a finite number.
    #[error("hit {index} has a non-finite {what}: {value}")]
    InvalidHit {
        /// Position of the hit in the ranked list.
        index: usize,
        /// `score`, `relevance` or `score_relevance`.
        what: &'static str,
        /// The value given.
        value: f32,
    },
    /// Two vectors that must be compared have different lengths.
    #[error("vector dimension mismatch: {what} has {got} dimensions, expected {expected}")]
    DimensionMismatch {
        /// Which vector.
        what: &'static str,
        /// Expected length (the query vector's).
        expected: usize,
        /// Length found.
        got: usize,
    },
    /// The embedder returned the wrong number of vectors.
    #[error("embedder returned {got} vectors for {expected} texts")]
    EmbedCount {
        /// Texts sent.
        expected: usize,
        /// Vectors received.
        got: usize,
    },
    /// Embedding sentences or the query failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// The segment search refused its input.
    #[error(transparent)]
    Segment(#[from] SegmentError),
    /// A tokenizer could not be loaded.
    #[error("cannot load tokenizer {name}: {message}")]
    Tokenizer {
        /// Encoding name.
        name: String,
        /// What failed.
        message: String,
    },
}

/// A [`ContextError::InvalidParams`] for `param` of `strategy`.
pub(crate) fn invalid(
    strategy: &'static str,
    param: &'static str,
    message: String,
) -> ContextError {
    ContextError::InvalidParams {
        strategy,
        param,
        message,
    }
}

/// Checks that `v` is finite and in `[lo, hi]`.
pub(crate) fn check_range(
    strategy: &'static str,
    param: &'static str,
    v: f32,
    lo: f32,
    hi: f32,
) -> Result<(), ContextError> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(())
    } else {
        Err(invalid(
            strategy,
            param,
            format!("must be in [{lo}, {hi}], got {v}"),
        ))
    }
}

/// Checks that `v ≥ min`.
pub(crate) fn check_min(
    strategy: &'static str,
    param: &'static str,
    v: usize,
    min: usize,
) -> Result<(), ContextError> {
    if v >= min {
        Ok(())
    } else {
        Err(invalid(
            strategy,
            param,
            format!("must be >= {min}, got {v}"),
        ))
    }
}

impl ContextError {
    /// Whose fault it is: a strategy name, spec or parameter is the request's
    /// ([`excerpt_core::ErrorKind::BadInput`]); an embedding failure is classified by the
    /// embedder; everything else (hits that do not fit the corpus, mismatched vectors, a
    /// tokenizer that does not load) is the system's.
    pub fn kind(&self) -> excerpt_core::ErrorKind {
        use excerpt_core::ErrorKind;
        match self {
            ContextError::UnknownStrategy { .. }
            | ContextError::BadSpec { .. }
            | ContextError::BudgetOutOfRange { .. }
            | ContextError::InvalidParams { .. } => ErrorKind::BadInput,
            ContextError::Embed(e) => e.kind(),
            ContextError::MissingChunk { .. }
            | ContextError::InvalidHit { .. }
            | ContextError::DimensionMismatch { .. }
            | ContextError::EmbedCount { .. }
            | ContextError::Segment(_)
            | ContextError::Tokenizer { .. } => ErrorKind::Internal,
        }
    }
}
