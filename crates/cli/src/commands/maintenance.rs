//! `excerpt verify` and `excerpt repair`: damage found, and an index rebuilt from
//! what can be read.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;

use crate::args::{FormatArgs, Global};
use crate::outcome::EXIT_DAMAGED;
use crate::terminal::printable;

use super::common::{engine, print_json, shown_index};

pub(super) fn verify(g: &Global, a: FormatArgs) -> Result<ExitCode> {
    let json = a.is_json()?;
    let engine = engine(g, None, None);
    let report = engine.verify()?;
    let mut stdout = std::io::stdout().lock();
    if json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        let generation = report
            .generation
            .map_or_else(|| "unknown".to_string(), |g| g.to_string());
        writeln!(
            stdout,
            "index {}: generation {generation}, {} readable documents, {} files checked",
            printable(&shown_index(&g.index)),
            report.documents,
            report.files.len()
        )?;
        for n in &report.notes {
            writeln!(stdout, "note: {}", printable(n))?;
        }
        if report.is_sound() {
            writeln!(stdout, "no problems found")?;
        } else {
            writeln!(stdout, "{} problem(s):", report.problems.len())?;
            for p in &report.problems {
                writeln!(stdout, "  {}", printable(p))?;
            }
            let lost = report.lost_documents.len() + report.lost_unnamed;
            if lost > 0 {
                writeln!(stdout, "{lost} document(s) cannot be read:")?;
                for id in &report.lost_documents {
                    writeln!(stdout, "  {}", printable(id))?;
                }
                if report.lost_unnamed > 0 {
                    writeln!(stdout, "  ({} whose ids are unknown)", report.lost_unnamed)?;
                }
            }
            writeln!(stdout, "run `excerpt repair` to fix the index")?;
        }
    }
    Ok(if report.is_sound() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_DAMAGED)
    })
}

pub(super) fn repair(g: &Global, a: FormatArgs) -> Result<ExitCode> {
    let json = a.is_json()?;
    let engine = engine(g, None, None);
    let report = engine.repair()?;
    if json {
        print_json(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    if let Some(m) = &report.manifest {
        writeln!(out, "manifest: {}", printable(m))?;
    }
    for d in &report.dropped {
        // The problem names the segment and the file.
        writeln!(out, "dropped {}", printable(&d.problem))?;
    }
    for action in &report.actions {
        writeln!(out, "{}", printable(action))?;
    }
    let lost = report.lost_documents.len() + report.lost_unnamed;
    if lost == 0 {
        writeln!(out, "no document was lost")?;
    } else {
        writeln!(
            out,
            "{lost} document(s) lost (ingest them again to have them back):"
        )?;
        for id in &report.lost_documents {
            writeln!(out, "  {}", printable(id))?;
        }
        if report.lost_unnamed > 0 {
            writeln!(out, "  ({} whose ids are unknown)", report.lost_unnamed)?;
        }
    }
    if !report.unconfirmed.is_empty() {
        writeln!(
            out,
            "{} document(s) kept whose state is unconfirmed (see above; check them, then \
             `excerpt rm` or ingest them again):",
            report.unconfirmed.len()
        )?;
        for id in &report.unconfirmed {
            writeln!(out, "  {}", printable(id))?;
        }
    }
    writeln!(
        out,
        "index {}: {} documents (generation {})",
        shown_index(&g.index),
        report.documents,
        report.generation
    )?;
    Ok(ExitCode::SUCCESS)
}
