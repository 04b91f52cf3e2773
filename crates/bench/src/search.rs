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
    /// Resident memory after the dense (as queries run it) and BM25 searches, before the
    /// exact scans.
    pub rss_mib_after_searches: f64,
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
    // Drawn as one query vector then one query text each, in that order.
    let drawn: Vec<(Vec<f32>, String)> = (0..queries)
        .map(|_| {
            let q = near_center(&collection.centers, rng);
            (q, query_text(&collection.vocab, rng))
        })
        .collect();
    let mut sink = 0usize;
    // The searches a query runs first (dense as queries run it, then BM25), so that the
    // memory they leave resident is read before the exact scans map every vector.
    let mut dense = Vec::with_capacity(queries);
    let mut dense_hits = Vec::with_capacity(queries);
    let mut bm25 = Vec::with_capacity(queries);
    for (q, text) in &drawn {
        let t = Instant::now();
        let hits: Vec<(ChunkKey, f32)> = snap.dense_search(q, TOP, None);
        dense.push(t.elapsed().as_secs_f64() * 1e3);
        sink += hits.len();
        dense_hits.push(hits);
        let t = Instant::now();
        let hits = snap.bm25_search(text, TOP, None)?;
        bm25.push(t.elapsed().as_secs_f64() * 1e3);
        sink += hits.len();
    }
    let rss_mib_after_searches = crate::report::rss_mib();
    let mut exact = Vec::with_capacity(queries);
    let mut recall_sum = 0.0f64;
    for ((q, _), hits) in drawn.iter().zip(&dense_hits) {
        let t = Instant::now();
        let truth = snap.dense_search_exact(q, TOP, None);
        exact.push(t.elapsed().as_secs_f64() * 1e3);
        let top: Vec<ChunkKey> = truth.iter().take(10).map(|h| h.0).collect();
        let found = hits.iter().take(10).filter(|h| top.contains(&h.0)).count();
        recall_sum += found as f64 / top.len().max(1) as f64;
    }
    Ok(SearchFigures {
        dense: latency(&dense),
        dense_exact: latency(&exact),
        dense_recall_at_10: recall_sum / queries.max(1) as f64,
        bm25: latency(&bm25),
        rss_mib_after_searches,
        results_returned: sink,
    })
}
