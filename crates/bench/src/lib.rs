//! Benchmarks of Excerpt on a generated collection, so releases can be compared on the
//! same machine without a model or a data set: the library behind `excerpt bench`.
//!
//! [`run`] generates a collection ([`generate`]: clustered random unit vectors as
//! embeddings, random words from a Zipf-like vocabulary as text) into an index, opens
//! it, times dense (as queries run it, and exact), BM25 and the ANN's recall
//! ([`search`]), then whole queries through the engine, retrieval and assembly with
//! every strategy ([`query`]). The figures come back as a [`BenchReport`], which
//! serialises to JSON and displays as the text table the command prints.
//!
//! [`postgres::run`] does the same on a PostgreSQL index: bulk load through the real
//! write path, HNSW build, incremental writes, searches and whole queries.
//!
//! The criterion benches (`cargo bench -p excerpt-bench`) time context assembly alone
//! on a smaller generated collection.

#![forbid(unsafe_code)]

pub mod generate;
pub mod postgres;
pub mod query;
pub mod report;
pub mod search;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use excerpt_index::Snapshot;

pub use excerpt_eval::Latency;
pub use report::BenchReport;

/// What to generate and how much to measure (the flags of `excerpt bench`).
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Chunks in the generated collection.
    pub chunks: usize,
    /// Chunks per generated document.
    pub chunks_per_doc: usize,
    /// Vector dimension.
    pub dim: usize,
    /// Queries timed per search kind.
    pub queries: usize,
    /// Where to build the collection (`None`: a temporary directory, removed after).
    pub dir: Option<PathBuf>,
    /// Seed of the generator.
    pub seed: u64,
    /// LLM-token budget of the query phase; 0 skips that phase.
    pub budget: usize,
    /// Open the index an earlier run built in `dir` instead of generating one.
    pub reuse: bool,
}

/// The figures of one run.
#[derive(Debug)]
pub struct BenchOutcome {
    /// What is printed.
    pub report: BenchReport,
    /// Results returned by all timed searches together: 0 means every search came back
    /// empty, and the timings measured nothing.
    pub results_returned: usize,
}

/// Generates the collection, times searches on it and (with a budget) whole queries.
pub fn run(options: &BenchOptions) -> Result<BenchOutcome> {
    let tmp;
    let dir = match &options.dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().join("bench-index")
        }
    };
    let mut rng = generate::Rng(options.seed.max(1));
    let spec = generate::CollectionSpec {
        chunks: options.chunks,
        chunks_per_doc: options.chunks_per_doc,
        dim: options.dim,
    };
    let collection = if options.reuse {
        // The vocabulary and centres are drawn first from the seed, as `build` drew them.
        generate::setup(&spec, &mut rng)
    } else {
        generate::build(&dir, &spec, &mut rng)?
    };
    let t = Instant::now();
    let snap = Snapshot::open(&dir)?;
    let open_seconds = t.elapsed().as_secs_f64();
    let rss = report::rss_mib();
    // The searches below are timed on checked files.
    snap.check_vectors();
    let vectors_checked_seconds = t.elapsed().as_secs_f64();

    let searches = search::run(&snap, &collection, &mut rng, options.queries)?;
    let query = if options.budget > 0 {
        Some(query::run(
            &dir,
            collection.embedder(),
            &collection.vocab,
            &mut rng,
            options.queries,
            options.budget,
        )?)
    } else {
        None
    };
    let rss_after_queries = report::rss_mib();
    let stats = snap.stats();
    let report = BenchReport {
        chunks: snap.chunk_count(),
        documents: snap.documents().len(),
        dim: options.dim,
        build_seconds: collection.build_seconds,
        open_seconds,
        vectors_checked_seconds,
        disk_mib: stats.disk_bytes as f64 / 1048576.0,
        rss_mib_after_open: rss,
        rss_mib_after_searches: searches.rss_mib_after_searches,
        rss_mib_after_queries: rss_after_queries,
        dense: searches.dense,
        dense_exact: searches.dense_exact,
        ann: report::ann_state(&stats.ann),
        dense_recall_at_10: searches.dense_recall_at_10,
        bm25: searches.bm25,
        query,
    };
    Ok(BenchOutcome {
        report,
        results_returned: searches.results_returned,
    })
}
