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

mod frames;
mod options;
mod tools;

use std::sync::Arc;

use excerpt::Engine;

pub use frames::{error_reply, malformed, INVALID_REQUEST, MAX_MESSAGE_BYTES, PARSE_ERROR};
pub use options::{McpOptions, WritesAllowed};
pub use tools::{
    DocumentEntry, DocumentList, DocumentText, ExcerptMcp, GetDocumentParams, IngestParams,
    IngestResult, ListDocumentsParams, SearchParams, SearchPiece, SearchResult, SectionEntry,
    DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT,
};

/// MCP over streamable HTTP, as a tower service to mount in an HTTP router (`excerpt
/// serve` mounts it at `/mcp`). Stateless: every POST carries one JSON-RPC message and
/// is answered with JSON; there are no sessions to keep or resume, so the service
/// needs nothing from the host at shutdown. The `Host` and `Origin` checks and the
/// token are the host router's: rmcp's own host check is off. Ingests take `writer`.
#[cfg(feature = "http")]
pub fn streamable_http_service(
    engine: Arc<Engine>,
    options: McpOptions,
    writer: Arc<tokio::sync::Mutex<()>>,
    body_limit: usize,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<
    ExcerptMcp,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let server = ExcerptMcp::with_writer(engine, options, writer);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .disable_allowed_hosts()
        .with_max_request_body_bytes(body_limit);
    StreamableHttpService::new(move || Ok(server.clone()), Default::default(), config)
}

/// Serves `engine` over MCP on stdin/stdout until the client closes the connection,
/// on a tokio runtime of its own. Nothing else may write to stdout meanwhile: it is
/// the protocol's channel (logs go to stderr). A line longer than
/// [`MAX_MESSAGE_BYTES`] is answered with JSON-RPC error [`INVALID_REQUEST`] and a line
/// that is not JSON with [`PARSE_ERROR`] (both with a null id, and a line on stderr);
/// the server goes on reading.
pub fn serve_stdio_blocking(engine: Arc<Engine>, options: McpOptions) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // The engine's last reference is dropped here, after the runtime: a PostgreSQL
    // index closes its blocking connections on drop, which must not happen on a
    // runtime thread (it would panic).
    let keep = Arc::clone(&engine);
    let served = rt.block_on(async move {
        frames::serve_lines(
            ExcerptMcp::new(engine, options),
            tokio::io::stdin(),
            tokio::io::stdout(),
            MAX_MESSAGE_BYTES,
        )
        .await
    });
    drop(rt);
    drop(keep);
    served
}
