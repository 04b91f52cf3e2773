//! Shared plumbing of the blocking HTTP clients (embeddings, rerank, chat): the agent,
//! the API key, one JSON POST attempt classified as retryable or not, and the retry
//! loop with exponential backoff honouring `Retry-After`.

use std::time::Duration;

use excerpt_core::{EmbedError, RemoteEndpoint};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Longest wait honoured from a `Retry-After` header or reached by backoff.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Largest error body read for the message.
const MAX_ERROR_BODY_BYTES: u64 = 64 * 1024;

/// Characters of an error body quoted in the message.
const ERROR_SNIPPET_CHARS: usize = 500;

/// The outcome of one failed attempt.
#[derive(Debug)]
pub(crate) struct Failure {
    /// HTTP status, if there was a response.
    pub(crate) status: Option<u16>,
    /// What happened.
    pub(crate) message: String,
    /// Whether another attempt may succeed (429, 5xx, transport errors).
    pub(crate) retryable: bool,
    /// The server's `Retry-After`, in seconds, capped at [`MAX_BACKOFF`].
    pub(crate) retry_after: Option<Duration>,
}

/// Where a client's requests go: the kind of endpoint and its full URL. Every error
/// of the client is reported against it.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// Which API the URL serves.
    pub(crate) kind: RemoteEndpoint,
    /// The full URL requests are posted to.
    pub(crate) url: String,
}

impl Endpoint {
    /// [`EmbedError::Remote`] for this endpoint.
    pub(crate) fn error(&self, status: Option<u16>, message: impl Into<String>) -> EmbedError {
        EmbedError::Remote {
            endpoint: self.kind,
            url: self.url.clone(),
            status,
            message: message.into(),
        }
    }

    /// Fails with [`EmbedError::Remote`] (no status) unless the URL is http(s).
    pub(crate) fn check_scheme(&self) -> Result<(), EmbedError> {
        if self.url.starts_with("http://") || self.url.starts_with("https://") {
            Ok(())
        } else {
            Err(self.error(None, "the URL must start with http:// or https://"))
        }
    }
}

/// An agent with a global timeout that returns non-2xx responses instead of errors.
pub(crate) fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .build()
        .into()
}

/// The API key from the environment variable `var`, trimmed; `None` when no variable
/// is configured, it is unset or it is blank.
pub(crate) fn api_key(var: Option<&str>) -> Option<String> {
    var.and_then(|var| std::env::var(var).ok())
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty())
}

/// `{base}/v1/{resource}`, whether or not `base` already ends in `/v1` or
/// `/v1/{resource}`.
pub(crate) fn openai_endpoint(base: &str, resource: &str) -> String {
    let base = base.trim().trim_end_matches('/');
    let base = base
        .strip_suffix(resource)
        .and_then(|b| b.strip_suffix('/'))
        .unwrap_or(base);
    let base = base.strip_suffix("/v1").unwrap_or(base);
    format!("{base}/v1/{resource}")
}

/// One POST of `body` as JSON to `url`, with `Authorization: Bearer <key>` when a key
/// is given, reading at most `max_response_bytes` of a JSON response.
pub(crate) fn post_json<B: Serialize, R: DeserializeOwned>(
    agent: &ureq::Agent,
    url: &str,
    api_key: Option<&str>,
    body: &B,
    max_response_bytes: u64,
) -> Result<R, Failure> {
    let mut request = agent.post(url);
    if let Some(key) = api_key {
        request = request.header("Authorization", format!("Bearer {key}"));
    }
    let mut response = match request.send_json(body) {
        Ok(r) => r,
        Err(e) => {
            let retryable = matches!(
                e,
                ureq::Error::Io(_)
                    | ureq::Error::Timeout(_)
                    | ureq::Error::ConnectionFailed
                    | ureq::Error::HostNotFound
                    | ureq::Error::Protocol(_)
                    | ureq::Error::BodyStalled
            );
            return Err(Failure {
                status: None,
                message: format!("request failed: {e}"),
                retryable,
                retry_after: None,
            });
        }
    };
    let status = response.status().as_u16();
    if !(200..300).contains(&status) {
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(|s| Duration::from_secs_f64(s).min(MAX_BACKOFF));
        let text = response
            .body_mut()
            .with_config()
            .limit(MAX_ERROR_BODY_BYTES)
            .lossy_utf8(true)
            .read_to_string()
            .unwrap_or_default();
        let mut snippet: String = text.chars().take(ERROR_SNIPPET_CHARS).collect();
        if snippet.len() < text.len() {
            snippet.push('…');
        }
        return Err(Failure {
            status: Some(status),
            message: format!("HTTP {status}: {}", snippet.trim()),
            retryable: status == 429 || status >= 500,
            retry_after,
        });
    }
    response
        .body_mut()
        .with_config()
        .limit(max_response_bytes)
        .read_json::<R>()
        .map_err(|e| Failure {
            status: Some(status),
            message: format!("malformed response: {e}"),
            // A truncated body is a transport problem; bad JSON is not.
            retryable: matches!(e, ureq::Error::Io(_) | ureq::Error::Timeout(_)),
            retry_after: None,
        })
}

/// When and how often to retry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPolicy {
    /// Retries after the first attempt.
    pub(crate) max_retries: u32,
    /// Delay before the first retry; doubles on each further retry, capped at
    /// [`MAX_BACKOFF`]. A longer `Retry-After` takes precedence.
    pub(crate) initial_backoff: Duration,
}

/// Runs `attempt` until it succeeds, fails for good, or the retries are spent. The
/// final failure becomes [`EmbedError::Remote`] for `endpoint`, its message noting how
/// many retries were made.
pub(crate) fn with_retries<T>(
    endpoint: &Endpoint,
    policy: RetryPolicy,
    mut attempt: impl FnMut() -> Result<T, Failure>,
) -> Result<T, EmbedError> {
    let mut backoff = policy.initial_backoff;
    let mut retries = 0;
    loop {
        match attempt() {
            Ok(r) => return Ok(r),
            Err(f) if f.retryable && retries < policy.max_retries => {
                retries += 1;
                let wait = f.retry_after.map_or(backoff, |ra| ra.max(backoff));
                std::thread::sleep(wait);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            Err(f) => {
                let message = if retries > 0 {
                    format!("{} (after {} retries)", f.message, retries)
                } else {
                    f.message
                };
                return Err(endpoint.error(f.status, message));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::openai_endpoint;

    #[test]
    fn openai_endpoint_accepts_base_with_or_without_v1() {
        for base in [
            "http://h:1",
            "http://h:1/",
            "http://h:1/v1",
            "http://h:1/v1/",
            "http://h:1/v1/chat/completions",
        ] {
            assert_eq!(
                openai_endpoint(base, "chat/completions"),
                "http://h:1/v1/chat/completions",
                "{base}"
            );
        }
    }
}
