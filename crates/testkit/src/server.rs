//! A real HTTP server on 127.0.0.1 for tests.

use std::net::SocketAddr;

use axum::Router;

/// An [`axum::Router`] served on an ephemeral port of 127.0.0.1 by a tokio runtime of
/// its own, so it works from synchronous tests and from clients that block. The server
/// stops when this value is dropped.
#[derive(Debug)]
pub struct FakeServer {
    addr: SocketAddr,
    _runtime: tokio::runtime::Runtime,
}

impl FakeServer {
    /// Binds 127.0.0.1 on a free port and serves `app` there; the socket accepts
    /// connections as soon as this returns.
    ///
    /// # Panics
    /// When the runtime cannot be built or the socket cannot be bound.
    pub fn start(app: Router) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime for the fake server");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        runtime.spawn(async move {
            axum::serve(listener, app).await.expect("serve");
        });
        Self {
            addr,
            _runtime: runtime,
        }
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL, `http://127.0.0.1:<port>` (no trailing slash).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}
