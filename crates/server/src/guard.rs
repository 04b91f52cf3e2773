//! What stands between a request and the handlers, outermost first:
//!
//! 1. [`check_origin`]: the `Host` header must name this server (on a loopback bind only
//!    loopback names, plus [`ServerOptions::allowed_hosts`]), which defeats DNS
//!    rebinding; a browser's `Origin` must be one of those names too, which defeats
//!    cross-site requests from web pages.
//! 2. [`check_token`]: with a [`ServerOptions::token`], writes need
//!    `Authorization: Bearer TOKEN`, and reads too unless
//!    [`ServerOptions::public_reads`]. A [`ServerOptions::read_token`] passes for
//!    reads only: a write sent with it gets 403.
//! 3. [`limit`]: at most [`ServerOptions::max_concurrent`] requests run at once; the
//!    next one is answered 503 with `Retry-After` at once rather than queued, and each
//!    request has [`ServerOptions::request_timeout`] to finish. With a write token, a
//!    quarter of the permits ([`writer_reserve`]) is kept for requests that carry it:
//!    anonymous and read-token clients, however many trickle their bodies, cannot keep
//!    the writers out. Holding the permit, the
//!    guard reads the whole body within [`ServerOptions::body_timeout`] (408 after it,
//!    413 over [`ServerOptions::body_limit`]) before the handler runs, so a client that
//!    trickles its body holds a permit for that long at most.
//!
//! `GET /healthz` passes only the first: it stays instant while the API is saturated.
//! `GET /metrics` passes the first two, not the limit. `/mcp` (MCP over streamable
//! HTTP) passes the token guard like a read and carries whether it may write
//! ([`excerpt_mcp::WritesAllowed`], only with the write token) to the MCP server.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_core::Stream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;
use crate::state::ServerOptions;

/// What the guards share.
#[derive(Clone)]
pub(crate) struct Guard {
    pub(crate) options: Arc<ServerOptions>,
    /// The permits every request may take.
    permits: Arc<Semaphore>,
    /// The permits kept for requests with the write token ([`writer_reserve`]).
    reserve: Arc<Semaphore>,
}

/// How many of the `max_concurrent` permits are kept for requests with the write token:
/// a quarter (at least one) when a token is set and there are two permits or more;
/// none otherwise (without a token every request may write).
pub(crate) fn writer_reserve(options: &ServerOptions) -> usize {
    let all = options.max_concurrent.max(1);
    if options.token.is_none() || all < 2 {
        return 0;
    }
    (all / 4).max(1)
}

impl Guard {
    /// The guards' shared state for `options`: `max_concurrent` permits, the
    /// [`writer_reserve`] of them kept for the write token.
    pub(crate) fn new(options: Arc<ServerOptions>) -> Self {
        let reserve = writer_reserve(&options);
        Guard {
            permits: Arc::new(Semaphore::new(options.max_concurrent.max(1) - reserve)),
            reserve: Arc::new(Semaphore::new(reserve)),
            options,
        }
    }

    /// A permit for a request, from the shared ones, else from the reserve when it
    /// carries the write token.
    fn permit(&self, writer: bool) -> Option<OwnedSemaphorePermit> {
        self.permits
            .clone()
            .try_acquire_owned()
            .ok()
            .or_else(|| match writer {
                true => self.reserve.clone().try_acquire_owned().ok(),
                false => None,
            })
    }
}

/// Whether `host` (no port) names this machine's loopback interface.
fn is_loopback_name(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.eq_ignore_ascii_case("localhost") || host.ends_with(".localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// The host part of a `Host` header value or of an origin's authority (`name`,
/// `name:port`, `[v6]:port`).
fn host_part(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    authority.split(':').next().unwrap_or(authority)
}

impl ServerOptions {
    /// Whether a request naming `host` is for this server.
    fn accepts_host(&self, host: &str) -> bool {
        let h = host_part(host);
        if self.allowed_hosts.iter().any(|a| a.eq_ignore_ascii_case(h)) {
            return true;
        }
        if self.restrict_hosts {
            is_loopback_name(h)
        } else {
            self.allowed_hosts.is_empty()
        }
    }
}

/// Refuses requests whose `Host` is not this server's or whose `Origin` is a foreign web
/// page (403).
pub(crate) async fn check_origin(State(g): State<Guard>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()));
    if let Some(host) = host {
        if !g.options.accepts_host(host) {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "host_not_allowed",
                format!(
                    "Host {host:?} is not a name of this server (a loopback-bound server answers only loopback names unless more are allowed)"
                ),
            )
            .into_response();
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let allowed = origin
            .to_str()
            .ok()
            .and_then(|o| o.split_once("://"))
            .is_some_and(|(_, authority)| {
                let same = host.is_some_and(|h| host_part(h) == host_part(authority));
                same || g.options.accepts_host(authority)
            });
        if !allowed {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "origin_not_allowed",
                format!(
                    "requests from web pages at {:?} are refused (cross-site request)",
                    origin.to_str().unwrap_or("(not text)")
                ),
            )
            .into_response();
        }
    }
    next.run(req).await
}

/// POST routes that only read (a query's options do not fit in a URL). `/v1/ask` is not
/// one of them: it spends the chat endpoint's tokens, so it is guarded like a write.
const READ_POSTS: &[&str] = &["/v1/query"];

/// Whether a request may change the index: anything but GET, HEAD, OPTIONS and the
/// read-only POST routes.
fn is_write(method: &Method, path: &str) -> bool {
    match *method {
        Method::GET | Method::HEAD | Method::OPTIONS => false,
        Method::POST => !READ_POSTS.contains(&path),
        _ => true,
    }
}

/// Compares without stopping at the first difference, so the time taken does not tell
/// how much of a guessed token was right.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The bearer token of a request, if it sent one.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The MCP endpoint. Its messages read or write (the `ingest` tool), so the guard lets it
/// through like a read, and marks each request with whether it may write: the MCP
/// server lists and runs `ingest` only for a request that would pass as a write.
pub(crate) const MCP_PATH: &str = "/mcp";

/// What a request's bearer token allows, weakest first; [`check_token`] leaves it in
/// the request's extensions for [`limit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Access {
    /// No token, or one the server does not know.
    None,
    /// The read token: queries, listings, statistics, metrics.
    Read,
    /// The write token (or no token configured at all): everything.
    Write,
}

impl ServerOptions {
    /// What the token in `headers` allows. Both tokens are compared every time, each
    /// in constant time, so the time taken tells nothing either.
    fn access(&self, headers: &HeaderMap) -> Access {
        if self.token.is_none() && self.read_token.is_none() {
            return Access::Write;
        }
        let Some(given) = bearer(headers) else {
            return Access::None;
        };
        let is = |t: &Option<String>| {
            t.as_ref()
                .is_some_and(|t| same_secret(given.as_bytes(), t.as_bytes()))
        };
        let (write, read) = (is(&self.token), is(&self.read_token));
        if write {
            Access::Write
        } else if read {
            Access::Read
        } else {
            Access::None
        }
    }
}

/// With tokens configured: 401 for a request that needs one and does not carry it, 403
/// for a write that carries the read token.
pub(crate) async fn check_token(State(g): State<Guard>, mut req: Request, next: Next) -> Response {
    let o = &g.options;
    let access = o.access(req.headers());
    req.extensions_mut().insert(access);
    let mcp = req.uri().path() == MCP_PATH;
    if mcp {
        req.extensions_mut()
            .insert(excerpt_mcp::WritesAllowed(access == Access::Write));
    }
    let write = !mcp && is_write(req.method(), req.uri().path());
    let needed = if write {
        Access::Write
    } else if o.public_reads {
        Access::None
    } else {
        Access::Read
    };
    if access >= needed {
        return next.run(req).await;
    }
    if access == Access::Read {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "read_only_token",
            format!(
                "the read token may only read; {} {} needs the write token",
                req.method(),
                req.uri().path()
            ),
        )
        .into_response();
    }
    let what = if write { "writes" } else { "requests" };
    let which = if write || o.read_token.is_none() {
        "the server's token"
    } else {
        "the server's read or write token"
    };
    let mut res = ApiError::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        format!("{what} to this server need the header `Authorization: Bearer TOKEN` with {which}"),
    )
    .into_response();
    res.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    res
}

/// A request's concurrency permit, in its extensions, for a handler whose work outlives
/// its response head (a streamed answer): [`HeldPermit::take`] moves the permit into
/// that work, so it is released when the work ends, neither when the head is sent nor
/// when a slow client finishes reading. Not taken, it is released with the response.
#[derive(Clone)]
pub(crate) struct HeldPermit(Arc<std::sync::Mutex<Option<OwnedSemaphorePermit>>>);

impl HeldPermit {
    /// The permit, if the guard gave one and nobody took it yet.
    pub(crate) fn take(&self) -> Option<OwnedSemaphorePermit> {
        self.0.lock().ok().and_then(|mut p| p.take())
    }
}

/// At most `max_concurrent` requests at once (503 + `Retry-After: 1` beyond), each with
/// `body_timeout` to send its body (408, and the connection closes) and
/// `request_timeout` to finish (503 `timeout`; the engine work it started still ends
/// cleanly: a write holds its lock until its commit is done). The permit is held until
/// the response head is ready, or by the work a handler takes it into ([`HeldPermit`]).
pub(crate) async fn limit(State(g): State<Guard>, req: Request, next: Next) -> Response {
    if let Some(refused) = declared_too_large(req.headers(), g.options.body_limit) {
        return refused;
    }
    let writer = req.extensions().get::<Access>() == Some(&Access::Write);
    let Some(permit) = g.permit(writer) else {
        let mut res = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            format!(
                "the server is already answering {} requests; retry shortly",
                g.options.max_concurrent
            ),
        )
        .into_response();
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return res;
    };
    let held = HeldPermit(Arc::new(std::sync::Mutex::new(Some(permit))));
    let _held = held.clone();
    let (parts, body) = req.into_parts();
    let body = match tokio::time::timeout(
        g.options.body_timeout,
        read_body(body, g.options.body_limit),
    )
    .await
    {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(e)) => return e.into_response(),
        Err(_) => {
            tracing::info!(
                seconds = g.options.body_timeout.as_secs_f64(),
                path = parts.uri.path(),
                "request body not received in time; closing the connection"
            );
            let mut res = ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "body_timeout",
                format!(
                    "the request body did not arrive within {} s",
                    g.options.body_timeout.as_secs_f64()
                ),
            )
            .into_response();
            res.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return res;
        }
    };
    let mut req = Request::from_parts(parts, Body::from(body));
    req.extensions_mut().insert(held);
    let timeout = g.options.request_timeout;
    match tokio::time::timeout(timeout, next.run(req)).await {
        Ok(res) => res,
        Err(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "timeout",
            format!(
                "the request did not finish within {} s",
                timeout.as_secs_f64()
            ),
        )
        .into_response(),
    }
}

/// 413 at once (and the connection closed, its body unread) for a request whose
/// `Content-Length` is over `limit`, rather than a 408 once the body timeout passes.
fn declared_too_large(headers: &HeaderMap, limit: usize) -> Option<Response> {
    let declared: u64 = headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    if declared <= limit as u64 {
        return None;
    }
    let mut res = ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        format!("request body of {declared} bytes is larger than the limit of {limit} bytes"),
    )
    .into_response();
    res.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    Some(res)
}

/// `POST /mcp` with a JSON body that is not JSON, or not a JSON-RPC message: answered
/// here with a JSON-RPC error (`-32700` parse error, `-32600` invalid request; `id`
/// null) and HTTP 400, where rmcp would answer 415 as if the content type were wrong.
/// The body is already read ([`limit`] runs first).
pub(crate) async fn mcp_parse_errors(req: Request, next: Next) -> Response {
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        });
    if req.method() != Method::POST || !json {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let bytes = match read_body(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    if let Some(reply) = excerpt_mcp::malformed(&bytes) {
        tracing::info!(
            code = reply["error"]["code"].as_i64().unwrap_or_default(),
            bytes = bytes.len(),
            "malformed MCP message answered with a JSON-RPC error"
        );
        return (StatusCode::BAD_REQUEST, axum::Json(reply)).into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// Reads a whole request body, refusing it (413) as soon as it grows over `limit` bytes.
async fn read_body(body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let mut stream = body.into_data_stream();
    let mut buf: Vec<u8> = Vec::new();
    while let Some(chunk) =
        std::future::poll_fn(|cx| std::pin::Pin::new(&mut stream).poll_next(cx)).await
    {
        let chunk = chunk.map_err(|_| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "body_unreadable",
                "the request body could not be read (the connection broke or the body is malformed)",
            )
        })?;
        if buf.len().saturating_add(chunk.len()) > limit {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("request body is larger than the limit of {limit} bytes"),
            ));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names() {
        for h in [
            "localhost",
            "LOCALHOST",
            "127.0.0.1",
            "127.8.9.1",
            "::1",
            "[::1]",
            "app.localhost",
        ] {
            assert!(is_loopback_name(h), "{h}");
        }
        for h in [
            "attacker.example",
            "10.0.0.1",
            "0.0.0.0",
            "localhost.attacker.example",
            "",
        ] {
            assert!(!is_loopback_name(h), "{h}");
        }
    }

    #[test]
    fn host_parts() {
        assert_eq!(host_part("localhost:7700"), "localhost");
        assert_eq!(host_part("[::1]:7700"), "::1");
        assert_eq!(host_part("example.org"), "example.org");
    }

    #[test]
    fn host_policy() {
        let mut o = ServerOptions::default();
        assert!(o.accepts_host("127.0.0.1:7700"));
        assert!(!o.accepts_host("attacker.example"));
        o.allowed_hosts = vec!["search.internal".into()];
        assert!(o.accepts_host("search.internal:80"));
        assert!(!o.accepts_host("attacker.example"));
        o.restrict_hosts = false;
        assert!(
            !o.accepts_host("attacker.example"),
            "allowed hosts still restrict"
        );
        o.allowed_hosts.clear();
        assert!(
            o.accepts_host("attacker.example"),
            "an open bind with no list"
        );
    }

    #[test]
    fn what_each_token_allows() {
        let with = |o: &ServerOptions, auth: Option<&'static str>| {
            let mut h = HeaderMap::new();
            if let Some(a) = auth {
                h.insert(header::AUTHORIZATION, HeaderValue::from_static(a));
            }
            o.access(&h)
        };
        let mut o = ServerOptions::default();
        assert_eq!(with(&o, None), Access::Write, "no token configured");
        o.token = Some("w".into());
        o.read_token = Some("r".into());
        assert_eq!(with(&o, Some("Bearer w")), Access::Write);
        assert_eq!(with(&o, Some("Bearer r")), Access::Read);
        assert_eq!(with(&o, Some("Bearer x")), Access::None);
        assert_eq!(with(&o, Some("Basic w")), Access::None);
        assert_eq!(with(&o, None), Access::None);
        // An empty token configured is never matched by a missing header.
        o.token = Some(String::new());
        o.read_token = None;
        assert_eq!(with(&o, None), Access::None);
        assert!(Access::Write > Access::Read && Access::Read > Access::None);
    }

    #[test]
    fn a_quarter_of_the_permits_is_kept_for_the_write_token() {
        let mut o = ServerOptions::default();
        assert_eq!(writer_reserve(&o), 0, "no token: every request may write");
        o.token = Some("w".into());
        for (all, kept) in [(64, 16), (8, 2), (3, 1), (2, 1), (1, 0), (0, 0)] {
            o.max_concurrent = all;
            assert_eq!(writer_reserve(&o), kept, "{all}");
            // Shared and kept together are the limit (at least one shared permit).
            let g = Guard::new(Arc::new(o.clone()));
            assert_eq!(
                g.permits.available_permits() + g.reserve.available_permits(),
                all.max(1)
            );
            assert!(g.permits.available_permits() >= 1);
        }
        o.max_concurrent = 2;
        let g = Guard::new(Arc::new(o));
        let shared = g.permit(false).unwrap();
        assert!(g.permit(false).is_none(), "the reserve is not for others");
        let kept = g.permit(true).unwrap();
        assert!(g.permit(true).is_none());
        drop((shared, kept));
        assert!(g.permit(false).is_some());
    }

    #[test]
    fn secrets_and_bearer() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), None);
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer s3cret"),
        );
        assert_eq!(bearer(&h), Some("s3cret"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Basic s3cret"),
        );
        assert_eq!(bearer(&h), None);
    }
}
