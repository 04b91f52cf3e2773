//! The index phase: dense search as queries run it (through the ANN index when the
//! collection has one) against an exact scan, and BM25, each timed alone on the open
//! snapshot.

use std::time::Instant;

use anyhow::Result;
use excerpt_core::ChunkKey;
use excerpt_index::Snapshot;

use crate::generate::{near_center, query_text, Collection, Rng};
use excerpt_eval::{latency, Latency};

/// Results asked of every search.
const TOP: usize = 100;

/// The figures of the index phase.
#[derive(Debug)]
pub struct SearchFigures {
    /// Dense search as queries run it.
    pub dense: Latency,
    /// Exact dense search.
    pub dense_exact: Latency,
    /// Mean share of the exact top 10 that `dense` also returns in its top 10.
    pub dense_recall_at_10: f64,
    /// BM25 search.
    pub bm25: Latency,
    /// Results returned by all searches together.
    pub results_returned: usize,
}

/// Times `queries` searches of each kind, top 100: query vectors near the collection's
/// centres, query texts of four frequent words.
pub fn run(
    snap: &Snapshot,
    collection: &Collection,
    rng: &mut Rng,
    queries: usize,
) -> Result<SearchFigures> {
    let mut dense = Vec::with_capacity(queries);
    let mut exact = Vec::with_capacity(queries);
    let mut recall_sum = 0.0f64;
    let mut bm25 = Vec::with_capacity(queries);
    let mut sink = 0usize;
    for _ in 0..queries {
        let q = near_center(&collection.centers, rng);
        let t = Instant::now();
        let hits: Vec<(ChunkKey, f32)> = snap.dense_search(&q, TOP, None);
        dense.push(t.elapsed().as_secs_f64() * 1e3);
        sink += hits.len();
        let t = Instant::now();
        let truth = snap.dense_search_exact(&q, TOP, None);
        exact.push(t.elapsed().as_secs_f64() * 1e3);
        let top: Vec<ChunkKey> = truth.iter().take(10).map(|h| h.0).collect();
        let found = hits.iter().take(10).filter(|h| top.contains(&h.0)).count();
        recall_sum += found as f64 / top.len().max(1) as f64;
        let text = query_text(&collection.vocab, rng);
        let t = Instant::now();
        let hits = snap.bm25_search(&text, TOP, None)?;
        bm25.push(t.elapsed().as_secs_f64() * 1e3);
        sink += hits.len();
    }
    Ok(SearchFigures {
        dense: latency(&dense),
        dense_exact: latency(&exact),
        dense_recall_at_10: recall_sum / queries.max(1) as f64,
        bm25: latency(&bm25),
        results_returned: sink,
    })
}
