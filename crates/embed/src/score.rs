//! Score arithmetic shared by the local and the remote rerankers.

/// The logistic function `1 / (1 + e^-x)`, mapping a logit to `(0, 1)`.
pub(crate) fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}
