//! `excerpt serve` and `excerpt mcp`: the long-running front ends (their PDFs are parsed
//! by the hidden `excerpt pdf-worker`, in `pdf_worker`).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use excerpt::{IngestOptions, LoadOptions};

use crate::args::{Global, McpArgs, ServeArgs};
use crate::outcome::{Exit, EXIT_USAGE};

use super::common::{engine, init_logging, llm_config, pdf_worker_of, shown_index};

/// Loads the model before the first request, saying how long it took.
fn warm_up(g: &Global, engine: &excerpt::Engine) -> Result<()> {
    let t = std::time::Instant::now();
    excerpt_server::warm_up(engine)?;
    if !g.quiet {
        eprintln!("model loaded in {:.1}s", t.elapsed().as_secs_f64());
    }
    Ok(())
}

pub(super) fn serve(g: &Global, a: ServeArgs) -> Result<ExitCode> {
    // Before the model loads: a report that cannot be served is a mistake to say at once.
    let report = match &a.report {
        Some(path) => Some(
            excerpt_server::read_report(path)
                .map_err(|e| Exit(EXIT_USAGE, format!("--report: {e}")))?,
        ),
        None => None,
    };
    let engine = std::sync::Arc::new(engine(g, a.chunker, a.no_headers.then_some(false)));
    if !a.no_warmup {
        warm_up(g, &engine)?;
    }
    init_logging(g.quiet, a.log_format);
    let token = a.token.filter(|t| !t.trim().is_empty());
    let ingest = IngestOptions {
        load: LoadOptions {
            pdf_worker: Some(pdf_worker_of(&a.pdf)?),
            ..LoadOptions::default()
        },
        ..IngestOptions::default()
    };
    let options = excerpt_server::ServerOptions {
        ingest,
        body_limit: a.body_limit,
        log_requests: true,
        token,
        read_token: a.read_token.filter(|t| !t.trim().is_empty()),
        public_reads: a.public_reads,
        allowed_hosts: a.allow_hosts,
        max_concurrent: a.max_concurrent,
        request_timeout: Duration::from_secs(a.request_timeout),
        body_timeout: Duration::from_secs(a.body_timeout),
        ask: llm_config(g, &a.llm),
        report,
        ..excerpt_server::ServerOptions::default()
    };
    let index = shown_index(&g.index);
    let quiet = g.quiet;
    excerpt_server::run_blocking(&a.addr, engine, options, |addr| {
        // The one line on stdout: scripts and tests read the bound address from it.
        println!("listening on http://{addr}");
        if !quiet {
            eprintln!("serving index {index}; Ctrl-C to stop");
        }
    })
    .map_err(|e| {
        let hint = if e.kind() == std::io::ErrorKind::PermissionDenied {
            " (set EXCERPT_TOKEN, or pass --token)"
        } else {
            ""
        };
        anyhow::anyhow!("cannot serve on {}: {e}{hint}", a.addr)
    })?;
    if !g.quiet {
        eprintln!("stopped");
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn mcp(g: &Global, a: McpArgs) -> Result<ExitCode> {
    let engine = std::sync::Arc::new(engine(g, a.chunker, a.no_headers.then_some(false)));
    if !a.no_warmup {
        warm_up(g, &engine)?;
    }
    if !g.quiet {
        let writes = if a.allow_writes {
            "; the ingest tool is on"
        } else {
            ""
        };
        eprintln!(
            "serving index {} over MCP on stdio{writes}",
            shown_index(&g.index)
        );
    }
    // PDFs given to the ingest tool are parsed in the caged worker, as `ingest` and
    // `serve` parse them.
    let options = excerpt_mcp::McpOptions {
        allow_writes: a.allow_writes,
        ingest: IngestOptions {
            load: LoadOptions {
                pdf_worker: Some(pdf_worker_of(&a.pdf)?),
                ..LoadOptions::default()
            },
            ..IngestOptions::default()
        },
    };
    excerpt_mcp::serve_stdio_blocking(engine, options)
        .map_err(|e| anyhow::anyhow!("MCP server: {e}"))?;
    Ok(ExitCode::SUCCESS)
}
