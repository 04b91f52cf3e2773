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
