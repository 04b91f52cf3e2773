//! Request plumbing: [`JsonBody`] reads a JSON body sent as `application/json` under the
//! size limit, turning every failure into an [`ApiError`]; [`blocking`] and [`on_pool`]
//! run engine work off the async threads.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap, StatusCode};
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::state::AppState;

/// A JSON request body deserialized into `T`: 415 unless the `Content-Type` is
/// `application/json` (or another `+json` type), 413 over the body limit, 400 when it is
/// not valid JSON for `T` (serde's message names the field).
///
/// The type is required because the types a web page may send to another site without
/// the browser asking that site first (forms, `text/plain`) are exactly the others: a
/// page cannot post to a local server behind its user's back.
pub(crate) struct JsonBody<T>(pub T);

/// Whether the request says its body is JSON.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        if !is_json(req.headers()) {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "send the body as JSON with the header `Content-Type: application/json`",
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body_too_large",
                    format!(
                        "request body is larger than the limit of {} bytes",
                        state.options.body_limit
                    ),
                )
            } else {
                ApiError::new(e.status(), "bad_request", e.body_text())
            }
        })?;
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
    }
}

/// Runs `f` on the blocking thread pool; a panic in it becomes a 500.
pub(crate) async fn blocking<T, F>(f: F) -> Result<T, ApiError>
where
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("the request's worker failed: {e}")))?
}

/// Runs `f`, work for the CPU, on a thread of the compute pool (rayon's global pool,
/// where the engine runs its parallel steps); a panic in it becomes a 500.
///
/// A query handed to the blocking pool [`blocking`] uses costs two more wake-ups of a
/// sleeping thread than one handed here (16-22 µs each at the median on a two-core
/// virtual machine), and each of its parallel steps (the embedding beside BM25, the two
/// halves of the dense scan) is handed from that thread to the pool and back again; run
/// on the pool, those steps start on the thread already there (measured on 2026-11-28,
/// docs/history/benchmarks-2026-11-28.md: -0.68 ms a question for `auto`, -0.16 for
/// `topk`, with the other changes of that day).
pub(crate) async fn on_pool<T, F>(f: F) -> Result<T, ApiError>
where
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    rayon::spawn(move || {
        // rayon aborts the process on a panic in a spawned task: caught here instead.
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        // The request may be gone (its client hung up): nobody waits for the answer.
        let _ = tx.send(out);
    });
    match rx.await {
        Ok(Ok(out)) => out,
        Ok(Err(panic)) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string());
            Err(ApiError::internal(format!(
                "the request's worker failed: {what}"
            )))
        }
        Err(_) => Err(ApiError::internal(
            "the request's worker stopped without an answer",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    /// Work on the pool answers what it returns; a panic in it becomes a 500 that
    /// names it, and the pool goes on serving.
    #[tokio::test]
    async fn pool_work_answers_and_a_panic_is_a_500() {
        let on = |n: u32| on_pool(move || Ok(rayon::current_thread_index().map(|_| n)));
        assert_eq!(
            on(7).await.unwrap(),
            Some(7),
            "runs on a thread of the pool"
        );
        let failed = on_pool(|| -> Result<(), ApiError> { panic!("boom {}", 1) })
            .await
            .unwrap_err();
        assert_eq!(failed.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(failed.message.contains("boom 1"), "{}", failed.message);
        let refused = on_pool(|| -> Result<(), ApiError> { Err(ApiError::bad_request("no")) })
            .await
            .unwrap_err();
        assert_eq!(refused.status, StatusCode::BAD_REQUEST);
        assert_eq!(on(8).await.unwrap(), Some(8));
    }

    #[test]
    fn json_content_types() {
        let with = |v: &'static str| {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(v));
            is_json(&h)
        };
        assert!(with("application/json"));
        assert!(with("Application/JSON; charset=utf-8"));
        assert!(with("application/vnd.api+json"));
        for not in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data",
            "text/json+x",
        ] {
            assert!(!with(not), "{not}");
        }
        assert!(!is_json(&HeaderMap::new()));
    }
}
