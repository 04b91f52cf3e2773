//! The hidden `excerpt pdf-worker`: parses one PDF in this process for an ingest, the
//! server or the MCP server, which run it as a caged child process
//! (`excerpt::PdfWorker`); with `--page`, renders a page of one for the server's
//! inspector.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use crate::args::PdfWorkerArgs;

/// `excerpt pdf-worker`: one PDF (a file, or standard input) extracted in this process,
/// the reply on stdout, progress on stderr.
pub(super) fn pdf_worker(a: PdfWorkerArgs) -> Result<ExitCode> {
    if a.page {
        // A page request: its JSON line and the PDF, on standard input.
        let mut input = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut input)?;
        let mut out = std::io::stdout().lock();
        excerpt::run_pdf_page_worker(&input, &mut out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let (bytes, name) = match a.path.as_deref().filter(|p| *p != Path::new("-")) {
        Some(p) => (
            std::fs::read(p).map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", p.display()))?,
            p.display().to_string(),
        ),
        None => {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut bytes)?;
            (bytes, "stdin".to_string())
        }
    };
    let name = a.name.unwrap_or(name);
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr().lock();
    excerpt::run_pdf_worker(&name, &bytes, a.max_pages, &mut out, &mut err)?;
    Ok(ExitCode::SUCCESS)
}
