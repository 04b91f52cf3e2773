//! `POST /v1/ask`: an answer with checked citations ([`excerpt::Engine::ask`]), as one
//! JSON value or as server-sent events while the model writes.

use std::convert::Infallible;
use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use excerpt::{AskOptions, QuerySpec};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use crate::error::ApiError;
use crate::error::ErrorBody;
use crate::extract::{blocking, JsonBody};
use crate::guard::HeldPermit;
use crate::openapi::bodies::AskBody;
use crate::state::AppState;

/// The name of an event of a streamed answer.
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)] // only its schema is used: the events are built by `event`
pub(crate) enum AskEventName {
    /// More text of the answer: `{"text"}`.
    Delta,
    /// The last event of a stream that succeeded: the whole answer (`Answer`).
    Answer,
    /// The last event of a stream that failed: `{"error": {"code", "message"}}`.
    Error,
}

/// One server-sent event of a streamed answer.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // only its schema is used
pub(crate) struct AskEvent {
    /// What the data is.
    event: AskEventName,
    /// JSON: `{"text"}` for `delta`, the `Answer` for `answer`, an `ErrorBody` for
    /// `error`.
    data: String,
}

/// The events of a streamed answer, read from the channel the engine's callback fills,
/// until the request's deadline: then one `error` event (`timeout`) ends the stream, and
/// the channel is closed, which tells the engine's callback to stop the model.
struct Events {
    rx: mpsc::UnboundedReceiver<Event>,
    deadline: Pin<Box<tokio::time::Sleep>>,
    timeout: std::time::Duration,
    ended: bool,
}

impl futures_core::Stream for Events {
    type Item = Result<Event, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.ended {
            return Poll::Ready(None);
        }
        // The deadline first: a model writing faster than the client reads must not
        // keep the stream going past it.
        if this.deadline.as_mut().poll(cx).is_pending() {
            return this.rx.poll_recv(cx).map(|e| e.map(Ok));
        }
        this.ended = true;
        this.rx.close();
        Poll::Ready(Some(Ok(event(
            "error",
            &json!({"error": {
                "code": "timeout",
                "message": format!(
                    "the answer did not finish within {} s",
                    this.timeout.as_secs_f64()
                ),
            }}),
        ))))
    }
}

/// An SSE event whose data is `value` as JSON.
fn event(name: &str, value: &Value) -> Event {
    Event::default().event(name).data(value.to_string())
}

/// `POST /v1/ask`: the body of `POST /v1/query` (a [`QuerySpec`]) plus `stream`
/// (default false). Needs a chat endpoint configured on the server
/// ([`crate::ServerOptions::ask`]).
///
/// Without `stream` it answers the [`excerpt::Answer`] as JSON (what `excerpt ask
/// --format json` prints). With `"stream": true` it answers `text/event-stream`: a
/// `delta` event `{"text"}` for each piece of the answer as the model writes it, then
/// one `answer` event with the whole [`excerpt::Answer`], or an `error` event
/// `{"error": {"code", "message"}}` when retrieval or the model fails once the stream
/// has begun (a bad body is still a 400 before it). A stream ends at the server's
/// request timeout with an `error` event of code `timeout`; the model's stream is
/// closed then, and as soon as the client goes away, so it spends no more tokens.
#[utoipa::path(
    post,
    path = "/v1/ask",
    tag = "query",
    summary = "An answer with checked citations",
    description = "Retrieves a context as `POST /v1/query` does, asks the server's chat \
model for an answer citing its numbered pieces, and checks every citation: a number that \
names no piece, or a quote not in its piece, is listed in `unsupported`. With \
`\"stream\": true` the answer is a server-sent-event stream: `delta` events `{\"text\"}` as \
the model writes, then one `answer` event with the whole answer, or an `error` event \
`{\"error\": {\"code\", \"message\"}}`; a stream still running at the server's request \
timeout ends with an `error` event of code `timeout`. Spends the chat endpoint's tokens, so \
it needs the token like a write when the server has one.",
    request_body = AskBody,
    responses(
        (status = 200, description = "The answer (JSON), or its event stream (`stream: true`).",
            content(
                (excerpt::Answer = "application/json"),
                (AskEvent = "text/event-stream"),
            )
        ),
        (status = 400, description = "A bad question: unknown field, strategy, fusion or filter.", body = ErrorBody),
        (status = 404, description = "No index yet, or a filter names an unknown document.", body = ErrorBody),
        (status = 413, description = "The body is over the size limit.", body = ErrorBody),
        (status = 415, description = "The body is not sent as JSON.", body = ErrorBody),
        (status = 501, description = "The server has no chat endpoint configured.", body = ErrorBody),
    ),
)]
pub(crate) async fn ask(
    State(st): State<AppState>,
    permit: Option<Extension<HeldPermit>>,
    JsonBody(mut body): JsonBody<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let stream = match body.remove("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "stream must be true or false, not {other}"
            )))
        }
    };
    let Some(chat) = st.options.ask.clone() else {
        return Err(ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "no_llm",
            "this server has no chat endpoint configured for answers",
        ));
    };
    let spec: QuerySpec = serde_json::from_value(Value::Object(body))
        .map_err(|e| ApiError::bad_request(format!("invalid question: {e}")))?;
    let req = spec.to_request()?;
    let mut opts = AskOptions::new(chat);
    opts.stream = stream;
    let engine = st.engine.clone();
    if !stream {
        let answer =
            blocking(move || Ok(engine.ask(&req, &opts, &mut |_| ControlFlow::Continue(()))?))
                .await?;
        return Ok(Json(answer).into_response());
    }
    // The stream's work (retrieval and the model's answer) keeps the request's
    // concurrency permit until it ends; how slowly the client reads does not matter, the
    // events wait in the channel. It ends at the request's deadline, or as soon as the
    // client goes away (the stream, and with it the channel's receiver, is dropped):
    // the next delta finds the channel closed and stops the model.
    let permit = permit.and_then(|Extension(p)| p.take());
    let (tx, rx) = mpsc::unbounded_channel();
    let timeout = st.options.request_timeout;
    let deadline = tokio::time::Instant::now() + timeout;
    let stop_at = deadline.into_std();
    tokio::task::spawn_blocking(move || {
        let deltas = tx.clone();
        let result = engine.ask(&req, &opts, &mut |d| {
            let sent = deltas.send(event("delta", &json!({ "text": d })));
            if sent.is_err() || std::time::Instant::now() >= stop_at {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        if matches!(result, Err(excerpt::EngineError::Cancelled)) {
            tracing::info!("streamed answer stopped: its client went away or its time was up");
        }
        let last = match result {
            Ok(answer) => serde_json::to_value(&answer)
                .map(|v| event("answer", &v))
                .unwrap_or_else(|e| {
                    event(
                        "error",
                        &json!({"error": {"code": "internal", "message": e.to_string()}}),
                    )
                }),
            Err(e) => {
                let e = ApiError::from(e);
                event(
                    "error",
                    &json!({"error": {"code": e.code, "message": e.message}}),
                )
            }
        };
        let _ = tx.send(last);
        // The permit goes before the stream ends (the senders' drop ends it), so a client
        // that has read the whole answer finds the slot free.
        drop(permit);
        drop(deltas);
        drop(tx);
    });
    let events = Events {
        rx,
        deadline: Box::pin(tokio::time::sleep_until(deadline)),
        timeout,
        ended: false,
    };
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response())
}
