//! `excerpt docs`, `excerpt rm`, `excerpt stats`: what the index holds.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use excerpt::EngineError;

use crate::args::{FormatArgs, Global};
use crate::outcome::{Exit, EXIT_NOT_FOUND, EXIT_USAGE};
use crate::terminal::printable;

use super::common::{engine, shown_index};

pub(super) fn docs(g: &Global, a: FormatArgs) -> Result<ExitCode> {
    let json = a.is_json()?;
    let engine = engine(g, None, None);
    // What the index may be missing (a damaged index directory), one line each; no
    // index yet lists nothing, as `documents` says.
    match engine.store() {
        Ok((_, warnings)) => {
            for w in warnings {
                eprintln!("warning: {}", printable(&w));
            }
        }
        Err(e) if e.is_no_index() => {}
        Err(e) => return Err(e.into()),
    }
    let list = engine.documents()?;
    let mut stdout = std::io::stdout().lock();
    if json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&list)?)?;
    } else {
        for d in &list {
            // Control characters in ids or titles (from an index written before ids
            // were checked) are escaped, never sent raw to the terminal.
            writeln!(
                stdout,
                "{}\t{} chunks\t{}",
                printable(&d.id),
                d.chunks,
                printable(&d.title)
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn rm(g: &Global, ids: Vec<String>, prefixes: Vec<String>) -> Result<ExitCode> {
    if prefixes.iter().any(|p| p.is_empty()) {
        return Err(Exit(
            EXIT_USAGE,
            "--prefix needs a non-empty prefix (to empty an index, delete its directory)".into(),
        )
        .into());
    }
    let engine = engine(g, None, None);
    let mut wanted = ids.clone();
    if !prefixes.is_empty() {
        wanted.extend(
            engine
                .documents()?
                .into_iter()
                .map(|d| d.id)
                .filter(|id| prefixes.iter().any(|p| id.starts_with(p.as_str()))),
        );
    }
    let mut seen = std::collections::HashSet::new();
    wanted.retain(|id| seen.insert(id.clone()));
    let removed: std::collections::HashSet<String> = if wanted.is_empty() {
        Default::default()
    } else {
        engine.remove(&wanted)?.into_iter().collect()
    };
    let mut err = std::io::stderr().lock();
    for id in &wanted {
        if removed.contains(id) {
            if !g.quiet {
                writeln!(err, "removed {}", printable(id))?;
            }
        } else {
            // Shown even with --quiet: the id was asked for and is not there.
            writeln!(err, "not found: {}", printable(id))?;
        }
    }
    for p in &prefixes {
        if !wanted.iter().any(|id| id.starts_with(p.as_str())) {
            writeln!(
                err,
                "not found: no document id starts with {}",
                printable(p)
            )?;
        }
    }
    drop(err);
    if removed.is_empty() {
        return Err(Exit(EXIT_NOT_FOUND, "no document was removed".into()).into());
    }
    if !g.quiet {
        eprintln!("removed {} document(s)", removed.len());
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn stats(g: &Global, a: FormatArgs) -> Result<ExitCode> {
    let json = a.is_json()?;
    let engine = engine(g, None, None);
    let v = engine.stats()?;
    let mut stdout = std::io::stdout().lock();
    if json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(stdout, "index       {}", printable(&shown_index(&g.index)))?;
    let snap = match engine.snapshot() {
        Ok(snap) => snap,
        Err(EngineError::Unsupported(_)) => {
            // A database: no generation, segments or damage (it checks its own storage).
            write_stats_body(&mut stdout, &v)?;
            writeln!(
                stdout,
                "in database {:.1} MiB (tables with their indexes)",
                v.disk_bytes as f64 / 1048576.0
            )?;
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(e.into()),
    };
    let s = snap.stats();
    writeln!(stdout, "generation  {}", s.generation)?;
    write_stats_body(&mut stdout, &v)?;
    writeln!(
        stdout,
        "on disk     {:.1} MiB in {} segment(s)",
        s.disk_bytes as f64 / 1048576.0,
        s.segments
    )?;
    if s.damage.is_empty() {
        writeln!(stdout, "damaged     no")?;
    } else {
        writeln!(
            stdout,
            "damaged     yes, {}; run `excerpt repair`",
            printable(&s.damage.summary(20))
        )?;
        for p in s.damage.problems() {
            writeln!(stdout, "            {}", printable(&p))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The lines of `excerpt stats` both stores have: contents, model, chunker, headers and
/// stored sentence vectors.
fn write_stats_body(out: &mut impl Write, s: &excerpt::IndexStats) -> std::io::Result<()> {
    writeln!(out, "documents   {}", s.documents)?;
    writeln!(out, "chunks      {}", s.chunks)?;
    writeln!(out, "text        {} bytes", s.text_bytes)?;
    writeln!(out, "model       {} ({} dimensions)", s.model, s.dimension)?;
    writeln!(out, "chunker     {}", s.chunker)?;
    writeln!(out, "headers     {}", if s.headers { "on" } else { "off" })?;
    if s.sentence_vector_documents > 0 {
        writeln!(
            out,
            "sentences   {} vectors stored, for {} of {} documents",
            s.sentence_vectors, s.sentence_vector_documents, s.documents
        )?;
    }
    Ok(())
}
