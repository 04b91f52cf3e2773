//! The report of `excerpt bench`: its JSON shape and its text table.

use std::fmt;

use excerpt_index::AnnStatus;
use serde::Serialize;

use crate::query::QueryPhase;
use excerpt_eval::Latency;

/// All figures of one run; serialises to the JSON of `excerpt bench --json`, displays
/// as its text output.
#[derive(Debug, Serialize)]
pub struct BenchReport {
    /// Chunks in the collection.
    pub chunks: usize,
    /// Documents in the collection.
    pub documents: usize,
    /// Vector dimension.
    pub dim: usize,
    /// Seconds to generate and write the index.
    pub build_seconds: f64,
    /// Seconds to open the snapshot.
    pub open_seconds: f64,
    /// Seconds from the start of the open until every vectors file had passed its
    /// check (which runs after the open, on a thread of the snapshot's; a query waits
    /// for the checks of the files it reads).
    pub vectors_checked_seconds: f64,
    /// Size of the index directory.
    pub disk_mib: f64,
    /// Resident memory of the process after opening the snapshot (0 where unknown).
    pub rss_mib_after_open: f64,
    /// Resident memory after the dense (as queries run it) and BM25 searches, before
    /// the exact scans map every vector (0 where unknown).
    pub rss_mib_after_searches: f64,
    /// Resident memory after every timed search, exact scans included, and every whole
    /// query (0 where unknown).
    pub rss_mib_after_queries: f64,
    /// Dense search as queries run it: the ANN index when the collection has one.
    pub dense: Latency,
    /// Exact dense search (a scan of every vector).
    pub dense_exact: Latency,
    /// The ANN index's state (`absent` below the size threshold).
    pub ann: String,
    /// Mean share of the exact top 10 that `dense` also returns in its top 10.
    pub dense_recall_at_10: f64,
    /// BM25 search.
    pub bm25: Latency,
    /// Whole queries through the engine (absent with `--budget 0`).
    pub query: Option<QueryPhase>,
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "collection   {} chunks in {} documents, dim {}",
            self.chunks, self.documents, self.dim
        )?;
        writeln!(
            f,
            "build        {:.1} s   open {:.2} s   vectors checked {:.2} s after the open began",
            self.build_seconds, self.open_seconds, self.vectors_checked_seconds
        )?;
        writeln!(
            f,
            "disk         {:.1} MiB   RSS after open {:.0} MiB",
            self.disk_mib, self.rss_mib_after_open
        )?;
        writeln!(
            f,
            "RSS          {:.0} MiB after the dense and BM25 searches, {:.0} MiB after the exact scans and whole queries",
            self.rss_mib_after_searches, self.rss_mib_after_queries
        )?;
        writeln!(
            f,
            "ann          {}   dense recall@10 vs exact {:.3}",
            self.ann, self.dense_recall_at_10
        )?;
        for (name, l) in [
            ("dense", &self.dense),
            ("dense exact", &self.dense_exact),
            ("bm25", &self.bm25),
        ] {
            writeln!(
                f,
                "{name:<12} p50 {:.2} ms   p99 {:.2} ms   mean {:.2} ms  (top 100)",
                l.p50_ms, l.p99_ms, l.mean_ms
            )?;
        }
        if let Some(q) = &self.query {
            write_query_phase(f, q)?;
        }
        Ok(())
    }
}

/// The lines of the query phase (shared by the PostgreSQL report).
pub(crate) fn write_query_phase(f: &mut fmt::Formatter<'_>, q: &QueryPhase) -> fmt::Result {
    writeln!(
        f,
        "queries      budget {} tokens, {} candidates per search; model inference excluded",
        q.budget, q.candidates
    )?;
    let r = &q.retrieve;
    writeln!(
        f,
        "  retrieve   p50 {:.2} ms   p99 {:.2} ms   (dense + bm25 + rrf)",
        r.p50_ms, r.p99_ms
    )?;
    for st in &q.strategies {
        writeln!(
            f,
            "  {:<10} assemble p50 {:.2} ms  p99 {:.2} ms   whole query p50 {:.2} ms  p99 {:.2} ms   {:.1} pieces",
            st.strategy,
            st.assemble.p50_ms,
            st.assemble.p99_ms,
            st.query.p50_ms,
            st.query.p99_ms,
            st.pieces
        )?;
    }
    Ok(())
}

/// How the report names the ANN index's state.
pub(crate) fn ann_state(ann: &AnnStatus) -> String {
    match ann {
        AnnStatus::Absent => "absent (exact search)".to_string(),
        AnnStatus::Ready { lists, .. } => format!("IVF, {lists} lists"),
        AnnStatus::Unavailable { reason } => format!("unavailable: {reason}"),
    }
}

/// Resident memory of this process in MiB, read from `/proc/self/status` (0 where that
/// is unavailable).
pub(crate) fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .map(str::to_string)
        })
        .and_then(|l| {
            l.split_whitespace()
                .nth(1)
                .and_then(|k| k.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}
