//! Relevance calibration: every ranked list becomes [`Hit`]s whose `relevance` is an
//! absolute number in [0, 1], whatever the scale of the scores it came from.
//!
//! - Dense (cosine similarity): already an absolute scale, clamped to [0, 1] (a negative
//!   similarity is no relevance).
//! - BM25: no absolute scale, so relevance is the score relative to the best hit's.
//! - Fused lists: [`crate::fusion`] computes the relevance with the fused score.

use excerpt_context::Hit;
use excerpt_core::ChunkKey;

use crate::fusion::Fused;

/// Hits of a dense search: the cosine score, clamped to [0, 1], is the relevance.
pub fn dense_hits(list: &[(ChunkKey, f32)]) -> Vec<Hit> {
    list.iter()
        .map(|&(key, score)| Hit {
            key,
            score,
            relevance: score.clamp(0.0, 1.0),
        })
        .collect()
}

/// Hits of a BM25 search (best first): relevance is the score divided by the best score,
/// clamped to [0, 1].
pub fn bm25_hits(list: &[(ChunkKey, f32)]) -> Vec<Hit> {
    let max = list
        .first()
        .map(|h| h.1)
        .unwrap_or(1.0)
        .max(f32::MIN_POSITIVE);
    list.iter()
        .map(|&(key, score)| Hit {
            key,
            score,
            relevance: (score / max).clamp(0.0, 1.0),
        })
        .collect()
}

/// Hits of a fused list, keeping its score and relevance.
pub fn fused_hits(list: Vec<Fused>) -> Vec<Hit> {
    list.into_iter()
        .map(|f| Hit {
            key: f.key,
            score: f.score,
            relevance: f.relevance,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ordinal: u32) -> ChunkKey {
        ChunkKey { doc: 0, ordinal }
    }

    #[test]
    fn dense_relevance_is_clamped_cosine() {
        let hits = dense_hits(&[(key(0), 1.2), (key(1), 0.4), (key(2), -0.3)]);
        let rel: Vec<f32> = hits.iter().map(|h| h.relevance).collect();
        assert_eq!(rel, vec![1.0, 0.4, 0.0]);
        assert_eq!(hits[2].score, -0.3);
    }

    #[test]
    fn bm25_relevance_is_relative_to_the_best() {
        let hits = bm25_hits(&[(key(0), 8.0), (key(1), 2.0)]);
        assert_eq!(hits[0].relevance, 1.0);
        assert_eq!(hits[1].relevance, 0.25);
        assert!(bm25_hits(&[]).is_empty());
        // A best score of 0 does not divide by zero.
        assert_eq!(bm25_hits(&[(key(0), 0.0)])[0].relevance, 0.0);
    }
}
