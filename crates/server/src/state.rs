//! The server's options and the state every handler shares.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use excerpt::{ChatConfig, Engine, IngestOptions};

use crate::metrics::Metrics;

/// Default request body limit: 16 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 16 * 1024 * 1024;
/// Default time a client has to send its request body: 30 s.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Default number of requests served at once.
pub const DEFAULT_MAX_CONCURRENT: usize = 64;

/// How the server behaves. The defaults suit a local tool on a loopback address; see
/// docs/SECURITY.md for an exposed server.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Largest request body accepted, in bytes; larger bodies get 413.
    pub body_limit: usize,
    /// Log one line per request (method, path, status, milliseconds) through `tracing`
    /// at level INFO.
    pub log_requests: bool,
    /// Options of `POST /v1/ingest` (commit size, embedding batch).
    pub ingest: IngestOptions,
    /// Bearer token (the write token). When set, writes (ingest, delete, ask) need
    /// `Authorization: Bearer TOKEN`, and so do reads unless `public_reads`; it allows
    /// everything. [`Server::bind`](crate::Server::bind) refuses a non-loopback address without one.
    pub token: Option<String>,
    /// A read-only token beside [`ServerOptions::token`]: it lets reads through (query,
    /// documents, stats, metrics, and MCP without its `ingest` tool); a write sent with
    /// it gets 403. Needs `token`, and must differ from it ([`Server::bind`](crate::Server::bind) refuses
    /// otherwise).
    pub read_token: Option<String>,
    /// With a token: let reads (query, documents, stats, metrics) through without one.
    pub public_reads: bool,
    /// Accept only loopback names (`localhost`, `127.0.0.1`, `[::1]`) in the `Host`
    /// and `Origin` headers, plus `allowed_hosts`. [`Server::bind`](crate::Server::bind) sets it to whether
    /// the bound address is a loopback one.
    pub restrict_hosts: bool,
    /// More host names requests may use (`Host` and `Origin`); when not empty, only
    /// these (and loopback names on a loopback bind) are accepted.
    pub allowed_hosts: Vec<String>,
    /// Requests served at once; more are answered 503 with `Retry-After`. With a
    /// `token`, a quarter of them (at least one) is kept for requests carrying it, so
    /// anonymous or read-token clients cannot take every permit from the writers.
    pub max_concurrent: usize,
    /// Time a request has to finish (503 `timeout` after it).
    pub request_timeout: Duration,
    /// Time a client has to send its request head before the connection is closed.
    pub header_timeout: Duration,
    /// Time a client has to send its whole request body once its head is in (408
    /// `body_timeout` after it, and the connection is closed). The body is read while
    /// the request holds one of the `max_concurrent` permits, so this bounds how long a
    /// client that trickles its body can keep a permit.
    pub body_timeout: Duration,
    /// Time shutdown waits for requests in flight.
    pub shutdown_timeout: Duration,
    /// The chat endpoint of `POST /v1/ask` (`None`: the route answers 501). Asking
    /// spends the endpoint's tokens, so with a token set it needs the token like a
    /// write, even with `public_reads`.
    pub ask: Option<ChatConfig>,
    /// An `excerpt eval --html` report served at `GET /v1/report` (a read, behind the
    /// token guard, with a Content-Security-Policy of its own); `None`: the route
    /// answers 404. Read once, at startup, by [`read_report`] (UTF-8 text; shared by
    /// every answer, never copied).
    pub report: Option<Bytes>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            body_limit: DEFAULT_BODY_LIMIT,
            log_requests: true,
            ingest: IngestOptions::default(),
            token: None,
            read_token: None,
            public_reads: false,
            restrict_hosts: true,
            allowed_hosts: Vec::new(),
            max_concurrent: DEFAULT_MAX_CONCURRENT,
            request_timeout: Duration::from_secs(300),
            header_timeout: Duration::from_secs(10),
            body_timeout: DEFAULT_BODY_TIMEOUT,
            shutdown_timeout: Duration::from_secs(30),
            ask: None,
            report: None,
        }
    }
}

/// Largest report [`read_report`] takes: 256 MiB (a report of every question of a large
/// evaluation set is a few MiB).
pub const MAX_REPORT_BYTES: u64 = 256 * 1024 * 1024;

/// Reads the report `path` for [`ServerOptions::report`]: an HTML file of UTF-8 text, at
/// most [`MAX_REPORT_BYTES`]. The error names the file and what is wrong with it (missing,
/// unreadable, a directory, too large, not UTF-8), so that a server is not started
/// without the report it was asked to serve.
pub fn read_report(path: &Path) -> std::io::Result<Bytes> {
    let named = |e: std::io::Error| {
        std::io::Error::new(
            e.kind(),
            format!("cannot read the report {}: {e}", path.display()),
        )
    };
    let meta = std::fs::metadata(path).map_err(named)?;
    let refused = |what: String| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("cannot serve the report {}: {what}", path.display()),
        )
    };
    if !meta.is_file() {
        return Err(refused("not a file".into()));
    }
    if meta.len() > MAX_REPORT_BYTES {
        return Err(refused(format!(
            "{} bytes, over the limit of {MAX_REPORT_BYTES}",
            meta.len()
        )));
    }
    let bytes = std::fs::read(path).map_err(named)?;
    if let Err(e) = std::str::from_utf8(&bytes) {
        return Err(refused(format!(
            "not UTF-8 text (byte {}); `excerpt eval --html` writes UTF-8",
            e.valid_up_to()
        )));
    }
    Ok(Bytes::from(bytes))
}

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) engine: Arc<Engine>,
    /// Held by ingest and delete for their whole write: one writer at a time.
    pub(crate) writer: Arc<tokio::sync::Mutex<()>>,
    pub(crate) options: Arc<ServerOptions>,
    /// What `GET /metrics` prints.
    pub(crate) metrics: Arc<Metrics>,
}
