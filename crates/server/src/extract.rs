//! Request plumbing: [`JsonBody`] reads a JSON body under the size limit whatever the
//! `Content-Type` (curl's `-d` sends a form type), turning every failure into an
//! [`ApiError`]; [`blocking`] runs engine work off the async threads.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use crate::{ApiError, AppState};

/// A JSON request body deserialized into `T`: 413 over the body limit, 400 when it is
/// not valid JSON for `T` (serde's message names the field).
pub(crate) struct JsonBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
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
