//! A blocking client for OpenAI-compatible chat-completion endpoints, used to generate
//! answers or judgements from assembled context.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use excerpt_core::{EmbedError, RemoteEndpoint};
use serde::{Deserialize, Serialize};

use super::http::{self, Endpoint};

/// Largest chat response body read.
const MAX_RESPONSE_BYTES: u64 = 32 * 1024 * 1024;

/// How to reach an OpenAI-compatible chat-completions endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatConfig {
    /// Base URL, with or without a trailing `/v1` (e.g. `https://api.openai.com` or
    /// `http://localhost:8080/v1`); requests go to `{base}/v1/chat/completions`.
    pub url: String,
    /// Model name sent in each request.
    pub model: String,
    /// Name of the environment variable holding the API key, sent as
    /// `Authorization: Bearer <key>`. `None`, or a variable that is unset, sends no
    /// header (fine for local servers).
    pub api_key_env: Option<String>,
    /// Send the key even over plain `http://` to a non-loopback host (refused
    /// otherwise: anyone on the path could read it).
    pub allow_plain_http_key: bool,
    /// Retries after the first attempt on 429, 5xx and connection errors.
    pub max_retries: u32,
    /// Timeout of one whole request (generation included).
    pub timeout: Duration,
    /// Delay before the first retry; doubles on each further retry (capped at 60 s).
    /// A `Retry-After` header (in seconds) takes precedence when longer.
    pub initial_backoff: Duration,
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
            url: url.into(),
            model: model.into(),
            api_key_env: None,
            allow_plain_http_key: false,
            max_retries: 5,
            timeout: Duration::from_secs(120),
            initial_backoff: Duration::from_millis(500),
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
            .field("model", &self.config.model)
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
            url: http::openai_endpoint(&config.url, "chat/completions"),
        };
        endpoint.check_scheme()?;
        if config.model.trim().is_empty() {
            return Err(endpoint.error(None, "no model name configured"));
        }
        if !config.temperature.is_finite() || config.temperature < 0.0 {
            return Err(endpoint.error(None, "the temperature must be a finite number >= 0"));
        }
        let api_key =
            endpoint.api_key(config.api_key_env.as_deref(), config.allow_plain_http_key)?;
        let agent = http::agent(config.timeout);
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

    /// Sends one conversation: an optional system message and a user message. Returns
    /// the first choice's text and the reported token usage. A response without
    /// choices or without text content fails with [`EmbedError::Remote`].
    pub fn complete(&self, system: Option<&str>, user: &str) -> Result<ChatResponse, EmbedError> {
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
        let body = Request {
            model: self.config.model.trim(),
            messages,
            temperature: self.config.temperature,
            max_tokens: self.config.max_tokens,
            stream: false,
        };
        let policy = http::RetryPolicy {
            max_retries: self.config.max_retries,
            initial_backoff: self.config.initial_backoff,
        };
        let response: Response = http::with_retries(&self.endpoint, policy, || {
            http::post_json(
                &self.agent,
                &self.endpoint.url,
                self.api_key.as_deref(),
                &body,
                MAX_RESPONSE_BYTES,
            )
        })?;
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
