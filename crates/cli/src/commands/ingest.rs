//! `excerpt ingest`: files and folders into the index, with chunk contexts when asked.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use excerpt::{ContextualizeOptions, IngestOptions, IngestReport, LoadOptions, WalkOptions};

use crate::args::{ContextualizeArgs, Global, IngestArgs};
use crate::outcome::{EXIT_INTERRUPTED, EXIT_NOTHING_INGESTED};
use crate::terminal::printable;

use super::common::{
    chat_config, engine, interrupt_flag, pdf_worker_of, print_json, progress, shown_index,
};

pub(super) fn ingest(g: &Global, a: IngestArgs) -> Result<ExitCode> {
    let engine = engine(g, a.chunker, a.no_headers.then_some(false));
    let opts = IngestOptions {
        walk: WalkOptions {
            include: a.include,
            exclude: a.exclude,
            respect_ignore: !a.no_ignore,
            hidden: a.hidden,
            ..WalkOptions::default()
        },
        load: LoadOptions {
            text_extensions: a.text_ext,
            max_file_bytes: a.max_file_size << 20,
            max_pdf_pages: usize::try_from(a.max_pdf_pages).unwrap_or(usize::MAX),
            pdf_worker: Some(pdf_worker_of(&a.pdf)?),
        },
        commit_every_chunks: a.commit_every.max(1),
        contextualize: contextualize_options(g, &a.contextualize),
        sentence_vectors: a.sentence_vectors || a.late_chunking,
        late_chunking: a.late_chunking,
        prune: a.prune,
        language: a.language,
        cancel: Some(interrupt_flag()),
        ..IngestOptions::default()
    };
    let json = a.output.is_json()?;
    let bar = progress(g, opts.commit_every_chunks);
    let result = engine.ingest(&a.paths, &opts, &bar);
    bar.finish();
    let report = result?;
    if json {
        print_json(&report)?;
    }
    if report.interrupted {
        eprintln!(
            "interrupted: {} added and {} updated documents committed, {} left out (generation {}); run the same ingest again to finish",
            report.added,
            report.updated,
            report.left_out.len(),
            report.generation
        );
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    if !json && !g.quiet {
        print_summary(g, &report)?;
    }
    if !json {
        // Warnings show even with --quiet: the file was ingested, but not as written.
        for w in &report.warnings {
            eprintln!("warning: {}", printable(&w.reason));
        }
    }
    if report.nothing_ingested() && report.pruned.is_empty() {
        if !json {
            eprintln!("error: nothing could be ingested from the given paths");
        }
        return Ok(ExitCode::from(EXIT_NOTHING_INGESTED));
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints what the ingest `report` did on standard error: files, embedding and
/// contextualizing figures, skipped and failed files, pruned documents, the index.
fn print_summary(g: &Global, report: &IngestReport) -> Result<()> {
    let mut err = std::io::stderr().lock();
    writeln!(
        err,
        "ingested {} files in {:.1}s: {} added, {} updated, {} unchanged, {} skipped, {} failed",
        report.files,
        report.seconds,
        report.added,
        report.updated,
        report.unchanged,
        report.skipped.len(),
        report.failed.len()
    )?;
    if report.chunks_embedded > 0 {
        writeln!(
            err,
            "embedded {} chunks in {:.1}s ({:.1} chunks/s), reused {}",
            report.chunks_embedded,
            report.embed_seconds,
            report.chunks_embedded as f64 / report.embed_seconds.max(1e-9),
            report.chunks_reused
        )?;
    }
    if report.sentences_embedded > 0 {
        writeln!(
            err,
            "embedded {} sentences in {:.1}s ({:.1} sentences/s)",
            report.sentences_embedded,
            report.sentence_embed_seconds,
            report.sentences_embedded as f64 / report.sentence_embed_seconds.max(1e-9),
        )?;
    }
    if report.chunks_contextualized + report.context_cache_hits > 0 {
        writeln!(
            err,
            "contextualized {} chunks in {:.1}s ({} prompt + {} completion tokens), {} from cache",
            report.chunks_contextualized,
            report.contextualize_seconds,
            report.llm_prompt_tokens,
            report.llm_completion_tokens,
            report.context_cache_hits
        )?;
    }
    for p in report.skipped.iter().chain(&report.failed) {
        writeln!(err, "  {}", printable(&p.reason))?;
    }
    if !report.pruned.is_empty() {
        writeln!(
            err,
            "pruned {} document(s) whose files are gone:",
            report.pruned.len()
        )?;
        for id in &report.pruned {
            writeln!(err, "  {}", printable(id))?;
        }
    }
    writeln!(
        err,
        "index {}: {} documents (generation {})",
        printable(&shown_index(&g.index)),
        report.documents,
        report.generation
    )?;
    Ok(())
}

/// The contextualizer asked for by `ingest --contextualize` (clap makes sure URL and
/// model are given with it).
fn contextualize_options(g: &Global, a: &ContextualizeArgs) -> Option<ContextualizeOptions> {
    if !a.contextualize {
        return None;
    }
    let chat = chat_config(
        g,
        a.endpoint.llm_url.as_deref().unwrap_or_default(),
        a.endpoint.llm_model.as_deref().unwrap_or_default(),
        a.endpoint.llm_api_key_env.as_deref(),
    );
    let mut opts = ContextualizeOptions::new(chat);
    opts.concurrency = a.contextualize_concurrency.unwrap_or(0);
    opts.doc_chars = a.contextualize_doc_chars.max(1);
    Some(opts)
}
