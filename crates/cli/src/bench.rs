//! `excerpt bench`: index-level figures on a generated collection, so releases can be
//! compared on the same machine. The benchmark itself is `excerpt-bench`; this module
//! maps the flags onto it and prints the report.

use std::io::Write;

use anyhow::{Context, Result};
use excerpt_bench::BenchOptions;
use excerpt_embed::throughput;

use crate::args::BenchArgs;

pub fn run(a: BenchArgs, model: Option<&str>, quiet: bool) -> Result<()> {
    let json = a.output.is_json()?;
    if a.encoder {
        return encoder(&a, model, json, quiet);
    }
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

/// `excerpt bench --encoder`: the local model's throughput next to the CPU's FMA peaks.
fn encoder(a: &BenchArgs, model: Option<&str>, json: bool, quiet: bool) -> Result<()> {
    let sources = match &a.corpus {
        Some(path) => corpus_texts(path)?,
        None => Vec::new(),
    };
    let dir = excerpt_embed::resolve_model(model)?;
    if !quiet {
        eprintln!("loading the model from {}", dir.display());
    }
    let batch = usize::try_from(a.batch).unwrap_or(usize::MAX);
    let embedder = excerpt_embed::LocalEmbedder::load(&dir)?.with_batch_size(batch);
    let n = usize::try_from(a.passages).unwrap_or(usize::MAX);
    let passages = throughput::passages(embedder.tokens(), &sources, n, throughput::PASSAGE_TOKENS);
    if !quiet {
        eprintln!(
            "embedding {} passages in batches of {batch}",
            passages.len()
        );
    }
    let texts: Vec<&str> = passages.iter().map(String::as_str).collect();
    let report = throughput::measure(&embedder, &texts)?;
    let mut stdout = std::io::stdout().lock();
    if json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        write!(stdout, "{report}")?;
    }
    Ok(())
}

/// The texts of `path`: its lines' "text" fields when it is JSONL, else its whole text.
fn corpus_texts(path: &std::path::Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the corpus {}", path.display()))?;
    let fields: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("text")?.as_str().map(str::to_string))
        .collect();
    Ok(if fields.is_empty() {
        vec![text]
    } else {
        fields
    })
}
