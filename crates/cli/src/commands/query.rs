//! `excerpt query`: the context for a question, rendered as asked.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use excerpt::render;

use crate::args::{output_format, usage, Global, QueryArgs};
use crate::terminal::{printable, terminal_safe};

use super::common::{engine, query_request, query_text};

pub(super) fn query(g: &Global, a: QueryArgs) -> Result<ExitCode> {
    use crate::args::Format;
    let format = output_format(a.json, a.format, Format::Json, Format::Text, &[]).map_err(usage)?;
    let text = query_text(a.text)?;
    let engine = engine(g, None, None);
    let mut req = query_request(text, a.retrieval)?;
    req.timings = a.timings;
    let ctx = engine.query(&req)?;
    // Shown whatever the format and --quiet: the answer may be missing documents.
    for w in &ctx.warnings {
        eprintln!("warning: {}", printable(w));
    }
    let json = matches!(format, Format::Json);
    if let (Some(t), false) = (&ctx.timings, json) {
        eprintln!(
            "timings: embedding {:.1} ms, BM25 {:.1} ms (alongside the embedding), dense \
             {:.1} ms, fusion {:.1} ms, rerank {:.1} ms, feedback {:.1} ms, assembly {:.1} \
             ms; total {:.1} ms",
            t.embed_ms,
            t.lexical_ms,
            t.dense_ms,
            t.fusion_ms,
            t.rerank_ms,
            t.feedback_ms,
            t.assembly_ms,
            t.total_ms
        );
    }
    let explained = match a.explain {
        Some(n) => Some(engine.explain(&req, &ctx, n)?),
        None => None,
    };
    let mut out = render(&req.text, &ctx, format.into(), a.instruction);
    if let Some(hits) = &explained {
        if json {
            out = serde_json::to_string_pretty(&excerpt::explained_value(&req.text, &ctx, hits))?;
        } else {
            for line in super::explain::lines(hits) {
                eprintln!("{}", printable(&line));
            }
        }
    }
    // JSON escapes control characters itself; text and Markdown carry document text
    // and titles as they are, so they are made safe for the terminal here.
    let out = if json {
        out.into()
    } else {
        terminal_safe(&out)
    };
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{out}")?;
    Ok(ExitCode::SUCCESS)
}
