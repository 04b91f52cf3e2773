//! The Excerpt HTTP server (`excerpt serve`): the [`excerpt::Engine`] over a small JSON
//! API that mirrors the `excerpt` command, so the same request gives the same JSON.
//!
//! | route | what it does | CLI twin |
//! |---|---|---|
//! | `POST /v1/query` | context for a query ([`excerpt::QuerySpec`] fields, plus `format`) | `excerpt query --format json` |
//! | `POST /v1/ingest` | add or replace documents sent as JSON | `excerpt ingest --json` |
//! | `GET /v1/documents` | list documents | `excerpt docs --json` |
//! | `GET /v1/documents/{id}` | one document: summary, sections, text | |
//! | `DELETE /v1/documents/{id}` | remove a document | `excerpt rm` |
//! | `GET /v1/stats` | index statistics | `excerpt stats --json` |
//! | `GET /healthz` | liveness | |
//!
//! Engine work is blocking, so every handler runs it on `tokio::task::spawn_blocking`.
//! Writes (ingest, delete) are serialized by one lock in the server; the index's own
//! `LOCK` file keeps other processes out, and a write that meets it answers 409. Queries
//! never wait for a write: they read the latest committed snapshot.
//!
//! Errors are `{"error": {"code", "message"}}` ([`ApiError`]), the status from the
//! engine error's [`excerpt::ErrorKind`]: 400 bad input, 404 unknown document or no
//! index, 409 index locked by another writer, 413 body over the limit, 503 an endpoint
//! the engine depends on (embeddings, reranking) failed, 500 otherwise. Main types: [`Server`], [`ServerOptions`], [`router`].

#![forbid(unsafe_code)]

mod error;
mod extract;
mod handlers;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{DefaultBodyLimit, Request};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use excerpt::{Engine, EngineError, IngestOptions};
use tokio::net::{TcpListener, ToSocketAddrs};

pub use error::ApiError;

/// Default request body limit: 16 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 16 * 1024 * 1024;

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Largest request body accepted, in bytes; larger bodies get 413.
    pub body_limit: usize,
    /// Print one line per request (method, path, status, milliseconds) to stderr.
    pub log_requests: bool,
    /// Options of `POST /v1/ingest` (commit size, embedding batch).
    pub ingest: IngestOptions,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            body_limit: DEFAULT_BODY_LIMIT,
            log_requests: true,
            ingest: IngestOptions::default(),
        }
    }
}

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) engine: Arc<Engine>,
    /// Held by ingest and delete for their whole write: one writer at a time.
    pub(crate) writer: Arc<tokio::sync::Mutex<()>>,
    pub(crate) options: Arc<ServerOptions>,
}

/// The API as an axum [`Router`] (for embedding in another server or testing).
pub fn router(engine: Arc<Engine>, options: ServerOptions) -> Router {
    let log = options.log_requests;
    let state = AppState {
        engine,
        writer: Arc::new(tokio::sync::Mutex::new(())),
        options: Arc::new(options.clone()),
    };
    let app = Router::new()
        .route("/healthz", get(handlers::healthz))
        .route("/v1/query", post(handlers::query))
        .route("/v1/ingest", post(handlers::ingest))
        .route("/v1/documents", get(handlers::list_documents))
        .route(
            "/v1/documents/{*id}",
            get(handlers::get_document).delete(handlers::delete_document),
        )
        .route("/v1/stats", get(handlers::stats))
        .fallback(handlers::not_found)
        .method_not_allowed_fallback(handlers::method_not_allowed)
        .layer(DefaultBodyLimit::max(options.body_limit))
        .with_state(state);
    if log {
        app.layer(middleware::from_fn(log_request))
    } else {
        app
    }
}

/// Logs `METHOD PATH STATUS MILLISECONDS` to stderr once the response is ready.
async fn log_request(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let res = next.run(req).await;
    eprintln!(
        "{method} {path} {} {:.1}ms",
        res.status().as_u16(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    res
}

/// Loads what the first query would otherwise wait for: the embedding model (embedding
/// one string), the LLM tokenizer, the reranker if one is configured, and the latest
/// snapshot if the index exists.
pub fn warm_up(engine: &Engine) -> Result<(), EngineError> {
    engine.embedder()?.embed_query("warm up")?;
    engine.llm_tokens()?;
    engine.reranker()?;
    match engine.snapshot() {
        Ok(_) | Err(EngineError::Index(excerpt::IndexError::NotFound { .. })) => Ok(()),
        Err(e) => Err(e),
    }
}

/// A bound server, ready to run.
pub struct Server {
    listener: TcpListener,
    app: Router,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.listener.local_addr().ok())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Binds `addr` (port 0 picks a free port; see [`Server::local_addr`]).
    pub async fn bind(
        addr: impl ToSocketAddrs,
        engine: Arc<Engine>,
        options: ServerOptions,
    ) -> std::io::Result<Server> {
        let listener = TcpListener::bind(addr).await?;
        Ok(Server {
            listener,
            app: router(engine, options),
        })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` completes, then stops accepting connections and waits for
    /// the requests in flight (an ingest in progress finishes its commit).
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        axum::serve(self.listener, self.app)
            .with_graceful_shutdown(shutdown)
            .await
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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let server = Server::bind(addr, engine, options).await?;
        on_listening(server.local_addr()?);
        server.run_until(shutdown_signal()).await
    })
}
