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
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: BenchArgs, quiet: bool) -> Result<()> {
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
    if a.json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&outcome.report)?)?;
    } else {
        write!(stdout, "{}", outcome.report)?;
    }
    Ok(())
}
