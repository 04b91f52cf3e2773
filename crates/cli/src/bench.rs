//! `excerpt bench`: index-level figures on a generated collection, so releases can be
//! compared on the same machine. The benchmark itself is `excerpt-bench`; this module
//! maps the flags onto it and prints the report.

use std::io::Write;

use anyhow::Result;
use excerpt_bench::BenchOptions;

use crate::args::BenchArgs;

pub fn run(a: BenchArgs, quiet: bool) -> Result<()> {
    let json = a.output.is_json()?;
    if a.reuse && a.postgres.is_none() && a.dir.is_none() {
        anyhow::bail!("--reuse needs --dir (the index an earlier run left there) or --postgres");
    }
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
        reuse: a.reuse,
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
