//! A real HTTP server on 127.0.0.1 for the rerank and chat client tests (the same
//! approach as `remote.rs`): an axum router on its own tokio runtime, with scripted
//! failures.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Mutex;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde_json::json;

/// A scripted failure, answered instead of the normal response while it lasts.
#[derive(Clone, Copy, Debug)]
pub enum Fail {
    Status(u16),
    RateLimited { retry_after_secs: u32 },
}

/// Failures to answer: first the script, then `always` if set.
#[derive(Default)]
pub struct Script {
    pub queue: Mutex<VecDeque<Fail>>,
    pub always: Mutex<Option<Fail>>,
}

impl Script {
    pub fn push(&self, fails: impl IntoIterator<Item = Fail>) {
        self.queue.lock().unwrap().extend(fails);
    }

    pub fn set_always(&self, fail: Fail) {
        *self.always.lock().unwrap() = Some(fail);
    }

    /// The failure response for this request, if any.
    pub fn next_failure(&self) -> Option<Response> {
        let scripted = self.queue.lock().unwrap().pop_front();
        let fail = scripted.or(*self.always.lock().unwrap())?;
        Some(match fail {
            Fail::Status(code) => (
                StatusCode::from_u16(code).unwrap(),
                Json(json!({"error": {"message": format!("scripted {code}")}})),
            )
                .into_response(),
            Fail::RateLimited { retry_after_secs } => (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", retry_after_secs.to_string())],
                "slow down",
            )
                .into_response(),
        })
    }
}

/// The server; stops when dropped.
pub struct FakeServer {
    addr: SocketAddr,
    _runtime: tokio::runtime::Runtime,
}

impl FakeServer {
    pub fn start(app: Router) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        runtime.spawn(async move {
            axum::serve(listener, app).await.expect("serve");
        });
        Self {
            addr,
            _runtime: runtime,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}
