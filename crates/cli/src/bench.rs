//! `excerpt bench`: index-level figures on a generated collection, so releases can be
//! compared on the same machine. The benchmark itself is `excerpt-bench`; this module
//! maps the flags onto it and prints the report.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use excerpt_bench::BenchOptions;

/// Options of `excerpt bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Chunks in the generated collection.
    #[arg(long, default_value_t = 100_000)]
    pub chunks: usize,
    /// Chunks per generated document.
    #[arg(long, default_value_t = 50)]
    pub chunks_per_doc: usize,
    /// Vector dimension.
    #[arg(long, default_value_t = 384)]
    pub dim: usize,
    /// Queries timed per search kind.
    #[arg(long, default_value_t = 200)]
    pub queries: usize,
    /// Where to build the collection (default: a temporary directory, removed after).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Seed of the generator.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// LLM-token budget of the query phase (whole queries: retrieval, then assembly with
    /// every strategy); 0 skips that phase.
    #[arg(long, default_value_t = 2000)]
    pub budget: usize,
    #[command(flatten)]
    pub output: crate::args::FormatArgs,
    /// Benchmark a PostgreSQL index instead: generate the collection into this
    /// database (postgres://user@host/db, which must hold no Excerpt index) through the
    /// real write path, build its HNSW index, then time searches and queries.
    #[arg(long, value_name = "URL")]
    pub postgres: Option<String>,
    /// With --postgres: concurrent writers of the load.
    #[arg(long, default_value_t = 2, requires = "postgres")]
    pub writers: usize,
    /// With --postgres: `hnsw.ef_search` of dense searches.
    #[arg(long, default_value_t = 100, requires = "postgres")]
    pub ef_search: usize,
    /// With --postgres: `maintenance_work_mem` of the HNSW build, in MiB.
    #[arg(long, default_value_t = 2048, requires = "postgres")]
    pub ann_memory_mib: usize,
    /// With --postgres: the model id recorded in the index (default
    /// bench-random-<dim>). Name the model `excerpt serve` loads to load-test a server
    /// on the generated collection.
    #[arg(long, requires = "postgres")]
    pub model_id: Option<String>,
    /// With --postgres: reuse the collection a previous run left in the database (same
    /// size and model id) and only time searches and queries.
    #[arg(long, requires = "postgres")]
    pub reuse: bool,
}

pub fn run(a: BenchArgs, quiet: bool) -> Result<()> {
    let json = a.output.is_json()?;
    if let Some(url) = a.postgres {
        let report = excerpt_bench::postgres::run(&excerpt_bench::postgres::PgBenchOptions {
            url,
            spec: excerpt_bench::generate::CollectionSpec {
                chunks: a.chunks,
                chunks_per_doc: a.chunks_per_doc,
                dim: a.dim,
            },
            queries: a.queries,
            seed: a.seed,
            budget: a.budget,
            writers: a.writers.max(1),
            ef_search: a.ef_search,
            ann_memory_mib: a.ann_memory_mib,
            model_id: a.model_id,
            reuse: a.reuse,
            verbose: !quiet,
        })?;
        let mut stdout = std::io::stdout().lock();
        if json {
            writeln!(stdout, "{}", serde_json::to_string_pretty(&report)?)?;
        } else {
            write!(stdout, "{report}")?;
        }
        return Ok(());
    }
    let outcome = excerpt_bench::run(&BenchOptions {
        chunks: a.chunks,
        chunks_per_doc: a.chunks_per_doc,
        dim: a.dim,
        queries: a.queries,
        dir: a.dir,
        seed: a.seed,
        budget: a.budget,
    })?;
    if !quiet && outcome.results_returned == 0 {
        eprintln!("warning: no search returned anything");
    }
    let mut stdout = std::io::stdout().lock();
    if json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&outcome.report)?)?;
    } else {
        write!(stdout, "{}", outcome.report)?;
    }
    Ok(())
}
