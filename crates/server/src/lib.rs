//! The Excerpt HTTP server (`excerpt serve`): the [`excerpt::Engine`] over a small JSON
//! API that mirrors the `excerpt` command, so the same request gives the same JSON.
//!
//! | route | what it does | CLI twin |
//! |---|---|---|
//! | `POST /v1/query` | context for a query ([`excerpt::QuerySpec`] fields, plus `format`) | `excerpt query --format json` |
//! | `POST /v1/ask` | an LLM's answer with checked citations (JSON, or server-sent events with `"stream": true`) | `excerpt ask --format json` |
//! | `POST /v1/ingest` | add or replace documents sent as JSON | `excerpt ingest --json` |
//! | `GET /v1/documents` | list documents (`limit`, `offset`, `prefix`; the count in `X-Total-Count`) | `excerpt docs --json` |
//! | `GET /v1/documents/{id}` | one document: summary, sections, text (the id's `/` raw or `%2F`) | |
//! | `GET /v1/pages/{page}/{id}` | a page of a PDF document as a PNG, `?highlight=` ranges outlined (read again from its source file, in the PDF worker when there is one) | |
//! | `DELETE /v1/documents/{id}` | remove a document | `excerpt rm` |
//! | `GET /v1/stats` | index statistics | `excerpt stats --json` |
//! | `GET /metrics` | Prometheus metrics: requests, latencies, index size, ingest counts (`metrics.rs`) | |
//! | `GET /healthz` | liveness | |
//! | `GET /openapi.json` | this API's OpenAPI 3.1 document ([`openapi`]) | |
//! | `GET /`, `GET /ui/{file}` | the inspector: a web page over this API, built into the binary (`ui.rs`) | |
//! | `GET /v1/report` | the `excerpt eval --html` report given at startup ([`ServerOptions::report`]), with its own script-free policy | `excerpt eval --html` |
//! | `POST /mcp` | the Model Context Protocol over streamable HTTP (stateless, JSON answers); `ingest` only for requests that may write | `excerpt mcp` |
//!
//! Engine work is blocking, so no handler runs it on the async threads: queries run on
//! the compute pool where the engine's parallel steps run (`extract::on_pool`), the
//! rest on `tokio::task::spawn_blocking`.
//! Writes (ingest, delete) are serialized by one lock in the server; the index's own
//! `LOCK` file keeps other processes out, and a write that meets it answers 409. Queries
//! never wait for a write: they read the latest committed snapshot.
//!
//! Request bodies must be JSON sent as `Content-Type: application/json` (415 otherwise),
//! which a web page cannot send to another site without the browser asking first.
//! Guards (`guard.rs`) check the `Host` and `Origin` headers, the bearer token (a write
//! token for everything, an optional read token for reads) and the concurrency limit; the connection loop (`serve.rs`) bounds the time to send headers
//! and the time shutdown waits. docs/SECURITY.md has the threat model.
//!
//! Errors are `{"error": {"code", "message"}}` ([`ApiError`]), the status from the
//! engine error's [`excerpt::ErrorKind`]: 400 bad input, 401 no or wrong token, 403 a
//! foreign Host or Origin or the read token on a write, 404 unknown document or no index, 409 index locked by another
//! writer, 408 body not sent within the body timeout, 413 body over the limit, 415 not
//! JSON, 503 an endpoint the engine depends on
//! (embeddings, reranking) failed, the server is full (`Retry-After`) or the request
//! timed out, 500 otherwise. Main types: [`Server`], [`ServerOptions`], [`router`].

#![forbid(unsafe_code)]

mod answers;
mod ask;
mod error;
mod extract;
mod guard;
mod handlers;
mod highlight;
mod metrics;
mod openapi;
mod serve;
mod state;
mod ui;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::Router;
use excerpt::{Engine, EngineError};
use tokio::net::{TcpListener, ToSocketAddrs};
use tower_http::trace::TraceLayer;

pub use error::ApiError;
pub use openapi::{document as openapi, document_json as openapi_json};
use state::AppState;
pub use state::{
    read_report, ServerOptions, DEFAULT_BODY_LIMIT, DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_CONCURRENT,
    MAX_REPORT_BYTES,
};

/// The API as an axum [`Router`] (for embedding in another server or testing), with the
/// guards of [`ServerOptions`]: host and origin checks, the token, the concurrency limit
/// and request timeout, and request logging.
pub fn router(engine: Arc<Engine>, options: ServerOptions) -> Router {
    let log = options.log_requests;
    let options = Arc::new(options);
    let counts = Arc::new(metrics::Metrics::new());
    let state = AppState {
        engine,
        writer: Arc::new(tokio::sync::Mutex::new(())),
        options: options.clone(),
        metrics: counts.clone(),
    };
    let g = guard::Guard::new(options.clone());
    // The routes come with their OpenAPI documentation (`openapi.rs`); the document
    // itself is built from the same list by `openapi::document`.
    let (open, api, scraped) = openapi::routes();
    let (open, _) = open.split_for_parts();
    let (api, _) = api.split_for_parts();
    let (scraped, _) = scraped.split_for_parts();
    let mcp = excerpt_mcp::streamable_http_service(
        state.engine.clone(),
        excerpt_mcp::McpOptions {
            allow_writes: true,
            ingest: options.ingest.clone(),
        },
        state.writer.clone(),
        options.body_limit,
    );
    let mcp = Router::new()
        .route_service(guard::MCP_PATH, mcp)
        .layer(middleware::from_fn(guard::mcp_parse_errors));
    let api = api
        .merge(mcp)
        .fallback(handlers::not_found)
        .method_not_allowed_fallback(handlers::method_not_allowed)
        .layer(DefaultBodyLimit::max(options.body_limit))
        .layer(middleware::from_fn_with_state(g.clone(), guard::limit))
        .layer(middleware::from_fn_with_state(
            g.clone(),
            guard::check_token,
        ))
        .with_state(state.clone());
    // `/metrics` passes the token guard but not the concurrency limit: a saturated
    // server is when it is most wanted.
    let scraped = scraped
        .method_not_allowed_fallback(handlers::method_not_allowed)
        .layer(middleware::from_fn_with_state(
            g.clone(),
            guard::check_token,
        ))
        .with_state(state.clone());
    let app = open
        .with_state(state)
        .merge(api)
        .merge(scraped)
        .layer(middleware::from_fn_with_state(g, guard::check_origin))
        // Outermost, so the refused requests are counted too.
        .layer(middleware::from_fn_with_state(counts, metrics::track));
    if log {
        app.layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &axum::http::Request<_>| {
                    tracing::info_span!("request", method = %req.method(), path = %req.uri().path())
                })
                .on_request(())
                .on_response(
                    |res: &axum::http::Response<_>, latency: Duration, _: &tracing::Span| {
                        tracing::info!(
                            status = res.status().as_u16(),
                            ms = %format_args!("{:.1}", latency.as_secs_f64() * 1000.0),
                            "answered"
                        );
                    },
                )
                .on_failure(()),
        )
    } else {
        app
    }
}

/// Loads what the first query would otherwise wait for: the embedding model (embedding
/// one string), the LLM tokenizer, the reranker if one is configured, and the latest
/// snapshot if the index exists (on PostgreSQL: the connection, its schema and config).
pub fn warm_up(engine: &Engine) -> Result<(), EngineError> {
    engine.embedder()?.embed_query("warm up")?;
    engine.llm_tokens()?;
    engine.reranker()?;
    match engine.store() {
        Ok(_) => Ok(()),
        Err(e) if e.is_no_index() => Ok(()),
        Err(e) => Err(e),
    }
}

/// A bound server, ready to run.
pub struct Server {
    listener: TcpListener,
    app: Router,
    options: ServerOptions,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.listener.local_addr().ok())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Binds `addr` (port 0 picks a free port; see [`Server::local_addr`]). On a
    /// loopback address only loopback host names are accepted (plus
    /// [`ServerOptions::allowed_hosts`]); any other address is refused without a
    /// [`ServerOptions::token`] (error kind `PermissionDenied`), since anyone who can
    /// reach it could otherwise ingest and delete documents. A
    /// [`ServerOptions::read_token`] without a write token, or equal to it, is refused
    /// (error kind `InvalidInput`).
    pub async fn bind(
        addr: impl ToSocketAddrs,
        engine: Arc<Engine>,
        mut options: ServerOptions,
    ) -> std::io::Result<Server> {
        match (&options.token, &options.read_token) {
            (None, Some(_)) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "a read token needs a write token beside it: without one, writes would be open to anyone while reads need a token",
                ));
            }
            (Some(w), Some(r)) if w == r => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "the read token must differ from the write token",
                ));
            }
            _ => {}
        }
        let listener = TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let loopback = local.ip().is_loopback();
        if !loopback && options.token.is_none() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "refusing to serve on {local} without a token: anyone who can reach that address could ingest and delete documents; set a token, or bind a loopback address such as 127.0.0.1"
                ),
            ));
        }
        options.restrict_hosts = loopback;
        Ok(Server {
            listener,
            app: router(engine, options.clone()),
            options,
        })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` completes, then stops accepting connections and waits for
    /// the requests in flight (an ingest in progress finishes its commit) for up to
    /// [`ServerOptions::shutdown_timeout`].
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        serve::serve(self.listener, self.app, &self.options, shutdown).await
    }
}

/// Completes on Ctrl-C (SIGINT) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

/// Runs a server on its own multi-threaded runtime until Ctrl-C or SIGTERM: binds `addr`,
/// calls `on_listening` with the bound address, serves, and returns after a graceful
/// shutdown. For binaries that have no runtime of their own (the `excerpt` CLI).
pub fn run_blocking(
    addr: &str,
    engine: Arc<Engine>,
    options: ServerOptions,
    on_listening: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    // Engine work other than queries runs on the blocking pool (queries run on rayon's
    // compute pool, its threads one a core); the concurrency limit bounds it, so the pool
    // needs no more threads than that (plus a few for file work), and idle threads go
    // after ten seconds, so memory returns near idle after a burst.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(options.max_concurrent.max(1) + 4)
        .thread_keep_alive(Duration::from_secs(10))
        .build()?;
    // The engine's last reference is dropped here, after the runtime: a PostgreSQL
    // index closes its blocking connections on drop, which must not happen on a
    // runtime thread (it panicked when the router state held the last reference).
    let keep = Arc::clone(&engine);
    let served = rt.block_on(async move {
        let server = Server::bind(addr, engine, options).await?;
        on_listening(server.local_addr()?);
        server.run_until(shutdown_signal()).await
    });
    drop(rt);
    drop(keep);
    served
}
