//! What the MCP server may do.

use excerpt::IngestOptions;

/// How the MCP server behaves.
#[derive(Debug, Clone, Default)]
pub struct McpOptions {
    /// Offer the `ingest` tool (off by default: an agent then only reads).
    pub allow_writes: bool,
    /// How `ingest` chunks and embeds a new document.
    pub ingest: IngestOptions,
}

/// A mark an HTTP server puts in a request's extensions to say whether that request
/// may write: with `WritesAllowed(false)`, the `ingest` tool is neither listed nor run
/// for it, whatever [`McpOptions::allow_writes`] says. `excerpt serve` marks every
/// request to `/mcp`: allowed when the server has no token or the request carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WritesAllowed(pub bool);
