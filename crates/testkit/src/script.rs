//! Scripted failures of a fake server.

use std::collections::VecDeque;
use std::sync::Mutex;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// A scripted failure, answered instead of the normal response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fail {
    /// This status, with the JSON body `{"error": {"message": "scripted <code>"}}`.
    Status(u16),
    /// 429 with a `Retry-After` header of this many seconds and a plain-text body.
    RateLimited {
        /// The `Retry-After` value.
        retry_after_secs: u32,
    },
}

impl Fail {
    /// The HTTP response of this failure.
    ///
    /// # Panics
    /// When a [`Fail::Status`] code is not a valid HTTP status.
    pub fn response(self) -> Response {
        match self {
            Fail::Status(code) => (
                StatusCode::from_u16(code).expect("valid HTTP status"),
                Json(json!({"error": {"message": format!("scripted {code}")}})),
            )
                .into_response(),
            Fail::RateLimited { retry_after_secs } => (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", retry_after_secs.to_string())],
                "slow down",
            )
                .into_response(),
        }
    }
}

/// The failures a fake server answers: each request takes the next failure of the
/// queue; once the queue is empty, every request gets the `always` failure if one is
/// set, else the normal response.
#[derive(Debug, Default)]
pub struct Script {
    queue: Mutex<VecDeque<Fail>>,
    always: Mutex<Option<Fail>>,
}

impl Script {
    /// A script that fails every request with `fail`.
    pub fn always(fail: Fail) -> Self {
        let script = Self::default();
        script.set_always(fail);
        script
    }

    /// Queues failures for the next requests, in order.
    pub fn push(&self, fails: impl IntoIterator<Item = Fail>) {
        self.queue.lock().unwrap().extend(fails);
    }

    /// Fails every request once the queue is empty.
    pub fn set_always(&self, fail: Fail) {
        *self.always.lock().unwrap() = Some(fail);
    }

    /// The failure for the current request, if any (consumes one queued failure).
    pub fn next(&self) -> Option<Fail> {
        let queued = self.queue.lock().unwrap().pop_front();
        queued.or(*self.always.lock().unwrap())
    }

    /// The failure response for the current request, if any (see [`Script::next`]).
    pub fn next_failure(&self) -> Option<Response> {
        self.next().map(Fail::response)
    }
}
