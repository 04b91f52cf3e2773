//! HTTP errors: every failure leaves the server as `{"error": {"code", "message"}}` with
//! a status that says whose fault it is. [`ApiError`] is built from an
//! [`EngineError`] here, at the edge, and nowhere else: its [`ErrorKind`] picks the
//! status (400 bad input, 404 not found, 409 conflict, 503 an endpoint the engine
//! depends on failed or the index is damaged, 500 the server failed).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use excerpt::{EngineError, ErrorKind};

/// The body of every error answer: `{"error": {"code", "message"}}`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub(crate) struct ErrorBody {
    /// What went wrong.
    pub(crate) error: ErrorDetail,
}

/// What went wrong, for programs (`code`) and for people (`message`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub(crate) struct ErrorDetail {
    /// A stable, machine-readable code: `bad_request`, `not_found`,
    /// `document_not_found`, `unauthorized`, `host_not_allowed`, `overloaded`, ...
    pub(crate) code: String,
    /// What went wrong, in a sentence.
    pub(crate) message: String,
}

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
    /// The status and code follow the error's [`ErrorKind`], except for a damaged
    /// index: 503 `index_damaged`, whose message names `excerpt repair` (the server is
    /// not at fault, and no request can succeed until an operator repairs it).
    fn from(e: EngineError) -> ApiError {
        if let EngineError::Index(excerpt::IndexError::Corrupt { .. }) = e {
            return ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "index_damaged",
                e.to_string(),
            );
        }
        let (status, code) = match e.kind() {
            ErrorKind::BadInput => (StatusCode::BAD_REQUEST, "bad_request"),
            ErrorKind::NotFound => (StatusCode::NOT_FOUND, "not_found"),
            ErrorKind::Conflict => (StatusCode::CONFLICT, "conflict"),
            ErrorKind::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            ErrorKind::Internal => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        ApiError::new(status, code, e.to_string())
    }
}

impl IntoResponse for ApiError {
    /// The JSON answer. A server fault (500) is also logged with its message, since the
    /// client's copy is the only other trace of it.
    fn into_response(self) -> Response {
        // 501 and 503 are the server's configuration or its dependencies, not a fault.
        if self.status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!(code = self.code, message = %self.message, "server fault");
        }
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_string(),
                message: self.message,
            },
        };
        (self.status, Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use excerpt::ContextError;
    use excerpt::{IndexError, RetrieveError};
    use std::path::PathBuf;

    #[test]
    fn statuses_follow_whose_fault_it_is() {
        let s = |e: EngineError| ApiError::from(e).status;
        assert_eq!(s(EngineError::BadRequest("x".into())), 400);
        assert_eq!(
            s(EngineError::Context(ContextError::UnknownStrategy {
                name: "x".into(),
                expected: "topk".into(),
            })),
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
        let damaged = ApiError::from(EngineError::Index(IndexError::Corrupt {
            dir: PathBuf::from("i"),
            detail: "x; writes are refused until `excerpt repair` is run".into(),
        }));
        assert_eq!(
            (damaged.status.as_u16(), damaged.code),
            (503, "index_damaged")
        );
        assert!(
            damaged.message.contains("excerpt repair"),
            "{}",
            damaged.message
        );
    }

    #[test]
    fn server_faults_are_not_bad_requests() {
        let s = |e: RetrieveError| ApiError::from(EngineError::Retrieve(e)).status;
        let key = excerpt::ChunkKey { doc: 0, ordinal: 1 };
        assert_eq!(s(RetrieveError::StaleHit(key)), 500);
        assert_eq!(
            s(RetrieveError::RerankCount {
                got: 1,
                expected: 2
            }),
            500
        );
        assert_eq!(s(RetrieveError::NoReranker), 400);
        let remote = excerpt::EmbedError::Remote {
            endpoint: excerpt::RemoteEndpoint::Embedding,
            url: "http://x/v1/embeddings".into(),
            status: Some(502),
            message: "bad gateway".into(),
        };
        assert_eq!(s(RetrieveError::Embed(remote)), 503);
    }

    #[test]
    fn messages_name_no_flags() {
        let e = ApiError::from(EngineError::Index(IndexError::NotFound {
            dir: PathBuf::from("idx"),
        }));
        assert_eq!(e.code, "not_found");
        assert!(!e.message.contains("--"), "{}", e.message);
    }
}
