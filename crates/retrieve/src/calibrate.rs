//! Relevance calibration: every ranked list becomes [`Hit`]s whose `relevance` is an
//! absolute number in [0, 1], whatever the scale of the scores it came from.
//!
//! - Dense (cosine similarity): already an absolute scale, clamped to [0, 1] (a negative
//!   similarity is no relevance).
//! - BM25: no absolute scale, so relevance is the score relative to the best hit's.
//! - Fused lists: [`crate::fusion`] computes the relevance with the fused score. RRF's
//!   relevance reads ranks only, so hits fused by RRF also get the relevance of their
//!   scores ([`with_score_relevance`]), which `rse` values chunks by.

use std::collections::BTreeMap;

use excerpt_core::{ChunkKey, Hit};

use crate::fusion::{fuse_hybrid, Fused, FusionError, FusionMethod};

/// Hits of a dense search: the cosine score, clamped to [0, 1], is the relevance.
pub fn dense_hits(list: &[(ChunkKey, f32)]) -> Vec<Hit> {
    list.iter()
        .map(|&(key, score)| Hit::new(key, score, score.clamp(0.0, 1.0)))
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
        .map(|&(key, score)| Hit::new(key, score, (score / max).clamp(0.0, 1.0)))
        .collect()
}

/// Hits of a fused list, keeping its score and relevance.
pub fn fused_hits(list: Vec<Fused>) -> Vec<Hit> {
    list.into_iter()
        .map(|f| Hit::new(f.key, f.score, f.relevance))
        .collect()
}

/// Gives hits fused by rank (RRF, whose relevance reads only ranks) the relevance of
/// their scores ([`Hit::score_relevance`]): the relevance of the same two lists fused by
/// [`FusionMethod::MinMax`] with equal weights, the mean of each list's min-max
/// normalised score (0 for a list the chunk is not in). Hits fused by score keep
/// `None` (their relevance already reads the scores).
pub fn with_score_relevance(
    hits: &mut [Hit],
    dense: &[(ChunkKey, f32)],
    bm25: &[(ChunkKey, f32)],
    method: FusionMethod,
) -> Result<(), FusionError> {
    if !matches!(method, FusionMethod::Rrf { .. }) {
        return Ok(());
    }
    let by_score: BTreeMap<ChunkKey, f32> =
        fuse_hybrid(dense, bm25, FusionMethod::MinMax { alpha: 0.5 })?
            .into_iter()
            .map(|f| (f.key, f.relevance))
            .collect();
    for h in hits {
        h.score_relevance = Some(by_score.get(&h.key).copied().unwrap_or(0.0));
    }
    Ok(())
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

    #[test]
    fn rank_fused_hits_also_get_the_relevance_of_their_scores() {
        // Dense: chunk 0 far ahead, then 1 and 2 close together; BM25: only 0 and 2.
        let dense = [(key(0), 0.9), (key(1), 0.3), (key(2), 0.1)];
        let bm25 = [(key(0), 12.0), (key(2), 2.0)];
        let rrf = FusionMethod::Rrf { k: 60.0 };
        let mut hits = fused_hits(fuse_hybrid(&dense, &bm25, rrf).unwrap());
        assert!(hits.iter().all(|h| h.score_relevance.is_none()));
        with_score_relevance(&mut hits, &dense, &bm25, rrf).unwrap();
        let by_key = |o: u32| hits.iter().find(|h| h.key == key(o)).unwrap();
        // Ranks alone rate the three close together; the scores do not: the mean of the
        // min-max normalised dense and BM25 scores (0 where a list lacks the chunk).
        assert!(by_key(2).relevance > 0.9, "{:?}", hits);
        assert_eq!(by_key(0).score_relevance, Some(1.0));
        let r1 = by_key(1).score_relevance.unwrap();
        assert!((r1 - 0.5 * (0.2 / 0.8)).abs() < 1e-6, "{r1}");
        assert_eq!(by_key(2).score_relevance, Some(0.0));
        // Hits fused by score keep their relevance alone.
        let mm = FusionMethod::MinMax { alpha: 0.5 };
        let mut hits = fused_hits(fuse_hybrid(&dense, &bm25, mm).unwrap());
        with_score_relevance(&mut hits, &dense, &bm25, mm).unwrap();
        assert!(hits.iter().all(|h| h.score_relevance.is_none()));
    }
}
