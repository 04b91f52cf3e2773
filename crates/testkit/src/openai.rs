//! Bodies of the OpenAI-compatible endpoints the fakes stand in for:
//! `POST /v1/chat/completions` and `POST /v1/embeddings`.

use axum::http::HeaderMap;
use serde_json::{json, Value};

/// The chat-completions path under a base URL.
pub const CHAT_PATH: &str = "/v1/chat/completions";

/// The embeddings path under a base URL.
pub const EMBEDDINGS_PATH: &str = "/v1/embeddings";

/// Token counts reported in a response's `usage`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    /// `prompt_tokens`.
    pub prompt: u64,
    /// `completion_tokens`.
    pub completion: u64,
}

/// A non-streaming chat completion: one choice, the assistant message `text`, finish
/// reason `stop`, the request's `model` echoed, and `usage` (with `total_tokens`) when
/// given.
pub fn chat_completion(model: &Value, text: &str, usage: Option<Usage>) -> Value {
    let mut reply = json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop"
        }]
    });
    if let Some(u) = usage {
        reply["usage"] = json!({
            "prompt_tokens": u.prompt,
            "completion_tokens": u.completion,
            "total_tokens": u.prompt + u.completion
        });
    }
    reply
}

/// The request's messages (empty when the body has none).
pub fn messages(body: &Value) -> Vec<Value> {
    body["messages"].as_array().cloned().unwrap_or_default()
}

/// The text between `<passage>` and `</passage>` lines in the last message of a chat
/// request (empty when there is none): what a contextualizer asks about.
pub fn last_passage(body: &Value) -> String {
    let user = messages(body)
        .last()
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string();
    user.split_once("<passage>\n")
        .and_then(|(_, rest)| rest.rsplit_once("\n</passage>"))
        .map(|(p, _)| p.to_string())
        .unwrap_or_default()
}

/// The content of the first message with `role` in a chat request.
pub fn message(body: &Value, role: &str) -> Option<String> {
    messages(body)
        .iter()
        .find(|m| m["role"] == role)
        .and_then(|m| m["content"].as_str())
        .map(str::to_string)
}

/// An embeddings response: one `embedding` object per vector, `index` its position in
/// `vectors`; with `reverse` the list is sent in reverse order (indices stay correct),
/// which clients must undo.
pub fn embeddings(model: &str, vectors: Vec<Vec<f32>>, reverse: bool) -> Value {
    let mut data: Vec<Value> = vectors
        .into_iter()
        .enumerate()
        .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
        .collect();
    if reverse {
        data.reverse();
    }
    json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": 0, "total_tokens": 0}
    })
}

/// The `Authorization` header of a request, if present and readable.
pub fn authorization(headers: &HeaderMap) -> Option<String> {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// A streamed chat completion as the server-sent events of the chat-completions
/// protocol (`"stream": true`): a first chunk with the assistant role, one chunk per
/// delta of `deltas`, a chunk with finish reason `stop`, a last chunk with empty
/// `choices` and the `usage` when given (as `stream_options.include_usage` asks), then
/// `data: [DONE]`.
pub fn chat_stream_events(model: &Value, deltas: &[&str], usage: Option<Usage>) -> String {
    let chunk = |delta: Value, finish: Value| {
        json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
        })
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    events.extend(
        deltas
            .iter()
            .map(|d| chunk(json!({ "content": d }), Value::Null)),
    );
    events.push(chunk(json!({}), json!("stop")));
    if let Some(u) = usage {
        events.push(json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "model": model,
            "choices": [],
            "usage": {
                "prompt_tokens": u.prompt,
                "completion_tokens": u.completion,
                "total_tokens": u.prompt + u.completion
            }
        }));
    }
    let mut body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body
}

/// An HTTP response carrying server-sent events (`text/event-stream`).
pub fn event_stream(body: String) -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        [
            ("content-type", "text/event-stream"),
            ("cache-control", "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// Counts the connections of [`endless_chat_stream`] answers: how many streams were
/// started, and how many ended because their client closed the connection (a stream
/// never ends by itself). Clones share the counts.
#[derive(Debug, Clone, Default)]
pub struct StreamWatch {
    started: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    closed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl StreamWatch {
    /// Streams started so far.
    pub fn started(&self) -> usize {
        self.started.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Streams whose client has closed the connection.
    pub fn closed(&self) -> usize {
        self.closed.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// The body of an endless stream: one chunk every tick, counted closed when dropped
/// (the server drops a response body when its connection goes away).
struct Endless {
    chunk: axum::body::Bytes,
    tick: tokio::time::Interval,
    watch: StreamWatch,
}

impl futures_core::Stream for Endless {
    type Item = Result<axum::body::Bytes, std::convert::Infallible>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let this = &mut *self;
        this.tick
            .poll_tick(cx)
            .map(|_| Some(Ok(this.chunk.clone())))
    }
}

impl Drop for Endless {
    fn drop(&mut self) {
        self.watch
            .closed
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A streamed chat completion that never ends (a model that writes forever): the
/// chunk of `delta` every `every`, with no finish reason and no `[DONE]`. `watch`
/// counts it started now, and closed when its client closes the connection. Call it
/// from a handler (it needs the tokio runtime).
pub fn endless_chat_stream(
    model: &Value,
    delta: &str,
    every: std::time::Duration,
    watch: &StreamWatch,
) -> axum::response::Response {
    let chunk = json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "model": model,
        "choices": [{"index": 0, "delta": {"content": delta}, "finish_reason": null}]
    });
    watch
        .started
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let body = Endless {
        chunk: axum::body::Bytes::from(format!("data: {chunk}\n\n")),
        tick: tokio::time::interval(every.max(std::time::Duration::from_millis(1))),
        watch: watch.clone(),
    };
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(axum::body::Body::from_stream(body))
        .unwrap_or_default()
}
