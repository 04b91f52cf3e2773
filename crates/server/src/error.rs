//! HTTP errors: every failure leaves the server as `{"error": {"code", "message"}}` with
//! a status that says whose fault it is. [`ApiError`] is built from an
//! [`EngineError`] here, at the edge, and nowhere else.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use excerpt::{EngineError, IndexError};
use excerpt_context::ContextError;

/// An error answered to a client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status} {code}: {message}")]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// A stable, machine-readable code (`bad_request`, `document_not_found`, ...).
    pub code: &'static str,
    /// What went wrong, for people.
    pub message: String,
}

impl ApiError {
    /// An error with a status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    /// 400: the request is malformed or asks for something impossible.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 404: no document with this id.
    pub fn document_not_found(id: &str) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "document_not_found",
            format!("no document with id {id:?} in the index"),
        )
    }

    /// 500: the server failed.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> ApiError {
        let message = e.to_string();
        let (status, code) = match &e {
            EngineError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            EngineError::Fusion(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            EngineError::Ingest(_) => (StatusCode::BAD_REQUEST, "bad_document"),
            EngineError::Context(
                ContextError::UnknownStrategy(_)
                | ContextError::BadSpec { .. }
                | ContextError::InvalidParams { .. },
            ) => (StatusCode::BAD_REQUEST, "bad_request"),
            EngineError::Index(IndexError::NotFound { .. }) => {
                (StatusCode::NOT_FOUND, "index_not_found")
            }
            EngineError::Index(IndexError::Locked { .. }) => (StatusCode::CONFLICT, "index_locked"),
            EngineError::Index(IndexError::BadDocument { .. }) => {
                (StatusCode::BAD_REQUEST, "bad_document")
            }
            EngineError::Index(IndexError::ConfigMismatch { .. }) => {
                (StatusCode::INTERNAL_SERVER_ERROR, "config_mismatch")
            }
            EngineError::Index(_) => (StatusCode::INTERNAL_SERVER_ERROR, "index"),
            EngineError::ModelMismatch { .. } => {
                (StatusCode::INTERNAL_SERVER_ERROR, "model_mismatch")
            }
            EngineError::Embed(_) => (StatusCode::INTERNAL_SERVER_ERROR, "embedding"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        ApiError::new(status, code, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({
            "error": { "code": self.code, "message": self.message }
        });
        (self.status, Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn statuses_follow_whose_fault_it_is() {
        let s = |e: EngineError| ApiError::from(e).status;
        assert_eq!(s(EngineError::BadRequest("x".into())), 400);
        assert_eq!(
            s(EngineError::Context(ContextError::UnknownStrategy(
                "x".into()
            ))),
            400
        );
        assert_eq!(
            s(EngineError::Index(IndexError::NotFound {
                dir: PathBuf::from("i")
            })),
            404
        );
        assert_eq!(
            s(EngineError::Index(IndexError::Locked {
                dir: PathBuf::from("i"),
                lock: PathBuf::from("i/LOCK")
            })),
            409
        );
        assert_eq!(s(EngineError::Cancelled), 500);
    }
}
