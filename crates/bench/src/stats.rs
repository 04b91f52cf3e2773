//! Latency summaries.

use serde::Serialize;

/// A latency distribution in milliseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    /// Median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Mean.
    pub mean_ms: f64,
}

/// Summarises samples in milliseconds. A percentile `q` is the sorted sample at rank
/// `round((n - 1) * q)` (nearest rank, no interpolation); no samples give zeros.
pub fn latency(mut ms: Vec<f64>) -> Latency {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| {
        ms.get(((ms.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    Latency {
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        mean_ms: ms.iter().sum::<f64>() / ms.len().max(1) as f64,
    }
}
