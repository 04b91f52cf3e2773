//! The connection loop: accepts TCP connections and serves HTTP/1.1 on each with hyper,
//! with the limits `axum::serve` does not offer: a client gets
//! [`ServerOptions::header_timeout`] to send its request head (a connection that never
//! finishes its headers is closed, not held), and shutdown waits at most
//! [`ServerOptions::shutdown_timeout`] for the requests in flight.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

use crate::state::ServerOptions;

/// Serves `app` on `listener` until `shutdown` completes; then stops accepting, lets the
/// requests in flight finish for up to `options.shutdown_timeout`, and returns.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    options: &ServerOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(options.header_timeout)
        .keep_alive(true);
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let conn = http.serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    let deadline = options.shutdown_timeout;
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(deadline) => {
            tracing::warn!(
                seconds = deadline.as_secs_f64(),
                "shutdown deadline reached; closing the connections still open"
            );
        }
    }
    Ok(())
}
