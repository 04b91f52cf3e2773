//! A blocking client for OpenAI-compatible chat-completion endpoints, used to generate
//! answers or judgements from assembled context, whole or streamed as server-sent
//! events.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use excerpt_core::{EmbedError, RemoteEndpoint};
use serde::{Deserialize, Serialize};

use super::http::{self, Endpoint, EndpointConfig};

/// Largest chat response body read.
const MAX_RESPONSE_BYTES: u64 = 32 * 1024 * 1024;

/// How to reach an OpenAI-compatible chat-completions endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatConfig {
    /// URL, model, API key, timeout and retries. The URL is a base URL, with or without
    /// a trailing `/v1` (e.g. `https://api.openai.com` or `http://localhost:8080/v1`);
    /// requests go to `{base}/v1/chat/completions`. The timeout includes generation.
    pub endpoint: EndpointConfig,
    /// Requests callers should keep in flight at once; used by
    /// [`ChatClient::complete_many`] when it is given a concurrency of 0.
    pub max_concurrency: usize,
    /// Sampling temperature (0 for the most deterministic answers).
    pub temperature: f32,
    /// Cap on generated tokens; `None` leaves it to the server.
    pub max_tokens: Option<u32>,
}

impl ChatConfig {
    /// A config with defaults: no API key, 5 retries starting at 500 ms, 120 s
    /// timeout, 4 concurrent requests, temperature 0, no token cap.
    pub fn new(url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            endpoint: EndpointConfig {
                timeout: Duration::from_secs(120),
                ..EndpointConfig::new(url, model)
            },
            max_concurrency: 4,
            temperature: 0.0,
            max_tokens: None,
        }
    }
}

/// One completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatResponse {
    /// `choices[0].message.content`.
    pub text: String,
    /// `usage.prompt_tokens`, when the server reports usage.
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`, when the server reports usage.
    pub completion_tokens: Option<u64>,
    /// `choices[0].finish_reason` (`"stop"`, `"length"`, ...), when given.
    pub finish_reason: Option<String>,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'a str,
    content: &'a str,
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    messages: Vec<Message<'a>>,
    temperature: f32,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    stream: bool,
    /// With `stream`: ask for the usage in a last chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// One `data:` event of a streamed completion.
#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Option<ChoiceMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

/// A client of an OpenAI-compatible `POST /v1/chat/completions` endpoint (OpenAI,
/// vLLM, llama.cpp, Ollama, LiteLLM, ...), blocking, without streaming.
///
/// 429, 5xx and connection failures are retried with exponential backoff honouring
/// `Retry-After`; other 4xx fail at once with [`EmbedError::Remote`]. The client is
/// `Sync`: share it between threads, or use [`ChatClient::complete_many`].
pub struct ChatClient {
    agent: ureq::Agent,
    endpoint: Endpoint,
    config: ChatConfig,
    api_key: Option<String>,
}

impl std::fmt::Debug for ChatClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatClient")
            .field("endpoint", &self.endpoint.url)
            .field("model", &self.config.endpoint.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .finish_non_exhaustive()
    }
}

impl ChatClient {
    /// Builds the client. Reads the API key from the environment now. Fails with
    /// [`EmbedError::Remote`] if the URL or model is empty or the URL is not http(s).
    pub fn new(config: ChatConfig) -> Result<Self, EmbedError> {
        let endpoint = Endpoint {
            kind: RemoteEndpoint::Chat,
            url: http::openai_endpoint(&config.endpoint.url, "chat/completions"),
        };
        endpoint.check_scheme()?;
        if config.endpoint.model.trim().is_empty() {
            return Err(endpoint.error(None, "no model name configured"));
        }
        if !config.temperature.is_finite() || config.temperature < 0.0 {
            return Err(endpoint.error(None, "the temperature must be a finite number >= 0"));
        }
        let api_key = endpoint.api_key(&config.endpoint)?;
        let agent = http::agent(config.endpoint.timeout);
        Ok(Self {
            agent,
            endpoint,
            config,
            api_key,
        })
    }

    /// The full endpoint URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint.url
    }

    /// The configuration in use.
    pub fn config(&self) -> &ChatConfig {
        &self.config
    }

    /// The request body of one conversation.
    fn request<'a>(&'a self, system: Option<&'a str>, user: &'a str, stream: bool) -> Request<'a> {
        let mut messages = Vec::with_capacity(2);
        if let Some(system) = system {
            messages.push(Message {
                role: "system",
                content: system,
            });
        }
        messages.push(Message {
            role: "user",
            content: user,
        });
        Request {
            model: self.config.endpoint.model.trim(),
            messages,
            temperature: self.config.temperature,
            max_tokens: self.config.max_tokens,
            stream,
            stream_options: stream.then_some(StreamOptions {
                include_usage: true,
            }),
        }
    }

    /// Sends one conversation like [`ChatClient::complete`], asking the server to
    /// stream the answer (`"stream": true`, server-sent events): `on_delta` is called
    /// with each piece of text as it arrives, and the whole answer is returned at the
    /// end with the usage the server reported in its last chunk (`stream_options.
    /// include_usage`; servers that ignore it report none).
    ///
    /// Failures before the stream starts (429, 5xx, connection errors) are retried as
    /// for [`ChatClient::complete`]; once text has been handed to `on_delta` a failure
    /// is final. A server that answers a plain JSON completion instead of a stream is
    /// read as one, its text handed to `on_delta` at once.
    ///
    /// When `on_delta` answers [`ControlFlow::Break`] (nobody wants the rest: the reader
    /// went away, or its time is up), reading stops at once and the connection to the
    /// server is closed, so the model stops spending tokens; the text received so far is
    /// returned, with no finish reason.
    pub fn complete_streaming(
        &self,
        system: Option<&str>,
        user: &str,
        on_delta: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<ChatResponse, EmbedError> {
        let body = self.request(system, user, true);
        let policy = self.config.endpoint.retry_policy();
        let response = http::with_retries(&self.endpoint, policy, || {
            http::post(
                &self.agent,
                &self.endpoint.url,
                self.api_key.as_deref(),
                &body,
            )
        })?;
        let is_json = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("application/json"));
        let reader = response
            .into_body()
            .into_with_config()
            .limit(MAX_RESPONSE_BYTES)
            .reader();
        if is_json {
            let whole: Response = serde_json::from_reader(reader).map_err(|e| {
                self.endpoint
                    .error(Some(200), format!("malformed response: {e}"))
            })?;
            let answer = self.first_choice(whole)?;
            // The whole answer is already read: nothing is left to stop.
            let _ = on_delta(&answer.text);
            return Ok(answer);
        }
        read_stream(std::io::BufReader::new(reader), on_delta)
            .map_err(|message| self.endpoint.error(Some(200), message))
    }

    /// The answer of a whole (not streamed) response.
    fn first_choice(&self, response: Response) -> Result<ChatResponse, EmbedError> {
        let invalid = |message: &str| self.endpoint.error(Some(200), message);
        let choice = response
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| invalid("the response has no choices"))?;
        let text = choice
            .message
            .content
            .ok_or_else(|| invalid("the first choice has no text content"))?;
        let (prompt_tokens, completion_tokens) = response
            .usage
            .map_or((None, None), |u| (u.prompt_tokens, u.completion_tokens));
        Ok(ChatResponse {
            text,
            prompt_tokens,
            completion_tokens,
            finish_reason: choice.finish_reason,
        })
    }

    /// Sends one conversation: an optional system message and a user message. Returns
    /// the first choice's text and the reported token usage. A response without
    /// choices or without text content fails with [`EmbedError::Remote`].
    pub fn complete(&self, system: Option<&str>, user: &str) -> Result<ChatResponse, EmbedError> {
        let body = self.request(system, user, false);
        let policy = self.config.endpoint.retry_policy();
        let response: Response = http::with_retries(&self.endpoint, policy, || {
            http::post_json(
                &self.agent,
                &self.endpoint.url,
                self.api_key.as_deref(),
                &body,
                MAX_RESPONSE_BYTES,
            )
        })?;
        self.first_choice(response)
    }

    /// Sends many conversations `(system, user)` with at most `concurrency` requests
    /// in flight (0 means [`ChatConfig::max_concurrency`]; at least 1), on a pool of
    /// scoped threads. Results are in input order; one failure does not stop the
    /// others.
    pub fn complete_many(
        &self,
        prompts: &[(Option<String>, String)],
        concurrency: usize,
    ) -> Vec<Result<ChatResponse, EmbedError>> {
        let concurrency = if concurrency == 0 {
            self.config.max_concurrency
        } else {
            concurrency
        };
        let workers = concurrency.max(1).min(prompts.len());
        if workers <= 1 {
            return prompts
                .iter()
                .map(|(system, user)| self.complete(system.as_deref(), user))
                .collect();
        }
        let next = AtomicUsize::new(0);
        let mut slots: Vec<Option<Result<ChatResponse, EmbedError>>> =
            std::iter::repeat_with(|| None)
                .take(prompts.len())
                .collect();
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    scope.spawn(|| {
                        let mut done = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some((system, user)) = prompts.get(i) else {
                                break;
                            };
                            done.push((i, self.complete(system.as_deref(), user)));
                        }
                        done
                    })
                })
                .collect();
            for handle in handles {
                // A worker panics only on a bug; its prompts are reported below.
                if let Ok(done) = handle.join() {
                    for (i, result) in done {
                        if let Some(slot) = slots.get_mut(i) {
                            *slot = Some(result);
                        }
                    }
                }
            }
        });
        slots
            .into_iter()
            .map(|slot| {
                slot.unwrap_or_else(|| {
                    Err(EmbedError::Inference {
                        message: "a chat worker thread panicked".into(),
                    })
                })
            })
            .collect()
    }
}

/// Reads a streamed completion: server-sent events whose `data:` payloads are chunks
/// (`choices[0].delta.content`, `finish_reason`, and `usage` in a last chunk), ending
/// with `data: [DONE]` or the end of the body. Hands each text delta to `on_delta`,
/// and returns what was received so far as soon as it answers [`ControlFlow::Break`].
/// Fails on an `error` event, a payload that is not a chunk, or a body that breaks
/// off with no `[DONE]` and no finish reason.
fn read_stream(
    reader: impl std::io::BufRead,
    on_delta: &mut dyn FnMut(&str) -> ControlFlow<()>,
) -> Result<ChatResponse, String> {
    let mut answer = ChatResponse {
        text: String::new(),
        prompt_tokens: None,
        completion_tokens: None,
        finish_reason: None,
    };
    let mut data = String::new();
    let mut done = false;
    let mut dispatch = |data: &str, answer: &mut ChatResponse| -> Result<bool, String> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        if data == "[DONE]" {
            return Ok(true);
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|e| format!("malformed stream event ({e}): {}", snippet(data)))?;
        if let Some(error) = chunk.error {
            return Err(format!(
                "the stream reported an error: {}",
                snippet(&error.to_string())
            ));
        }
        if let Some(choice) = chunk.choices.into_iter().next() {
            if let Some(text) = choice.delta.and_then(|d| d.content) {
                if !text.is_empty() {
                    answer.text.push_str(&text);
                    if on_delta(&text).is_break() {
                        return Ok(true);
                    }
                }
            }
            if choice.finish_reason.is_some() {
                answer.finish_reason = choice.finish_reason;
            }
        }
        if let Some(u) = chunk.usage {
            answer.prompt_tokens = u.prompt_tokens.or(answer.prompt_tokens);
            answer.completion_tokens = u.completion_tokens.or(answer.completion_tokens);
        }
        Ok(false)
    };
    for line in reader.lines() {
        let line = line.map_err(|e| format!("the stream broke off: {e}"))?;
        let line = line.strip_suffix('\r').unwrap_or(&line);
        if line.is_empty() {
            // A blank line ends an event.
            done = dispatch(&data, &mut answer)?;
            data.clear();
            if done {
                break;
            }
        } else if let Some(value) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(value.strip_prefix(' ').unwrap_or(value));
        }
        // Comments (`:`), `event:`, `id:` and `retry:` lines carry nothing we need.
    }
    if !done && !data.is_empty() {
        done = dispatch(&data, &mut answer)?;
    }
    if !done && answer.finish_reason.is_none() {
        return Err("the stream ended before the answer was complete (no [DONE])".into());
    }
    Ok(answer)
}

/// The start of a long text, for error messages.
fn snippet(s: &str) -> String {
    let mut out: String = s.chars().take(200).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::read_stream;

    fn read(body: &str) -> (Result<super::ChatResponse, String>, Vec<String>) {
        let mut deltas = Vec::new();
        let r = read_stream(body.as_bytes(), &mut |d| {
            deltas.push(d.to_string());
            std::ops::ControlFlow::Continue(())
        });
        (r, deltas)
    }

    #[test]
    fn a_break_stops_reading_at_once() {
        // A stream with no end marker: read to its end it would fail.
        let body = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"one \"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"two \"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"three\"}}]}\n\n",
        );
        let mut seen = Vec::new();
        let r = read_stream(body.as_bytes(), &mut |d| {
            seen.push(d.to_string());
            if seen.len() == 2 {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            }
        })
        .expect("a stop is not a failure");
        assert_eq!(seen, ["one ", "two "]);
        assert_eq!(r.text, "one two ");
        assert_eq!(r.finish_reason, None);
    }

    #[test]
    fn deltas_are_handed_over_in_order_and_usage_comes_last() {
        let body = concat!(
            ": keep-alive\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\r\n\r\n",
            "event: message\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo [1]\"},\"finish_reason\":\"stop\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3}}\n\n",
            "data: [DONE]\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"ignored\"}}]}\n\n",
        );
        let (r, deltas) = read(body);
        let r = r.unwrap();
        assert_eq!(deltas, ["Hel", "lo [1]"]);
        assert_eq!(r.text, "Hello [1]");
        assert_eq!((r.prompt_tokens, r.completion_tokens), (Some(12), Some(3)));
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn a_stream_that_breaks_off_or_reports_an_error_fails() {
        let (r, deltas) = read("data: {\"choices\":[{\"delta\":{\"content\":\"Hal\"}}]}\n\n");
        assert!(r.unwrap_err().contains("[DONE]"));
        assert_eq!(deltas, ["Hal"]);
        let (r, _) = read("data: {\"error\":{\"message\":\"overloaded\"}}\n\n");
        assert!(r.unwrap_err().contains("overloaded"));
        let (r, _) = read("data: not json\n\n");
        assert!(r.unwrap_err().contains("malformed"));
        // A finish reason without [DONE] is a complete answer (some servers stop there).
        let (r, _) = read(
            "data: {\"choices\":[{\"delta\":{\"content\":\"x\"},\"finish_reason\":\"length\"}]}",
        );
        assert_eq!(r.unwrap().finish_reason.as_deref(), Some("length"));
    }
}
