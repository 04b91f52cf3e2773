//! Request plumbing: [`JsonBody`] reads a JSON body sent as `application/json` under the
//! size limit, turning every failure into an [`ApiError`]; [`blocking`] runs engine work
//! off the async threads.

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

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

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
