//! Excerpt as a Model Context Protocol server: an agent (Claude Desktop, Cursor, Zed,
//! any MCP host) searches an index and reads documents through tools, over stdio.
//!
//! Built on the official Rust SDK (`rmcp`): the protocol, the handshake and the JSON
//! schemas of the tools come from it; this crate holds the tools.
//!
//! - `search`: a query (with budget, strategy and filters) → the assembled context,
//!   as numbered pieces with exact character offsets and as rendered text;
//! - `get_document`: a document's exact text, whole or a character range of it;
//! - `list_documents`: document ids and titles, by prefix, a page at a time;
//! - `ingest`: add or replace one document, listed only when the server was started
//!   with writes allowed ([`McpOptions::allow_writes`]).
//!
//! Every failure (a bad argument, an unknown document, no index yet) is answered as a
//! tool error the model can read and act on, never as a crash of the server. Engine
//! work runs on tokio's blocking pool, so a long search never stalls the protocol.

#![forbid(unsafe_code)]

mod tools;

use std::sync::Arc;

use excerpt::{Engine, IngestOptions};
use rmcp::ServiceExt;

pub use tools::{
    DocumentEntry, DocumentList, DocumentText, ExcerptMcp, GetDocumentParams, IngestParams,
    IngestResult, ListDocumentsParams, SearchParams, SearchPiece, SearchResult, SectionEntry,
    DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT,
};

/// How the MCP server behaves.
#[derive(Debug, Clone, Default)]
pub struct McpOptions {
    /// Offer the `ingest` tool (off by default: an agent then only reads).
    pub allow_writes: bool,
    /// How `ingest` chunks and embeds a new document.
    pub ingest: IngestOptions,
}

/// Serves `engine` over MCP on stdin/stdout until the client closes the connection,
/// on a tokio runtime of its own. Nothing else may write to stdout meanwhile: it is
/// the protocol's channel (logs go to stderr).
pub fn serve_stdio_blocking(engine: Arc<Engine>, options: McpOptions) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let server = ExcerptMcp::new(engine, options)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(std::io::Error::other)?;
        server.waiting().await.map_err(std::io::Error::other)?;
        Ok(())
    })
}
